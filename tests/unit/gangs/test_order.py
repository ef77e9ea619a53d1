"""The fair order at admission: queue share, priority, backfill, queue rules and starvation."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import pytest

from extender.api.objects import ObjectMeta, PriorityClass
from extender.api.scheduling import GANG_GATE
from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.framework.policy import Policy, build_policy
from extender.gangs.ledger import Gangs
from extender.gangs.refusals import Cause, Deferred, Rejection
from extender.gangs.turns import Turn
from extender.plugins import REGISTRY
from tests.builders import (
    PodBuilder,
    QueueBuilder,
    cluster,
    make_group,
    make_node,
    make_pod,
    make_queue,
)

PLUGINS = ["sla", "priority", "gang", "drf", "proportion", "predicates"]


def policy(sla_seconds: float = 300) -> Policy:
    """`PLUGINS` in one tier, the sla plugin's limit `sla_seconds`."""
    plugins = [
        {"name": name, "arguments": {"sla.waitingTimeSeconds": sla_seconds}}
        if name == "sla"
        else {"name": name}
        for name in PLUGINS
    ]
    document = {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [{"plugins": plugins}],
    }
    return build_policy(document, REGISTRY)


def engine(
    sla_seconds: float = 300, now: list[float] | None = None, schedulers: Collection[str] = ()
) -> Engine:
    """An engine of `policy(sla_seconds)`, reading the clock `now[0]` (the monotonic one when
    None), serving `schedulers` from the start."""
    clock = (lambda: now[0]) if now is not None else time.monotonic
    return Engine(policy(sla_seconds), schedulers, clock=clock)


def ledger(sla_seconds: float = 300, now: list[float] | None = None) -> Gangs:
    """The gang ledger alone, as `engine` builds it, for what only its insides show."""
    built = policy(sla_seconds)
    assert built.gang_settings is not None
    clock = (lambda: now[0]) if now is not None else time.monotonic
    return Gangs(built.gang_settings, clock=clock, ordering=built.ordering)


@dataclass
class Gang:
    name: str
    size: int
    cpu: str = "2"
    queue: str = ""
    priority: int = 0
    on: str = ""  # already running there (all members)

    def pods(self) -> list[PodBuilder]:
        pods = []
        for index in range(self.size):
            pod = (
                make_pod(f"{self.name}-{index}")
                .cpu(self.cpu)
                .group(self.name)
                .priority(self.priority)
            )
            pods.append(pod.on(self.on).phase("Running") if self.on else pod)
        return pods


@dataclass
class Scenario:
    nodes: int
    gangs: list[Gang]
    queues: list[QueueBuilder] = field(default_factory=list)


def state_of(scenario: Scenario) -> ClusterState:
    nodes = [make_node(f"n{i}").cpu("4") for i in range(scenario.nodes)]
    state = cluster(nodes, [pod for gang in scenario.gangs for pod in gang.pods()])
    for queue in scenario.queues:
        state.upsert_queue(queue.model())
    for gang in scenario.gangs:
        group = make_group(gang.name).min_member(gang.size)
        state.upsert_pod_group((group.queue(gang.queue) if gang.queue else group).model())
    return state


def ask(built: Engine | Gangs, state: ClusterState, gang: str) -> str | None:
    """Filter the gang's first member as the filter action does: None when admitted. Asked of
    the ledger alone, as the engine asks it."""
    pod = state.pods[f"uid-default-{gang}-0"]
    if isinstance(built, Gangs):
        built.serve(pod.spec.scheduler_name)
        return built.verdict(state, state.view().nodes, pod).reason
    return built.filter(state, pod, []).gang_reason


def free(state: ClusterState, gang: Gang) -> None:
    """The gang's pods finish: their capacity is free."""
    for pod in gang.pods():
        state.upsert_pod(pod.phase("Succeeded").model())


def test_the_least_served_queue_goes_first_when_capacity_frees() -> None:
    running_a = Gang("run-a", 2, queue="a", on="n0")
    running = [
        running_a,
        Gang("run-a2", 2, queue="a", on="n1"),
        Gang("run-b", 2, queue="b", on="n2"),
    ]
    scenario = Scenario(
        3,
        [*running, Gang("next-a", 2, queue="a"), Gang("next-b", 2, queue="b")],
        [make_queue("a").weight(1), make_queue("b").weight(3)],
    )
    state, built = state_of(scenario), engine()
    assert ask(built, state, "next-a") is not None  # full: both wait
    assert ask(built, state, "next-b") is not None
    # 4 cpu free. Of 12, a deserves 3 and holds 4 (share 1.33); b deserves 9 and holds 4 (0.44).
    free(state, running_a)
    reason = ask(built, state, "next-a")
    assert reason is not None and "ahead of it in the fair order" in reason
    assert "default/next-b" in reason
    assert built.admissible(state) == ["default/next-b"]
    assert ask(built, state, "next-b") is None


def test_gangs_the_scheduler_has_not_asked_about_yet_contend_too() -> None:
    """The scheduler tries pods in its own order (here: every light gang first); the fair order
    still hands the capacity out 1:3, and wakes the parked gangs it lets in."""
    light = [Gang(f"l{i}", 1, cpu="1", queue="light") for i in range(4)]
    heavy = [Gang(f"h{i}", 1, cpu="1", queue="heavy") for i in range(4)]
    queues = [make_queue("light").weight(1), make_queue("heavy").weight(3)]
    state, built = state_of(Scenario(1, [*light, *heavy], queues)), engine()
    for gang in heavy[:2]:  # tried before, when the node was full: parked
        state.upsert_pod(gang.pods()[0].parked().model())
    assert ask(built, state, "l0") is None  # 4 cpu: light deserves 1, heavy 3
    for gang in light[1:]:
        reason = ask(built, state, gang.name)
        assert reason is not None and "ahead of it in the fair order" in reason
    assert built.admissible(state) == ["default/h0", "default/h1"]
    assert all(ask(built, state, gang.name) is None for gang in heavy[:3])


@pytest.mark.parametrize(
    ("gangs", "asked", "admitted"),
    [
        pytest.param(
            [Gang("low", 2, priority=1), Gang("high", 2, priority=100)],
            "low",
            "high",
            id="higher priority first in a queue",
        ),
        pytest.param(
            [Gang("big", 3, priority=100), Gang("small", 2, priority=1)],
            "small",
            "small",
            id="backfill: a more deserving gang that cannot fit claims nothing",
        ),
    ],
)
def test_order_within_a_queue(gangs: list[Gang], asked: str, admitted: str) -> None:
    blocker = Gang("run", 2, on="n0")  # 4 of 8 cpu in use: room for one gang of 2x2
    state, built = state_of(Scenario(2, [blocker, Gang("filler", 2, on="n1"), *gangs])), engine()
    for gang in gangs:
        assert ask(built, state, gang.name) is not None
    free(state, blocker)
    assert built.admissible(state) == [f"default/{admitted}"]
    assert (ask(built, state, asked) is None) == (asked == admitted)


@pytest.mark.parametrize(
    ("queue", "words"),
    [
        (make_queue("q").state("Closed"), "queue q is Closed: it admits nothing new"),
        (None, "queue q does not exist"),
        (
            make_queue("q").capability(cpu="3"),
            "queue q would have more cpu than its capability (3)",
        ),
    ],
)
def test_queue_rules_refuse_before_any_plan(queue: QueueBuilder | None, words: str) -> None:
    scenario = Scenario(2, [Gang("g", 2, queue="q")], [queue] if queue else [])
    state = state_of(scenario)
    reason = ask(engine(), state, "g")
    assert reason is not None and words in reason


def test_a_closed_queue_keeps_its_running_work() -> None:
    state = state_of(
        Scenario(1, [Gang("g", 1, queue="q", on="n0")], [make_queue("q").state("Closed")])
    )
    assert ask(engine(), state, "g") is None  # it stands: nothing to admit, nothing refused


@pytest.mark.parametrize(
    ("policy_limit", "annotation"),
    [(60, None), (300, "1m")],  # the policy's limit, or the PodGroup's own sla-waiting-time
)
def test_a_starving_gang_drains_capacity_that_small_gangs_would_take(
    policy_limit: float, annotation: str | None
) -> None:
    now = [0.0]
    built = engine(sla_seconds=policy_limit, now=now)
    small_running = [Gang(f"run{i}", 1, cpu="2", on=f"n{i}") for i in range(2)]
    big = Gang("big", 2, cpu="4")  # needs two empty nodes
    state = state_of(Scenario(2, [*small_running, big, Gang("small", 1, cpu="2")]))
    if annotation is not None:
        state.upsert_pod_group(
            make_group("big").min_member(2).annotate("sla-waiting-time", annotation).model()
        )
    assert ask(built, state, "big") is not None
    now[0] = 30.0  # not starving yet: backfill lets the small one in
    assert ask(built, state, "small") is None
    built.consume("uid-default-small-0")  # bound, as the bind action does
    state.upsert_pod(make_pod("small-0").cpu("2").group("small").on("n0").phase("Running").model())
    free(state, small_running[0])
    state.upsert_pod(make_pod("later-0").cpu("2").group("later").model())
    state.upsert_pod_group(make_group("later").model())
    now[0] = 61.0  # big starves: the 2 cpu free on n0 are held for it
    assert ask(built, state, "big") is not None
    reason = ask(built, state, "later")
    assert reason is not None and "default/big" in reason
    free(state, small_running[1])
    state.upsert_pod(
        make_pod("small-0").cpu("2").group("small").on("n0").phase("Succeeded").model()
    )
    assert ask(built, state, "big") is None  # the drained nodes are whole: it goes


@pytest.mark.parametrize("annotation", [None, "10m", "soon", "-1m"])
def test_a_gang_within_its_own_limit_does_not_starve(annotation: str | None) -> None:
    now = [0.0]
    built = engine(sla_seconds=60, now=now)
    state = state_of(Scenario(2, [Gang("run0", 1, cpu="2", on="n0"), Gang("big", 2, cpu="4")]))
    group = make_group("big").min_member(2)
    if annotation is not None:  # a longer limit; not a duration or not positive: the policy's
        group = group.annotate("sla-waiting-time", annotation)
    state.upsert_pod_group(group.model())
    assert ask(built, state, "big") is not None
    now[0] = 61.0
    state.upsert_pod(make_pod("small-0").cpu("2").group("small").model())
    state.upsert_pod_group(make_group("small").model())
    drained = ask(built, state, "small") is not None  # big holds n1's free capacity
    assert drained is (annotation != "10m")


def test_members_beyond_the_plan_stay_within_the_queue_capability() -> None:
    gang = Gang("g", 4, cpu="1", queue="q")
    state = state_of(Scenario(1, [gang], [make_queue("q").capability(cpu="2")]))
    state.upsert_pod_group(make_group("g").min_member(1).queue("q").model())
    built = engine()
    assert ask(built, state, "g") is None  # minMember 1: admitted with one slot
    for index in (0, 1):  # two members bound: the queue holds its whole capability
        state.upsert_pod(gang.pods()[index].on("n0").phase("Running").model())
    reason = built.filter(state, state.pods["uid-default-g-2"], []).gang_reason
    assert reason is not None and "capability (2)" in reason


def test_a_gang_let_in_that_never_comes_stops_blocking_the_others() -> None:
    now = [0.0]
    built = engine(now=now)
    blocker = Gang("run", 2, on="n0")
    state = state_of(Scenario(1, [blocker, Gang("x", 2, priority=9), Gang("y", 2)]))
    assert ask(built, state, "x") is not None and ask(built, state, "y") is not None
    free(state, blocker)
    assert built.admissible(state) == ["default/x"]
    now[0] = 61.0  # x was let in and never came for its capacity
    assert built.expire() == ["default/x"]
    assert built.admissible(state) == ["default/y"]


@pytest.mark.parametrize("names", [("first", "second", "big"), ("c", "b", "a")])
def test_gangs_first_seen_together_go_in_the_order_they_arrived(names: tuple[str, ...]) -> None:
    """Created within one second and first seen by the same walk, they tie on age: the one the
    cache saw first goes first, whatever the names. On 6 cpu, 2 + 1.5 fit; had the third (4 cpu)
    gone second, it would have taken the room of the second."""
    state = cluster([make_node("n0").cpu("6")])
    for name, size, cpu in zip(names, (2, 1, 2), ("1", "1500m", "2"), strict=True):
        state.upsert_pod_group(make_group(name).min_member(size).model())
        for index in range(size):
            pod = make_pod(f"{name}-{index}").cpu(cpu).group(name).scheduler("lahar")
            state.upsert_pod(pod.gated(GANG_GATE).model())
    gangs = Gangs(schedulers={"lahar"})
    assert gangs.let_in(state, state.view().nodes) == [f"default/{n}" for n in names[:2]]


def test_a_starving_gang_refused_by_a_queue_rule_drains_nothing() -> None:
    now = [0.0]
    built = engine(sla_seconds=60, now=now)
    capped = Gang("s", 2, cpu="2", queue="a")
    state = state_of(
        Scenario(1, [capped, Gang("t", 1, cpu="2")], [make_queue("a").capability(cpu="2")])
    )
    assert ask(built, state, "s") is not None
    now[0] = 61.0
    assert ask(built, state, "t") is None  # s cannot go anyway: it holds nothing


def test_a_priority_class_that_changes_reorders_the_gangs_waiting() -> None:
    """Ranks are kept from walk to walk while a gang is unchanged; a PriorityClass's new value
    ranks its gangs again."""
    blocker, gangs = Gang("run", 2, on="n0"), [Gang("a", 2), Gang("b", 2)]
    state = state_of(Scenario(2, [blocker, Gang("filler", 2, on="n1"), *gangs]))
    built = engine()
    for name, value in (("low", 1), ("high", 100)):
        state.upsert_priority_class(PriorityClass(metadata=ObjectMeta(name=name), value=value))
    for gang, klass in zip(gangs, ("low", "high"), strict=True):
        group = make_group(gang.name).min_member(2).set("spec.priorityClassName", klass)
        state.upsert_pod_group(group.model())
        assert ask(built, state, gang.name) is not None
    free(state, blocker)
    assert built.admissible(state) == ["default/b"]
    state.upsert_priority_class(PriorityClass(metadata=ObjectMeta(name="low"), value=1000))
    assert built.admissible(state) == ["default/a"]


@pytest.mark.parametrize(
    ("nodes", "gangs", "cause", "words"),
    [
        # The gangs ahead took its room: it names them, not z, which took capacity later.
        (
            1,
            [Gang("a", 1), Gang("m", 1, cpu="4"), Gang("z", 1)],
            "Queued",
            "fair order (queue share, priority, age): default/a",
        ),
        # It would not fit even were nobody ahead: what it lacks at its turn (a held one node,
        # so two of its members fit; z took half of another since).
        (
            3,
            [Gang("a", 1, cpu="4"), Gang("m", 4, cpu="3"), Gang("z", 1)],
            "NotEnoughResources",
            "gang default/m: 2 of 4 members cannot be placed: Insufficient cpu",
        ),
    ],
)
def test_why_a_gang_waits_is_what_held_at_its_turn_even_when_read_after_the_walk(
    nodes: int, gangs: list[Gang], cause: str, words: str
) -> None:
    """A refusal for want of room is worded only when read, as it stood at the gang's turn (the
    gangs are in line in the order given, on nodes of 4 cpu)."""
    state = state_of(Scenario(nodes, gangs))
    built = engine(schedulers={state.pods["uid-default-a-0"].spec.scheduler_name})
    order = built.order(state)  # every turn taken, none read yet
    assert order.turns["default/a"].slots and order.turns["default/z"].slots  # z backfills
    why = order.turns["default/m"].rejection
    assert why is not None and why.cause == cause
    assert why.message.endswith(words)


def test_once_nothing_in_line_fits_a_starving_gang_takes_nothing_and_keeps_its_targets() -> None:
    """Past the point where no node has the cpu for the largest member of any gang in line,
    every turn is a refusal that changes nothing: a starving gang there holds nothing, aims
    where it aimed before (or, the first time, where a drain would), and the refusals of the
    others are worked out only when read."""
    now = [0.0]
    built = engine(sla_seconds=60, now=now)
    running = [Gang("run0", 1, cpu="4", on="n0"), Gang("run1", 1, cpu="4", on="n1")]
    state = state_of(Scenario(2, [*running, Gang("big", 2, cpu="4"), Gang("small", 1)]))
    patient = make_group("small").annotate("sla-waiting-time", "1h")  # small never starves
    state.upsert_pod_group(patient.model())
    assert ask(built, state, "big") is not None and ask(built, state, "small") is not None
    now[0] = 61.0  # big starves in a full cluster
    assert ask(built, state, "big") is not None

    def turns() -> Mapping[str, Turn]:
        return built.order(state).turns

    aimed = turns()["default/big"].targets
    assert sorted(aimed) == ["n0", "n1"]
    assert isinstance(turns()["default/small"].rejection, Deferred)  # nobody read it yet
    walked = built.order(state).number
    state.upsert_pod(make_pod("late-0").group("late").model())  # a gang more: walked again
    state.upsert_pod_group(make_group("late").model())
    assert built.order(state).number != walked
    assert turns()["default/big"].targets == aimed
    free(state, running[1])  # n1 empties: big drains it, small waits behind big
    reason = ask(built, state, "small")
    assert reason is not None
    assert reason.endswith(
        "ahead of it in the fair order (queue share, priority, age): default/big"
    )
    assert turns()["default/big"].targets == aimed


def test_a_refusal_past_the_point_nothing_fits_is_worked_out_when_read() -> None:
    calls: list[int] = []

    def work() -> Rejection:
        calls.append(1)
        return Rejection(Cause.QUEUED, "gang g: behind others")

    later = Deferred(work)
    assert calls == []
    assert (later.cause, later.message) == ("Queued", "gang g: behind others")
    assert later.settled() == Rejection(Cause.QUEUED, "gang g: behind others")
    assert calls == [1]
    queued = Deferred(work, Cause.QUEUED)  # the cause known at once: reading it works nothing out
    assert queued.cause == "Queued" and calls == [1]
    assert queued.message == "gang g: behind others" and calls == [1, 1]


def test_a_starving_gang_a_queue_rule_refuses_aims_nowhere_in_a_full_cluster() -> None:
    now = [0.0]
    built = engine(sla_seconds=60, now=now)
    capped = Gang("s", 2, cpu="2", queue="a")
    state = state_of(
        Scenario(
            1,
            [Gang("run", 1, cpu="4", on="n0"), capped],
            [make_queue("a").capability(cpu="2")],
        )
    )
    assert ask(built, state, "s") is not None
    now[0] = 61.0
    assert ask(built, state, "s") is not None
    turn = built.order(state).turns["default/s"]
    assert turn.rejection is not None and turn.rejection.cause == "QueueCapability"
    assert turn.targets == {}


def test_a_gang_refused_in_a_walk_that_found_it_unasked_starves_once_it_waits_long() -> None:
    """The walk that first lines a gang up may find it not asked about yet (it never drains
    then); once the scheduler asks and it is refused, it waits like any other and starves."""
    now = [0.0]
    built = engine(sla_seconds=60, now=now)
    running = [Gang("run0", 1, cpu="2", on="n0"), Gang("run1", 1, cpu="2", on="n1")]
    scenario = Scenario(2, [*running, Gang("x", 1, cpu="2"), Gang("big", 2, cpu="4")])
    state = state_of(scenario)
    assert ask(built, state, "x") is None  # a walk with big in line, not asked about yet
    assert ask(built, state, "big") is not None  # refused from that very walk
    now[0] = 61.0  # big starves: the 2 cpu left on n1 are held for it
    state.upsert_pod(make_pod("later-0").cpu("2").group("later").model())
    state.upsert_pod_group(make_group("later").model())
    reason = ask(built, state, "later")
    assert reason is not None and "default/big" in reason
