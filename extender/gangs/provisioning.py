"""The ProvisioningRequests a gang's scale-up needs, and what to do about the ones that exist:
the plan the server's provisioner carries out. Pure.

For each gang that wants nodes (`gangs.scale_up`: refused for want of capacity, in a queue whose
mode is `provisioningRequest`, with a PodGroup and pending members) one request of the atomic
class stands: its pod sets are the gang's pending members grouped by task and shape (what they
request, where they may run), each set a PodTemplate made from one of its members, with the
set's count. Request and templates are owned by the gang's PodGroup (deleting the PodGroup
deletes them) and named after it and the attempt (`name-1`; a group of another kind than
Volcano's has its kind in the name), so a restarted extender finds the request it made instead
of making a second one. Pending members carry the request's name and class in the annotations
Cluster Autoscaler reads, so it does not also scale up for them one pod at a time.

`plan` compares what should stand with the requests Lahar's watch shows and says what to do:
create a request (when none stands and the backoff after an ended one is over), delete one
(its gang stands, is gone, or no longer wants nodes: its queue refuses it, or its mode changed;
an ended one when the next attempt is due), name the gangs whose request is Provisioned and
who wait to be admitted onto the new capacity (`gangs.wanting` admits them, ahead of
the fair order, before it lets anyone else in), and annotate members.

The same concept at lower layers: `api.provisioning`, the ProvisioningRequest's model, and
`kube.scale_up`, the writes that carry out this plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.api.objects import Pod
from extender.api.provisioning import (
    API_VERSION,
    ATOMIC_CLASS,
    ATTEMPT_ANNOTATION,
    CLASS_ANNOTATION,
    CONSUME_ANNOTATION,
    ENDED,
    GANG_ANNOTATION,
    KIND,
    MANAGED_BY,
    PROVISIONED,
    ProvisioningRequest,
)
from extender.api.scale_up import Mode
from extender.api.scheduling import GroupKind, PodGroup, gang_key, task_of
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.members import GangView, view_gang
from extender.gangs.scale_up import Asked, ScaleUps, queue_mode, wants_nodes

MAX_NAME = 253
# Fields of a member's spec a PodTemplate leaves out: where it was placed, Lahar's gate, its
# place in a group (a template is no member).
NOT_TEMPLATED = ("nodeName", "schedulingGates", "schedulingGroup")
SHORT_KINDS = {GroupKind.COSCHEDULING: "coscheduling", GroupKind.NATIVE: "native"}


def request_name(group: PodGroup, attempt: int) -> str:
    """The name of the request (and the stem of its templates' names) for attempt `attempt` of
    `group`'s gang: `name-1`, `name-coscheduling-1`; a name too long is cut and made unique with
    a hash of the gang's key."""
    kind = SHORT_KINDS.get(group.group_kind)
    stem = f"{group.metadata.name}-{kind}" if kind else group.metadata.name
    suffix = f"-{attempt}"
    room = MAX_NAME - len(suffix) - 6  # (and "-p" + index for the templates)
    if len(stem) > room:
        digest = hashlib.sha256(group.key.encode()).hexdigest()[:8]
        stem = f"{stem[: room - 9]}-{digest}"
    return stem + suffix


def template_name(request: str, index: int) -> str:
    return f"{request}-p{index}"


def asking_for(gang: GangView) -> list[Pod]:
    """The members a request asks room for: those its admission plans (each task's
    `minTaskMember` first, then up to `minMember`), the all-or-nothing part; members beyond it
    go to the scheduler, and an autoscaler, pod by pod once the gang stands."""
    planned, _ = gang.to_plan
    return list(planned)


def pod_sets(gang: GangView) -> list[tuple[Pod, int]]:
    """The members a request asks for (`asking_for`) in sets of one task and shape: one member
    of each set (the template's source) and how many the set has, in the order they come."""
    sets: dict[tuple[object, ...], list[Pod]] = {}
    for pod in asking_for(gang):
        spec = pod.spec
        shape = (
            task_of(pod),
            repr(pod.request),
            spec.model_dump_json(include={"node_selector", "tolerations", "affinity", "priority"}),
        )
        sets.setdefault(shape, []).append(pod)
    return [(members[0], len(members)) for members in sets.values()]


def owner_reference(group: PodGroup) -> dict[str, Any]:
    return {
        "apiVersion": group.group_kind.api_version,
        "kind": "PodGroup",
        "name": group.metadata.name,
        "uid": group.metadata.uid,
    }


def _labels() -> dict[str, str]:
    return {MANAGED_BY[0]: MANAGED_BY[1]}


def template_body(
    group: PodGroup, name: str, member: Mapping[str, Any], request: str
) -> dict[str, Any]:
    """The PodTemplate `name` made from `member` (a pending pod as the API server has it): its
    labels, annotations and spec, less where it was placed and Lahar's gate; annotated as
    consuming `request` (what the pods made like it will be)."""
    metadata = member.get("metadata", {})
    spec = {k: v for k, v in member.get("spec", {}).items() if k not in NOT_TEMPLATED}
    annotations = dict(metadata.get("annotations") or {})
    annotations.update({CONSUME_ANNOTATION: request, CLASS_ANNOTATION: ATOMIC_CLASS})
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": name,
            "namespace": group.metadata.namespace,
            "labels": _labels(),
            "annotations": {GANG_ANNOTATION: group.key},
            "ownerReferences": [owner_reference(group)],
        },
        "template": {
            "metadata": {"labels": dict(metadata.get("labels") or {}), "annotations": annotations},
            "spec": spec,
        },
    }


def request_body(
    group: PodGroup, name: str, attempt: int, sets: list[tuple[str, int]]
) -> dict[str, Any]:
    """The atomic ProvisioningRequest `name` for `group`'s gang: one pod set per (template name,
    count) of `sets`."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": group.metadata.namespace,
            "labels": _labels(),
            "annotations": {GANG_ANNOTATION: group.key, ATTEMPT_ANNOTATION: str(attempt)},
            "ownerReferences": [owner_reference(group)],
        },
        "spec": {
            "provisioningClassName": ATOMIC_CLASS,
            "podSets": [
                {"podTemplateRef": {"name": template}, "count": count} for template, count in sets
            ],
        },
    }


@dataclass(frozen=True)
class Create:
    gang: str
    name: str
    attempt: int


@dataclass(frozen=True)
class Delete:
    request: ProvisioningRequest
    why: str


@dataclass
class Plan:
    create: list[Create] = field(default_factory=list)
    delete: list[Delete] = field(default_factory=list)
    # Gangs whose request is Provisioned and who are not admitted yet (`gangs.wanting`
    # admits them as soon as they fit).
    admit: list[str] = field(default_factory=list)
    # (namespace, pod name, request name or None to take the annotations off)
    annotate: list[tuple[str, str, str | None]] = field(default_factory=list)


def wanting(state: ClusterState, gangs: Gangs, key: str) -> bool:
    """Whether gang `key` wants a ProvisioningRequest now: it has a PodGroup and pending members,
    is neither admitted nor standing, waits for want of capacity, and its queue's mode is
    `provisioningRequest`."""
    refusal = gangs.refusal(key)
    if refusal is None or not wants_nodes(refusal.rejection.cause):
        return False
    gang = view_gang(state, key)
    if gang.group is None or not gang.pending or gang.stands:
        return False
    if gangs.admission(key) is not None:
        return False
    mode, _ = queue_mode(state.queues, gang.queue, gangs.settings.scale_up.default)
    return mode is Mode.PROVISIONING_REQUEST


def plan(
    state: ClusterState,
    gangs: Gangs,
    book: ScaleUps,
    requests: Mapping[str, ProvisioningRequest],
    now: float,
) -> Plan:
    """What to do now about the gangs that want nodes and Lahar's `requests` (by key), bringing
    `book` up to date with what the requests show."""
    done = Plan()
    standing = _standing(requests, done)
    wanted = {key for key in gangs.refused() if wanting(state, gangs, key)}
    for key in book.asking():
        if key not in standing:
            book.gone(key)
    for key, request in standing.items():
        _review(state, gangs, book, request, done, wanted=key in wanted, now=now)
    for key in sorted(wanted):
        last = standing.get(key)
        if last is not None and last.phase not in ENDED:
            continue
        attempt = book.next_attempt(key, now)
        group = view_gang(state, key).group
        if attempt is None or group is None:
            continue
        if last is not None:
            attempt = max(attempt, last.attempt + 1)
        done.create.append(Create(key, request_name(group, attempt), attempt))
    for key in book.known():
        if key not in standing and key not in wanted:
            book.forget(key)
    done.annotate = _annotations(state, gangs, standing, done)
    return done


def _standing(
    requests: Mapping[str, ProvisioningRequest], done: Plan
) -> dict[str, ProvisioningRequest]:
    """Per gang, the request of Lahar's standing for it (the newest attempt; older ones left
    behind go in `done.delete`). Requests being deleted stand for nobody."""
    standing: dict[str, ProvisioningRequest] = {}
    for request in sorted(requests.values(), key=lambda r: r.attempt):
        owner = request.gang
        if request.metadata.deletion_timestamp is not None or owner is None:
            continue
        if owner in standing:
            done.delete.append(Delete(standing[owner], "a newer attempt stands"))
        standing[owner] = request
    return standing


def _review(
    state: ClusterState,
    gangs: Gangs,
    book: ScaleUps,
    request: ProvisioningRequest,
    done: Plan,
    *,
    wanted: bool,
    now: float,
) -> None:
    """What to do about one standing request: delete it when its gang wants nodes no more (or
    it ended and the next attempt is due), admit its gang when it is Provisioned, keep its
    gang's members annotated as consuming it."""
    key = request.gang
    assert key is not None  # (`_standing` keeps only the ones naming their gang)
    gang = view_gang(state, key)
    if not wanted and not _keep(gangs, gang, request):
        done.delete.append(Delete(request, _why_not_wanted(gangs, gang)))
        book.forget(key)
        return
    phase, said, meta = request.phase, request.said, request.metadata
    book.seen(key, Asked(meta.namespace, meta.name, request.attempt, phase, now, said), now)
    if phase in ENDED:
        book.ended(key, request.attempt, now)
        if wanted and book.next_attempt(key, now) is not None:
            done.delete.append(Delete(request, f"it ended ({phase}); asking again"))
            book.gone(key)
        return
    if phase == PROVISIONED and gangs.admission(key) is None and not gang.stands:
        done.admit.append(key)


def _keep(gangs: Gangs, gang: GangView, request: ProvisioningRequest) -> bool:
    """Whether a request stands on for a gang that does not want one now: one Provisioned for a
    gang admitted onto its capacity that does not stand yet (the booking keeps the capacity
    until its members are bound)."""
    if gang.group is None or gang.stands or not gang.pending:
        return False
    return request.phase == PROVISIONED and gangs.admission(gang.key) is not None


def _why_not_wanted(gangs: Gangs, gang: GangView) -> str:
    if gang.group is None or (not gang.pending and not gang.placed):
        return "its gang is gone"
    if gang.stands:
        return "its gang runs"
    if gangs.admission(gang.key) is not None:
        return "its gang found room"
    refusal = gangs.refusal(gang.key)
    if refusal is not None and not wants_nodes(refusal.rejection.cause):
        return f"its gang waits for another reason now ({refusal.rejection.cause})"
    return "its gang wants no nodes now (its queue's scale-up mode changed)"


def _annotations(
    state: ClusterState, gangs: Gangs, standing: Mapping[str, ProvisioningRequest], done: Plan
) -> list[tuple[str, str, str | None]]:
    """The pending gang pods whose consume annotation must change: the members a standing
    request asks for name it (an ended one too, until the next attempt: Cluster Autoscaler
    must not scale up for them pod by pod meanwhile); a pending member of a gang that still
    waits, unadmitted, that names a request Lahar made for its gang has it taken off (Cluster
    Autoscaler never scales up for a pod that names a request, even one that is gone; the
    members of a gang admitted or standing are on their way to the nodes bought for them, and
    keep the name). Annotations Lahar did not write are left as they are."""
    going = {deletion.request.key for deletion in done.delete}
    expected: dict[str, str] = {}
    for key, request in standing.items():
        if request.key in going:
            continue
        for pod in asking_for(view_gang(state, key)):
            expected[pod.metadata.uid] = request.metadata.name
    changes: list[tuple[str, str, str | None]] = []
    for pod in state.pods.values():
        meta = pod.metadata
        now = meta.annotations.get(CONSUME_ANNOTATION)
        wanted = expected.get(meta.uid)
        if now == wanted or pod.spec.node_name or pod.finished or meta.deletion_timestamp:
            continue
        if wanted is None:
            gang = gang_key(pod)
            group = state.pod_groups.get(gang) if gang is not None else None
            if now is None or group is None or not _made_for(group, now):
                continue
            if gangs.admission(group.key) is not None or view_gang(state, group.key).stands:
                continue
        changes.append((meta.namespace, meta.name, wanted))
    return changes


def _made_for(group: PodGroup, name: str) -> bool:
    """Whether `name` is one Lahar gives the requests it makes for `group`'s gang."""
    stem = request_name(group, 1).rsplit("-", 1)[0]
    rest = name.removeprefix(f"{stem}-")
    return rest != name and rest.isdigit()
