"""A real local control plane for tests and the demo, built from pinned Go modules.

`build` compiles etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK once per
version into a cache outside the repository (and, asked for, Helm, Prometheus and promtool, which
check what Lahar ships); `cluster` starts them on loopback ports with fake nodes (KWOK plays every
kubelet) and stops them by pid. The CLI (`lahar dev-cluster`), the pytest fixtures and `make demo`
all use this same code.
"""

from extender.devcluster.build import (
    DEFAULT_KUBERNETES,
    KUBERNETES,
    TOOLS,
    Binaries,
    chosen_kubernetes,
    ensure_binaries,
    ensure_tool,
)
from extender.devcluster.cluster import ClusterOptions, DevCluster, down, status, up
from extender.devcluster.errors import DevClusterError
from extender.devcluster.nodes import fake_node
from extender.devcluster.state_file import DevClusterState

__all__ = [
    "DEFAULT_KUBERNETES",
    "KUBERNETES",
    "TOOLS",
    "Binaries",
    "ClusterOptions",
    "DevCluster",
    "DevClusterError",
    "DevClusterState",
    "chosen_kubernetes",
    "down",
    "ensure_binaries",
    "ensure_tool",
    "fake_node",
    "status",
    "up",
]
