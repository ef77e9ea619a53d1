"""Queues, fairness and Lahar's own preemption through the real stock kube-scheduler.

Queues and PriorityClasses are cluster-scoped: each test names its own after its namespace and
deletes them afterwards. Victims are checked by what the API shows: whole gangs gone, the rest
untouched, and the preemptor's gang bound whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.api.scheduling import API_VERSION
from extender.cli.main import main
from extender.kube import (
    KubeError,
    apply_object,
    condition,
    delete,
    patch_queue_status,
    pod_when,
    read,
    wait_until,
)
from extender.kube.raw import ApiStatusError, send
from tests.builders import make_group, make_queue
from tests.e2e.conftest import ClusterObject, NodeFactory, PodFactory, events, priority_class
from tests.e2e.gangs import (
    BindTimeline,
    alive,
    bound,
    finish,
    refused_as,
    submit_gang,
    wait_bound,
    wait_phase,
)


def test_a_closed_queue_admits_nothing(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    own_nodes(1, cpu="4")
    queue = f"{namespace}-q"
    cluster_object(make_queue(queue).build())
    # The webhook refuses a PodGroup for a Closed queue; one made while it was Open stays.
    apply_object(api, make_group("job").ns(namespace).min_member(2).queue(queue).build())
    set_state(api, queue, "Closed")
    names = submit_gang(api, namespace, pod, "job", 2, queue=queue, group=False)
    for name in names:
        pod_when(
            api,
            namespace,
            name,
            "refused for the closed queue",
            refused_as(api, namespace, "job", "is Closed"),
        )
    assert bound(api, namespace, names) == []


@pytest.mark.parametrize("reclaim", [False, True], ids=["preempt", "reclaim"])
def test_the_shipped_policy_evicts_nothing_as_volcanos_shipped_configuration(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
    *,
    reclaim: bool,
) -> None:
    """Volcano's shipped actions (enqueue, allocate, backfill) evict nothing; nor does the shipped
    policy: a gang of higher priority in the same queue, or of a queue below its share, that
    policy/preemption.yaml would make room for, waits whole and says why."""
    own_nodes(2, cpu="4")
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        cluster_object(priority_class(name, value))
    running_queue = wanting_queue = ""
    if reclaim:
        wanting_queue = cluster_object(make_queue(f"{namespace}-a").build())
        running_queue = cluster_object(make_queue(f"{namespace}-b").deserved(cpu="2").build())
    running_gangs = [
        submit_gang(
            api, namespace, pod, f"running{i}", 2, cpu="2", priority_class=low, queue=running_queue
        )
        for i in range(2)
    ]
    for members in running_gangs:
        wait_bound(api, namespace, members, 2, "the running gang bound")
    waiting = submit_gang(
        api, namespace, pod, "urgent", 2, cpu="2", priority_class=high, queue=wanting_queue
    )
    pod_when(api, namespace, waiting[0], "refused", refused_as(api, namespace, "urgent"))
    time.sleep(12)  # more than two of policy/preemption.yaml's preemption intervals
    assert [alive(api, namespace, members) for members in running_gangs] == running_gangs
    assert bound(api, namespace, waiting) == []
    assert not events(api, namespace, reason="Preempting")


@pytest.mark.usefixtures("preempting")
def test_a_high_priority_gang_preempts_the_fewest_whole_lower_priority_gangs(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    own_nodes(2, cpu="4")
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        cluster_object(priority_class(name, value))
    running = {
        "wide": submit_gang(api, namespace, pod, "wide", 2, cpu="2", priority_class=low),
        "one": submit_gang(api, namespace, pod, "one", 1, cpu="2", priority_class=low),
        "two": submit_gang(api, namespace, pod, "two", 1, cpu="2", priority_class=low),
    }
    for name, members in running.items():
        wait_bound(api, namespace, members, len(members), f"low-priority gang {name} bound")

    with BindTimeline(api, namespace) as timeline:
        urgent = submit_gang(api, namespace, pod, "urgent", 2, cpu="1", priority_class=high)
        wait_bound(api, namespace, urgent, 2, "the high-priority gang bound whole")
    assert timeline.partial() == []

    left = {name: alive(api, namespace, members) for name, members in running.items()}
    gone = [name for name, members in left.items() if not members]
    assert len(gone) == 1 and gone[0] in ("one", "two")  # one pod: fewer than "wide"'s two
    assert left["wide"] == running["wide"]  # untouched
    [said] = events(api, namespace, reason="Preempting", kind="PodGroup", name="urgent")
    assert f"{namespace}/{gone[0]}" in said["message"]
    assert events(api, namespace, reason="Preempted", kind="PodGroup", name=gone[0])


@pytest.mark.usefixtures("preempting")
def test_a_queue_below_its_share_reclaims_from_one_above_it(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    own_nodes(2, cpu="4")
    starved, greedy = f"{namespace}-a", f"{namespace}-b"
    cluster_object(make_queue(starved).build())
    cluster_object(make_queue(greedy).deserved(cpu="4").build())  # has 8 below
    greedy_gangs = [
        submit_gang(api, namespace, pod, f"b{i}", 2, cpu="1", queue=greedy) for i in range(4)
    ]
    for members in greedy_gangs:
        wait_bound(api, namespace, members, 2, "queue b's gang bound")

    with BindTimeline(api, namespace) as timeline:
        wanted = submit_gang(api, namespace, pod, "a0", 2, cpu="1", queue=starved)
        wait_bound(api, namespace, wanted, 2, "queue a's gang bound after reclaiming")
    assert timeline.partial() == []

    left = [alive(api, namespace, members) for members in greedy_gangs]
    assert sorted(len(members) for members in left) == [0, 2, 2, 2]  # one whole gang reclaimed
    assert events(api, namespace, reason="Preempting", kind="PodGroup", name="a0")


def queue_status(api: k8s.ApiClient, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (read(api, API_VERSION, "Queue", name) or {}).get("status") or {}
    return status


def test_queue_status_counts_podgroups_and_what_they_are_allocated(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    wait_until(lambda: read(api, API_VERSION, "Queue", "default"), timeout=30, what="default Queue")
    own_nodes(1, cpu="6")
    queue = f"{namespace}-q"
    cluster_object(make_queue(queue).build())
    first = submit_gang(api, namespace, pod, "first", 2, cpu="1", queue=queue)
    second = submit_gang(api, namespace, pod, "second", 1, cpu="1500m", queue=queue)
    submit_gang(api, namespace, pod, "big", 2, cpu="2", queue=queue)  # no room left for it
    wait_bound(api, namespace, first + second, 3, "the two gangs that fit bound")

    def shows(**wanted: Any) -> None:
        def check() -> dict[str, Any] | None:
            status = queue_status(api, queue)
            return status if all(status.get(k) == v for k, v in wanted.items()) else None

        wait_until(
            check,
            timeout=30,
            what=f"queue status {wanted}",
            describe=lambda: str(queue_status(api, queue)),
        )

    allocated = {"cpu": "3500m", "pods": "3"}
    shows(state="Open", running=2, pending=1, allocated=allocated)
    finish(api, namespace, first)  # its capacity goes to big
    shows(running=2, completed=1, pending=0, allocated={"cpu": "5500m", "pods": "3"})
    set_state(api, queue, "Closing")
    finish(api, namespace, second)
    shows(completed=2, running=1)  # the writer has seen second end: big still runs
    assert queue_status(api, queue)["state"] == "Closing"
    finish(api, namespace, [f"big-{i}" for i in range(2)])
    shows(state="Closed", running=0, completed=3)


def test_a_status_patch_onto_an_older_version_changes_nothing(
    api: k8s.ApiClient, namespace: str, cluster_object: ClusterObject
) -> None:
    """What keeps the extender from overwriting a user's close with a state it derived from an
    older version of the Queue: the patch names that version, and the API server refuses it."""
    queue = f"{namespace}-q"
    cluster_object(make_queue(queue).build())
    found = read(api, API_VERSION, "Queue", queue)
    assert found is not None
    older = found["metadata"]["resourceVersion"]
    set_state(api, queue, "Closing")  # a user closes it: a newer version
    assert patch_queue_status(api, queue, {"state": "Open"}, older) is False
    # (Closed by now, perhaps: the extender closes a Closing queue nobody uses; never Open)
    assert queue_status(api, queue)["state"] in ("Closing", "Closed")


def set_state(api: k8s.ApiClient, queue: str, state: str) -> None:
    """As an operator closes a queue: the state lives in the status."""
    patch_queue_status(api, queue, {"state": state})


def test_the_default_queue_cannot_be_deleted(api: k8s.ApiClient) -> None:
    """The webhook keeps it (the extender also makes it again if it goes while no webhook runs:
    see the queue writer's unit tests)."""
    wait_until(lambda: read(api, API_VERSION, "Queue", "default"), timeout=30, what="default Queue")
    with pytest.raises(KubeError, match="the default queue cannot be deleted"):
        delete(api, API_VERSION, "Queue", "default")
    assert read(api, API_VERSION, "Queue", "default") is not None


def test_a_gang_whose_queue_is_deleted_says_so_and_runs_whole_once_it_is_back(
    capsys: pytest.CaptureFixture[str],
    *,
    kubeconfig: Path,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    """A PodGroup admitted while its queue existed, the queue deleted before the gang could run
    (the webhook refuses that delete once it has seen the PodGroup; here it is told to skip the
    queue, as when the delete comes in the instant after the PodGroup's creation)."""
    own_nodes(1, cpu="4")
    queue = f"{namespace}-q"
    cluster_object(make_queue(queue).build())
    blocker = submit_gang(api, namespace, pod, "blocker", 1, cpu="3")
    wait_bound(api, namespace, blocker, 1, "the blocker bound")
    names = submit_gang(api, namespace, pod, "job", 2, cpu="1", queue=queue)
    wait_phase(api, namespace, "job", "Pending", reason="NotEnoughResources")

    with webhook_skipping(api, queue):
        delete(api, API_VERSION, "Queue", queue)
    status = wait_phase(api, namespace, "job", "Pending", reason="NoQueue")
    said = condition(status, "Unschedulable")
    assert said["status"] == "True"
    assert f"gang {namespace}/job: queue {queue} does not exist" in said["message"]
    where = ("--kubeconfig", str(kubeconfig), "-n", namespace)
    code, out, err = _lahar(capsys, "explain", "podgroup/job", *where)
    assert code == 0, err
    assert "Unschedulable=True (NoQueue)" in out and f"queue {queue} does not exist" in out

    # Room frees, but without its queue the gang stays whole where it is: nothing of it binds.
    finish(api, namespace, blocker)
    time.sleep(3)
    assert bound(api, namespace, names) == []

    with BindTimeline(api, namespace) as timeline:
        apply_object(api, make_queue(queue).build())  # the only change: the queue is back
        wait_bound(api, namespace, names, 2, "the gang bound once its queue is back")
    assert timeline.partial() == []
    wait_phase(api, namespace, "job", "Running")


def _lahar(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = main(list(words))
    out, err = capsys.readouterr()
    return code, out, err


WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/lahar-webhook"


@contextmanager
def webhook_skipping(api: k8s.ApiClient, queue: str) -> Iterator[None]:
    """The webhook's queue rules not called for `queue` (a match condition), while the block
    runs: its delete goes through as if the webhook had not seen the PodGroups naming it."""
    skip = {"name": f"skip-{queue}"[:63], "expression": f"request.name != '{queue}'"}
    _edit_queue_rules(api, lambda conditions: [*conditions, skip])
    try:
        wait_until(
            lambda: _deletable(api, queue),
            timeout=30,
            what=f"the API server to stop calling the webhook for queue {queue}",
        )
        yield
    finally:
        _edit_queue_rules(api, lambda conditions: [c for c in conditions if c != skip])


def _edit_queue_rules(api: k8s.ApiClient, edit: Any) -> None:
    config = json.loads(send(api, "GET", WEBHOOKS).read())
    for webhook in config["webhooks"]:
        if webhook["name"] == "queue-rules.lahar.dev":
            webhook["matchConditions"] = edit(webhook.get("matchConditions") or [])
    send(api, "PUT", WEBHOOKS, body=config).read()


def _deletable(api: k8s.ApiClient, queue: str) -> bool:
    try:
        send(api, "DELETE", f"/apis/{API_VERSION}/queues/{queue}", query=[("dryRun", "All")]).read()
    except ApiStatusError:
        return False
    return True
