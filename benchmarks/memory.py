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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.api.objects import Node, Pod
from extender.api.scheduling import PodGroup
from extender.cache.state import ClusterState

GANG = 8


def _status_kib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def mib(field: str = "VmRSS") -> float:
    return _status_kib(field) / 1024


def node_json(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": str(1000 + index),
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m6i.8xlarge",
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                "topology.kubernetes.io/region": "region-1",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {
            "podCIDR": f"10.{index // 256}.{index % 256}.0/24",
            "taints": [{"key": "dedicated", "value": "batch", "effect": "PreferNoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "31800m", "memory": "250Gi", "pods": "110"},
            "conditions": [
                {
                    "type": kind,
                    "status": "True" if kind == "Ready" else "False",
                    "lastHeartbeatTime": "2026-11-23T10:00:00Z",
                    "lastTransitionTime": "2026-11-23T09:00:00Z",
                    "reason": f"Kubelet{kind}",
                    "message": f"kubelet reports {kind}",
                }
                for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 256}.{index % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {"kubeletVersion": "v1.35.4", "containerRuntimeVersion": "containerd://2"},
        },
    }


def pod_json(index: int, node: str, group: str) -> dict[str, Any]:
    name = f"{group}-worker-{index % GANG}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{index:06d}",
            "resourceVersion": str(100000 + index),
            "labels": {"volcano.sh/job-name": group, "volcano.sh/task-spec": "worker"},
            "annotations": {"scheduling.k8s.io/group-name": group},
            "ownerReferences": [
                {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": group}
            ],
        },
        "spec": {
            "schedulerName": "lahar",
            "nodeName": node,
            "priorityClassName": "batch",
            "priority": 100,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/train:1.0",
                    "env": [{"name": f"VAR_{i}", "value": f"value-{i}"} for i in range(6)],
                    "resources": {
                        "requests": {"cpu": "2", "memory": "8Gi"},
                        "limits": {"cpu": "2", "memory": "8Gi"},
                    },
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.1.{index // 256 % 256}.{index % 256}",
            "conditions": [
                {"type": kind, "status": "True", "lastTransitionTime": "2026-11-23T10:00:00Z"}
                for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
        },
    }


def group_json(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}"},
        "spec": {"minMember": GANG, "queue": "default"},
        "status": {"phase": "Running", "running": GANG},
    }


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
