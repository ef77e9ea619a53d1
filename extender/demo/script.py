"""The demo script: every step prints what happened to which object, with the time it took, and
a live table of the Jobs (phase, pods bound of the gang's minimum, placements, why one waits).

It starts a dev cluster with all of Lahar (the admission webhook, the Job controller, the extender
and a stock kube-scheduler calling it, each with the flags and RBAC of its Deployment in
`manifests/`), tells the stories of `demo.stories` (Volcano's TensorFlow example; two Jobs that
contend for the cluster), stops the cluster, and ends with a summary: each Job's phase, time to
start, and whether any was ever a partial gang; per component, the errors and tracebacks its log
holds (`demo.log_errors`). The exit code is 1 when the story did not hold or a component of Lahar
logged an error or a traceback (its logs are then kept).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s

from extender import devcluster
from extender.demo.job_watch import PARTIAL_GRACE, JobWatch
from extender.demo.live_table import LiveTable, justify
from extender.demo.log_errors import count_log, summary
from extender.demo.step import NAMESPACE, Step
from extender.demo.stories import show_contention, show_tensorflow
from extender.devcluster.child_processes import ProcessRecord
from extender.kube import apply_object, connect, read, wait_until

NODE_CPU = "8"


@dataclass(frozen=True)
class DemoOptions:
    state_dir: Path
    keep: bool = False


def run_demo(options: DemoOptions, say: Step = print, table: LiveTable | None = None) -> int:
    started = time.monotonic()

    def step(message: str) -> None:
        say(f"[{time.monotonic() - started:6.1f}s] {message}")

    step("building the control plane from Go modules if it is not cached yet")
    binaries = devcluster.ensure_binaries()
    step(
        f"starting a dev cluster (Kubernetes {binaries.kubernetes_version}, 2 fake nodes of "
        f"{NODE_CPU} cpu) with Lahar: webhook, Job controller, extender, and a stock "
        "kube-scheduler calling the extender over mutual TLS"
    )
    cluster_options = devcluster.ClusterOptions(
        state_dir=options.state_dir, node_cpu=NODE_CPU, with_lahar=True
    )
    cluster = devcluster.up(cluster_options, binaries)
    code, logs_clean = 1, True
    try:
        step(f"cluster ready at {cluster.state.server}")
        with connect(cluster.kubeconfig) as api:
            _namespace(api)
            watch = JobWatch(api, NAMESPACE, table or LiveTable())
            show_tensorflow(api, watch, step)
            show_contention(api, watch, step)
        if not options.keep:  # (its logs are read whole: with what the components said at exit)
            step(f"dev cluster stopped ({', '.join(cluster.stop())})")
        code = report_jobs(watch, say)
        logs_clean = report_logs(cluster.state.processes, say)
    finally:
        if options.keep:
            step(f"cluster left running: export KUBECONFIG={cluster.kubeconfig}")
            step(f"watch it: kubectl get vcjob,pg,pods -n {NAMESPACE} -o wide")
            step(f"stop it with: lahar dev-cluster down --state-dir {options.state_dir}")
        else:
            cluster.stop()  # (stopped already unless the story failed)
            failed = code != 0 or not logs_clean
            cluster.remove(keep_logs=failed)
            if failed:
                step(f"the logs are kept in {options.state_dir / 'logs'}")
    return code if logs_clean else 1


def report_jobs(watch: JobWatch, say: Callable[[str], None]) -> int:
    """Print each Job's outcome; 0 when every Job started and none was a partial gang."""
    rows = [("JOB", "PHASE", "MOST BOUND", "TIME TO START", "PARTIAL GANG")]
    partial = 0
    for record in watch.records.values():
        row = record.row
        assert row is not None  # every Job was shown at least once
        start = "-" if record.started is None else f"{record.started - record.submitted:.2f} s"
        partial += record.partial
        bound = f"{record.peak}/{row.minimum}"
        rows.append((record.name, row.phase, bound, start, "yes" if record.partial else "no"))
    say("")
    say("summary")
    for line in justify(rows):
        say(f"  {line}")
    unstarted = [r.name for r in watch.records.values() if r.started is None]
    say(
        f"  partial gangs: {partial} (a Job with some but not all of its minimum bound for "
        f"more than {PARTIAL_GRACE:.0f} s)"
    )
    if unstarted:
        say(f"  never started: {', '.join(unstarted)}")
    return 0 if partial == 0 and not unstarted else 1


def report_logs(processes: Iterable[ProcessRecord], say: Callable[[str], None]) -> bool:
    """Print, per component, the errors and tracebacks its log holds; True when Lahar's
    components logged none."""
    components = [c for r in processes if (c := count_log(r.name, r.log)) is not None]
    say("  logs:")
    for line in summary(components):
        say(f"    {line}")
    return all(c.count.clean for c in components if c.lahar)


def _namespace(api: k8s.ApiClient) -> None:
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", NAMESPACE),
        timeout=60,
        what=f"the default ServiceAccount of namespace {NAMESPACE}",
    )
