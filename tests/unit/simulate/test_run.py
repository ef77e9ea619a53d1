"""Simulations with exact outcomes on small traces, through Lahar's real policy."""

from __future__ import annotations

import gc
from itertools import pairwise
from typing import Any

import pytest

from extender.framework.policy import Policy
from extender.simulate import series
from extender.simulate.collector import YOUNG
from extender.simulate.defaults import stock_policy, story_trace
from extender.simulate.report import progress
from extender.simulate.run import (
    Ended,
    Progress,
    Simulation,
    SimulationOutcome,
    simulate,
)
from extender.simulate.summary import summarize
from extender.simulate.trace import Trace, parse_trace


def _job(name: str, pods: int, cpu: str, seconds: float, **fields: Any) -> dict[str, Any]:
    task = {"name": "worker", "replicas": pods, "cpu": cpu, "memory": "1Gi", "duration": seconds}
    return {"name": name, "tasks": [task], **fields}


def _low_then_high(**low: Any) -> Trace:
    """Two 8-cpu jobs on 8 cpu: low (priority 0) from 0 s for 1000 s, high (100) from 50 s."""
    return parse_trace(
        {
            "nodes": [{"count": 2, "cpu": "4", "memory": "8Gi"}],
            "jobs": [
                _job("low", 2, "4", 1000, priority=0, **low),
                _job("high", 2, "4", 100, arrival=50, priority=100),
            ],
        }
    )


def _times(outcome: SimulationOutcome) -> dict[str, tuple[float | None, float | None]]:
    return {name: (r.started, r.finished) for name, r in outcome.jobs.items()}


def test_the_story_lahar_runs_one_whole_then_the_other(lahar: Policy) -> None:
    outcome = simulate(story_trace(), lahar, "lahar")
    assert _times(outcome) == {"tf-a": (0.0, 600.0), "tf-b": (600.0, 1200.0)}
    summary = summarize(outcome)
    assert summary.makespan == 1200.0
    assert summary.partial_gangs == 0
    assert summary.mean_wait == 300.0
    assert summary.utilisation == pytest.approx(11 / 16)  # 11 of 16 cpu, all the time
    assert summary.utilisation == summary.held


def test_the_story_pod_at_a_time_wastes_both_jobs() -> None:
    outcome = simulate(story_trace(), stock_policy(), "stock")
    assert _times(outcome) == {"tf-a": (None, None), "tf-b": (None, None)}
    assert outcome.stuck == ["tf-a", "tf-b"]
    placed = {job: sum(1 for i in outcome.intervals if i.job == job) for job in ("tf-a", "tf-b")}
    assert 0 < placed["tf-a"] < 6
    assert 0 < placed["tf-b"] < 6
    summary = summarize(outcome)
    assert summary.makespan is None
    assert summary.partial_gangs == 2
    assert summary.utilisation == 0.0
    assert summary.held > 0.8  # the cores are held, and no job makes progress


@pytest.mark.parametrize(
    ("stock", "options", "ended", "end"),
    [
        (False, {}, Ended.FINISHED, 1200.0),  # tf-a, then tf-b, each to its end
        (False, {"until_started": ["tf-b"]}, Ended.STARTED, 600.0),  # tf-b starts once a ends
        (False, {"horizon": 900.0}, Ended.HORIZON, 900.0),
        # pod at a time, both gangs are stuck from time 0: the run ends once it watched 600 s
        # with nothing moving, within a horizon or none...
        (True, {}, Ended.IDLE, 600.0),
        (True, {"horizon": 3600.0}, Ended.IDLE, 600.0),
        # ...but not within a horizon shorter than the watch
        (True, {"horizon": 300.0}, Ended.HORIZON, 300.0),
    ],
)
def test_a_run_says_why_it_ended(
    lahar: Policy, stock: bool, options: dict[str, Any], ended: Ended, end: float
) -> None:
    policy = stock_policy() if stock else lahar
    outcome = Simulation(story_trace(), policy, "p", idle_limit=600, **options).run()
    assert (outcome.ended, outcome.end) == (ended, end)


def test_plain_pods_run_alike_under_both_policies(lahar: Policy) -> None:
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}],
            "jobs": [
                _job("one", 1, "4", 60),
                _job("two", 1, "4", 60, arrival=10),
            ],
        }
    )
    for policy in (lahar, stock_policy()):
        outcome = simulate(trace, policy, "p")
        assert _times(outcome) == {"one": (0.0, 60.0), "two": (60.0, 120.0)}


def test_an_elastic_job_ends_once_every_replica_has_run(lahar: Policy) -> None:
    """minAvailable 1 of 2 replicas on a node that holds one: the job starts with one and runs
    the other once there is room, as a Volcano Job completes only when all its replicas did."""
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "2", "memory": "8Gi"}],
            "jobs": [_job("elastic", 2, "2", 10, minAvailable=1)],
        }
    )
    for policy in (lahar, stock_policy()):
        outcome = simulate(trace, policy, "p")
        assert _times(outcome) == {"elastic": (0.0, 20.0)}
        assert sorted((i.start, i.end) for i in outcome.intervals) == [(0.0, 10.0), (10.0, 20.0)]


def test_a_job_arriving_in_unix_time_is_played_at_once(lahar: Policy) -> None:
    """A trace whose times are epoch seconds: the run goes straight to each arrival (no stepping
    an idle hour at a time to get there) and fires timers where a nanosecond is below a float's
    step (`clock`)."""
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}],
            "jobs": [_job("now", 1, "4", 60), _job("later", 1, "4", 60, arrival=1.7e9)],
        }
    )
    outcome = simulate(trace, lahar, "lahar")
    later = outcome.jobs["later"]
    assert later.started == pytest.approx(1.7e9) and later.finished == pytest.approx(1.7e9 + 60)


def test_a_high_priority_gang_preempts_a_whole_low_priority_job(preempting: Policy) -> None:
    trace = _low_then_high()
    outcome = simulate(trace, preempting, "lahar")
    assert outcome.preemptions == 1
    high, low = outcome.jobs["high"], outcome.jobs["low"]
    assert high.started is not None and 50 <= high.started < 70
    assert low.restarts == 1
    assert low.started == 0.0  # its first start; it ran again after high ended
    assert low.finished == pytest.approx(high.finished + 1000)
    assert summarize(outcome).partial_gangs == 0


def test_a_job_marked_not_preemptable_is_never_a_victim(preempting: Policy) -> None:
    trace = _low_then_high(preemptable=False)
    outcome = simulate(trace, preempting, "lahar")
    assert outcome.preemptions == 0
    assert _times(outcome) == {"low": (0.0, 1000.0), "high": (1000.0, 1100.0)}


def test_the_shipped_policy_evicts_nothing_the_high_priority_gang_waits(lahar: Policy) -> None:
    trace = _low_then_high()
    outcome = simulate(trace, lahar, "lahar")
    assert outcome.preemptions == 0
    assert _times(outcome) == {"low": (0.0, 1000.0), "high": (1000.0, 1100.0)}


def test_work_a_restarted_job_had_done_is_not_counted_as_useful(preempting: Policy) -> None:
    """Job low's ps ends at 10 s, its worker runs on; high preempts low at 50 s and low restarts
    whole (ps too): the ps's first 10 s were thrown away with the worker's 50 s."""
    ps = {"name": "ps", "replicas": 1, "cpu": "4", "memory": "1Gi", "duration": 10}
    worker = {"name": "worker", "replicas": 1, "cpu": "4", "memory": "1Gi", "duration": 100}
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "8", "memory": "8Gi"}],
            "jobs": [
                {"name": "low", "tasks": [ps, worker]},
                _job("high", 1, "8", 100, arrival=50, priority=100),
            ],
        }
    )
    outcome = simulate(trace, preempting, "lahar")
    assert outcome.preemptions == 1 and outcome.jobs["low"].restarts == 1
    first = [i for i in outcome.intervals if i.job == "low" and i.incarnation == 0]
    assert len(first) == 2 and all(i.evicted for i in first)
    kept = [i for i in outcome.intervals if not i.evicted and i.useful_from is not None]
    useful = sum(i.cpu / 1000 * ((i.end or outcome.end) - i.useful_from) for i in kept)
    assert useful == pytest.approx(8 * 100 + 4 * 10 + 4 * 100)  # high, then low again
    assert summarize(outcome).utilisation == pytest.approx(useful / (8 * outcome.end))


def test_a_run_says_how_far_it_got_as_it_goes(lahar: Policy) -> None:
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}],
            "jobs": [_job(f"j{i}", 2, "2", 100, arrival=10 * i) for i in range(4)],
        }
    )
    reports: list[Progress] = []
    outcome = simulate(trace, lahar, "lahar", on_progress=reports.append, progress_every=0)
    assert reports, "every move is reported when progress_every is 0"
    assert [r.now for r in reports] == sorted(r.now for r in reports)
    for earlier, later in pairwise(reports):
        assert earlier.finished <= later.finished and earlier.started <= later.started
    for report in reports:
        assert report.finished <= report.started <= report.arrived <= report.jobs == 4
    last = reports[-1]
    assert (last.arrived, last.started, last.finished) == (4, 4, 4)
    assert last.now == max(r.finished for r in outcome.jobs.values() if r.finished is not None)
    first_wait = next(r for r in reports if r.arrived - r.started)  # j1 waits for j0's 4 cpu
    assert progress(first_wait).startswith("lahar: ")
    assert "of 4 jobs done, 1 waiting to start (" in progress(first_wait)


def test_a_run_reports_where_it_ended_however_soon_after_the_last_report(lahar: Policy) -> None:
    trace = parse_trace(
        {"nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}], "jobs": [_job("j", 1, "1", 5)]}
    )
    reports: list[Progress] = []
    simulate(trace, lahar, "lahar", on_progress=reports.append, progress_every=3600)
    assert [(r.now, r.arrived, r.started, r.finished) for r in reports] == [(5.0, 1, 1, 1)]


def test_no_progress_is_reported_unless_asked(lahar: Policy) -> None:
    trace = parse_trace(
        {"nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}], "jobs": [_job("j", 1, "1", 5)]}
    )
    assert simulate(trace, lahar, "lahar").jobs["j"].finished == 5.0


def test_a_run_collects_young_garbage_less_often_and_puts_the_collector_back(
    lahar: Policy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "get_threshold", lambda: (700, 10, 10))
    set_to: list[tuple[int, ...]] = []
    monkeypatch.setattr(gc, "set_threshold", lambda *values: set_to.append(values))
    trace = parse_trace(
        {"nodes": [{"count": 1, "cpu": "4", "memory": "8Gi"}], "jobs": [_job("j", 1, "1", 5)]}
    )
    seen: list[tuple[int, ...]] = []
    simulate(trace, lahar, "lahar", on_progress=lambda _: seen.append(set_to[-1]), progress_every=0)
    assert seen and set(seen) == {(YOUNG, 10, 10)}
    assert set_to[-1] == (700, 10, 10)


class _Broken(Exception):
    pass


def test_a_fault_in_the_preemptor_stops_the_simulation_instead_of_skewing_it(
    preempting: Policy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise _Broken("victim search failed")

    monkeypatch.setattr("extender.preemption.loop.candidates", broken)
    trace = _low_then_high()
    before = gc.get_threshold()
    with pytest.raises(_Broken, match="victim search failed"):
        simulate(trace, preempting, "lahar")
    assert gc.get_threshold() == before


def test_fairness_follows_queue_weights(lahar: Policy) -> None:
    """Two queues, weights 3:1, each with more work than the cluster holds: Lahar's
    proportion plugin shares the cluster 3:1 (Jain's index over weights near 1)."""
    jobs = [
        _job(f"{queue}-{i}", 1, "1", 100, queue=queue, arrival=i)
        for queue in ("big", "small")
        for i in range(20)
    ]
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "4", "memory": "64Gi"}],
            "queues": [{"name": "big", "weight": 3}, {"name": "small", "weight": 1}],
            "jobs": jobs,
        }
    )
    summary = summarize(simulate(trace, lahar, "lahar"))
    assert summary.finished == 40
    assert summary.fairness is not None
    assert summary.fairness > 0.9


def _tree_trace() -> Trace:
    """ml (weight 1) over a (3) and b (1), and web (1), on 16 cpu, each leaf with 30 one-cpu
    jobs of 100 s, one arriving a second: more than the cluster holds for a while. Flat, a, b
    and web would share 3:1:1 (ml 80%); as a tree ml and web get half each, a and b 3:1 of ml's."""
    return parse_trace(
        {
            "nodes": [{"count": 2, "cpu": "8", "memory": "64Gi"}],
            "queues": [
                {"name": "ml", "weight": 1},
                {"name": "a", "weight": 3, "parent": "ml"},
                {"name": "b", "weight": 1, "parent": "ml"},
                {"name": "web", "weight": 1},
            ],
            "jobs": [
                _job(f"{queue}-{i}", 1, "1", 100, queue=queue, arrival=i)
                for queue in ("a", "b", "web")
                for i in range(30)
            ],
        }
    )


@pytest.fixture(scope="module")
def tree_run(preempting: Policy) -> SimulationOutcome:
    """With reclaim: a leaf that filled the cluster before its siblings arrived gives back what
    it holds beyond its share (the shipped policy only orders, so shares come closer slowly)."""
    return simulate(_tree_trace(), preempting, "lahar")


def test_each_level_of_a_queue_tree_shares_its_parents_cpu_by_weight(
    tree_run: SimulationOutcome,
) -> None:
    summary = summarize(tree_run)
    assert summary.finished == 90
    shares = {s.path: s for s in summary.levels}
    assert set(shares) == {"root/ml", "root/web", "root/ml/a", "root/ml/b"}
    for level in shares.values():
        assert level.saturated > 100  # (seconds of contention, so the shares mean something)
        assert level.share == pytest.approx(level.fair, rel=0.1), level.path
    assert summary.fairness is not None and summary.fairness > 0.85


def test_the_stock_way_does_not_share_a_tree_by_weight() -> None:
    """The same trace pod after pod: first come, first served, whatever the weights (so the
    shares above measure the policy, not the trace)."""
    levels = summarize(simulate(_tree_trace(), stock_policy(), "stock")).levels
    assert any(s.share != pytest.approx(s.fair, rel=0.1) for s in levels)


def test_a_parents_cpu_over_time_is_the_sum_of_its_childrens(tree_run: SimulationOutcome) -> None:
    tree = series.tree_cpu(tree_run)
    assert tree.levels == [["ml", "web"], ["a", "b"]]
    assert tree.paths == {"ml": "root/ml", "a": "root/ml/a", "b": "root/ml/b", "web": "root/web"}
    assert tree.weights == {"ml": 1, "a": 3, "b": 1, "web": 1}
    times, leaves = series.queue_cpu(tree_run)
    assert tree.times == times
    for name in ("a", "b", "web"):
        assert tree.cores[name] == leaves[name]
    ml = tree.cores["ml"]
    assert ml == [a + b for a, b in zip(tree.cores["a"], tree.cores["b"], strict=True)]
    assert max(ml) > 0 and max(v + w for v, w in zip(ml, tree.cores["web"], strict=True)) == 16
