"""Scheduler configuration files a user passes are checked with errors naming the field, and get
the dev cluster's own connection settings without losing anything else."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.devcluster import configs
from extender.devcluster.cluster import OWN_STAGES
from extender.devcluster.errors import DevClusterError


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: [unclosed", "not valid YAML"),
        ("- a list\n", "must be a YAML mapping"),
        (
            "kind: KubeSchedulerConfiguration\n",
            "field apiVersion must be 'kubescheduler.config.k8s.io/v1', got None",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            "field apiVersion must be 'kubescheduler.config.k8s.io/v1', "
            "got 'kubescheduler.config.k8s.io/v1beta3'",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
            "field kind must be 'KubeSchedulerConfiguration', got 'Policy'",
        ),
    ],
)
def test_a_broken_scheduler_config_names_the_file_and_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(content)
    with pytest.raises(DevClusterError) as error:
        configs.load_scheduler_config(path)
    assert str(error.value).startswith(f"scheduler config {path}: ")
    assert message in str(error.value)


def test_a_missing_scheduler_config_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(DevClusterError, match="cannot read it: No such file or directory"):
        configs.load_scheduler_config(tmp_path / "absent.yaml")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_either_a_config_or_a_clear_error(text: str) -> None:
    path = Path(tempfile.mkdtemp()) / "scheduler.yaml"
    path.write_text(text)
    try:
        config = configs.load_scheduler_config(path)
    except DevClusterError as error:
        assert str(error).startswith(f"scheduler config {path}: ")  # noqa: PT017
    else:
        assert config["kind"] == configs.SCHEDULER_KIND


def test_cluster_connection_is_set_and_everything_else_kept() -> None:
    user_config = {
        "apiVersion": configs.SCHEDULER_API,
        "kind": configs.SCHEDULER_KIND,
        "clientConnection": {"kubeconfig": "/elsewhere", "qps": 100},
        "leaderElection": {"leaderElect": True, "resourceName": "x"},
        "profiles": [{"schedulerName": "lahar"}],
        "extenders": [{"urlPrefix": "http://127.0.0.1:1", "filterVerb": "filter"}],
    }

    result = configs.scheduler_config_for_cluster(user_config, Path("/state/scheduler.kubeconfig"))

    assert result["clientConnection"] == {"kubeconfig": "/state/scheduler.kubeconfig", "qps": 100}
    assert result["leaderElection"] == {"leaderElect": False, "resourceName": "x"}
    assert result["profiles"] == user_config["profiles"]
    assert result["extenders"] == user_config["extenders"]
    assert user_config["clientConnection"]["kubeconfig"] == "/elsewhere"  # input untouched


def test_kubeconfig_verifies_the_server_with_the_ca_and_uses_the_token(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    config = configs.kubeconfig("https://127.0.0.1:6443", ca, "admin", "t0ken")
    path = configs.write_yaml(tmp_path / "kubeconfig", [config], private=True)

    loaded = yaml.safe_load(path.read_text())
    cluster = loaded["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert "insecure-skip-tls-verify" not in cluster
    assert cluster["certificate-authority-data"] == "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
    assert loaded["users"][0] == {"name": "admin", "user": {"token": "t0ken"}}
    assert path.stat().st_mode & 0o077 == 0


def test_kwok_config_puts_lahars_exit_stage_after_the_stock_stages(tmp_path: Path) -> None:
    stock = tmp_path / "pod-ready.yaml"
    stock.write_text("kind: Stage\nmetadata: {name: pod-ready}\n---\n")

    documents = configs.kwok_config((stock,), OWN_STAGES)

    assert [d["metadata"]["name"] for d in documents] == ["pod-ready", "lahar-pod-exit"]
