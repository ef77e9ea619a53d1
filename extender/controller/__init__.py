"""Lahar's Job controller: Volcano-compatible `batch.volcano.sh/v1alpha1` Jobs.

The walk of one reconcile: a watch event lands in the `store`, which pokes the job's key into the
`workqueue`; a worker runs `reconcile`, which reads the store, asks the pure `lifecycle` (phases)
and `policies` (events and actions) for a plan, and hands it to the `writer`, which builds pods
and the PodGroup with `job_objects` and the job `plugins` and writes the difference through the
kube layer in a worker thread. `leader` keeps one replica at work; `app` wires it all into an
aiohttp app with probes and metrics.
"""
