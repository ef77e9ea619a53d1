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
- **Teardown** undoes what starting did: processes in the node's cgroups and the runtime's shims
  are killed, mounts under the state directory and the pods' network namespaces are unmounted,
  the packet-filter rules kube-proxy, the kubelet and the bridge plugin added (both families; not
  those there before) are removed, the bridge is deleted and the kernel settings the kubelet
  changed are put back. `down` does it from a state file too, so a cluster left by an interrupted
  run is cleaned by the next `down`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.devcluster.errors import DevClusterError
from extender.devcluster.images import Image, host_tools, tool
from extender.devcluster.nodes import is_schedulable
from extender.kube import apply_object, connect, read, wait_until

NODE_NAME = "lahar-node"
NODE_LABEL = "lahar.dev/real-node"
NAMESPACE = "lahar-system"
BRIDGE = "lahar0"
SUBNET = "10.88.0.0/24"
GATEWAY = "10.88.0.1"  # the host on the bridge; the API server advertises it
CGROUP_ROOT = "lahar-node"
# The machine has one real node (the bridge, the cgroup root and the node's name are fixed): this
# file names the state directory whose node it is, so a node an interrupted run left is cleared.
OWNER = Path("/run/lahar-real-node")
CNI_BIN = Path("/usr/lib/cni")
# The kernel settings the kubelet and kube-proxy change (and forwarding, turned on for the
# bridge), put back on teardown.
SYSCTLS = (
    "kernel/panic",
    "kernel/panic_on_oops",
    "vm/overcommit_memory",
    "net/ipv4/conf/all/route_localnet",
    "net/ipv4/ip_forward",
)
RUNTIME_TOOLS = {
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "ip": "iproute2",
    str(CNI_BIN / "bridge"): "containernetworking-plugins",
}


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


def _sh(argv: list[str], what: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        if check:
            raise DevClusterError(f"real node: {what} failed: {argv[0]} is not installed") from None
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]} is not installed")
    if check and result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["(no output)"]
        raise DevClusterError(f"real node: {what} failed: {lines[-1]}")
    return result


def _netns() -> set[str]:
    folder = Path("/run/netns")
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def check_host(paths: NodePaths, *, running: Callable[[Path], bool]) -> None:
    """Everything a real node needs of this machine, checked before anything starts: root,
    cgroup v1, the tools (installed from Debian when missing, as root), and no other dev
    cluster `running` that owns the machine's one real node."""
    if os.geteuid() != 0:
        raise DevClusterError("a real node needs root (a kubelet, containerd and a bridge)")
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        raise DevClusterError(
            "a real node runs on cgroup v1 here (the kubelet's cgroupfs driver under its own "
            "root); this machine mounts cgroup v2 only"
        )
    host_tools(RUNTIME_TOOLS, "a real node")
    with contextlib.suppress(OSError):
        owner = Path(OWNER.read_text().strip())
        if owner != paths.root and running(owner.parent):
            raise DevClusterError(
                f"the real node already runs for the dev cluster in {owner.parent} (one per "
                f"machine); stop it with `lahar dev-cluster down --state-dir {owner.parent}`"
            )


def prepare_host(paths: NodePaths) -> None:
    """Clear a node an interrupted run left, save what teardown puts back (kernel settings,
    network namespaces and packet-filter rules there before), and make the bridge the API server
    listens and advertises on (the bridge plugin adopts it) and the kubelet's cgroup root."""
    with contextlib.suppress(OSError):
        teardown(NodePaths(Path(OWNER.read_text().strip())))
    paths.root.mkdir(parents=True, exist_ok=True)
    OWNER.write_text(f"{paths.root}\n")
    saved = {
        "sysctls": {name: _read_sysctl(name) for name in SYSCTLS},
        "netns": sorted(_netns()),
        "rules": _node_rules(),
    }
    paths.saved.write_text(json.dumps(saved))
    if _sh(["ip", "link", "show", BRIDGE], "", check=False).returncode != 0:
        _sh(["ip", "link", "add", BRIDGE, "type", "bridge"], f"creating the bridge {BRIDGE}")
    _sh(["ip", "addr", "replace", f"{GATEWAY}/24", "dev", BRIDGE], f"addressing {BRIDGE}")
    _sh(["ip", "link", "set", BRIDGE, "up"], f"bringing {BRIDGE} up")
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
    _make_cgroups()


def _make_cgroups() -> None:
    """The kubelet's cgroup root in every hierarchy (cgroup v1); a cpuset one starts with the
    cpus and memory nodes of its parent, as a new cpuset has none."""
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        if not (hierarchy / "cgroup.procs").exists():
            continue
        folder = hierarchy / CGROUP_ROOT
        folder.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (hierarchy / name).exists():
                (folder / name).write_text((hierarchy / name).read_text())


def _read_sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", name).read_text().strip()
    except OSError:
        return None


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
    return _sh(
        ["ctr", f"--address={paths.socket}", "--namespace=k8s.io", *args], "ctr", check=check
    )


def import_images(paths: NodePaths, images: list[Image]) -> None:
    """Load images into the node's containerd (no registry: kubelets never pull them)."""
    for image in images:
        _sh(
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


def teardown(paths: NodePaths) -> None:
    """Undo the node: kill what runs in its cgroups and the runtime's shims, unmount, clean the
    network and the kernel settings. Safe to call again and on a node that never fully started;
    a state directory that never prepared the host (no saved settings) touches nothing, since
    the bridge, the cgroup root and the node are the machine's one real node."""
    try:
        saved: dict[str, Any] = json.loads(paths.saved.read_text())
    except (OSError, ValueError):
        return  # this state directory never prepared the host: the node is not its own
    deadline = time.monotonic() + 30
    while (pids := _node_pids(paths)) and time.monotonic() < deadline:  # (they can fork)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    _remove_cgroups()
    for mount in sorted(_mounts_under(paths.root), key=len, reverse=True):
        _sh(["umount", "-l", mount], f"unmounting {mount}", check=False)
    before = set(saved.get("netns", []))
    for name in _netns() - before:
        if name.startswith("cni-"):
            _sh(["umount", "-l", f"/run/netns/{name}"], "", check=False)
            with contextlib.suppress(OSError):
                Path("/run/netns", name).unlink()
    _clean_iptables(saved.get("rules") or {})
    _sh(["ip", "link", "delete", BRIDGE], "", check=False)
    for name, value in (saved.get("sysctls") or {}).items():
        if value is not None:
            with contextlib.suppress(OSError):
                Path("/proc/sys", name).write_text(f"{value}\n")
    paths.saved.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        if OWNER.read_text().strip() == str(paths.root):
            OWNER.unlink()


def _node_pids(paths: NodePaths) -> set[int]:
    """Every process in the node's cgroups, and containerd's shims for this node's socket."""
    pids: set[int] = set()
    for procs in Path("/sys/fs/cgroup").glob(f"*/{CGROUP_ROOT}/**/cgroup.procs"):
        with contextlib.suppress(OSError):
            pids.update(int(line) for line in procs.read_text().split())
    marker = str(paths.socket).encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if marker in (proc / "cmdline").read_bytes():
                pids.add(int(proc.name))
    pids.discard(os.getpid())
    return pids


def _remove_cgroups() -> None:
    for root in Path("/sys/fs/cgroup").glob(f"*/{CGROUP_ROOT}"):
        for folder in sorted(
            (p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        ):
            with contextlib.suppress(OSError):
                folder.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root.resolve()) + "/"
    mounts = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point.startswith(prefix):
            mounts.append(point)
    return mounts


# The packet filters of both families: kube-proxy and the kubelet write IPv6 rules too where the
# machine has IPv6.
FILTERS = (("iptables-save", "iptables-restore"), ("ip6tables-save", "ip6tables-restore"))
TABLES = ("nat", "filter", "mangle")


def _ours(line: str) -> bool:
    """A rule or chain of kube-proxy's, the kubelet's or the bridge plugin's."""
    return "KUBE-" in line or "CNI-" in line


def _node_rules() -> dict[str, list[str]]:
    """The kube-proxy, kubelet and CNI lines each family's tables hold now (another cluster's
    on this machine, if any), which teardown leaves alone."""
    found: dict[str, list[str]] = {}
    for save, _ in FILTERS:
        for table in TABLES:
            text = _sh([save, "-t", table], "", check=False).stdout
            found[f"{save} {table}"] = [line for line in text.splitlines() if _ours(line)]
    return found


def _clean_iptables(before: dict[str, list[str]]) -> None:
    """Drop the KUBE- and CNI- chains and rules the node's kube-proxy, kubelet and bridge plugin
    made, in both families: those that were not there `before` it started."""
    for save, restore in FILTERS:
        for table in TABLES:
            text = _sh([save, "-t", table], "", check=False).stdout
            kept_before = set(before.get(f"{save} {table}", []))
            if not any(_ours(line) and line not in kept_before for line in text.splitlines()):
                continue
            kept = [line for line in text.splitlines() if not _ours(line) or line in kept_before]
            subprocess.run(
                [tool(restore)],
                input="\n".join(kept) + "\n",
                text=True,
                capture_output=True,
                check=False,
            )
