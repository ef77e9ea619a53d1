"""Who is never a victim, and the victim rules the policy switches: `volcano.sh/preemptable` on pods
and PodGroups (annotation first, then label; unreadable reads as false), Volcano's conformance
(kube-system, the two critical classes), gang's rule (spare members only) and drf's (the victim
keeps a share at least the preemptor's); and what explain says when only protected victims
would make room."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.engine_settings import PreemptionSettings, Rules
from extender.api.objects import ObjectMeta
from extender.api.preemptable import (
    PREEMPTABLE,
    group_protection,
    parse_bool,
    pod_protection,
    preemptable,
)
from extender.api.scheduling import GroupKind
from extender.cache.state import ClusterState
from extender.framework.explain import explain
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.queues import account
from extender.preemption.loop import PreemptionLoop
from extender.preemption.plan import Pool, Preemption, protected_victims, victims_for
from extender.preemption.victims import Unit, choose, sift
from tests.builders import (
    PodBuilder,
    PodGroupBuilder,
    cluster,
    make_group,
    make_node,
    make_pod,
    make_queue,
    waiting,
)
from tests.engines import make_engine

BOTH = Rules()
PodEdit = Callable[[PodBuilder], PodBuilder]
GroupEdit = Callable[[PodGroupBuilder], PodGroupBuilder]


def same(builder: PodBuilder) -> PodBuilder:
    return builder


def same_group(builder: PodGroupBuilder) -> PodGroupBuilder:
    return builder


def gang(
    state: ClusterState,
    name: str,
    nodes: list[str],
    *,
    ns: str = "default",
    cpu: str = "2",
    priority: int = 0,
    queue: str = "",
    min_member: int | None = None,
    kind: GroupKind = GroupKind.VOLCANO,
    pod: PodEdit = same,
    only: int | None = None,  # `pod` edits only this member (None: every member)
    group: GroupEdit = same_group,
) -> None:
    """A running gang `name` in `ns` on `nodes` (one member each), its pods and PodGroup edited."""
    for index, node in enumerate(nodes):
        built = make_pod(f"{name}-{index}").ns(ns).cpu(cpu).group(name, kind).priority(priority)
        if only is None or only == index:
            built = pod(built)
        state.upsert_pod(built.on(node).phase("Running").model())
    made = make_group(name).ns(ns).min_member(len(nodes) if min_member is None else min_member)
    state.upsert_pod_group(group(made.queue(queue) if queue else made).model(kind))


def two_nodes() -> ClusterState:
    return cluster([make_node("n0").cpu("4"), make_node("n1").cpu("4")])


def decide(state: ClusterState, preemptor: str, rules: Rules = BOTH) -> list[str] | None:
    """The victims (gang keys, `:member` for a spare member) Lahar picks for waiting gang
    `default/<preemptor>`, as a preemption pass picks them; None when nobody may be evicted."""
    gangs = Gangs()
    key = f"default/{preemptor}"
    gangs.verdict(state, state.view().nodes, state.pods[f"uid-{key.replace('/', '-')}-0"])
    order = gangs.order(state, state.view().nodes)
    found = victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=rules)
    if found is None:
        return None
    return sorted(
        u.key + ("" if u.whole else ":" + u.pods[0][0].metadata.name) for u in found.victims
    )


# -- reading volcano.sh/preemptable ------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        ({}, {}, True),  # absent: preemptable
        ({PREEMPTABLE: "false"}, {}, False),
        ({PREEMPTABLE: "true"}, {}, True),
        ({}, {PREEMPTABLE: "false"}, False),  # the label, when no annotation
        ({}, {PREEMPTABLE: "1"}, True),
        ({PREEMPTABLE: "true"}, {PREEMPTABLE: "false"}, True),  # the annotation first
        ({PREEMPTABLE: "F"}, {PREEMPTABLE: "true"}, False),
        ({PREEMPTABLE: "yes"}, {}, False),  # unreadable: false, as Volcano reads it
        ({}, {PREEMPTABLE: ""}, False),
        ({PREEMPTABLE: "TRUE"}, {}, True),
        ({PREEMPTABLE: "tRuE"}, {}, False),  # (Go's ParseBool takes three spellings only)
    ],
)
def test_preemptable_reads_the_annotation_then_the_label(
    annotations: dict[str, str], labels: dict[str, str], expected: bool
) -> None:
    meta = ObjectMeta(name="x", annotations=annotations, labels=labels)
    assert preemptable(meta) is expected
    assert (group_protection(meta) == "") is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        *[("1", True), ("t", True), ("True", True), ("0", False), ("f", False), ("FALSE", False)],
        *[("no", None), ("", None), (" true", None)],
    ],
)
def test_booleans_read_as_go_reads_them(text: str, expected: bool | None) -> None:
    assert parse_bool(text) is expected


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (same, ""),
        (lambda p: p.annotate(PREEMPTABLE, "false"), "volcano.sh/preemptable=false on pod x"),
        (lambda p: p.label(PREEMPTABLE, "false"), "volcano.sh/preemptable=false on pod x"),
        (
            lambda p: p.annotate(PREEMPTABLE, "maybe"),
            "volcano.sh/preemptable='maybe', not a boolean (read as false) on pod x",
        ),
        (lambda p: p.annotate(PREEMPTABLE, "true"), ""),
        (lambda p: p.ns("kube-system"), "conformance: kube-system"),
        (
            lambda p: p.priority_class("system-cluster-critical"),
            "conformance: system-cluster-critical",
        ),
        (lambda p: p.priority_class("system-node-critical"), "conformance: system-node-critical"),
        (lambda p: p.priority_class("high"), ""),
        (lambda p: p.ns("kube-public"), ""),
    ],
)
def test_a_pod_is_protected_by_its_own_preemptable_or_by_conformance(
    edit: PodEdit, why: str
) -> None:
    assert pod_protection(edit(make_pod("x")).model()) == why


# -- protected pods and PodGroups are never victims --------------------------------------------


PROTECTING: list[tuple[str, dict[str, object]]] = [
    ("pod annotation", {"pod": lambda p: p.annotate(PREEMPTABLE, "false")}),
    ("pod label", {"pod": lambda p: p.label(PREEMPTABLE, "false")}),
    ("pod unreadable", {"pod": lambda p: p.annotate(PREEMPTABLE, "nope")}),
    ("one pod only", {"pod": lambda p: p.annotate(PREEMPTABLE, "false"), "only": 1}),
    ("PodGroup annotation", {"group": lambda g: g.annotate(PREEMPTABLE, "false")}),
    ("PodGroup label", {"group": lambda g: g.set("metadata.labels", {PREEMPTABLE: "0"})}),
    (
        "Coscheduling PodGroup",
        {"group": lambda g: g.annotate(PREEMPTABLE, "false"), "kind": GroupKind.COSCHEDULING},
    ),
    (
        "native PodGroup",
        {"group": lambda g: g.annotate(PREEMPTABLE, "false"), "kind": GroupKind.NATIVE},
    ),
    ("conformance: kube-system", {"ns": "kube-system"}),
    (
        "conformance: cluster critical",
        {"pod": lambda p: p.priority_class("system-cluster-critical"), "only": 0},
    ),
    ("conformance: node critical", {"pod": lambda p: p.priority_class("system-node-critical")}),
]


@pytest.mark.parametrize(("case", "protect"), PROTECTING, ids=[c for c, _ in PROTECTING])
def test_a_protected_gang_is_never_preempted(case: str, protect: dict[str, object]) -> None:
    state = two_nodes()
    gang(state, "low", ["n0", "n0"], priority=1, **protect)  # type: ignore[arg-type]
    gang(state, "other", ["n1", "n1"], priority=1)
    waiting(state, "urgent", 2, priority=9)
    assert decide(state, "urgent") == ["default/other"]  # (low is cheaper by name only)
    state = two_nodes()
    gang(state, "low", ["n0", "n0", "n1", "n1"], priority=1, **protect)  # type: ignore[arg-type]
    waiting(state, "urgent", 2, priority=9)
    assert decide(state, "urgent") is None


@pytest.mark.parametrize(("case", "protect"), PROTECTING, ids=[c for c, _ in PROTECTING])
def test_a_protected_gang_is_never_reclaimed(case: str, protect: dict[str, object]) -> None:
    state = two_nodes()
    for queue in ("a", "b"):
        state.upsert_queue(make_queue(queue).model())
    gang(state, "b1", ["n0", "n0"], queue="b", **protect)  # type: ignore[arg-type]
    gang(state, "b2", ["n1", "n1"], queue="b")
    waiting(state, "a1", 2, queue="a")
    victims = decide(state, "a1")
    assert victims is not None
    assert not any(victim.endswith("b1") for victim in victims)


def test_a_protected_member_is_not_the_spare_one_taken() -> None:
    """A gang above its minMember gives up an unprotected member, not its protected one."""
    state = two_nodes()
    gang(
        state,
        "elastic",
        ["n0", "n0", "n1", "n1"],
        min_member=3,
        pod=lambda p: p.annotate(PREEMPTABLE, "false"),
        only=3,  # the member taken first without protection (last by name)
    )
    waiting(state, "urgent", 1, priority=9)
    victims = decide(state, "urgent")
    assert victims is not None and len(victims) == 1
    assert victims[0].startswith("default/elastic:") and not victims[0].endswith("-3")


# -- gang's and drf's rules on victims -----------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (Rules(), ["default/single"]),  # gang's rule off: the fewest pods, a whole gang
        (
            Rules(spare_members_only=True),
            ["default/elastic:elastic-2", "default/elastic:elastic-3"],
        ),
    ],
)
def test_gangs_rule_takes_spare_members_only(rules: Rules, expected: list[str]) -> None:
    state = two_nodes()
    gang(state, "single", ["n0"], cpu="4", priority=1)  # one pod, its whole core
    gang(state, "elastic", ["n1"] * 4, cpu="1", priority=1, min_member=1)  # three spare
    waiting(state, "urgent", 1, cpu="2", priority=9)
    assert decide(state, "urgent", rules) == expected


def test_gangs_rule_never_takes_a_whole_gang() -> None:
    state = two_nodes()
    gang(state, "low", ["n0", "n0", "n1", "n1"], priority=1)
    waiting(state, "urgent", 2, priority=9)
    assert decide(state, "urgent", Rules(spare_members_only=True)) is None
    assert decide(state, "urgent") == ["default/low"]


def test_gangs_rule_is_for_preempt_not_for_reclaim() -> None:
    """Volcano's enablePreemptable switches the rules its preempt action asks; reclaim asks
    others. A whole gang of an overused queue is still reclaimed."""
    state = two_nodes()
    for queue in ("a", "b"):
        state.upsert_queue(make_queue(queue).model())
    gang(state, "b1", ["n0", "n0"], queue="b")
    gang(state, "b2", ["n1", "n1"], queue="b")
    waiting(state, "a1", 2, queue="a")
    victims = decide(state, "a1", Rules(spare_members_only=True, keeps_share=True))
    assert victims is not None and len(victims) == 1


def drf_scene() -> ClusterState:
    """Eight cpu in all. `big` (priority 1) holds 4 cpu, 3 of them spare; the preemptor asks 1
    more cpu and holds 1 already: once placed, 2/8 of the cluster."""
    state = cluster([make_node("n0").cpu("4"), make_node("n1").cpu("4")])
    gang(state, "big", ["n0", "n0", "n0", "n0"], cpu="1", priority=1, min_member=1)
    state.upsert_pod(make_pod("urgent-0").cpu("1").group("urgent").priority(9).on("n1").model())
    state.upsert_pod(make_pod("filler-0").cpu("3").priority(9).on("n1").phase("Running").model())
    state.upsert_pod(make_pod("urgent-1").cpu("1").group("urgent").priority(9).model())
    state.upsert_pod_group(make_group("urgent").min_member(2).model())
    return state


def drf_candidates(state: ClusterState, rules: Rules, share_of: float) -> list[Unit]:
    queues = account(state, {})
    units = [u for u in Pool.of(state, Gangs()).units if u.key == "default/big"]
    return sift(units, "default", 9, queues, rules, share_of=share_of, total=state.capacity())[0]


@pytest.mark.parametrize(
    ("share_of", "spares"),
    [
        (2 / 8, 3),  # big keeps 3/8 >= 2/8 after losing any one member
        (3 / 8, 3),  # equal: still allowed (a share this close counts as equal)
        (3 / 8 + 1e-7, 3),  # within the tolerance
        (3 / 8 + 1e-3, 0),  # big would be left below the preemptor
    ],
)
def test_drfs_rule_keeps_a_victims_share_at_least_the_preemptors(
    share_of: float, spares: int
) -> None:
    state = drf_scene()
    on = drf_candidates(state, Rules(keeps_share=True), share_of)
    assert all(not unit.whole for unit in on)  # a whole gang leaves it nothing
    assert len(on) == spares
    off = drf_candidates(state, Rules(), share_of)
    assert len(off) == 4  # the whole gang and its three spare members


def test_drfs_rule_in_a_pass_uses_the_preemptors_share_once_placed() -> None:
    state = drf_scene()
    # urgent once placed: 2 of 8 cpu; big keeps 3 of 8 losing a spare member: allowed.
    assert decide(state, "urgent", Rules(keeps_share=True)) == ["default/big:big-3"]
    state.upsert_pod(make_pod("urgent-2").cpu("2").group("urgent").priority(9).model())
    state.upsert_pod_group(make_group("urgent").min_member(3).model())
    # urgent once placed: 4 of 8 cpu; big would keep at most 3: nothing may be taken.
    assert decide(state, "urgent", Rules(keeps_share=True)) is None
    assert decide(state, "urgent") is not None


# -- a chosen set never holds a protected pod -----------------------------------------------------


@st.composite
def protected_scenes(draw: st.DrawFn) -> ClusterState:
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(3)])
    free = {f"n{i}": 4 for i in range(3)}
    edits: list[tuple[str, PodEdit]] = [
        ("", same),
        ("", lambda p: p.annotate(PREEMPTABLE, "false")),
        ("", lambda p: p.label(PREEMPTABLE, "nope")),
        ("", lambda p: p.priority_class("system-node-critical")),
        ("kube-system", same),
    ]
    for g in range(draw(st.integers(1, 6))):
        size = draw(st.integers(1, 3))
        spots = [n for n, left in free.items() for _ in range(left)]
        if len(spots) < size:
            break
        nodes = draw(st.lists(st.sampled_from(spots), min_size=size, max_size=size))
        if any(nodes.count(n) > free[n] for n in nodes):
            continue
        for n in nodes:
            free[n] -= 1
        ns, edit = draw(st.sampled_from(edits))
        group_false = draw(st.booleans()) and draw(st.booleans())
        gang(
            state,
            f"r{g}",
            nodes,
            ns=ns or "default",
            cpu="1",
            priority=draw(st.integers(0, 3)),
            min_member=draw(st.integers(1, size)),
            pod=edit,
            only=draw(st.none() | st.integers(0, size - 1)),
            group=(lambda b: b.annotate(PREEMPTABLE, "false")) if group_false else same_group,
        )
    waiting(state, "p", draw(st.integers(1, 3)), cpu=draw(st.sampled_from(["1", "2"])), priority=5)
    return state


def _protected_pod(state: ClusterState, unit: Unit) -> bool:
    group = state.pod_groups.get(unit.key)
    if group is not None and group_protection(group.metadata):
        return True
    return any(pod_protection(pod) for pod, _ in unit.pods)


@settings(max_examples=80, deadline=None)
@given(protected_scenes(), st.booleans())
def test_a_chosen_set_never_holds_a_protected_pod(state: ClusterState, spares: bool) -> None:
    rules = Rules(spare_members_only=spares)
    queues = account(state, {})
    preemptor = view_gang(state, "default/p")
    units = Pool.of(state, Gangs()).units
    allowed = sift(units, preemptor.queue, 5, queues, rules)[0]
    assert not any(_protected_pod(state, unit) for unit in allowed)
    chosen = choose(
        preemptor.pending, allowed, state.view().nodes, {}, queues=queues, preemptor_queue="default"
    )
    assert not any(_protected_pod(state, unit) for unit in chosen or ())
    if spares:
        assert all(not unit.whole for unit in chosen or ())


# -- saying why nobody is evicted ---------------------------------------------------------------


def protected_scene() -> tuple[ClusterState, Gangs]:
    """Only two gangs could make room for urgent; a PodGroup annotation and conformance keep
    them."""
    state = two_nodes()
    gang(state, "a", ["n0", "n0"], priority=1, group=lambda g: g.annotate(PREEMPTABLE, "false"))
    gang(state, "b", ["n1", "n1"], ns="kube-system", priority=1)
    waiting(state, "urgent", 2, cpu="4", priority=9)
    gangs = Gangs()
    gangs.verdict(state, state.view().nodes, state.pods["uid-default-urgent-0"])
    return state, gangs


def explained(state: ClusterState, key: str) -> str:
    """What explain says of gang `key` through an engine of the gang rules alone that was asked
    about the gang's first member (the note of the last victim search is kept with the cluster
    state, whichever ledger searched)."""
    engine = make_engine()
    engine.filter(state, state.pods[f"uid-{key.replace('/', '-')}-0"], [])
    return explain(state, engine, key).text()


def test_a_pass_that_finds_only_protected_victims_says_which_and_why() -> None:
    state, gangs = protected_scene()
    order = gangs.order(state, state.view().nodes)
    pool = Pool.of(state, gangs)
    key = "default/urgent"
    assert victims_for(state, gangs, order, pool, key=key, rules=BOTH) is None
    protected = protected_victims(state, key)
    assert protected is not None
    assert protected.message == (
        "preemption: the only victims that would make room are not preemptable: "
        "default/a (volcano.sh/preemptable=false on its PodGroup), "
        "kube-system/b (conformance: kube-system)"
    )
    assert protected.message in explained(state, key).splitlines()


def test_the_protected_victims_named_follow_the_cluster() -> None:
    state, gangs = protected_scene()
    key = "default/urgent"
    order = gangs.order(state, state.view().nodes)
    victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=BOTH)
    group = state.pod_groups["default/a"]  # a is preemptable again: b alone is in the way
    meta = group.metadata.model_copy(update={"annotations": {}})
    state.upsert_pod_group(group.model_copy(update={"metadata": meta}))
    order = gangs.order(state, state.view().nodes)
    assert victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=BOTH) is None
    protected = protected_victims(state, key)
    assert protected is not None and protected.victims == (
        ("kube-system/b", "conformance: kube-system"),
    )


def test_explain_says_nothing_of_protection_without_a_search_or_once_victims_are_found() -> None:
    state = two_nodes()
    gang(state, "a", ["n0", "n0"], priority=1, pod=lambda p: p.annotate(PREEMPTABLE, "false"))
    gang(state, "b", ["n1", "n1"], priority=1, pod=lambda p: p.label(PREEMPTABLE, "false"))
    waiting(state, "urgent", 1, cpu="4", priority=9)
    gangs = Gangs()
    key = "default/urgent"
    gangs.verdict(state, state.view().nodes, state.pods["uid-default-urgent-0"])
    assert "preemption:" not in explained(state, key)  # never searched
    order = gangs.order(state, state.view().nodes)
    assert victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=BOTH) is None
    assert (
        "preemption: the only victims that would make room are not preemptable: default/a "
        "(volcano.sh/preemptable=false on pod a-0)"
    ) in explained(state, key)
    state.upsert_pod(make_pod("b-1").cpu("2").group("b").priority(1).on("n1").model())
    order = gangs.order(state, state.view().nodes)
    found = victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=BOTH)
    assert found is None  # b-0 is still protected, so is its whole gang
    state.upsert_pod(make_pod("b-0").cpu("2").group("b").priority(1).on("n1").model())
    order = gangs.order(state, state.view().nodes)
    found = victims_for(state, gangs, order, Pool.of(state, gangs), key=key, rules=BOTH)
    assert found is not None and [u.key for u in found.victims] == ["default/b"]
    assert protected_victims(state, key) is None
    assert "preemption:" not in explained(state, key)


def test_protected_victims_that_would_not_make_room_are_not_named() -> None:
    state = two_nodes()
    gang(state, "a", ["n0"], cpu="1", priority=1, pod=lambda p: p.annotate(PREEMPTABLE, "false"))
    gang(state, "high", ["n0", "n1", "n1"], priority=9)
    waiting(state, "urgent", 2, cpu="4", priority=5)
    gangs = Gangs()
    gangs.verdict(state, state.view().nodes, state.pods["uid-default-urgent-0"])
    order = gangs.order(state, state.view().nodes)
    pool = Pool.of(state, gangs)
    assert victims_for(state, gangs, order, pool, key="default/urgent", rules=BOTH) is None
    assert protected_victims(state, "default/urgent") is None


def test_the_preemption_loop_evicts_nobody_protected_and_explain_says_why() -> None:
    state, gangs = protected_scene()
    evicted: list[Preemption] = []

    async def carry_out(preemption: Preemption) -> bool:
        evicted.append(preemption)
        return True

    async def sleep(seconds: float) -> None:
        return None

    loop = PreemptionLoop(
        state,
        gangs,
        PreemptionSettings(5.0, Rules()),
        carry_out=carry_out,
        sleep=sleep,
        clock=lambda: 0.0,
    )
    assert asyncio.run(loop.one_pass()) is False
    assert evicted == []
    assert "not preemptable: default/a" in explained(state, "default/urgent")
