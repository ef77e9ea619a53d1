"""An autoscaled pool: the trace's `autoscaling` is checked like the rest, and what must hold of
every run on small traces (the pool's bounds, scale-down, gangs bound whole under Lahar's policy
in both scale-up modes, the stock way's pods of gangs not started on bought nodes), checked over
each run's own record rather than figures written down."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from extender.api.scale_up import Mode
from extender.cli import simulate_cmd
from extender.cli.main import main
from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY
from extender.simulate import html, world
from extender.simulate.autoscaler import SCAN_INTERVAL
from extender.simulate.defaults import stock_policy, story_trace
from extender.simulate.node_hours import node_counts
from extender.simulate.run import SimulationOutcome, simulate
from extender.simulate.side_by_side import play
from extender.simulate.summary import summarize
from extender.simulate.trace import Trace, TraceError, parse_trace

POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"
POOL = {"nodes": {"cpu": "8", "memory": "32Gi"}, "maxNodes": 4, "provisioningDelay": 120}


def _job(name: str, pods: int, cpu: str, seconds: float, arrival: float = 0) -> dict[str, Any]:
    task = {"name": "worker", "replicas": pods, "cpu": cpu, "memory": "1Gi", "duration": seconds}
    return {"name": name, "arrival": arrival, "tasks": [task]}


def _trace(pool: dict[str, Any] | None, jobs: list[dict[str, Any]], nodes: int = 1) -> Trace:
    return parse_trace(
        {
            "nodes": [{"count": nodes, "cpu": "8", "memory": "32Gi"}],
            "autoscaling": pool,
            "jobs": jobs,
        }
    )


# -- the trace -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool", "extra", "message"),
    [
        (
            {**POOL, "maxNodes": 0},
            {},
            "autoscaling.maxNodes: Input should be greater than or equal",
        ),
        ({**POOL, "provisioningDelay": -1}, {}, "autoscaling.provisioningDelay: Input should be"),
        ({**POOL, "scaleDownAfter": 0}, {}, "autoscaling.scaleDownAfter: Input should be greater"),
        ({k: v for k, v in POOL.items() if k != "maxNodes"}, {}, "autoscaling.maxNodes: Field"),
        ({**POOL, "maxNode": 3}, {}, "autoscaling.maxNode: Extra inputs are not permitted"),
        ({**POOL, "nodes": {"cpu": "0", "memory": "1Gi"}}, {}, "autoscaling.nodes: cpu: a node"),
        (
            {**POOL, "nodes": {"cpu": "-1", "memory": "1Gi"}},
            {},
            "autoscaling.nodes.cpu: must not be negative",
        ),
        ({**POOL, "name": "Big"}, {}, "autoscaling.name: String should match pattern"),
        ({**POOL, "name": "node"}, {}, "autoscaling.name: 'node' is the name of a node group"),
        (POOL, {"topology": {"switchSize": 2}}, "autoscaling: a trace with a topology cannot"),
    ],
)
def test_a_broken_pool_names_the_field(
    pool: dict[str, Any], extra: dict[str, Any], message: str
) -> None:
    document = {
        "nodes": [{"count": 2, "cpu": "8", "memory": "32Gi"}],
        "autoscaling": pool,
        "jobs": [_job("a", 2, "1", 60)],
        **extra,
    }
    with pytest.raises(TraceError, match=re.escape(message)):
        parse_trace(document)


def test_a_pool_defaults_its_name_and_scale_down() -> None:
    trace = _trace(POOL, [_job("a", 2, "1", 60)])
    assert trace.autoscaling is not None
    assert trace.autoscaling.name == "scaled"
    assert trace.autoscaling.scale_down_after == 600
    assert _trace(None, [_job("a", 2, "1", 60)]).autoscaling is None


def test_a_run_gives_every_queue_its_scale_up_mode() -> None:
    trace = parse_trace(
        {
            "nodes": [{"count": 1, "cpu": "8", "memory": "32Gi"}],
            "queues": [{"name": "ml"}, {"name": "team", "parent": "ml"}],
        }
    )
    made = world.queues(trace, Mode.UNSCHEDULABLE)
    assert {q.metadata.name for q in made} == {"ml", "team", "default"}
    assert {q.metadata.annotations["lahar.io/scale-up"] for q in made} == {"unschedulable"}
    assert all(not q.metadata.annotations for q in world.queues(trace))


# -- what must hold of every run -----------------------------------------------------------------

# Gangs of several sizes on one 8-cpu node that must grow; the pool can hold the largest gang.
GROWING = _trace(
    {**POOL, "maxNodes": 4, "scaleDownAfter": 300},
    [
        _job("a", 4, "2", 600),
        _job("b", 8, "2", 900),
        _job("c", 6, "2", 300, arrival=60),
        _job("d", 2, "2", 300, arrival=90),
        _job("e", 12, "2", 600, arrival=1200),
        _job("f", 4, "2", 300, arrival=1210),
    ],
)
# The story on a pool: two gangs of 11 cpu on one 8-cpu node that may grow by one, which holds one
# gang at a time, never both.
STORY = _trace(
    {**POOL, "maxNodes": 1},
    [
        {
            "name": name,
            "minAvailable": 6,
            "tasks": [
                {"name": "ps", "replicas": 1, "cpu": "1", "memory": "1Gi", "duration": 600},
                {"name": "worker", "replicas": 5, "cpu": "2", "memory": "2Gi", "duration": 600},
            ],
        }
        for name in ("tf-a", "tf-b")
    ],
)
TRACES = {"growing": GROWING, "story": STORY}
STORY_WITHOUT_POOL = story_trace()
RUNS = {
    "lahar-atomic": Mode.PROVISIONING_REQUEST,
    "lahar-unschedulable": Mode.UNSCHEDULABLE,
    "stock": None,
}


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], SimulationOutcome]:
    lahar = load_policy(POLICY, REGISTRY)
    played = {}
    for label, trace in TRACES.items():
        for run, mode in RUNS.items():
            policy: Policy = stock_policy() if mode is None else lahar
            played[label, run] = simulate(trace, policy, run, scale_up=mode)
    return played


CASES = [(trace, run) for trace in TRACES for run in RUNS]


@pytest.mark.parametrize(("trace", "run"), CASES)
def test_the_pool_stays_within_its_bounds(
    outcomes: dict[tuple[str, str], SimulationOutcome], trace: str, run: str
) -> None:
    """Never more than the starting nodes and maxNodes at once, never fewer than the starting
    nodes; pods only on nodes that were there, an added one between joining and removal."""
    outcome = outcomes[trace, run]
    pool, autoscaling = outcome.pool, TRACES[trace].autoscaling
    assert pool is not None and autoscaling is not None
    _, billed, joined = node_counts(outcome)
    assert max(billed) <= pool.starting + autoscaling.max_nodes
    assert min(joined) >= pool.starting
    assert all(j <= b for j, b in zip(joined, billed, strict=True))
    added = {node.name: node for node in pool.nodes}
    starting = set(TRACES[trace].node_names)
    for interval in outcome.intervals:
        if interval.node in starting:
            continue
        node = added[interval.node]
        end = interval.end if interval.end is not None else outcome.end
        assert node.joined <= interval.start <= end <= node.removed


@pytest.mark.parametrize(("trace", "run"), CASES)
def test_an_added_node_goes_once_it_had_no_pod_for_scale_down_after(
    outcomes: dict[tuple[str, str], SimulationOutcome], trace: str, run: str
) -> None:
    """Removed no sooner than scaleDownAfter after it last held a pod (or joined), and no later
    than the autoscaler's next look after that: no node sits empty longer."""
    outcome = outcomes[trace, run]
    assert outcome.pool is not None
    wait = outcome.pool.scale_down_after
    on_node = defaultdict(list)
    for interval in outcome.intervals:
        end = interval.end if interval.end is not None else math.inf
        on_node[interval.node].append((interval.start, end))
    for node in outcome.pool.nodes:
        spans = sorted(on_node[node.name])
        if any(end == math.inf for _, end in spans):
            assert node.removed == outcome.end  # (pods left on it: counted to the run's end)
            continue
        free_since = node.joined
        for start, end in spans:
            assert start - free_since <= wait + SCAN_INTERVAL
            free_since = max(free_since, end)
        assert wait <= node.removed - free_since <= wait + SCAN_INTERVAL


@pytest.mark.parametrize("trace", list(TRACES))
@pytest.mark.parametrize("run", ["lahar-atomic", "lahar-unschedulable"])
def test_lahar_finishes_every_gang_and_binds_none_in_part(
    outcomes: dict[tuple[str, str], SimulationOutcome], trace: str, run: str
) -> None:
    """In both modes every gang finishes (the pool holds the largest), and no bought node ever
    holds a pod of a gang not started: the bind barrier binds gangs whole."""
    outcome = outcomes[trace, run]
    summary = summarize(outcome)
    assert outcome.stuck == []
    assert summary.partial_gangs == 0
    assert summary.pool is not None
    assert summary.pool.taken == 0
    assert summary.pool.added > 0  # (the pool had to grow)


@pytest.mark.parametrize("trace", list(TRACES))
def test_atomic_requests_buy_for_one_gang_at_a_time_and_only_for_a_gang(
    outcomes: dict[tuple[str, str], SimulationOutcome], trace: str
) -> None:
    """Each node an atomic request buys is for its one gang, a gang that waited for nodes at
    the time (arrived, not started); no node is bought pod by pod."""
    outcome = outcomes[trace, "lahar-atomic"]
    assert outcome.pool is not None
    assert outcome.pool.requests > 0
    for node in outcome.pool.nodes:
        assert len(node.jobs) == 1
        waits = outcome.jobs[node.jobs[0]].waits
        assert any(
            w.since <= node.bought and (w.until is None or node.bought <= w.until) for w in waits
        )


def test_the_stock_way_leaves_bought_nodes_to_gangs_that_cannot_start(
    outcomes: dict[tuple[str, str], SimulationOutcome],
) -> None:
    """On the story the stock way places part of each gang, buys the node the pool allows, and
    both gangs wait for ever on it; Lahar's modes finish both and idle far less."""
    stock = summarize(outcomes["story", "stock"])
    assert stock.finished == 0
    assert stock.pool is not None
    assert stock.pool.taken > 0
    for run in ("lahar-atomic", "lahar-unschedulable"):
        lahar = summarize(outcomes["story", run])
        assert lahar.pool is not None
        assert lahar.pool.idle_waiting < stock.pool.idle_waiting / 10


@pytest.mark.parametrize(("trace", "run"), CASES)
def test_idle_waiting_is_part_of_what_was_bought(
    outcomes: dict[tuple[str, str], SimulationOutcome], trace: str, run: str
) -> None:
    outcome = outcomes[trace, run]
    figures = summarize(outcome).pool
    assert figures is not None and outcome.pool is not None
    assert 0 <= figures.idle_waiting <= figures.bought
    assert figures.added == len(outcome.pool.nodes)
    assert figures.peak <= figures.starting + figures.max_nodes


def test_side_by_side_gives_each_run_its_mode() -> None:
    """Played in worker processes, each run gets its own mode: the same outcome as in turn."""
    lahar = load_policy(POLICY, REGISTRY)
    runs = [("lahar-atomic", lahar), ("lahar-unschedulable", lahar), ("stock", stock_policy())]
    modes = {name: mode for name, mode in RUNS.items() if mode is not None}
    apart = play(GROWING, runs, workers=3, modes=modes)
    alone = play(GROWING, runs, workers=1, modes=modes)
    for one, other in zip(apart, alone, strict=True):
        assert one.pool == other.pool
        assert one.intervals == other.intervals
    assert apart[0].pool is not None and apart[0].pool.requests > 0
    assert apart[1].pool is not None and apart[1].pool.requests == 0


def test_the_report_shows_the_pool(
    outcomes: dict[tuple[str, str], SimulationOutcome], tmp_path: Path
) -> None:
    chosen = [outcomes["growing", run] for run in RUNS]
    page = html.write(tmp_path / "pool.html", chosen, [summarize(o) for o in chosen]).read_text()
    assert "<h2>The autoscaled pool</h2>" in page
    assert "<h2>Nodes in the autoscaled pool over time</h2>" in page
    assert "<td>lahar-unschedulable</td>" in page
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 4


def test_lahar_simulate_plays_each_mode_and_prints_what_the_pool_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a trace with a pool, Lahar's policy is played once per mode that buys nodes, beside the
    stock way, and a second table gives each run's node-hours."""
    trace = tmp_path / "pool.yaml"
    trace.write_text(
        "nodes: [{count: 1, cpu: '8', memory: 32Gi}]\n"
        "autoscaling: {nodes: {cpu: '8', memory: 32Gi}, maxNodes: 2, provisioningDelay: 60}\n"
        "jobs:\n"
        "  - {name: a, tasks: [{name: w, replicas: 8, cpu: '2', memory: 1Gi, duration: 600}]}\n"
        "  - {name: b, arrival: 30, tasks: [{name: w, replicas: 2, cpu: '2', memory: 1Gi, "
        "duration: 300}]}\n"
    )
    lahar = load_policy(POLICY, REGISTRY)
    runs, modes = simulate_cmd._runs([("lahar", lahar), ("stock", stock_policy())], GROWING)
    assert [name for name, _ in runs] == ["lahar-atomic", "lahar-unschedulable", "stock"]
    assert modes == {
        "lahar-atomic": Mode.PROVISIONING_REQUEST,
        "lahar-unschedulable": Mode.UNSCHEDULABLE,
    }
    assert simulate_cmd._runs([("lahar", lahar)], STORY_WITHOUT_POOL) == ([("lahar", lahar)], {})
    assert main(["simulate", str(trace)]) == 0
    runs_table, pool_table, *_ = capsys.readouterr().out.split("\n\n")
    assert [line.split()[0] for line in runs_table.splitlines()[1:]] == list(RUNS)
    lines = pool_table.splitlines()
    assert lines[0].split()[:3] == ["POLICY", "NODE-HOURS", "IDLE"]
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert list(rows) == list(RUNS)
    assert all(row[-4] == "2/2" for row in rows.values())  # DONE
    assert rows["lahar-atomic"][6] != "-"  # (requests made)
    assert rows["stock"][6] == "-"
    assert lines[4].startswith("The pool: 1 starting nodes, up to 2 added.")


DIGEST = """
import hashlib, sys
from pathlib import Path
from extender.framework.policy import load_policy
from extender.api.scale_up import Mode
from extender.plugins import REGISTRY
from extender.simulate.run import simulate
from extender.simulate.trace import load_trace
outcome = simulate(
    load_trace(Path(sys.argv[1])),
    load_policy(Path(sys.argv[2]), REGISTRY),
    "lahar-atomic",
    scale_up=Mode.PROVISIONING_REQUEST,
)
placed = [(i.pod, i.node, i.start, i.end) for i in outcome.intervals]
print(hashlib.sha256(repr((placed, outcome.pool)).encode()).hexdigest())
"""


def test_a_run_does_not_hang_on_string_hashing() -> None:
    """The bundled trace played under two hash seeds places every pod alike and buys alike (a
    job's members' ends, due at one moment, once followed a set's order)."""
    trace = Path(__file__).resolve().parents[3] / "examples" / "trace-autoscaling.yaml"
    digests = {
        subprocess.run(
            [sys.executable, "-c", DIGEST, str(trace), str(POLICY)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("0", "2")
    }
    assert len(digests) == 1
