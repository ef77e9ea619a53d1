"""`make demo`: the main job, run on a local dev cluster and shown live in the terminal.

It grows with each feature. Today: start the real control plane (building it on first use), submit
a pod to the stock kube-scheduler and show it being scheduled, running and finishing.
"""

from extender.demo.run import DemoOptions, run_demo

__all__ = ["DemoOptions", "run_demo"]
