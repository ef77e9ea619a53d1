"""Removing a stopped dev cluster's state directory, whole or all but its logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.devcluster import DevCluster, up
from extender.devcluster.child_processes import ProcessRecord
from extender.devcluster.cluster import ClusterOptions, native_gang_args
from extender.devcluster.state_file import STATE_FILE, DevClusterState
from tests.unit.devcluster.test_state_checks import NO_BINARIES


def _stopped(state_dir: Path) -> DevCluster:
    logs = state_dir / "logs"
    (state_dir / "etcd").mkdir(parents=True)
    (state_dir / "etcd" / "db").write_text("data")
    logs.mkdir()
    (logs / "lahar.log").write_text("2026-11-26 22:44:13,576 ERROR extender.x: broken\n")
    (state_dir / "kubeconfig").write_text("{}")
    record = ProcessRecord(
        name="lahar", pid=2**22 + 1, start_time=1, binary="x", log=logs / "lahar.log"
    )
    state = DevClusterState(
        state_dir=state_dir,
        kubeconfig=state_dir / "kubeconfig",
        server="https://127.0.0.1:1",
        kubernetes_version="v1.35.4",
        ports={"apiserver": 1},
        processes=[record],
    )
    state.save()
    return DevCluster(state)


def test_remove_takes_the_whole_directory(tmp_path: Path) -> None:
    cluster = _stopped(tmp_path / "c")
    assert cluster.stop() == []
    cluster.remove()
    assert not (tmp_path / "c").exists()


def test_remove_keeping_the_logs_leaves_no_state_for_up_to_refuse(tmp_path: Path) -> None:
    state_dir = tmp_path / "c"
    cluster = _stopped(state_dir)
    cluster.remove(keep_logs=True)
    assert sorted(p.name for p in state_dir.iterdir()) == ["logs"]
    assert (state_dir / "logs" / "lahar.log").read_text().startswith("2026")
    assert not (state_dir / STATE_FILE).exists()
    # a later `up` takes the directory as leftovers: it gets as far as starting etcd
    with pytest.raises(FileNotFoundError, match="/nonexistent/etcd"):
        up(ClusterOptions(state_dir=state_dir, ready_timeout=1), NO_BINARIES)


@pytest.mark.parametrize(
    ("version", "apiserver", "flags"),
    [
        ("v1.35.4", True, []),
        ("v1.35.4", False, []),
        ("v1.37.2", False, ["--feature-gates=GenericWorkload=true"]),
        (
            "v1.37.2",
            True,
            [
                "--feature-gates=GenericWorkload=true",
                "--runtime-config=scheduling.k8s.io/v1beta1=true",
            ],
        ),
    ],
)
def test_only_1_37_components_get_the_native_gang_api(
    version: str, apiserver: bool, flags: list[str]
) -> None:
    assert native_gang_args(version, apiserver=apiserver) == flags
