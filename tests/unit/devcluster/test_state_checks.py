"""`up` refuses a state directory that is in use, stale or corrupt, and a busy port, with one line
saying what to do, before it starts any process."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from extender.devcluster import ClusterOptions, DevClusterError, up
from extender.devcluster.build import Binaries
from extender.devcluster.child_processes import ProcessRecord, _stat
from extender.devcluster.state_file import DevClusterState, load_state

NO_BINARIES = Binaries(
    etcd=Path("/nonexistent/etcd"),
    kube_apiserver=Path("/nonexistent/kube-apiserver"),
    kube_controller_manager=Path("/nonexistent/kube-controller-manager"),
    kube_scheduler=Path("/nonexistent/kube-scheduler"),
    kubectl=Path("/nonexistent/kubectl"),
    kwok=Path("/nonexistent/kwok"),
    kwok_stages=(),
    kubernetes_version="v1.35.4",
)


def _state(state_dir: Path, record: ProcessRecord) -> DevClusterState:
    state = DevClusterState(
        state_dir=state_dir,
        kubeconfig=state_dir / "kubeconfig",
        server="https://127.0.0.1:1",
        kubernetes_version="v1.35.4",
        ports={"apiserver": 1},
        processes=[record],
    )
    state_dir.mkdir(parents=True, exist_ok=True)
    state.save()
    return state


def _record_of(pid: int, start_time: int) -> ProcessRecord:
    return ProcessRecord(
        name="kube-apiserver", pid=pid, start_time=start_time, binary="/x", log=Path("/x.log")
    )


def _fail_up(options: ClusterOptions) -> str:
    with pytest.raises(DevClusterError) as error:
        up(options, NO_BINARIES)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_running_cluster_in_the_state_dir_is_reported(tmp_path: Path) -> None:
    stat = _stat(os.getpid())
    assert stat is not None
    _state(tmp_path, _record_of(os.getpid(), stat[1]))

    message = _fail_up(ClusterOptions(state_dir=tmp_path))

    assert f"already running from {tmp_path} (kube-apiserver pid {os.getpid()})" in message
    assert f"lahar dev-cluster down --state-dir {tmp_path}" in message


def test_a_stale_state_dir_is_reported_with_the_command_that_cleans_it(tmp_path: Path) -> None:
    # Our own pid with another start time: a recycled pid, so the recorded process is gone.
    _state(tmp_path, _record_of(os.getpid(), start_time=1))

    message = _fail_up(ClusterOptions(state_dir=tmp_path))

    assert "no longer running (stale)" in message
    assert f"lahar dev-cluster down --state-dir {tmp_path}" in message
    assert load_state(tmp_path) is not None  # nothing was removed behind the user's back


def test_a_corrupt_state_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{not json")

    message = _fail_up(ClusterOptions(state_dir=tmp_path))

    assert f"{tmp_path / 'state.json'} is not a dev cluster state file" in message


def test_a_busy_apiserver_port_is_reported_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        message = _fail_up(ClusterOptions(state_dir=tmp_path / "state", apiserver_port=port))

    assert message == (
        f"port {port} for the kube-apiserver is already in use; free it or choose another "
        "with --apiserver-port"
    )
    assert not (tmp_path / "state").exists()


def test_a_bad_scheduler_config_is_reported_before_anything_starts(tmp_path: Path) -> None:
    config = tmp_path / "sched.yaml"
    config.write_text("apiVersion: v1\nkind: Pod\n")

    message = _fail_up(ClusterOptions(state_dir=tmp_path / "state", scheduler_config=config))

    assert message.startswith(f"scheduler config {config}: field apiVersion")
    assert not (tmp_path / "state").exists()


def test_more_switches_than_nodes_is_reported_before_anything_starts(tmp_path: Path) -> None:
    message = _fail_up(ClusterOptions(state_dir=tmp_path / "state", nodes=2, switches=3))

    assert message == "--switches: 3 switches for 2 nodes (one node each at least)"
    assert not (tmp_path / "state").exists()
