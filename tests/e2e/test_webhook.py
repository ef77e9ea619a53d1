"""The admission webhook registered in the real API server (by `manifests/base/webhook.yaml`): what
`kubectl create` answers for broken and correct Jobs, Queues, PodGroups and HyperNodes, and that
pods never depend on the webhook being up."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.batch import BATCH_API_VERSION
from extender.api.scheduling import API_VERSION
from extender.api.topology import API_VERSION as TOPOLOGY_API
from extender.kube import delete, list_objects, read, wait_until
from extender.kube.raw import ApiStatusError, send
from tests.builders import make_group, make_job, make_pod, make_queue
from tests.e2e.webhook import WEBHOOK, create, restart_webhook


def _refusal(api: k8s.ApiClient, body: dict[str, object]) -> str:
    with pytest.raises(ApiStatusError) as refused:
        create(api, body)
    return str(refused.value)


@pytest.fixture
def queue_name(api: k8s.ApiClient) -> Iterator[str]:
    """A fresh queue's name; the queue (if the test made one) is deleted afterwards."""
    name = f"wq-{secrets.token_hex(3)}"
    yield name
    delete(api, API_VERSION, "Queue", name)


def test_an_invalid_job_is_refused_naming_every_problem(api: k8s.ApiClient, namespace: str) -> None:
    body = (
        make_job("broken")
        .ns(namespace)
        .task("Ps", 1)
        .task("worker", 2, min_available=3, depends_on=["worker"])
        .plugin("tensorboard")
        .policy("PodPending", "RestartJob")
        .queue("no-such-queue")
        .build()
    )
    message = _refusal(api, body)
    assert 'admission webhook "job-rules.lahar.dev" denied the request' in message
    assert f"Job {namespace}/broken is invalid" in message
    for expected in (
        "spec.tasks[0].name: 'Ps' must be lower case",
        "spec.tasks[1].minAvailable: 3 is more than the task's 2 replicas",
        "spec.policies[0].timeout: required with PodPending",
        "spec.plugins.tensorboard: unknown plugin",
        "spec.queue: queue 'no-such-queue' does not exist",
        "dependsOn forms a cycle (worker -> worker)",
    ):
        assert expected in message
    assert read(api, BATCH_API_VERSION, "Job", "broken", namespace) is None


def test_a_wrongly_typed_job_is_refused_naming_the_field(
    api: k8s.ApiClient, namespace: str
) -> None:
    body = make_job("typed").ns(namespace).task("worker", 2).build()
    body["spec"]["tasks"][0]["replicas"] = "two"
    message = _refusal(api, body)
    assert "spec.tasks[0].replicas" in message and "'two'" in message


def test_a_valid_job_comes_back_with_volcanos_defaults(api: k8s.ApiClient, namespace: str) -> None:
    body = make_job("plain").ns(namespace).task("master", 1).task("", 3).plugin("pytorch").build()
    stored = create(api, body)["spec"]
    assert stored["queue"] == "default"
    assert stored["schedulerName"] == "lahar"
    assert stored["maxRetry"] == 3
    assert [t["name"] for t in stored["tasks"]] == ["master", "default1"]
    assert [t["minAvailable"] for t in stored["tasks"]] == [1, 3]
    assert stored["minAvailable"] == 4
    assert stored["plugins"] == {"pytorch": [], "svc": []}
    # The controller builds the gang from the defaults: minMember 4, not 0.
    group = wait_until(
        lambda: next(iter(list_objects(api, API_VERSION, "PodGroup", namespace=namespace)), None),
        timeout=30,
        what="the job's PodGroup",
    )
    assert group["spec"]["minMember"] == 4


def test_updates_may_scale_but_not_change_the_rest(api: k8s.ApiClient, namespace: str) -> None:
    create(api, make_job("scaled").ns(namespace).task("worker", 2).build())
    path = f"/apis/{BATCH_API_VERSION}/namespaces/{namespace}/jobs/scaled"
    patch = [{"op": "replace", "path": "/spec/tasks/0/replicas", "value": 4}]
    send(api, "PATCH", path, body=patch, content_type="application/json-patch+json").read()
    moved = [{"op": "replace", "path": "/spec/queue", "value": "elsewhere"}]
    with pytest.raises(ApiStatusError) as refused:
        send(api, "PATCH", path, body=moved, content_type="application/json-patch+json").read()
    assert "spec.queue: cannot change once the job exists" in str(refused.value)


def test_queues_that_break_the_rules_are_refused(
    api: k8s.ApiClient, namespace: str, queue_name: str
) -> None:
    uneven = make_queue(queue_name).capability(cpu="2").deserved(cpu="4").build()
    assert "spec.deserved.cpu: 4 is more than the capability 2" in _refusal(api, uneven)
    # The extender makes the default queue; a fresh cluster may not have it yet.
    wait_until(lambda: read(api, API_VERSION, "Queue", "default"), timeout=30, what="default Queue")
    with pytest.raises(ApiStatusError) as kept:
        send(api, "DELETE", f"/apis/{API_VERSION}/queues/default").read()
    assert "the default queue cannot be deleted" in str(kept.value)

    create(api, make_queue(queue_name).capability(cpu="4").deserved(cpu="2").build())
    wait_until(
        lambda: _admits(api, make_group("g").ns(namespace).queue(queue_name).build()),
        timeout=30,
        what=f"the webhook to see queue {queue_name}",
    )
    create(api, make_group("g").ns(namespace).queue(queue_name).build())
    queue_path = f"/apis/{API_VERSION}/queues/{queue_name}"
    refusal = wait_until(
        lambda: _delete_refusal(api, queue_path),
        timeout=30,
        what=f"the webhook to see PodGroup g in queue {queue_name}",
    )
    assert f"{namespace}/g" in refusal and "still has 1 PodGroup" in refusal
    delete(api, API_VERSION, "PodGroup", "g", namespace)
    wait_until(
        lambda: _delete_refusal(api, queue_path) is None,
        timeout=30,
        what=f"the webhook to let queue {queue_name} go once it is empty",
    )
    send(api, "DELETE", queue_path).read()


def test_a_new_queue_gets_volcanos_defaults(api: k8s.ApiClient, queue_name: str) -> None:
    """Weight 0 becomes 1 (the CRD alone would refuse it), reclaimable true, and a hierarchy
    path is put under root, as Volcano's mutating webhook does."""
    body = make_queue(queue_name).weight(0).build()
    body["metadata"]["annotations"] = {
        "volcano.sh/hierarchy": "ml/a",
        "volcano.sh/hierarchy-weights": "2/1",
    }
    create(api, body)
    stored = read(api, API_VERSION, "Queue", queue_name)
    assert stored is not None
    assert (stored["spec"]["weight"], stored["spec"]["reclaimable"]) == (1, True)
    annotations = stored["metadata"]["annotations"]
    assert annotations["volcano.sh/hierarchy"] == "root/ml/a"
    assert annotations["volcano.sh/hierarchy-weights"] == "1/2/1"


def test_jobs_go_in_leaf_queues_and_a_parent_stays_while_it_has_children(
    api: k8s.ApiClient, namespace: str, queue_name: str
) -> None:
    child = f"{queue_name}-leaf"
    parent_path = f"/apis/{API_VERSION}/queues/{queue_name}"
    try:
        create(api, make_queue(queue_name).capability(cpu="4").build())
        create(api, make_queue(child).set("spec.parent", queue_name).capability(cpu="2").build())
        job = make_job("nested").ns(namespace).task("worker", 1).queue(queue_name).build()
        refusal = wait_until(
            lambda: None if _admits(api, job) else _refusal(api, job),
            timeout=30,
            what=f"the webhook to see queue {child} under {queue_name}",
        )
        said = f"spec.queue: queue {queue_name} has 1 child queue ({child}): jobs go in leaf queues"
        assert said in refusal
        assert _admits(api, make_job("leaf").ns(namespace).task("worker", 1).queue(child).build())
        with pytest.raises(ApiStatusError) as kept:
            send(api, "DELETE", parent_path).read()
        said = f"queue {queue_name} cannot be deleted because it has 1 child queue: {child}"
        assert said in str(kept.value)
        tall = make_queue(f"{child}-2").set("spec.parent", queue_name).capability(cpu="5")
        said = (
            f"spec.capability.cpu: 5 is more than the capability 4 of queue {queue_name} above it"
        )
        assert said in _refusal(api, tall.build())
    finally:
        delete(api, API_VERSION, "Queue", child)
        wait_until(
            lambda: _delete_refusal(api, parent_path) is None,
            timeout=30,
            what=f"the webhook to let queue {queue_name} go once its child is gone",
        )


def test_a_podgroup_needs_an_open_queue(
    api: k8s.ApiClient, namespace: str, queue_name: str
) -> None:
    missing = make_group("lost").ns(namespace).queue("no-such-queue").build()
    assert "spec.queue: queue 'no-such-queue' does not exist" in _refusal(api, missing)
    create(api, make_queue(queue_name).build())
    closed = make_queue(queue_name).state("Closed").build()
    stored = read(api, API_VERSION, "Queue", queue_name) or {}
    closed["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    send(api, "PUT", f"/apis/{API_VERSION}/queues/{queue_name}/status", body=closed).read()
    group = make_group("late").ns(namespace).queue(queue_name).build()
    refusal = wait_until(
        lambda: None if _admits(api, group) else _refusal(api, group),
        timeout=30,
        what=f"the webhook to see queue {queue_name} Closed",
    )
    assert f"queue '{queue_name}' is Closed" in refusal


@pytest.fixture
def hyper_node_name(api: k8s.ApiClient) -> Iterator[str]:
    """A fresh HyperNode's name; the HyperNode (if the test made one) is deleted afterwards."""
    name = f"hn-{secrets.token_hex(3)}"
    yield name
    delete(api, TOPOLOGY_API, "HyperNode", name)


def _hyper_node(name: str, **selector: Any) -> dict[str, Any]:
    return {
        "apiVersion": TOPOLOGY_API,
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": selector}]},
    }


def _create_hyper_node(api: k8s.ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    stored: dict[str, Any] = json.loads(
        send(api, "POST", f"/apis/{TOPOLOGY_API}/hypernodes", body=body).read()
    )
    return stored


def _hyper_node_refusal(api: k8s.ApiClient, body: dict[str, Any]) -> str:
    with pytest.raises(ApiStatusError) as refused:
        _create_hyper_node(api, body)
    return str(refused.value)


def test_a_hypernode_member_with_two_selectors_or_a_broken_pattern_is_refused(
    api: k8s.ApiClient, hyper_node_name: str
) -> None:
    both = _hyper_node(hyper_node_name, exactMatch={"name": "n0"}, regexMatch={"pattern": "^n"})
    refusal = _hyper_node_refusal(api, both)
    assert "spec.members[0].selector" in refusal
    assert "only one of exactMatch, regexMatch" in refusal  # the CRD's rule, before the webhook

    broken = _hyper_node(hyper_node_name, regexMatch={"pattern": "n[0-9"})
    refusal = _hyper_node_refusal(api, broken)
    assert 'admission webhook "hypernode-rules.lahar.dev" denied the request' in refusal
    assert f"HyperNode {hyper_node_name} is invalid" in refusal
    assert "spec.members[0].selector.regexMatch.pattern: 'n[0-9' is not a regular expression" in (
        refusal
    )
    assert read(api, TOPOLOGY_API, "HyperNode", hyper_node_name) is None

    valid = _hyper_node(hyper_node_name, regexMatch={"pattern": "^n[0-9]+$"})
    stored = _create_hyper_node(api, valid)
    assert stored["spec"] == valid["spec"]


def test_with_the_webhook_stopped_pods_still_schedule(
    api: k8s.ApiClient, namespace: str, dev_cluster: devcluster.DevCluster
) -> None:
    create(api, make_job("kept").ns(namespace).task("worker", 1).build())
    dev_cluster.stop_component(WEBHOOK)
    try:
        # A change that leaves the spec alone (labels; the garbage collector's finalizers)
        # never calls the webhook (matchConditions)...
        path = f"/apis/{BATCH_API_VERSION}/namespaces/{namespace}/jobs/kept"
        labels = {"metadata": {"labels": {"team": "ml"}}}
        send(api, "PATCH", path, body=labels, content_type="application/merge-patch+json").read()
        # ...while a change of spec waits for it.
        scale = {"spec": {"minAvailable": 0}}
        with pytest.raises(ApiStatusError, match="failed calling webhook"):
            send(api, "PATCH", path, body=scale, content_type="application/merge-patch+json")
        for name, scheduler in (("plain", "default-scheduler"), ("lahar", "lahar")):
            create(api, make_pod(name).ns(namespace).scheduler(scheduler).cpu("100m").build())
        for name in ("plain", "lahar"):
            wait_until(
                lambda name=name: (
                    (read(api, "v1", "Pod", name, namespace) or {}).get("spec", {}).get("nodeName")
                ),
                timeout=60,
                what=f"pod {name} to be bound while the webhook is down",
            )
        # Jobs wait for the webhook (failurePolicy Fail), with a message saying so...
        refusal = _refusal(api, make_job("waits").ns(namespace).task("worker", 1).build())
        assert 'failed calling webhook "job-defaults.lahar.dev"' in refusal
        # ...while PodGroups (failurePolicy Ignore) are still created.
        create(api, make_group("gang").ns(namespace).build())
    finally:
        restart_webhook(dev_cluster)
    create(api, make_job("waits").ns(namespace).task("worker", 1).build())


def _admits(api: k8s.ApiClient, body: dict[str, object]) -> bool:
    try:
        create(api, body, dry_run=True)
    except ApiStatusError:
        return False
    return True


def _delete_refusal(api: k8s.ApiClient, path: str) -> str | None:
    """Why deleting the object is refused (asked as a dry run), or None when it would go."""
    try:
        send(api, "DELETE", path, query=[("dryRun", "All")]).read()
    except ApiStatusError as error:
        return str(error)
    return None
