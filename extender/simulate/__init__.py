"""`lahar simulate` and `lahar whatif`: Lahar's real policy over a simulated cluster and a job
trace, on virtual time.

The simulated kube-scheduler calls the same session, gang rules, bind barrier and preemption
choice the extender serves (no copy of any policy); only the API server and the kubelets are
played by the simulation. A trace is written by hand, generated, or taken from the live cluster
(`from_cluster`, with run times from `run_times`); `whatif` plays one with and without a Job, and
`comparison` plays it as it is beside a changed policy or queue (`queue_edits`).
"""
