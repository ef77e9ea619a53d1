"""`lahar simulate`: Lahar's real policy over a simulated cluster and a job trace, on virtual time.

The simulated kube-scheduler calls the same session, gang rules, bind barrier and preemption
choice the extender serves (no copy of any policy); only the API server and the kubelets are
played by the simulation.
"""
