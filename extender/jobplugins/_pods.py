"""What the plugins share: editing pod bodies, naming the job's hosts, and the metadata of the
objects they keep.

Pod bodies are plain dicts (a copy of the task's template); the helpers create the lists they
need and edit them in place. A port a plugin opens is added only when the container does not
declare that number yet. Adding is idempotent: an env var, volume or mount that already exists
by name is replaced where it stands rather than repeated, so a template that sets a variable a
plugin owns still yields a valid pod, and running a plugin twice changes nothing.

Hosts follow Volcano: pod `i` of task `t` is reachable as `<job>-<t>-<i>.<job>` through the svc
plugin's headless Service, unless the task's template fixes `hostname` (then the task has that one
host) or `subdomain`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.api.batch import JOB_NAME_KEY, JOB_NAMESPACE_KEY, Job, TaskSpec, pod_name


def containers(pod: dict[str, Any], *, init: bool = True) -> Iterator[dict[str, Any]]:
    """The pod's containers, then (with `init`) its init containers."""
    spec = pod.get("spec") or {}
    yield from spec.get("containers") or []
    if init:
        yield from spec.get("initContainers") or []


def set_env(
    pod: dict[str, Any], variables: Sequence[Mapping[str, Any]], *, init: bool = True
) -> None:
    """Give every container (and init container, with `init`) these env vars."""
    for container in containers(pod, init=init):
        for variable in variables:
            _put(container.setdefault("env", []), dict(variable))


def mount(pod: dict[str, Any], volume: Mapping[str, Any], volume_mount: Mapping[str, Any]) -> None:
    """Add `volume` to the pod and `volume_mount` (which names it) to every container and init
    container."""
    _put(pod.setdefault("spec", {}).setdefault("volumes", []), dict(volume))
    for container in containers(pod):
        _put(container.setdefault("volumeMounts", []), dict(volume_mount))


def open_port(container: dict[str, Any], port: int, name: str) -> None:
    """Declare `port` on the container unless it already declares that number (under any name).
    It is named `name` unless the container has another port by that name (a name may appear once
    per container), then it goes unnamed."""
    ports: list[dict[str, Any]] = container.setdefault("ports", [])
    if any(p.get("containerPort") == port for p in ports):
        return
    declared: dict[str, Any] = {"containerPort": port}
    if all(p.get("name") != name for p in ports):
        declared = {"name": name, **declared}
    ports.append(declared)


def _put(items: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """Replace the entry with the same name, else append."""
    for i, existing in enumerate(items):
        if existing.get("name") == item["name"]:
            items[i] = item
            return
    items.append(item)


@dataclass(frozen=True)
class Host:
    name: str  # the pod's hostname
    subdomain: str  # the headless Service that resolves it

    @property
    def address(self) -> str:
        return f"{self.name}.{self.subdomain}"


def host(job: Job, task: TaskSpec, index: int) -> Host:
    """Where pod `index` of `task` answers: its template's hostname/subdomain when set, else its
    pod name under the job's Service."""
    spec = task.template.get("spec") or {}
    return Host(
        spec.get("hostname") or pod_name(job.metadata.name, task.name, index),
        spec.get("subdomain") or job.metadata.name,
    )


def hosts(job: Job, task: TaskSpec) -> list[Host]:
    """One host per replica; a template with a fixed hostname gives all replicas one host."""
    if (task.template.get("spec") or {}).get("hostname"):
        return [host(job, task, 0)] if task.replicas else []
    return [host(job, task, i) for i in range(task.replicas)]


def job_labels(job: Job) -> dict[str, str]:
    """The labels every pod of the job carries (Service selector, NetworkPolicy peers) and that
    the plugin objects carry too."""
    return {JOB_NAME_KEY: job.metadata.name, JOB_NAMESPACE_KEY: job.metadata.namespace}


def metadata(job: Job, name: str) -> dict[str, Any]:
    """A plugin object's metadata: in the job's namespace, labelled with it, owned by it."""
    return {
        "name": name,
        "namespace": job.metadata.namespace,
        "labels": job_labels(job),
        "ownerReferences": [job.owner_reference()],
    }
