"""Fluent builders for the objects tests submit: `make_pod("w-0").ns(ns).cpu("1").build()`."""

from __future__ import annotations

import copy
from typing import Any, Self


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {}, "annotations": {}},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {}}
                ],
            },
        }

    def _requests(self) -> dict[str, str]:
        resources = self._pod["spec"]["containers"][0]["resources"]
        requests: dict[str, str] = resources.setdefault("requests", {})
        return requests

    def ns(self, namespace: str) -> Self:
        self._pod["metadata"]["namespace"] = namespace
        return self

    def cpu(self, quantity: str) -> Self:
        self._requests()["cpu"] = quantity
        return self

    def memory(self, quantity: str) -> Self:
        self._requests()["memory"] = quantity
        return self

    def scheduler(self, name: str) -> Self:
        self._pod["spec"]["schedulerName"] = name
        return self

    def label(self, key: str, value: str) -> Self:
        self._pod["metadata"]["labels"][key] = value
        return self

    def annotate(self, key: str, value: str) -> Self:
        self._pod["metadata"]["annotations"][key] = value
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self._pod)


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)
