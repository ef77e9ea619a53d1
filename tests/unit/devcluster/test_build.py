"""Building the control plane: version pins, the cache key, and one-line errors for a missing or
too old Go and a missing source tree (none of these tests compiles anything)."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from extender.devcluster import build
from extender.devcluster.errors import DevClusterError

SOURCE = Path(__file__).resolve().parents[3] / "tests" / "controlplane"


@pytest.mark.parametrize(
    ("folder", "module", "version"),
    [
        ("kubernetes", "k8s.io/kubernetes", "v1.35.4"),
        ("kubernetes-1.37", "k8s.io/kubernetes", "v1.37.2"),
        ("etcd", "go.etcd.io/etcd/server/v3", "v3.6.13"),
        ("kwok", "sigs.k8s.io/kwok", "v0.8.0"),
        ("helm", "helm.sh/helm/v3", "v3.22.0"),
        ("prometheus", "github.com/prometheus/prometheus", "v0.316.0"),
    ],
)
def test_committed_go_modules_pin_the_verified_versions(
    folder: str, module: str, version: str
) -> None:
    go_mod = (SOURCE / folder / "go.mod").read_text()
    assert build.module_version(go_mod, module) == version
    assert (SOURCE / folder / "go.sum").stat().st_size > 0


@pytest.mark.parametrize(
    ("folder", "staging", "count"),
    [("kubernetes", "v0.35.4", 31), ("kubernetes-1.37", "v0.37.2", 33)],
)
def test_kubernetes_module_replaces_every_staging_module_with_its_published_version(
    folder: str, staging: str, count: int
) -> None:
    go_mod = (SOURCE / folder / "go.mod").read_text()
    replaces = [line.split() for line in go_mod.splitlines() if "=> k8s.io/" in line]
    assert len(replaces) == count
    assert all(r[0] == r[2] and r[3] == staging for r in replaces)


@pytest.mark.parametrize(
    ("asked", "folder"),
    [("1.35", "kubernetes"), ("1.35.4", "kubernetes"), ("v1.37.2", "kubernetes-1.37")],
)
def test_a_kubernetes_version_names_its_pinned_module(asked: str, folder: str) -> None:
    assert build.kubernetes_folder(asked) == folder
    assert (SOURCE / folder / "go.mod").is_file()


@pytest.mark.parametrize("asked", ["1.36", "2.0", "latest", ""])
def test_a_kubernetes_version_not_pinned_is_one_line_naming_those_that_are(asked: str) -> None:
    with pytest.raises(DevClusterError, match=r"the dev cluster runs 1\.35, 1\.37"):
        build.kubernetes_folder(asked)


def test_module_version_reads_single_line_and_block_requires() -> None:
    assert (
        build.module_version("require k8s.io/kubernetes v1.2.3\n", "k8s.io/kubernetes") == "v1.2.3"
    )
    block = "require (\n\tfoo v0.1.0\n\tk8s.io/kubernetes v1.35.4 // indirect\n)\n"
    assert build.module_version(block, "k8s.io/kubernetes") == "v1.35.4"
    with pytest.raises(DevClusterError, match=r"does not require k8s\.io/kubernetes"):
        build.module_version(block, "k8s.io/kubernetes/x")


def _copy_module(tmp_path: Path, folder: str) -> Path:
    target = tmp_path / folder
    target.mkdir(parents=True)
    for name in ("go.mod", "go.sum"):
        (target / name).write_bytes((SOURCE / folder / name).read_bytes())
    return target


def test_cache_folder_changes_when_go_sum_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAHAR_CACHE_DIR", str(tmp_path / "cache"))
    target = _copy_module(tmp_path / "src", "etcd")
    module = next(m for m in build.MODULES if m.folder == "etcd")
    before, version, _ = build._build_dir(tmp_path / "src", module)
    with (target / "go.sum").open("a") as go_sum:
        go_sum.write("example.com/x v1.0.0 h1:abc=\n")
    after, _, _ = build._build_dir(tmp_path / "src", module)

    assert version == "v3.6.13"
    assert before != after
    assert before.parent == after.parent == tmp_path / "cache" / "bin"
    assert before.name.startswith("etcd-v3.6.13-")


def _fake_go(folder: Path, version: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "go"
    script.write_text(f"#!/bin/sh\necho {version}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_missing_go_is_one_line_saying_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DevClusterError) as error:
        build.check_go("1.25.0")
    message = str(error.value)
    assert "\n" not in message
    assert "Go is not installed (no `go` on PATH)" in message
    assert "install Go 1.25.0 or newer" in message


def test_too_old_go_names_both_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_go(tmp_path, "go1.21.4")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DevClusterError, match=r"Go go1\.21\.4 is too old: .* needs Go 1\.26\.0"):
        build.check_go("1.26.0")


def test_new_enough_go_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_go(tmp_path, "go1.26.8")
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    assert build.check_go("1.26.0") == str(tmp_path / "go")


def test_ensure_binaries_without_go_fails_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAHAR_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-go-here"))
    with pytest.raises(DevClusterError, match="Go is not installed"):
        build.ensure_binaries()
    assert not (tmp_path / "empty-cache" / "bin").exists()


def test_missing_source_tree_names_the_folder_and_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAHAR_CONTROLPLANE_SRC", str(tmp_path / "nowhere"))
    monkeypatch.delenv("LAHAR_KUBERNETES", raising=False)  # the default version: 1.37
    with pytest.raises(
        DevClusterError, match=r"nowhere/kubernetes-1\.37 is missing .*LAHAR_CONTROLPLANE_SRC"
    ):
        build.ensure_binaries()


def test_a_real_node_is_refused_on_a_version_that_pins_no_kubelet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.35's module pins the control plane only: asking it for a node says which version has one,
    before anything is built."""
    monkeypatch.setenv("LAHAR_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(DevClusterError, match=r"Kubernetes 1\.35: a real node runs on 1\.37 only"):
        build.ensure_binaries(node=True, kubernetes="1.35")
    assert not (tmp_path / "empty-cache" / "bin").exists()


def test_the_node_is_built_apart_from_the_control_plane_of_the_same_pin() -> None:
    root = build.controlplane_source()
    kubernetes, node = (
        replace(m, folder="kubernetes-1.37")
        for m in build.MODULES
        if m.pinned == "k8s.io/kubernetes"
    )
    assert "k8s.io/kubernetes/cmd/kubelet" in node.packages and node.optional
    control, _, _ = build._build_dir(root, kubernetes)
    built, _, _ = build._build_dir(root, node)
    assert control != built
    assert built.name.startswith("kubernetes-1.37-node-v1.37.2-")


def test_a_tool_not_built_is_one_line_naming_those_that_are() -> None:
    with pytest.raises(DevClusterError, match="no tool 'kustomize': the tools built are helm, "):
        build.ensure_tool("kustomize")


def test_tools_are_optional_modules_and_fail_without_go_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tools are modules `ensure_binaries` skips (optional, never asked for there), and
    `ensure_tool` without Go fails in one line before writing anything."""
    tools = [m for m in build.MODULES if m.folder in build.TOOLS]
    assert [m.folder for m in tools] == list(build.TOOLS) and all(m.optional for m in tools)
    monkeypatch.setenv("LAHAR_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-go-here"))
    with pytest.raises(DevClusterError, match="Go is not installed"):
        build.ensure_tool("helm")
    assert not (tmp_path / "empty-cache" / "bin").exists()
