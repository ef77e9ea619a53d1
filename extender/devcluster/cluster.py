"""Starting, inspecting and stopping a local control plane: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and KWOK, all on loopback ports.

`up` checks everything it can before starting anything (state directory, requested ports, scheduler
configuration, the nodes' switches and spines), then starts the components in dependency order
and waits for each one's health endpoint, then creates fake nodes (in switches and spines, with
their HyperNodes, when asked) and waits until they are schedulable and the default service account
exists (pods can be created). If any step fails, everything already started is stopped and the
error names the component and its log file: `up` never leaves half-started processes.
`down` stops every recorded process by pid (checking the pid still runs the same binary) and removes
the state directory (`stop` and `remove` apart: the demo reads the logs in between).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extender.devcluster import (
    child_processes,
    configs,
    health,
    lahar,
    node_host,
    pki,
    ports,
    real_node,
)
from extender.devcluster.build import Binaries, chosen_kubernetes, ensure_binaries
from extender.devcluster.errors import DevClusterError
from extender.devcluster.nodes import network_labels, prepare_workloads
from extender.devcluster.paths import manifests_dir, policy_dir
from extender.devcluster.state_file import STATE_FILE, DevClusterState, load_state
from extender.kube import KubeError

OWN_STAGES = Path(__file__).with_name("kwok-stages.yaml")
SERVICE_CIDR = "10.0.0.0/24"
POD_CIDR = "10.244.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
# The schedulers' /metrics on their loopback ports, readable without credentials (benchmarks count
# their scheduling attempts), like their health endpoints.
METRICS_OPEN = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
# Kubernetes 1.37 has the native gang API in beta and off: Workloads and PodGroups of
# scheduling.k8s.io/v1beta1, pods joining one by `spec.schedulingGroup.podGroupName`. The dev
# cluster turns it on so Lahar can be run beside it: the API server serves the version, and every
# component gets the gate (the API server for the pod field, the PodGroupProtection admission and
# the bootstrap RBAC of it; the controller manager for the controller that removes that admission's
# finalizer; kube-scheduler for its pod-group cycle and GangScheduling plugin). 1.35 has no
# v1beta1 of it and runs without.
NATIVE_GANGS_SINCE = (1, 37)
REAL_NODE_PORTS = ("kubelet", "kubelet-healthz", "kube-proxy-metrics", "kube-proxy-healthz")
NATIVE_GANGS_GATE = "--feature-gates=GenericWorkload=true"
NATIVE_GANGS_API = "--runtime-config=scheduling.k8s.io/v1beta1=true"


@dataclass(frozen=True)
class ClusterOptions:
    state_dir: Path
    apiserver_port: int | None = None
    scheduler_config: Path | None = None
    nodes: int = 2
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    # The nodes in switches and the switches in spines, in contiguous blocks
    # (`nodes.network_labels`; 0: no network labels, no HyperNodes).
    switches: int = 0
    spines: int = 0
    ready_timeout: float = 120.0
    die_with_parent: bool = False
    # Lahar's extender and a second kube-scheduler with Lahar's profiles (see devcluster.lahar).
    with_lahar: bool = False
    extra_apiserver_args: tuple[str, ...] = ()
    lahar_policy_dir: Path | None = None  # default: the checkout's policy/
    # The extender as a process of its own behind mutual TLS (manifests/extender-service/),
    # instead of beside the scheduler on loopback (manifests/, the default).
    extender_service: bool = False
    # The version to run (`build.KUBERNETES`; default `$LAHAR_KUBERNETES`, else 1.37).
    kubernetes: str = field(default_factory=chosen_kubernetes)
    # Also a real node (kubelet, containerd, kube-proxy; needs root) that runs the pods of
    # lahar-system, with Lahar's image and kube-scheduler's imported (see devcluster.real_node).
    real_node: bool = False
    # More CRD files the cluster serves from the start, beside Lahar's and Volcano's (tests
    # install Cluster Autoscaler's ProvisioningRequest so, before Lahar lists the kinds).
    extra_crds: tuple[Path, ...] = ()


@dataclass
class DevCluster:
    """A running dev cluster; `down()` stops it."""

    state: DevClusterState
    _children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def kubeconfig(self) -> Path:
        return self.state.kubeconfig

    def _record(self, name: str) -> child_processes.ProcessRecord:
        for record in self.state.processes:
            if record.name == name:
                return record
        raise DevClusterError(f"the dev cluster runs no component named {name}")

    def stop_component(self, name: str, *, kill: bool = False) -> None:
        """Stop one component (SIGKILL at once with `kill`, as a crash would)."""
        record = self._record(name)
        child_processes.stop(record, timeout=0.0 if kill else 10.0)
        if (child := self._children.get(record.pid)) is not None:
            child.poll()

    def is_running(self, name: str) -> bool:
        """Whether the component is running now."""
        return child_processes.is_running(self._record(name))

    def argv_of(self, name: str) -> list[str]:
        """The command line a component was last started with."""
        return list(self._record(name).argv)

    def start_component(
        self, name: str, *, die_with_parent: bool = False, argv: list[str] | None = None
    ) -> child_processes.ProcessRecord:
        """Start a stopped component again with the same log file and command line, or `argv`
        (which later starts then keep)."""
        old = self._record(name)
        if child_processes.is_running(old):
            raise DevClusterError(f"{name} is still running (pid {old.pid})")
        command = old.argv if argv is None else argv
        record, popen = child_processes.start(
            name, command, old.log, die_with_parent=die_with_parent
        )
        self._children[record.pid] = popen
        self.state.processes[self.state.processes.index(old)] = record
        self.state.save()
        return record

    def down(self) -> list[str]:
        stopped = self.stop()
        self.remove()
        return stopped

    def stop(self) -> list[str]:
        """Stop every component, keeping the state directory (and so the logs); the names of
        those that were running."""
        stopped = stop_processes(self.state)
        for child in self._children.values():
            child.poll()
        if self.state.real_node:
            node_host.teardown(real_node.NodePaths(self.state.state_dir / "node"))
        return stopped

    def remove(self, *, keep_logs: bool = False) -> None:
        """Remove the state directory of a stopped cluster; with `keep_logs`, all of it but the
        logs (without a state file, nothing takes the directory for a cluster: `up` clears it)."""
        state_dir = self.state.state_dir
        if not keep_logs:
            shutil.rmtree(state_dir, ignore_errors=True)
            return
        logs = {record.log.parent for record in self.state.processes}
        for path in state_dir.iterdir() if state_dir.exists() else ():
            if path in logs:
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def native_gangs(kubernetes_version: str) -> bool:
    """Whether the dev cluster serves the native gang API on this version ("v1.37.2")."""
    minor = tuple(int(part) for part in kubernetes_version.removeprefix("v").split(".")[:2])
    return minor >= NATIVE_GANGS_SINCE


def native_gang_args(kubernetes_version: str, *, apiserver: bool = False) -> list[str]:
    """The flags a component of this version gets for the native gang API (none on 1.35)."""
    if not native_gangs(kubernetes_version):
        return []
    return [NATIVE_GANGS_GATE, NATIVE_GANGS_API] if apiserver else [NATIVE_GANGS_GATE]


def stop_processes(state: DevClusterState) -> list[str]:
    """Stop every process of `state`, last started first; return the names that were running."""
    stopped = []
    for record in reversed(state.processes):
        if child_processes.is_running(record):
            child_processes.stop(record)
            stopped.append(record.name)
    return stopped


def _check_state_dir(state_dir: Path) -> None:
    existing = load_state(state_dir)
    if existing is None:
        return
    running = existing.running()
    if running:
        names = ", ".join(f"{r.name} pid {r.pid}" for r in running)
        raise DevClusterError(
            f"a dev cluster is already running from {state_dir} ({names}); use it "
            f"(kubeconfig {existing.kubeconfig}) or stop it with "
            f"`lahar dev-cluster down --state-dir {state_dir}`"
        )
    raise DevClusterError(
        f"{state_dir} holds the state of a dev cluster that is no longer running (stale); "
        f"clean it with `lahar dev-cluster down --state-dir {state_dir}` and run `up` again"
    )


class _Starter:
    """Starts the components one by one, recording each in the state file as it goes."""

    def __init__(self, options: ClusterOptions, binaries: Binaries, state: DevClusterState) -> None:
        self.options = options
        self.binaries = binaries
        self.state = state
        self.children: dict[int, subprocess.Popen[bytes]] = {}
        self.logs = options.state_dir / "logs"

    def start(self, name: str, argv: list[str]) -> child_processes.ProcessRecord:
        record, popen = child_processes.start(
            name, argv, self.logs / f"{name}.log", die_with_parent=self.options.die_with_parent
        )
        self.children[record.pid] = popen
        self.state.processes.append(record)
        self.state.save()
        return record


def up(options: ClusterOptions, binaries: Binaries | None = None) -> DevCluster:
    """Start a dev cluster in `options.state_dir`; on failure raise a one-line DevClusterError.

    Without `binaries`, they are built (or found in the cache) after the checks that need none.
    """
    state_dir = options.state_dir
    _check_state_dir(state_dir)
    if options.apiserver_port is not None:
        ports.require_free(options.apiserver_port, "kube-apiserver", "--apiserver-port")
    try:
        network_labels(options.nodes, options.switches, options.spines)
    except ValueError as error:
        raise DevClusterError(str(error)) from None
    scheduler_config = (
        configs.load_scheduler_config(options.scheduler_config)
        if options.scheduler_config
        else configs.default_scheduler_config()
    )
    node = real_node.NodePaths(state_dir / "node")
    if options.real_node:
        node_host.check_host(node, running=_runs_a_cluster)
    if binaries is None or (options.real_node and binaries.kubelet is None):
        binaries = ensure_binaries(
            quiet=True, kubernetes=options.kubernetes, node=options.real_node
        )
    if node.root.exists():  # a real node a failed start left
        node_host.teardown(node)
    shutil.rmtree(state_dir, ignore_errors=True)  # leftovers of a failed start, no state file
    (state_dir / "logs").mkdir(parents=True)
    names = ("etcd", "kcm", "scheduler", "kwok", "apiserver", *lahar.PORTS, *REAL_NODE_PORTS)
    port = dict(zip(names, ports.free_ports(len(names)), strict=True))
    if options.apiserver_port is not None:
        port["apiserver"] = options.apiserver_port
    host = real_node.GATEWAY if options.real_node else "127.0.0.1"
    server = f"https://{host}:{port['apiserver']}"
    state = DevClusterState(
        state_dir=state_dir,
        kubeconfig=state_dir / "kubeconfig",
        server=server,
        kubernetes_version=binaries.kubernetes_version,
        ports=port,
        real_node=options.real_node,
    )
    state.save()
    starter = _Starter(options, binaries, state)
    try:
        _start_all(starter, scheduler_config)
    except BaseException:
        stop_processes(state)
        if options.real_node:
            node_host.teardown(real_node.NodePaths(state_dir / "node"))
        (state_dir / STATE_FILE).unlink(missing_ok=True)  # keep the logs the error points to
        raise
    return DevCluster(state, starter.children)


def _start_all(starter: _Starter, scheduler_config: dict[str, Any]) -> None:
    options, binaries, state = starter.options, starter.binaries, starter.state
    state_dir, port, timeout = options.state_dir, state.ports, options.ready_timeout
    if options.real_node:  # (the bridge first: the API server listens on it)
        node_host.prepare_host(real_node.NodePaths(state_dir / "node"))
    keys = pki.write_pki(
        state_dir / "pki", apiserver_ips=(real_node.GATEWAY,) if options.real_node else ()
    )
    kubeconfigs = {
        user: configs.write_yaml(
            state_dir / f"{stem}.kubeconfig" if stem else state.kubeconfig,
            [configs.kubeconfig(state.server, keys.ca_cert, user, keys.tokens[user])],
            private=True,
        )
        for user, stem in (
            ("admin", ""),
            ("system:kube-scheduler", "scheduler"),
            ("system:kube-controller-manager", "controller-manager"),
            *(
                (("system:node:lahar-node", "kubelet"), ("system:kube-proxy", "kube-proxy"))
                if options.real_node
                else ()
            ),
        )
    }

    etcd_url = f"http://127.0.0.1:{port['etcd']}"
    etcd = starter.start(
        "etcd",
        [
            str(binaries.etcd),
            f"--data-dir={state_dir / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            "--listen-peer-urls=http://127.0.0.1:0",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )
    health.wait_healthy(etcd, f"{etcd_url}/health", timeout=timeout)

    apiserver = starter.start(
        "kube-apiserver",
        [
            str(binaries.kube_apiserver),
            f"--etcd-servers={etcd_url}",
            f"--secure-port={port['apiserver']}",
            f"--tls-cert-file={keys.serving_cert}",
            f"--tls-private-key-file={keys.serving_key}",
            f"--client-ca-file={keys.ca_cert}",
            f"--token-auth-file={keys.token_file}",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={keys.service_account_key}",
            f"--service-account-signing-key-file={keys.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            *(
                real_node.apiserver_args(keys.kubelet_client_cert, keys.kubelet_client_key)
                if options.real_node
                else [
                    "--advertise-address=127.0.0.1",
                    "--bind-address=127.0.0.1",
                    "--authorization-mode=RBAC",
                    # No kubelet or kube-proxy runs, so nothing reads the `kubernetes` Service
                    # endpoints; reconciling them on loopback only logs an error every 10 s.
                    "--endpoint-reconciler-type=none",
                ]
            ),
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight=0",
            "--max-mutating-requests-inflight=0",
            *native_gang_args(binaries.kubernetes_version, apiserver=True),
            *options.extra_apiserver_args,
        ],
    )
    health.wait_healthy(
        apiserver,
        f"{state.server}/readyz",
        timeout=timeout,
        ca=keys.ca_cert,
        token=keys.tokens["admin"],
    )

    config_path = configs.write_yaml(
        state_dir / "scheduler-config.yaml",
        [
            configs.scheduler_config_for_cluster(
                scheduler_config, kubeconfigs["system:kube-scheduler"]
            )
        ],
    )
    kwok_config = configs.write_yaml(
        state_dir / "kwok.yaml", configs.kwok_config(binaries.kwok_stages, OWN_STAGES)
    )
    controller_manager = starter.start(
        "kube-controller-manager",
        [
            str(binaries.kube_controller_manager),
            f"--kubeconfig={kubeconfigs['system:kube-controller-manager']}",
            f"--service-account-private-key-file={keys.service_account_key}",
            f"--root-ca-file={keys.ca_cert}",
            f"--cluster-signing-cert-file={keys.ca_cert}",
            f"--cluster-signing-key-file={keys.ca_key}",
            # Each controller acts as its own ServiceAccount, as in a real cluster; bootstrap RBAC
            # grants the controller-manager user itself almost nothing.
            "--use-service-account-credentials=true",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port['kcm']}",
            # KWOK's heartbeat comes every 20-45 s; leave slack so a busy machine does not
            # flap nodes to NotReady.
            "--node-monitor-grace-period=2m",
            *native_gang_args(binaries.kubernetes_version),
        ],
    )
    scheduler = starter.start(
        "kube-scheduler",
        [
            str(binaries.kube_scheduler),
            f"--config={config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port['scheduler']}",
            METRICS_OPEN,
            *native_gang_args(binaries.kubernetes_version),
        ],
    )
    kwok = starter.start(
        "kwok",
        [
            str(binaries.kwok),
            f"--kubeconfig={state.kubeconfig}",
            f"--config={kwok_config}",
            # The fake nodes only (`nodes.fake_node` marks them): a real node is its kubelet's.
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--cidr={POD_CIDR}",
            f"--server-address=127.0.0.1:{port['kwok']}",
        ],
    )
    health.wait_healthy(
        controller_manager, f"https://127.0.0.1:{port['kcm']}/healthz", timeout=timeout
    )
    health.wait_healthy(
        scheduler, f"https://127.0.0.1:{port['scheduler']}/healthz", timeout=timeout
    )
    health.wait_healthy(kwok, f"http://127.0.0.1:{port['kwok']}/healthz", timeout=timeout)
    lahar.install_crds(
        starter.state.kubeconfig,
        manifests_dir(),
        starter.options.ready_timeout,
        extra=options.extra_crds,
    )
    if options.real_node:
        real_node.start(
            starter.start,
            starter.binaries,
            real_node.NodePaths(options.state_dir / "node"),
            ports=starter.state.ports,
            kubeconfigs=kubeconfigs,
            client_ca=keys.kubelet_client_ca,
            admin=starter.state.kubeconfig,
            timeout=options.ready_timeout,
            logs=starter.logs,
        )
    if options.with_lahar:
        _start_lahar(starter, kubeconfigs, keys)
    _prepare_workloads(starter)


def _start_lahar(starter: _Starter, kubeconfigs: dict[str, Path], keys: pki.Pki) -> None:
    options, state, binaries = starter.options, starter.state, starter.binaries
    policies = options.lahar_policy_dir or policy_dir()
    port = state.ports
    lahar.install_rbac(state.kubeconfig, manifests_dir())
    accounts = lahar.component_kubeconfigs(
        state.kubeconfig, options.state_dir, state.server, keys.ca_cert
    )
    # The webhook first: the extender creates the default Queue and the controller PodGroups,
    # which the webhook admits.
    lahar.install_webhooks(state.kubeconfig, manifests_dir(), port["lahar-webhook"])
    webhook = starter.start(
        "lahar-webhook",
        lahar.webhook_argv(accounts[lahar.WEBHOOK], port["lahar-webhook"]),
    )
    lahar.wait_ready(webhook, port["lahar-webhook"], options.ready_timeout, tls=True)
    keys_for_service = keys if options.extender_service else None
    config = lahar.scheduler_config(
        policies / "kube-scheduler-config.yaml",
        accounts[lahar.SCHEDULER],
        port["lahar"],
        keys_for_service,
    )
    config_path = configs.write_yaml(options.state_dir / "lahar-scheduler-config.yaml", [config])
    # Beside the scheduler the extender runs as the scheduler's pod does: its ServiceAccount.
    account = lahar.EXTENDER if options.extender_service else lahar.SCHEDULER
    extender = starter.start(
        "lahar",
        lahar.extender_argv(
            accounts[account],
            policies / "lahar.yaml",
            port["lahar"],
            probes=port["lahar-probes"],
            scheduler_config=config_path,
            keys=keys_for_service,
        ),
    )
    controller = starter.start(
        "lahar-controller",
        lahar.controller_argv(accounts[lahar.CONTROLLER], port["lahar-controller"]),
    )
    lahar.wait_ready(extender, port["lahar"], options.ready_timeout, tls=options.extender_service)
    lahar.wait_ready(controller, port["lahar-controller"], options.ready_timeout)
    scheduler = starter.start(
        "lahar-scheduler",
        [
            str(binaries.kube_scheduler),
            f"--config={config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port['lahar-scheduler']}",
            METRICS_OPEN,
            *native_gang_args(binaries.kubernetes_version),
        ],
    )
    health.wait_healthy(
        scheduler,
        f"https://127.0.0.1:{port['lahar-scheduler']}/healthz",
        timeout=options.ready_timeout,
    )


def _runs_a_cluster(state_dir: Path) -> bool:
    try:
        state = load_state(state_dir)
    except DevClusterError:
        return False
    return state is not None and bool(state.running())


def _prepare_workloads(starter: _Starter) -> None:
    """Create the fake nodes; wait until they take pods and the default ServiceAccount exists."""
    options = starter.options
    try:
        prepare_workloads(
            starter.state.kubeconfig,
            options.nodes,
            cpu=options.node_cpu,
            memory=options.node_memory,
            timeout=options.ready_timeout,
            switches=options.switches,
            spines=options.spines,
        )
    except (KubeError, TimeoutError) as exc:
        raise DevClusterError(
            f"the cluster did not get ready: {exc} (logs: {starter.logs})"
        ) from exc


def down(state_dir: Path) -> list[str]:
    """Stop the cluster recorded in `state_dir`, remove the directory; return what was stopped."""
    state = load_state(state_dir)
    if state is None:
        if (state_dir / "node").exists():  # a real node whose start failed: its mounts first
            node_host.teardown(real_node.NodePaths(state_dir / "node"))
        if state_dir.exists():
            shutil.rmtree(state_dir)  # only logs of a start that failed are left
        return []
    return DevCluster(state).down()


def status(state_dir: Path) -> DevClusterState | None:
    return load_state(state_dir)
