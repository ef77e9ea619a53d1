"""API-shaped JSON of a cluster's objects, as a real list returns them, for the benchmarks.

One builder per kind (Node, Pod, PodGroup, Volcano Job, Queue, PriorityClass), each returning
the raw dict the API server would send: labels, taints, a kubelet's status, containers with env
and volume mounts, conditions, owner references; the fields Lahar never reads are there too, as
they cost the same to decode. `benchmarks/memory.py` fills the extender's cache with them,
`benchmarks/whatif.py` a snapshot. Called with only their positional arguments they build the
objects `memory.py` has always measured (a change there would move its figures); the keyword
arguments make the other shapes a snapshot needs (other machines, pending pods, Volcano's
names). `mib` reads this process's memory as /proc reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GANG = 8
CONDITION_TIME = "2026-11-23T10:00:00Z"


def _status_kib(name: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return float(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {name}")


def mib(name: str = "VmRSS") -> float:
    """This process's resident memory (`VmRSS`), or its peak (`VmHWM`), in MiB."""
    return _status_kib(name) / 1024


@dataclass(frozen=True)
class Machine:
    """A kind of node: its instance type, capacity and allocatable, and the labels and taints
    it carries beside the usual ones."""

    instance_type: str
    capacity: dict[str, str]
    allocatable: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()


M6I = Machine(
    "m6i.8xlarge",
    {"cpu": "32", "memory": "256Gi", "pods": "110"},
    {"cpu": "31800m", "memory": "250Gi", "pods": "110"},
    taints=({"key": "dedicated", "value": "batch", "effect": "PreferNoSchedule"},),
)


def node_json(index: int, machine: Machine = M6I, *, cordoned: bool = False) -> dict[str, Any]:
    name = f"node-{index:05d}"
    spec: dict[str, Any] = {
        "podCIDR": f"10.{index // 256}.{index % 256}.0/24",
        "taints": list(machine.taints),
    }
    if cordoned:  # (the API server adds the taint with the field)
        spec["unschedulable"] = True
        spec["taints"] = [
            *machine.taints,
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        ]
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
                "node.kubernetes.io/instance-type": machine.instance_type,
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                "topology.kubernetes.io/region": "region-1",
                **machine.labels,
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "capacity": dict(machine.capacity),
            "allocatable": dict(machine.allocatable),
            "conditions": [
                {
                    "type": kind,
                    "status": "True" if kind == "Ready" else "False",
                    "lastHeartbeatTime": CONDITION_TIME,
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


@dataclass(frozen=True)
class Member:
    """What a pod of a gang carries beyond `pod_json`'s defaults: its name, namespace, the
    PodGroup it names (`group`) and the Job owning it (`job`), its task, request, priority,
    scheduler and placement constraints, and when it was created and started."""

    name: str
    namespace: str
    group: str
    job: str
    task: str = "worker"
    requests: dict[str, str] = field(default_factory=lambda: {"cpu": "2", "memory": "8Gi"})
    priority_class: str = "batch"
    priority: int = 100
    scheduler: str = "lahar"
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ({"key": "dedicated", "operator": "Exists"},)
    owner: tuple[str, str] = ("batch.volcano.sh/v1alpha1", "Job")
    created: str | None = None
    started: str | None = None


def pod_json(index: int, node: str, group: str, member: Member | None = None) -> dict[str, Any]:
    """A pod of gang `group` (`memory.py`'s: gangs of `GANG` in namespace bench) bound to
    `node` and running; `member` names another (its `group` empty: a pod of no gang, owned by
    `job`); no `node`: pending, unscheduled."""
    who = member or Member(f"{group}-worker-{index % GANG}", "bench", group, group)
    limits = {k: v for k, v in who.requests.items() if k in ("cpu", "memory", "nvidia.com/gpu")}
    meta: dict[str, Any] = {
        "name": who.name,
        "namespace": who.namespace,
        "uid": f"uid-{index:06d}",
        "resourceVersion": str(100000 + index),
        "labels": {"volcano.sh/job-name": who.job, "volcano.sh/task-spec": who.task},
        "annotations": {"scheduling.k8s.io/group-name": who.group},
        "ownerReferences": [{"apiVersion": who.owner[0], "kind": who.owner[1], "name": who.job}],
    }
    if not who.group:  # (a pod of no gang: a DaemonSet's, another scheduler's)
        meta["labels"] = {"app.kubernetes.io/name": who.job}
        del meta["annotations"]
    if who.created is not None:
        meta["creationTimestamp"] = who.created
    spec: dict[str, Any] = {
        "schedulerName": who.scheduler,
        "nodeName": node,
        "priorityClassName": who.priority_class,
        "priority": who.priority,
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/train:1.0",
                "env": [{"name": f"VAR_{i}", "value": f"value-{i}"} for i in range(6)],
                "resources": {"requests": dict(who.requests), "limits": limits},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": list(who.tolerations),
    }
    if who.node_selector:
        spec["nodeSelector"] = dict(who.node_selector)
    if not node:
        del spec["nodeName"]
        status: dict[str, Any] = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1000 nodes are available: waiting for the gang",
                    "lastTransitionTime": who.created or CONDITION_TIME,
                }
            ],
        }
    else:
        status = {
            "phase": "Running",
            "podIP": f"10.1.{index // 256 % 256}.{index % 256}",
            "conditions": [
                {"type": kind, "status": "True", "lastTransitionTime": CONDITION_TIME}
                for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
        }
        if who.started is not None:
            status["startTime"] = who.started
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def group_json(
    name: str,
    *,
    namespace: str = "bench",
    queue: str = "default",
    min_member: int = GANG,
    phase: str = "Running",
    annotations: dict[str, str] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """A Volcano PodGroup (`memory.py`'s: Running, its `GANG` members running)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if annotations:
        meta["annotations"] = dict(annotations)
    if created is not None:
        meta["creationTimestamp"] = created
    running = min_member if phase == "Running" else 0
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": phase, "running": running},
    }


def job_json(
    name: str,
    uid: str,
    tasks: list[tuple[Member, int]],
    *,
    queue: str,
    phase: str,
    created: str,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Volcano Job (batch.volcano.sh/v1alpha1) of `tasks` (a pod of each, as `Member`, and
    its replicas), in `phase`, as its controller keeps it."""
    first = tasks[0][0]
    meta: dict[str, Any] = {
        "name": name,
        "namespace": first.namespace,
        "uid": uid,
        "generation": 1,
        "resourceVersion": "1",
        "creationTimestamp": created,
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    size = sum(replicas for _, replicas in tasks)
    running = size if phase == "Running" else 0
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "schedulerName": first.scheduler,
            "queue": queue,
            "minAvailable": size,
            "priorityClassName": first.priority_class,
            "maxRetry": 3,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [
                {
                    "name": member.task,
                    "replicas": replicas,
                    "template": {"spec": _template(member)},
                }
                for member, replicas in tasks
            ],
        },
        "status": {
            "state": {"phase": phase, "lastTransitionTime": created},
            "minAvailable": size,
            "pending": size - running,
            "running": running,
            "taskStatusCount": {
                member.task: {"phase": {"Running" if running else "Pending": replicas}}
                for member, replicas in tasks
            },
        },
    }


def _template(member: Member) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/train:1.0",
                "resources": {"requests": dict(member.requests)},
            }
        ],
        "tolerations": list(member.tolerations),
    }
    if member.node_selector:
        spec["nodeSelector"] = dict(member.node_selector)
    return spec


def queue_json(
    name: str, *, weight: int = 1, parent: str | None = None, reclaimable: bool = True
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight, "reclaimable": reclaimable}
    if parent is not None:
        spec["parent"] = parent
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-queue-{name}", "resourceVersion": "1"},
        "spec": spec,
        "status": {"state": "Open"},
    }


def priority_class_json(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "uid": f"uid-priority-{name}"},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
    }
