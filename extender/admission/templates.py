"""A task's pod template, checked where a mistake would otherwise surface only when the controller
creates the pods (the API server refusing every pod of a running job). Volcano's webhook runs
Kubernetes' own pod template validation; these are the parts of it a job is likely to get wrong.

Checked: the template's labels and annotations; a `spec` with at least one container; each
container and init container (`containers.container_problems`); `restartPolicy`, `dnsPolicy`
(`None` needs `dnsConfig` with a nameserver, three at most), `hostname` and `subdomain` (DNS
labels), `serviceAccountName`, `nodeName` and `priorityClassName` (DNS subdomains),
`activeDeadlineSeconds`, `nodeSelector`, `tolerations`, volume names, host ports taken twice; and
Volcano's rule for a task's `topologyPolicy`: every container asks for whole cpus. The rest of a
pod (probes, security contexts, affinity, volume sources, pod-level resources) is the API
server's to validate when the pod is made.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from typing import Any

from extender.admission.containers import container_problems, ports_of
from extender.admission.names import (
    dns_label,
    dns_subdomain,
    label_value,
    qualified_name,
    why_not,
)
from extender.admission.problems import INT32, Problem, field, shown

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
MAX_NAMESERVERS = 3
OPERATORS = ("Equal", "Exists")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_ANNOTATIONS = 256 * 1024  # bytes of keys and values, as Kubernetes bounds them


def template_problems(template: Mapping[str, Any], *at: str | int) -> Iterator[Problem]:
    yield from _metadata(template.get("metadata"), *at, "metadata")
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        yield Problem(field(*at, "spec"), "required: the pods' spec, with at least one container")
        return
    at = (*at, "spec")
    yield from _choice(spec, "restartPolicy", RESTART_POLICIES, *at)
    yield from _choice(spec, "dnsPolicy", DNS_POLICIES, *at)
    yield from _dns_config(spec, *at)
    for key, check in (
        ("hostname", dns_label),
        ("subdomain", dns_label),
        ("serviceAccountName", dns_subdomain),
        ("nodeName", dns_subdomain),
        ("priorityClassName", dns_subdomain),
    ):
        value = spec.get(key)
        if value not in (None, "") and (reason := why_not(value, check)) is not None:
            yield Problem(field(*at, key), f"{shown(value)} {reason}")
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (
        not isinstance(deadline, int) or isinstance(deadline, bool) or not 1 <= deadline <= INT32
    ):
        yield Problem(
            field(*at, "activeDeadlineSeconds"), f"must be from 1 to {INT32}, got {shown(deadline)}"
        )
    yield from _labels(spec.get("nodeSelector"), *at, "nodeSelector")
    yield from _tolerations(spec.get("tolerations"), *at, "tolerations")
    volumes = yield from _volumes(spec.get("volumes"), *at, "volumes")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        yield Problem(field(*at, "containers"), "required: at least one container")
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        listed = spec.get(key)
        if listed is None or (key == "containers" and not isinstance(listed, list)):
            continue
        if not isinstance(listed, list):
            yield Problem(field(*at, key), f"must be a list, got {shown(listed)}")
            continue
        for index, container in enumerate(listed):
            yield from container_problems(container, names, volumes, *at, key, index)
    yield from _host_ports(spec, *at)


def _choice(
    spec: Mapping[str, Any], key: str, allowed: tuple[str, ...], *at: str | int
) -> Iterator[Problem]:
    value = spec.get(key)
    if value not in (None, "", *allowed):
        yield Problem(field(*at, key), f"must be one of {', '.join(allowed)}, got {shown(value)}")


def _dns_config(spec: Mapping[str, Any], *at: str | int) -> Iterator[Problem]:
    config = spec.get("dnsConfig")
    servers = config.get("nameservers") if isinstance(config, Mapping) else None
    count = len(servers) if isinstance(servers, list) else 0
    if spec.get("dnsPolicy") == "None" and count == 0:
        yield Problem(
            field(*at, "dnsConfig", "nameservers"),
            "required with dnsPolicy None: at least one nameserver",
        )
    elif count > MAX_NAMESERVERS:
        yield Problem(
            field(*at, "dnsConfig", "nameservers"),
            f"at most {MAX_NAMESERVERS} nameservers, got {count}",
        )


def _metadata(meta: Any, *at: str | int) -> Iterator[Problem]:
    if not isinstance(meta, Mapping):
        return
    yield from _labels(meta.get("labels"), *at, "labels")
    annotations = meta.get("annotations")
    if not isinstance(annotations, Mapping):
        return
    size = 0
    for key, value in annotations.items():
        size += len(str(key)) + len(str(value))
        if (reason := qualified_name(str(key).lower())) is not None:
            yield Problem(field(*at, "annotations", key), f"{shown(key)} {reason}")
    if size > MAX_ANNOTATIONS:
        yield Problem(
            field(*at, "annotations"), f"must be at most {MAX_ANNOTATIONS} bytes in all, got {size}"
        )


def _labels(labels: Any, *at: str | int) -> Iterator[Problem]:
    """Label keys and values (a template's labels, a node selector)."""
    if not isinstance(labels, Mapping):
        return
    for key, value in labels.items():
        if (reason := qualified_name(str(key))) is not None:
            yield Problem(field(*at, key), f"the key {shown(key)} {reason}")
        elif (reason := why_not(value, label_value)) is not None:
            yield Problem(field(*at, key), f"{shown(value)} {reason}")


def _tolerations(tolerations: Any, *at: str | int) -> Iterator[Problem]:
    if not isinstance(tolerations, list):
        return
    for index, toleration in enumerate(tolerations):
        here = (*at, index)
        if not isinstance(toleration, Mapping):
            yield Problem(field(*here), f"must be an object, got {shown(toleration)}")
            continue
        key, operator = toleration.get("key") or "", toleration.get("operator") or "Equal"
        value, effect = toleration.get("value") or "", toleration.get("effect") or ""
        if key and (reason := why_not(key, qualified_name)) is not None:
            yield Problem(field(*here, "key"), f"{shown(key)} {reason}")
        if operator not in OPERATORS:
            yield Problem(
                field(*here, "operator"),
                f"must be one of {', '.join(OPERATORS)}, got {shown(operator)}",
            )
        elif not key and operator != "Exists":
            yield Problem(
                field(*here, "operator"),
                "must be Exists when no key is given (matching every taint)",
            )
        elif operator == "Exists" and value:
            yield Problem(field(*here, "value"), "must be empty when the operator is Exists")
        elif operator == "Equal" and (reason := why_not(value, label_value)) is not None:
            yield Problem(field(*here, "value"), f"{shown(value)} {reason}")
        if effect and effect not in EFFECTS:
            yield Problem(
                field(*here, "effect"), f"must be one of {', '.join(EFFECTS)}, got {shown(effect)}"
            )
        elif toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            yield Problem(
                field(*here, "effect"), "must be NoExecute when tolerationSeconds is given"
            )


def _volumes(volumes: Any, *at: str | int) -> Generator[Problem, None, set[str]]:
    """The volumes' names (returned, for the mounts to name), DNS labels, once each."""
    names: set[str] = set()
    if not isinstance(volumes, list):
        return names
    for index, volume in enumerate(volumes):
        name = volume.get("name") if isinstance(volume, Mapping) else None
        if not isinstance(name, str) or not name:
            yield Problem(field(*at, index, "name"), "required: the volume's name")
        elif (reason := dns_label(name)) is not None:
            yield Problem(field(*at, index, "name"), f"{shown(name)} {reason}")
        elif name in names:
            yield Problem(field(*at, index, "name"), f"{shown(name)} names another volume")
        else:
            names.add(name)
    return names


def _host_ports(spec: Mapping[str, Any], *at: str | int) -> Iterator[Problem]:
    """A host port (with its protocol and host IP) is taken once among the containers (each init
    container alone: they run one at a time); with `hostNetwork` a container's host port is its
    container port."""
    host_network = spec.get("hostNetwork") is True
    for key in ("containers", "initContainers"):
        listed = spec.get(key)
        taken: dict[tuple[str, str, int], str] = {}
        for index, container in enumerate(listed if isinstance(listed, list) else []):
            if key == "initContainers":
                taken = {}
            for number, port in ports_of(container):
                host = port.get("hostPort")
                if host in (None, 0):
                    continue
                here = field(*at, key, index, "ports", number, "hostPort")
                if host_network and key == "containers" and host != port.get("containerPort"):
                    yield Problem(here, "must equal containerPort with hostNetwork")
                if not isinstance(host, int) or isinstance(host, bool):
                    continue
                protocol, ip = port.get("protocol") or "TCP", port.get("hostIP") or ""
                if not isinstance(protocol, str) or not isinstance(ip, str):
                    continue  # (named by the container's rules; a list is not even hashable)
                taken_key = (protocol, ip, host)
                if taken_key in taken:
                    yield Problem(here, f"{host}/{taken_key[0]} is taken by {taken[taken_key]}")
                else:
                    taken[taken_key] = here
