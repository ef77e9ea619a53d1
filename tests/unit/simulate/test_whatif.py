"""`whatif.ask`: a Job played into a snapshot, and what it would meet: when it starts and the
range the gangs it waits for allow, where, whom it evicts, whom it delays, or why it does not
start (never with the policy, or not within the horizon)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from extender.framework.policy import Policy
from extender.simulate.whatif import NOW_WITHIN, Answer, Blocker, Delay, ask
from tests.builders import TraceBuilder, TraceJobBuilder, make_trace, make_trace_job


def _two_nodes() -> TraceBuilder:
    return make_trace().nodes(names=["a", "b"], cpu="4")


def _asked(replicas: int = 2, cpu: str = "4", **fields: Any) -> TraceJobBuilder:
    """The Job asked about: `replicas` pods of `cpu`, 10 minutes each."""
    return make_trace_job("new").task("w", replicas, cpu=cpu, duration=600).set(**fields)


def _running(
    name: str, *nodes: str, started: float, duration: float, cpu: str = "4"
) -> TraceJobBuilder:
    """A gang running on `nodes` (one pod each) since `started`, `duration` in all."""
    job = make_trace_job(name).task("w", len(nodes), cpu=cpu, duration=duration)
    return job.bound(*nodes).set(started=started)


def _answer(trace: TraceBuilder, job: TraceJobBuilder, policy: Policy, **options: Any) -> Answer:
    return ask(trace.model(), job.model(), policy, **options)


@pytest.mark.parametrize(
    ("trace", "replicas", "nodes", "hyper_node"),
    [
        (_two_nodes(), 2, ("a", "b"), None),  # no topology: no HyperNode
        (
            _two_nodes().set(
                "topology", {"hyperNodes": [{"name": "s0", "tier": 1, "nodes": ["a", "b"]}]}
            ),
            2,
            ("a", "b"),
            "s0",
        ),
        (  # node-2 and node-3 are full: the two pods go to switch-0
            make_trace()
            .nodes(4, cpu="4")
            .set("topology", {"switchSize": 2, "spineSize": 2})
            .occupied("node-2", cpu="4")
            .occupied("node-3", cpu="4"),
            2,
            ("node-0", "node-1"),
            "switch-0",
        ),
        (  # three pods over two switches: the spine above both
            make_trace()
            .nodes(4, cpu="4")
            .set("topology", {"switchSize": 2, "spineSize": 2})
            .occupied("node-3", cpu="4"),
            3,
            ("node-0", "node-1", "node-2"),
            "spine-0",
        ),
    ],
)
def test_a_job_that_fits_starts_now_on_the_nodes_named(
    lahar: Policy,
    trace: TraceBuilder,
    replicas: int,
    nodes: tuple[str, ...],
    hyper_node: str | None,
) -> None:
    answer = _answer(trace, _asked(replicas), lahar)
    assert answer.job == "new"
    assert answer.start is not None and answer.start <= NOW_WITHIN and answer.now
    assert (answer.low, answer.high) == (answer.start, answer.start)
    assert (answer.nodes, answer.hyper_node) == (nodes, hyper_node)
    assert (answer.blockers, answer.victims, answer.delays, answer.reasons) == ((), (), (), ())
    assert not answer.stuck


@pytest.mark.parametrize(
    ("blocker", "expected"),
    [
        # ran 400 s of an estimated 600-1800 (played 1000): it ends 200-1400 s from now
        (
            _running("old", "a", "b", started=-400, duration=1000).run_time(600, 1800),
            Blocker("old", 600, 200, 1400, "annotation"),
        ),
        # pending at the snapshot, first in line: it starts at 0 and runs 300 (150-900)
        (
            make_trace_job("old").task("w", 2, cpu="4", duration=300).run_time(150, 900, "history"),
            Blocker("old", 300, 150, 900, "history"),
        ),
        # ran 500 s, past the low end of 100-800: it may end any moment, 300 s from now at most
        (
            _running("old", "a", "b", started=-500, duration=800).run_time(100, 800, "default"),
            Blocker("old", 300, 0, 300, "default"),
        ),
        # no run time given: the end as played, and nothing around it
        (
            _running("old", "a", "b", started=-100, duration=700),
            Blocker("old", 600, 600, 600, "as played"),
        ),
    ],
)
def test_a_job_waiting_for_a_gang_starts_at_its_end_within_its_run_time(
    lahar: Policy, blocker: TraceJobBuilder, expected: Blocker
) -> None:
    answer = _answer(_two_nodes().job(blocker), _asked(), lahar)
    assert answer.start is not None and not answer.now
    slack = answer.start - expected.ended  # (the scheduling rounds once the nodes are free)
    assert 0 <= slack <= NOW_WITHIN
    assert answer.blockers == (expected,)
    assert (answer.low, answer.high) == (expected.low + slack, expected.high + slack)
    assert answer.nodes == ("a", "b") and not answer.stuck


def test_with_two_gangs_to_wait_for_the_range_is_the_later_ends(lahar: Policy) -> None:
    """x frees a at 600 (200-1400), y frees b at 1900 (1400-2900): the Job needs both."""
    x = _running("x", "a", started=-400, duration=1000).run_time(600, 1800)
    y = _running("y", "b", started=-100, duration=2000).run_time(1500, 3000, "history")
    answer = _answer(_two_nodes().job(x).job(y), _asked(), lahar)
    assert answer.blockers == (
        Blocker("x", 600, 200, 1400, "annotation"),
        Blocker("y", 1900, 1400, 2900, "history"),
    )
    assert answer.start is not None
    slack = answer.start - 1900
    assert 0 <= slack <= NOW_WITHIN
    assert (answer.low, answer.high) == (1400 + slack, 2900 + slack)


def test_a_gang_whose_spare_pod_runs_after_its_start_ends_with_that_pod(lahar: Policy) -> None:
    """p started 60 s ago on its one pod of two (minAvailable 1), estimated 200-400 (played
    300); its spare pod takes a when the first ends (240) and runs its 300: the Job waits for
    540, and p's range moves by what its spare pod added."""
    p = (
        make_trace_job("p")
        .task("w", 2, cpu="4", duration=300)
        .bound("a", None)
        .set(minAvailable=1, started=-60)
        .run_time(200, 400)
    )
    trace = make_trace().nodes(names=["a"], cpu="4").job(p)
    answer = _answer(trace, _asked(replicas=1), lahar)
    assert answer.blockers == (Blocker("p", 540, 440, 640, "annotation"),)
    assert answer.start is not None
    slack = answer.start - 540
    assert 0 <= slack <= NOW_WITHIN
    assert (answer.low, answer.high) == (440 + slack, 640 + slack)


def test_a_gang_sharing_the_node_that_ends_after_the_start_is_no_blocker(lahar: Policy) -> None:
    """a (8 cpu) holds x (4, ends at 200) and y (2, ends at 5000): the Job's 4 fit once x ends."""
    x = _running("x", "a", started=-100, duration=300).run_time(200, 400)
    y = _running("y", "a", started=-10, duration=5000, cpu="2")
    trace = make_trace().nodes(names=["a"], cpu="8").job(x).job(y)
    answer = _answer(trace, _asked(replicas=1), lahar)
    assert answer.blockers == (Blocker("x", 200, 100, 300, "annotation"),)
    assert answer.nodes == ("a",)


def test_a_wait_past_the_last_blockers_end_shifts_the_range_by_it(lahar: Policy) -> None:
    """x frees a at 200, but the Job's queue q (capability 4 cpu) holds z's 2 cpu until 990:
    the Job starts then, and its range is x's, shifted by the 790 s it waited past x's end."""
    x = _running("x", "a", started=-100, duration=300).run_time(200, 400)
    z = _running("z", "c", started=-10, duration=1000, cpu="2").set(queue="q")
    trace = (
        make_trace()
        .nodes(names=["a"], cpu="4")
        .nodes(names=["c"], cpu="2")
        .queue("q", capability={"cpu": "4"})
        .job(x)
        .job(z)
    )
    answer = _answer(trace, _asked(replicas=1, queue="q"), lahar)
    assert answer.blockers == (Blocker("x", 200, 100, 300, "annotation"),)
    assert answer.start is not None and 990 <= answer.start <= 990 + NOW_WITHIN
    slack = answer.start - 200
    assert (answer.low, answer.high) == (100 + slack, 300 + slack)


@pytest.mark.parametrize(
    ("request_", "horizon", "short"),
    [
        ({"replicas": 3}, 24 * 3600, "Insufficient cpu"),  # 3 nodes' worth on 2 nodes
        ({"replicas": 1, "cpu": "6"}, 24 * 3600, "Insufficient cpu"),  # more than a node has
        ({"replicas": 3}, 3600, "Insufficient cpu"),  # an hour is enough to know it
        ({"replicas": 1, "cpu": "6"}, 1800, "Insufficient cpu"),
    ],
)
def test_a_job_too_big_for_the_cluster_would_never_start_and_says_what_is_short(
    lahar: Policy, request_: dict[str, Any], horizon: float, short: str
) -> None:
    answer = _answer(_two_nodes(), _asked(**request_), lahar, horizon=horizon)
    assert (answer.start, answer.low, answer.high, answer.nodes) == (None, None, None, ())
    assert answer.stuck and not answer.now and answer.horizon == horizon
    assert answer.reasons and any(short in reason for reason in answer.reasons)
    assert answer.reasons[0].startswith("gang sim/new: 0 of ")


def test_a_job_too_big_in_memory_names_memory(lahar: Policy) -> None:
    job = make_trace_job("new").task("w", 1, cpu="1", memory="16Gi", duration=600)
    answer = _answer(_two_nodes(), job, lahar)
    assert answer.stuck and any("Insufficient memory" in reason for reason in answer.reasons)


def test_a_job_behind_a_long_gang_does_not_start_within_a_short_horizon(lahar: Policy) -> None:
    """The nodes free at 5000 s; played for 600 s only, the Job has not started, and something
    was still moving: not within the horizon, not never."""
    trace = _two_nodes().job(_running("long", "a", "b", started=-10, duration=5000))
    answer = _answer(trace, _asked(), lahar, horizon=600)
    assert answer.start is None and not answer.stuck and answer.horizon == 600
    assert any("Insufficient cpu" in reason for reason in answer.reasons)
    played_on = _answer(trace, _asked(), lahar, horizon=6000)
    assert played_on.start is not None and 4990 <= played_on.start <= 4990 + NOW_WITHIN


@pytest.mark.parametrize(
    ("preemption", "victims", "starts_now"),
    [(True, ("ml/low",), True), (False, (), False)],
)
def test_a_high_priority_job_evicts_a_low_priority_gang_only_under_a_preempting_policy(
    lahar: Policy, preempting: Policy, preemption: bool, victims: tuple[str, ...], starts_now: bool
) -> None:
    low = _running("low", "a", "b", started=-10, duration=5000).set(namespace="ml")
    answer = _answer(
        _two_nodes().job(low),
        _asked(priority=100, namespace="ml"),
        preempting if preemption else lahar,
    )
    assert answer.job == "ml/new"
    assert answer.victims == victims and answer.knock_on == ()
    assert answer.now is starts_now
    assert [b.job for b in answer.blockers] == ([] if starts_now else ["ml/low"])


def test_an_unpreemptable_gang_is_no_victim(preempting: Policy) -> None:
    low = _running("low", "a", "b", started=-10, duration=5000).set(preemptable=False)
    answer = _answer(_two_nodes().job(low), _asked(priority=100), preempting)
    assert answer.victims == () and not answer.now


def _vip(replicas: int) -> TraceJobBuilder:
    """A gang pending at the snapshot, of priority 100: it may evict gangs of priority 0."""
    return make_trace_job("vip").task("w", replicas, cpu="4", duration=1000).set(priority=100)


@pytest.mark.parametrize(
    ("trace", "knock_on"),
    [
        # without the Job, vip takes b; the Job (priority 200) takes b first: vip evicts low
        (_two_nodes().job(_running("low", "a", started=-10, duration=5000)).job(_vip(1)), ("low",)),
        # vip evicts low (a) without the Job, and low2 (b) as well with it: low2 only is the
        # Job's doing
        (
            make_trace()
            .nodes(names=["a", "b", "c"], cpu="4")
            .job(_running("low", "a", started=-10, duration=5000))
            .job(_running("low2", "b", started=-10, duration=5000))
            .job(_vip(2)),
            ("low2",),
        ),
    ],
)
def test_evictions_the_job_causes_through_others_are_named_but_not_those_made_anyway(
    preempting: Policy, trace: TraceBuilder, knock_on: tuple[str, ...]
) -> None:
    answer = _answer(trace, _asked(replicas=1, priority=200), preempting)
    assert answer.now and answer.victims == ()
    assert answer.knock_on == knock_on


@pytest.mark.parametrize(
    ("horizon", "delays"),
    [
        # the waiting gang needs both nodes: a frees at 200; with the Job on b until 600, it
        # waits for b too
        (24 * 3600, (Delay("wait", 200, 600),)),
        (500, (Delay("wait", 200, None),)),  # no longer within the horizon
    ],
)
def test_a_gang_pending_at_the_snapshot_that_the_job_delays_is_named(
    lahar: Policy, horizon: float, delays: tuple[Delay, ...]
) -> None:
    x = _running("x", "a", started=-100, duration=300).run_time(200, 400)
    waiting = make_trace_job("wait").task("w", 2, cpu="4", duration=600)
    answer = _answer(_two_nodes().job(x).job(waiting), _asked(replicas=1), lahar, horizon=horizon)
    assert answer.now and answer.nodes == ("b",)
    assert answer.delays == delays


def test_a_pending_gang_the_job_does_not_move_is_not_a_delay(lahar: Policy) -> None:
    """The waiting gang takes b at once; the Job waits for a."""
    x = _running("x", "a", started=-100, duration=300).run_time(200, 400)
    waiting = make_trace_job("wait").task("w", 1, cpu="4", duration=600)
    answer = _answer(_two_nodes().job(x).job(waiting), _asked(replicas=1), lahar)
    assert answer.delays == ()
    assert [b.job for b in answer.blockers] == ["x"] and answer.nodes == ("a",)


@pytest.mark.parametrize(
    ("namespace", "refused"),
    [("sim", True), ("ml", False)],  # (its name, in another namespace, is another job)
)
def test_a_job_already_in_the_snapshot_is_refused(
    lahar: Policy, namespace: str, refused: bool
) -> None:
    trace = _two_nodes().job(_running("new", "a", started=-10, duration=100))
    job = _asked(replicas=1, namespace=namespace)
    if refused:
        with pytest.raises(ValueError, match="a Job sim/new exists already"):
            _answer(trace, job, lahar)
    else:
        assert _answer(trace, job, lahar).job == "ml/new"


def test_a_job_whose_pod_names_another_gang_has_is_refused(lahar: Policy) -> None:
    """The job asked about makes `new-w-0`; a running gang has a pod of that name."""
    pods = [{"name": "new-w-0", "node": "a"}]
    other = make_trace_job("other").task("x", 1, cpu="1", duration=60, pods=pods)
    clash = _two_nodes().job(other.set(started=-10))
    with pytest.raises(ValueError, match="the Job would make pod sim/new-w-0, which exists"):
        _answer(clash, _asked(replicas=1), lahar)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"networkTopology": {"mode": "hard", "highestTierName": "switch"}},
            "the Job: jobs.0.networkTopology: the trace has no topology to stay within",
        ),
        (
            {"queue": "nope"},
            "the Job: jobs.0.queue: queue 'nope' is not in queues (known: default)",
        ),
    ],
)
def test_a_job_the_snapshot_cannot_hold_is_refused_naming_the_field(
    lahar: Policy, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _answer(_two_nodes(), _asked(replicas=1, **fields), lahar)
