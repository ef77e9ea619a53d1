"""The cache follows the real API server: it lists, then watches; resumes a dropped watch without
listing again; lists again when its resourceVersion was compacted away (410 Gone); and survives the
API server restarting.

The 410 and restart cases run on a second, small cluster whose API server has its watch cache off,
so watches are served by etcd and compacting etcd (through its own API) really expires a version.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.objects import Pod
from extender.api.resources import Resources
from extender.cache.informer import Informer, Informers
from extender.cache.kinds import COSCHEDULING_GROUPS, PODS
from extender.cache.state import ClusterState
from extender.kube import KubeError, apply_object, connect, delete, list_objects, wait_until
from tests.builders import make_pod
from tests.integration.helpers import phase, pod_when

T = TypeVar("T")


class Following:
    """Informers feeding a ClusterState on an event loop of their own (a thread), as in the
    server; the test reads the state on that loop too."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.state = ClusterState()
        self.informers = Informers(api, self.state, self.loop)
        self.informers.start()
        wait_until(lambda: self.informers.synced, timeout=30, what="the first list of every kind")

    def read(self, look: Callable[[ClusterState], T]) -> T:
        async def on_loop() -> T:
            return look(self.state)

        return asyncio.run_coroutine_threadsafe(on_loop(), self.loop).result(10)

    def eventually(self, check: Callable[[ClusterState], Any], what: str) -> Any:
        return wait_until(lambda: self.read(check), timeout=60, what=what)

    def informer(self, kind: str) -> Informer[ClusterState, Any]:
        return next(i for i in self.informers.items if i.kind.name == kind)

    def close(self) -> None:
        self.informers.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def has_pod(namespace: str, name: str) -> Callable[[ClusterState], bool]:
    return lambda state: any(
        p.metadata.namespace == namespace and p.metadata.name == name for p in state.pods.values()
    )


@pytest.fixture
def following(api: k8s.ApiClient) -> Iterator[Following]:
    watcher = Following(api)
    yield watcher
    watcher.close()


def test_lists_then_follows_pods_and_nodes(
    following: Following, api: k8s.ApiClient, namespace: str
) -> None:
    nodes = following.read(lambda s: dict(s.snapshot().nodes))
    assert {"kwok-node-0", "kwok-node-1"} <= set(nodes)
    assert nodes["kwok-node-0"].allocatable["cpu"] == 8000
    assert following.read(lambda s: s.priority_classes.keys() >= {"system-node-critical"})

    apply_object(api, make_pod("web").ns(namespace).cpu("1500m").build())
    bound = pod_when(api, namespace, "web", "to run", lambda p: phase(p) == "Running")
    node = bound["spec"]["nodeName"]

    def counted(state: ClusterState) -> bool:
        """The pod counts on its node exactly once: the node's requested cpu is the sum over
        the unfinished pods bound there (other tests' pods may share the node)."""
        pods = [p for p in state.pods.values() if p.metadata.namespace == namespace]
        there = [p for p in state.pods.values() if p.spec.node_name == node and not p.finished]
        requested = state.snapshot().nodes[node].requested
        return (
            bool(pods)
            and pods[0].spec.node_name == node
            and requested["cpu"] == sum(p.request["cpu"] for p in there)
        )

    following.eventually(counted, "the bound pod to count on its node")
    delete(api, "v1", "Pod", "web", namespace)
    following.eventually(lambda s: not has_pod(namespace, "web")(s), "the pod to leave the cache")


def test_a_dropped_watch_resumes_without_listing_again(
    following: Following, api: k8s.ApiClient, namespace: str
) -> None:
    pods = following.informer("pods")
    assert pods.relists == 1
    pods.interrupt()
    apply_object(api, make_pod("after").ns(namespace).build())
    following.eventually(has_pod(namespace, "after"), "a pod created after the drop")
    assert pods.relists == 1


def test_a_bookmark_moves_the_version_and_logs_nothing(
    api: k8s.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """kube-apiserver's watch cache sends a watch a BOOKMARK (only the resourceVersion reached,
    in an empty object of the kind) 2 s before the watch's timeout, and about every minute, once
    the kind's cache has moved past the version the watch began at. A watch of pods whose
    selector matches none sees no event while other pods change: only bookmarks move its version.
    The informer resumes from there and logs nothing (a bookmark read as a broken pod was an
    ERROR line a minute per kind)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    quiet = dataclasses.replace(PODS, selector="lahar.io/matches=nothing")
    informer = Informer(api, quiet, ClusterState(), loop, watch_timeout=6)
    try:
        with caplog.at_level(logging.INFO, logger="extender.cache.informer"):
            informer.start()
            wait_until(lambda: informer.synced, timeout=30, what="the list of no pods")
            before = int(informer.version or 0)
            for index in range(3):  # the pods' cache moves past the watch's version
                apply_object(api, make_pod(f"elsewhere-{index}").ns(namespace).cpu("1").build())
            wait_until(lambda: informer.bookmarks > 0, timeout=30, what="a bookmark")
            marked, opened = informer.version, informer.watches
            assert int(marked or 0) > before
            wait_until(lambda: informer.watches > opened, timeout=30, what="the next watch")
        # It resumed from the bookmark's version (or a later bookmark's, had the watch ended just
        # after the first): no event moves it, the selector matching none.
        assert int(informer.watched_from or 0) >= int(marked or 0)
        assert informer.relists == 1  # and did not list again
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    finally:
        informer.stop()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


# -- a cluster whose watches are served by etcd ------------------------------------------------


@pytest.fixture(scope="module")
def etcd_watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devcluster.DevCluster]:
    options = devcluster.ClusterOptions(
        state_dir=tmp_path_factory.mktemp("etcd-watched"),
        nodes=1,
        die_with_parent=True,
        extra_apiserver_args=("--watch-cache=false",),
    )
    cluster = devcluster.up(options)
    yield cluster
    cluster.down()


def etcd(cluster: devcluster.DevCluster, call: str, body: dict[str, Any]) -> dict[str, Any]:
    """etcd's own JSON API (gRPC gateway) on the cluster's loopback port."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{cluster.state.ports['etcd']}/v3/{call}",
        data=json.dumps(body).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        reply: dict[str, Any] = json.loads(response.read())
    return reply


def test_a_compacted_resource_version_lists_again(etcd_watched: devcluster.DevCluster) -> None:
    with connect(etcd_watched.kubeconfig) as api:
        following = Following(api)
        try:
            pods = following.informer("pods")
            for index in range(3):  # move etcd's revision past the pod watch's version
                apply_object(api, configmap(f"filler-{index}"))
            revision = etcd(etcd_watched, "kv/range", {"key": "Lw==", "count_only": True})
            etcd(etcd_watched, "kv/compaction", {"revision": revision["header"]["revision"]})

            pods.interrupt()

            wait_until(lambda: pods.relists == 2, timeout=30, what="the pod informer to list again")
            apply_object(api, make_pod("fresh").build())
            following.eventually(has_pod("default", "fresh"), "a pod created after the relist")
        finally:
            following.close()


def test_survives_the_api_server_restarting(etcd_watched: devcluster.DevCluster) -> None:
    with connect(etcd_watched.kubeconfig) as api:
        apply_object(api, make_pod("before").cpu("1").build())
        following = Following(api)
        try:
            following.eventually(has_pod("default", "before"), "the pod from before the restart")
            reconnects = following.informer("pods").reconnects

            etcd_watched.stop_component("kube-apiserver")
            wait_until(
                lambda: following.informer("pods").reconnects > reconnects,
                timeout=30,
                what="the informer to notice the API server is gone",
            )
            etcd_watched.start_component("kube-apiserver", die_with_parent=True)
            wait_until(
                lambda: _try(lambda: apply_object(api, make_pod("after").cpu("2").build())),
                timeout=60,
                what="the API server to accept writes again",
            )
            wait_until(
                lambda: _try(lambda: delete(api, "v1", "Pod", "before", "default")),
                timeout=30,
                what="the pod from before to be deleted",
            )

            following.eventually(has_pod("default", "after"), "the pod created after the restart")
            following.eventually(
                lambda s: not has_pod("default", "before")(s), "the deleted pod to leave the cache"
            )
            pod_when(api, "default", "after", "to run", lambda p: phase(p) == "Running")
            truth = sum(
                (
                    Pod.model_validate(p).request
                    for p in list_objects(api, "v1", "Pod")
                    if p["spec"].get("nodeName") == "kwok-node-0"
                ),
                Resources(),
            )
            following.eventually(
                lambda s: s.snapshot().nodes["kwok-node-0"].requested == truth,
                f"the cache to count {truth!r} on kwok-node-0, as the API server does",
            )
        finally:
            following.close()


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def _try(action: Callable[[], object]) -> bool:
    try:
        action()
    except Exception:  # the API server is still starting
        return False
    return True


def test_a_kind_the_server_does_not_serve_is_empty_until_it_is_served(api: k8s.ApiClient) -> None:
    """An optional kind (a CRD not installed, a beta API off) answers 404: the informer counts it
    listed and empty, so the cache becomes whole, and lists it once it is served."""
    group = "ghosts.lahar.dev"
    kind = dataclasses.replace(
        COSCHEDULING_GROUPS, name=f"podgroups.{group}", path=f"/apis/{group}/v1/podgroups"
    )
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"podgroups.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    state = ClusterState()
    informers = Informers(api, state, loop, [kind])
    informers.items[0].absent_recheck = 0.5
    informers.start()
    try:
        wait_until(lambda: informers.synced, timeout=30, what="the absent kind to count as listed")
        assert informers.items[0].absent and not state.pod_groups
        apply_object(api, crd)
        body = {
            "apiVersion": f"{group}/v1",
            "kind": "PodGroup",
            "metadata": {"name": "late", "namespace": "default"},
            "spec": {"minMember": 2},
        }
        wait_until(
            lambda: _applied(api, body), timeout=30, what="the CRD to be served and the object made"
        )
        wait_until(
            lambda: any(g.metadata.name == "late" for g in list(state.pod_groups.values())),
            timeout=30,
            what="the informer to list the kind once served",
        )
        assert not informers.items[0].absent
    finally:
        informers.stop()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        delete(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", f"podgroups.{group}")


def _applied(api: k8s.ApiClient, body: dict[str, Any]) -> bool:
    try:
        apply_object(api, body)
    except KubeError:  # the CRD is not served yet
        return False
    return True
