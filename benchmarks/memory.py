"""The extender cache's memory with many nodes and pods.

    .venv/bin/python benchmarks/memory.py [--nodes 5000] [--pods 50000] [--groups 500]

In a fresh child process (so nothing else is resident), the cache is filled the way the informers
fill it: API-shaped JSON for each Node and Pod (labels, taints, a kubelet's status, containers
with env and volume mounts, conditions: what a real list returns) parsed by the same models
(`model_validate`) and upserted into one `ClusterState`, with PodGroups for gangs of 8, then the
snapshot every verb call reads is taken. Printed: resident memory (RSS) of the empty process, after
the fill and after the snapshot, the peak (VmHWM), and how long filling and the first snapshot took.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from multiprocessing import Process, Queue
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster_json import GANG, group_json, mib, node_json, pod_json

from extender.api.objects import Node, Pod
from extender.api.scheduling import PodGroup
from extender.cache.state import ClusterState


def measure(nodes: int, pods: int, out: Queue) -> None:  # type: ignore[type-arg]
    # Serialised and parsed one at a time as the informer does, so no list of dicts stays alive.
    empty = mib()
    state = ClusterState()
    started = time.perf_counter()
    for i in range(nodes):
        state.upsert_node(Node.model_validate(json.loads(json.dumps(node_json(i)))))
    groups = max(pods // GANG, 1)
    for g in range(groups):
        state.upsert_pod_group(PodGroup.model_validate(group_json(f"job-{g:05d}")))
    for i in range(pods):
        node = f"node-{(i // GANG * 3 + i) % nodes:05d}"
        body = json.loads(json.dumps(pod_json(i, node, f"job-{i // GANG:05d}")))
        state.upsert_pod(Pod.model_validate(body))
    filled = time.perf_counter() - started
    after_fill = mib()
    started = time.perf_counter()
    snapshot = state.view()
    first_view = time.perf_counter() - started
    out.put(
        {
            "empty": empty,
            "filled": after_fill,
            "snapshot": mib(),
            "peak": mib("VmHWM"),
            "fill_s": filled,
            "view_s": first_view,
            "sizes": state.sizes(),
            "nodes_in_view": len(snapshot.nodes),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    args = parser.parse_args()
    out: Queue = Queue()  # type: ignore[type-arg]
    child = Process(target=measure, args=(args.nodes, args.pods, out))
    child.start()
    figures = out.get()
    child.join()
    print(f"extender cache, {args.nodes} nodes and {args.pods} pods (gangs of {GANG}):")
    print(f"  objects cached        {figures['sizes']}")
    print(f"  RSS empty process     {figures['empty']:8.1f} MiB")
    print(f"  RSS after the fill    {figures['filled']:8.1f} MiB")
    print(f"  RSS with a snapshot   {figures['snapshot']:8.1f} MiB")
    print(f"  peak RSS (VmHWM)      {figures['peak']:8.1f} MiB")
    print(f"  fill (parse + upsert) {figures['fill_s']:8.2f} s")
    print(f"  first snapshot        {figures['view_s']:8.3f} s")


if __name__ == "__main__":
    main()
