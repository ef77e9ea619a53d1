"""The real node's configuration, read back as its components read it: containerd's settings that
these machines need, the CNI network, the kubelet's and kube-proxy's files, the namespace that
keeps Lahar's pods on the node, and the API server's flags."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from extender.devcluster import real_node


@pytest.fixture
def paths(tmp_path: Path) -> real_node.NodePaths:
    node = real_node.NodePaths(tmp_path / "node")
    node.root.mkdir()
    real_node.write_configs(
        node,
        pause_image="lahar.local/pause:3.10",
        kubelet_kubeconfig=tmp_path / "kubelet.kubeconfig",
        proxy_kubeconfig=tmp_path / "kube-proxy.kubeconfig",
        client_ca=tmp_path / "kubelet-client-ca.crt",
        kubelet_port=10250,
        kubelet_healthz_port=10248,
        proxy_ports=(10249, 10256),
    )
    return node


def test_containerd_keeps_everything_under_the_state_directory(
    paths: real_node.NodePaths,
) -> None:
    config = tomllib.loads(paths.containerd_config.read_text())
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    # Root here may not lower OOM scores: without this every sandbox fails to start.
    assert cri["restrict_oom_score_adj"] is True
    assert cri["sandbox_image"] == "lahar.local/pause:3.10"
    runc = cri["containerd"]["runtimes"]["runc"]["options"]
    assert runc["SystemdCgroup"] is False
    for path in (config["root"], config["state"], config["grpc"]["address"], runc["Root"]):
        assert Path(path).is_relative_to(paths.root)
    assert Path(cri["cni"]["conf_dir"]) == paths.cni_conf


def test_the_pod_network_is_a_bridge_with_the_host_as_its_gateway(
    paths: real_node.NodePaths,
) -> None:
    (network,) = paths.cni_conf.iterdir()
    bridge = json.loads(network.read_text())["plugins"][0]
    assert bridge["bridge"] == real_node.BRIDGE and bridge["isGateway"]
    assert bridge["ipam"]["ranges"] == [
        [{"subnet": real_node.SUBNET, "gateway": real_node.GATEWAY}]
    ]


def test_the_kubelet_is_tainted_authenticates_the_api_server_and_keeps_imported_images(
    paths: real_node.NodePaths,
) -> None:
    kubelet = json.loads(paths.kubelet_config.read_text())
    assert kubelet["registerWithTaints"] == [
        {"key": real_node.NODE_LABEL, "value": "true", "effect": "NoSchedule"}
    ]
    assert kubelet["authentication"]["anonymous"]["enabled"] is False
    assert kubelet["authentication"]["x509"]["clientCAFile"].endswith("kubelet-client-ca.crt")
    assert kubelet["imageGCHighThresholdPercent"] == 100
    assert (kubelet["cgroupDriver"], kubelet["failCgroupV1"]) == ("cgroupfs", False)
    assert kubelet["address"] == real_node.GATEWAY and kubelet["readOnlyPort"] == 0
    proxy = json.loads(paths.proxy_config.read_text())
    assert proxy["mode"] == "iptables" and proxy["hostnameOverride"] == real_node.NODE_NAME
    assert proxy["conntrack"]["maxPerCore"] == 0


def test_lahar_system_selects_and_tolerates_the_real_node() -> None:
    namespace = real_node.namespace_for_node()
    annotations = namespace["metadata"]["annotations"]
    assert annotations["scheduler.alpha.kubernetes.io/node-selector"] == "lahar.dev/real-node=true"
    (toleration,) = json.loads(annotations["scheduler.alpha.kubernetes.io/defaultTolerations"])
    assert toleration == {"key": real_node.NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}


def test_the_api_server_listens_where_pods_reach_it_and_admits_the_namespace_rules() -> None:
    args = real_node.apiserver_args(Path("c.crt"), Path("c.key"))
    assert f"--advertise-address={real_node.GATEWAY}" in args
    assert f"--bind-address={real_node.GATEWAY}" in args  # nothing on the machine's interfaces
    assert "--endpoint-reconciler-type=lease" in args
    plugins = next(a for a in args if a.startswith("--enable-admission-plugins="))
    assert {"PodNodeSelector", "PodTolerationRestriction"} <= set(plugins.split("=")[1].split(","))
    assert "--authorization-mode=Node,RBAC" in args
