"""The extender verbs, one module each: wire arguments in, wire results out, decisions made by a
`framework.Session`. No HTTP here (the server adapts requests) and no API client (bind gets a
binder function), so every verb is tested without a network."""
