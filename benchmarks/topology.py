"""What a walk of the fair order costs when gangs ask for a network topology, against the same
gangs without one.

    .venv/bin/python benchmarks/topology.py [--nodes 5000] [--switch 50 4] [--gangs 200]

Builds, in process, a cluster of NODES nodes of 16 cpu under switches of SWITCH nodes (tier-1
HyperNodes) and one spine above them (tier 2), each node running a pod of 12 cpu (4 free), and
GANGS waiting gangs of 8 members of 4 cpu: a gang fits in a switch of 8 nodes or more. Then, for
each switch size, the gangs as they are (`plain`) and held to one switch
(`networkTopology: {mode: hard, highestTierAllowed: 1}`): the seconds the engine takes for the
first filter call (which walks the fair order as far as the gang asked about) and then the whole
order, through the engine's door, as the extender would. Prints one row per switch size and
kind, with the turns the walk took.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.api.objects import Node, Pod
from extender.api.scheduling import GROUP_ANNOTATION, PodGroup
from extender.api.topology import HyperNode
from extender.cache.state import ClusterState
from extender.cli.kubectl import table
from extender.framework.engine import Engine
from extender.framework.policy import load_policy
from extender.plugins import REGISTRY

POLICY = Path(__file__).resolve().parents[1] / "policy" / "lahar.yaml"
MEMBERS, MEMBER_CPU, NODE_CPU, BUSY_CPU = 8, "4", "16", "12"


def _node(name: str) -> Node:
    resources = {"cpu": NODE_CPU, "memory": "64Gi", "pods": "110"}
    return Node.model_validate(
        {"metadata": {"name": name}, "status": {"allocatable": resources, "capacity": resources}}
    )


def _pod(name: str, cpu: str, *, node: str = "", group: str = "") -> Pod:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "bench", "uid": name, "annotations": {}},
        "spec": {
            "schedulerName": "lahar",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        body["spec"]["nodeName"] = node
    if group:
        body["metadata"]["annotations"][GROUP_ANNOTATION] = group
    return Pod.model_validate(body)


def _hyper_node(name: str, tier: int, kind: str, members: list[str]) -> HyperNode:
    return HyperNode.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "tier": tier,
                "members": [
                    {"type": kind, "selector": {"exactMatch": {"name": member}}}
                    for member in members
                ],
            },
        }
    )


def cluster(nodes: int, switch: int, gangs: int, *, hard: bool) -> ClusterState:
    state = ClusterState()
    names = [f"n{i}" for i in range(nodes)]
    for name in names:
        state.upsert_node(_node(name))
        state.upsert_pod(_pod(f"busy-{name}", BUSY_CPU, node=name))
    switches = [f"s{start // switch}" for start in range(0, nodes, switch)]
    for number, name in enumerate(switches):
        members = names[number * switch : (number + 1) * switch]
        state.upsert_hyper_node(_hyper_node(name, 1, "Node", members))
    state.upsert_hyper_node(_hyper_node("spine", 2, "HyperNode", switches))
    for gang in range(gangs):
        spec: dict[str, Any] = {"minMember": MEMBERS}
        if hard:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        group = {"metadata": {"name": f"g{gang}", "namespace": "bench"}, "spec": spec}
        state.upsert_pod_group(PodGroup.model_validate(group))
        for member in range(MEMBERS):
            state.upsert_pod(_pod(f"g{gang}-{member}", MEMBER_CPU, group=f"g{gang}"))
    return state


def measure(nodes: int, switch: int, gangs: int, *, hard: bool) -> list[str]:
    state = cluster(nodes, switch, gangs, hard=hard)
    engine = Engine(load_policy(POLICY, REGISTRY))
    assert engine.gang_rules
    start = time.perf_counter()
    engine.filter(state, state.pods["g0-0"], ["n0"])
    first = time.perf_counter() - start
    order = engine.order(state)
    whole = time.perf_counter() - start
    kind = "hard tier 1" if hard else "plain"
    return [str(nodes), str(switch), kind, str(gangs), f"{first:.2f}", f"{whole:.2f}",
            str(len(order.turns))]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--switch", type=int, nargs="+", default=[50, 4], help="nodes a switch")
    parser.add_argument("--gangs", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"$ python benchmarks/topology.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    rows = [
        measure(args.nodes, switch, args.gangs, hard=hard)
        for switch in args.switch
        for hard in (False, True)
    ]
    header = ["NODES", "SWITCH", "GANGS ASK", "GANGS", "FIRST S", "WALK S", "TURNS"]
    print(table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
