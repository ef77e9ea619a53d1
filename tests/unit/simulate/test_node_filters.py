"""The simulated kube-scheduler's in-tree filters: a cordoned node takes no pod, a tainted node
only pods that tolerate its taint, a pod with a node selector or a required node affinity only
the nodes it names; on nodes without labels, taints or cordons every pod is asked about every
node, from one list kept until a node joins."""

from __future__ import annotations

from typing import Any

import pytest

from extender.framework.engine import Engine
from extender.framework.policy import Policy
from extender.simulate.defaults import stock_policy
from extender.simulate.run import simulate
from extender.simulate.scheduler import Scheduler
from tests.builders import PodBuilder, cluster, make_node, make_pod, make_trace, make_trace_job

GPU = {"key": "gpu", "effect": "NoSchedule"}
EXISTS = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
IN_GPU = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
            ]
        }
    }
}


async def _never(namespace: str, name: str, uid: str, node: str) -> None:
    raise AssertionError("nothing binds here")


def _scheduler() -> Scheduler:
    state = cluster(
        [
            make_node("plain"),
            make_node("cordoned").cordoned(),
            make_node("gpu").label("pool", "gpu"),
            make_node("tainted").label("pool", "gpu").taint("gpu"),
        ]
    )
    return Scheduler(state, Engine(stock_policy()), _never)


@pytest.mark.parametrize(
    ("pod", "nodes"),
    [
        (make_pod("p"), {"plain", "gpu"}),
        (make_pod("p").tolerate("gpu", ""), {"plain", "gpu", "tainted"}),  # (its value is "")
        (make_pod("p").tolerate("gpu", "x"), {"plain", "gpu"}),  # (another value)
        (make_pod("p").node_selector("pool", "gpu"), {"gpu"}),
        (make_pod("p").requires("pool", "In", "gpu"), {"gpu"}),
        (make_pod("p").requires("pool", "NotIn", "gpu"), {"plain"}),
        (make_pod("p").tolerate_any("gpu"), {"plain", "gpu", "tainted"}),
        (make_pod("p").tolerate_any("gpu").node_selector("pool", "gpu"), {"gpu", "tainted"}),
        (make_pod("p").tolerate_any("gpu", "NoExecute"), {"plain", "gpu"}),
    ],
)
def test_the_pods_asked_about_nodes_the_in_tree_filters_pass(
    pod: PodBuilder, nodes: set[str]
) -> None:
    scheduler = _scheduler()
    model = pod.cpu("1").uid("p").model()
    scheduler.state.upsert_pod(model)
    assert set(scheduler._all_nodes(model).names) == nodes
    assert scheduler.choices(model) <= nodes


def test_plain_pods_share_one_list_others_each_their_own_until_a_node_joins() -> None:
    scheduler = _scheduler()
    first, second = make_pod("a").uid("a").model(), make_pod("b").uid("b").model()
    assert scheduler._all_nodes(first) is scheduler._all_nodes(second)
    picky = make_pod("c").uid("c").node_selector("pool", "gpu").model()
    assert scheduler._all_nodes(picky) is scheduler._all_nodes(picky)
    kept = scheduler._all_nodes(first)
    scheduler.state.upsert_node(make_node("new").model())
    assert scheduler._all_nodes(first) is not kept
    assert "new" in scheduler._all_nodes(first).names
    assert "new" not in scheduler._all_nodes(picky).names


@pytest.mark.parametrize(
    ("task", "nodes"),
    [
        ({}, {"plain-0", "plain-1"}),
        ({"tolerations": [EXISTS]}, {"plain-0", "plain-1", "gpu-0"}),
        ({"tolerations": [EXISTS], "nodeSelector": {"pool": "gpu"}}, {"gpu-0"}),
        ({"tolerations": [EXISTS], "affinity": IN_GPU}, {"gpu-0"}),
        ({"nodeSelector": {"pool": "gpu"}}, set()),  # (the one gpu node is tainted)
    ],
)
def test_a_run_places_pods_only_where_the_filters_let_them(
    lahar: Policy, task: dict[str, Any], nodes: set[str]
) -> None:
    trace = (
        make_trace()
        .nodes(2, name="plain", cpu="1")
        .nodes(1, name="gpu", cpu="1", labels={"pool": "gpu"}, taints=[GPU])
        .nodes(1, name="off", cpu="8", unschedulable=True)
        .job(make_trace_job("tf").task("w", 3, cpu="1", duration=10, **task).set(minAvailable=1))
    )
    for policy in (lahar, stock_policy()):
        outcome = simulate(trace.model(), policy, "p")
        assert {interval.node for interval in outcome.intervals} == nodes
        assert (outcome.jobs["tf"].finished is None) == (not nodes)
