"""Why a gang is where it is, in plain words: what the extender's `/debug/explain` answers.

For one gang: how many members are placed of how many it needs; whether it stands, has a
reservation, or waits, and then why (the reason the gang rules gave, in the words of its PodGroup
condition), how long a backoff still lasts, which gangs come before it in the fair order and
which have reservations; for each kind of pending member (task and request) on how many nodes
one would fit now, or why none (what the roomiest node it may run on lacks); for a gang with a
network topology, the HyperNode it must stay in and the free cpu of the roomiest it may use; and
its queue's allocation against what it deserves, and each parent's up the queue tree, by path
(`root/ml/team-a`), with the resources a queue is allocated all its capability of; with
preemption on, when the only victims that would make room are protected
(`volcano.sh/preemptable`, Volcano's conformance), which and why (`unpreemptable_lines`, from the
last victim search's note, `preemption.plan.protected_victims`); and which group its pods wait for
when some name a group two ways, by which field and why the one read wins (`naming_lines`,
`group_naming`). Reads the gang rules' ledger and the preemption's note, and walks the fair order
as the waker does; changes nothing.

`condition_message` is the same summary for a waiting gang's PodGroup condition, on one line: the
gang rules' reason, the backoff's end as a time, the gangs with reservations, what each kind of
pending member lacks, the queue's share. It leaves out what only a fair-order walk tells (the gangs
ahead; the status writer runs on every change of the gang) and says the backoff's end instead of
the seconds left, so the message stays the same while nothing about the gang changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from extender.api.group_fields import GroupField, pod_fields, split_key
from extender.api.job_pods import is_expected
from extender.api.objects import Pod
from extender.api.quantity import format_units
from extender.api.resources import CPU, EMPTY, PODS, Resources
from extender.api.scale_up import Mode
from extender.api.scheduling import task_of
from extender.cache.snapshot import NodeInfo
from extender.cache.state import ClusterState
from extender.framework.engine import (
    WANTS_CAPACITY,
    Engine,
    GangView,
    QueueView,
    Rejection,
    Room,
    queue_mode,
    view_gang,
    wants_nodes,
)
from extender.framework.status import insufficient


@dataclass(frozen=True)
class Explanation:
    gang: str
    state: str  # NotFound | Standing | Admitted | Waiting
    lines: tuple[str, ...]

    def text(self) -> str:
        return "\n".join(self.lines)


def explain(state: ClusterState, engine: Engine, key: str) -> Explanation:
    gang = view_gang(state, key)
    if gang.group is None and not gang.pending and not gang.placed:
        return Explanation(key, "NotFound", (f"gang {key}: no PodGroup and no pods name it",))
    nodes = state.view().nodes
    lines = [
        f"gang {key}: {gang.ready} of {gang.min_member} members placed, "
        f"{len(gang.pending)} pending (queue {gang.queue})"
    ]
    lines += naming_lines(state, key)
    if gang.stands:
        verdict = "Standing"
        lines.append("it stands: minMember members are placed; more members bind as they fit")
    elif (admitted := engine.admission(key)) is not None:
        verdict = "Admitted"
        slots = admitted.slots
        on = sorted({slot.node for slot in slots.values()})
        lines.append(
            f"admitted: capacity is reserved for {len(slots)} members on {', '.join(on)}; "
            "their binds wait at the barrier until minMember are placed"
        )
    else:
        verdict = "Waiting"
        lines += _waiting(state, engine, gang, nodes)
    lines += _members(gang, nodes, engine)
    lines += _network(gang, nodes, engine)
    lines += _queue(state, engine, gang)
    return Explanation(key, verdict, tuple(lines))


def _waiting(
    state: ClusterState, engine: Engine, gang: GangView, nodes: Mapping[str, NodeInfo]
) -> list[str]:
    key = gang.key
    order = engine.order(state)
    turn = order.turns.get(key)
    waiting = engine.refusal(key)
    lines: list[str] = []
    blocked = engine.blocked(gang)
    if waiting is not None:
        lines.append(f"waiting: {waiting.rejection.message}")
    elif blocked is not None:
        lines.append(f"waiting: {blocked.message}")
    elif turn is not None and turn.rejection is not None:
        lines.append(f"waiting: {turn.rejection.message}")
    elif turn is not None and turn.slots and gang.held:
        lines.append(
            f"waiting: it fits now; Lahar {_lets_in(gang)} when fewer than "
            f"{engine.gang_settings.max_pods_in_flight} members of admitted gangs wait for the "
            f"scheduler ({engine.in_flight()} now)"
        )
    elif turn is not None and turn.slots:
        lines.append("waiting: it fits now; it is admitted when the scheduler next asks about it")
    elif gang.held and all(is_expected(pod.metadata.uid) for pod in gang.held):
        lines.append("waiting: its Job's pods are created once the gang's turn comes")
    elif gang.held:
        lines.append("waiting: its pods wait behind Lahar's gate for the gang's turn")
    else:
        lines.append("waiting: the scheduler has not asked Lahar about its pods yet")
    lines += scale_up_lines(state, engine, gang)
    lines += unpreemptable_lines(state, engine, gang)
    remaining = _backoff_left(engine, key)
    if remaining > 0:
        lines.append(f"backing off for {remaining:.0f}s more (its members did not all bind)")
    if turn is not None:
        ahead = list(order.turns)[: list(order.turns).index(key)]
        if ahead:
            lines.append(f"ahead of it in the fair order: {_few(ahead)}")
    lines += _reserving(engine, key)
    return lines


def condition_message(
    state: ClusterState, engine: Engine, gang: GangView, rejection: Rejection, wall: float
) -> str:
    """The summary a waiting gang's PodGroup condition carries; `wall` is the time now (epoch
    seconds), to say when a backoff ends."""
    parts = [rejection.message, *scale_up_lines(state, engine, gang, wall)]
    remaining = _backoff_left(engine, gang.key)
    if remaining > 0:
        until = datetime.fromtimestamp(wall + remaining, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parts.append(f"backing off until {until}")
    parts += _reserving(engine, gang.key)
    nodes = state.view().nodes
    parts += _members(gang, nodes, engine)
    parts += _network(gang, nodes, engine)
    parts += _queue(state, engine, gang)
    return ". ".join(parts)


def scale_up_lines(
    state: ClusterState, engine: Engine, gang: GangView, wall: float | None = None
) -> list[str]:
    """What a waiting gang asks of an autoscaler (`gangs.scale_up`), or why it asks nothing
    though its queue's mode would: a rule of its queue refuses it, or gangs ahead take its
    turn. `wall`: say times as UTC times (a PodGroup condition)."""
    mode, problem = queue_mode(state.queues, gang.queue, engine.gang_settings.scale_up.default)
    lines = [problem] if problem else []
    if mode is Mode.NONE:
        return lines
    said = engine.scale_up_said(gang.key, engine.clock(), wall)
    if said is not None:
        return [*lines, said]
    if engine.shown(gang.key):
        lines.append(
            "waiting for nodes: its queue's scale-up mode is unschedulable, so its pods are "
            "refused at the scheduler and marked Unschedulable for an autoscaler to add nodes; "
            "the gang binds whole once it fits"
        )
        return lines
    refusal = engine.refusal(gang.key)
    if refusal is not None and not wants_nodes(refusal.rejection.cause):
        lines.append(
            f"no nodes are asked for (scale-up mode {mode}): it waits for "
            f"{refusal.rejection.cause}, not for capacity the cluster lacks, and no node is "
            "bought for pods a queue may not run yet"
        )
    return lines


def unpreemptable_lines(state: ClusterState, engine: Engine, gang: GangView) -> list[str]:
    """For a gang waiting for capacity, when preemption (on with the preempt plugin) last found
    nobody to evict for it although evicting protected pods would make room, which gangs those
    are and why each is protected (`volcano.sh/preemptable`, Volcano's conformance)."""
    protected = engine.protected_victims(state, gang.key)
    if protected is None:
        return []
    turn = engine.order(state).turns.get(gang.key)
    if turn is None or turn.rejection is None or turn.rejection.cause not in WANTS_CAPACITY:
        return []
    return [protected.message]


def _backoff_left(engine: Engine, key: str) -> float:
    return (engine.backoff_ends(key) or 0.0) - engine.clock()


def _reserving(engine: Engine, key: str) -> list[str]:
    reserving = sorted(k for k in engine.reserved_by_gang() if k != key)
    return [f"gangs with reservations: {_few(reserving)}"] if reserving else []


def _few(keys: list[str], shown: int = 5) -> str:
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return ", ".join(keys[:shown]) + more


def _members(gang: GangView, nodes: Mapping[str, NodeInfo], engine: Engine) -> list[str]:
    """Per task and request of the pending members: on how many nodes one fits now, on the
    capacity no other gang reserves (an admitted gang's own reservation is room for its
    members)."""
    kinds: dict[tuple[str, str], list[Pod]] = {}
    for pod in gang.pending:
        asks = Resources({k: v for k, v in pod.request.items() if k != PODS}).describe()
        kinds.setdefault((task_of(pod), asks or "no resources"), []).append(pod)
    reserved = dict(engine.reserved())
    admission = engine.admission(gang.key)
    for slot in admission.slots.values() if admission is not None else ():
        reserved[slot.node] = reserved[slot.node] - slot.request
    room = Room(nodes, reserved)
    where = "unreserved capacity" if admission is None else "its reservation or unreserved capacity"
    lines = []
    for (task, request), pods in sorted(kinds.items()):
        pod = pods[0]
        what = f"{len(pods)} pending {f'of task {task} ' if task else ''}asking {request}"
        fitting = len(room.fitting(pod))
        roomiest = room.roomiest(pod)
        if fitting:
            nodes_now = f"{fitting} node{'s' if fitting > 1 else ''}"
            lines.append(f"{what}: one fits on {nodes_now} now ({where})")
        elif roomiest is None:
            lines.append(f"{what}: no node matches its nodeSelector, affinity and tolerations")
        else:
            free = room.free[roomiest]
            short = pod.request.shortfall(free) or CPU
            why = insufficient(short, pod.request[short], free.get(short, 0))
            lines.append(f"{what}: fits on no node; the roomiest, {roomiest}: {why}")
    return lines


def _network(gang: GangView, nodes: Mapping[str, NodeInfo], engine: Engine) -> list[str]:
    """What its network topology asks, and the free cpu of the HyperNodes it may use (the
    roomiest few, on what no other gang reserves)."""
    reach = gang.reach
    within = reach.gang if reach is not None else None
    if within is None:
        return []
    mode = "hard" if within.hard else "soft"
    line = f"network topology ({mode}): inside one {within.kind}"
    if within.domains:
        reserved = engine.reserved()
        free = {
            d.name: sum(
                max(nodes[n].free[CPU] - reserved.get(n, EMPTY)[CPU], 0)
                for n in d.nodes
                if n in nodes and not nodes[n].unschedulable
            )
            for d in within.domains
        }
        roomiest = sorted(free, key=lambda name: (-free[name], name))
        shown = ", ".join(f"{name} {format_units(free[name], CPU)}" for name in roomiest[:5])
        more = f" and {len(roomiest) - 5} more" if len(roomiest) > 5 else ""
        line += f"; free cpu: {shown}{more}"
    return [line]


def _queue(state: ClusterState, engine: Engine, gang: GangView) -> list[str]:
    view = engine.queues(state).get(gang.queue)
    if view is None:
        return [f"queue {gang.queue} does not exist: the gang waits until it is created"]
    lines = []
    for above in view.lineage():  # the queue, then each parent up to the top level
        # (a queue with no parent but root is named as before trees: by its name)
        what = f"parent {above.path}" if above is not view else f"queue {view.name}"
        if above is view and view.parent is not None:
            what = f"queue {view.path}"
        line = (
            f"{what}: allocated {above.allocated.describe() or 'nothing'}; deserves "
            f"{above.deserved.describe() or 'nothing'} (share {above.share:.2f}"
            f"{', over its share' if above.overused else ''})"
        )
        full = _at_capability(above)
        if full:
            line += f"; at its capability ({full})"
        if not above.queue.open:
            line += f"; {above.queue.status.state}: it admits nothing new"
        lines.append(line)
    if not view.leaf:
        lines.append(f"queue {view.path} has child queues: gangs go in leaf queues")
    return lines


def _at_capability(view: QueueView) -> str:
    """The resources the queue is allocated all its capability of, described (empty: none)."""
    capability = view.queue.spec.capability
    full = {r: cap for r, cap in capability.items() if view.allocated.get(r, 0) >= cap}
    return Resources(full).describe()


def naming_lines(state: ClusterState, key: str) -> list[str]:
    """Which group the pods naming gang `key`'s group in some field wait for, and why
    (`group_naming`), of the pods of the namespace's gangs."""
    namespace = split_key(key)[0]
    pods = [
        state.pods[uid]
        for gang, uids in state.members.items()
        if gang.startswith(f"{namespace}/")
        for uid in uids
        if uid in state.pods
    ]
    return group_naming(key, pods, state.pod_groups.__contains__)


def group_naming(
    key: str, pods: Iterable[Pod], exists: Callable[[str], bool] | None = None
) -> list[str]:
    """What the unfinished `pods` that name gang `key`'s group and another one too say of it. A
    pod naming groups in several fields (created while the webhook was down, or before it refused
    them) joins the group of the first field Lahar reads (`api.group_fields`): pods naming this
    group by a field another wins over wait for that other group (and `exists(its key)`, when
    given, tells whether it does), while this gang's own members are told which field made them
    members. Pure: `lahar explain` says the same from the API."""
    namespace, kind, name = split_key(key)
    away: dict[tuple[GroupField, GroupField, str], list[str]] = {}  # -> the pods another takes
    kept: dict[tuple[GroupField, GroupField, str], list[str]] = {}  # -> the pods this one keeps
    for pod in sorted(pods, key=lambda pod: pod.metadata.name):
        naming = pod_fields(pod)
        if pod.finished or pod.metadata.namespace != namespace or len(naming) < 2:
            continue
        mine = next((f for f, named in naming if f.kind is kind and named == name), None)
        if mine is None:
            continue
        (first, first_name), *others = naming
        if first is not mine:
            away.setdefault((mine, first, first_name), []).append(pod.metadata.key)
        for other, other_name in others if first is mine else ():
            kept.setdefault((mine, other, other_name), []).append(pod.metadata.key)
    lines = []
    for (mine, first, first_name), keys in away.items():
        one = len(keys) == 1
        gone = ""
        if exists is not None and not exists(first.kind.key(namespace, first_name)):
            gone = f" (it does not exist: {'it waits' if one else 'they wait'} until it is made)"
        lines.append(
            f"{'pod' if one else 'pods'} {_few(keys)} {'names' if one else 'name'} this group by "
            f"{mine.said}, but also the {first.kind_name} {namespace}/{first_name} by "
            f"{first.said}, which wins: {'it waits' if one else 'they wait'} for that one{gone}"
        )
    for (mine, other, other_name), keys in kept.items():
        one = len(keys) == 1
        lines.append(
            f"{'pod' if one else 'pods'} {_few(keys)} {'joins' if one else 'join'} this group by "
            f"{mine.said}, which wins over {'its' if one else 'their'} {other.said} naming the "
            f"{other.kind_name} {namespace}/{other_name}"
        )
    return lines


def _lets_in(gang: GangView) -> str:
    """What Lahar does when it lets the gang in: lifts its pods' gate, or (a Job's pods not
    created yet) shows its PodGroup Inqueue so that the Job's controller creates them."""
    if any(is_expected(pod.metadata.uid) for pod in gang.held):
        return "shows its PodGroup Inqueue, and its Job's controller creates its pods,"
    return "lifts its pods' gate"
