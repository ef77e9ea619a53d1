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
