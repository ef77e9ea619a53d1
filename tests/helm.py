"""Helm as the tests run it: the binary built from the module pinned in tests/controlplane/helm,
and `charts/lahar/` rendered by `helm template` into the objects it holds (the chart's tests
compare them with the kustomize install; the alert and dashboard tests read their own)."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from extender.devcluster import ensure_tool
from extender.devcluster.paths import repository

CHART = repository() / "charts" / "lahar"
NAMESPACE = "lahar-system"

Objects = list[dict[str, Any]]


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    binary = ensure_tool("helm") / "helm"
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, check=False, timeout=120
    )


def template(*flags: str, namespace: str = NAMESPACE) -> Objects:
    """The chart's objects as `helm template` renders them with `flags` in `namespace`."""
    done = helm("template", "lahar", str(CHART), "--namespace", namespace, *flags)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]
