"""A pod template's containers and init containers, checked as Kubernetes checks them when the
controller creates the pods (Volcano's webhook runs Kubernetes' own pod template validation).

Checked per container: a DNS-label name, unique in the pod; an image (no surrounding whitespace:
the API server refuses such pods, though it lets a template have one); `imagePullPolicy`; ports
(numbers in range, a known protocol, IANA names unique in the container, no port/protocol twice,
no host port taken twice in the pod, host port = container port with `hostNetwork`); environment
variables (a name, printable ASCII without '=', once each; `value` or one `valueFrom` source);
volume mounts (a volume of the pod, a path given once, a relative `subPath` without '..');
resources (names Kubernetes knows or extended ones with a domain; quantities not negative, whole
for extended resources; request <= limit; extended resources and hugepages are never
overcommitted: a request needs an equal limit; hugepages with cpu or memory). Only fixed paths
are read, so a huge template costs no more than its list lengths.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from decimal import Decimal
from typing import Any

from extender.admission.names import dns_label, port_name, qualified_name, why_not
from extender.admission.problems import Problem, field, shown
from extender.api.quantity import parse_quantity

PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES = "hugepages-"
QOS_RESOURCES = ("cpu", "memory")
ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")


def container_problems(
    container: Any, names: set[str], volumes: set[str], *at: str | int
) -> Iterator[Problem]:
    """One container; `names` holds the names taken so far in the pod (this one is added),
    `volumes` the names of the pod's volumes."""
    if not isinstance(container, Mapping):
        yield Problem(field(*at), f"must be an object, got {shown(container)}")
        return
    name = container.get("name")
    if not isinstance(name, str) or not name:
        yield Problem(field(*at, "name"), "required: a DNS label")
    elif (reason := dns_label(name)) is not None:
        yield Problem(field(*at, "name"), f"{shown(name)} {reason}")
    elif name in names:
        yield Problem(field(*at, "name"), f"{shown(name)} is the name of another container")
    else:
        names.add(name)
    image = container.get("image")
    if not isinstance(image, str) or not image.strip():
        yield Problem(field(*at, "image"), "required: the container image")
    elif image != image.strip():
        yield Problem(
            field(*at, "image"),
            f"{shown(image)} must not start or end with whitespace (the API server refuses such "
            "pods)",
        )
    policy = container.get("imagePullPolicy")
    if policy not in (None, "", *PULL_POLICIES):
        yield Problem(
            field(*at, "imagePullPolicy"),
            f"must be one of {', '.join(PULL_POLICIES)}, got {shown(policy)}",
        )
    yield from _resources(container.get("resources"), *at, "resources")
    yield from _ports(container.get("ports"), *at, "ports")
    yield from _env(container.get("env"), *at, "env")
    yield from _mounts(container.get("volumeMounts"), volumes, *at, "volumeMounts")


def ports_of(container: Any) -> list[tuple[int, Mapping[str, Any]]]:
    """The container's ports that are objects, with their index."""
    ports = container.get("ports") if isinstance(container, Mapping) else None
    if not isinstance(ports, list):
        return []
    return [(index, port) for index, port in enumerate(ports) if isinstance(port, Mapping)]


def _as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _port_number(value: Any) -> bool:
    number = _number(value)
    return number is not None and 0 < number < 65536


def _ports(ports: Any, *at: str | int) -> Iterator[Problem]:
    if ports is None:
        return
    if not isinstance(ports, list):
        yield Problem(field(*at), f"must be a list, got {shown(ports)}")
        return
    names: dict[str, int] = {}
    listed: dict[tuple[Any, Any], int] = {}
    for index, port in enumerate(ports):
        if not isinstance(port, Mapping):
            yield Problem(field(*at, index), f"must be an object, got {shown(port)}")
        else:
            yield from _port(port, index, names, listed, *at)


def _port(
    port: Mapping[str, Any],
    index: int,
    names: dict[str, int],
    listed: dict[tuple[Any, Any], int],
    *at: str | int,
) -> Iterator[Problem]:
    """One port; `names` and `listed` hold the names and number/protocol pairs taken so far in
    the container (this port's are added)."""
    here = (*at, index)
    number, protocol = port.get("containerPort"), port.get("protocol") or "TCP"
    if protocol not in PROTOCOLS:
        yield Problem(
            field(*here, "protocol"),
            f"must be one of {', '.join(PROTOCOLS)}, got {shown(protocol)}",
        )
    if not _port_number(number):
        yield Problem(
            field(*here, "containerPort"),
            f"must be a port number from 1 to 65535, got {shown(number)}",
        )
    elif protocol in PROTOCOLS and (number, protocol) in listed:
        yield Problem(
            field(*here, "containerPort"),
            f"{number}/{protocol} is listed already at {field(*at, listed[number, protocol])}",
        )
    elif protocol in PROTOCOLS:
        listed[number, protocol] = index
    host = port.get("hostPort")
    if host not in (None, 0) and not _port_number(host):
        yield Problem(
            field(*here, "hostPort"),
            f"must be a port number from 1 to 65535 (or 0: none), got {shown(host)}",
        )
    name = port.get("name")
    if name in (None, ""):
        return
    if (reason := why_not(name, port_name)) is not None:
        yield Problem(field(*here, "name"), f"{shown(name)} {reason}")
    elif name in names:
        yield Problem(
            field(*here, "name"), f"{shown(name)} names {field(*at, names[name])} already"
        )
    else:
        names[name] = index


def _env(env: Any, *at: str | int) -> Iterator[Problem]:
    if env is None:
        return
    if not isinstance(env, list):
        yield Problem(field(*at), f"must be a list, got {shown(env)}")
        return
    seen: dict[str, int] = {}
    for index, variable in enumerate(env):
        here = (*at, index)
        if not isinstance(variable, Mapping):
            yield Problem(field(*here), f"must be an object, got {shown(variable)}")
            continue
        name = variable.get("name")
        if not isinstance(name, str) or not name:
            yield Problem(field(*here, "name"), "required: the variable's name")
        elif any(not " " <= c <= "~" or c == "=" for c in name):
            yield Problem(
                field(*here, "name"),
                f"{shown(name)} must be printable ASCII characters other than '='",
            )
        elif name in seen:
            yield Problem(
                field(*here, "name"), f"{name} is set by {field(*at, seen[name])} already"
            )
        else:
            seen[name] = index
        source = variable.get("valueFrom")
        if source is None:
            continue
        given = [key for key in ENV_SOURCES if isinstance(source, Mapping) and key in source]
        if variable.get("value"):
            yield Problem(field(*here, "valueFrom"), "cannot be given beside a value")
        elif len(given) != 1:
            yield Problem(
                field(*here, "valueFrom"),
                f"must give one of {', '.join(ENV_SOURCES)}"
                + (f", got {', '.join(given)}" if given else ""),
            )


def _mounts(mounts: Any, volumes: set[str], *at: str | int) -> Iterator[Problem]:
    if mounts is None:
        return
    if not isinstance(mounts, list):
        yield Problem(field(*at), f"must be a list, got {shown(mounts)}")
        return
    paths: dict[str, int] = {}
    for index, mount in enumerate(mounts):
        here = (*at, index)
        if not isinstance(mount, Mapping):
            yield Problem(field(*here), f"must be an object, got {shown(mount)}")
            continue
        name = mount.get("name")
        if not isinstance(name, str) or not name:
            yield Problem(field(*here, "name"), "required: the volume to mount")
        elif name not in volumes:
            yield Problem(field(*here, "name"), f"no volume of the pod is named {shown(name)}")
        path = mount.get("mountPath")
        if not isinstance(path, str) or not path:
            yield Problem(field(*here, "mountPath"), "required: where to mount the volume")
        elif path in paths:
            yield Problem(
                field(*here, "mountPath"),
                f"{shown(path)} is mounted by {field(*at, paths[path])} already",
            )
        else:
            paths[path] = index
        sub = mount.get("subPath")
        if isinstance(sub, str) and (sub.startswith("/") or ".." in sub.split("/")):
            yield Problem(
                field(*here, "subPath"), f"{shown(sub)} must be a relative path without '..'"
            )


# -- resources --------------------------------------------------------------------------------


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """An extended resource (a device plugin's, such as nvidia.com/gpu)."""
    return (
        not _native(name)
        and not name.startswith("requests.")
        and qualified_name("requests." + name) is None
    )


def overcommits(name: str) -> bool:
    """Whether a request may be below its limit: not for extended resources and hugepages."""
    return _native(name) and not name.startswith(HUGEPAGES)


def resource_name(name: str) -> str | None:
    """Why `name` cannot be a container's resource, or None."""
    if name in STANDARD_RESOURCES:
        return None
    if (reason := qualified_name(name)) is not None:
        return reason
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not name.startswith(HUGEPAGES):
            return (
                "must be cpu, memory, ephemeral-storage, hugepages-<size>, or a resource with a "
                "domain such as nvidia.com/gpu"
            )
    elif not _native(name) and not _extended(name):
        return "is not an extended resource name (a domain, '/' and a name)"
    return None


def whole(name: str) -> bool:
    """Whether amounts of the resource must be whole numbers (extended resources)."""
    return _extended(name)


def _resources(resources: Any, *at: str | int) -> Iterator[Problem]:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        yield Problem(field(*at), f"must be an object, got {shown(resources)}")
        return
    requests = yield from _amounts(resources.get("requests"), *at, "requests")
    limits = yield from _amounts(resources.get("limits"), *at, "limits")
    raw_limits = _as_mapping(resources.get("limits"))
    for name, request in requests.items():
        if name in limits and not overcommits(name) and request != limits[name]:
            yield Problem(
                field(*at, "requests", name),
                f"must equal the limit {shown(raw_limits[name])}: {name} cannot be overcommitted",
            )
        elif name in limits and request > limits[name]:
            yield Problem(
                field(*at, "requests", name),
                f"must be at most the limit {shown(raw_limits[name])}",
            )
        elif name not in raw_limits and not overcommits(name):
            yield Problem(
                field(*at, "limits", name),
                f"required: {name} cannot be overcommitted, so its request needs an equal limit",
            )
    named = {*requests, *limits}
    if any(n.startswith(HUGEPAGES) for n in named) and not named.intersection(QOS_RESOURCES):
        yield Problem(field(*at), "hugepages need a cpu or memory request or limit beside them")


def _amounts(listed: Any, *at: str | int) -> Generator[Problem, None, dict[str, Decimal]]:
    """The amounts of a requests or limits map that are valid, by resource name."""
    amounts: dict[str, Decimal] = {}
    if listed is None:
        return amounts
    if not isinstance(listed, Mapping):
        yield Problem(field(*at), f"must be an object, got {shown(listed)}")
        return amounts
    for name, quantity in listed.items():
        if (reason := resource_name(str(name))) is not None:
            yield Problem(field(*at, name), f"{shown(name)} {reason}")
            continue
        try:
            amount = parse_quantity(quantity)
        except ValueError:
            reason = f"must be a quantity such as 500m or 2Gi, got {shown(quantity)}"
        else:
            if amount >= 0 and (not whole(name) or amount == amount.to_integral_value()):
                amounts[name] = amount
                continue
            what = "not be negative" if amount < 0 else "be a whole number"
            reason = f"must {what}, got {shown(quantity)}"
        yield Problem(field(*at, name), reason)
    return amounts
