"""Scale-up modes: which queue asks for nodes how, which gangs want them, what the book says."""

from __future__ import annotations

import pytest

from extender.api.engine_settings import GangSettings, ScaleUpSettings
from extender.api.scale_up import SCALE_UP_ANNOTATION, Mode
from extender.api.scheduling import GANG_GATE, Queue
from extender.cache.state import ClusterState
from extender.gangs.ledger import Gangs
from extender.gangs.scale_up import Asked, ScaleUps, queue_mode
from extender.gangs.wanting import want_nodes
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod, make_queue


def queue(name: str, mode: str | None = None, parent: str = "") -> Queue:
    built = make_queue(name)
    if mode is not None:
        built = built.annotate(SCALE_UP_ANNOTATION, mode)
    if parent:
        built = built.parent(parent)
    return built.model()


@pytest.mark.parametrize(
    ("queues", "name", "expected", "problem"),
    [
        ([queue("q")], "q", Mode.NONE, None),
        ([queue("q", "unschedulable")], "q", Mode.UNSCHEDULABLE, None),
        (
            [queue("ml", "provisioningRequest"), queue("a", parent="ml")],
            "a",
            Mode.PROVISIONING_REQUEST,
            None,
        ),
        ([queue("ml", "provisioningRequest"), queue("a", "none", "ml")], "a", Mode.NONE, None),
        ([queue("a", parent="b"), queue("b", parent="a")], "a", Mode.NONE, None),  # a loop
        ([], "missing", Mode.NONE, None),
        (
            [queue("ml", "provisioningRequest"), queue("a", "atomic", "ml")],
            "a",
            Mode.PROVISIONING_REQUEST,
            "Queue a annotation lahar.io/scale-up: 'atomic' is not a scale-up mode (one of none, "
            "provisioningRequest, unschedulable)",
        ),
    ],
)
def test_a_queue_takes_its_own_mode_else_its_parents_else_the_default(
    queues: list[Queue], name: str, expected: Mode, problem: str | None
) -> None:
    assert queue_mode({q.metadata.name: q for q in queues}, name, Mode.NONE) == (expected, problem)


def test_the_wait_between_attempts_doubles_up_to_its_bound() -> None:
    settings = ScaleUpSettings(retry=60, retry_max=300)
    assert [settings.retry_after(n) for n in (1, 2, 3, 4)] == [60, 120, 240, 300]


def test_the_book_says_how_long_a_request_has_stood_in_its_phase() -> None:
    book = ScaleUps(ScaleUpSettings(retry=60))
    book.seen("ns/g", Asked("ns", "g-1", 1, "Accepted", 0.0), now=100.0)
    book.seen("ns/g", Asked("ns", "g-1", 1, "Accepted", 0.0), now=140.0)  # same phase: kept
    assert book.describe("ns/g", now=140.0) == (
        "waiting for nodes: ProvisioningRequest ns/g-1 Accepted, not Provisioned, for 40 s"
    )
    # A PodGroup condition says when, not for how long: the words stay while nothing changes.
    assert book.describe("ns/g", now=140.0, wall=1_800_000_040.0) == (
        "waiting for nodes: ProvisioningRequest ns/g-1 Accepted, not Provisioned, "
        "since 2027-01-15T08:00:00Z"
    )
    book.seen("ns/g", Asked("ns", "g-1", 1, "Failed", 0.0, "max node group size reached"), 150.0)
    book.ended("ns/g", 1, now=150.0)
    assert book.describe("ns/g", now=160.0) == (
        "waiting for nodes: ProvisioningRequest ns/g-1 Failed (max node group size reached); "
        "asking again in 50 s"
    )
    assert book.next_attempt("ns/g", now=200.0) is None
    assert book.next_attempt("ns/g", now=210.0) == 2
    book.forget("ns/g")
    assert book.describe("ns/g", now=210.0) is None
    book.not_asked("ns/g", "this cluster does not serve them")
    assert book.describe("ns/g", 0.0) == (
        "waiting for nodes: no ProvisioningRequest was made: this cluster does not serve them"
    )


def member(group: str, index: int, cpu: str = "4") -> PodBuilder:
    pod = make_pod(f"{group}-{index}").uid(f"{group}-{index}").cpu(cpu).group(group)
    return pod.scheduler("lahar").gated(GANG_GATE)


def waiting_cluster(
    mode: str, *, capability: str | None = None, busy: bool = False
) -> ClusterState:
    """Two 4-cpu nodes; gang `big` (8 x 4 cpu) in queue q of scale-up `mode`; with `busy`, a
    running pod fills both nodes (the walk is past the point where nothing fits)."""
    state = cluster([make_node(n).cpu("4") for n in ("n1", "n2")])
    built = make_queue("q").annotate(SCALE_UP_ANNOTATION, mode)
    if capability is not None:
        built = built.capability(cpu=capability)
    state.upsert_queue(built.model())
    state.upsert_pod_group(make_group("big").min_member(8).queue("q").model())
    for index in range(8):
        state.upsert_pod(member("big", index).model())
    if busy:
        for node in ("n1", "n2"):
            filler = make_pod(f"fill-{node}").uid(f"fill-{node}").cpu("4").on(node)
            state.upsert_pod(filler.phase("Running").model())
    return state


@pytest.mark.parametrize("busy", [False, True], ids=["empty", "full"])
def test_a_gang_in_an_unschedulable_queue_goes_to_the_scheduler_unadmitted(busy: bool) -> None:
    state = waiting_cluster("unschedulable", busy=busy)
    gangs = Gangs(schedulers={"lahar"})
    nodes = state.view().nodes
    assert want_nodes(gangs, state, nodes) == ["default/big"]
    assert gangs.let_in(state, nodes) == ["default/big"]  # its gate goes
    assert gangs.shown("default/big") and gangs.admission("default/big") is None
    refusal = gangs.refusal("default/big")
    assert refusal is not None and refusal.rejection.cause == "NotEnoughResources"


def test_a_gang_its_queue_refuses_wants_no_nodes() -> None:
    state = waiting_cluster("unschedulable", capability="16")
    gangs = Gangs(schedulers={"lahar"})
    nodes = state.view().nodes
    assert want_nodes(gangs, state, nodes) == []
    assert gangs.let_in(state, nodes) == []
    assert not gangs.shown("default/big")
    refusal = gangs.refusal("default/big")
    assert refusal is not None and refusal.rejection.cause == "QueueCapability"


@pytest.mark.parametrize(
    ("mode", "wanted", "shown"),
    [("none", [], False), ("provisioningRequest", ["default/big"], False)],
)
def test_other_modes_keep_the_gate(mode: str, wanted: list[str], shown: bool) -> None:
    state = waiting_cluster(mode)
    gangs = Gangs(GangSettings(), schedulers={"lahar"})
    nodes = state.view().nodes
    assert want_nodes(gangs, state, nodes) == wanted
    assert gangs.let_in(state, nodes) == []
    assert gangs.shown("default/big") is shown


def test_the_policy_default_applies_to_queues_that_say_nothing() -> None:
    state = waiting_cluster("none")
    state.upsert_queue(make_queue("q").model())  # (no annotation now)
    settings = GangSettings(scale_up=ScaleUpSettings(Mode.UNSCHEDULABLE))
    gangs = Gangs(settings, schedulers={"lahar"})
    assert want_nodes(gangs, state, state.view().nodes) == ["default/big"]


def test_a_gang_is_shown_only_while_its_queue_says_so() -> None:
    state = waiting_cluster("unschedulable")
    gangs = Gangs(schedulers={"lahar"})
    want_nodes(gangs, state, state.view().nodes)
    assert gangs.shown("default/big")
    state.upsert_queue(make_queue("q").model())  # (mode none now)
    want_nodes(gangs, state, state.view().nodes)
    assert not gangs.shown("default/big")
    assert gangs.let_in(state, state.view().nodes) == []
