"""docs/migrating.md, run: the Coscheduling and Kueue examples as the guide gives them, and Lahar
beside Volcano, then taking Volcano's Jobs over.

Beside Volcano, the dev cluster's webhook runs as `manifests/beside-volcano/` configures it
(`--scheduler-name=lahar`), and its controller is limited to `lahar` by the same flag (the
component runs none, since Volcano's controller reconciles every Job; limited, it leaves
Volcano's alone all the same): a Job for `volcano` is stored as sent and never written to (no
defaults, no PodGroup, no pods, no status), while Lahar's own Jobs run. Volcano's
job controller is not here to make that Job's pods; the test makes them as it would (the same
PodGroup and pods, from `extender.controller.job_objects`, whose names, labels and annotations are
Volcano's; minResources with the quota names Volcano's controller adds) and the dev cluster's
`volcano` profile binds them. Then the controller runs as Lahar's
own install has it (both names) and carries the Job on with the pods it found: none recreated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.api.batch import Job
from extender.api.job_groups import build_pod_group
from extender.api.scheduling import API_VERSION
from extender.controller.job_objects import build_pod
from extender.devcluster.paths import manifests_dir
from extender.kube import apply_object, delete, list_objects, pod_when, wait_until
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory, start_as, started_as
from tests.e2e.gangs import BindTimeline, bound
from tests.e2e.jobs import CONTROLLER, job, pods, running, submit, wait_job
from tests.e2e.webhook import WEBHOOK

GUIDE = manifests_dir().parent / "docs" / "migrating.md"
BESIDE_VOLCANO = ["--scheduler-name=lahar"]  # manifests/beside-volcano/'s webhook arguments


def guide_block(name: str) -> list[dict[str, Any]]:
    """The objects of the YAML block the guide marks `<!-- tested: NAME -->`."""
    found = re.search(rf"<!-- tested: {name} -->\n```yaml\n(.*?)```", GUIDE.read_text(), re.S)
    assert found is not None, f"docs/migrating.md has no block marked tested: {name}"
    return [doc for doc in yaml.safe_load_all(found.group(1)) if doc]


@pytest.mark.parametrize("block", ["coscheduling", "kueue"])
def test_the_guides_examples_bind_whole(api: k8s.ApiClient, namespace: str, block: str) -> None:
    objects = guide_block(block)
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
    with BindTimeline(api, namespace) as timeline:
        for body in objects:
            apply_object(api, {**body, "metadata": {**body["metadata"], "namespace": namespace}})
        wait_until(
            lambda: len(bound(api, namespace, names)) == len(names),
            timeout=60,
            what=f"the guide's {block} pods bound",
        )
    assert timeline.partial() == []


@pytest.fixture
def beside_volcano(dev_cluster: devcluster.DevCluster) -> Iterator[dict[str, list[str]]]:
    """The webhook and the controller serving `lahar` alone for the test (as beside a running
    Volcano); as shipped again after it. Yields each one's shipped command line."""
    changes = {
        name: [*dev_cluster.argv_of(name), *BESIDE_VOLCANO] for name in (WEBHOOK, CONTROLLER)
    }
    with started_as(dev_cluster, changes) as shipped:
        yield shipped


def _volcano_job(namespace: str, name: str) -> dict[str, Any]:
    return (
        make_job(name)
        .ns(namespace)
        .scheduler_name("volcano")
        .task("worker", 2)
        .min_available(2)
        .pinned(TEST_KEY, namespace)
        .build()
    )


def _left_alone(api: k8s.ApiClient, namespace: str, name: str, stored: dict[str, Any]) -> None:
    """Nothing of Lahar's touched the Job: not written since `stored`, no PodGroup, no pods."""
    now = job(api, namespace, name)
    assert now["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert now["spec"] == stored["spec"] and not (now.get("status") or {}).get("state")
    groups = list_objects(api, API_VERSION, "PodGroup", namespace=namespace)
    assert not [g for g in groups if g["metadata"]["name"].startswith(f"{name}-")]
    assert pods(api, namespace, name) == {}


def test_beside_volcano_its_jobs_are_left_alone_and_lahars_run(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    beside_volcano: dict[str, list[str]],
) -> None:
    own_nodes(1, cpu="8")
    stored = submit(api, _volcano_job(namespace, "theirs"))
    # The webhook gave it none of Volcano's defaults (a task's minAvailable: its replicas).
    assert "minAvailable" not in stored["spec"]["tasks"][0]
    ours = (
        make_job("ours")
        .ns(namespace)
        .scheduler_name("lahar")
        .task("worker", 2, scheduler="lahar")
        .pinned(TEST_KEY, namespace)
        .build()
    )
    submit(api, ours)
    running(api, namespace, "ours", 2)  # (the controller has long seen `theirs` by now)
    assert job(api, namespace, "ours")["spec"]["tasks"][0]["minAvailable"] == 2  # defaulted
    _left_alone(api, namespace, "theirs", stored)


def _as_volcano_made_them(api: k8s.ApiClient, body: dict[str, Any]) -> list[str]:
    """The PodGroup and pods Volcano's job controller makes of the Job (ungated: Volcano's
    scheduler has no gate to lift); the pods' names."""
    model = Job.model_validate(body)
    group = build_pod_group(model)
    # Volcano's controller fills minResources from the pods' quota usage, quota names included.
    needs = group["spec"]["minResources"]
    quota = {f"requests.{name}": amount for name, amount in needs.items() if "/" not in name}
    pods = str(model.spec.min_available)
    group["spec"]["minResources"] = {**needs, **quota, "pods": pods, "count/pods": pods}
    apply_object(api, group)
    names = []
    for task in model.spec.tasks:
        for index in range(task.replicas):
            pod = build_pod(model, task, index, ())
            apply_object(api, pod)
            names.append(pod["metadata"]["name"])
    return names


def test_switching_over_lahar_carries_volcanos_job_on_with_the_pods_it_found(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    beside_volcano: dict[str, list[str]],
) -> None:
    own_nodes(1, cpu="8")
    stored = submit(api, _volcano_job(namespace, "carried"))
    made = _as_volcano_made_them(api, stored)
    for name in made:
        pod_when(api, namespace, name, "bound", lambda pod: bool(pod["spec"].get("nodeName")))
    before = {name: p["metadata"]["uid"] for name, p in pods(api, namespace, "carried").items()}
    assert sorted(before) == sorted(made)
    assert not (job(api, namespace, "carried").get("status") or {}).get("state")  # nobody's yet

    # Volcano removed: the controller as Lahar's own install runs it (lahar and volcano).
    start_as(dev_cluster, CONTROLLER, beside_volcano[CONTROLLER])
    status = wait_job(api, namespace, "carried", "Running")
    assert status["running"] == 2
    after = {name: p["metadata"]["uid"] for name, p in pods(api, namespace, "carried").items()}
    assert after == before  # the pods Volcano made, none recreated
    # A pod gone is made again by Lahar's controller and its gang let in, whatever the quota
    # names in the minResources Volcano's controller wrote.
    gone = sorted(before)[0]
    delete(api, "v1", "Pod", gone, namespace)
    again = running(api, namespace, "carried", 2)
    assert again[gone]["metadata"]["uid"] != before[gone]
