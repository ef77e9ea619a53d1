"""`kubectl lahar`: the real kubectl finds the installed `kubectl-lahar` on PATH (the venv's bin,
where installing the package puts it beside `lahar`) and runs it as a plugin against the dev
cluster, which names itself `kubectl lahar` and reads the kubeconfig kubectl was given."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from extender import devcluster
from tests.builders import make_queue
from tests.e2e.conftest import ClusterObject

PLUGIN = Path(sys.executable).parent / "kubectl-lahar"


@pytest.fixture
def kubectl() -> list[str]:
    """The real kubectl, once the package's plugin is installed beside this Python."""
    assert PLUGIN.is_file(), f"{PLUGIN} is missing: install the package (pip install -e .)"
    return [str(devcluster.ensure_binaries(quiet=True).kubectl)]


def _run(
    kubectl: list[str], kubeconfig: Path, home: Path, *words: str
) -> subprocess.CompletedProcess[str]:
    """kubectl as a user runs it: PATH holding the venv's bin (and the system's), $KUBECONFIG
    the dev cluster's, HOME of its own (kubectl's discovery cache)."""
    env = {
        "PATH": os.pathsep.join([str(PLUGIN.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "KUBECONFIG": str(kubeconfig),
        "HOME": str(home),
    }
    return subprocess.run(
        [*kubectl, *words], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_kubectl_lists_lahar_among_its_plugins(
    kubectl: list[str], kubeconfig: Path, tmp_path: Path
) -> None:
    listed = _run(kubectl, kubeconfig, tmp_path, "plugin", "list")
    assert listed.returncode == 0, listed.stderr
    assert str(PLUGIN) in listed.stdout.splitlines(), listed.stdout


def test_kubectl_lahar_reads_the_cluster_and_names_itself_so(
    kubectl: list[str],
    kubeconfig: Path,
    tmp_path: Path,
    namespace: str,
    cluster_object: ClusterObject,
) -> None:
    name = f"plugin-{secrets.token_hex(3)}"
    cluster_object(make_queue(name).weight(3).build())

    listed = _run(kubectl, kubeconfig, tmp_path, "lahar", "queue", "list")
    assert listed.returncode == 0, listed.stderr
    [row] = [line.split() for line in listed.stdout.splitlines() if line.split()[:1] == [name]]
    header = listed.stdout.splitlines()[0].split()
    assert dict(zip(header, row, strict=False))["WEIGHT"] == "3", listed.stdout

    missing = _run(kubectl, kubeconfig, tmp_path, "lahar", "job", "view", "nope", "-n", namespace)
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"kubectl lahar: error: Job {namespace}/nope not found"

    helped = _run(kubectl, kubeconfig, tmp_path, "lahar", "job", "list", "--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith("usage: kubectl lahar job list "), helped.stdout
