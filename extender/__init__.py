"""Lahar: batch scheduling (gangs, fair queues, whole-job preemption) for the stock kube-scheduler.

The package is layered; each layer imports only those below it (import-linter checks this in CI):
cli > demo > server, controller, webhook, devcluster, simulate > shell > actions, plugins,
admission > framework, jobplugins > preemption > gangs > cache > kube > api, pki.
docs/architecture.md describes each.
"""

__version__ = "0.1.0"
