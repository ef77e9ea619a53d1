"""The real node's configuration, read back as its components read it: containerd's settings that
these machines need, the CNI network, the kubelet's and kube-proxy's files, the namespace that
keeps Lahar's pods on the node, and the API server's flags."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from extender.devcluster import real_node
from extender.devcluster.errors import DevClusterError
from extender.devcluster.images import host_tools


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


def test_missing_tools_are_named_with_their_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)  # not root: nothing is installed
    with pytest.raises(DevClusterError, match="a real node needs the Debian packages no-such-pkg"):
        host_tools({"no-such-command-here": "no-such-pkg"}, "a real node")


def test_teardown_of_a_state_directory_that_never_prepared_the_host_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge, the cgroup root and the node are the machine's one real node: another
    cluster's state directory must not tear them down."""
    ran: list[list[str]] = []
    monkeypatch.setattr(real_node, "_sh", lambda argv, *_, **__: ran.append(argv))
    monkeypatch.setattr(real_node.os, "kill", lambda *_: ran.append(["kill"]))
    real_node.teardown(real_node.NodePaths(tmp_path / "never"))
    assert ran == []


def test_a_real_node_is_refused_without_root_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(DevClusterError, match="a real node needs root"):
        real_node.check_host(real_node.NodePaths(tmp_path), running=lambda _: False)


def test_teardown_removes_only_the_rules_that_were_not_there_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another cluster's kube-proxy rules on the machine stay; the node's go, in both families."""
    tables = {
        "nat": "*nat\n:KUBE-OTHER - [0:0]\n:KUBE-NODE - [0:0]\n-A PREROUTING -j KUBE-NODE\nCOMMIT",
    }
    saved = {f"{save} nat": [":KUBE-OTHER - [0:0]"] for save, _ in real_node.FILTERS}
    restored: list[tuple[str, str]] = []
    monkeypatch.setattr(
        real_node,
        "_sh",
        lambda argv, *_, **__: __import__("subprocess").CompletedProcess(
            argv, 0, tables.get(argv[-1], ""), ""
        ),
    )
    monkeypatch.setattr(
        real_node.subprocess,
        "run",
        lambda argv, **kwargs: restored.append((argv[0], kwargs["input"])),
    )
    real_node._clean_iptables(saved)
    assert [Path(command).name for command, _ in restored] == [
        "iptables-restore",
        "ip6tables-restore",
    ]
    for _, text in restored:
        assert ":KUBE-OTHER - [0:0]" in text
        assert "KUBE-NODE" not in text
