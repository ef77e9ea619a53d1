"""Container rules: resource names and how each resource is counted, and that any JSON in a
template's fields is answered with problems at its fields, never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.admission.containers import container_problems, overcommits, resource_name, whole
from extender.admission.queues import check_queue
from extender.admission.templates import template_problems
from tests.builders import make_queue

AT = ("spec", "tasks", 0, "template", "spec", "containers", 0)


@pytest.mark.parametrize(
    ("name", "valid", "overcommitted", "counted_whole"),
    [
        ("cpu", True, True, False),
        ("memory", True, True, False),
        ("ephemeral-storage", True, True, False),
        ("hugepages-2Mi", True, False, False),
        ("nvidia.com/gpu", True, False, True),
        ("example.com/fpga-x_1", True, False, True),
        ("kubernetes.io/something", True, True, False),
        ("gpu", False, True, False),
        ("storage", False, True, False),
        ("example.com/", False, False, False),
        ("Example.com/gpu", False, False, False),
        ("requests.example.com/gpu", False, False, False),
    ],
)
def test_resource_names(name: str, valid: bool, overcommitted: bool, counted_whole: bool) -> None:
    assert (resource_name(name) is None) == valid
    assert overcommits(name) == overcommitted
    assert whole(name) == counted_whole


def test_a_good_container_has_no_problem() -> None:
    container = {
        "name": "main",
        "image": "busybox:1.36",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 53, "name": "dns"}, {"containerPort": 53, "protocol": "UDP"}],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"secretKeyRef": {}}}],
        "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "a/b"}],
        "resources": {
            "requests": {"cpu": "500m", "nvidia.com/gpu": 2},
            "limits": {"cpu": 1, "nvidia.com/gpu": "2", "hugepages-1Gi": "1Gi"},
        },
    }
    assert list(container_problems(container, set(), {"data"}, *AT)) == []


def test_a_name_already_taken_in_the_pod_is_named() -> None:
    names = {"main"}
    [problem] = container_problems({"name": "main", "image": "x"}, names, set(), *AT)
    assert problem.reason == "'main' is the name of another container"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
CONTAINER_FIELDS = st.sampled_from(
    ["name", "image", "imagePullPolicy", "ports", "env", "volumeMounts", "resources"]
)
SPEC_FIELDS = st.sampled_from(
    [
        "restartPolicy",
        "dnsPolicy",
        "dnsConfig",
        "hostname",
        "subdomain",
        "serviceAccountName",
        "nodeName",
        "priorityClassName",
        "activeDeadlineSeconds",
        "nodeSelector",
        "tolerations",
        "volumes",
        "hostNetwork",
        "containers",
        "initContainers",
    ]
)


def _anything(fields: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose known fields hold any JSON, a list of such objects among them."""
    element = st.dictionaries(CONTAINER_FIELDS, JSON, max_size=4)
    return st.dictionaries(fields, JSON | st.lists(element, max_size=2), max_size=5)


@settings(max_examples=300, deadline=None)
@given(_anything(CONTAINER_FIELDS))
def test_any_container_is_answered_at_its_fields(container: dict[str, Any]) -> None:
    for problem in container_problems(container, set(), set(), *AT):
        assert problem.path.startswith("spec.tasks[0].template.spec.containers[0]")


@settings(max_examples=300, deadline=None)
@given(_anything(SPEC_FIELDS), JSON)
def test_any_template_is_answered_at_its_fields(spec: dict[str, Any], metadata: Any) -> None:
    template = {"metadata": metadata, "spec": spec}
    for problem in template_problems(template, "spec", "tasks", 0, "template"):
        assert problem.path.startswith("spec.tasks[0].template.")


@settings(max_examples=200, deadline=None)
@given(JSON, st.sampled_from(["root", "team"]))
def test_any_old_queue_is_compared_without_an_exception(old_spec: Any, name: str) -> None:
    new = make_queue(name).capability(cpu="4").build()
    for problem in check_queue(new, None, {"spec": old_spec}):
        assert problem.path.startswith("spec")
