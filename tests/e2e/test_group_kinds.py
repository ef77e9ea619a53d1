"""Coscheduling's and Kubernetes' native PodGroups through the real kube-scheduler and Lahar: the
same gangs as Volcano's, with only `schedulerName` changed.

The story (two jobs of 2 parameter servers + 2 workers on two nodes that hold one) and the
contention of two gangs submitted together are played with each kind; each group shows its state
in its own kind's fields. A cluster where all three kinds share one queue never binds part of a
gang. Native PodGroups need Kubernetes 1.37 with GenericWorkload (the dev cluster turns it on
there); on 1.35 their cases are skipped, saying so.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.native_groups import CONDITION
from extender.api.scheduling import GANG_GATE, GroupKind
from extender.cli.main import main
from extender.kube import KubeError, apply_object, list_objects, pod_when, wait_until
from tests.builders import make_queue
from tests.e2e.conftest import (
    ClusterObject,
    NodeFactory,
    PodFactory,
    events,
    priority_class,
    wait_explained,
)
from tests.e2e.gangs import (
    BindTimeline,
    alive,
    bound,
    finish,
    held_by_lahar,
    kind_status,
    submit_gang,
    wait_bound,
)

KINDS = [GroupKind.COSCHEDULING, GroupKind.NATIVE]
TASKS = ("ps", "ps", "worker", "worker")


@pytest.fixture
def served(api: k8s.ApiClient) -> set[GroupKind]:
    """The kinds of PodGroup this cluster serves."""
    kinds = set()
    for kind in GroupKind:
        try:
            list_objects(api, kind.api_version, "PodGroup", namespace="default")
        except KubeError:
            continue
        kinds.add(kind)
    return kinds


@pytest.fixture(params=KINDS, ids=["coscheduling", "native"])
def kind(request: pytest.FixtureRequest, served: set[GroupKind]) -> GroupKind:
    """Coscheduling's kind, then the native one (skipped where the cluster does not serve it)."""
    wanted: GroupKind = request.param
    if wanted not in served:
        pytest.skip(f"this cluster does not serve {wanted.value} (native: Kubernetes 1.37+)")
    return wanted


def warnings(api: k8s.ApiClient, namespace: str, name: str, kind: GroupKind) -> list[str]:
    """Messages of the Unschedulable events Lahar recorded on PodGroup `name` of `kind`."""
    return [
        event.get("message", "")
        for event in events(api, namespace, reason="Unschedulable", kind="PodGroup", name=name)
        if event["involvedObject"].get("apiVersion") == kind.api_version
    ]


def shows(kind: GroupKind, status: dict[str, object], state: str) -> bool:
    """Whether a group's status shows `state`: Running, or Waiting (nothing placed, the reason
    said), in its kind's own fields."""
    if kind is GroupKind.COSCHEDULING:
        return status.get("phase") == ("Running" if state == "Running" else "Scheduling")
    conditions = status.get("conditions") or []
    assert isinstance(conditions, list)
    ours = next((c for c in conditions if c.get("type") == CONDITION), {})
    if state == "Running":
        return ours.get("status") == "True"
    return ours.get("status") == "False" and ours.get("reason") == "NotEnoughResources"


def test_the_story_with_each_kind(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    kind: GroupKind,
) -> None:
    own_nodes(2, cpu="4")
    jobs: dict[str, list[str]] = {"job-a": [], "job-b": []}
    for job in jobs:
        submit_gang(api, namespace, pod, job, 0, min_member=4, kind=kind)
    for index, task in enumerate(TASKS):
        for job, names in jobs.items():
            name = f"{job}-{task}-{index % 2}"
            apply_object(api, pod(name).cpu("2").group(job, kind).task(task).build())
            names.append(name)

    def whole() -> str | None:
        done = [job for job, names in jobs.items() if bound(api, namespace, names) == names]
        return done[0] if done else None

    running = wait_until(whole, timeout=60, what="one job to have all 4 pods bound")
    waiting = "job-b" if running == "job-a" else "job-a"
    key = kind.key(namespace, waiting)
    wait_until(
        lambda: any(m.startswith(f"gang {key}: ") for m in warnings(api, namespace, waiting, kind)),
        timeout=30,
        what=f"an Unschedulable event on {key}",
    )
    assert bound(api, namespace, jobs[waiting]) == []
    for job, state in ((running, "Running"), (waiting, "Waiting")):
        wait_until(
            lambda job=job, state=state: shows(kind, kind_status(api, namespace, job, kind), state),
            timeout=30,
            what=f"{kind.value} {job} to show {state}",
            describe=lambda job=job: str(kind_status(api, namespace, job, kind)),
        )
    finished_at = time.monotonic()
    finish(api, namespace, jobs[running])
    wait_bound(api, namespace, jobs[waiting], 4, f"{waiting} to run after {running} finished")
    assert time.monotonic() - finished_at < 30


def test_two_gangs_of_each_kind_submitted_together_never_split(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    kind: GroupKind,
) -> None:
    own_nodes(2, cpu="4")
    with BindTimeline(api, namespace) as timeline:
        for round_ in range(5):
            gangs = {
                name: submit_gang(api, namespace, pod, name, 3, cpu="2", kind=kind)
                for name in (f"r{round_}-a", f"r{round_}-b")
            }
            first = wait_until(
                lambda gangs=gangs: next(
                    (g for g, m in gangs.items() if bound(api, namespace, m) == m), None
                ),
                timeout=60,
                what=f"round {round_}: one gang bound whole",
            )
            second = next(g for g in gangs if g != first)
            assert bound(api, namespace, gangs[second]) == []
            finish(api, namespace, gangs[first])
            wait_bound(api, namespace, gangs[second], 3, f"round {round_}: {second} to follow")
            finish(api, namespace, gangs[second])
    assert timeline.partial() == []


def test_three_kinds_in_one_queue_never_bind_part_of_a_gang(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    served: set[GroupKind],
) -> None:
    """Gangs of every kind the cluster serves, two of each, wanting 3 x 2 cpu on 8 cpu in all:
    two gangs run at a time, whole, whatever their kinds, and all of them run in the end."""
    own_nodes(2, cpu="4")
    kinds = [kind for kind in GroupKind if kind in served]
    with BindTimeline(api, namespace) as timeline:
        gangs = {
            f"{kind.name.lower()}-{index}": submit_gang(
                api, namespace, pod, f"{kind.name.lower()}-{index}", 3, cpu="2", kind=kind
            )
            for index in range(2)
            for kind in kinds
        }
        done: set[str] = set()
        while len(done) < len(gangs):
            running = wait_until(
                lambda: (
                    [g for g, m in gangs.items() if g not in done and bound(api, namespace, m) == m]
                    or None
                ),
                timeout=60,
                what=f"a gang to run (done: {sorted(done)})",
            )
            for gang in running:
                finish(api, namespace, gangs[gang])
                done.add(gang)
    assert timeline.partial() == []


@pytest.mark.usefixtures("preempting")
def test_a_high_priority_gang_of_each_kind_preempts_a_whole_lower_one(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    *,
    cluster_object: ClusterObject,
    kind: GroupKind,
) -> None:
    own_nodes(2, cpu="4")
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        cluster_object(priority_class(name, value))
    running = {
        name: submit_gang(api, namespace, pod, name, 2, cpu="2", priority_class=low, kind=kind)
        for name in ("wide-a", "wide-b")
    }
    for name, members in running.items():
        wait_bound(api, namespace, members, 2, f"low-priority gang {name} bound")
    with BindTimeline(api, namespace) as timeline:
        urgent = submit_gang(
            api, namespace, pod, "urgent", 2, cpu="2", priority_class=high, kind=kind
        )
        wait_bound(api, namespace, urgent, 2, "the high-priority gang bound whole")
    assert timeline.partial() == []
    left = sorted(len(alive(api, namespace, members)) for members in running.values())
    assert left == [0, 2]  # one whole gang preempted, the other untouched


@pytest.mark.usefixtures("preempting")
def test_a_group_in_the_queue_its_annotation_names_reclaims_from_another(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    *,
    cluster_object: ClusterObject,
    kind: GroupKind,
) -> None:
    own_nodes(2, cpu="4")
    starved, greedy = f"{namespace}-a", f"{namespace}-b"
    cluster_object(make_queue(starved).build())
    cluster_object(make_queue(greedy).deserved(cpu="4").build())
    greedy_gangs = [
        submit_gang(api, namespace, pod, f"b{i}", 2, cpu="1", queue=greedy) for i in range(4)
    ]
    for members in greedy_gangs:
        wait_bound(api, namespace, members, 2, "queue b's gang bound")
    with BindTimeline(api, namespace) as timeline:
        wanted = submit_gang(api, namespace, pod, "a0", 2, cpu="1", queue=starved, kind=kind)
        wait_bound(api, namespace, wanted, 2, f"{kind.value} a0 bound after reclaiming")
    assert timeline.partial() == []
    left = sorted(len(alive(api, namespace, members)) for members in greedy_gangs)
    assert left == [0, 2, 2, 2]


def test_pods_whose_group_never_appears_wait_and_say_so(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    *,
    dev_cluster: devcluster.DevCluster,
    kind: GroupKind,
) -> None:
    own_nodes(1, cpu="4")
    [name] = submit_gang(api, namespace, pod, "ghost", 1, group=False, kind=kind)
    pod_when(api, namespace, name, "to wait behind Lahar's gate", held_by_lahar)
    key = kind.key(namespace, "ghost")
    wait_explained(dev_cluster, key, f"gang {key}: PodGroup {key} does not exist")
    assert bound(api, namespace, [name]) == []


def test_lahar_explain_says_why_a_gang_of_each_kind_waits(
    capsys: pytest.CaptureFixture[str],
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    *,
    kubeconfig: Path,
    kind: GroupKind,
) -> None:
    own_nodes(1, cpu="2")
    submit_gang(api, namespace, pod, "big", 3, cpu="1", kind=kind)
    where = ("--kubeconfig", str(kubeconfig), "-n", namespace)

    def said() -> str | None:
        code = main(["explain", f"{kind.value}/big", *where])
        out = capsys.readouterr().out
        return out if code == 0 and f"  gang {kind.key(namespace, 'big')}: " in out else None

    out = wait_until(said, timeout=60, what=f"lahar explain {kind.value}/big to say why")
    with capsys.disabled():
        print(out)  # what a user sees (-s)
    lines = out.splitlines()
    assert lines[0].startswith(f"PodGroup {kind.key(namespace, 'big')}: ")
    assert "big-0 and 2 more: held by Lahar's scheduling gate lahar.io/gang" in out


def test_a_pod_held_by_lahars_gate_that_names_no_group_is_let_go(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    """Where the native API is off (1.37's default), the API server drops the
    `spec.schedulingGroup` the webhook saw and gated the pod for: the pod holds Lahar's gate and
    names no group. Played here with a pod created so (the dev cluster serves the API): the
    extender lifts the gate, and the pod is placed as any pod."""
    own_nodes(1, cpu="2")
    apply_object(api, pod("stray").cpu("1").gated(GANG_GATE).build())
    wait_bound(api, namespace, ["stray"], 1, "the stray pod to be let go and placed")


def test_a_pod_naming_two_groups_is_refused_naming_both(
    api: k8s.ApiClient, namespace: str, pod: PodFactory
) -> None:
    body = pod("torn").group("a").group("b", GroupKind.COSCHEDULING).build()
    with pytest.raises(KubeError) as refused:
        apply_object(api, body)
    assert (
        "metadata.annotations[scheduling.k8s.io/group-name] and "
        "metadata.labels[scheduling.x-k8s.io/pod-group]: they name 'a' and 'b': a pod joins one "
        "PodGroup"
    ) in str(refused.value)
