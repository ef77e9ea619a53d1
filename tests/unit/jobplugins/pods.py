"""Building jobs and reading pod bodies in the plugin tests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from extender.api.batch import Job, TaskSpec

MakePod = Callable[[Job, str, int], tuple[dict[str, Any], TaskSpec]]


def load_job(body: dict[str, Any]) -> Job:
    """A Job from its YAML body, placed in namespace `ml` with a uid."""
    body = copy.deepcopy(body)
    body["metadata"] |= {"namespace": "ml", "uid": "job-uid"}
    return Job.model_validate(body)


def container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "example/image", **fields}


def all_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod["spec"]["containers"], *pod["spec"].get("initContainers", [])]


def env_of(c: dict[str, Any]) -> dict[str, Any]:
    """name → value, or → valueFrom for a variable read from elsewhere; fails on a duplicate."""
    names = [e["name"] for e in c.get("env", [])]
    assert len(names) == len(set(names)), f"duplicated env in {c['name']}: {names}"
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


def task(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    """A task of `replicas` pods: a container `main` and an init container `wait`, unless `spec`
    (pod spec fields) says otherwise."""
    template = {"containers": [container("main")], "initContainers": [container("wait")], **spec}
    return {"name": name, "replicas": replicas, "template": {"spec": template}}


def job_of(name: str, *tasks: dict[str, Any]) -> Job:
    """Job `name` in namespace `ml` with these tasks."""
    return load_job({"metadata": {"name": name}, "spec": {"tasks": list(tasks)}})
