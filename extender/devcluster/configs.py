"""Configuration files a dev cluster writes for its components: kubeconfigs, the kube-scheduler's
KubeSchedulerConfiguration and KWOK's stages.

A user's scheduler configuration is read, checked and written back with the cluster's own connection
settings (its kubeconfig, no leader election); the checks name the field that is wrong.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from extender.devcluster.errors import DevClusterError

SCHEDULER_API = "kubescheduler.config.k8s.io/v1"
SCHEDULER_KIND = "KubeSchedulerConfiguration"


def kubeconfig(server: str, ca_cert: Path, user: str, token: str) -> dict[str, Any]:
    ca_data = base64.b64encode(ca_cert.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "lahar-dev",
                "cluster": {"server": server, "certificate-authority-data": ca_data},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "lahar-dev", "context": {"cluster": "lahar-dev", "user": user}}],
        "current-context": "lahar-dev",
    }


def write_yaml(path: Path, documents: list[dict[str, Any]], *, private: bool = False) -> Path:
    if private:
        path.touch(mode=0o600)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def default_scheduler_config() -> dict[str, Any]:
    return {"apiVersion": SCHEDULER_API, "kind": SCHEDULER_KIND}


def load_scheduler_config(path: Path) -> dict[str, Any]:
    """Read a KubeSchedulerConfiguration file; fail naming the file and the field that is wrong."""
    try:
        config = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise DevClusterError(f"scheduler config {path}: cannot read it: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise DevClusterError(f"scheduler config {path}: not valid YAML: {exc}") from exc
    if not isinstance(config, dict):
        raise DevClusterError(f"scheduler config {path}: must be a YAML mapping")
    for field, expected in (("apiVersion", SCHEDULER_API), ("kind", SCHEDULER_KIND)):
        if config.get(field) != expected:
            raise DevClusterError(
                f"scheduler config {path}: field {field} must be {expected!r}, "
                f"got {config.get(field)!r}"
            )
    return config


def scheduler_config_for_cluster(
    config: dict[str, Any], kubeconfig_path: Path, *, elect: bool = False
) -> dict[str, Any]:
    """`config` with the dev cluster's connection: its kubeconfig, and no leader election
    unless `elect` (then the Lease the configuration names)."""
    result = dict(config)
    connection = dict(result.get("clientConnection") or {})
    connection["kubeconfig"] = str(kubeconfig_path)
    result["clientConnection"] = connection
    election = dict(result.get("leaderElection") or {})
    election["leaderElect"] = elect and election.get("leaderElect", True) is not False
    result["leaderElection"] = election
    return result


def kwok_config(stage_files: tuple[Path, ...], own_stages: Path) -> list[dict[str, Any]]:
    """All Stage documents KWOK runs with: the stock ones, then Lahar's own."""
    documents: list[dict[str, Any]] = []
    for path in (*stage_files, own_stages):
        documents.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return documents
