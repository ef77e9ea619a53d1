"""Volcano's job plugins (`spec.plugins` of a Job): env, svc, ssh, pytorch, tensorflow, mpi, ray
and hcclrank.

A plugin is pure (`JobPlugin`): it lists the objects it keeps for a job (`PluginObject`, built
lazily), edits each pod body before the controller creates it, and says why it cannot run a job
(a task it needs is missing). The controller owns all I/O: it applies the objects, records them in
`status.controlledResources["plugin-<name>"]`, and lets garbage collection delete them with the
job (they carry the job's ownerReference).

`make_plugins(job.spec.plugins)` checks names and arguments and returns the plugins in the fixed
order of `KNOWN`, whatever the order of the job's map, so the same job always yields the same pod
bodies (Volcano runs them in Go's random map order; here hcclrank comes after pytorch, so it reads
the `RANK` pytorch sets). It raises `PluginError` (a ValueError naming `spec.plugins.<name>`) for
an unknown plugin or argument, which the webhook can return as is; `plugin_problems(job)` lists
those and the plugins' own refusals of the job, every plugin's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.api.batch import Job
from extender.jobplugins import env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow
from extender.jobplugins._base import JobPlugin, PluginError, PluginObject

__all__ = ["KNOWN", "JobPlugin", "PluginError", "PluginObject", "make_plugins", "plugin_problems"]

_FACTORIES: Mapping[str, Callable[[list[str] | None], JobPlugin]] = {
    env.NAME: env.configure,
    svc.NAME: svc.configure,
    ssh.NAME: ssh.configure,
    pytorch.NAME: pytorch.configure,
    tensorflow.NAME: tensorflow.configure,
    mpi.NAME: mpi.configure,
    ray.NAME: ray.configure,
    hcclrank.NAME: hcclrank.configure,  # after pytorch: it reads the RANK pytorch sets
}
KNOWN: tuple[str, ...] = tuple(_FACTORIES)


def make_plugins(plugins: Mapping[str, list[str] | None]) -> list[JobPlugin]:
    """The job's plugins, configured from their arguments, in the order of `KNOWN`."""
    for name in plugins:
        if name not in _FACTORIES:
            raise PluginError(name, f"unknown plugin (known: {', '.join(KNOWN)})")
    return [_FACTORIES[name](plugins[name]) for name in KNOWN if name in plugins]


def plugin_problems(job: Job) -> list[PluginError]:
    """Why the job's plugins cannot run it, in the order of its map: an unknown plugin, a bad
    argument (one per plugin: the first), or what a plugin refuses in the job itself."""
    found: list[PluginError] = []
    for name, arguments in job.spec.plugins.items():
        try:
            [plugin] = make_plugins({name: arguments})
        except PluginError as error:
            found.append(error)
            continue
        found += plugin.problems(job)
    return found
