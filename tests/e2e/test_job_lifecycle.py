"""Volcano Job lifecycle corners users of Volcano hit, end to end on the dev cluster (the real
apiserver and garbage collector, the Lahar controller and scheduler, KWOK as the kubelet):

- a Job deleted and created again under the same name while the old pods still terminate: the
  old pods, PodGroup and plugin objects are never taken for the new job's (on Volcano the old
  pods' deletion could fail the new job, or its pods never start);
- RestartJob / RestartTask / RestartPod keep the PodGroup, and the restarted pods are still
  scheduled as a gang;
- suspend / resume (`lahar job suspend|resume`, or a Command made by hand) never count as retries
  (on Volcano each resume counts, and the third fails a job of maxRetry 3);
- ttlSecondsAfterFinished 0, and a TTL changed once the job finished.

(A pod template the API server refuses, which ends the job Failed with reason PodCreateFailed, and
the TTL of a job whose objects garbage collection removes are tested in test_jobs.py.)

KWOK deletes a terminating pod at once: the tests that need old pods to linger hold them with a
finalizer of their own (`HOLD`) and release it themselves.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION
from extender.api.scheduling import API_VERSION
from extender.cli.main import main
from extender.devcluster import health
from extender.devcluster.lifecycle import end_pod
from extender.kube import KubeError, apply_object, delete, list_objects, read, wait_until
from extender.kube.raw import send
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory, events
from tests.e2e.gangs import finish, group_of
from tests.e2e.jobs import job, pods, running, status, submit, wait_job

HOLD = "lahar.io/e2e-hold"
KCM = "kube-controller-manager"


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def hold(api: k8s.ApiClient, namespace: str, names: list[str]) -> None:
    """Keep the pods terminating once deleted, until `release`."""
    for name in names:
        apply_object(
            api,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "finalizers": [HOLD]},
            },
            field_manager="lahar-e2e-hold",
        )


def release(api: k8s.ApiClient, namespace: str) -> None:
    """Drop `HOLD` from every pod of the namespace that has it."""
    for pod in list_objects(api, "v1", "Pod", namespace=namespace):
        finalizers = pod["metadata"].get("finalizers") or []
        if HOLD in finalizers:
            kept = [f for f in finalizers if f != HOLD]
            send(
                api,
                "PATCH",
                _pod_path(namespace, pod["metadata"]["name"]),
                body={"metadata": {"finalizers": kept or None}},
                content_type="application/merge-patch+json",
            ).read()


@pytest.fixture
def held(api: k8s.ApiClient, namespace: str) -> Iterator[None]:
    """Whatever the test does, no pod it held is left behind."""
    try:
        yield
    finally:
        release(api, namespace)


def owner_uid(obj: dict[str, Any]) -> str:
    owners = [o for o in obj["metadata"].get("ownerReferences") or [] if o.get("controller")]
    return str(owners[0]["uid"]) if owners else ""


def job_events(api: k8s.ApiClient, namespace: str, name: str, reason: str) -> list[str]:
    return [
        e.get("message", "") for e in events(api, namespace, reason=reason, kind="Job", name=name)
    ]


@contextmanager
def garbage_collection_paused(cluster: devcluster.DevCluster) -> Iterator[None]:
    """kube-controller-manager (and so the garbage collector) stopped for the block: what a slow
    garbage collector on a busy cluster does, deterministically. Its dependents outlive a deleted
    job until the block ends; then they are deleted (so their deletion reaches the Lahar
    controller while a new namesake exists)."""
    cluster.stop_component(KCM)
    try:
        yield
    finally:
        record = cluster.start_component(KCM, die_with_parent=True)
        url = f"https://127.0.0.1:{cluster.state.ports['kcm']}/healthz"
        health.wait_healthy(record, url, timeout=60)


def test_a_job_made_again_while_its_namesakes_pods_terminate(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    held: None,
) -> None:
    """Job `again` (2 pods, the ssh and svc plugins, PodEvicted -> TerminateJob) is deleted
    while the garbage collector is slow, and a job of the same name and another spec (3 pods of
    2 cpu, task minAvailable 2: a PodGroup spec equal but for its minResources) is created at
    once. The new job gets a PodGroup of its own at once, but makes no pod while the old job's
    ssh Secret is still there (its pods would mount the old keys); once garbage collection removes
    it, the job gets its own, makes the pod whose name is free and waits for the names the old
    pods hold (not refused, not adopted); the old pods' deletion is no eviction of the new job;
    once they are gone the new job runs whole, at version 0 with no retry."""
    own_nodes(1, cpu="8")
    first = (
        make_job("again")
        .ns(namespace)
        .task("main", 2)
        .plugin("ssh")
        .plugin("svc")
        .policy("PodEvicted", "TerminateJob")
    )
    submit(api, first.pinned(TEST_KEY, namespace).build())
    before = running(api, namespace, "again", 2)
    old_uid = job(api, namespace, "again")["metadata"]["uid"]
    wait_until(
        lambda: read(api, API_VERSION, "PodGroup", f"again-{old_uid}", namespace),
        timeout=30,
        what="the first job's PodGroup",
    )
    hold(api, namespace, sorted(before))
    second = (
        make_job("again")
        .ns(namespace)
        .task("main", 3, cpu="2", min_available=2)
        .min_available(2)
        .plugin("ssh")
        .plugin("svc")
        .policy("PodEvicted", "TerminateJob")
    )
    with garbage_collection_paused(dev_cluster):
        delete(api, "batch.volcano.sh/v1alpha1", "Job", "again", namespace)  # as kubectl does
        wait_until(lambda: not job(api, namespace, "again"), timeout=30, what="the job to go")
        submit(api, second.pinned(TEST_KEY, namespace).build())
        new_uid = job(api, namespace, "again")["metadata"]["uid"]
        assert new_uid != old_uid
        group = wait_until(
            lambda: read(api, API_VERSION, "PodGroup", f"again-{new_uid}", namespace),
            timeout=30,
            what="the new job's PodGroup while the old one lingers",
        )
        assert owner_uid(group) == new_uid and group["spec"]["minMember"] == 2
        assert read(api, API_VERSION, "PodGroup", f"again-{old_uid}", namespace) is not None
        time.sleep(5)  # passes of the controller, each finding the old Secret in place
        assert owner_uid(read(api, "v1", "Secret", "again-ssh", namespace)) == old_uid
        old = pods(api, namespace, "again")
        assert {n: owner_uid(p) for n, p in old.items()} == dict.fromkeys(before, old_uid)

    # The garbage collector deletes the old pods (held terminating) and PodGroup now.
    wait_until(
        lambda: (
            all(
                p["metadata"].get("deletionTimestamp")
                for n, p in pods(api, namespace, "again").items()
                if n != "again-main-2"
            )
            and read(api, API_VERSION, "PodGroup", f"again-{old_uid}", namespace) is None
        ),
        timeout=60,
        what="the garbage collector to delete the old pods and PodGroup",
    )
    made = wait_until(
        lambda: pods(api, namespace, "again").get("again-main-2"),
        timeout=90,
        what="the new job's pod of the free name, once the old Secret went",
    )
    assert owner_uid(made) == new_uid
    assert owner_uid(read(api, "v1", "Secret", "again-ssh", namespace)) == new_uid
    time.sleep(3)  # time for the old pods' deletion to reach the controller
    state = status(api, namespace, "again")
    assert state["state"]["phase"] == "Pending", state
    assert (state.get("version", 0), state.get("retryCount", 0)) == (0, 0)
    assert state.get("terminating", 0) == 0, state  # the old pods are not the new job's
    assert job_events(api, namespace, "again", "FailedCreatePod") == []

    release(api, namespace)
    new = running(api, namespace, "again", 3)
    assert {owner_uid(p) for p in new.values()} == {new_uid}
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in new.values()} == {"0"}
    assert not {p["metadata"]["uid"] for p in new.values()} & {
        p["metadata"]["uid"] for p in before.values()
    }
    state = wait_job(api, namespace, "again", "Running")
    assert (state.get("version", 0), state.get("retryCount", 0)) == (0, 0)
    assert job_events(api, namespace, "again", "FailedCreatePod") == []
    for kind, name in (("Secret", "again-ssh"), ("ConfigMap", "again-svc"), ("Service", "again")):
        found = wait_until(
            lambda kind=kind, name=name: read(api, "v1", kind, name, namespace),
            timeout=30,
            what=f"the new job's {kind} {name}",
        )
        assert owner_uid(found) == new_uid, (kind, found["metadata"].get("ownerReferences"))


def command(job_body: dict[str, Any], action: str) -> dict[str, Any]:
    """A Command written by hand, as `vcctl job suspend|resume` writes it (a name of its own)."""
    meta = job_body["metadata"]
    target = {"apiVersion": BATCH_API_VERSION, "kind": "Job", "name": meta["name"]}
    target["uid"] = meta["uid"]
    return {
        "apiVersion": BUS_API_VERSION,
        "kind": "Command",
        "metadata": {
            "name": f"{meta['name']}-{action.lower()}-{secrets.token_hex(3)}",
            "namespace": meta["namespace"],
            "ownerReferences": [{**target, "controller": True}],
        },
        "target": target,
        "action": action,
    }


def test_suspend_and_resume_never_count_as_retries(
    capsys: pytest.CaptureFixture[str],
    kubeconfig: Path,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
) -> None:
    """A job of maxRetry 1 suspended and resumed three times, by `lahar job suspend|resume` and
    by Commands made by hand: each time its pods go, it is Aborted, then runs again at the next
    version; retryCount stays 0 throughout, and it ends Running."""
    own_nodes(1, cpu="4")
    body = make_job("pausable").ns(namespace).task("main", 2).max_retry(1)
    submit(api, body.pinned(TEST_KEY, namespace).build())
    running(api, namespace, "pausable", 2)
    wait_job(api, namespace, "pausable", "Running")
    where = ("--kubeconfig", str(kubeconfig), "-n", namespace)
    for cycle in range(3):
        by_hand = cycle == 1
        if by_hand:
            apply_object(api, command(job(api, namespace, "pausable"), "AbortJob"))
        else:
            assert main(["job", "suspend", "pausable", *where]) == 0
        aborted = wait_job(api, namespace, "pausable", "Aborted")
        assert aborted.get("retryCount", 0) == 0, aborted
        wait_until(lambda: not pods(api, namespace, "pausable"), timeout=30, what="the pods to go")
        if by_hand:
            apply_object(api, command(job(api, namespace, "pausable"), "ResumeJob"))
        else:
            assert main(["job", "resume", "pausable", *where]) == 0
        resumed = wait_until(
            lambda cycle=cycle: (
                s
                if (s := status(api, namespace, "pausable")).get("version") == cycle + 1
                and (s.get("state") or {}).get("phase") == "Running"
                else None
            ),
            timeout=60,
            what=f"the job to run again at version {cycle + 1}",
            describe=lambda: str(status(api, namespace, "pausable")),
        )
        assert resumed.get("retryCount", 0) == 0, resumed
        assert "Restarting" in [c["status"] for c in resumed["conditions"]]
    capsys.readouterr()
    again = running(api, namespace, "pausable", 2)
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in again.values()} == {"3"}
    assert list_objects(api, BUS_API_VERSION, "Command", namespace=namespace) == []


class Binds:
    """When each pod (by uid, so a pod made again under its name is another) was first seen
    bound, sampled in a thread while the `with` block runs; `before` holds the pods bound when it
    started. `partial` names each gang whose pods bound since were bound more than `spread`
    seconds apart, or not all of them."""

    def __init__(self, api: k8s.ApiClient, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.bound_at: dict[str, float] = {}
        self.gang_of: dict[str, str] = {}
        self.before: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Binds:
        self.sample()
        self.before = set(self.bound_at)
        self._thread.start()
        return self

    def __exit__(self, *error: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic()
        for pod in list_objects(self.api, "v1", "Pod", namespace=self.namespace):
            uid = pod["metadata"]["uid"]
            if gang := group_of(pod):
                self.gang_of.setdefault(uid, gang)
            if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
                self.bound_at.setdefault(uid, now)

    def partial(self, spread: float = 2.0) -> list[str]:
        found = []
        for gang in sorted(set(self.gang_of.values())):
            uids = [u for u, g in self.gang_of.items() if g == gang and u not in self.before]
            times = [self.bound_at[u] for u in uids if u in self.bound_at]
            if times and (len(times) < len(uids) or max(times) - min(times) > spread):
                found.append(gang)
        return found


@pytest.mark.parametrize(
    ("action", "replaced", "version"),
    [("RestartJob", 4, 1), ("RestartTask", 3, 0), ("RestartPod", 1, 0)],
)
def test_a_restart_keeps_the_pod_group_and_the_gang(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    *,
    action: str,
    replaced: int,
    version: int,
) -> None:
    """Gang `gang` (ps + 3 workers of 2 cpu, minAvailable 4) fills two 4-cpu nodes; gang `rival`
    (2 x 2 cpu) waits. A worker fails and the policy restarts the job, the task or the pod: the
    PodGroup is the same object throughout (uid unchanged: never deleted and made again), and
    the pods made again are bound as a gang (all together, never some of them), whichever gang
    gets the room first; the job runs again with one retry counted."""
    own_nodes(2, cpu="4")
    gang = (
        make_job("gang")
        .ns(namespace)
        .task("ps", 1, cpu="2")
        .task("worker", 3, cpu="2")
        .min_available(4)
        .policy("PodFailed", action)
    )
    submit(api, gang.pinned(TEST_KEY, namespace).build())
    running(api, namespace, "gang", 4)
    wait_job(api, namespace, "gang", "Running")
    uid = job(api, namespace, "gang")["metadata"]["uid"]
    group = wait_until(
        lambda: read(api, API_VERSION, "PodGroup", f"gang-{uid}", namespace),
        timeout=30,
        what="the PodGroup",
    )
    rival = make_job("rival").ns(namespace).task("main", 2, cpu="2").min_available(2)
    submit(api, rival.pinned(TEST_KEY, namespace).build())
    rival_uid = wait_until(lambda: job(api, namespace, "rival"), timeout=30, what="the rival")[
        "metadata"
    ]["uid"]

    def rival_waits() -> bool:
        """Its PodGroup says why it waits; no pod of it is made before Lahar admits it."""
        shown = read(api, API_VERSION, "PodGroup", f"rival-{rival_uid}", namespace)
        conditions = ((shown or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Unschedulable" and c["status"] == "True" for c in conditions)

    wait_until(rival_waits, timeout=30, what="the rival's PodGroup to say why it waits")
    assert pods(api, namespace, "rival") == {}

    with Binds(api, namespace) as binds:
        end_pod(api, namespace, "gang-worker-0", exit_code=1)
        rival_ended = False

        def settled() -> bool:
            nonlocal rival_ended
            live = [
                p
                for p in pods(api, namespace, "gang").values()
                if not p["metadata"].get("deletionTimestamp")
            ]
            made = [p for p in live if p["metadata"]["uid"] not in binds.before]
            if (
                len(live) == 4
                and all(p["status"].get("phase") == "Running" for p in live)
                and len(made) == replaced
            ):
                return True
            if not rival_ended and len(running_pods(api, namespace, "rival")) == 2:
                finish(api, namespace, ["rival-main-0", "rival-main-1"])  # room for the gang
                rival_ended = True
            return False

        wait_until(
            settled,
            timeout=90,
            what=f"the gang to run again after {action}",
            describe=lambda: str(
                {n: p["status"].get("phase") for n, p in pods(api, namespace, "gang").items()}
            ),
        )
    assert binds.partial() == [], binds.partial()
    state = wait_job(api, namespace, "gang", "Running")
    assert (state.get("version", 0), state.get("retryCount", 0)) == (version, 1), state
    kept = read(api, API_VERSION, "PodGroup", f"gang-{uid}", namespace)
    assert kept is not None and kept["metadata"]["uid"] == group["metadata"]["uid"]
    assert kept["metadata"]["creationTimestamp"] == group["metadata"]["creationTimestamp"]


def running_pods(api: k8s.ApiClient, namespace: str, name: str) -> list[str]:
    return [
        n
        for n, p in pods(api, namespace, name).items()
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


def test_ttl_zero_deletes_at_once_after_saying_how_it_ended(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """ttlSecondsAfterFinished 0: the job is deleted as soon as it completes, and garbage
    collection removes its pods and PodGroup; Completed was written (and told in an Event)
    first, so whoever watched the job saw how it ended."""
    own_nodes(1, cpu="4")
    body = make_job("brief").ns(namespace).task("main", 2).ttl(0)
    submit(api, body.pinned(TEST_KEY, namespace).build())
    running(api, namespace, "brief", 2)
    uid = job(api, namespace, "brief")["metadata"]["uid"]
    finish(api, namespace, ["brief-main-0", "brief-main-1"])
    wait_until(lambda: not job(api, namespace, "brief"), timeout=30, what="the job to be deleted")
    told = wait_until(
        lambda: job_events(api, namespace, "brief", "Completed"),
        timeout=30,
        what="a Completed event on the job",
    )
    assert told[0].startswith("Completed: ")
    wait_until(
        lambda: (
            not pods(api, namespace, "brief")
            and read(api, API_VERSION, "PodGroup", f"brief-{uid}", namespace) is None
        ),
        timeout=60,
        what="garbage collection to remove the job's pods and PodGroup",
    )


def test_a_ttl_changed_once_the_job_finished_is_refused_as_on_volcano(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> None:
    """Volcano's webhook lets a job's spec change only in minAvailable, replicas and
    priorityClassName; Lahar's too, so ttlSecondsAfterFinished stays fixed, named in the refusal.
    The finished job is kept, its TTL as it was."""
    own_nodes(1, cpu="4")
    body = make_job("kept").ns(namespace).task("main", 1).ttl(3600)
    submit(api, body.pinned(TEST_KEY, namespace).build())
    running(api, namespace, "kept", 1)
    finish(api, namespace, ["kept-main-0"])
    wait_job(api, namespace, "kept", "Completed")
    shorter = body.ttl(1).pinned(TEST_KEY, namespace).build()
    with pytest.raises(KubeError, match=r"spec\.ttlSecondsAfterFinished: cannot change"):
        submit(api, shorter)
    time.sleep(3)
    assert job(api, namespace, "kept")["spec"]["ttlSecondsAfterFinished"] == 3600
