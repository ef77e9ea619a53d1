"""A stand-in for Cluster Autoscaler (CA) in tests on a real cluster: it reads one namespace's
ProvisioningRequests (`autoscaling.x-k8s.io/v1`) and pending pods through the public API, adds
fake nodes from one node pool, and writes the conditions CA writes.

It follows CA's own code (kubernetes/autoscaler, cluster-autoscaler 1.37): `processors/provreq/`
(injector.go, processor.go, pods_filter.go), `provisioningrequest/besteffortatomic/`,
`provisioningrequest/conditions/conditions.go`, `provisioningrequest/provreqwrapper/wrapper.go`
and the all-or-nothing checks of `core/scaleup/orchestrator/orchestrator.go`. Every `interval`
seconds its thread does what one CA loop does, in CA's order:

- Bookings. A best-effort-atomic request with Provisioned=True (neither Failed nor BookingExpired
  True) books its capacity. `booking` seconds (CA: 10 minutes) after Provisioned's
  lastTransitionTime it gets BookingExpired=True, CapacityReservationTimeExpired, whether or not
  its pods run; before that, once as many bound pods of the namespace consume it (annotation
  `autoscaling.x-k8s.io/consume-provisioning-request`) as its pod sets count, BookingExpired=True,
  CapacityBookingConsumed. While booked, its template pods take room on the existing capacity
  other requests are checked against (not the room pending pods are checked against: CA books
  after it has sorted those out). A booked request whose PodTemplate is gone gets Failed=True,
  FailedToBookCapacity.
- Requests, one per loop as in CA: the oldest best-effort-atomic request with neither Provisioned
  nor Failed True, or with Provisioned=False once its backoff has passed (`initial_backoff`,
  doubling up to `max_backoff`: CA's 1m and 10m). A missing PodTemplate fails it at once
  (Failed=True, FailedToCreatePods, CA's "missing pod templates, ..." message; not Accepted).
  Else Accepted=True, and its pods (each pod set's template, `count` times) are put first-fit on
  the existing capacity. All fit: Provisioned=True, CapacityIsFound, no node. Else the rest go
  first-fit onto new template nodes: when each fits an empty one and the pool has room for all
  the nodes they need, the nodes are requested (they appear `delay` seconds later, together) and
  Provisioned=True, CapacityIsProvisioned is written at once: CA admits the workload when the
  scale-up is requested, not when the nodes are up. Otherwise nothing is added (all or nothing)
  and Provisioned=False, CapacityIsNotFound; CA retries after the backoff and does not set
  Failed for missing capacity.
- Pending pods, those CA scales up for: not bound, not gated, not being deleted, not expendable
  (priority below -10), PodScheduled=False with reason Unschedulable, and not consuming a request
  (CA leaves those to their request). The ones that fit the existing capacity are left to the
  scheduler; each other, in creation order, goes on the first node added in this loop it fits, or
  gets a new template node when the pool has room and it never had one. Like CA it knows no
  gangs: it adds nodes for whichever pods of a gang are pending. A pod that triggered a node is
  recorded as ("node", node, pod).

Existing capacity is every Ready node (without `node.kubernetes.io/` taints, not cordoned, not
being deleted) less the requests of the pods bound to it in any namespace, plus the nodes
decided on but not Ready yet, as the template (CA's upcoming nodes). A pod fits a node when its
nodeSelector, required node affinity (matchExpressions, and matchFields on metadata.name) and
tolerations (of NoSchedule and NoExecute taints) allow it, and its requests fit what is free:
every resource it asks for, cpu, memory or extended, and one of the node's `pods`. Requests are
counted as the scheduler counts them: containers, init containers and sidecars, pod-level
requests, overhead.

Conditions are written as CA writes them. Accepted, BookingExpired and Failed: by an update of
the status subresource (CA's AddOrUpdateCondition: the condition replaced or appended, with
observedGeneration and a new lastTransitionTime even when only restated). Provisioned: by
server-side apply of the status (field manager `cluster-autoscaler`, forced) with type, status,
reason, message and lastTransitionTime, no observedGeneration, as the best-effort-atomic class
applies it (here with the resourceVersion of the Accepted update as a precondition, so a request
deleted and made again under its name meanwhile is left alone). CapacityRevoked is in the API,
but CA never writes it; neither does this.

Not modelled: the class check-capacity.autoscaling.x-k8s.io (CA serves it; its requests are left
alone here) and the `processorInstance` parameter; other classes are ignored, as CA ignores them.
Failed=True, Expired 7 days after creation, and CA's deletion of requests ended a week ago. CA's
alternation of loops between requests and other pods (both are served in each loop here,
requests first), its estimator (pod equivalence groups, binpacking; here plain first-fit in
creation order), several node groups, the expander, balancing, min sizes, --max-nodes-total and
--max-nodes-per-scaleup, cloud errors and partial scale-ups, daemonset pods on new nodes, the
new-pod scale-up delay, scale-down (the nodes go only when the context is left) and events. Of
the scheduler's filters, pod (anti-)affinity, topology spread, host ports, volumes and DRA.

A failed API call in the thread is recorded in `log` as ("error", text); the next loop runs on.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self, cast

from kubernetes import client as k8s

from extender.api.quantity import parse_quantity, to_units
from extender.devcluster.nodes import is_schedulable
from extender.kube import apply_object, delete, list_objects, read

GROUP = "autoscaling.x-k8s.io"
VERSION = "v1"
PLURAL = "provisioningrequests"
ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CONSUME = (
    f"{GROUP}/consume-provisioning-request",
    "cluster-autoscaler.kubernetes.io/consume-provisioning-request",
)
MANAGER = "cluster-autoscaler"
EXPENDABLE_BELOW = -10  # CA's --expendable-pods-priority-cutoff
BOUND = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

# (reason, message) as CA writes them: conditions.go, and the CapacityIsNotFound message of
# besteffortatomic/provisioning_class.go (CA's CapacityIsProvisionedMsg repeats CapacityIsFoundMsg).
ACCEPTED = ("Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler")
CAPACITY_FOUND = ("CapacityIsFound", "Capacity is found in the cluster")
CAPACITY_PROVISIONED = ("CapacityIsProvisioned", "Capacity is found in the cluster")
CAPACITY_NOT_FOUND = ("CapacityIsNotFound", "Capacity is not found, CA will try to find it later.")
RESERVATION_EXPIRED = ("CapacityReservationTimeExpired", "Capacity reservation time is expired")
BOOKING_CONSUMED = ("CapacityBookingConsumed", "Capacity booking consumed: all pods scheduled")
FAILED_TO_CREATE_PODS = "FailedToCreatePods"
FAILED_TO_BOOK = "FailedToBookCapacity"

Resources = dict[str, int]
Spec = Mapping[str, Any]
LogEntry = tuple[Any, ...]


def _add(total: Resources, more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def _units(quantities: Mapping[str, Any] | None) -> Resources:
    return {name: to_units(parse_quantity(q), name) for name, q in (quantities or {}).items()}


def _container(container: Mapping[str, Any]) -> Resources:
    return _units((container.get("resources") or {}).get("requests"))


def pod_requests(spec: Spec) -> Resources:
    """What the scheduler counts a pod as asking for (cpu in millicores, bytes, ...) and one pod:
    the containers, each init container with the sidecars started before it, the sidecars for
    the pod's life, pod-level requests instead of the sums they name, and the overhead."""
    total: Resources = {}
    for container in spec.get("containers") or []:
        _add(total, _container(container))
    sidecars: Resources = {}
    peak: Resources = {}  # the most any step of the init phase asks for
    for container in spec.get("initContainers") or []:
        own = _container(container)
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            step = dict(sidecars)
        else:
            step = dict(own)
            _add(step, sidecars)
        for name, amount in step.items():
            peak[name] = max(peak.get(name, 0), amount)
    for name, amount in peak.items():
        total[name] = max(total.get(name, 0), amount)
    total.update(_units((spec.get("resources") or {}).get("requests")))
    _add(total, _units(spec.get("overhead")))
    total["pods"] = 1
    return total


@dataclass
class Capacity:
    """A node as the simulation sees it: its labels and taints, and what is left of it."""

    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    free: Resources

    @classmethod
    def of(cls, node: Mapping[str, Any], bound: Iterable[Spec] = ()) -> Capacity:
        """The node less the pods (specs) bound to it."""
        meta, status = node["metadata"], node.get("status") or {}
        capacity = cls(
            name=meta["name"],
            labels=dict(meta.get("labels") or {}),
            taints=list((node.get("spec") or {}).get("taints") or []),
            free=_units(status.get("allocatable") or status.get("capacity")),
        )
        for spec in bound:
            capacity.take(spec)
        return capacity

    def take(self, spec: Spec) -> None:
        for name, amount in pod_requests(spec).items():
            self.free[name] = self.free.get(name, 0) - amount


def _matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values, value = expression.get("values") or [], labels.get(key)
    if operator in ("Gt", "Lt"):
        if value is None or not value.lstrip("-").isdigit() or len(values) != 1:
            return False
        return int(value) > int(values[0]) if operator == "Gt" else int(value) < int(values[0])
    return {
        "In": value is not None and value in values,
        "NotIn": value not in values,
        "Exists": value is not None,
        "DoesNotExist": value is None,
    }.get(operator, False)


def _affinity_allows(spec: Spec, node: Capacity) -> bool:
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    fields = {"metadata.name": node.name}

    def term_matches(term: Mapping[str, Any]) -> bool:
        expressions, by_field = term.get("matchExpressions") or [], term.get("matchFields") or []
        return bool(expressions or by_field) and (
            all(_matches(e, node.labels) for e in expressions)
            and all(_matches(f, fields) for f in by_field)
        )

    return not terms or any(term_matches(term) for term in terms)


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool(toleration.get("value", "") == taint.get("value", ""))


def fits(spec: Spec, node: Capacity) -> bool:
    """Whether a pod (its spec) may go on the node and its requests fit what is left there."""
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(key) != value for key, value in selector.items()):
        return False
    if not _affinity_allows(spec, node):
        return False
    tolerations = spec.get("tolerations") or []
    for taint in node.taints:
        hard = taint.get("effect") in ("NoSchedule", "NoExecute")
        if hard and not any(_tolerates(t, taint) for t in tolerations):
            return False
    return all(node.free.get(name, 0) >= amount for name, amount in pod_requests(spec).items())


def first_fit(specs: Iterable[Spec], nodes: Sequence[Capacity]) -> list[Spec]:
    """Put each pod on the first node it fits, taking its room there; the pods that fit none."""
    left: list[Spec] = []
    for spec in specs:
        node = next((n for n in nodes if fits(spec, n)), None)
        if node is None:
            left.append(spec)
        else:
            node.take(spec)
    return left


def nodes_needed(
    specs: Iterable[Spec], template: Callable[[int], Capacity], room: int
) -> int | None:
    """How many new nodes (`template(i)`: the i-th) the pods need, each put on the first new node
    it fits and a node added when it fits none; None when a pod fits no empty node or more than
    `room` nodes would be needed (all or nothing)."""
    added: list[Capacity] = []
    for spec in specs:
        node = next((n for n in added if fits(spec, n)), None)
        if node is None:
            node = template(len(added))
            if len(added) >= room or not fits(spec, node):
                return None
            added.append(node)
        node.take(spec)
    return len(added)


def consumed_request(pod: Mapping[str, Any]) -> str | None:
    """The ProvisioningRequest the pod consumes (CA's annotation, or its older one)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return next((annotations[key] for key in CONSUME if key in annotations), None)


def pending(pod: Mapping[str, Any]) -> bool:
    """Whether CA would scale up for the pod (one not consuming a request)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or spec.get("schedulingGates") or meta.get("deletionTimestamp"):
        return False
    if status.get("phase") in ("Succeeded", "Failed") or consumed_request(pod) is not None:
        return False
    if (spec.get("priority") or 0) < EXPENDABLE_BELOW:
        return False
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or []
    )


def condition(request: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for found in (request.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return None


def is_true(request: Mapping[str, Any], kind: str) -> bool:
    found = condition(request, kind)
    return found is not None and found.get("status") == "True"


def _age(found: Mapping[str, Any]) -> float:
    """Seconds since the condition's lastTransitionTime."""
    since = datetime.fromisoformat(str(found.get("lastTransitionTime")))
    return (datetime.now(UTC) - since).total_seconds()


def _created(item: Mapping[str, Any]) -> tuple[str, str]:
    """Oldest first (ties by name)."""
    return item["metadata"].get("creationTimestamp") or "", item["metadata"]["name"]


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class NodePool:
    """Where new nodes come from: `template(name)` is the Node to create (a KWOK fake node, with
    the labels and taints a test wants); the pool adds `max_nodes` in all, each `delay` seconds
    after it was decided on, named `<prefix>-<n>` (prefix "": `<namespace>-ca`)."""

    template: Callable[[str], dict[str, Any]]
    max_nodes: int
    delay: float = 0.0
    prefix: str = ""


class Provisioner:
    """CA for one namespace, on a daemon thread while the context is open (see the module)."""

    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        pool: NodePool,
        *,
        booking: float = 600.0,
        interval: float = 0.5,
        initial_backoff: float = 60.0,
        max_backoff: float = 600.0,
    ) -> None:
        self.api, self.namespace, self.pool = api, namespace, pool
        self.booking, self.interval = booking, interval
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self._objects = k8s.CustomObjectsApi(api)
        self._prefix = pool.prefix or f"{namespace}-ca"
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ca-{namespace}", daemon=True)
        self._created: list[str] = []
        self._upcoming: list[tuple[float, dict[str, Any]]] = []  # (when due, Node)
        self._named = 0  # nodes decided on (created or upcoming)
        self._served: set[str] = set()  # pods (uids) a node was added for
        self._backoff: dict[str, float] = {}  # request uid: the wait before its next retry
        self._log: list[LogEntry] = []

    @property
    def nodes(self) -> list[str]:
        """The nodes created so far, in order."""
        with self._lock:
            return list(self._created)

    @property
    def log(self) -> list[LogEntry]:
        """What it did, in order: ("accepted", request), ("provisioned", request, nodes),
        ("not-provisioned", request, reason), ("failed", request, reason), ("booking-expired",
        request, reason), ("node", node, pod), ("created", node), ("error", text)."""
        with self._lock:
            return list(self._log)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._closing.set()
        self._thread.join()
        for name in self.nodes:
            delete(self.api, "v1", "Node", name)

    def _record(self, *entry: Any) -> None:
        with self._lock:
            self._log.append(entry)

    def _run(self) -> None:
        while not self._closing.is_set():
            try:
                self._loop()
            except Exception as error:  # an API call failed: said in the log, tried again
                self._record("error", f"{type(error).__name__}: {error}")
            self._closing.wait(self.interval)

    def _loop(self) -> None:
        self._create_due()
        requests = self._requests()
        pods = list_objects(self.api, "v1", "Pod", namespace=self.namespace)
        booked = self._bookings(requests, pods)
        waiting = sorted(filter(pending, pods), key=_created)
        if not waiting and not any(self._due(r) for r in requests):
            return
        snapshot = self._snapshot()
        left = [pod for pod in waiting if first_fit([pod["spec"]], snapshot)]  # fit nowhere
        first_fit(booked, snapshot)
        self._provision(requests, snapshot)
        self._scale_up(left)

    # Nodes.

    def _room(self) -> int:
        return self.pool.max_nodes - self._named

    def _name(self, index: int) -> str:
        return f"{self._prefix}-{self._named + index}"

    def _decide(self, count: int) -> list[str]:
        names = [self._name(i) for i in range(count)]
        due = time.monotonic() + self.pool.delay
        self._upcoming += [(due, self.pool.template(name)) for name in names]
        self._named += count
        return names

    def _create_due(self) -> None:
        while self._upcoming and self._upcoming[0][0] <= time.monotonic():
            node = self._upcoming[0][1]
            apply_object(self.api, node, field_manager=MANAGER)
            self._upcoming.pop(0)
            name = node["metadata"]["name"]
            with self._lock:
                self._created.append(name)
            self._record("created", name)

    def _snapshot(self) -> list[Capacity]:
        """Existing capacity: the Ready nodes less their pods, and the upcoming nodes."""
        bound: dict[str, list[Spec]] = {}
        for pod in list_objects(self.api, "v1", "Pod", field_selector=BOUND):
            bound.setdefault(pod["spec"]["nodeName"], []).append(pod["spec"])
        nodes = list_objects(self.api, "v1", "Node")
        ready = [
            n
            for n in nodes
            if is_schedulable(n)
            and not (n.get("spec") or {}).get("unschedulable")
            and not n["metadata"].get("deletionTimestamp")
        ]
        snapshot = [Capacity.of(n, bound.get(n["metadata"]["name"], [])) for n in ready]
        listed = {n["metadata"]["name"] for n in nodes} - {n["metadata"]["name"] for n in ready}
        booting = [self.pool.template(name) for name in self.nodes if name in listed]
        return snapshot + [Capacity.of(n) for n in booting + [n for _, n in self._upcoming]]

    def _scale_up(self, pods: list[dict[str, Any]]) -> None:
        added: list[Capacity] = []
        for pod in pods:
            spec, uid = pod["spec"], pod["metadata"]["uid"]
            if first_fit([spec], added) == []:
                continue
            node = Capacity.of(self.pool.template(self._name(0)))
            if uid in self._served or self._room() <= 0 or not fits(spec, node):
                continue
            node.take(spec)
            added.append(node)
            self._served.add(uid)
            self._record("node", self._decide(1)[0], pod["metadata"]["name"])

    # ProvisioningRequests.

    def _requests(self) -> list[dict[str, Any]]:
        """The namespace's best-effort-atomic requests not being deleted, oldest first."""
        try:
            listed = cast(
                dict[str, Any],
                self._objects.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL),
            )
        except k8s.ApiException as error:
            if error.status == 404:  # the CRD is not installed
                return []
            raise
        items: list[dict[str, Any]] = [
            r
            for r in listed.get("items") or []
            if r.get("spec", {}).get("provisioningClassName") == ATOMIC
            and not r["metadata"].get("deletionTimestamp")
        ]
        return sorted(items, key=_created)

    def _pod_specs(self, request: Mapping[str, Any]) -> tuple[list[Spec], str]:
        """The pods of the request's pod sets, or an error as CA words it."""
        sets = request["spec"].get("podSets") or []
        specs: list[Spec] = []
        missing: list[str] = []
        for pod_set in sets:
            name = pod_set["podTemplateRef"]["name"]
            template = read(self.api, "v1", "PodTemplate", name, self.namespace)
            if template is None:
                missing.append(name)
            else:
                specs += [template["template"]["spec"]] * int(pod_set["count"])
        if missing:
            return [], (
                f"missing pod templates, {len(sets)} pod templates were referenced, "
                f"{len(missing)} templates were missing: {','.join(missing)}"
            )
        return specs, ""

    def _bookings(self, requests: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[Spec]:
        """End the bookings that are over; the pods of those that hold."""
        booked: list[Spec] = []
        for request in requests:
            provisioned = condition(request, "Provisioned")
            if is_true(request, "Failed") or is_true(request, "BookingExpired"):
                continue
            if provisioned is None or provisioned.get("status") != "True":
                continue
            name = request["metadata"]["name"]
            if _age(provisioned) > self.booking:
                self._end(request, "BookingExpired", RESERVATION_EXPIRED)
                continue
            scheduled = sum(
                1
                for p in pods
                if p["spec"].get("nodeName")
                and consumed_request(p) == name
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            )
            if scheduled >= sum(int(s["count"]) for s in request["spec"]["podSets"]):
                self._end(request, "BookingExpired", BOOKING_CONSUMED)
                continue
            specs, error = self._pod_specs(request)
            if error:
                why = (FAILED_TO_BOOK, f"Couldn't create pods, err: {error}")
                self._end(request, "Failed", why)
            booked += specs
        return booked

    def _end(self, request: dict[str, Any], kind: str, why: tuple[str, str]) -> None:
        if self._update(request, kind, "True", *why) is not None:
            entry = "booking-expired" if kind == "BookingExpired" else "failed"
            self._record(entry, request["metadata"]["name"], why[0])

    def _due(self, request: Mapping[str, Any]) -> bool:
        """Whether CA would take the request up now (first time, or a retry after backoff)."""
        if is_true(request, "Failed") or is_true(request, "Provisioned"):
            return False
        provisioned = condition(request, "Provisioned")
        if provisioned is None:
            return True
        wait = self._backoff.get(request["metadata"]["uid"], self.initial_backoff)
        return provisioned.get("status") == "False" and _age(provisioned) > wait

    def _provision(self, requests: list[dict[str, Any]], snapshot: list[Capacity]) -> None:
        """Take up the first request that is due, as CA's injector and atomic class do."""
        for request in requests:
            if not self._due(request):
                continue
            uid, name = request["metadata"]["uid"], request["metadata"]["name"]
            if condition(request, "Provisioned") is not None:  # a retry: the next waits longer
                wait = self._backoff.get(uid, self.initial_backoff)
                self._backoff[uid] = min(2 * wait, self.max_backoff)
            specs, error = self._pod_specs(request)
            if error:
                self._end(request, "Failed", (FAILED_TO_CREATE_PODS, error))
                continue
            if self._update(request, "Accepted", "True", *ACCEPTED) is None:
                continue
            self._record("accepted", name)
            left = first_fit(specs, copy.deepcopy(snapshot))
            if not left:
                if self._apply_provisioned(request, "True", CAPACITY_FOUND):
                    self._record("provisioned", name, ())
                return

            def template(index: int) -> Capacity:
                return Capacity.of(self.pool.template(self._name(index)))

            count = nodes_needed(left, template, self._room())
            if count is None:
                if self._apply_provisioned(request, "False", CAPACITY_NOT_FOUND):
                    self._record("not-provisioned", name, CAPACITY_NOT_FOUND[0])
                return
            names = self._decide(count)
            if self._apply_provisioned(request, "True", CAPACITY_PROVISIONED):
                self._record("provisioned", name, tuple(names))
            return

    def _update(
        self, request: dict[str, Any], kind: str, status: str, reason: str, message: str
    ) -> dict[str, Any] | None:
        """Add or replace condition `kind` by an update of the status (None: the request changed
        or went meanwhile); the request as stored."""
        meta = request["metadata"]
        new: dict[str, Any] = {"type": kind, "status": status, "lastTransitionTime": _stamp()}
        new |= {"reason": reason, "message": message}
        if meta.get("generation"):
            new["observedGeneration"] = meta["generation"]
        conditions = (request.get("status") or {}).get("conditions") or []
        if any(c.get("type") == kind for c in conditions):
            conditions = [new if c.get("type") == kind else c for c in conditions]
        else:
            conditions = [*conditions, new]
        body = copy.deepcopy(request)
        body["status"] = {**(body.get("status") or {}), "conditions": conditions}
        stored = self._write(self._objects.replace_namespaced_custom_object_status, body)
        if stored is None:
            return None
        request.clear()
        request.update(stored)
        return stored

    def _apply_provisioned(
        self, request: Mapping[str, Any], status: str, why: tuple[str, str]
    ) -> bool:
        """Server-side apply the Provisioned condition. The resourceVersion the Accepted update
        left is a precondition (CA's apply has none): False when the request changed or went
        since, e.g. deleted and made again under its name."""
        meta = request["metadata"]
        new = {"type": "Provisioned", "status": status, "reason": why[0], "message": why[1]}
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ProvisioningRequest",
            "metadata": {
                "name": meta["name"],
                "namespace": self.namespace,
                "resourceVersion": meta["resourceVersion"],
            },
            "status": {"conditions": [new | {"lastTransitionTime": _stamp()}]},
        }
        patch = self._objects.patch_namespaced_custom_object_status
        apply = "application/apply-patch+yaml"
        return self._write(patch, body, force=True, _content_type=apply) is not None

    def _write(
        self, call: Callable[..., Any], body: Mapping[str, Any], **options: Any
    ) -> dict[str, Any] | None:
        """Write the request's status with `call` as CA's field manager; the request as stored
        (None: it changed or went meanwhile, a 409 or 404)."""
        name = body["metadata"]["name"]
        try:
            stored = call(
                GROUP, VERSION, self.namespace, PLURAL, name, body, field_manager=MANAGER, **options
            )
        except k8s.ApiException as error:
            if error.status in (404, 409):
                return None
            raise
        return cast(dict[str, Any], stored)
