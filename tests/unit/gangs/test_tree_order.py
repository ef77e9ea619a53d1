"""The fair order in a queue tree: shares by weight at every level, gangs only in leaf queues,
an ancestor's capability and state binding its leaves' gangs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.scheduling import ROOT
from extender.gangs.turns import Turn
from tests.builders import PodBuilder, QueueBuilder, make_group, make_pod, make_queue
from tests.unit.gangs.test_order import Gang, Scenario, ask, engine, state_of

# root -> ml (weight 3) -> {team-a, team-b} (weight 1 each); root -> web (weight 1).
TREE = (
    make_queue("ml").weight(3),
    make_queue("team-a").parent("ml"),
    make_queue("team-b").parent("ml"),
    make_queue("web").weight(1),
)


def turns(scenario: Scenario, outside: Sequence[PodBuilder] = ()) -> dict[str, Turn]:
    """Every waiting gang's turn in one walk of the fair order of a new engine serving the
    gangs' scheduler, by gang name (with `outside`, pods of no gang, running)."""
    state = state_of(scenario)
    for pod in outside:
        state.upsert_pod(pod.phase("Running").model())
    served = state.pods[f"uid-default-{scenario.gangs[0].name}-0"].spec.scheduler_name
    order = engine(schedulers={served}).order(state)
    waiting = [gang for gang in scenario.gangs if not gang.on]
    return {gang.name: order.turns[f"default/{gang.name}"] for gang in waiting}


def placed_cpu(scenario: Scenario, walked: dict[str, Turn]) -> Counter[str]:
    """Per queue, the cpu its gangs were let in with (gangs of 1-cpu members)."""
    placed: Counter[str] = Counter()
    for gang in scenario.gangs:
        if walked[gang.name].slots:
            placed[gang.queue] += gang.size
    return placed


@pytest.mark.parametrize(
    ("queues", "nodes", "size", "expected"),
    [
        pytest.param(
            TREE,
            8,
            1,
            {"team-a": 12, "team-b": 12, "web": 8},
            id="ml 3/4 of 32 cpu, each team 3/8; web 1/4",
        ),
        pytest.param(
            TREE,
            8,
            2,
            {"team-a": 12, "team-b": 12, "web": 8},
            id="gangs of two",
        ),
        pytest.param(
            (
                make_queue("ml").weight(1),
                make_queue("team-a").parent("ml").weight(3),
                make_queue("team-b").parent("ml").weight(1),
                make_queue("web").weight(1),
            ),
            8,
            1,
            {"team-a": 12, "team-b": 4, "web": 16},
            id="ml 1/2, its teams 3:1 within it",
        ),
        pytest.param(
            (
                make_queue("ml").weight(1),
                make_queue("team-a").parent("ml"),
                make_queue("team-b").parent("ml"),
                make_queue("web").weight(1),
                make_queue("x").parent("team-a"),
                make_queue("y").parent("team-a"),
            ),
            8,
            1,
            {"x": 4, "y": 4, "team-b": 8, "web": 16},
            id="three levels: halves of halves",
        ),
    ],
)
def test_a_saturated_tree_is_shared_by_weight_at_every_level(
    queues: tuple[QueueBuilder, ...], nodes: int, size: int, expected: dict[str, int]
) -> None:
    """Every leaf waits with more equal gangs than the cluster (nodes of 4 cpu) holds; one walk
    lets in exactly each queue's share of its parent's share."""
    leaves = list(expected)
    gangs = [
        Gang(f"{leaf}-{index}", size, cpu="1", queue=leaf)
        for index in range(40 // size)
        for leaf in leaves
    ]
    scenario = Scenario(nodes, gangs, list(queues))
    placed = placed_cpu(scenario, turns(scenario))
    assert dict(placed) == expected


def test_the_order_goes_level_by_level_not_leaf_by_leaf() -> None:
    """ml and web deserve 8 cpu each of 16, team-a and team-b 4 each of ml's 8. team-a holds 3
    (3/4 of its share), web 4 (1/2), team-b nothing (its 5-cpu gang fits no node of 4). Leaf by
    leaf, web would go before team-a; but ml, team-a's branch, is less far into its share (3 of
    8) than web: the one cpu left goes to team-a."""
    queues = [
        make_queue("ml"),
        make_queue("team-a").parent("ml"),
        make_queue("team-b").parent("ml"),
    ]
    gangs = [
        Gang("a-run", 3, cpu="1", queue="team-a", on="n0"),
        Gang("web-run", 4, cpu="1", queue="web", on="n1"),
        Gang("a-next", 1, cpu="1", queue="team-a"),
        Gang("web-next", 1, cpu="1", queue="web"),
        Gang("web-more", 1, cpu="3", queue="web"),
        Gang("b-big", 1, cpu="5", queue="team-b"),
    ]
    scenario = Scenario(4, gangs, [*queues, make_queue("web")])
    outside = [  # pods of no queue: they use capacity, no queue is charged
        make_pod("o0").cpu("1").on("n0"),
        make_pod("o2").cpu("4").on("n2"),
        make_pod("o3").cpu("3").on("n3"),
    ]
    walked = turns(scenario, outside)
    assert walked["a-next"].slots
    assert not walked["web-next"].slots and not walked["web-more"].slots


@pytest.mark.parametrize(
    ("queues", "queue", "cause", "words"),
    [
        pytest.param(
            TREE,
            "ml",
            "QueueNotLeaf",
            "queue root/ml has child queues and takes no gangs itself",
            id="a gang in a queue with children",
        ),
        pytest.param(
            (make_queue("ml").capability(cpu="3"), make_queue("team-a").parent("ml")),
            "team-a",
            "QueueCapability",
            "queue team-a's ancestor root/ml would have more cpu than its capability (3)",
            id="its parent's capability",
        ),
        pytest.param(
            (
                make_queue("ml").capability(cpu="3"),
                make_queue("t").parent("ml"),
                make_queue("team-a").parent("t"),
            ),
            "team-a",
            "QueueCapability",
            "queue team-a's ancestor root/ml would have more cpu than its capability (3)",
            id="its grandparent's capability",
        ),
        pytest.param(
            (make_queue("ml"), make_queue("team-a").parent("ml").capability(cpu="3")),
            "team-a",
            "QueueCapability",
            "queue team-a would have more cpu than its capability (3)",
            id="its own capability, under a parent",
        ),
        pytest.param(
            (make_queue("ml").state("Closed"), make_queue("team-a").parent("ml")),
            "team-a",
            "QueueClosed",
            "queue team-a's ancestor root/ml is Closed: it admits nothing new",
            id="a closed parent",
        ),
        pytest.param(
            (
                make_queue("ml").state("Closing"),
                make_queue("t").parent("ml"),
                make_queue("team-a").parent("t"),
            ),
            "team-a",
            "QueueClosed",
            "queue team-a's ancestor root/ml is Closing",
            id="a closing grandparent",
        ),
    ],
)
def test_queue_rules_of_the_tree_refuse_before_any_plan(
    queues: tuple[QueueBuilder, ...], queue: str, cause: str, words: str
) -> None:
    scenario = Scenario(2, [Gang("g", 2, queue=queue)], list(queues))  # 4 cpu on 8 free
    turn = turns(scenario)["g"]
    assert turn.rejection is not None and not turn.slots
    assert turn.rejection.cause == cause
    assert words in turn.rejection.message
    reason = ask(engine(), state_of(scenario), "g")
    assert reason is not None and words in reason


@pytest.mark.parametrize(
    ("queues", "admitted"),
    [
        pytest.param(
            (
                make_queue("ml").capability(cpu="4"),
                make_queue("team-a").parent("ml"),
                make_queue("team-b").parent("ml"),
            ),
            1,
            id="a parent's capability counts what each child took in the walk",
        ),
        pytest.param(
            (
                make_queue("ml").capability(cpu="8"),
                make_queue("team-a").parent("ml"),
                make_queue("team-b").parent("ml"),
            ),
            2,
            id="room within it for both",
        ),
    ],
)
def test_a_parent_s_capability_binds_its_children_together(
    queues: tuple[QueueBuilder, ...], admitted: int
) -> None:
    """Two gangs of 4 cpu, one in each child of ml, on 16 cpu free."""
    gangs = [Gang("a", 2, queue="team-a"), Gang("b", 2, queue="team-b")]
    walked = turns(Scenario(4, gangs, list(queues)))
    assert sum(bool(turn.slots) for turn in walked.values()) == admitted
    refused = [turn.rejection for turn in walked.values() if not turn.slots]
    assert all(
        r is not None and r.cause == "QueueCapability" and "ancestor root/ml" in r.message
        for r in refused
    )


def test_work_running_under_a_closed_parent_continues() -> None:
    queues = [make_queue("ml").state("Closed"), make_queue("team-a").parent("ml")]
    state = state_of(Scenario(1, [Gang("g", 1, queue="team-a", on="n0")], queues))
    assert ask(engine(), state, "g") is None  # it stands: nothing to admit, nothing refused


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param((), id="flat queues"),
        pytest.param((make_queue(ROOT),), id="flat queues under a root Queue"),
        pytest.param((make_queue("gone-child").parent("gone"),), id="beside a stray"),
    ],
)
def test_flat_queues_are_let_in_by_weight_as_before(extra: tuple[QueueBuilder, ...]) -> None:
    queues = (make_queue("a").weight(1), make_queue("b").weight(3).parent(ROOT), *extra)
    gangs = [Gang(f"{q}-{i}", 1, cpu="1", queue=q) for i in range(40) for q in ("a", "b")]
    scenario = Scenario(8, gangs, list(queues))
    assert dict(placed_cpu(scenario, turns(scenario))) == {"a": 8, "b": 24}


def test_a_gang_in_a_stray_queue_goes_as_in_a_top_level_one() -> None:
    """A queue whose parent does not exist hangs under root: its gangs are let in."""
    scenario = Scenario(1, [Gang("g", 2, queue="orphan")], [make_queue("orphan").parent("gone")])
    assert turns(scenario)["g"].slots


def test_members_beyond_the_plan_stay_within_an_ancestor_s_capability() -> None:
    """ml may hold 3 cpu; team-b runs 1 of them. team-a's gang (minMember 1, four members of
    1 cpu) is admitted with one slot; once two members are bound, ml holds its capability, and
    a third member is refused for it."""
    gang = Gang("g", 4, cpu="1", queue="team-a")
    queues = [
        make_queue("ml").capability(cpu="3"),
        make_queue("team-a").parent("ml"),
        make_queue("team-b").parent("ml"),
    ]
    state = state_of(Scenario(2, [gang, Gang("b", 1, cpu="1", queue="team-b", on="n1")], queues))
    state.upsert_pod_group(make_group("g").min_member(1).queue("team-a").model())
    built = engine()
    assert ask(built, state, "g") is None
    for index in (0, 1):
        state.upsert_pod(gang.pods()[index].on("n0").phase("Running").model())
    third = state.pods["uid-default-g-2"]
    reason = built.filter(state, third, []).gang_reason
    assert reason is not None
    assert "queue team-a's ancestor root/ml would have more cpu than its capability (3)" in reason


@settings(max_examples=25, deadline=None)
@given(weights=st.tuples(*[st.integers(1, 5)] * 4))
def test_any_weights_of_a_saturated_two_level_tree_are_kept_at_both_levels(
    weights: tuple[int, int, int, int],
) -> None:
    """root -> ml -> {team-a, team-b}, root -> web, weighted at random; every leaf waits with
    more 1-cpu gangs than the 32 cpu hold. ml and web hold the cluster by their weights, and
    team-a and team-b what ml holds by theirs (within a gang of 1 cpu each)."""
    ml, web, team_a, team_b = weights
    queues = [
        make_queue("ml").weight(ml),
        make_queue("team-a").parent("ml").weight(team_a),
        make_queue("team-b").parent("ml").weight(team_b),
        make_queue("web").weight(web),
    ]
    leaves = ("team-a", "team-b", "web")
    gangs = [Gang(f"{leaf}-{i}", 1, cpu="1", queue=leaf) for i in range(33) for leaf in leaves]
    scenario = Scenario(8, gangs, queues)
    placed = placed_cpu(scenario, turns(scenario))
    assert sum(placed.values()) == 32
    in_ml = placed["team-a"] + placed["team-b"]
    assert abs(in_ml - 32 * ml / (ml + web)) <= 1, placed
    assert abs(placed["web"] - 32 * web / (ml + web)) <= 1, placed
    assert abs(placed["team-a"] - in_ml * team_a / (team_a + team_b)) <= 1, placed
