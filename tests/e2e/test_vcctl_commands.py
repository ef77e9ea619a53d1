"""What Volcano's `vcctl` writes, end to end on the dev cluster, without vcctl itself: the same
objects through the API (a Command as `vcctl job suspend|resume` and `vcctl queue operate`
make it: a generated name `<object>-<action>-`, the object as controller owner reference and as
`target`, Queue Commands in namespace `default`), and the fields `vcctl queue list|get` and
`vcctl job list` read back.

- `AbortJob` / `ResumeJob` on a Job: Aborted, then running again at the next version; each
  Command deleted once performed.
- `CloseQueue` on a queue with work: Closing, then Closed once the work has finished; `OpenQueue`:
  Open again; an Event on the Queue each time (reason CloseQueue, OpenQueue).
- `OpenQueue` on a child of a closing queue: refused with a Warning Event, the child left as it
  was, the Command deleted.
- A Queue Command for a queue that does not exist, for an earlier queue of that name, or with an
  action no controller knows: deleted, nothing written, a WARNING in the controller's log. (The
  first two are written without the owner reference: the garbage collector would delete a
  Command whose owner is gone before the controller could show that it does.)
- A Job for a scheduler Lahar does not serve: no pods, no PodGroup, no status (its
  resourceVersion unchanged after the controller has acted on a job of its own), its Command left.

The dev cluster's controller runs with the default scheduler names (`lahar`, `volcano`:
`extender.devcluster.lahar.controller_argv` passes none).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, JOB_NAME_KEY
from extender.api.scheduling import API_VERSION
from extender.kube import list_objects, read, wait_until
from extender.kube.raw import send
from tests.builders import make_job, make_queue
from tests.e2e.conftest import TEST_KEY, ClusterObject, NodeFactory, events
from tests.e2e.gangs import finish
from tests.e2e.jobs import CONTROLLER, job, pods, running, submit, wait_job

QUEUE_COMMANDS = "default"  # the namespace `vcctl queue operate` writes its Commands in


def controller_ref(body: dict[str, Any]) -> dict[str, Any]:
    """`metav1.NewControllerRef(object, kind)`, as vcctl makes it of the Job or Queue it read."""
    meta = body["metadata"]
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def vcctl_command(
    api: k8s.ApiClient, target: dict[str, Any], action: str, namespace: str, *, owned: bool = True
) -> str:
    """Create the Command vcctl creates for `action` on the object `target` (as read back from the
    API); its generated name. `owned=False`: without the owner reference (vcctl always sets it)."""
    ref = controller_ref(target)
    meta: dict[str, Any] = {
        "generateName": f"{ref['name']}-{action.lower()}-",
        "namespace": namespace,
    }
    if owned:
        meta["ownerReferences"] = [ref]
    body = {
        "apiVersion": BUS_API_VERSION,
        "kind": "Command",
        "metadata": meta,
        "target": ref,
        "action": action,
    }
    path = f"/apis/{BUS_API_VERSION}/namespaces/{namespace}/commands"
    created = json.loads(send(api, "POST", path, body=body).read())
    return str(created["metadata"]["name"])


def wait_deleted(api: k8s.ApiClient, name: str, namespace: str) -> None:
    wait_until(
        lambda: read(api, BUS_API_VERSION, "Command", name, namespace) is None,
        timeout=30,
        what=f"Command {namespace}/{name} to be performed and deleted",
    )


def queue_body(api: k8s.ApiClient, name: str) -> dict[str, Any]:
    found = read(api, API_VERSION, "Queue", name)
    assert found is not None, f"Queue {name} is gone"
    return found


def state_of(api: k8s.ApiClient, name: str) -> str:
    return str((queue_body(api, name).get("status") or {}).get("state", ""))


def wait_state(api: k8s.ApiClient, name: str, state: str) -> None:
    wait_until(
        lambda: state_of(api, name) == state,
        timeout=30,
        what=f"Queue {name} to be {state}",
        describe=lambda: f"state {state_of(api, name)!r}",
    )


def queue_events(api: k8s.ApiClient, queue: str, reason: str) -> list[dict[str, Any]]:
    """Events about the cluster-scoped Queue, where client-go and Lahar record them."""
    return events(api, QUEUE_COMMANDS, reason=reason, kind="Queue", name=queue)


def vcctl_queue(name: str, weight: int = 1, parent: str = "") -> dict[str, Any]:
    """A Queue as `vcctl queue create` sends it (its status.state too, which the API server drops
    on create: the status is a subresource)."""
    body = make_queue(name).weight(weight).state("Open").build()
    if parent:
        body["spec"]["parent"] = parent
    return body


def test_job_suspend_and_resume_by_vcctls_commands(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    own_nodes(1, cpu="4")
    submit(
        api, make_job("paused").ns(namespace).task("main", 2).pinned(TEST_KEY, namespace).build()
    )
    running(api, namespace, "paused", 2)
    suspend = vcctl_command(api, job(api, namespace, "paused"), "AbortJob", namespace)
    aborted = wait_job(api, namespace, "paused", "Aborted")
    assert aborted["state"]["reason"] == "AbortJob"
    wait_until(lambda: not pods(api, namespace, "paused"), timeout=30, what="the pods to go")
    wait_deleted(api, suspend, namespace)
    resume = vcctl_command(api, job(api, namespace, "paused"), "ResumeJob", namespace)
    again = running(api, namespace, "paused", 2)
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in again.values()} == {"1"}
    resumed = wait_job(api, namespace, "paused", "Running")
    assert (resumed["version"], resumed["retryCount"]) == (1, 0)
    wait_deleted(api, resume, namespace)


def test_queue_close_ends_closed_once_its_work_is_done_and_open_opens_it(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, cluster_object: ClusterObject
) -> None:
    own_nodes(1, cpu="4")
    queue = cluster_object(vcctl_queue(f"{namespace}-q", weight=2))
    wait_state(api, queue, "Open")
    submit(
        api,
        make_job("work")
        .ns(namespace)
        .queue(queue)
        .task("main", 2)
        .pinned(TEST_KEY, namespace)
        .build(),
    )
    names = list(running(api, namespace, "work", 2))
    close = vcctl_command(api, queue_body(api, queue), "CloseQueue", QUEUE_COMMANDS)
    wait_deleted(api, close, QUEUE_COMMANDS)
    assert state_of(api, queue) == "Closing"  # its job still runs
    (said,) = queue_events(api, queue, "CloseQueue")
    assert said["type"] == "Normal" and close in said["message"]
    assert said["involvedObject"]["uid"] == queue_body(api, queue)["metadata"]["uid"]
    finish(api, namespace, names)
    wait_job(api, namespace, "work", "Completed")
    wait_state(api, queue, "Closed")
    reopen = vcctl_command(api, queue_body(api, queue), "OpenQueue", QUEUE_COMMANDS)
    wait_deleted(api, reopen, QUEUE_COMMANDS)
    assert state_of(api, queue) == "Open"
    (opened,) = queue_events(api, queue, "OpenQueue")
    assert opened["type"] == "Normal" and "Closed -> Open" in opened["message"]


def test_a_child_of_a_closing_queue_is_not_opened(
    api: k8s.ApiClient, namespace: str, cluster_object: ClusterObject
) -> None:
    """As Volcano: open the parent first. The child keeps its own state meanwhile (it takes no
    new work while its parent is not Open)."""
    parent = cluster_object(vcctl_queue(f"{namespace}-p"))
    child = cluster_object(vcctl_queue(f"{namespace}-c", parent=parent))
    wait_state(api, child, "Open")
    for name, action in ((child, "CloseQueue"), (parent, "CloseQueue")):
        closing = vcctl_command(api, queue_body(api, name), action, QUEUE_COMMANDS)
        wait_deleted(api, closing, QUEUE_COMMANDS)
    wait_state(api, parent, "Closed")  # (no work in it)
    refused = vcctl_command(api, queue_body(api, child), "OpenQueue", QUEUE_COMMANDS)
    wait_deleted(api, refused, QUEUE_COMMANDS)
    assert state_of(api, child) == "Closed"
    (warned,) = queue_events(api, child, "OpenQueue")
    assert warned["type"] == "Warning" and f"queue {parent} above it is Closed" in warned["message"]


@pytest.mark.parametrize(
    "case",
    [
        ("missing", "CloseQueue", "does not exist"),
        ("earlier", "CloseQueue", "is for an earlier Queue"),
        ("exists", "SyncQueue", "asks for unknown action 'SyncQueue'"),
    ],
    ids=["no such queue", "an earlier queue of that name", "an action not known"],
)
def test_a_queue_command_that_cannot_be_performed_is_deleted(
    api: k8s.ApiClient,
    namespace: str,
    cluster_object: ClusterObject,
    dev_cluster: devcluster.DevCluster,
    case: tuple[str, str, str],
) -> None:
    """`case`: which queue the Command names, its action, and what the controller says of it."""
    which, action, said = case
    queue = cluster_object(vcctl_queue(f"{namespace}-q"))
    wait_state(api, queue, "Open")
    target = queue_body(api, queue)
    if which == "missing":
        target["metadata"]["name"] = f"{namespace}-nope"
    elif which == "earlier":
        target["metadata"]["uid"] = f"{secrets.token_hex(4)}-0000-4000-8000-000000000000"
    command = vcctl_command(api, target, action, QUEUE_COMMANDS, owned=which == "exists")
    wait_deleted(api, command, QUEUE_COMMANDS)
    assert state_of(api, queue) == "Open"
    assert queue_events(api, queue, action) == []
    (log,) = [p.log for p in dev_cluster.state.processes if p.name == CONTROLLER]
    told = [line for line in log.read_text().splitlines() if f"{QUEUE_COMMANDS}/{command}" in line]
    assert len(told) == 1 and "WARNING" in told[0] and said in told[0]


def test_a_job_for_another_scheduler_is_left_alone(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    own_nodes(1, cpu="4")
    alien = make_job("alien").ns(namespace).task("main", 2).min_available(2)
    submit(api, alien.scheduler_name("other-scheduler").pinned(TEST_KEY, namespace).build())
    before = job(api, namespace, "alien")
    suspend = vcctl_command(api, before, "AbortJob", namespace)
    # A job of Lahar's own, submitted after it: once it runs, the controller has long seen alien.
    submit(api, make_job("ours").ns(namespace).task("main", 1).pinned(TEST_KEY, namespace).build())
    running(api, namespace, "ours", 1)
    time.sleep(3)
    after = job(api, namespace, "alien")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "status" not in after or not after["status"].get("state")
    listed = list_objects(
        api, "v1", "Pod", namespace=namespace, label_selector=f"{JOB_NAME_KEY}=alien"
    )
    assert listed == []
    groups = [
        g["metadata"]["name"]
        for g in list_objects(api, API_VERSION, "PodGroup", namespace=namespace)
    ]
    assert not any(name.startswith("alien-") for name in groups)
    assert read(api, BUS_API_VERSION, "Command", suspend, namespace) is not None
    assert read(api, BATCH_API_VERSION, "Job", "alien", namespace) is not None


def test_the_fields_vcctl_lists_are_there(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, cluster_object: ClusterObject
) -> None:
    """`vcctl queue list|get`: a Queue's spec.weight, status.state and spec.parent, and the
    PodGroups' spec.queue and status.phase it counts per queue; `vcctl job list`: the Job's
    phase, its tasks' replicas, minAvailable and the pod counts of its status."""
    own_nodes(1, cpu="4")
    parent = cluster_object(vcctl_queue(f"{namespace}-p", weight=3))
    leaf = cluster_object(vcctl_queue(f"{namespace}-l", weight=2, parent=parent))
    submit(
        api,
        make_job("listed")
        .ns(namespace)
        .queue(leaf)
        .task("main", 2)
        .pinned(TEST_KEY, namespace)
        .build(),
    )
    running(api, namespace, "listed", 2)
    wait_state(api, leaf, "Open")
    shown = queue_body(api, leaf)
    assert (shown["spec"]["weight"], shown["spec"]["parent"]) == (2, parent)
    assert queue_body(api, parent)["spec"]["weight"] == 3 and state_of(api, parent) == "Open"
    (group,) = [
        g
        for g in list_objects(api, API_VERSION, "PodGroup", namespace=namespace)
        if g["metadata"]["name"].startswith("listed-")
    ]
    assert group["spec"]["queue"] == leaf
    wait_until(
        lambda: (
            (read(api, API_VERSION, "PodGroup", group["metadata"]["name"], namespace) or {})
            .get("status", {})
            .get("phase")
            == "Running"
        ),
        timeout=30,
        what="the PodGroup to be Running",
    )
    status = wait_job(api, namespace, "listed", "Running")
    assert (status["minAvailable"], status["running"], status.get("retryCount", 0)) == (2, 2, 0)
    assert [t["replicas"] for t in job(api, namespace, "listed")["spec"]["tasks"]] == [2]
