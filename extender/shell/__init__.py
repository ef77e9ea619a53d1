"""The process shell `lahar serve`, `lahar controller` and `lahar webhook` share.

Each component is an aiohttp app that knows its own work (verbs, reconciles, admission reviews);
the shell adds what every long-running Lahar process needs, the same way in each, with aiohttp's
own idioms: one record in the app under a typed key (`SHELL`), routes, and cleanup contexts that
start work with the app and end it at cleanup.

- probes and metrics (`probes`): /healthz, /readyz by the component's rule, /metrics from its
  registry, on the app and, for the extender, on a second listener;
- guarded background tasks and informers (`background`): a task that dies logs what died and why
  and ends the process, so a replica never runs on with part of itself gone;
- leadership (`lease`): at once, holding a Lease, or following the scheduler's; whether a
  standby could take its Lease over (its readiness), and the gauge `lahar_leader`;
- the run itself (`process`): `install` into an app, `run` it, and exit 1 after a failed task or a
  lost Lease.

A component says only what is its own: its readiness rule, its registry, how to build its
informers and what to do on coming to lead. The shell sits above the cache and the kube layer and
below the components; it imports none of them.
"""

from extender.shell.background import guarded, informers
from extender.shell.keys import SHELL, Lifecycle, Shell
from extender.shell.lease import cannot_take_over, lead, leader_gauge, show_leading
from extender.shell.probes import add_probe_routes, probe_listener
from extender.shell.process import install, run

__all__ = [
    "SHELL",
    "Lifecycle",
    "Shell",
    "add_probe_routes",
    "cannot_take_over",
    "guarded",
    "informers",
    "install",
    "lead",
    "leader_gauge",
    "probe_listener",
    "run",
    "show_leading",
]
