"""A run that starts from a running cluster: jobs taken up where they were at time 0, capacity
others hold, a horizon, evictions by name, and arrivals at one moment in the trace's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.api.scale_up import Mode
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate.defaults import stock_policy
from extender.simulate.run import Eviction, Simulation, SimulationOutcome, simulate
from extender.simulate.summary import summarize
from tests.builders import TraceBuilder, make_trace, make_trace_job

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"


def _two_nodes() -> TraceBuilder:
    return make_trace().nodes(names=["a", "b"], cpu="4")


def _pods(outcome: SimulationOutcome, job: str) -> list[tuple[str, str, float, float | None]]:
    return sorted((i.pod, i.node, i.start, i.end) for i in outcome.intervals if i.job == job)


@pytest.mark.parametrize(
    ("started", "duration", "ends"),
    [
        (-100.0, 300.0, 200.0),  # ran 100 s of 300: 200 s are left
        (0.0, 300.0, 300.0),  # started at the snapshot
        (-500.0, 300.0, 0.0),  # overdue: it ends at once
    ],
)
def test_a_started_job_runs_on_its_nodes_from_0_for_what_is_left(
    lahar: Policy, started: float, duration: float, ends: float
) -> None:
    job = make_trace_job("tf").task("w", 2, cpu="2", duration=duration).bound("a", "b")
    trace = _two_nodes().job(job.set(namespace="ml", started=started)).model()
    outcome = simulate(trace, lahar, "lahar")
    assert _pods(outcome, "ml/tf") == [("tf-w-0", "a", 0.0, ends), ("tf-w-1", "b", 0.0, ends)]
    record = outcome.jobs["ml/tf"]
    assert (record.arrived, record.started, record.finished) == (0.0, started, ends)
    assert record.resumed and not record.waits and record.restarts == 0
    assert all(i.useful_from == 0.0 for i in outcome.intervals)


def test_the_pending_pods_of_a_started_job_run_their_whole_duration_once_bound(
    lahar: Policy,
) -> None:
    """minAvailable 1 of 2, one bound on a (full), its other pod fits nowhere until a frees."""
    job = make_trace_job("tf").task("w", 2, cpu="4", duration=300).bound("a", None)
    trace = make_trace().nodes(names=["a"], cpu="4").job(job.set(minAvailable=1, started=-60))
    outcome = simulate(trace.model(), lahar, "lahar")
    assert _pods(outcome, "tf") == [("tf-w-0", "a", 0.0, 240.0), ("tf-w-1", "a", 240.0, 540.0)]
    assert outcome.jobs["tf"].finished == 540.0


def test_waits_from_before_time_0_are_not_the_runs(lahar: Policy) -> None:
    running = make_trace_job("old").task("w", 1, cpu="4", duration=1100).bound("a")
    waiting = make_trace_job("new").task("w", 1, cpu="4", duration=100)
    trace = make_trace().nodes(names=["a"], cpu="4").job(running.set(started=-1000)).job(waiting)
    outcome = simulate(trace.model(), lahar, "lahar")
    assert outcome.jobs["new"].started == 100.0
    summary = summarize(outcome)
    assert (summary.started, summary.mean_wait, summary.makespan) == (2, 100.0, 200.0)


def test_a_partly_bound_gang_is_completed_before_anyone_else(lahar: Policy) -> None:
    """p had one of its two pods bound at the snapshot; q, of a higher priority and running,
    has a spare pod pending for the same room: Lahar completes p first, as after a restart,
    and q's spare pod waits for p to end."""
    partial = make_trace_job("p").task("w", 2, cpu="4", duration=100).bound("a", None)
    urgent = make_trace_job("q").task("w", 2, cpu="4", duration=100).bound("c", None)
    trace = (
        make_trace()
        .nodes(names=["a", "b", "c"], cpu="4")
        .job(partial)
        .job(urgent.set(priority=100, minAvailable=1, started=-10))
    )
    outcome = simulate(trace.model(), lahar, "lahar")
    p, q = outcome.jobs["p"], outcome.jobs["q"]
    assert (p.arrived, p.started, p.finished, p.resumed) == (0.0, 0.0, 100.0, False)
    assert (q.started, q.finished, q.resumed) == (-10.0, 190.0, True)
    assert p.waits[0].since == 0.0 and p.waits[0].until == 0.0
    assert _pods(outcome, "p") == [("p-w-0", "a", 0.0, 100.0), ("p-w-1", "b", 0.0, 100.0)]
    assert _pods(outcome, "q")[1][2] == 90.0  # (on c once its first pod ended)
    assert summarize(outcome).partial_gangs == 0  # (p waited for nothing once the run began)


def test_pods_bound_enough_to_stand_start_at_0(lahar: Policy) -> None:
    job = make_trace_job("tf").task("w", 2, cpu="2", duration=50).bound("a", "a")
    outcome = simulate(_two_nodes().job(job).model(), lahar, "lahar")
    assert (outcome.jobs["tf"].started, outcome.jobs["tf"].finished) == (0.0, 50.0)


@pytest.mark.parametrize(
    ("occupied", "starts"),
    [
        ({"cpu": "2"}, {"small": 0.0, "whole": None}),  # 4 cpu on a 4-cpu node, 2 held: never
        ({"cpu": "1"}, {"small": 0.0, "whole": None}),
        ({"pods": 110}, {"small": None, "whole": None}),  # no pod slot left
        ({"pods": 109}, {"small": 0.0, "whole": 60.0}),
    ],
)
def test_occupied_capacity_is_never_freed(
    lahar: Policy, occupied: dict[str, object], starts: dict[str, float | None]
) -> None:
    trace = (
        make_trace()
        .nodes(names=["a"], cpu="4")
        .occupied("a", **occupied)
        .job(make_trace_job("small").task("w", 1, cpu="2", duration=60))
        .job(make_trace_job("whole").task("w", 1, cpu="4", duration=60))
    )
    for policy in (lahar, stock_policy()):
        outcome = simulate(trace.model(), policy, "p")
        assert {name: r.started for name, r in outcome.jobs.items()} == starts


def test_the_run_stops_at_its_horizon(lahar: Policy) -> None:
    trace = (
        make_trace()
        .nodes(names=["a"], cpu="4")
        .job(make_trace_job("first").task("w", 1, cpu="4", duration=600))
        .job(make_trace_job("second").task("w", 1, cpu="4", duration=60))
        .job(make_trace_job("late").task("w", 1, cpu="1", duration=60).set(arrival=5000))
    )
    outcome = Simulation(trace.model(), lahar, "lahar", horizon=300).run()
    assert outcome.end == 300.0
    first, second, late = (outcome.jobs[name] for name in ("first", "second", "late"))
    assert (first.started, first.finished) == (0.0, None)
    assert second.started is None and second.waiting
    assert late.arrived is None and late.started is None
    assert [(i.job, i.start, i.end) for i in outcome.intervals] == [("first", 0.0, None)]
    whole = Simulation(trace.model(), lahar, "lahar").run()
    assert whole.jobs["late"].finished == 5060.0


def test_a_run_that_ends_before_its_horizon_ends_there(lahar: Policy) -> None:
    trace = make_trace().nodes(1).job(make_trace_job("tf").task("w", 1, duration=60))
    assert Simulation(trace.model(), lahar, "lahar", horizon=1e6).run().end == 60.0


@pytest.mark.parametrize(
    ("awaited", "end"),
    [
        ((), 0.0),  # (nothing to wait for: the run ends at once)
        (("first",), 0.0),
        (("first", "second"), 600.0),  # (second starts when first ends)
        (("second", "late"), 5000.0),
    ],
)
def test_a_run_ends_once_every_job_it_awaits_has_started(
    lahar: Policy, awaited: tuple[str, ...], end: float
) -> None:
    trace = (
        make_trace()
        .nodes(names=["a"], cpu="4")
        .job(make_trace_job("first").task("w", 1, cpu="4", duration=600))
        .job(make_trace_job("second").task("w", 1, cpu="4", duration=60))
        .job(make_trace_job("late").task("w", 1, cpu="1", duration=60).set(arrival=5000))
    )
    outcome = Simulation(trace.model(), lahar, "lahar", horizon=1e6, until_started=awaited).run()
    assert outcome.end == end
    assert all(outcome.jobs[job].started is not None for job in awaited)


@pytest.mark.parametrize("horizon", [0.0, -5.0])
def test_a_horizon_is_after_0(lahar: Policy, horizon: float) -> None:
    trace = make_trace().nodes(1).model()
    with pytest.raises(ValueError, match="horizon: the run stops at a time after 0"):
        Simulation(trace, lahar, "lahar", horizon=horizon)


def test_an_eviction_names_its_preemptor_and_victims(preempting: Policy) -> None:
    """low (priority 0) fills both nodes from 0; high (100) arrives at 50 and evicts it whole."""
    low = make_trace_job("low").task("w", 2, cpu="4", duration=1000).set(namespace="ml")
    high = make_trace_job("high").task("w", 2, cpu="4", duration=100)
    trace = _two_nodes().job(low).job(high.set(arrival=50, priority=100, namespace="ml"))
    outcome = simulate(trace.model(), preempting, "preemption")
    assert len(outcome.evictions) == outcome.preemptions == 1
    eviction = outcome.evictions[0]
    assert (eviction.preemptor, eviction.victims) == ("ml/high", ("ml/low",))
    assert 50 <= eviction.at < 70 and outcome.jobs["ml/low"].restarts == 1
    assert simulate(trace.model(), load_policy(POLICY, REGISTRY), "lahar").evictions == []


def test_a_resumed_job_may_be_evicted(preempting: Policy) -> None:
    low = make_trace_job("low").task("w", 2, cpu="4", duration=1000).bound("a", "b")
    high = make_trace_job("high").task("w", 2, cpu="4", duration=100).set(priority=100)
    trace = _two_nodes().job(low.set(started=-10)).job(high.set(arrival=50))
    outcome = simulate(trace.model(), preempting, "preemption")
    assert [(e.preemptor, e.victims) for e in outcome.evictions] == [("high", ("low",))]
    assert isinstance(outcome.evictions[0], Eviction)
    low_record = outcome.jobs["low"]
    assert low_record.started == -10.0 and low_record.restarts == 1 and low_record.resumed
    assert low_record.finished == pytest.approx(outcome.jobs["high"].finished + 1000)


def test_jobs_arriving_together_are_handed_over_in_the_traces_order() -> None:
    """Twelve one-pod jobs at the same moment on a node that runs one at a time: pod after pod,
    they start in the order the trace lists them (asyncio's timers due at one moment would have
    handed them over in another)."""
    names = [f"j{index:02}" for index in (7, 3, 11, 0, 9, 1, 5, 10, 2, 8, 4, 6)]
    trace = make_trace().nodes(names=["a"], cpu="1")
    trace.job(make_trace_job("first").task("w", 1, cpu="1", duration=5))
    for name in names:
        trace.job(make_trace_job(name).task("w", 1, cpu="1", duration=10).set(arrival=3))
    for policy in (stock_policy(), load_policy(POLICY, REGISTRY)):
        outcome = simulate(trace.model(), policy, "p")
        started = sorted((r.started or 0.0, name) for name, r in outcome.jobs.items())
        assert [name for _, name in started] == ["first", *names]


@pytest.mark.parametrize("mode", [Mode.PROVISIONING_REQUEST, Mode.UNSCHEDULABLE])
def test_an_autoscaled_pool_buys_for_jobs_of_any_namespace_and_kind(
    lahar: Policy, mode: Mode
) -> None:
    pool = {"nodes": {"cpu": "4", "memory": "8Gi"}, "maxNodes": 4, "provisioningDelay": 60}
    trace = (
        make_trace()
        .nodes(1, cpu="4")
        .set("autoscaling", pool)
        .job(make_trace_job("a").task("w", 3, cpu="4", duration=100).set(namespace="ml"))
        .job(make_trace_job("b").task("w", 2, cpu="4", duration=100).set(kind="coscheduling"))
    )
    outcome = simulate(trace.model(), lahar, "lahar", scale_up=mode)
    assert {name: r.finished for name, r in outcome.jobs.items()} == {"ml/a": 160.0, "b": 160.0}
    figures = summarize(outcome).pool
    assert figures is not None and figures.added == 4
