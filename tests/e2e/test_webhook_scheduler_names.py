"""The webhook serves the schedulers it is told (`lahar webhook --scheduler-name`), in the real API
server: with `lahar` alone, a Volcano Job is stored as sent (no defaults, no rules) and a Volcano
gang pod is no longer even sent to it (the webhook wrote its names into the pod webhook's
`matchConditions`), while Lahar's own are defaulted, checked and gated as before; a pod naming
its PodGroup both as Volcano and as Coscheduling does is refused, naming both fields; and one that
got in while the webhook was down is explained: which group it waits for, by which field, and
why."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from extender import devcluster
from extender.api.scheduling import GANG_GATE, GroupKind
from extender.cli.main import main
from extender.kube import apply_object, wait_until
from extender.kube.raw import ApiStatusError
from extender.kube.webhooks import ADMISSION_REGISTRATION
from extender.kube.writes import get
from extender.webhook.conditions import CONDITION
from tests.builders import make_group, make_job, make_pod
from tests.e2e.conftest import started_as, wait_explained
from tests.e2e.webhook import WEBHOOK, create, restart_webhook

SHIPPED = "object.spec.schedulerName in ['lahar', 'volcano']"
LAHAR_ONLY = "object.spec.schedulerName in ['lahar']"


def _pod_condition(api: k8s.ApiClient) -> str:
    """The expression of the pod webhook's scheduler condition, as the API server has it."""
    config = get(api, ADMISSION_REGISTRATION, "MutatingWebhookConfiguration", "", WEBHOOK) or {}
    (hook,) = [h for h in config.get("webhooks") or [] if h["name"] == "pod-gang-gate.lahar.dev"]
    (condition,) = [c for c in hook["matchConditions"] if c["name"] == CONDITION]
    return str(condition["expression"])


@pytest.fixture
def lahar_only(dev_cluster: devcluster.DevCluster, api: k8s.ApiClient) -> Iterator[None]:
    """The dev cluster's webhook serving `lahar` alone for the test, then as shipped again."""
    assert _pod_condition(api) == SHIPPED
    lahar = [*dev_cluster.argv_of(WEBHOOK), "--scheduler-name=lahar"]
    with started_as(dev_cluster, {WEBHOOK: lahar}):
        # (ready means written; the API server reads its configurations a moment later)
        assert _pod_condition(api) == LAHAR_ONLY
        yield
    assert _pod_condition(api) == SHIPPED


def _gates(pod: dict[str, Any]) -> list[str]:
    return [gate["name"] for gate in pod["spec"].get("schedulingGates") or []]


def test_a_pod_naming_its_group_two_ways_is_refused_naming_both(
    api: k8s.ApiClient, namespace: str
) -> None:
    both = make_pod("both").ns(namespace).scheduler("lahar").cpu("100m").group("g")
    with pytest.raises(ApiStatusError) as refused:
        create(api, both.group("g", GroupKind.COSCHEDULING).build())
    message = str(refused.value)
    assert 'admission webhook "pod-gang-gate.lahar.dev" denied the request' in message
    assert (
        f"Pod {namespace}/both is invalid: metadata.annotations[scheduling.k8s.io/group-name] "
        "and metadata.labels[scheduling.x-k8s.io/pod-group]: both name 'g': a pod joins one "
        "PodGroup; keep the annotation for a scheduling.volcano.sh PodGroup or the label for a "
        "scheduling.x-k8s.io one"
    ) in message
    one = make_pod("one").ns(namespace).scheduler("lahar").cpu("100m")
    stored = create(api, one.group("g", GroupKind.COSCHEDULING).build(), dry_run=True)
    assert _gates(stored) == [GANG_GATE]


def test_a_webhook_serving_lahar_alone_leaves_volcanos_jobs_and_pods_untouched(
    api: k8s.ApiClient, namespace: str, lahar_only: None
) -> None:
    # A Volcano Job, with defaults to fill and a rule it breaks (a task's minAvailable over its
    # replicas): stored as sent, bar the defaults of the CRD's own schema (queue, maxRetry).
    volcano = (
        make_job("vc")
        .ns(namespace)
        .task("worker", 2)
        .plugin("pytorch")
        .scheduler_name("volcano")
        .set("spec.tasks[0].minAvailable", 3)
        .build()
    )
    sent = volcano["spec"]
    spec = wait_until(
        lambda: _admitted(api, volcano), timeout=30, what="the Volcano Job to be admitted"
    )
    assert set(spec) - set(sent) <= {"queue", "maxRetry"}  # (the CRD's schema defaults)
    assert {key: spec[key] for key in sent} == sent
    assert "minAvailable" not in spec and spec["plugins"] == {"pytorch": []}  # no webhook default
    # Lahar's Job, and one naming no scheduler (it gets lahar, the first served), as before.
    lahar = make_job("lj").ns(namespace).task("worker", 2).plugin("pytorch")
    for body in (
        lahar.scheduler_name("lahar").build(),
        make_job("none").ns(namespace).task("w").build(),
    ):
        stored = create(api, body, dry_run=True)["spec"]
        assert stored["schedulerName"] == "lahar" and stored["minAvailable"] > 0
    broken = make_job("lb").ns(namespace).task("worker", 2).scheduler_name("lahar")
    with pytest.raises(
        ApiStatusError, match=re.escape("spec.tasks[0].minAvailable: 3 is more than")
    ):
        create(api, broken.set("spec.tasks[0].minAvailable", 3).build(), dry_run=True)
    # Gang pods: Volcano's not sent (so neither gated nor refused), Lahar's gated.
    volcano_pod = make_pod("vp").ns(namespace).scheduler("volcano").cpu("100m").group("g")
    made = create(api, volcano_pod.group("g", GroupKind.COSCHEDULING).build(), dry_run=True)
    assert _gates(made) == []
    lahar_pod = make_pod("lp").ns(namespace).scheduler("lahar").cpu("100m").group("g")
    assert _gates(create(api, lahar_pod.build(), dry_run=True)) == [GANG_GATE]


def _admitted(api: k8s.ApiClient, body: dict[str, Any]) -> dict[str, Any] | None:
    """The spec `body` would be stored with (a dry run), or None while it is refused (the API
    server may still call the webhook by the configuration it read before the restart)."""
    try:
        spec: dict[str, Any] = create(api, body, dry_run=True)["spec"]
    except ApiStatusError:
        return None
    return spec


def test_a_pod_that_got_in_naming_two_groups_is_explained(
    capsys: pytest.CaptureFixture[str],
    api: k8s.ApiClient,
    namespace: str,
    kubeconfig: Path,
    dev_cluster: devcluster.DevCluster,
) -> None:
    """A Coscheduling group whose pod kept Volcano's annotation (created while the webhook was
    down): the pod waits for the Volcano PodGroup, which does not exist, and every explanation
    says so, live from the extender and from the API."""
    coscheduling = GroupKind.COSCHEDULING
    apply_object(api, make_group("p").ns(namespace).min_member(1).kind_object(coscheduling))
    moved = make_pod("p-0").ns(namespace).scheduler("lahar").cpu("100m").group("p")
    dev_cluster.stop_component(WEBHOOK)
    try:
        create(api, moved.group("p", coscheduling).build())  # (failurePolicy Ignore)
    finally:
        restart_webhook(dev_cluster)
    said = (
        f"pod {namespace}/p-0 names this group by label scheduling.x-k8s.io/pod-group, but also "
        f"the Volcano PodGroup {namespace}/p by annotation scheduling.k8s.io/group-name, which "
        "wins: it waits for that one (it does not exist: it waits until it is made)"
    )
    wait_explained(dev_cluster, coscheduling.key(namespace, "p"), said)
    where = ("--kubeconfig", str(kubeconfig), "-n", namespace)
    assert main(["explain", f"{coscheduling.value}/p", *where]) == 0
    assert said in capsys.readouterr().out
    assert main(["explain", "pod/p-0", *where]) == 0
    out = capsys.readouterr().out
    with capsys.disabled():
        print(out)  # what a user sees (-s)
    assert out.startswith(
        f"pod {namespace}/p-0 waits for the Volcano PodGroup {namespace}/p, named by its "
        "annotation scheduling.k8s.io/group-name, which wins over its label "
        f"scheduling.x-k8s.io/pod-group naming the Coscheduling PodGroup {namespace}/p: "
    )
    assert f"the Volcano PodGroup {namespace}/p does not exist: the pod waits until it is made" in (
        out
    )
