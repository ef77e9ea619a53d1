"""A synthetic multi-queue trace: batch jobs of three teams sharing one cluster, seeded.

`examples/trace-multiqueue.yaml` is `generate()` with its defaults (a unit test keeps the file and
the generator equal); `python -m extender.simulate.synthetic --jobs N --nodes M --seed S` writes
another. The distributions:

- nodes: `nodes` nodes of 32 cpu and 128Gi;
- queues: `research` weight 3, `production` weight 2, `dev` weight 1; a job's queue is drawn
  50% / 30% / 20%;
- arrivals: a Poisson process (exponential gaps) whose rate keeps the cluster about `load` times
  busy on average (1.5 by default: more work than the cluster has room for, so queues contend);
- size: 1, 2, 4, 8, 16 or 32 pods with probabilities 30, 20, 20, 15, 10 and 5%; a job of more
  than one pod is a training job, 1 ps (1 cpu, 2Gi) and size - 1 workers, all needed
  (minAvailable = size);
- a worker's request: 1, 2 or 4 cpu (equally likely), 4Gi per cpu;
- duration: log-normal, median 5 minutes (sigma 1), kept within 30 s and 4 h; every pod of a job
  runs the same time;
- priority: 10% of jobs 100 (the rest 0).

With `hierarchy` (`--hierarchy`; `examples/trace-hierarchy.yaml` is `generate(hierarchy=True)`)
the queues form a two-level tree instead: `ml` weight 3 with children `team-a` weight 2 and
`team-b` weight 1, and `web` weight 1 capped at 30% of the cluster's cpu (its weighted share is
25%: the cap binds only when ml leaves cpu unused). A job goes in a leaf queue, drawn 40% team-a,
40% team-b, 20% web (a mix unlike the weights: served in arrival order, the queues would not
share by weight), and the load is 3 by default: each leaf is offered more than its share of the
tree and the backlog lasts (a quarter of an hour or so with the defaults, every level
contended), then the cluster drains. The rest is drawn as above.

With `topology` (`--topology`; `examples/trace-topology.yaml` is `generate(300, 64,
topology=True)`) the cluster is a network: nodes of 16 cpu and 64Gi, switches (tier 1) over
blocks of 4 nodes and spines (tier 2) over blocks of 4 switches, the three queues as above. The
jobs are drawn as a training cluster's: 40% hard tier-1 gangs (4 to 8 workers of 2 or 4 cpu, all
within one switch), 20% soft tier-1 gangs (the same, preferring a switch), 10% partitioned gangs
(8 or 16 workers of 4 cpu in partitions of 4, each partition hard within a switch, the whole
hard within a spine) and 30% plain jobs (1, 2, 4 or 8 pods of 1, 2 or 4 cpu, asking nothing);
no ps, every pod needed, durations and priorities as above, at load 1.5 by default.
Pure: the same arguments give the same trace.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from typing import Any

import yaml

QUEUES = (("research", 3, 0.5), ("production", 2, 0.3), ("dev", 1, 0.2))
# (name, weight, parent, the part of the jobs drawn for it: 0 for a parent)
TREE = (
    ("ml", 3, None, 0.0),
    ("team-a", 2, "ml", 0.4),
    ("team-b", 1, "ml", 0.4),
    ("web", 1, None, 0.2),
)
WEB_CAPABILITY = 0.3  # of the cluster's cpu
SIZES = ((1, 30), (2, 20), (4, 20), (8, 15), (16, 10), (32, 5))
WORKER_CPUS = (1, 2, 4)
MEDIAN_SECONDS, SIGMA = 300.0, 1.0
SHORTEST, LONGEST = 30.0, 4 * 3600.0
NODE_CPU = 32
LOAD = 1.5  # offered work / capacity, by default
TREE_LOAD = 3.0  # the same, for the tree's queues (at 1.5 their backlog lasts a minute or so)
TOPOLOGY_NODE_CPU = 16
SWITCH_SIZE, SPINE_SIZE = 4, 4  # nodes per switch, switches per spine
# (kind, the part of the jobs drawn of it)
KINDS = (("hard", 0.4), ("soft", 0.2), ("partitioned", 0.1), ("plain", 0.3))
PLAIN_SIZES = (1, 2, 4, 8)


def generate(
    jobs: int = 400,
    nodes: int = 40,
    *,
    load: float | None = None,
    seed: int = 1,
    hierarchy: bool = False,
    topology: bool = False,
) -> dict[str, Any]:
    """The trace document (what the YAML file holds); `load` by default LOAD, or TREE_LOAD with
    `hierarchy`."""
    if load is None:
        load = TREE_LOAD if hierarchy else LOAD
    rng = random.Random(seed)  # noqa: S311 - a reproducible trace, not a secret
    node_cpu = TOPOLOGY_NODE_CPU if topology else NODE_CPU
    if hierarchy:
        queues = _tree(nodes)
        draws = [(name, part) for name, _, _, part in TREE if part]
    else:
        queues = [{"name": name, "weight": weight} for name, weight, _ in QUEUES]
        draws = [(name, part) for name, _, part in QUEUES]
    draw = _network_job if topology else _job
    drawn = [draw(rng, index, draws) for index in range(jobs)]
    work = sum(_cpu(job) * job["tasks"][0]["duration"] for job in drawn)  # cpu-seconds
    span = work / (load * nodes * node_cpu)  # the time over which arrivals spread
    mean_gap = span / max(1, jobs)
    clock = 0.0
    for job in drawn:
        job["arrival"] = round(clock, 1)
        clock += rng.expovariate(1 / mean_gap) if mean_gap > 0 else 0.0
    document: dict[str, Any] = {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "Trace",
        "nodes": [{"count": nodes, "cpu": str(node_cpu), "memory": f"{4 * node_cpu}Gi"}],
    }
    if topology:
        document["topology"] = {"switchSize": SWITCH_SIZE, "spineSize": SPINE_SIZE}
    return document | {"queues": queues, "jobs": drawn}


def _tree(nodes: int) -> list[dict[str, Any]]:
    queues: list[dict[str, Any]] = []
    for name, weight, parent, _ in TREE:
        queue: dict[str, Any] = {"name": name, "weight": weight}
        if parent is not None:
            queue["parent"] = parent
        if name == "web":
            queue["capability"] = {"cpu": str(round(WEB_CAPABILITY * nodes * NODE_CPU))}
        queues.append(queue)
    return queues


def _job(rng: random.Random, index: int, draws: list[tuple[str, float]]) -> dict[str, Any]:
    queue = rng.choices([name for name, _ in draws], weights=[part for _, part in draws])[0]
    size = rng.choices([s[0] for s in SIZES], weights=[s[1] for s in SIZES])[0]
    cpu = rng.choice(WORKER_CPUS)
    seconds = rng.lognormvariate(math.log(MEDIAN_SECONDS), SIGMA)
    duration = round(min(LONGEST, max(SHORTEST, seconds)), 1)
    worker = {
        "name": "worker",
        "replicas": size - 1 if size > 1 else 1,
        "cpu": str(cpu),
        "memory": f"{4 * cpu}Gi",
        "duration": duration,
    }
    tasks = [worker]
    if size > 1:
        tasks.insert(0, {**worker, "name": "ps", "replicas": 1, "cpu": "1", "memory": "2Gi"})
    job: dict[str, Any] = {"name": f"{queue}-{index:05d}", "arrival": 0.0, "queue": queue}
    if rng.random() < 0.1:
        job["priority"] = 100
    job["tasks"] = tasks
    return job


def _network_job(rng: random.Random, index: int, draws: list[tuple[str, float]]) -> dict[str, Any]:
    """A job of a training cluster on a network: hard, soft, partitioned or plain."""
    queue = rng.choices([name for name, _ in draws], weights=[part for _, part in draws])[0]
    kind = rng.choices([k for k, _ in KINDS], weights=[part for _, part in KINDS])[0]
    seconds = rng.lognormvariate(math.log(MEDIAN_SECONDS), SIGMA)
    duration = round(min(LONGEST, max(SHORTEST, seconds)), 1)
    job: dict[str, Any] = {"name": f"{queue}-{index:05d}", "arrival": 0.0, "queue": queue}
    if rng.random() < 0.1:
        job["priority"] = 100
    partitions: dict[str, Any] | None = None
    if kind in ("hard", "soft"):
        size, cpu = rng.randint(4, 8), rng.choice((2, 4))
        job["networkTopology"] = {"mode": kind, "highestTierName": "switch"}
    elif kind == "partitioned":
        size, cpu = rng.choice((8, 16)), 4
        job["networkTopology"] = {"mode": "hard", "highestTierName": "spine"}
        partitions = {
            "totalPartitions": size // 4,
            "partitionSize": 4,
            "networkTopology": {"mode": "hard", "highestTierName": "switch"},
        }
    else:
        size, cpu = rng.choice(PLAIN_SIZES), rng.choice(WORKER_CPUS)
    worker: dict[str, Any] = {
        "name": "worker",
        "replicas": size,
        "cpu": str(cpu),
        "memory": f"{4 * cpu}Gi",
        "duration": duration,
    }
    if partitions is not None:
        worker["partitionPolicy"] = partitions
    job["tasks"] = [worker]
    return job


def _cpu(job: dict[str, Any]) -> int:
    return sum(int(task["cpu"]) * task["replicas"] for task in job["tasks"])


FLAT_HEADER = """\
# A synthetic multi-queue trace for `lahar simulate`, written by
# `python -m extender.simulate.synthetic` (extender/simulate/synthetic.py says how it
# draws nodes, queues, arrivals, sizes, requests, durations and priorities).
"""
TOPOLOGY_HEADER = """\
# A synthetic trace on a network of switches and spines, for `lahar simulate`, written by
# `python -m extender.simulate.synthetic --topology --jobs 300 --nodes 64`
# (extender/simulate/synthetic.py says how it draws the jobs): hard and soft gangs
# that ask to stay within a switch, partitioned gangs, plain jobs.
"""
TREE_HEADER = """\
# A synthetic trace whose queues form a tree, for `lahar simulate`, written by
# `python -m extender.simulate.synthetic --hierarchy` (extender/simulate/synthetic.py
# says how it draws nodes, queues, arrivals, sizes, requests, durations and
# priorities): root -> ml (weight 3) -> team-a (2), team-b (1); root -> web (1), capped.
"""


def dump(document: dict[str, Any]) -> str:
    tree = any("parent" in queue for queue in document["queues"])
    header = TOPOLOGY_HEADER if "topology" in document else TREE_HEADER if tree else FLAT_HEADER
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument(
        "--load",
        type=float,
        help=f"offered work / capacity (default {LOAD}, {TREE_LOAD} with --hierarchy)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--hierarchy",
        action="store_true",
        help="queues in a two-level tree: ml (team-a, team-b) and web",
    )
    parser.add_argument(
        "--topology",
        action="store_true",
        help=f"a network of switches ({SWITCH_SIZE} nodes) and spines ({SPINE_SIZE} switches) "
        "and gangs that ask to stay within one",
    )
    args = parser.parse_args(argv)
    document = generate(
        args.jobs,
        args.nodes,
        load=args.load,
        seed=args.seed,
        hierarchy=args.hierarchy,
        topology=args.topology,
    )
    sys.stdout.write(dump(document))


if __name__ == "__main__":
    main()
