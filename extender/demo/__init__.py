"""`make demo`: Lahar at work on a local dev cluster and shown live in the terminal.

Start the real control plane with all of Lahar (building it on first use), submit Volcano's
TensorFlow Job and two Jobs that contend for the cluster, show them live, and sum up.
"""

from extender.demo.script import DemoOptions, run_demo

__all__ = ["DemoOptions", "run_demo"]
