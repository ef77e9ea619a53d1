"""`lahar job|queue|podgroup`, run as a user runs them, against the dev cluster (the controller
and the scheduler at work): tables in kubectl's style, -o json|yaml, clear errors."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.api.scheduling import API_VERSION
from extender.cli.main import main
from extender.kube import read, wait_until
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory, extender_url
from tests.e2e.jobs import running, submit, wait_job


def lahar(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = main(list(words))
    out, err = capsys.readouterr()
    return code, out, err


def _columns(out: str) -> list[dict[str, str]]:
    lines = out.strip().splitlines()
    names = lines[0].split()
    return [dict(zip(names, line.split(), strict=False)) for line in lines[1:]]


def test_jobs_are_listed_viewed_suspended_resumed_and_deleted(
    capsys: pytest.CaptureFixture[str],
    kubeconfig: Path,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
) -> None:
    own_nodes(1, cpu="4")
    submit(api, make_job("cli").ns(namespace).task("main", 2).pinned(TEST_KEY, namespace).build())
    running(api, namespace, "cli", 2)
    wait_job(api, namespace, "cli", "Running")
    where = ("--kubeconfig", str(kubeconfig), "-n", namespace)

    code, out, _ = lahar(capsys, "job", "list", *where)
    assert code == 0
    [row] = _columns(out)
    assert row["NAME"] == "cli" and row["STATUS"] == "Running" and row["RUNNING"] == "2"
    code, out, _ = lahar(capsys, "job", "list", "--kubeconfig", str(kubeconfig), "-A")
    assert any(r["NAMESPACE"] == namespace for r in _columns(out))
    code, out, _ = lahar(capsys, "job", "list", *where, "-o", "json")
    [listed] = json.loads(out)["items"]  # a List even of one, as kubectl prints it
    assert listed["metadata"]["name"] == "cli"

    code, out, _ = lahar(capsys, "job", "view", "cli", *where)
    assert "Status:        Running" in out
    assert "  main: 2 replicas" in out
    assert "cli-main-0" in out and "cli-main-1" in out

    code, out, _ = lahar(capsys, "job", "suspend", "cli", *where)
    assert code == 0 and "AbortJob requested" in out
    wait_job(api, namespace, "cli", "Aborted")
    code, out, _ = lahar(capsys, "job", "resume", "cli", *where)
    assert code == 0
    wait_job(api, namespace, "cli", "Running")

    code, out, _ = lahar(capsys, "job", "delete", "cli", *where)
    assert code == 0
    wait_until(
        lambda: read(api, "batch.volcano.sh/v1alpha1", "Job", "cli", namespace) is None,
        timeout=30,
        what="the job to be deleted",
    )
    code, _, err = lahar(capsys, "job", "view", "cli", *where)
    assert code == 2 and f"Job {namespace}/cli not found" in err


def test_queues_are_created_closed_opened_listed_and_deleted(
    capsys: pytest.CaptureFixture[str], kubeconfig: Path, api: k8s.ApiClient
) -> None:
    name = f"cli-{secrets.token_hex(3)}"
    config = ("--kubeconfig", str(kubeconfig))
    code, out, _ = lahar(
        capsys,
        "queue",
        "create",
        name,
        "--weight",
        "3",
        "--capability",
        "cpu=8,memory=16Gi",
        *config,
    )
    assert code == 0
    queue = read(api, API_VERSION, "Queue", name)
    assert queue is not None
    assert queue["spec"]["weight"] == 3
    assert queue["spec"]["capability"] == {"cpu": "8", "memory": "16Gi"}
    code, _, err = lahar(capsys, "queue", "create", name, *config)
    assert code == 2 and f"Queue {name} already exists" in err

    assert lahar(capsys, "queue", "close", name, *config)[0] == 0
    wait_until(  # Closing, then Closed: no PodGroup of it waits or runs
        lambda: (
            (read(api, API_VERSION, "Queue", name) or {}).get("status", {}).get("state") == "Closed"
        ),
        timeout=30,
        what=f"queue {name} to be Closed",
    )
    code, out, _ = lahar(capsys, "queue", "list", *config)
    [row] = [r for r in _columns(out) if r["NAME"] == name]
    assert row["WEIGHT"] == "3" and row["STATE"] == "Closed"
    assert lahar(capsys, "queue", "open", name, *config)[0] == 0
    code, out, _ = lahar(capsys, "queue", "list", *config, "-o", "yaml")
    listed = {q["metadata"]["name"]: q for q in yaml.safe_load(out)["items"]}
    assert listed[name]["status"]["state"] == "Open"

    assert lahar(capsys, "queue", "delete", name, *config)[0] == 0
    code, _, err = lahar(capsys, "queue", "delete", name, *config)
    assert code == 2 and f"Queue {name} not found" in err
    code, _, err = lahar(capsys, "queue", "open", name, *config)
    assert code == 2 and f"Queue {name} not found" in err


def submit_waiting_job(
    kubeconfig: Path, api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory
) -> tuple[str, ...]:
    """Job big, 3 pods of 1 cpu all needed, on one 2-cpu node: it waits whole. The flags that
    reach its namespace."""
    own_nodes(1, cpu="2")
    job = make_job("big").ns(namespace).task("main", 3, cpu="1").pinned(TEST_KEY, namespace)
    submit(api, job.build())
    return ("--kubeconfig", str(kubeconfig), "-n", namespace)


def test_podgroups_are_listed_with_why_they_wait(
    capsys: pytest.CaptureFixture[str],
    kubeconfig: Path,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
) -> None:
    where = submit_waiting_job(kubeconfig, api, namespace, own_nodes)

    def waiting() -> dict[str, str] | None:
        out = lahar(capsys, "podgroup", "list", *where, "-o", "wide")[1]
        rows = _columns(out) if out.strip() and not out.startswith("No ") else []
        return rows[0] if rows and rows[0].get("CONDITION", "-") != "-" else None

    row = wait_until(waiting, timeout=60, what="the PodGroup to say why it waits")
    assert row["PHASE"] in {"Pending", "Inqueue"}
    assert row["MINMEMBER"] == "3"
    assert row["CONDITION"] == "Unschedulable=True"
    out = lahar(capsys, "podgroup", "list", *where, "-o", "wide")[1]
    assert "need cpu 3, 2 free on the nodes its pods may run on" in out  # the scheduler's words


def test_explain_says_why_a_job_waits_from_its_podgroup_and_live_from_the_extender(
    capsys: pytest.CaptureFixture[str],
    *,
    dev_cluster: devcluster.DevCluster,
    kubeconfig: Path,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
) -> None:
    where = submit_waiting_job(kubeconfig, api, namespace, own_nodes)

    def summary() -> str | None:  # the extender's summary, once it is in the PodGroup's status
        out = lahar(capsys, "explain", "big", *where)[1]
        return out if "queue default: allocated" in out else None

    out = wait_until(summary, timeout=60, what="the PodGroup's condition to carry the summary")
    with capsys.disabled():
        print(out)  # what a user sees (-s)
    lines = out.splitlines()
    assert lines[0].startswith(f"PodGroup {namespace}/big-") and "(Job big)" in lines[0]
    assert "Unschedulable=True (NotEnoughResources) since " in out
    assert "need cpu 3, 2 free on the nodes its pods may run on" in out  # the gang rules' reason
    assert "  3 pending of task main asking cpu 1: one fits on 1 node now" in out
    # (a Volcano Job's pods are created once Lahar admits its gang)
    assert "No pods yet: the Job's controller creates them once Lahar admits the gang" in out
    assert not [line for line in lines if line.startswith("kube-scheduler of big-main-")]

    # Live, from the extender beside the scheduler (in a cluster, through a port-forward to the
    # pod whose scheduler leads: it connects inside the pod, where the extender listens).
    live = ("--extender", extender_url(dev_cluster, ""))
    code, out, err = lahar(capsys, "explain", "job/big", *where, *live, "-o", "json")
    assert code == 0, err
    answer = json.loads(out)
    with capsys.disabled():
        print("\n".join(answer["lines"]))
    group = answer["gang"].split("/")[1]
    assert answer["source"].startswith("extender http://127.0.0.1:")
    assert answer["lines"][0] == (
        f"gang {namespace}/{group}: 0 of 3 members placed, 3 pending (queue default)"
    )
    assert answer["lines"][1].startswith(f"waiting: gang {namespace}/{group}: minResources need")
    wanted = "3 pending of task main asking cpu 1: one fits on 1 node now"
    assert any(line.startswith(wanted) for line in answer["lines"])  # (other tests' gangs may
    # come before it in the fair order: the dev cluster is shared)
    assert answer["pods"] == []
    code, out, _ = lahar(capsys, "explain", f"podgroup/{group}", *where)
    assert code == 0 and "need cpu 3, 2 free" in out and "(Job" not in out.splitlines()[0]

    code, _, err = lahar(capsys, "explain", "nothing", *where)
    assert code == 2 and f"Job or PodGroup {namespace}/nothing not found" in err


def test_a_kubeconfig_that_is_not_there_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = lahar(capsys, "job", "list", "--kubeconfig", str(tmp_path / "nope"))
    assert code == 2 and f"kubeconfig {tmp_path / 'nope'} does not exist" in err
