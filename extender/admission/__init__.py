"""Admission rules for Lahar's own resources, pure: Jobs (defaults and validation), Queues and
PodGroups. Each rule reads plain objects (and, for queue state, a `QueueLookup`) and returns an
`AdmissionDecision`: every problem found, each naming its field, or the JSONPatch of the
defaults. The webhook (`extender.webhook`) is only their HTTP adapter."""
