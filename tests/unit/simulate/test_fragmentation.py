"""The gangs' placement in the network, on placements made by hand: which gangs count as spread
and which hard ones as placed beyond their tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.simulate.defaults import stock_policy
from extender.simulate.fragmentation import Fragmentation, fragmentation
from extender.simulate.report import topology_table
from extender.simulate.run import Interval, SimulatedJob, SimulationOutcome, simulate
from extender.simulate.summary import summarize
from extender.simulate.synthetic import generate
from extender.simulate.trace import Trace, parse_trace

# 8 nodes: switch-0 node-0/1, switch-1 node-2/3, ... ; spine-0 switches 0-1, spine-1 switches 2-3.
TOPOLOGY = {"switchSize": 2, "spineSize": 2}
HARD_SWITCH = {"mode": "hard", "highestTierName": "switch"}


def _task(replicas: int, **extra: Any) -> dict[str, Any]:
    task = {"name": "w", "replicas": replicas, "cpu": "1", "memory": "1Gi", "duration": 10}
    return task | extra


JOBS: dict[str, dict[str, Any]] = {
    "hard": {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}, "tasks": [_task(2)]},
    "soft": {"networkTopology": {"mode": "soft", "highestTierAllowed": 1}, "tasks": [_task(2)]},
    "plain": {"tasks": [_task(2)]},
    "one": {"tasks": [_task(1)]},
    "parts": {  # two partitions of 2, each within a switch, the whole within a spine
        "networkTopology": {"mode": "hard", "highestTierName": "spine"},
        "tasks": [
            _task(
                4,
                partitionPolicy={
                    "totalPartitions": 2,
                    "partitionSize": 2,
                    "networkTopology": HARD_SWITCH,
                },
            )
        ],
    },
}


def _trace(topology: dict[str, Any] | None = TOPOLOGY) -> Trace:
    document: dict[str, Any] = {
        "nodes": [{"count": 8, "cpu": "8", "memory": "8Gi"}],
        "jobs": [{"name": name, **job} for name, job in JOBS.items()],
    }
    if topology is not None:
        document["topology"] = topology
    return parse_trace(document)


def _outcome(placed: dict[str, list[int]], trace: Trace | None = None) -> SimulationOutcome:
    """Each job's pods (w-0, w-1...) on the nodes numbered; `job@1`: its first restart's."""
    trace = trace or _trace()
    jobs = {job.name: SimulatedJob(job, arrived=0.0) for job in trace.jobs}
    intervals = []
    for key, nodes in placed.items():
        job, _, incarnation = key.partition("@")
        for index, node in enumerate(nodes):
            intervals.append(
                Interval(
                    f"node-{node}",
                    job,
                    "default",
                    int(incarnation or 0),
                    1000,
                    0.0,
                    pod=f"{job}-w-{index}",
                )
            )
    return SimulationOutcome("p", trace, jobs, intervals, 0, 100.0, 0, 0.0)


TIGHT = {"hard": [0, 1], "soft": [2, 3], "plain": [4, 5], "one": [6], "parts": [0, 1, 2, 3]}


@pytest.mark.parametrize(
    ("placed", "expected"),
    [
        ({}, Fragmentation(0, 0, 0, 0, 0, 0)),
        # Every gang within a switch, each partition within one: nothing spread (a partitioned
        # job's two switches under one spine count as spread, not beyond).
        (TIGHT, Fragmentation(4, 1, 3, 1, 2, 0)),
        # The hard job over two switches: spread and beyond; the soft and the plain ones over two
        # spines: spread only; the single pod is no gang.
        (
            TIGHT | {"hard": [1, 2], "soft": [0, 7], "plain": [3, 4]},
            Fragmentation(4, 4, 3, 3, 2, 1),
        ),
        # A partition across two switches breaks its tier, though the job stays in its spine.
        (TIGHT | {"parts": [0, 2, 3, 3]}, Fragmentation(4, 1, 3, 1, 2, 1)),
        # The whole partitioned job across spines breaks the job's tier.
        (TIGHT | {"parts": [0, 1, 4, 5]}, Fragmentation(4, 1, 3, 1, 2, 1)),
        # A restart placed apart counts, though the first placement kept together.
        (TIGHT | {"hard@1": [0, 3]}, Fragmentation(4, 2, 3, 2, 2, 1)),
    ],
)
def test_spread_and_beyond_count_gangs_by_where_their_pods_were(
    placed: dict[str, list[int]], expected: Fragmentation
) -> None:
    assert fragmentation(_outcome(placed)) == expected


def _plain(topology: dict[str, Any] | None) -> Trace:
    document: dict[str, Any] = {
        "nodes": [{"count": 8, "cpu": "8", "memory": "8Gi"}],
        "jobs": [{"name": "plain", **JOBS["plain"]}],
    }
    return parse_trace(document | ({"topology": topology} if topology else {}))


def test_a_node_under_no_hyper_node_is_a_place_apart() -> None:
    trace = _plain({"hyperNodes": [{"name": "s", "tier": 1, "nodes": ["node-0", "node-1"]}]})
    together, apart = _outcome({"plain": [0, 1]}, trace), _outcome({"plain": [6, 7]}, trace)
    assert fragmentation(together) == Fragmentation(1, 0, 0, 0, 0, 0)
    assert fragmentation(apart) == Fragmentation(1, 1, 0, 0, 0, 0)


def test_without_a_topology_there_are_no_figures_and_no_table() -> None:
    summary = summarize(_outcome({"plain": [0, 1]}, _plain(None)))
    assert summary.fragmentation is None
    assert topology_table([summary])[1] == []


def test_the_table_gives_the_share_of_the_gangs_asking_that_were_spread() -> None:
    summary = summarize(_outcome(TIGHT | {"hard": [1, 2], "soft": [0, 7]}))
    assert topology_table([summary])[1] == [("p", "4", "3", "3", "3 (100%)", "2", "1")]


POLICY = Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml"


def _switch_of(trace: Trace) -> dict[str, str]:
    return {node: h.name for h in trace.hyper_nodes if h.tier == 1 for node in h.nodes}


def test_lahar_keeps_each_hard_gang_within_one_switch_where_the_stock_way_spreads_them() -> None:
    """A short synthetic trace on 16 nodes in 4 switches: every placement of a gang that asks
    hard for a switch is on one switch under Lahar's policy, and each hard partition too."""
    trace = parse_trace(generate(40, 16, topology=True, seed=2))
    lahar = simulate(trace, load_policy(POLICY, REGISTRY), "lahar")
    switch = _switch_of(trace)
    hard = {
        job.name
        for job in trace.jobs
        if job.network_topology is not None
        and job.network_topology.mode == "hard"
        and job.network_topology.highest_tier_name == "switch"
    }
    placements: dict[tuple[str, int], set[str]] = {}
    for interval in lahar.intervals:
        if interval.job in hard:
            placements.setdefault((interval.job, interval.incarnation), set()).add(interval.node)
    assert len({job for job, _ in placements}) >= 5
    assert all(len({switch[node] for node in nodes}) == 1 for nodes in placements.values())
    figures = fragmentation(lahar)
    assert figures is not None and figures.hard > 5 and figures.beyond == 0
    stock = fragmentation(simulate(trace, stock_policy(), "stock"))
    assert stock is not None and stock.beyond > 0
