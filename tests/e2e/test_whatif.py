"""`lahar whatif` on the dev cluster, each answer held to what the real cluster then does: the
stock kube-scheduler calling Lahar's extender, Lahar's Job controller, KWOK playing the kubelet
(it ends a pod when a test asks, `end_pod`).

- a Job that fits starts now, on the nodes with room the answer names, and runs there;
- a Job behind a running gang with an expected run time starts in the range that run time gives,
  after that gang; ended inside the range, the gang lets the Job start within `SLACK` of its end;
- under the preemption policy the victim named is the gang the extender really evicts for the
  Job, which then runs where the answer said; under `policy/lahar.yaml` (which evicts nothing)
  the answer evicts nobody;
- a Job the admission webhook refuses is refused with the webhook's own message;
- a ServiceAccount bound to nothing is told in one line which right it lacks, and bound to the
  ClusterRole and Role of manifests/whatif/rbac.yaml it gets the answer an administrator gets.

The dev cluster's extender runs as a process, not from a Deployment, so each call passes
`--current-policy` with the policy file that process was started with. The CLI runs in-process
(`extender.cli.main.main`) as a user runs it, with the kubeconfig of the dev cluster or one
written for a ServiceAccount.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.api.batch import BATCH_API_VERSION
from extender.api.run_times import RUN_TIME_ANNOTATION
from extender.api.scheduling import API_VERSION
from extender.api.times import parse_time
from extender.cli.main import main
from extender.devcluster.lifecycle import end_pod
from extender.devcluster.paths import manifests_dir, policy_dir
from extender.kube import apply_object, delete, list_objects, load_manifests, wait_until
from extender.kube.raw import ApiStatusError
from extender.kube.tokens import service_account_token
from extender.kube.writes import delete as delete_object
from tests.batch_builders import JobBuilder
from tests.builders import make_job, make_queue
from tests.e2e.conftest import TEST_KEY, ClusterObject, NodeFactory, events, priority_class
from tests.e2e.jobs import job, pods, running, submit
from tests.e2e.test_queue_tree import make_tree
from tests.e2e.webhook import create

# Seconds from a blocker's end to the Job's pods Running on the real cluster: the extender hears
# the pods end (its watch), its pass lets the waiting gang in (debounced to a quarter second), the
# controller makes the Job's pods once the PodGroup is Inqueue, kube-scheduler binds them through
# the gang's barrier, and KWOK reports them Running: each step a fraction of a second on an idle
# dev cluster, a few seconds on a busy two-core machine. The answer's range already holds the
# simulator's own rounds after the blocker's end; this is what the real cluster may take beyond.
SLACK = 8.0
EXPECTED = (40.0, 90.0)  # the blocker's lahar.io/expected-run-time, 40s-90s, in seconds
INTO_RANGE = 1.0  # the blocker is ended this long after the earliest end its range allows
PREEMPTION = policy_dir() / "preemption.yaml"  # what the `preempting` fixture has the extender run
LONG = "1h"  # the run time of a gang that keeps its room for the whole test
RBAC = manifests_dir() / "whatif" / "rbac.yaml"
RBAC_API = "rbac.authorization.k8s.io/v1"
ROLE_NAMESPACE = "lahar-system"  # where the Role of rbac.yaml is (the run-time history's home)
TAKEN_AT = re.compile(r"\(taken at [^)]*\)")


@dataclass(frozen=True)
class Said:
    """What `lahar whatif` printed and returned; the snapshot was taken between `asked` and
    `answered` (epoch seconds: the times in the answer count from it)."""

    code: int
    out: str
    err: str
    asked: float
    answered: float

    def answer(self) -> dict[str, Any]:
        assert self.code == 0, self.err
        found: dict[str, Any] = json.loads(self.out)
        return found

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


Whatif = Callable[..., Said]  # the `whatif` fixture


def running_policy(cluster: devcluster.DevCluster) -> Path:
    """The policy file the dev cluster's extender runs now (its `--policy`)."""
    (given,) = [a for a in cluster.argv_of("lahar") if a.startswith("--policy=")]
    return Path(given.removeprefix("--policy="))


@pytest.fixture
def whatif(
    capsys: pytest.CaptureFixture[str], dev_cluster: devcluster.DevCluster, tmp_path: Path
) -> Whatif:
    """`whatif(job, *flags, policy=, kubeconfig=)`: `lahar whatif -f` for the Job `job` (written
    to a file as a user would; no `-f` when `job` is None), with `--current-policy` the policy
    the extender runs unless `policy` is given, as the dev cluster's administrator unless
    `kubeconfig` is given."""

    def ask(
        body: dict[str, Any] | None,
        *flags: str,
        policy: Path | None = None,
        kubeconfig: Path | None = None,
    ) -> Said:
        given = []
        if body is not None:
            path = tmp_path / f"{body['metadata']['name']}.yaml"
            path.write_text(yaml.safe_dump(body), encoding="utf-8")
            given = ["-f", str(path)]
        chosen = policy or running_policy(dev_cluster)
        argv = ["whatif", *given, "--current-policy", str(chosen), *flags]
        argv += ["--kubeconfig", str(kubeconfig or dev_cluster.kubeconfig)]
        capsys.readouterr()
        asked = time.time()
        code = main(argv)
        answered = time.time()
        out, err = capsys.readouterr()
        return Said(code, out, err, asked, answered)

    return ask


@pytest.fixture(autouse=True)
def cleared(api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory) -> Iterator[None]:
    """After the test, its Jobs and pods are gone before its nodes are deleted, so the next
    test's snapshot holds no pod still bound to a node that no longer exists."""
    yield
    for made in list_objects(api, BATCH_API_VERSION, "Job", namespace=namespace):
        delete(api, BATCH_API_VERSION, "Job", made["metadata"]["name"], namespace)
    for pod in list_objects(api, "v1", "Pod", namespace=namespace):
        delete_object(api, "v1", "Pod", namespace, pod["metadata"]["name"], grace_seconds=0)
    wait_until(
        lambda: not list_objects(api, "v1", "Pod", namespace=namespace),
        timeout=60,
        what=f"the pods of namespace {namespace} to be gone",
    )


def pinned_job(namespace: str, name: str, replicas: int, cpu: str) -> JobBuilder:
    """A Job of one task of `replicas` pods asking `cpu` each, on the test's own nodes."""
    return make_job(name).ns(namespace).task("main", replicas, cpu=cpu).pinned(TEST_KEY, namespace)


def expecting(builder: JobBuilder, run_time: str) -> JobBuilder:
    return builder.set("metadata.annotations", {RUN_TIME_ANNOTATION: run_time})


def nodes_of(api: k8s.ApiClient, namespace: str, name: str) -> list[str]:
    """The nodes the Job's pods are bound to."""
    found = {p["spec"].get("nodeName") for p in pods(api, namespace, name).values()}
    return sorted(node for node in found if node)


def started_at(api: k8s.ApiClient, namespace: str, name: str) -> float:
    """When the Job's first pod started (its status.startTime, whole seconds), epoch seconds."""
    starts = [parse_time(p["status"].get("startTime")) for p in pods(api, namespace, name).values()]
    known = [start for start in starts if start is not None]
    assert known, f"no pod of Job {namespace}/{name} has started"
    return min(known)


def test_a_job_that_fits_starts_now_on_the_nodes_with_room_and_runs_there(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, whatif: Whatif
) -> None:
    """Three nodes of 4 cpu, one held by a running gang: a Job of two 4-cpu pods fits only on
    the other two, so the answer names exactly those, and the scheduler binds it there."""
    mine = own_nodes(3, cpu="4")
    submit(api, expecting(pinned_job(namespace, "hold", 1, "4"), LONG).build())
    running(api, namespace, "hold", 1)
    (held,) = nodes_of(api, namespace, "hold")
    free = sorted(set(mine) - {held})
    body = pinned_job(namespace, "fits", 2, "4").build()

    said = whatif(body)

    assert said.code == 0, said.err
    assert said.lines[0] == f"Job {namespace}/fits starts now, on {', '.join(free)}"
    assert not any(line.startswith(("evicts", "delays")) for line in said.lines)
    answer = whatif(body, "-o", "json").answer()
    assert answer["now"] is True
    assert answer["nodes"] == free
    assert answer["evicts"] == [] and answer["delays"] == []

    submit(api, body)
    running(api, namespace, "fits", 2)
    assert nodes_of(api, namespace, "fits") == free
    assert nodes_of(api, namespace, "hold") == [held]


def test_a_blocked_job_starts_in_the_range_its_blocker_gives(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, whatif: Whatif
) -> None:
    """Job a (2 x 2 cpu, expected to run 40s-90s) fills the one node; Job b needs the same room.
    The answer: b starts after a, in the range a's annotation gives less what a has run; a
    ended a moment inside that range, b runs within `SLACK` of a's end, inside the range."""
    (node,) = own_nodes(1, cpu="4")
    low, high = EXPECTED
    submit(api, expecting(pinned_job(namespace, "a", 2, "2"), "40s-90s").build())
    running(api, namespace, "a", 2)
    a_started = started_at(api, namespace, "a")
    body = pinned_job(namespace, "b", 2, "2").build()

    said = whatif(body)
    assert said.code == 0, said.err
    assert said.lines[0].startswith(f"Job {namespace}/b starts in about "), said.out
    assert said.lines[0].endswith(f", on {node}")
    assert said.lines[1] == "  after these end (run time source, estimated end):"
    assert said.lines[2].startswith(f"    {namespace}/a  (annotation, "), said.out

    asked = whatif(body, "-o", "json")
    answer = asked.answer()
    (blocker,) = answer["after"]
    assert (blocker["job"], blocker["source"]) == (f"{namespace}/a", "annotation")
    # a's estimated end, from the snapshot: its run time less what it had run by then
    ran_least, ran_most = asked.asked - a_started, asked.answered - a_started
    ends_low, ends_high = blocker["ends"]
    assert low - ran_most - 0.01 <= ends_low <= low - ran_least + 0.01, (blocker, ran_least)
    assert high - ran_most - 0.01 <= ends_high <= high - ran_least + 0.01, (blocker, ran_least)
    start_low, start_high = answer["startRange"]
    assert ends_low <= start_low <= answer["start"] <= start_high, answer
    assert answer["nodes"] == [node]
    assert answer["evicts"] == [] and not answer["now"]

    submit(api, body)
    end_at = asked.answered + ends_low + INTO_RANGE  # (after the earliest end, whenever taken)
    assert end_at - asked.asked < ends_high, "the range closed before the blocker could end in it"
    time.sleep(max(0.0, end_at - time.time()))
    assert nodes_of(api, namespace, "b") == []  # b waits for a
    ended = time.time()
    for pod in pods(api, namespace, "a"):
        end_pod(api, namespace, pod, exit_code=0)
    running(api, namespace, "b", 2)
    began = time.time()

    assert began - ended <= SLACK
    # b's start counted from the snapshot (taken between asked and answered)
    assert start_low - SLACK <= began - asked.answered
    assert began - asked.asked <= start_high + SLACK, (began - asked.asked, answer)
    assert nodes_of(api, namespace, "b") == [node]


@pytest.mark.usefixtures("preempting")
def test_the_victims_named_are_the_gang_the_extender_evicts(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    cluster_object: ClusterObject,
    whatif: Whatif,
) -> None:
    """A low-priority gang expected to run an hour holds the node; a high-priority Job needs
    its room. Under the preemption policy the extender runs, the answer evicts that gang and
    starts the Job now; under policy/lahar.yaml, it evicts nobody (the Job waits for the hour).
    Created, the Job has the extender evict that very gang and runs where the answer said; the
    gang's Job, with Volcano's default policies, makes its pods again, and they wait their turn."""
    (node,) = own_nodes(1, cpu="4")
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        cluster_object(priority_class(name, value))
    held = expecting(pinned_job(namespace, "held", 2, "2"), LONG).priority_class(low)
    submit(api, held.build())
    victims = {p["metadata"]["uid"] for p in running(api, namespace, "held", 2).values()}
    body = pinned_job(namespace, "urgent", 2, "2").priority_class(high).build()

    said = whatif(body, policy=PREEMPTION)
    assert said.code == 0, said.err
    assert said.lines[0] == f"Job {namespace}/urgent starts now, on {node}"
    assert said.lines[1] == f"evicts: {namespace}/held"
    answer = whatif(body, "-o", "json", policy=PREEMPTION).answer()
    assert answer["evicts"] == [f"{namespace}/held"] and answer["alsoEvicts"] == []

    kept = whatif(body, "-o", "json", policy=policy_dir() / "lahar.yaml").answer()
    assert kept["evicts"] == [] and kept["alsoEvicts"] == []
    assert [b["job"] for b in kept["after"]] == [f"{namespace}/held"]
    assert kept["start"] > 3000  # (the hour the gang is expected to keep its room)

    submit(api, body)
    running(api, namespace, "urgent", 2)
    assert nodes_of(api, namespace, "urgent") == [node]
    left = {
        p["metadata"]["uid"]
        for p in pods(api, namespace, "held").values()
        if not p["metadata"].get("deletionTimestamp")
    }
    assert not victims & left
    group = f"held-{job(api, namespace, 'held')['metadata']['uid']}"
    preempting = events(api, namespace, reason="Preempting", kind="PodGroup")
    assert preempting and all(f"{namespace}/{group}" in e["message"] for e in preempting)
    assert events(api, namespace, reason="Preempted", kind="PodGroup", name=group)


def test_a_job_the_webhook_refuses_is_refused_with_its_message(
    api: k8s.ApiClient, namespace: str, whatif: Whatif
) -> None:
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
    with pytest.raises(ApiStatusError) as refused:
        create(api, body, dry_run=True)
    denied = re.search(r"denied the request: (.*) \(HTTP 4\d\d\)$", str(refused.value))
    assert denied is not None, str(refused.value)

    said = whatif(body)

    assert said.code == 1
    assert said.out == ""
    assert said.err == f"lahar whatif: {denied.group(1)}\n"


@pytest.fixture
def reader(
    api: k8s.ApiClient, namespace: str, dev_cluster: devcluster.DevCluster, tmp_path: Path
) -> Iterator[tuple[Path, str]]:
    """A kubeconfig authenticated as a new ServiceAccount of the test's namespace (a token from
    the TokenRequest API), and the account's name; bound to nothing. The objects of rbac.yaml and
    the bindings a test makes for it are deleted afterwards."""
    account = "whatif-reader"
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": namespace},
        },
    )
    token = service_account_token(api, namespace, account, 600)
    config = yaml.safe_load(dev_cluster.kubeconfig.read_text())
    config["users"] = [{"name": account, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    path = tmp_path / "reader.kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    yield path, account
    delete(api, RBAC_API, "ClusterRoleBinding", f"lahar-whatif-{namespace}")
    delete(api, RBAC_API, "RoleBinding", f"lahar-whatif-{namespace}", ROLE_NAMESPACE)
    for made in load_manifests(RBAC):
        meta = made.body["metadata"]
        delete(api, made.body["apiVersion"], made.kind, meta["name"], meta.get("namespace"))


def _binding(kind: str, namespace: str, account: str) -> dict[str, Any]:
    """A binding of the role of rbac.yaml of that `kind` to the account (a Role's in the Role's
    namespace)."""
    meta: dict[str, Any] = {"name": f"lahar-whatif-{namespace}"}
    if kind == "RoleBinding":
        meta["namespace"] = ROLE_NAMESPACE
    role = "ClusterRole" if kind == "ClusterRoleBinding" else "Role"
    return {
        "apiVersion": RBAC_API,
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": "lahar-whatif"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def test_the_rights_missing_are_named_and_the_whatif_roles_are_enough(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    reader: tuple[Path, str],
    whatif: Whatif,
) -> None:
    kubeconfig, account = reader
    own_nodes(1, cpu="4")
    body = pinned_job(namespace, "probe", 2, "1").build()

    refused = whatif(body, kubeconfig=kubeconfig)
    assert refused.code == 2
    assert refused.out == ""
    assert refused.err == (
        "lahar: error: cannot list nodes at the cluster scope: bind the ClusterRole "
        "lahar-whatif (manifests/whatif/)\n"
    )

    for made in load_manifests(RBAC):  # (applied as the file is)
        apply_object(api, made.body, source=made.source)
    apply_object(api, _binding("ClusterRoleBinding", namespace, account))
    listed = wait_until(
        lambda: s if (s := whatif(body, kubeconfig=kubeconfig)).code == 0 else None,
        timeout=30,
        what="the ClusterRole lahar-whatif to let the ServiceAccount take a snapshot",
    )
    # (without the Role the run-time history in lahar-system is not read, and the answer says so)
    assert any(
        line.startswith("Run-time history: ") and "not read" in line for line in listed.lines
    )

    apply_object(api, _binding("RoleBinding", namespace, account))
    answered = wait_until(
        lambda: s if "not read" not in (s := whatif(body, kubeconfig=kubeconfig)).out else None,
        timeout=30,
        what="the Role lahar-whatif to let the ServiceAccount read the run-time history",
    )
    administrator = whatif(body)
    assert answered.code == administrator.code == 0, answered.err
    assert answered.lines[0] == f"Job {namespace}/probe starts now, on {namespace}-n0"
    assert TAKEN_AT.sub("", answered.out) == TAKEN_AT.sub("", administrator.out)
    assert answered.err == administrator.err


SHARE_TOLERANCE = 0.1  # of the parent's cpu, as the fair-share tests hold a share to


def shares_of(answer: dict[str, Any], run: str, paths: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The run's `levelShares` entries of the queues `paths` names (short name -> path)."""
    found = {entry["queue"]: entry for entry in answer["levelShares"][run]}
    return {short: found[path] for short, path in paths.items()}


def test_a_weight_changed_shares_the_parent_by_the_new_weights(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    cluster_object: ClusterObject,
    whatif: Whatif,
) -> None:
    """parent -> {qa, qb}, weight 1 each, on a node of four 16-cpu slots. Two gangs of each run
    (expected to end in 5m) and a backlog of an hour's gangs waits in both (more than the whole
    cluster, the dev cluster's own nodes too, so neither child deserves less than its weight
    says). Played as it is, qa and qb share the parent half and half; with qa's weight 3, from
    the first ends on, 3/4 and 1/4 (and the text says which run is which)."""
    own_nodes(1, cpu="64")
    names = make_tree(
        namespace,
        cluster_object,
        make_queue("parent"),
        make_queue("qa").parent("parent"),
        make_queue("qb").parent("parent"),
    )
    paths = {short: f"root/{names['parent']}/{names[short]}" for short in ("qa", "qb")}

    def gang(short: str, name: str, run_time: str) -> str:
        body = expecting(pinned_job(namespace, name, 1, "16"), run_time).queue(names[short])
        submit(api, body.build())
        return name

    runners = [gang(short, f"{short}-run{i}", "5m") for short in ("qa", "qb") for i in range(2)]
    for name in runners:
        running(api, namespace, name, 1)
    backlog = [gang("qa", f"qa-wait{i}", "1h") for i in range(8)]
    backlog += [gang("qb", f"qb-wait{i}", "1h") for i in range(4)]
    wait_until(  # (the snapshot reads a waiting Job by its PodGroup)
        lambda: (
            len(list_objects(api, API_VERSION, "PodGroup", namespace=namespace))
            == len(runners) + len(backlog)
        ),
        timeout=60,
        what="a PodGroup for every Job",
    )
    assert all(nodes_of(api, namespace, name) == [] for name in backlog)  # the node is full
    edit = f"{names['qa']}.weight=3"

    answer = whatif(None, "--queue", edit, "--hours", "2", "-o", "json").answer()

    assert answer["runs"] == ["current", "new"]
    for run, fair in (("current", {"qa": 0.5, "qb": 0.5}), ("new", {"qa": 0.75, "qb": 0.25})):
        got = shares_of(answer, run, paths)
        assert {short: entry["fair"] for short, entry in got.items()} == pytest.approx(fair)
        for short, entry in got.items():
            assert entry["share"] is not None, (run, got)
            assert abs(entry["share"] - fair[short]) <= SHARE_TOLERANCE, (run, got)
    assert shares_of(answer, "new", paths)["qa"]["weight"] == 3

    said = whatif(None, "--queue", edit, "--hours", "2")
    assert said.code == 0, said.err
    assert "current: the cluster as it is" in said.out
    assert any(line.split()[:2] == ["QUEUE", "RUN"] for line in said.lines), said.out
