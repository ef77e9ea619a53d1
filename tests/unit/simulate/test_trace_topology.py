"""A trace's network topology: switches and spines over the nodes, or HyperNodes listed; jobs and
partitions that ask to stay within a tier; the HyperNodes, PodGroups and pods made of them; a
broken topology names the field and why."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api.batch import PARTITION_KEY, TASK_SPEC_KEY
from extender.simulate import world
from extender.simulate.trace import Trace, TraceError, parse_trace


def _task(replicas: int = 4, **extra: Any) -> dict[str, Any]:
    task = {"name": "worker", "replicas": replicas, "cpu": "1", "memory": "1Gi", "duration": 60}
    return task | extra


def _job(name: str = "tf", **extra: Any) -> dict[str, Any]:
    return {"name": name, "tasks": [_task()]} | extra


def _trace(topology: dict[str, Any] | None, *jobs: dict[str, Any], nodes: int = 10) -> Trace:
    document: dict[str, Any] = {
        "nodes": [{"count": nodes, "cpu": "16", "memory": "64Gi"}],
        "jobs": list(jobs) or [_job()],
    }
    if topology is not None:
        document["topology"] = topology
    return parse_trace(document)


def _members(trace: Trace) -> dict[str, tuple[int, tuple[str, ...]]]:
    return {h.name: (h.tier, h.nodes + h.hyper_nodes) for h in trace.hyper_nodes}


SWITCHES = {"switchSize": 4, "spineSize": 2}
LISTED = {
    "hyperNodes": [
        {"name": "top", "tier": 2, "tierName": "spine", "hyperNodes": ["a", "b"]},
        {"name": "a", "tier": 1, "tierName": "leaf", "nodes": ["node-0", "node-1"]},
        {"name": "b", "tier": 1, "nodes": ["node-2"]},
    ]
}


@pytest.mark.parametrize(
    ("topology", "members"),
    [
        (None, {}),
        (
            SWITCHES,
            {
                "switch-0": (1, ("node-0", "node-1", "node-2", "node-3")),
                "switch-1": (1, ("node-4", "node-5", "node-6", "node-7")),
                "switch-2": (1, ("node-8", "node-9")),  # (the last block: what is left)
                "spine-0": (2, ("switch-0", "switch-1")),
                "spine-1": (2, ("switch-2",)),
            },
        ),
        (
            {"switchSize": 5},
            {
                "switch-0": (1, tuple(f"node-{i}" for i in range(5))),
                "switch-1": (1, tuple(f"node-{i}" for i in range(5, 10))),
            },
        ),
        (
            LISTED,
            {"a": (1, ("node-0", "node-1")), "b": (1, ("node-2",)), "top": (2, ("a", "b"))},
        ),
    ],
)
def test_the_topology_is_switches_and_spines_or_the_hyper_nodes_listed(
    topology: dict[str, Any] | None, members: dict[str, tuple[int, tuple[str, ...]]]
) -> None:
    assert _members(_trace(topology)) == members


def test_the_simulated_hyper_nodes_name_their_members_exactly() -> None:
    made = {h.name: h for h in world.hyper_nodes(_trace(SWITCHES))}
    spine = made["spine-1"].spec
    assert (spine.tier, spine.tier_name) == (2, "spine")
    assert [
        (m.type, m.selector.exact_match and m.selector.exact_match.name)
        for m in spine.members or []
    ] == [("HyperNode", "switch-2")]
    assert made["switch-2"].spec.members is not None
    assert [m.type for m in made["switch-2"].spec.members] == ["Node", "Node"]


def test_a_job_and_its_partitions_ask_for_a_tier_in_the_pod_group_and_the_pod_labels() -> None:
    partitioned = _task(
        8,
        partitionPolicy={
            "totalPartitions": 2,
            "partitionSize": 4,
            "networkTopology": {"mode": "hard", "highestTierName": "switch"},
        },
    )
    job = _job(
        networkTopology={"mode": "soft", "highestTierAllowed": 2},
        tasks=[{**_task(1), "name": "ps"}, partitioned],
    )
    trace = _trace(SWITCHES, job)
    spec = world.pod_group(trace.jobs[0]).spec
    assert spec.network_topology is not None
    assert (spec.network_topology.mode, spec.network_topology.highest_tier_allowed) == ("soft", 2)
    assert spec.sub_group_policy is not None
    (group,) = spec.sub_group_policy
    assert (group.name, group.sub_group_size, group.match_label_keys) == (
        "worker",
        4,
        [PARTITION_KEY],
    )
    assert group.label_selector == {"matchLabels": {TASK_SPEC_KEY: "worker"}}
    assert group.network_topology is not None
    assert group.network_topology.highest_tier_name == "switch"
    labels = {p.metadata.name: p.metadata.labels for p in world.pods(trace.jobs[0])}
    assert labels["tf-ps-0"] == {}
    assert labels["tf-worker-3"] == {TASK_SPEC_KEY: "worker", PARTITION_KEY: "0"}
    assert labels["tf-worker-4"] == {TASK_SPEC_KEY: "worker", PARTITION_KEY: "1"}


def test_a_plain_job_makes_the_pod_group_it_did() -> None:
    spec = world.pod_group(_trace(SWITCHES).jobs[0]).spec
    assert spec.network_topology is None and spec.sub_group_policy is None


HARD_1 = {"mode": "hard", "highestTierAllowed": 1}


@pytest.mark.parametrize(
    ("topology", "job", "message"),
    [
        ({}, _job(), "topology: give switchSize (and spineSize) or hyperNodes"),
        ({"spineSize": 2, "hyperNodes": LISTED["hyperNodes"]}, _job(), "it needs switchSize"),
        ({"switchSize": 2, **LISTED}, _job(), "or hyperNodes, not both"),
        ({"switchSize": 0}, _job(), "topology.switchSize: Input should be greater than"),
        ({"switchSize": 2, "racks": 3}, _job(), "topology.racks: Extra inputs"),
        (
            {"hyperNodes": [{"name": "a", "tier": 1}]},
            _job(),
            "topology.hyperNodes.0: a HyperNode needs members",
        ),
        (
            {"hyperNodes": [{"name": "a", "tier": 0, "nodes": ["node-0"]}]},
            _job(),
            "topology.hyperNodes.0.tier: Input should be greater than or equal to 1",
        ),
        (
            {"hyperNodes": [{"name": "a", "tier": 1, "nodes": ["node-0", "gpu-3"]}]},
            _job(),
            "topology.hyperNodes.0.nodes.1: 'gpu-3' is not a node of the trace",
        ),
        (
            {"hyperNodes": [{"name": "top", "tier": 2, "hyperNodes": ["x"]}]},
            _job(),
            "topology.hyperNodes.0.hyperNodes.0: 'x' is not a listed HyperNode",
        ),
        (
            {
                "hyperNodes": [
                    {"name": "a", "tier": 2, "nodes": ["node-0"]},
                    {"name": "b", "tier": 2, "hyperNodes": ["a"]},
                ]
            },
            _job(),
            "topology.hyperNodes.1.hyperNodes.0: a is of tier 2, not below b's tier 2",
        ),
        (
            {
                "hyperNodes": [
                    {"name": "a", "tier": 1, "nodes": ["node-0"]},
                    {"name": "b", "tier": 1, "nodes": ["node-1", "node-0"]},
                ]
            },
            _job(),
            "topology.hyperNodes.1.nodes.1: node-0 is a member of a already",
        ),
        (
            {"hyperNodes": [LISTED["hyperNodes"][1], LISTED["hyperNodes"][1]]},
            _job(),
            "topology.hyperNodes.1.name: 'a' is the name of another HyperNode",
        ),
        (
            {"hyperNodes": [{"name": "node-1", "tier": 1, "nodes": ["node-0"]}]},
            _job(),
            "topology.hyperNodes.0.name: 'node-1' is the name of a node",
        ),
        (
            {
                "hyperNodes": [
                    {"name": "a", "tier": 1, "tierName": "leaf", "nodes": ["node-0"]},
                    {"name": "b", "tier": 1, "tierName": "rack", "nodes": ["node-1"]},
                ]
            },
            _job(),
            "topology.hyperNodes.1.tierName: tier 1 is named 'leaf' already, not 'rack'",
        ),
        (
            None,
            _job(networkTopology=HARD_1),
            "jobs.0.networkTopology: the trace has no topology to stay within",
        ),
        (
            SWITCHES,
            _job(networkTopology={"mode": "hard"}),
            "jobs.0.networkTopology: needs highestTierAllowed or highestTierName",
        ),
        (
            SWITCHES,
            _job(networkTopology={"highestTierAllowed": 1, "highestTierName": "switch"}),
            "jobs.0.networkTopology: give highestTierAllowed or highestTierName, not both",
        ),
        (
            SWITCHES,
            _job(networkTopology={"mode": "strict", "highestTierAllowed": 1}),
            "jobs.0.networkTopology.mode: Input should be 'hard' or 'soft'",
        ),
        (
            SWITCHES,
            _job(networkTopology={"highestTierName": "rack"}),
            "jobs.0.networkTopology.highestTierName: no HyperNode has tier 'rack' "
            "(known: spine, switch)",
        ),
        (
            SWITCHES,
            _job(tasks=[_task(partitionPolicy={"totalPartitions": 3, "partitionSize": 2})]),
            "jobs.0.tasks.0: partitionPolicy: totalPartitions * partitionSize is 3 * 2 = 6, "
            "not the task's 4 replicas",
        ),
        (
            None,
            _job(
                tasks=[
                    _task(
                        partitionPolicy={
                            "totalPartitions": 2,
                            "partitionSize": 2,
                            "networkTopology": HARD_1,
                        }
                    )
                ]
            ),
            "jobs.0.tasks.0.partitionPolicy.networkTopology: the trace has no topology",
        ),
    ],
)
def test_a_broken_topology_names_the_field(
    topology: dict[str, Any] | None, job: dict[str, Any], message: str
) -> None:
    with pytest.raises(TraceError, match=r"^trace: ") as error:
        _trace(topology, job)
    assert message in str(error.value)
