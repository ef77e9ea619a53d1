"""The extender's outputs to the API server, as the async callables the core is handed.

The core (barrier, waker, status writer, preemptor) takes plain async functions, so it is tested
without a cluster. Bindings, lifted gates and wake-ups (one per pod, on the scheduling path) go out
on the event loop through `kube.AsyncApi`; the rarer writes (status, events, evictions, queues,
HyperNode counts) run the kube layer's blocking calls in worker threads. The standby's watchdog
also reads through here: the scheduler's Lease and its holder's pod, on the event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client as k8s

from extender.actions.bind import Binder, BindError
from extender.api.scheduling import API_VERSION, GroupKind, PodGroup, default_queue
from extender.kube import (
    AsyncApi,
    KubeError,
    annotate_pod,
    bind_pod,
    create_queue,
    evict_pod,
    lift_gates,
    patch_hyper_node_status,
    patch_pod_group_status,
    patch_queue_status,
    record_event,
    scale_up,
)
from extender.kube.raw import ApiStatusError
from extender.server.group_status import PodGroupEvent
from extender.server.hyper_node_writer import HyperNodePatch
from extender.server.preemptor import Evictor
from extender.server.provisioner import ScaleUpApi
from extender.server.queue_writer import QueueCreate, QueuePatch
from extender.server.status_writer import EventSink, StatusPatch
from extender.server.waker import Lifter, Patcher
from extender.server.watchdog import LeaseRead, PodRead


def api_binder(api: AsyncApi) -> Binder:
    """Bindings through the API server, on the event loop."""

    async def binder(namespace: str, name: str, uid: str, node: str) -> None:
        try:
            await bind_pod(api, namespace, name, uid, node)
        except KubeError as error:
            raise BindError(str(error)) from error

    return binder


class _ScaleUpWrites:
    """What the provisioner writes, on the event loop (`kube.scale_up`)."""

    def __init__(self, api: AsyncApi) -> None:
        self.api = api

    async def create(self, body: Mapping[str, Any]) -> bool:
        return await scale_up.create(self.api, body)

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str
    ) -> bool:
        return await scale_up.delete(self.api, api_version, kind, namespace, name, uid=uid)

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return await scale_up.read_pod(self.api, namespace, name)

    async def annotate(self, namespace: str, name: str, values: Mapping[str, str | None]) -> None:
        await scale_up.set_annotations(self.api, namespace, name, values)


def api_scale_up(api: AsyncApi) -> ScaleUpApi:
    return _ScaleUpWrites(api)


def api_patcher(api: AsyncApi) -> Patcher:
    async def patch(namespace: str, name: str, annotations: dict[str, str]) -> None:
        await annotate_pod(api, namespace, name, annotations)

    return patch


def api_lifter(api: AsyncApi) -> Lifter:
    async def lift(namespace: str, name: str, uid: str) -> None:
        await lift_gates(api, namespace, name, uid)

    return lift


def api_evictor(api: k8s.ApiClient) -> Evictor:
    async def evict(namespace: str, name: str, uid: str, dry_run: bool) -> bool:
        return await asyncio.to_thread(evict_pod, api, namespace, name, uid, dry_run=dry_run)

    return evict


def api_lease_reader(api: AsyncApi, namespace: str, name: str) -> LeaseRead:
    """The Lease `namespace/name` as the API server has it, on the event loop; None: none."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"

    async def read() -> dict[str, Any] | None:
        return await _get(api, path)

    return read


def api_pod_reader(api: AsyncApi) -> PodRead:
    """A pod as the API server has it (status included), on the event loop; None: none."""

    async def read(namespace: str, name: str) -> dict[str, Any] | None:
        return await _get(api, f"/api/v1/namespaces/{namespace}/pods/{name}")

    return read


async def _get(api: AsyncApi, path: str) -> dict[str, Any] | None:
    try:
        body = await api.request("GET", path)
    except ApiStatusError as error:
        if error.status == 404:
            return None
        raise
    found = json.loads(body)
    if not isinstance(found, dict):
        raise ValueError(f"GET {path}: not an object")
    return found


def api_status_patch(
    api: k8s.ApiClient, on_object: Callable[[], bool] = lambda: False
) -> StatusPatch:
    """Writes a PodGroup's status; where its CRD serves no status subresource (Volcano's), onto
    the object itself while `on_object()` says so."""

    async def write(group: PodGroup, status: dict[str, Any]) -> None:
        meta = group.metadata
        await asyncio.to_thread(
            patch_pod_group_status,
            api,
            meta.namespace,
            meta.name,
            status,
            meta.uid,
            api_version=group.group_kind.api_version,
            strategic=group.group_kind is GroupKind.NATIVE,
            on_object=on_object(),
        )

    return write


def api_event_sink(api: k8s.ApiClient) -> EventSink:
    async def record(group: PodGroup, event: PodGroupEvent) -> None:
        involved = {
            "apiVersion": group.group_kind.api_version,
            "kind": "PodGroup",
            "namespace": group.metadata.namespace,
            "name": group.metadata.name,
            "uid": group.metadata.uid,
        }
        await asyncio.to_thread(
            record_event, api, involved, event.type, event.reason, event.message
        )

    return record


def api_queue_patch(api: k8s.ApiClient) -> QueuePatch:
    async def write(name: str, status: dict[str, Any], resource_version: str | None) -> bool:
        return await asyncio.to_thread(patch_queue_status, api, name, status, resource_version)

    return write


def api_queue_create(api: k8s.ApiClient) -> QueueCreate:
    async def create(name: str) -> bool:
        queue = default_queue()
        assert queue.metadata.name == name, "only the default queue is ever created"
        body = {
            "apiVersion": API_VERSION,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": queue.spec.weight, "reclaimable": queue.spec.reclaimable},
        }
        return await asyncio.to_thread(create_queue, api, body)

    return create


def api_hyper_node_patch(api: k8s.ApiClient) -> HyperNodePatch:
    async def write(name: str, uid: str, status: dict[str, Any]) -> bool:
        return await asyncio.to_thread(patch_hyper_node_status, api, name, status, uid)

    return write
