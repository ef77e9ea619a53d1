"""Volcano's job plugins (`spec.plugins` of a Job): env, svc, ssh and pytorch.

A plugin is pure (`JobPlugin`): it lists the objects it keeps for a job (`PluginObject`, built
lazily) and edits each pod body before the controller creates it. The controller owns all I/O:
it applies the objects, records them in `status.controlledResources["plugin-<name>"]`, and lets
garbage collection delete them with the job (they carry the job's ownerReference).

`make_plugins(job.spec.plugins)` checks names and arguments and returns the plugins in the fixed
order of `KNOWN`, whatever the order of the job's map, so the same job always yields the same pod
bodies. It raises `PluginError` (a ValueError naming `spec.plugins.<name>`) for an unknown plugin
or argument, which the webhook can return as is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.jobplugins import env, pytorch, ssh, svc
from extender.jobplugins._base import JobPlugin, PluginError, PluginObject

__all__ = ["KNOWN", "JobPlugin", "PluginError", "PluginObject", "make_plugins"]

_FACTORIES: Mapping[str, Callable[[list[str] | None], JobPlugin]] = {
    env.NAME: env.configure,
    svc.NAME: svc.configure,
    ssh.NAME: ssh.configure,
    pytorch.NAME: pytorch.configure,
}
KNOWN: tuple[str, ...] = tuple(_FACTORIES)


def make_plugins(plugins: Mapping[str, list[str] | None]) -> list[JobPlugin]:
    """The job's plugins, configured from their arguments, in the order of `KNOWN`."""
    for name in plugins:
        if name not in _FACTORIES:
            raise PluginError(name, f"unknown plugin (known: {', '.join(KNOWN)})")
    return [_FACTORIES[name](plugins[name]) for name in KNOWN if name in plugins]
