"""Lahar: batch scheduling (gangs, fair queues, whole-job preemption) for the stock kube-scheduler.

The package is layered; each layer imports only those below it (import-linter checks this in CI):
cli > demo > devcluster (later also server, controller, webhook, simulate) > actions, plugins >
framework > cache > kube > api.
"""

__version__ = "0.1.0"
