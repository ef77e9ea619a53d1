"""The only code that talks to the Kubernetes API server.

Everything above this layer gets API access through these modules: a client built from a kubeconfig
or the pod's ServiceAccount (`client`), server-side apply of manifests (`manifests`), reads and
deletes of any kind (`any_kind`), condition waits (`wait`; on pods, `pod_wait`; on CRDs, `crds`),
raw list+watch (`watch`, over `raw`), requests on the event loop (`aio`), what is written to pods:
bindings, lifted gates, annotations and evictions (`binding`) and what Lahar reports back:
PodGroup, Queue and HyperNode status, the default Queue and Events (`reports`); the read-only
lists a snapshot of the cluster takes (`snapshot_lists`), the policy the installed extender runs
(`policy_source`) and the history of finished runs (`run_times`). Callers get
values or a `KubeError` naming the object and the reason; raw client exceptions do not leak
upward.
"""

from extender.kube.aio import AsyncApi
from extender.kube.any_kind import delete, list_objects, read
from extender.kube.binding import annotate_pod, bind_pod, evict_pod, lift_gates
from extender.kube.client import KubeError, client_for, connect, context_namespace, load_client
from extender.kube.crds import wait_established
from extender.kube.manifests import Manifest, apply_object, load_manifests
from extender.kube.pod_wait import pod_when, unschedulable_message
from extender.kube.reports import (
    condition,
    create_queue,
    patch_hyper_node_status,
    patch_pod_group_status,
    patch_queue_status,
    pod_group_status,
    record_event,
)
from extender.kube.wait import wait_until

__all__ = [
    "AsyncApi",
    "KubeError",
    "Manifest",
    "annotate_pod",
    "apply_object",
    "bind_pod",
    "client_for",
    "condition",
    "connect",
    "context_namespace",
    "create_queue",
    "delete",
    "evict_pod",
    "lift_gates",
    "list_objects",
    "load_client",
    "load_manifests",
    "patch_hyper_node_status",
    "patch_pod_group_status",
    "patch_queue_status",
    "pod_group_status",
    "pod_when",
    "read",
    "record_event",
    "unschedulable_message",
    "wait_established",
    "wait_until",
]
