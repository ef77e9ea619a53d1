"""Helpers for the gang e2e tests: submit gangs, read what the cluster shows of them, end them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from kubernetes import client as k8s

from extender.api.scheduling import COSCHEDULING_LABEL, GANG_GATE, GroupKind
from extender.api.scheduling import GROUP_ANNOTATION as GROUP
from extender.devcluster.lifecycle import end_pod
from extender.kube import (
    apply_object,
    condition,
    list_objects,
    pod_group_status,
    read,
    unschedulable_message,
    wait_until,
)
from tests.builders import make_group
from tests.e2e.conftest import PodFactory, events


def submit_gang(
    api: k8s.ApiClient,
    namespace: str,
    pod: PodFactory,
    name: str,
    size: int,
    *,
    cpu: str = "1",
    min_member: int | None = None,
    scheduler: str = "lahar",
    group: bool = True,
    queue: str = "",
    priority_class: str = "",
    annotations: dict[str, str] | None = None,
    kind: GroupKind = GroupKind.VOLCANO,
) -> list[str]:
    """A PodGroup `name` of `kind` (minMember = size unless given; none with `group=False`; in
    `queue` and with `annotations` when given), then its pods (of `priority_class` when given)."""
    if group:
        minimum = size if min_member is None else min_member
        body = make_group(name).ns(namespace).min_member(minimum)
        for key, value in (annotations or {}).items():
            body = body.annotate(key, value)
        if priority_class and kind is GroupKind.NATIVE:  # (kube-scheduler wants them equal)
            body = body.set("spec.priorityClassName", priority_class)
        apply_object(api, (body.queue(queue) if queue else body).kind_object(kind))
    names = [f"{name}-{index}" for index in range(size)]
    for member in names:
        built = pod(member, scheduler).cpu(cpu).group(name, kind)
        apply_object(
            api, (built.priority_class(priority_class) if priority_class else built).build()
        )
    return names


def group_of(pod: dict[str, Any]) -> str | None:
    """The name of the group the pod joins, of whichever kind."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    return (
        (meta.get("annotations") or {}).get(GROUP)
        or (meta.get("labels") or {}).get(COSCHEDULING_LABEL)
        or (spec.get("schedulingGroup") or {}).get("podGroupName")
    )


def kind_status(api: k8s.ApiClient, namespace: str, name: str, kind: GroupKind) -> dict[str, Any]:
    """The status of PodGroup `name` of `kind` as its API shows it ({} while none)."""
    group = read(api, kind.api_version, "PodGroup", name, namespace) or {}
    status: dict[str, Any] = group.get("status") or {}
    return status


def bound(api: k8s.ApiClient, namespace: str, names: list[str]) -> list[str]:
    """Those of `names` the API shows bound to a node."""
    pods = {p["metadata"]["name"]: p for p in list_objects(api, "v1", "Pod", namespace=namespace)}
    return [n for n in names if n in pods and pods[n]["spec"].get("nodeName")]


def alive(api: k8s.ApiClient, namespace: str, names: list[str]) -> list[str]:
    """Those of `names` the API still shows, not being deleted (victims of an eviction are not)."""
    pods = {
        p["metadata"]["name"]
        for p in list_objects(api, "v1", "Pod", namespace=namespace)
        if not p["metadata"].get("deletionTimestamp")
    }
    return [name for name in names if name in pods]


def whole(api: k8s.ApiClient, namespace: str, gangs: dict[str, list[str]]) -> str | None:
    """The first of `gangs` (name -> members) whose every member is bound, if any."""
    done = [g for g, members in gangs.items() if bound(api, namespace, members) == members]
    return done[0] if done else None


def wait_bound(api: k8s.ApiClient, namespace: str, names: list[str], count: int, what: str) -> None:
    wait_until(
        lambda: len(bound(api, namespace, names)) == count,
        timeout=60,
        what=what,
        describe=lambda: f"bound: {bound(api, namespace, names)}",
    )


def held_by_lahar(pod: dict[str, Any]) -> bool:
    """The pod waits behind Lahar's scheduling gate (its gang not let in yet)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return bool(gates) and all(gate.get("name") == GANG_GATE for gate in gates)


def refused_as(
    api: k8s.ApiClient, namespace: str, gang: str, words: str = ""
) -> Callable[[dict[str, Any]], bool]:
    """A pod check: refused for gang `namespace/gang` (and for a reason containing `words`): in
    the scheduler's message on the pod when the scheduler tried it, else, for a pod Lahar's gate
    holds (the scheduler never tries it), in the condition Lahar wrote on its PodGroup."""

    def check(pod: dict[str, Any]) -> bool:
        message = unschedulable_message(pod) or ""
        if not message and held_by_lahar(pod):
            status = pod_group_status(api, namespace, gang)
            message = condition(status, "Unschedulable").get("message", "")
        return f"gang {namespace}/{gang}:" in message and words in message

    return check


def finish(api: k8s.ApiClient, namespace: str, names: list[str]) -> None:
    """End the pods as succeeded (KWOK plays the kubelet)."""
    for name in names:
        end_pod(api, namespace, name, exit_code=0)


def wait_phase(
    api: k8s.ApiClient,
    namespace: str,
    name: str,
    phase: str,
    *,
    running: int | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Wait until PodGroup `name` shows `phase` (and `running` members, and a condition with
    `reason`, when given: the status is written a moment after the pods change, so a count or a
    reason can lag the phase: a gang refused while its pods were still being created says so
    until the next walk refuses it whole); its status."""

    def shows(status: dict[str, Any]) -> bool:
        reasons = {c.get("reason") for c in status.get("conditions") or []}
        return (
            status.get("phase") == phase
            and running in (None, status.get("running"))
            and (reason is None or reason in reasons)
        )

    found: dict[str, Any] = wait_until(
        lambda: s if shows(s := pod_group_status(api, namespace, name)) else None,
        timeout=60,
        what=f"PodGroup {namespace}/{name} to be {phase}",
        describe=lambda: f"status: {pod_group_status(api, namespace, name)}",
    )
    return found


def group_events(api: k8s.ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    """(reason, message) of the events Lahar recorded on PodGroup `name`."""
    about = events(api, namespace, kind="PodGroup", name=name)
    return [(event["reason"], event.get("message", "")) for event in about]


class BindTimeline:
    """When each pod of the namespace was first seen bound, sampled every `interval` seconds in
    a thread while the `with` block runs: binding is one API call per pod, so a gang is partly
    bound for the moment its members' bindings take, and `partial` names any gang for which
    that moment lasted longer than `spread` seconds, or that stayed partly bound."""

    def __init__(self, api: k8s.ApiClient, namespace: str, interval: float = 0.25) -> None:
        self.api, self.namespace, self.interval = api, namespace, interval
        self.bound_at: dict[str, float] = {}  # pod name -> first seen bound (monotonic)
        self.gang_of: dict[str, str] = {}  # pod name -> its gang
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> BindTimeline:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # the state at the end

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic()
        for pod in list_objects(self.api, "v1", "Pod", namespace=self.namespace):
            name = pod["metadata"]["name"]
            gang = group_of(pod)
            if gang:
                self.gang_of[name] = gang
            if pod["spec"].get("nodeName"):
                self.bound_at.setdefault(name, now)

    def partial(self, spread: float = 2.0) -> list[str]:
        members: dict[str, list[str]] = {}
        for pod, gang in self.gang_of.items():
            members.setdefault(gang, []).append(pod)
        found = []
        for gang, pods in sorted(members.items()):
            times = [self.bound_at[pod] for pod in pods if pod in self.bound_at]
            if times and (len(times) < len(pods) or max(times) - min(times) > spread):
                found.append(gang)
        return found
