"""The gang and fair-order engine: which gang may take which capacity, and when.

A gang's members (`members`) are planned whole onto the capacity left (`placement`); the waiting
gangs take turns in the fair order (`lineup`, `fairness`, `queues`, `contending`, `order`, `turns`,
`drain`); the ledger (`ledger`) remembers whom it admitted, refused or backed off, and
`reservations` what the admitted gangs reserve. `group_status` and `queue_status` say what the
PodGroup and Queue status should read; `recovery` rebuilds the ledger after a restart. Pure: no I/O,
the clock is handed in.
"""
