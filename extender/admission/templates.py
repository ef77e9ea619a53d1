"""A task's pod template, checked where a mistake would otherwise surface only when the controller
creates the pods (the API server refusing every pod of a running job).

Checked: the template has a `spec` with at least one container; every container and init container
has a DNS-label name, unique in the pod, and an image; requests and limits are quantities, and no
request exceeds its limit; `restartPolicy` is one Kubernetes knows; container ports are in range.
The rest of a pod is the API server's to validate when the pod is made. Only fixed paths are read,
so a deeply nested or huge template costs no more than its list lengths.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from extender.admission.names import dns_label
from extender.admission.problems import Problem, field, shown
from extender.api.quantity import parse_quantity

RESTART_POLICIES = ("Always", "OnFailure", "Never")


def template_problems(template: Mapping[str, Any], *at: str | int) -> Iterator[Problem]:
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        yield Problem(field(*at, "spec"), "required: the pods' spec, with at least one container")
        return
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        yield Problem(
            field(*at, "spec", "restartPolicy"),
            f"must be one of {', '.join(RESTART_POLICIES)}, got {shown(policy)}",
        )
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        yield Problem(field(*at, "spec", "containers"), "required: at least one container")
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        listed = spec.get(key)
        if listed is None or (key == "containers" and not isinstance(listed, list)):
            continue
        if not isinstance(listed, list):
            yield Problem(field(*at, "spec", key), f"must be a list, got {shown(listed)}")
            continue
        for index, container in enumerate(listed):
            yield from _container(container, names, *at, "spec", key, index)


def _container(container: Any, names: set[str], *at: str | int) -> Iterator[Problem]:
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
    yield from _resources(container.get("resources"), *at, "resources")
    yield from _ports(container.get("ports"), *at, "ports")


def _resources(resources: Any, *at: str | int) -> Iterator[Problem]:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        yield Problem(field(*at), f"must be an object, got {shown(resources)}")
        return
    amounts: dict[str, dict[str, Any]] = {}
    for kind in ("requests", "limits"):
        listed = resources.get(kind)
        if listed is None:
            continue
        if not isinstance(listed, Mapping):
            yield Problem(field(*at, kind), f"must be an object, got {shown(listed)}")
            continue
        amounts[kind] = {}
        for resource, quantity in listed.items():
            try:
                amounts[kind][resource] = parse_quantity(quantity)
            except ValueError:
                yield Problem(
                    field(*at, kind, resource),
                    f"must be a quantity such as 500m or 2Gi, got {shown(quantity)}",
                )
    limits = amounts.get("limits", {})
    for resource, request in amounts.get("requests", {}).items():
        if resource in limits and request > limits[resource]:
            yield Problem(
                field(*at, "requests", resource),
                f"must be at most the limit {shown(resources['limits'][resource])}",
            )


def _ports(ports: Any, *at: str | int) -> Iterator[Problem]:
    if ports is None:
        return
    if not isinstance(ports, list):
        yield Problem(field(*at), f"must be a list, got {shown(ports)}")
        return
    for index, port in enumerate(ports):
        number = port.get("containerPort") if isinstance(port, Mapping) else None
        if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
            yield Problem(
                field(*at, index, "containerPort"),
                f"must be a port number from 1 to 65535, got {shown(number)}",
            )
