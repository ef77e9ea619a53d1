"""Network-topology-aware gangs: HyperNodes resolved to nodes, and gangs placed inside them
(hard: inside one HyperNode of the allowed tier or not at all; soft: preferably; partitions each
inside their own), through the engine's door."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.engine_settings import Rules
from extender.api.scheduling import PodGroup
from extender.cache.state import ClusterState
from extender.framework.engine import OUTSIDE, Engine
from extender.framework.policy import build_policy
from extender.gangs.drain import drain
from extender.gangs.ledger import Gangs
from extender.gangs.members import view_gang
from extender.gangs.placement import Room
from extender.gangs.topology import Topology
from extender.plugins import REGISTRY
from extender.preemption.plan import Pool, victims_for, wanting
from tests.builders import (
    PodBuilder,
    PodGroupBuilder,
    cluster,
    make_group,
    make_hyper_node,
    make_node,
    make_pod,
    running,
)

POLICY = {
    "apiVersion": "lahar.io/v1alpha1",
    "kind": "SchedulerPolicy",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "binpack"}]}],
}


def fabric(switches: int = 2, per_switch: int = 2, cpu: str = "4") -> ClusterState:
    """Nodes n0.. in switches s0.. (tier 1) of `per_switch`, all under spine p0 (tier 2)."""
    names = [f"n{i}" for i in range(switches * per_switch)]
    state = cluster([make_node(name).cpu(cpu) for name in names])
    for s in range(switches):
        members = names[s * per_switch : (s + 1) * per_switch]
        state.upsert_hyper_node(make_hyper_node(f"s{s}").tier(1, "switch").nodes(*members).model())
    spine = make_hyper_node("p0").tier(2, "spine").hyper_nodes(*(f"s{s}" for s in range(switches)))
    state.upsert_hyper_node(spine.model())
    return state


def busy(state: ClusterState, node: str, cpu: str, name: str = "") -> None:
    pod = make_pod(name or f"busy-{node}").cpu(cpu).on(node).phase("Running")
    state.upsert_pod(pod.model())


def gang(
    state: ClusterState, name: str, size: int, group: PodGroupBuilder, cpu: str = "2"
) -> list[PodBuilder]:
    pods = [make_pod(f"{name}-{i}").uid(f"{name}-{i}").cpu(cpu).group(name) for i in range(size)]
    for pod in pods:
        state.upsert_pod(pod.model())
    state.upsert_pod_group(group.min_member(size).model())
    return pods


def admit(engine: Engine, state: ClusterState, pod: PodBuilder) -> tuple[set[str], str | None]:
    """Filter one member over every node: the nodes of its gang's slots, or why it waits."""
    model = state.pods[pod.model().metadata.uid]
    outcome = engine.filter(state, model, sorted(state.view().nodes), fit=True)
    assert engine.gang_rules
    admission = engine.admission(
        f"default/{model.metadata.annotations['scheduling.k8s.io/group-name']}"
    )
    if admission is None:
        return set(), outcome.gang_reason
    return {slot.node for slot in admission.slots.values()}, None


@pytest.fixture
def engine() -> Engine:
    return Engine(build_policy(POLICY, REGISTRY))


# -- resolving HyperNodes ------------------------------------------------------------------


def test_hyper_nodes_resolve_to_the_nodes_under_them_by_name_pattern_and_label() -> None:
    state = cluster(
        [make_node(n).label("rack", "r9" if n == "x1" else "r0") for n in ("a0", "a1", "b0", "x1")]
    )
    for hyper_node in (
        make_hyper_node("by-name").nodes("a0", "ghost"),
        make_hyper_node("by-pattern").regex("^a"),
        make_hyper_node("by-label").labelled(rack="r9"),
        make_hyper_node("up").tier(2).hyper_nodes("by-name", "by-label", "missing"),
        make_hyper_node("loop-a").tier(3).hyper_nodes("loop-b"),
        make_hyper_node("loop-b").tier(3).hyper_nodes("loop-a"),
    ):
        state.upsert_hyper_node(hyper_node.model())
    domains = Topology.of(state).domains
    assert {name: set(d.nodes) for name, d in domains.items()} == {
        "by-name": {"a0"},
        "by-pattern": {"a0", "a1"},
        "by-label": {"x1"},
        "up": {"a0", "x1"},
        "loop-a": set(),
        "loop-b": set(),
    }
    topology = Topology.of(state)
    assert topology.leaf("a1").name == "by-pattern"
    assert topology.spanning(["a0", "x1"]).name == "up"
    assert topology.spanning(["a1", "b0"]) is None


def test_a_topology_change_is_seen_and_the_topology_is_kept_between_changes() -> None:
    state = fabric()
    first = Topology.of(state)
    assert Topology.of(state) is first
    state.upsert_hyper_node(make_hyper_node("s1").tier(1).nodes("n2").model())
    assert set(Topology.of(state).domains["s1"].nodes) == {"n2"}


# -- hard, soft, tiers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "group", "cpu", "expected", "why"),
    [
        pytest.param({}, make_group("g").network("hard", 1), "2", {"s0"}, None, id="empty"),
        # Binpack at the level of switches: the fuller switch that still holds the gang.
        pytest.param(
            {"n3": "1"}, make_group("g").network("hard", 1), "1", {"s1"}, None, id="tightest"
        ),
        pytest.param(
            {"n0": "2", "n2": "2"},
            make_group("g").network("hard", 1),
            "2",
            set(),
            "needs 8 cpu inside one tier-1 HyperNode; the largest free is 6 cpu in s1",
            id="fragmented-waits",
        ),
        pytest.param(
            {"n0": "2", "n2": "2"},
            make_group("g").network("hard", 2),
            "2",
            {"s0", "s1"},
            None,
            id="tier-2-spans",
        ),
        pytest.param(
            {"n0": "2", "n2": "2"},
            make_group("g").network("hard", None, "spine"),
            "2",
            {"s0", "s1"},
            None,
            id="tier-by-name",
        ),
        pytest.param(
            {"n0": "2", "n2": "2"},
            make_group("g").network("soft", 1),
            "2",
            {"s0", "s1"},
            None,
            id="soft-spans-when-it-must",
        ),
        pytest.param(
            {"n3": "1"}, make_group("g").network("soft", 1), "1", {"s1"}, None, id="soft-prefers"
        ),
        pytest.param(
            {},
            make_group("g").network("hard", None, "pod"),
            "2",
            set(),
            "no HyperNode has the tierName 'pod'",
            id="unknown-tier-name",
        ),
    ],
)
def test_a_gang_is_placed_inside_the_hyper_node_its_network_topology_allows(  # noqa: PLR0917 (the table's columns)
    engine: Engine,
    used: dict[str, str],
    group: PodGroupBuilder,
    cpu: str,
    expected: set[str],
    why: str | None,
) -> None:
    state = fabric()
    for node, amount in used.items():
        busy(state, node, amount)
    pods = gang(state, "g", 4, group, cpu=cpu)
    nodes, reason = admit(engine, state, pods[0])
    topology = Topology.of(state)
    assert {topology.leaf(node).name for node in nodes} == expected
    if why is None:
        assert reason is None
    else:
        assert reason is not None and why in reason


def test_a_gang_without_network_topology_is_placed_as_before(engine: Engine) -> None:
    state = fabric()
    busy(state, "n0", "2")
    busy(state, "n2", "2")
    pods = gang(state, "g", 4, make_group("g"))
    nodes, reason = admit(engine, state, pods[0])
    topology = Topology.of(state)
    assert reason is None and {topology.leaf(node).name for node in nodes} == {"s0", "s1"}


def test_a_member_is_offered_only_the_nodes_of_its_gangs_hyper_node(engine: Engine) -> None:
    state = fabric()
    busy(state, "n3", "1")
    gang(state, "g", 2, make_group("g").network("hard", 1), cpu="1")
    model = state.pods["g-0"]
    outcome = engine.filter(state, model, ["n0", "n1", "n2", "n3"], fit=True)
    # Binpack: the fuller switch s1 holds the gang; the nodes of s0 are not offered.
    assert set(outcome.passed) <= {"n2", "n3"} and outcome.passed
    assert outcome.failed["n0"] == OUTSIDE


# -- partitions ----------------------------------------------------------------------------


def test_each_partition_lands_inside_one_switch(engine: Engine) -> None:
    state = fabric(switches=3)
    busy(state, "n0", "2")  # s0 can take one partition of 2 x 2 cpu; s1 and s2 one each
    pods = [
        make_pod(f"p-{i}")
        .uid(f"p-{i}")
        .cpu("2")
        .group("p")
        .label("volcano.sh/task-spec", "worker")
        .label("volcano.sh/partition-id", str(i // 2))
        for i in range(6)
    ]
    for pod in pods:
        state.upsert_pod(pod.model())
    state.upsert_pod_group(make_group("p").min_member(6).partitions("worker", 2).model())
    model = state.pods["p-0"]
    engine.filter(state, model, sorted(state.view().nodes), fit=True)
    assert engine.gang_rules
    admission = engine.admission("default/p")
    assert admission is not None
    topology = Topology.of(state)
    leaves = [
        {topology.leaf(admission.slots[f"p-{j}"].node).name for j in (i, i + 1)}
        for i in range(0, 6, 2)
    ]
    # Each partition inside one switch; binpacked: one in s0 (room for one), two in s1, and s2
    # stays whole for a gang that needs a switch.
    assert all(len(leaf) == 1 for leaf in leaves), leaves
    assert set().union(*leaves) == {"s0", "s1"}


# -- the property: a hard tier-1 gang never spans two switches -----------------------------


@settings(max_examples=60, deadline=None)
@given(
    used=st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8),
    size=st.integers(min_value=1, max_value=6),
    cpu=st.sampled_from(["1", "2", "3"]),
)
def test_a_hard_gang_never_spans_two_tier_1_hyper_nodes(
    used: Sequence[int], size: int, cpu: str
) -> None:
    engine = Engine(build_policy(POLICY, REGISTRY))
    state = fabric(switches=4, per_switch=2)
    for index, amount in enumerate(used):
        if amount:
            busy(state, f"n{index}", str(amount))
    pods = gang(state, "g", size, make_group("g").network("hard", 1), cpu=cpu)
    nodes, reason = admit(engine, state, pods[0])
    topology = Topology.of(state)
    if nodes:
        assert len({topology.leaf(node).name for node in nodes}) == 1
    else:
        # It waits only when no switch has room for it whole.
        free = {f"s{s}": [4 - used[2 * s], 4 - used[2 * s + 1]] for s in range(4)}
        need = int(cpu)
        fits = [s for s, left in free.items() if sum(f // need for f in left) >= size]
        assert not fits, reason


# -- preemption: freeing a whole HyperNode --------------------------------------------------


@pytest.mark.parametrize(
    ("victims", "expected"),
    [
        # One 4-cpu pod in s0 against two 2-cpu pods in s1: freeing s0 costs one victim.
        pytest.param({"v1": ("n0", "4"), "v2": ("n2", "2"), "v3": ("n3", "2")}, {"v1"}, id="s0"),
        # Two pods either way, but less cpu evicted in s1.
        pytest.param(
            {"v1": ("n0", "4"), "v4": ("n1", "3"), "v2": ("n2", "2"), "v3": ("n3", "2")},
            {"v2", "v3"},
            id="s1",
        ),
    ],
)
def test_a_hard_gang_frees_the_hyper_node_that_costs_the_fewest_victims(
    victims: dict[str, tuple[str, str]], expected: set[str]
) -> None:
    state = fabric()
    for name, (node, cpu) in victims.items():
        running(state, name, [node], cpu=cpu, priority=0)
    state.upsert_pod_group(make_group("g").min_member(2).network("hard", 1).model())
    for index in range(2):
        state.upsert_pod(
            make_pod(f"g-{index}").uid(f"g-{index}").cpu("4").group("g").priority(10).model()
        )
    gangs = Gangs()
    gangs.verdict(state, state.view().nodes, state.pods["g-0"])
    order = gangs.order(state, state.view().nodes)
    assert wanting(order, gangs) == ["default/g"]
    found = victims_for(state, gangs, order, Pool.of(state, gangs), key="default/g", rules=Rules())
    assert found is not None
    assert {unit.key.split("/")[1] for unit in found.victims} == expected


def test_a_starving_hard_gang_drains_toward_one_hyper_node() -> None:
    state = fabric()
    for node in ("n0", "n1", "n2", "n3"):
        busy(state, node, "3")  # 1 cpu free everywhere: s1 has one more node's worth after
    busy(state, "n2", "1", "more")  # n2 full: s0 has the most free
    gang(state, "g", 2, make_group("g").network("hard", 1), cpu="4")
    target, taken = drain(view_gang(state, "default/g"), Room(state.view().nodes), None)
    assert set(target) == {"n0", "n1"}
    assert taken == {name: target[name].within(state.view().nodes[name].free) for name in taken}
    # Aimed there before, it keeps aiming there even once the other switch has more free.
    busy(state, "n0", "1", "later")
    target, _ = drain(view_gang(state, "default/g"), Room(state.view().nodes), target)
    assert set(target) == {"n0", "n1"}


def test_a_hard_gang_refused_for_want_of_hyper_nodes_is_admitted_once_they_come(
    engine: Engine,
) -> None:
    state = cluster([make_node(f"n{i}").cpu("4") for i in range(2)])
    pods = gang(state, "g", 2, make_group("g").network("hard", 1))
    assert admit(engine, state, pods[0]) == (
        set(),
        "gang default/g: the cluster has no HyperNode (topology.volcano.sh/v1alpha1)",
    )
    state.upsert_hyper_node(make_hyper_node("s0").nodes("n0", "n1").model())
    nodes, reason = admit(engine, state, pods[0])
    assert reason is None and nodes == {"n0"}


# -- members without a slot stay where their gang is ---------------------------------------

WORKER = "volcano.sh/task-spec"
PARTITION = "volcano.sh/partition-id"


def worker(name: str, partition: str | None = None) -> PodBuilder:
    pod = make_pod(name).uid(name).cpu("2").group("g")
    if partition is None:
        return pod
    return pod.label(WORKER, "worker").label(PARTITION, partition)


@pytest.mark.parametrize(
    ("group", "pods", "min_member"),
    [
        pytest.param(
            make_group("g").network("hard", 1).partitions("worker", 2, mode="soft"),
            [worker("g-0", "0"), worker("g-1", "0"), worker("g-2", "1")],
            2,
            id="soft-partitions-of-a-hard-gang",
        ),
        pytest.param(
            make_group("g").network("hard", 1).partitions("worker", 2),
            [worker("g-0", "0"), worker("g-1", "0"), worker("g-2")],
            2,
            id="a-member-in-no-partition",
        ),
        pytest.param(
            make_group("g").network("hard", 1).partitions("worker", 1),
            [worker("g-0", "0"), worker("g-1", "1")],
            1,
            id="a-partition-with-nothing-planned",
        ),
    ],
)
def test_a_member_beyond_the_plan_of_a_hard_gang_stays_in_its_gangs_switch(
    engine: Engine, group: PodGroupBuilder, pods: list[PodBuilder], min_member: int
) -> None:
    state = fabric()
    for pod in pods:
        state.upsert_pod(pod.model())
    state.upsert_pod_group(group.min_member(min_member).model())
    nodes = sorted(state.view().nodes)
    engine.filter(state, state.pods["g-0"], nodes, fit=True)
    assert engine.gang_rules
    admission = engine.admission("default/g")
    assert admission is not None
    topology = Topology.of(state)
    switch = {topology.leaf(slot.node).name for slot in admission.slots.values()}
    assert len(switch) == 1
    beyond = pods[-1].model().metadata.uid
    assert beyond not in admission.slots
    outcome = engine.filter(state, state.pods[beyond], nodes, fit=True)
    assert outcome.passed and {topology.leaf(n).name for n in outcome.passed} == switch


def test_a_partition_of_a_running_hard_gang_goes_where_the_gang_runs(engine: Engine) -> None:
    """g-0 (partition 0) runs in s0; g-1, alone in partition 1, must join it there, not go to
    the other switch (every switch is a Domain its partition may use)."""
    state = fabric()
    state.upsert_pod(worker("g-0", "0").on("n0").phase("Running").model())
    state.upsert_pod(worker("g-1", "1").model())
    group = make_group("g").min_member(1).network("hard", 1).partitions("worker", 1)
    state.upsert_pod_group(group.model())
    outcome = engine.filter(state, state.pods["g-1"], sorted(state.view().nodes), fit=True)
    assert set(outcome.passed) == {"n0", "n1"}


def test_a_partition_planned_in_part_goes_where_the_whole_of_it_fits(engine: Engine) -> None:
    """minMember 3 of two partitions of 2: the plan places one member of partition 1, but its
    switch must have room for both (s0 has room for one only)."""
    state = fabric()
    busy(state, "n0", "4")
    busy(state, "n1", "2")
    pods = [worker(f"g-{i}", str(i // 2)) for i in range(4)]
    for pod in pods:
        state.upsert_pod(pod.model())
    state.upsert_pod_group(make_group("g").min_member(3).partitions("worker", 2).model())
    nodes = sorted(state.view().nodes)
    engine.filter(state, state.pods["g-0"], nodes, fit=True)
    assert engine.gang_rules
    admission = engine.admission("default/g")
    assert admission is not None
    assert {slot.node for slot in admission.slots.values()} <= {"n2", "n3"}
    outcome = engine.filter(state, state.pods["g-3"], nodes, fit=True)
    assert outcome.passed and set(outcome.passed) <= {"n2", "n3"}


@pytest.mark.parametrize(
    ("selector", "partitions"),
    [
        pytest.param({"matchLabels": {WORKER: "worker"}}, 2, id="match-labels"),
        pytest.param(
            {"matchExpressions": [{"key": WORKER, "operator": "In", "values": ["ps"]}]},
            0,
            id="match-expressions-select-none",
        ),
        pytest.param({"matchLabels": ["not", "a", "map"]}, 0, id="unreadable-selects-none"),
        pytest.param({}, 2, id="empty-selects-every-pod"),
    ],
)
def test_a_sub_group_policy_selects_its_pods_by_its_label_selector(
    selector: dict[str, object], partitions: int
) -> None:
    state = fabric()
    for i in range(4):
        state.upsert_pod(worker(f"g-{i}", str(i // 2)).model())
    body = make_group("g").min_member(4).partitions("worker", 2).build()
    body["spec"]["subGroupPolicy"][0]["labelSelector"] = selector
    state.upsert_pod_group(PodGroup.model_validate(body))
    reach = view_gang(state, "default/g").reach
    assert len(reach.parts if reach is not None else ()) == partitions


def test_a_gang_too_fragmented_for_its_members_says_so(engine: Engine) -> None:
    """s0 has 6 cpu free, as 3 and 3: enough cpu, but not for 3 members of 2 cpu."""
    state = fabric()
    for node in ("n0", "n1", "n2"):
        busy(state, node, "1")
    busy(state, "n3", "4")
    pods = gang(state, "g", 3, make_group("g").network("hard", 1))
    _, reason = admit(engine, state, pods[0])
    assert reason == (
        "gang default/g: needs 6 cpu inside one tier-1 HyperNode; s0 has 6 cpu free, not in "
        "pieces its members fit"
    )
