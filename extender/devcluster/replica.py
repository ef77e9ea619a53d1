"""A second replica of Lahar's scheduler pod on a dev cluster: kube-scheduler with Lahar's
profiles and its extender beside it, as a Deployment's second pod would be.

The replica is made as a pod is: its kube-scheduler runs in a UTS namespace of its own under a
hostname of its own (the identity it takes in the scheduler's Lease begins with it), and its
extender is told that hostname (in a pod both containers share it) and follows that Lease. Both
read the first replica's files (the scheduler configuration, with the extender's URL moved to the
second extender's port), so the two differ only in ports and hostname. While the first replica's
scheduler holds the Lease the second is a standby; when the first dies, the second takes the
Lease within the lease time and its extender serves.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from extender.devcluster import child_processes, health
from extender.devcluster.cluster import DevCluster
from extender.devcluster.ports import free_ports


@dataclass
class SchedulerReplica:
    hostname: str
    scheduler: child_processes.ProcessRecord
    extender: child_processes.ProcessRecord
    port: int  # the extender's verbs and /readyz, on loopback

    def stop(self, *, kill: bool = False) -> None:
        """Stop the scheduler, then its extender (a graceful stop releases the Lease; `kill`
        stops both at once, as a dying pod would)."""
        for record in (self.scheduler, self.extender):
            if child_processes.is_running(record):
                child_processes.stop(record, timeout=0.0 if kill else 15.0)


def start_replica(
    cluster: DevCluster, hostname: str, *, ready_timeout: float = 60.0
) -> SchedulerReplica:
    """Start a second scheduler pod as host `hostname`; return once its scheduler answers
    /healthz (its extender may still be syncing its cache)."""
    state = cluster.state
    logs = state.state_dir / "logs"
    port, probes, secure = free_ports(3)
    first = {p.name: p for p in state.processes}
    config_file = state.state_dir / "lahar-scheduler-config.yaml"
    config = yaml.safe_load(config_file.read_text())
    config["extenders"][0]["urlPrefix"] = f"http://127.0.0.1:{port}"
    config_path = state.state_dir / f"{hostname}-config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    extender_argv = [
        a.replace(f"--port={state.ports['lahar']}", f"--port={port}")
        .replace(f"--probe-port={state.ports['lahar-probes']}", f"--probe-port={probes}")
        .replace(str(config_file), str(config_path))
        for a in first["lahar"].argv
    ]
    extender, _ = child_processes.start(
        f"{hostname}-extender",
        [*extender_argv, f"--scheduler-identity={hostname}"],
        logs / f"{hostname}-extender.log",
        die_with_parent=True,
    )
    scheduler_argv = [
        "unshare",
        "--uts",
        "sh",
        "-c",
        f'hostname {hostname} && exec "$0" "$@"',
        *(
            f"--config={config_path}"
            if a.startswith("--config=")
            else f"--secure-port={secure}"
            if a.startswith("--secure-port=")
            else a
            for a in first["lahar-scheduler"].argv
        ),
    ]
    try:
        scheduler, _ = child_processes.start(
            hostname, scheduler_argv, logs / f"{hostname}.log", die_with_parent=True
        )
    except BaseException:
        child_processes.stop(extender, timeout=0.0)
        raise
    replica = SchedulerReplica(hostname, scheduler, extender, port)
    try:
        health.wait_healthy(scheduler, f"https://127.0.0.1:{secure}/healthz", timeout=ready_timeout)
    except BaseException:
        replica.stop(kill=True)
        raise
    return replica
