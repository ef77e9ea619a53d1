"""What keeps the cache small must not change what a model says: shared sub-models, shared
records of given fields and interned strings are invisible except as identity."""

from __future__ import annotations

import copy

from extender.api.objects import Pod
from extender.api.scheduling import PodGroupStatus

POD = {
    "metadata": {"name": "p", "namespace": "team-a", "uid": "u", "labels": {"app": "train"}},
    "spec": {
        "nodeName": "node-1",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    },
    "status": {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
            {"type": "Ready", "status": "False"},
        ],
    },
}


def _pod(name: str) -> Pod:
    body = copy.deepcopy(POD)
    body["metadata"]["name"] = body["metadata"]["uid"] = name
    return Pod.model_validate(body)


def test_replicas_share_their_containers_tolerations_and_strings() -> None:
    one, two = _pod("a"), _pod("b")
    assert one.spec.containers[0] is two.spec.containers[0]
    assert one.spec.tolerations[0] is two.spec.tolerations[0]
    assert one.metadata.namespace is two.metadata.namespace
    assert next(iter(one.metadata.labels)) is next(iter(two.metadata.labels))
    assert one.model_fields_set is two.model_fields_set
    assert one.metadata.name == "a" and two.metadata.name == "b"
    assert one.request == two.request and one.request["cpu"] == 2000


def test_only_the_scheduling_condition_is_kept_and_still_read() -> None:
    pod = _pod("a")
    assert [c.type for c in pod.status.conditions] == ["PodScheduled"]
    assert pod.parked


def test_a_copy_with_changes_leaves_the_shared_record_alone() -> None:
    first = PodGroupStatus.model_validate({"phase": "Pending"})
    second = PodGroupStatus.model_validate({"phase": "Running"})
    assert first.model_fields_set is second.model_fields_set
    changed = first.model_copy(update={"running": 3})
    assert changed.running == 3
    assert first.model_fields_set == second.model_fields_set == {"phase"}
