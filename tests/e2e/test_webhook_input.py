"""Hostile input straight at the running webhook (the dev cluster's `lahar webhook` process, over
its TLS port, verified against the CA it published): hundreds of generated AdmissionReviews and
Jobs that are malformed on purpose. Each gets a clear denial or a 4xx with the reason, never a
500 or an `error` in the webhook's metrics; the process keeps serving and its memory stays
bounded."""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from extender import devcluster
from tests.e2e.jobs import example
from tests.e2e.webhook import WEBHOOK, ca_bundle, url

PATHS = (
    "/mutate/jobs",
    "/mutate/queues",
    "/validate/jobs",
    "/validate/queues",
    "/validate/podgroups",
    "/validate/hypernodes",
)
RESOURCES = {
    "/mutate/jobs": ("batch.volcano.sh", "v1alpha1", "jobs", "Job"),
    "/validate/jobs": ("batch.volcano.sh", "v1alpha1", "jobs", "Job"),
    "/mutate/queues": ("scheduling.volcano.sh", "v1beta1", "queues", "Queue"),
    "/validate/queues": ("scheduling.volcano.sh", "v1beta1", "queues", "Queue"),
    "/validate/podgroups": ("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup"),
    "/validate/hypernodes": ("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode"),
}
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Webhook:
    def __init__(self, cluster: devcluster.DevCluster, ca_file: Path) -> None:
        self.cluster = cluster
        self.pool = urllib3.PoolManager(
            cert_reqs="CERT_REQUIRED", ca_certs=str(ca_file), retries=False, timeout=30.0
        )

    def post(self, path: str, body: bytes) -> urllib3.BaseHTTPResponse:
        return self.pool.request(
            "POST", url(self.cluster, path), body=body, headers={"Content-Type": "application/json"}
        )

    def errors(self) -> float:
        """Reviews the webhook answered with result=error (a rule raised)."""
        text = self.pool.request("GET", url(self.cluster, "/metrics")).data.decode()
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "lahar_webhook_admissions_total"
            and sample.labels.get("result") == "error"
        )

    def rss_kib(self) -> int:
        record = next(p for p in self.cluster.state.processes if p.name == WEBHOOK)
        for line in Path(f"/proc/{record.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS for the webhook")


@pytest.fixture(scope="module")
def webhook(
    dev_cluster: devcluster.DevCluster, api: k8s.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    ca_file = tmp_path_factory.mktemp("webhook") / "ca.crt"
    ca_file.write_bytes(ca_bundle(api))
    served = Webhook(dev_cluster, ca_file)
    before = served.errors()
    yield served
    assert served.errors() == before, "a rule raised on some input: see the webhook's log"


def review(path: str, obj: Any, operation: str = "CREATE", **extra: Any) -> dict[str, Any]:
    group, version, resource, kind = RESOURCES[path]
    request = {
        "uid": secrets.token_hex(8),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": "fuzzed",
        "namespace": "" if resource == "queues" else "default",
        "operation": operation,
        "object": obj,
        **extra,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def check(answer: urllib3.BaseHTTPResponse, sent: dict[str, Any] | None = None) -> None:
    """A denial or an allowance for the very request, or a 4xx saying why; never a 500."""
    assert answer.status in (200, 400, 413), answer.data[:300]
    if answer.status != 200:
        assert answer.data.strip(), "a refusal without a reason"
        return
    response = json.loads(answer.data)["response"]
    if sent is not None:
        assert response["uid"] == sent["request"]["uid"]
    if not response["allowed"]:
        message = response["status"]["message"]
        assert isinstance(message, str) and 0 < len(message) < 8000


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
HOSTILE = st.one_of(
    JSON,
    st.integers(min_value=2**31, max_value=10**40),
    st.integers(max_value=-1),
    st.text(min_size=1, max_size=300),  # unicode, control characters, surrogates-free
    st.just("x" * 70_000),
    st.just("9" * 5_000),
)


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, (*at, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _paths(value, (*at, index))


TF_JOB = example("tf-dist-mnist.yaml", "default")
JOB_PATHS = [p for p in _paths(TF_JOB) if p]


def _replaced(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    copied = copy.deepcopy(obj)
    *parents, last = path
    target = copied
    for key in parents:
        target = target[key]
    target[last] = value
    return copied


@FUZZ
@given(path=st.sampled_from(PATHS), body=JSON)
def test_random_json_is_answered_with_a_reason(webhook: Webhook, path: str, body: Any) -> None:
    check(webhook.post(path, json.dumps(body).encode()))


@FUZZ
@given(
    path=st.sampled_from(PATHS),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT", "PATCH", ""]),
    obj=JSON,
    drop=st.sampled_from(["", "uid", "kind", "resource", "operation", "object"]),
)
def test_malformed_reviews_are_answered_with_a_reason(
    webhook: Webhook, path: str, operation: str, obj: Any, drop: str
) -> None:
    sent = review(path, obj, operation)
    sent["request"].pop(drop, None)
    check(webhook.post(path, json.dumps(sent).encode()), sent if not drop else None)


@settings(FUZZ, max_examples=250)
@given(
    path=st.sampled_from(["/mutate/jobs", "/validate/jobs"]),
    where=st.sampled_from(JOB_PATHS),
    value=HOSTILE,
    name=st.text(max_size=80),
)
def test_hostile_jobs_are_denied_naming_the_field(
    webhook: Webhook, path: str, where: tuple[Any, ...], value: Any, name: str
) -> None:
    job = _replaced(TF_JOB, where, value)
    if isinstance(job.get("metadata"), dict):
        job["metadata"]["name"] = name
    sent = review(path, job)
    check(webhook.post(path, json.dumps(sent).encode()), sent)


def test_huge_and_deep_bodies_are_refused_and_memory_stays_bounded(webhook: Webhook) -> None:
    valid = json.dumps(review("/validate/jobs", TF_JOB)).encode()
    rss_before = webhook.rss_kib()
    deep = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":' + (
        b"[" * 200_000 + b"]" * 200_000 + b"}"
    )
    wide = review("/validate/jobs", {**TF_JOB, "spec": {**TF_JOB["spec"], "tasks": [{}] * 50_000}})
    for _ in range(10):
        check(webhook.post("/validate/jobs", deep))
        check(webhook.post("/validate/jobs", b"{" + b" " * (9 * 1024 * 1024) + b"}"))  # 413
        check(webhook.post("/validate/jobs", json.dumps(wide).encode()), wide)
        check(webhook.post("/mutate/jobs", b"\xff\xfe not json"))
    grown = webhook.rss_kib() - rss_before
    assert grown < 64 * 1024, f"the webhook's RSS grew by {grown} KiB"
    answer = webhook.post("/validate/jobs", valid)
    assert answer.status == 200 and json.loads(answer.data)["response"]["allowed"]
