"""A real node in the dev cluster: a kubelet with containerd and runc, CNI's bridge and kube-proxy,
beside the KWOK nodes, so Lahar's own Deployments run in real pods as a user's cluster runs them.

- **Which pods run here.** The node is registered with the taint `lahar.dev/real-node` and the
  label of the same name. Workloads never tolerate it and keep landing on KWOK nodes. The namespace
  `lahar-system` is made before Lahar is installed, with the annotations of the API server's
  PodNodeSelector and PodTolerationRestriction admission plugins: its pods select the real node
  and tolerate its taint, the way an operator dedicates nodes to a namespace. The manifests are
  applied unchanged.
- **Runtime.** Debian's containerd and runc, configured in the cluster's state directory: its
  root, state, socket and runc's state are all under it. Two settings matter here:
  `restrict_oom_score_adj` (root on these machines may not lower a process's OOM score, so
  every sandbox failed without it) and a pause image built on this machine
  (`images.pause_image`), since no registry is reachable. Images are imported from
  docker-archive tars; pods use them without pulling.
- **Network.** CNI's bridge plugin on the bridge `lahar0` (10.88.0.0/24, the host at 10.88.0.1)
  with host-local addresses; kube-proxy in iptables mode gives Services their ClusterIPs. The API
  server listens on 10.88.0.1 only (every client of the cluster uses that address; nothing is
  exposed on the machine's own interfaces) and advertises it, so pods reach it through the
  `kubernetes` Service with their ServiceAccount tokens, as in any cluster.
- **The kubelet** is built from the control plane's own Kubernetes pin. It runs on cgroup v1 with
  the cgroupfs driver under its own cgroup root (`/lahar-node`), and authenticates the API server
  (logs, exec) by a client certificate of a CA of its own, which signs nothing else.
- **On the machine**, what the node needs and changes (the bridge, its cgroup root, packet-filter
  rules, kernel settings) is checked, prepared and undone by `node_host`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.devcluster import health, images
from extender.devcluster.build import Binaries
from extender.devcluster.child_processes import ProcessRecord, is_running
from extender.devcluster.errors import DevClusterError
from extender.devcluster.images import Image
from extender.devcluster.nodes import is_schedulable
from extender.kube import KubeError, apply_object, connect, read, wait_until

NODE_NAME = "lahar-node"
NODE_LABEL = "lahar.dev/real-node"
NAMESPACE = "lahar-system"
BRIDGE = "lahar0"
SUBNET = "10.88.0.0/24"
GATEWAY = "10.88.0.1"  # the host on the bridge; the API server advertises it
CGROUP_ROOT = "lahar-node"
CNI_BIN = Path("/usr/lib/cni")


@dataclass(frozen=True)
class NodePaths:
    """Where a real node keeps its state, under the cluster's state directory."""

    root: Path

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd-state"

    @property
    def socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.root / "runc"

    @property
    def cni_conf(self) -> Path:
        return self.root / "cni"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def proxy_config(self) -> Path:
        return self.root / "kube-proxy.yaml"

    @property
    def saved(self) -> Path:
        """What teardown must put back (kernel settings, network namespaces there before)."""
        return self.root / "saved.json"


def namespace_for_node() -> dict[str, Any]:
    """`lahar-system`, annotated so its pods run on the real node (and only there)."""
    toleration = {"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": NAMESPACE,
            "annotations": {
                "scheduler.alpha.kubernetes.io/node-selector": f"{NODE_LABEL}=true",
                "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps([toleration]),
            },
        },
    }


def apiserver_args(kubelet_client_cert: Path, kubelet_client_key: Path) -> list[str]:
    """What the API server needs for a real node: listen where pods reach it (the bridge's
    host address only: every client of the dev cluster uses it), advertise that address in the
    `kubernetes` Service, authorize kubelets as nodes, admit the namespace's node
    selector and tolerations, and reach kubelets by address with a client certificate."""
    return [
        f"--bind-address={GATEWAY}",
        f"--advertise-address={GATEWAY}",
        "--endpoint-reconciler-type=lease",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction,PodNodeSelector,PodTolerationRestriction",
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={kubelet_client_cert}",
        f"--kubelet-client-key={kubelet_client_key}",
    ]


def sh(argv: list[str], what: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`images.run` for the node's set-up: its errors begin "real node:"."""
    return images.run(argv, f"real node: {what}", check=check)


def write_configs(
    paths: NodePaths,
    *,
    pause_image: str,
    kubelet_kubeconfig: Path,
    proxy_kubeconfig: Path,
    client_ca: Path,
    kubelet_port: int,
    kubelet_healthz_port: int,
    proxy_ports: tuple[int, int],
) -> None:
    """containerd's, CNI's, the kubelet's and kube-proxy's configuration files."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    paths.containerd_config.write_text(
        "\n".join(
            [
                "version = 2",
                f'root = "{paths.containerd_root}"',
                f'state = "{paths.containerd_state}"',
                "[grpc]",
                f'  address = "{paths.socket}"',
                f"[{cri}]",
                f'  sandbox_image = "{pause_image}"',
                "  restrict_oom_score_adj = true",
                f"[{cri}.containerd]",
                '  snapshotter = "overlayfs"',
                '  default_runtime_name = "runc"',
                f"[{cri}.containerd.runtimes.runc]",
                '  runtime_type = "io.containerd.runc.v2"',
                f"[{cri}.containerd.runtimes.runc.options]",
                "  SystemdCgroup = false",
                f'  Root = "{paths.runc_root}"',
                f"[{cri}.cni]",
                f'  bin_dir = "{CNI_BIN}"',
                f'  conf_dir = "{paths.cni_conf}"',
                "",
            ]
        )
    )
    paths.cni_conf.mkdir(parents=True, exist_ok=True)
    network = {
        "cniVersion": "1.0.0",
        "name": "lahar",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": SUBNET, "gateway": GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    (paths.cni_conf / "10-lahar.conflist").write_text(json.dumps(network, indent=2))
    kubelet = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        "failSwapOn": False,
        "address": GATEWAY,
        "port": kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": kubelet_healthz_port,
        "containerRuntimeEndpoint": f"unix://{paths.socket}",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        # Images exist only here (imported, never pulled): never collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%"},
        "registerWithTaints": [{"key": NODE_LABEL, "value": "true", "effect": "NoSchedule"}],
        "maxPods": 30,
        "serializeImagePulls": False,
        "resolvConf": "/etc/resolv.conf",
    }
    paths.kubelet_config.write_text(json.dumps(kubelet, indent=2))
    metrics_port, healthz_port = proxy_ports
    proxy = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(proxy_kubeconfig)},
        "mode": "iptables",
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": SUBNET,
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        # The machine's conntrack table is left as it is.
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    paths.proxy_config.write_text(json.dumps(proxy, indent=2))
    del kubelet_kubeconfig  # named on the kubelet's command line


def containerd_argv(paths: NodePaths) -> list[str]:
    return [shutil.which("containerd") or "containerd", f"--config={paths.containerd_config}"]


def kubelet_argv(binary: Path, paths: NodePaths, kubeconfig: Path) -> list[str]:
    return [
        str(binary),
        f"--config={paths.kubelet_config}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={paths.kubelet_root}",
        f"--cert-dir={paths.root / 'kubelet-pki'}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={GATEWAY}",
        f"--node-labels={NODE_LABEL}=true",
        "--v=1",
    ]


def proxy_argv(binary: Path, paths: NodePaths) -> list[str]:
    return [str(binary), f"--config={paths.proxy_config}", "--v=1"]


def wait_runtime(paths: NodePaths, timeout: float, alive: Callable[[], bool], log: Path) -> None:
    """Until containerd answers on its socket; fail at once when it exits (`alive`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _ctr(paths, ["version"], check=False).returncode == 0:
            return
        if not alive():
            raise DevClusterError(f"real node: containerd exited during start (log: {log})")
        time.sleep(0.2)
    raise DevClusterError(f"real node: containerd did not answer on {paths.socket} (log: {log})")


def _ctr(
    paths: NodePaths, args: list[str], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return sh(["ctr", f"--address={paths.socket}", "--namespace=k8s.io", *args], "ctr", check=check)


def import_images(paths: NodePaths, images: list[Image]) -> None:
    """Load images into the node's containerd (no registry: kubelets never pull them)."""
    for image in images:
        sh(
            [
                "ctr",
                f"--address={paths.socket}",
                "--namespace=k8s.io",
                "images",
                "import",
                "--no-unpack=false",
                str(image.archive),
            ],
            f"importing {image.name}",
        )


def wait_node_ready(kubeconfig: Path, timeout: float) -> None:
    """Until the node is Ready and untainted by its lifecycle; then make lahar-system's pods run
    on it (`namespace_for_node`)."""
    with connect(kubeconfig) as api:
        wait_until(
            lambda: is_schedulable(read(api, "v1", "Node", NODE_NAME) or {}),
            timeout=timeout,
            what=f"node {NODE_NAME} to be Ready",
        )
        apply_object(api, namespace_for_node())


def start(
    start_process: Callable[[str, list[str]], ProcessRecord],
    binaries: Binaries,
    paths: NodePaths,
    *,
    ports: dict[str, int],
    kubeconfigs: dict[str, Path],
    client_ca: Path,
    admin: Path,
    timeout: float,
    logs: Path,
) -> None:
    """containerd, the kubelet and kube-proxy (started by `start_process`, which records them in
    the cluster's state), with Lahar's images; wait until the node is Ready and make
    lahar-system's pods run on it. The host was prepared first (`node_host.prepare_host`)."""
    assert binaries.kubelet is not None
    assert binaries.kube_proxy is not None
    version = binaries.kubernetes_version
    built = [
        images.pause_image(images.kubernetes_module_source(version)),
        images.lahar_image(),
        images.kube_scheduler_image(binaries.kube_scheduler, version),
    ]
    kubelet_kubeconfig = kubeconfigs[f"system:node:{NODE_NAME}"]
    write_configs(
        paths,
        pause_image=images.PAUSE_IMAGE,
        kubelet_kubeconfig=kubelet_kubeconfig,
        proxy_kubeconfig=kubeconfigs["system:kube-proxy"],
        client_ca=client_ca,
        kubelet_port=ports["kubelet"],
        kubelet_healthz_port=ports["kubelet-healthz"],
        proxy_ports=(ports["kube-proxy-metrics"], ports["kube-proxy-healthz"]),
    )
    containerd = start_process("containerd", containerd_argv(paths))
    wait_runtime(paths, timeout, lambda: is_running(containerd), logs / "containerd.log")
    import_images(paths, built)
    kubelet = start_process("kubelet", kubelet_argv(binaries.kubelet, paths, kubelet_kubeconfig))
    proxy = start_process("kube-proxy", proxy_argv(binaries.kube_proxy, paths))
    for record, port in ((kubelet, "kubelet-healthz"), (proxy, "kube-proxy-healthz")):
        health.wait_healthy(record, f"http://127.0.0.1:{ports[port]}/healthz", timeout=timeout)
    try:
        wait_node_ready(admin, timeout)
    except (KubeError, TimeoutError) as exc:
        raise DevClusterError(
            f"the real node did not get Ready: {exc} (logs: {logs / 'kubelet.log'})"
        ) from exc
