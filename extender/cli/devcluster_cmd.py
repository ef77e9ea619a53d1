"""`lahar dev-cluster build|up|down|status`: the local control plane from the command line."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from extender import devcluster
from extender.devcluster import images, real_node
from extender.devcluster.child_processes import is_running
from extender.devcluster.nodes import SPINE_LABEL, SWITCH_LABEL
from extender.devcluster.paths import default_state_dir
from extender.kube import connect
from extender.kube.hyper_nodes import serves_hyper_nodes


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "dev-cluster",
        help="run a local control plane (etcd, kube-apiserver, kube-controller-manager, "
        "kube-scheduler, KWOK)",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    build = verbs.add_parser("build", help="build the control-plane binaries (once per version)")
    _kubernetes_flag(build)
    build.add_argument(
        "--real-node",
        action="store_true",
        help="also build a real node's kubelet and kube-proxy (for `up --real-node`, which "
        f"runs Kubernetes {devcluster.DEFAULT_KUBERNETES})",
    )
    build.add_argument(
        "--tools",
        action="store_true",
        help="also build the tools that check what Lahar ships: Helm (the chart) and "
        "Prometheus with promtool (the alert rules and dashboards)",
    )
    build.set_defaults(run=_build)

    image = verbs.add_parser(
        "image",
        help="build Lahar's image from the Dockerfile (buildah, with a base made from Debian "
        "packages; no registry or Docker engine needed) and write it as a docker-archive tar",
    )
    image.set_defaults(run=_image)

    up = verbs.add_parser("up", help="start a dev cluster and wait until it takes pods")
    _state_dir_flag(up)
    up.add_argument("--apiserver-port", type=int, help="kube-apiserver port (default: a free one)")
    up.add_argument(
        "--scheduler-config", type=Path, help="a KubeSchedulerConfiguration file to run with"
    )
    _kubernetes_flag(up)
    up.add_argument("--nodes", type=int, default=2, help="fake nodes to create (default 2)")
    up.add_argument("--node-cpu", default="8", help="allocatable cpu per node (default 8)")
    up.add_argument("--node-memory", default="32Gi", help="allocatable memory per node")
    up.add_argument(
        "--switches",
        type=int,
        default=0,
        help="put the nodes in this many switches, in contiguous blocks (label "
        f"{SWITCH_LABEL}=s0, s1, ...), with their HyperNodes when the cluster serves the kind "
        "(default: none)",
    )
    up.add_argument(
        "--spines",
        type=int,
        default=0,
        help=f"put the switches in this many spines, in contiguous blocks (label {SPINE_LABEL}"
        "=p0, p1, ...; needs --switches)",
    )
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait per component")
    up.add_argument(
        "--lahar",
        action="store_true",
        help="also run Lahar: its extender, a kube-scheduler with policy/'s profiles and the "
        "Job controller",
    )
    up.add_argument(
        "--real-node",
        action="store_true",
        help="also run a real node (kubelet, containerd, runc, CNI bridge, kube-proxy; needs "
        "root) with Lahar's image imported; the pods of lahar-system run on it, so "
        "`kubectl apply --server-side -k manifests/` runs Lahar as it ships",
    )
    up.set_defaults(run=_up)

    down = verbs.add_parser("down", help="stop every process of a dev cluster, remove its state")
    _state_dir_flag(down)
    down.set_defaults(run=_down)

    status = verbs.add_parser("status", help="show a dev cluster's processes and kubeconfig")
    _state_dir_flag(status)
    status.set_defaults(run=_status)


def _kubernetes_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubernetes",
        metavar="VERSION",
        default=devcluster.chosen_kubernetes(),
        help=f"the Kubernetes version to run: {', '.join(sorted(devcluster.KUBERNETES))} "
        f"(default $LAHAR_KUBERNETES, else {devcluster.DEFAULT_KUBERNETES})",
    )


def _state_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help=f"where the cluster keeps its state (default {default_state_dir()})",
    )


def _state_dir(args: argparse.Namespace) -> Path:
    return Path(args.state_dir or default_state_dir()).resolve()


def _build(args: argparse.Namespace) -> int:
    binaries = devcluster.ensure_binaries(kubernetes=args.kubernetes)
    print(
        f"kube-apiserver, kube-scheduler, kube-controller-manager: {binaries.kube_apiserver.parent}"
    )
    if args.real_node:  # (a real node runs the default version, whichever is asked for here)
        node = devcluster.ensure_binaries(kubernetes=devcluster.DEFAULT_KUBERNETES, node=True)
        assert node.kubelet is not None  # (asked for with node=True)
        print(f"kubelet, kube-proxy {node.kubernetes_version}: {node.kubelet.parent}")
    print(f"etcd: {binaries.etcd.parent}")
    print(f"kwok: {binaries.kwok.parent}")
    if args.tools:
        for tool in devcluster.TOOLS:
            print(f"{tool}: {devcluster.ensure_tool(tool)}")
    return 0


def _image(args: argparse.Namespace) -> int:
    del args
    image = images.lahar_image()
    print(
        f"{image.name}: {image.archive} ({image.size / 1e6:.0f} MB, built in {image.seconds:.0f} s)"
    )
    print(f"  load it into a node's containerd: ctr -n k8s.io images import {image.archive}")
    return 0


def _up(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args)
    options = devcluster.ClusterOptions(
        state_dir=state_dir,
        apiserver_port=args.apiserver_port,
        scheduler_config=args.scheduler_config,
        nodes=args.nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        switches=args.switches,
        spines=args.spines,
        ready_timeout=args.timeout,
        with_lahar=args.lahar,
        kubernetes=args.kubernetes,
        real_node=args.real_node,
    )
    cluster = devcluster.up(options)
    print(
        f"dev cluster up: Kubernetes {cluster.state.kubernetes_version} at {cluster.state.server}"
    )
    print(f"  export KUBECONFIG={cluster.kubeconfig}")
    if args.switches:
        print(f"  {_network(args.switches, args.spines, cluster.kubeconfig)}")
    if args.real_node:
        print(
            f"  real node {real_node.NODE_NAME} runs the pods of {real_node.NAMESPACE}, with "
            f"{images.LAHAR_IMAGE} imported: kubectl apply --server-side -k manifests/"
        )
    print(f"  stop it with: lahar dev-cluster down --state-dir {state_dir}")
    return 0


def _network(switches: int, spines: int, kubeconfig: Path) -> str:
    """What the nodes' network is, and whether HyperNodes were made for it."""
    layout = f"{switches} switches" + (f" in {spines} spines" if spines else "")
    with connect(kubeconfig) as api:
        served = serves_hyper_nodes(api)
    if served:
        return f"nodes in {layout}; see the HyperNodes with: lahar hypernodes list"
    return (
        f"nodes in {layout} (labels {SWITCH_LABEL}, {SPINE_LABEL}); no HyperNodes: the cluster "
        "serves no topology.volcano.sh HyperNode"
    )


def _down(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args)
    stopped = devcluster.down(state_dir)
    if stopped:
        print(f"dev cluster down: stopped {', '.join(stopped)}; removed {state_dir}")
    else:
        print(f"no dev cluster was running in {state_dir}")
    return 0


def _status(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args)
    state = devcluster.status(state_dir)
    if state is None:
        print(f"no dev cluster in {state_dir}")
        return 1
    print(f"Kubernetes {state.kubernetes_version} at {state.server}")
    print(f"kubeconfig: {state.kubeconfig}")
    for record in state.processes:
        alive = "running" if is_running(record) else "stopped"
        print(f"  {record.name:<24} pid {record.pid:<8} {alive:<8} log {record.log}")
    return 0 if all(is_running(r) for r in state.processes) else 1
