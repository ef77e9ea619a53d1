"""What a real node needs of the machine and changes on it, and undoing that (`real_node` is the
node itself: its components' configuration and commands).

- **Checked before anything starts** (`check_host`): root, cgroup v1, the tools (Debian's packages,
  installed with apt-get when missing), and that no other running dev cluster owns the machine's
  one real node (the bridge, the cgroup root and the node's name are fixed; `OWNER` names the
  state directory whose node it is).
- **Prepared** (`prepare_host`): a node an interrupted run left is torn down first; what teardown
  puts back is saved (kernel settings, the network namespaces and packet-filter rules there
  before); the bridge the API server listens on, and the kubelet's cgroup root in every cgroup v1
  hierarchy, are made.
- **Torn down** (`teardown`): processes in the node's cgroups and the runtime's shims are killed
  until none is left, mounts under the state directory and the pods' network namespaces are
  unmounted, the packet-filter rules kube-proxy, the kubelet and the bridge plugin added (both
  families; not those there before) are removed, the bridge is deleted and the kernel settings
  are put back. `down` does it from a state file too, and a state directory that never prepared
  the host touches nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender.devcluster.errors import DevClusterError
from extender.devcluster.images import host_tools, tool
from extender.devcluster.real_node import BRIDGE, CGROUP_ROOT, CNI_BIN, GATEWAY, NodePaths, sh

# The machine has one real node (the bridge, the cgroup root and the node's name are fixed): this
# file names the state directory whose node it is, so a node an interrupted run left is cleared.
OWNER = Path("/run/lahar-real-node")


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
    if sh(["ip", "link", "show", BRIDGE], "", check=False).returncode != 0:
        sh(["ip", "link", "add", BRIDGE, "type", "bridge"], f"creating the bridge {BRIDGE}")
    sh(["ip", "addr", "replace", f"{GATEWAY}/24", "dev", BRIDGE], f"addressing {BRIDGE}")
    sh(["ip", "link", "set", BRIDGE, "up"], f"bringing {BRIDGE} up")
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
        sh(["umount", "-l", mount], f"unmounting {mount}", check=False)
    before = set(saved.get("netns", []))
    for name in _netns() - before:
        if name.startswith("cni-"):
            sh(["umount", "-l", f"/run/netns/{name}"], "", check=False)
            with contextlib.suppress(OSError):
                Path("/run/netns", name).unlink()
    _clean_iptables(saved.get("rules") or {})
    sh(["ip", "link", "delete", BRIDGE], "", check=False)
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
            text = sh([save, "-t", table], "", check=False).stdout
            found[f"{save} {table}"] = [line for line in text.splitlines() if _ours(line)]
    return found


def _clean_iptables(before: dict[str, list[str]]) -> None:
    """Drop the KUBE- and CNI- chains and rules the node's kube-proxy, kubelet and bridge plugin
    made, in both families: those that were not there `before` it started."""
    for save, restore in FILTERS:
        for table in TABLES:
            text = sh([save, "-t", table], "", check=False).stdout
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
