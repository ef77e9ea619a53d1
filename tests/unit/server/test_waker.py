"""The waker sends gangs to the scheduler: it lifts Lahar's gate of the gangs the fair order lets
in, a bounded number of members at a time, and touches parked pods (a replica that starts to serve
touches every parked member, and the parked pods of no gang of the schedulers it serves: the
scheduler parked what it could not place while no extender answered, and no cluster event may
requeue it); a Queue deleted or created is a change of its own: the gangs naming it say why they
wait, or go."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from extender.api.engine_settings import GangSettings
from extender.api.scheduling import GANG_GATE, Queue
from extender.framework.engine import Cause
from extender.server.waker import RETRY_ANNOTATION, Waker, parked_plain
from tests.builders import PodBuilder, cluster, make_group, make_node, make_pod, make_queue
from tests.engines import make_engine


class Recorder:
    def __init__(self) -> None:
        self.touched: list[str] = []
        self.lifted: list[str] = []

    async def patch(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        assert RETRY_ANNOTATION in annotations
        self.touched.append(name)

    async def lift(self, namespace: str, name: str, uid: str) -> None:
        assert uid == name  # (the builders' pods: uid = name)
        self.lifted.append(name)


def play(waker: Waker, until: Callable[[], bool], then: Callable[[], None] | None = None) -> None:
    """Run the waker until `until()` holds (at most a second), then `then()` and a moment more."""

    async def main() -> None:
        task = asyncio.create_task(waker.run())
        async with asyncio.timeout(5):
            while not until():  # noqa: ASYNC110 (the waker exposes no event to wait on)
                await asyncio.sleep(0.005)
        if then is not None:
            then()
            await asyncio.sleep(0.2)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_serving_starts_by_waking_the_parked_members_of_every_gang() -> None:
    pods = [
        make_pod("w-0").uid("w-0").group("waiting").parked(),
        make_pod("w-1").uid("w-1").group("waiting").parked(),
        make_pod("w-2").uid("w-2").group("waiting"),  # in the scheduler's queue: nothing to do
        make_pod("r-0").uid("r-0").group("running").on("n1"),
        make_pod("plain").uid("plain").parked(),
    ]
    state = cluster([make_node("n1").cpu("8")], pods)
    for name in ("waiting", "running"):
        state.upsert_pod_group(make_group(name).min_member(1).model())
    calls = Recorder()
    waker = Waker(state, make_engine(GangSettings()), calls.patch, calls.lift)
    waker.attach()
    play(waker, lambda: len(calls.touched) >= 2)
    assert sorted(calls.touched) == ["w-0", "w-1"]
    assert calls.lifted == []


def lahars(name: str) -> PodBuilder:
    return make_pod(name).uid(name).scheduler("lahar")


@pytest.mark.parametrize(
    ("pod", "woken"),
    [
        (lahars("parked").parked(), True),
        (lahars("parked-volcano").scheduler("volcano").parked(), True),
        (lahars("never-tried"), False),  # in the scheduler's queue
        (lahars("other-scheduler").scheduler("default-scheduler").parked(), False),
        (lahars("gang-member").group("g").parked(), False),  # the gangs' wake sees to it
        (lahars("gated").gated("example.com/hold").parked(), False),
        (lahars("bound").on("n1").parked(), False),
        (lahars("failed").phase("Failed").parked(), False),
        (lahars("deleting").deleting().parked(), False),
    ],
    ids=lambda value: value.model().metadata.name if isinstance(value, PodBuilder) else None,
)
def test_which_pods_of_no_gang_are_woken_when_serving_starts(pod: PodBuilder, woken: bool) -> None:
    chosen = parked_plain([pod.model()], {"lahar", "volcano"})
    assert [p.metadata.name for p in chosen] == ([pod.model().metadata.name] if woken else [])


def test_parked_pods_of_no_gang_are_woken_highest_priority_first() -> None:
    pods = [lahars("b").parked(), lahars("c").priority(10).parked(), lahars("a").parked()]
    chosen = parked_plain([p.model() for p in pods], {"lahar"})
    assert [p.metadata.name for p in chosen] == ["c", "a", "b"]


def test_serving_starts_by_waking_the_parked_pods_of_no_gang_of_the_schedulers_served() -> None:
    pods = [
        lahars("p-0").parked(),
        lahars("p-1").parked(),
        lahars("p-2"),  # in the scheduler's queue
        lahars("theirs").scheduler("default-scheduler").parked(),
    ]
    state = cluster([make_node("n1").cpu("8")], pods)
    calls = Recorder()
    waker = Waker(state, make_engine(GangSettings(), schedulers={"lahar"}), calls.patch, calls.lift)
    waker.attach()
    play(waker, lambda: len(calls.touched) >= 2, then=lambda: None)
    assert sorted(calls.touched) == ["p-0", "p-1"]


def test_a_pod_bound_while_the_wake_goes_on_is_not_touched() -> None:
    state = cluster([make_node("n1").cpu("8")], [lahars("p-0").parked(), lahars("p-1").parked()])
    calls = Recorder()
    waker = Waker(state, make_engine(GangSettings(), schedulers={"lahar"}), calls.patch, calls.lift)
    waker.attach()
    play(
        waker,
        lambda: calls.touched == ["p-0"],
        then=lambda: state.upsert_pod(lahars("p-1").on("n1").model()),
    )
    assert calls.touched == ["p-0"]


def held(gang: str, index: int) -> PodBuilder:
    name = f"{gang}-{index}"
    return make_pod(name).uid(name).group(gang).cpu("1").scheduler("lahar").gated(GANG_GATE)


def test_held_gangs_are_let_in_in_order_while_few_members_wait_for_the_scheduler() -> None:
    """Two gangs of 3 held by Lahar's gate, room for both, at most 4 members in flight: the
    first is admitted and its gates lifted together; the second waits until the first's
    members reach the barrier (their slots are consumed) and are bound, then goes."""
    pods = [held("a", i) for i in range(3)] + [held("b", i) for i in range(3)]
    state = cluster([make_node("n1").cpu("8")], pods)
    for name in ("a", "b"):
        state.upsert_pod_group(make_group(name).min_member(3).model())
    engine = make_engine(GangSettings(max_pods_in_flight=4), schedulers={"lahar"})
    calls = Recorder()
    waker = Waker(state, engine, calls.patch, calls.lift, delay=0.01)
    waker.attach()

    def a_is_bound() -> None:  # (its members came to the barrier; the watch shows them bound)
        for index in range(3):
            engine.consume(f"a-{index}", "n1")
            state.upsert_pod(held("a", index).on("n1").model())

    play(waker, lambda: len(calls.lifted) >= 3, then=a_is_bound)
    assert sorted(calls.lifted) == ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2"]
    assert calls.lifted[:3] == sorted(calls.lifted[:3])  # (a's, all before b's)
    assert set(engine.admitted()) == {"default/b"}
    assert calls.touched == []


def test_a_held_gang_that_does_not_fit_stays_held_and_says_why() -> None:
    pods = [held("big", i).cpu("6") for i in range(2)]
    state = cluster([make_node("n1").cpu("8")], pods)
    state.upsert_pod_group(make_group("big").min_member(2).model())
    engine = make_engine(GangSettings(), schedulers={"lahar"})
    calls = Recorder()
    waker = Waker(state, engine, calls.patch, calls.lift, delay=0.01)
    waker.attach()
    play(waker, lambda: "default/big" in engine.refused())
    assert calls.lifted == []
    assert engine.refusal("default/big").rejection.message == (
        "gang default/big: 1 of 2 members cannot be placed: Insufficient cpu"
    )


def test_a_lift_that_fails_is_tried_again() -> None:
    state = cluster([make_node("n1").cpu("8")], [held("g", 0)])
    state.upsert_pod_group(make_group("g").min_member(1).model())
    calls = Recorder()
    failures = [RuntimeError("the API server hiccuped")]

    async def flaky(namespace: str, name: str, uid: str) -> None:
        if failures:
            raise failures.pop()
        await calls.lift(namespace, name, uid)

    engine = make_engine(GangSettings(), schedulers={"lahar"})
    waker = Waker(state, engine, calls.patch, flaky, delay=0.01)
    waker.attach()
    play(waker, lambda: calls.lifted == ["g-0"])


def test_held_gangs_of_schedulers_lahar_does_not_serve_are_left_alone() -> None:
    state = cluster([make_node("n1").cpu("8")], [held("g", 0).scheduler("other")])
    state.upsert_pod_group(make_group("g").min_member(1).model())
    engine = make_engine(GangSettings(), schedulers={"lahar"})
    calls = Recorder()
    waker = Waker(state, engine, calls.patch, calls.lift, delay=0.01)
    waker.attach()
    play(waker, lambda: True, then=lambda: None)
    assert calls.lifted == []
    assert not engine.admitted()


async def _until(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not check():  # noqa: ASYNC110 (the waker exposes no event to wait on)
            await asyncio.sleep(0.005)


def test_a_held_gang_whose_queue_is_deleted_says_so_and_goes_once_it_is_back() -> None:
    """Waiting for room in queue q1, the queue deleted: the only change, and the gang's reason is
    the queue now; room frees and nothing of it goes; the queue back, the gang goes whole."""
    blocker = make_pod("blocker").uid("blocker").cpu("7").on("n1").phase("Running")
    state = cluster([make_node("n1").cpu("8")], [held("g", 0), held("g", 1), blocker])
    state.upsert_queue(Queue.model_validate(make_queue("q1").build()))
    state.upsert_pod_group(make_group("g").min_member(2).queue("q1").model())
    engine = make_engine(GangSettings(), schedulers={"lahar"})
    calls = Recorder()
    waker = Waker(state, engine, calls.patch, calls.lift, delay=0.01)
    waker.attach()

    def cause() -> Cause | None:
        refusal = engine.refusal("default/g")
        return refusal.rejection.cause if refusal is not None else None

    async def main() -> None:
        task = asyncio.create_task(waker.run())
        await _until(lambda: cause() == Cause.NOT_ENOUGH_RESOURCES)
        state.delete_queue("q1")
        await _until(lambda: cause() == Cause.NO_QUEUE)
        refusal = engine.refusal("default/g")
        assert refusal is not None
        assert refusal.rejection.message == (
            "gang default/g: queue q1 does not exist; it waits until it is created"
        )
        state.delete_pod("blocker")
        await asyncio.sleep(0.1)
        assert calls.lifted == [] and cause() == Cause.NO_QUEUE
        state.upsert_queue(Queue.model_validate(make_queue("q1").build()))
        await _until(lambda: sorted(calls.lifted) == ["g-0", "g-1"])
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_pod_held_by_lahars_gate_that_names_no_group_is_set_free() -> None:
    """The webhook gated a pod for its `spec.schedulingGroup`, which the API server then dropped
    (no native gang API): nothing would ever lift that gate, so the waker does, at once and for
    the pods already there when it starts. A gang member's gate, or another's, is left alone."""
    held_before = lahars("before").gated(GANG_GATE)
    state = cluster(
        [make_node("n1").cpu("8")],
        [held_before, lahars("member").group("g").gated(GANG_GATE), lahars("other").gated("x/y")],
    )
    state.upsert_pod_group(make_group("g").min_member(2).model())
    calls = Recorder()
    waker = Waker(state, make_engine(GangSettings()), calls.patch, calls.lift)
    waker.attach()
    play(
        waker,
        lambda: calls.lifted == ["before"],
        then=lambda: state.upsert_pod(lahars("after").gated(GANG_GATE).model()),
    )
    assert calls.lifted == ["before", "after"]
