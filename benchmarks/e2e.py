"""End-to-end scheduling throughput on the real control plane: what Lahar costs the stock
kube-scheduler, and how its gang scheduling compares with scheduler-plugins' Coscheduling.

    .venv/bin/python benchmarks/e2e.py [--nodes 1000] [--pods 10000] [--gangs 8 64]
                                       [--no-peer] [--qps 500] [--workers 8] [--create-qps 1000]
                                       [--only a b c8 d8 j8] [--burst] [--no-audit]
                                       [--profile DIR]
                                       [experiments: --service-form] [--nodes-to-score P]
                                       [--ungated] [--creator-gates] [--managed-only]

One dev cluster (`e2e_cluster`: real kube-apiserver, etcd, kube-controller-manager, KWOK for N
fake nodes of 32 cpu) runs every scheduler side by side, Lahar as `manifests/` ships it (its
kube-scheduler with the extender beside it on loopback, its Job controller, the webhook gating
gang pods, the policy files of `policy/` unchanged); the experiments depart from that and say so
in the report. Each run creates M pause pods (100m cpu, 128Mi) in a namespace of its own from the
same client, then deletes the namespace:

  (a) stock kube-scheduler alone, plain pods        (schedulerName default-scheduler)
  (b) stock kube-scheduler + Lahar, plain pods      (schedulerName lahar)
  (c) stock + Lahar, gangs of 8 and of 64           (Volcano PodGroups, minMember = gang size)
  (d) the peer, Coscheduling, the same gangs         (scheduler-plugins PodGroups)
  (j) Lahar's Job controller, the same gangs as     (batch.volcano.sh/v1alpha1 Jobs: one task of
      Volcano Jobs                                    N replicas, minAvailable N, queue default,
                                                      schedulerName lahar; their pods and
                                                      PodGroups made by the controller)

A run's key is its letter and gang size (a, b, c8, d64, j8); (c), (d) and (j) run for each size
in `--gangs`. Two forms:

- streamed (the default): the pods are created at `--create-qps` (a Job when its first pod would
  be due, so (j) and (d) place the same pods at the same pace) while every scheduler runs.
  Pods/s from the first create to the last bind; latency from each pod's creation to bound (a
  Job's pod: from its Job's creation, so a pod its controller made later does not look faster).
- `--burst`: every pod (every Job) of a run is created while that run's scheduler is stopped
  (Lahar's: its kube-scheduler and the extender beside it; the stock kube-scheduler for (a); the
  peer for (d)), then the scheduler is started. For (j) the start waits until the Job controller
  has nothing left to do (what it makes of a Job before the gang is admitted is made). Pods/s,
  latency, the API server's requests and the scheduler's attempts from the scheduler's start;
  CPU from when it answers (a restarted process's start-up, the extender's imports and first
  list of the cluster, is left out). The per-run line says when the first pod was bound.

Every scheduler's client has the same QPS and burst (`--qps`, burst twice that); Lahar's own
client (its binds) has no limiter. Printed per run: pods/s, p50/p99 of the time to bound (as a
watch sees it), the run's scheduler's scheduling attempts per bound pod
(`scheduler_schedule_attempts_total`: 1.00 when no pod is tried twice), Lahar's extender's CPU
milliseconds per bound pod and its peak RSS, how busy the machine's cores were (a run near 100%
is bound by CPU, which every component shares), pods never bound and gangs partly bound at the
end (PodGroups, or Jobs, with some but fewer than all of their pods bound); then the CPU
milliseconds each bound pod cost each process of the cluster, the API server's requests per bound
pod by verb and resource (`apiserver_request_total`) and by client component (the API server's
audit log, `e2e_audit`; `--no-audit` runs without it), and the ratios (b)/(a), and (c)/(d) and
(j)/(d) per gang size.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e_audit import now as audit_now
from e2e_binds import BindWatch
from e2e_cluster import PEER, TICK, BenchCluster, api_call, process_cpu, start
from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION
from extender.api.scheduling import API_VERSION as VOLCANO
from extender.api.scheduling import DEFAULT_QUEUE, GANG_GATE, GROUP_ANNOTATION
from extender.kube import apply_object, connect, list_objects, read, wait_until

PEER_API = "scheduling.x-k8s.io/v1alpha1"
PEER_LABEL = "scheduling.x-k8s.io/pod-group"
TASK = "worker"  # the one task of each (j) Job
PROFILED = ("lahar", "lahar-controller")  # the processes --profile samples


@dataclass(frozen=True)
class Run:
    letter: str  # the scenario: a, b, c, d, j
    label: str
    scheduler: str
    gang: int = 0  # 0: plain pods

    @property
    def key(self) -> str:
        return f"{self.letter}{self.gang or ''}"

    @property
    def jobs(self) -> bool:
        """Whether the run creates Volcano Jobs (whose controller creates the pods)."""
        return self.letter == "j"


@dataclass
class Result:
    run: Run
    pods: int  # the pods the run created, or its Jobs asked for
    started: float = 0.0  # when the clock started: the first create, or the scheduler's start
    # When each pod's wait began: its creation (a Job's pod: its Job's), in the burst form no
    # earlier than the scheduler's start; and when it was first seen bound.
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    gangs: dict[str, str] = field(default_factory=dict)  # each bound pod's PodGroup or Job
    lahar_cpu: float = 0.0
    lahar_peak_mib: float = 0.0
    machine_busy: float = 0.0  # the fraction of all cores' time spent busy during the run
    machine_cpu: float = 0.0  # CPU seconds all cores spent busy during the run
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per component in the run
    attempts: float = 0.0  # the run's scheduler's scheduling attempts during the run
    requests: Counter[str] = field(default_factory=Counter)  # by verb and resource, in the run
    clients: Counter[str] = field(default_factory=Counter)  # by client component, in the run

    @property
    def pods_per_second(self) -> float:
        if not self.bound:
            return 0.0
        return len(self.bound) / (max(self.bound.values()) - self.started)

    @property
    def partial_gangs(self) -> int:
        """Gangs with some but fewer than all of their pods bound."""
        placed = Counter(self.gangs[name] for name in self.bound if name in self.gangs)
        return sum(1 for count in placed.values() if count < self.run.gang)

    def latency_ms(self, quantile: float) -> float:
        waits = sorted(self.bound[n] - self.created[n] for n in self.bound if n in self.created)
        if not waits:
            return float("nan")
        return waits[min(len(waits) - 1, int(len(waits) * quantile))] * 1000


@dataclass(frozen=True)
class Submission:
    """One object a run creates: a pod, or a Job standing for its gang's pods. It is due when
    the first pod it stands for would be, at the run's pace."""

    name: str
    path: str
    body: dict[str, Any]
    first: int  # the index of its first pod among the run's
    gang: str | None  # its PodGroup (a gang pod's) or its own name (a Job's)


def runs(gangs: list[int], peer: bool) -> list[Run]:
    chosen = [
        Run("a", "stock, plain pods", "default-scheduler"),
        Run("b", "stock+Lahar, plain pods", "lahar"),
    ]
    for size in gangs:
        chosen.append(Run("c", f"stock+Lahar, gangs of {size}", "lahar", size))
        if peer:
            chosen.append(Run("d", f"Coscheduling, gangs of {size}", PEER, size))
        chosen.append(Run("j", f"Lahar's Jobs of {size}", "lahar", size))
    return chosen


def pause_container() -> dict[str, Any]:
    """The one container of every run's pods."""
    return {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }


def pod_body(name: str, run: Run, group: str | None, *, gated: bool = False) -> dict[str, Any]:
    """A pause pod of `run` (in gang `group`; with `gated`, created behind Lahar's gate, as
    Lahar's Job controller creates its pods)."""
    metadata: dict[str, Any] = {"name": name, "labels": {"bench": "e2e"}}
    if group is not None and run.scheduler == PEER:
        metadata["labels"][PEER_LABEL] = group
    elif group is not None:
        metadata["annotations"] = {GROUP_ANNOTATION: group}
    spec: dict[str, Any] = {"schedulerName": run.scheduler, "containers": [pause_container()]}
    if gated and group is not None and run.scheduler != PEER:
        spec["schedulingGates"] = [{"name": GANG_GATE}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def job_body(name: str, run: Run) -> dict[str, Any]:
    """A Volcano Job of `run`: one task of gang-size pause pods, all needed to start."""
    template = {
        "metadata": {"labels": {"bench": "e2e"}},
        "spec": {"containers": [pause_container()]},
    }
    return {
        "apiVersion": BATCH_API_VERSION,
        "kind": "Job",
        "metadata": {"name": name, "labels": {"bench": "e2e"}},
        "spec": {
            "schedulerName": run.scheduler,
            "minAvailable": run.gang,
            "queue": DEFAULT_QUEUE,
            "tasks": [{"name": TASK, "replicas": run.gang, "template": template}],
        },
    }


def group_body(name: str, namespace: str, run: Run) -> dict[str, Any]:
    api_version = PEER_API if run.scheduler == PEER else VOLCANO
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": run.gang},
    }


def submissions(run: Run, pods: int, namespace: str, *, gated: bool) -> list[Submission]:
    """What `run` creates for `pods` pods, in order."""
    if run.jobs:
        path = f"/apis/{BATCH_API_VERSION}/namespaces/{namespace}/jobs"
        names = [f"j{i:05d}" for i in range(pods // run.gang)]
        return [
            Submission(name, path, job_body(name, run), i * run.gang, name)
            for i, name in enumerate(names)
        ]
    path = f"/api/v1/namespaces/{namespace}/pods"
    made = []
    for index in range(pods):
        name, group = f"p{index:06d}", f"g{index // run.gang:05d}" if run.gang else None
        made.append(Submission(name, path, pod_body(name, run, group, gated=gated), index, group))
    return made


def _threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of `pid` so far, by thread id (py-spy names threads by it)."""
    spent = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        spent[int(task.name)] = (int(fields[11]) + int(fields[12])) / TICK
    return spent


def _prepare(api: k8s.ApiClient, run: Run, namespace: str, groups: list[str]) -> str:
    """Create the run's namespace and PodGroups; the resourceVersion its pod watch starts from."""
    apply_object(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    wait_until(
        lambda: read(api, "v1", "ServiceAccount", "default", namespace),
        timeout=60,
        what=f"namespace {namespace}",
    )
    for group in groups:
        apply_object(api, group_body(group, namespace, run))
    listing = api_call(api, "GET", f"/api/v1/namespaces/{namespace}/pods")
    return str(json.loads(listing)["metadata"]["resourceVersion"])


def _create(
    api: k8s.ApiClient, made: list[Submission], workers: int, pods_per_second: float | None
) -> dict[str, float]:
    """Create each submission, at `pods_per_second` in pods (None: as fast as the workers go);
    when each was sent, by name."""
    sent: dict[str, float] = {}
    began = time.monotonic()

    def create(submission: Submission) -> None:
        if pods_per_second is not None:
            due = began + submission.first / pods_per_second
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
        sent[submission.name] = time.monotonic()
        api_call(api, "POST", submission.path, body=submission.body)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, made))
    return sent


def _pod_count(api: k8s.ApiClient, namespace: str) -> int:
    """How many pods `namespace` has (one item listed, the server counts the rest)."""
    page = json.loads(api_call(api, "GET", f"/api/v1/namespaces/{namespace}/pods?limit=1"))
    return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)


def _settle(
    bench: BenchCluster, api: k8s.ApiClient, namespace: str, jobs: int, timeout: float
) -> int:
    """Wait until Lahar's Job controller has nothing left to do for the run's Jobs while no gang
    can be admitted: every Job's PodGroup made, no Job queued and no reconcile since the last
    look; the pods it made meanwhile (all of them, or none if it waits for admission)."""
    last = -1.0

    def settled() -> bool:
        nonlocal last
        groups = len(list_objects(api, VOLCANO, "PodGroup", namespace=namespace))
        queued, done = bench.controller_work()
        quiet = groups >= jobs and queued == 0 and done == last
        last = done
        return quiet

    wait_until(
        settled,
        timeout=timeout,
        what=f"Lahar's Job controller to be done with the Jobs of {namespace}",
        interval=1.0,
        max_interval=1.0,
    )
    return _pod_count(api, namespace)


class Meter:
    """What a run costs: the API server's requests (by verb and resource; by client component
    when it keeps an audit log) and the run's scheduler's attempts from the moment the meter is
    made (a scheduler about to start counts from 0), and from `begin` on the CPU of each process
    and of the machine, Lahar's extender's peak RSS and, with a profile folder, py-spy sampling
    the extender and the Job controller (`PROFILED`). (Reading the API server's /metrics takes
    the benchmark a while, so the counts are taken before the run's pods are sent or its
    scheduler started, and the CPU after; the audit log's window is stamped just before each
    reading of the API server's counter, so that both count the same requests.)"""

    def __init__(self, bench: BenchCluster, run: Run, *, stopped: bool = False) -> None:
        self.bench, self.run = bench, run
        self.since = bench.audit.begin() if bench.audit is not None else ""
        self.requests = bench.api_requests()
        self.attempts = 0.0 if stopped else bench.schedule_attempts(run.scheduler)

    def begin(self, profile: Path | None, name: str) -> None:
        self.lahar = self.bench.process_id("lahar")
        self.peak = process_cpu(self.lahar)[1]
        # per process sampled: its pid, py-spy, its threads' CPU so far, the profile's stem
        self.profilers: list[tuple[int, subprocess.Popen[bytes], dict[int, float], Path]] = []
        if profile is not None:
            for process in PROFILED:
                pid, stem = self.bench.process_id(process), profile / f"{process}-{name}"
                self.profilers.append((pid, _profile(pid, stem), _threads_cpu(pid), stem))
        self.usage = self.bench.usage()

    def tick(self) -> None:
        self.peak = max(self.peak, process_cpu(self.lahar)[1])

    def stop(self, result: Result) -> None:
        spent = self.bench.usage().since(self.usage)
        rss = process_cpu(self.lahar)[1]
        result.lahar_cpu, result.lahar_peak_mib = spent.cpu["lahar"], max(self.peak, rss)
        result.cpu, result.machine_cpu = spent.cpu, spent.machine_cpu
        result.machine_busy = spent.machine_busy
        result.attempts = self.bench.schedule_attempts(self.run.scheduler) - self.attempts
        until = audit_now()
        result.requests = self.bench.api_requests() - self.requests
        for pid, profiler, threads, stem in self.profilers:
            _stop_profile(profiler, pid, threads, stem)
        if self.bench.audit is not None:
            result.clients = self.bench.audit.count(self.since, until)


def measure(
    bench: BenchCluster,
    api: k8s.ApiClient,
    run: Run,
    args: argparse.Namespace,
    *,
    burst: bool = False,
    namespace: str | None = None,
) -> Result:
    """One run in namespace `bench-<key>` (unless named), streamed or in the burst form."""
    namespace = namespace or f"bench-{run.key}"
    pods = args.pods - args.pods % run.gang if run.gang else args.pods
    result = Result(run, pods)
    made = submissions(run, pods, namespace, gated=args.creator_gates)
    groups = [] if run.jobs else sorted({s.gang for s in made if s.gang is not None})
    name = namespace.removeprefix("bench-")
    kubeconfig = bench.cluster.kubeconfig
    if burst:
        bench.stop_scheduler(run.scheduler)
        _prepare(api, run, namespace, groups)
        began = time.monotonic()
        sent = _create(api, made, args.workers, None)
        what = "Jobs" if run.jobs else "pods"
        print(f"  created {len(made)} {what} in {time.monotonic() - began:.0f} s", flush=True)
        if run.jobs:
            existing = _settle(bench, api, namespace, len(made), args.timeout)
            print(f"  the Job controller made {existing} pods before the start", flush=True)
        meter = Meter(bench, run, stopped=True)
        # The watch lists first: from before the creations, a backlog of thousands of pods
        # outruns the API server's watch cache (410).
        watch = BindWatch(kubeconfig, namespace, pods)
        watch.start()
        result.started = time.monotonic()
        bench.start_scheduler(run.scheduler)
        meter.begin(args.profile, name)
    else:
        version = _prepare(api, run, namespace, groups)
        watch = BindWatch(kubeconfig, namespace, pods, version)
        watch.start()
        meter = Meter(bench, run)
        meter.begin(args.profile, name)
        sent = _create(api, made, args.workers, args.create_qps)
        result.started = min(sent.values())
    watch.wait(time.monotonic() + args.timeout, meter.tick)
    meter.stop(result)
    result.bound = dict(watch.bound)
    if run.jobs:
        result.gangs = {pod: job for pod, job in watch.jobs.items() if pod in result.bound}
        result.created = {pod: sent[job] for pod, job in result.gangs.items() if job in sent}
    else:
        result.gangs = {s.name: s.gang for s in made if s.gang is not None}
        result.created = sent
    if burst:
        result.created = {pod: max(t, result.started) for pod, t in result.created.items()}
    return result


def _stop_profile(
    profiler: subprocess.Popen[bytes], pid: int, threads_before: dict[int, float], stem: Path
) -> None:
    """Stop py-spy and write each of Lahar's threads' CPU seconds in the run beside its profile."""
    profiler.send_signal(signal.SIGINT)  # py-spy writes its file on interrupt
    profiler.wait(timeout=60)
    spent = {tid: cpu - threads_before.get(tid, 0.0) for tid, cpu in _threads_cpu(pid).items()}
    lines = [f"{tid} {cpu:.2f}" for tid, cpu in sorted(spent.items(), key=lambda i: -i[1])]
    stem.with_name(stem.name + "-threads.txt").write_text("\n".join(lines) + "\n")


def _profile(pid: int, stem: Path) -> subprocess.Popen[bytes]:
    """With --profile, py-spy samples process `pid` during the run into `<stem>.txt`
    (collapsed stacks: one line per stack with its sample count, for flamegraph tools or a quick
    sort)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).with_name("py-spy")
    out = stem.with_name(stem.name + ".txt")
    command = [str(spy), "record", "-p", str(pid), "-r", "100", "-f", "raw", "--threads", "--gil"]
    command += ["-o", str(out)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def clean(api: k8s.ApiClient, run: Run, namespace: str | None = None) -> None:
    """Delete the run's namespace (`bench-<run>` unless named) and wait until its pods (and
    Jobs) are gone, so the next run has the cluster to itself (a collection delete of 10,000
    pods outlasts the API server's request timeout; the namespace controller deletes them in
    batches)."""
    namespace = namespace or f"bench-{run.key}"
    api_call(api, "DELETE", f"/api/v1/namespaces/{namespace}")
    try:
        wait_until(
            lambda: read(api, "v1", "Namespace", namespace) is None,
            timeout=900,
            what=f"namespace {namespace} to be deleted",
            interval=2.0,
            max_interval=2.0,
        )
    except TimeoutError as error:
        print(f"warning: {error}; the next run shares the cluster with what is left", flush=True)


def report(results: list[Result], args: argparse.Namespace) -> None:
    form = "as shipped (manifests/: the extender beside kube-scheduler, loopback HTTP)"
    experiments = []
    if args.service_form:
        experiments.append("the standalone extender over mutual TLS (manifests/extender-service/)")
    if args.nodes_to_score is not None:
        experiments.append(f"percentageOfNodesToScore {args.nodes_to_score}")
    if args.ungated:
        experiments.append("gang pods created without Lahar's gate (the webhook's pod entry off)")
    if args.creator_gates:
        experiments.append("gang pods created with Lahar's gate by the benchmark, not the webhook")
    if args.managed_only:
        experiments.append(
            "the extender called only for pods asking for lahar.io/gang (managedResources): "
            "none here"
        )
    if experiments:
        form = "EXPERIMENT, not as shipped: " + "; ".join(experiments)
    print(
        f"\n{args.nodes} nodes, {args.pods} pods per run, scheduler client QPS {args.qps}; "
        f"Lahar {form}"
    )
    if args.burst:
        print(
            "burst form: every pod (Job) of a run created while its scheduler was stopped, then "
            "the scheduler started; pods/s, latency, API requests and attempts from its start, "
            "CPU from when it answered"
        )
    else:
        print(
            f"streamed form: pods created at {args.create_qps:g}/s (a Job when its first pod is "
            "due) while the schedulers run; pods/s from the first create, latency from each "
            "pod's (its Job's) creation"
        )
    header = f"{'run':34} {'pods':>6} {'pods/s':>8} {'p50 ms':>9} {'p99 ms':>9}"
    print(
        f"{header} {'attempts/pod':>12} {'Lahar ms/pod':>12} {'Lahar MiB':>9} {'busy %':>6} "
        f"{'unbound':>7} {'partial':>7}"
    )
    for r in results:
        bound = max(1, len(r.bound))
        print(
            f"({r.run.key}) {r.run.label:{31 - len(r.run.key)}} {r.pods:6d} "
            f"{r.pods_per_second:8.1f} {r.latency_ms(0.5):9.0f} {r.latency_ms(0.99):9.0f} "
            f"{r.attempts / bound:12.2f} {1000 * r.lahar_cpu / bound:12.2f} "
            f"{r.lahar_peak_mib:9.0f} {r.machine_busy * 100:6.0f} {r.pods - len(r.bound):7d} "
            f"{r.partial_gangs:7d}"
        )
    labels = [f"({r.run.key})" for r in results]
    breakdown(results, labels)
    requests(results, labels)
    clients(results, labels)
    ratios(results, args.gangs)


def ratios(results: list[Result], gangs: list[int]) -> None:
    """Pods/s of Lahar's runs over the stock scheduler's (plain pods) and the peer's (gangs)."""
    by = {r.run.key: r for r in results}
    pairs = [("b", "a", "")]
    for size in gangs:
        pairs += [(f"c{size}", f"d{size}", f", gangs of {size}")]
        pairs += [(f"j{size}", f"d{size}", f", Jobs against gangs of {size}")]
    for top, bottom, what in pairs:
        over, under = by.get(top), by.get(bottom)
        if over is not None and under is not None and under.pods_per_second:
            ratio = over.pods_per_second / under.pods_per_second
            print(f"({top[0]})/({bottom[0]}) pods/s{what}: {ratio:.2f}")


def _per_pod_table(title: str, rows: dict[str, list[float]], labels: list[str]) -> None:
    width = max([10, *(len(label) for label in labels)])
    first = max([24, *(len(name) for name in rows)])
    print(f"\n{title}")
    print(f"{'':{first}} " + " ".join(f"{label:>{width}}" for label in labels))
    for name, cells in rows.items():
        print(f"{name:{first}} " + " ".join(f"{cell:{width}.2f}" for cell in cells))


def breakdown(results: list[Result], labels: list[str]) -> None:
    """CPU milliseconds per bound pod, by component and run (columns named by `labels`): where
    each pod's cost goes on a machine whose cores every component shares (the schedulers not in
    a run still watch its pods)."""
    if not results:
        return
    names = sorted({name for r in results for name in r.cpu}, key=lambda n: -results[0].cpu[n])
    rows = {
        name: [1000 * r.cpu.get(name, 0.0) / max(1, len(r.bound)) for r in results]
        for name in names
    }
    rows["all listed"] = [1000 * sum(r.cpu.values()) / max(1, len(r.bound)) for r in results]
    rows["whole machine"] = [1000 * r.machine_cpu / max(1, len(r.bound)) for r in results]
    _per_pod_table("CPU ms per bound pod, by component", rows, labels)


def requests(results: list[Result], labels: list[str]) -> None:
    """The API server's requests per bound pod, by verb and resource, and run: what each pod
    costs the API server beyond its create and its binding."""
    if not results:
        return
    keys = sorted(
        {k for r in results for k in r.requests}, key=lambda k: -sum(r.requests[k] for r in results)
    )
    rows = {key: [r.requests[key] / max(1, len(r.bound)) for r in results] for key in keys}
    rows = {key: cells for key, cells in rows.items() if max(cells) >= 0.005}
    _per_pod_table("API server requests per bound pod (apiserver_request_total)", rows, labels)


def clients(results: list[Result], labels: list[str]) -> None:
    """The API server's requests per bound pod, by the component that sent them, and run."""
    if not any(r.clients for r in results):
        return
    names = sorted(
        {k for r in results for k in r.clients}, key=lambda k: -sum(r.clients[k] for r in results)
    )
    rows = {name: [r.clients[name] / max(1, len(r.bound)) for r in results] for name in names}
    rows["all"] = [sum(r.clients.values()) / max(1, len(r.bound)) for r in results]
    _per_pod_table("API server requests per bound pod, by client (its audit log)", rows, labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--gangs", type=int, nargs="*", default=[8, 64])
    parser.add_argument("--no-peer", action="store_true", help="skip (d), the Coscheduling peer")
    parser.add_argument("--qps", type=int, default=500, help="every scheduler's client QPS")
    parser.add_argument("--workers", type=int, default=8, help="threads creating pods")
    parser.add_argument("--create-qps", type=float, default=1000.0, help="pods created per s")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    parser.add_argument("--only", nargs="*", default=[], help="run only these (a, b, c8, d64, ...)")
    parser.add_argument(
        "--burst",
        action="store_true",
        help="create each run's pods (Jobs) while its scheduler is stopped, then start it",
    )
    parser.add_argument(
        "--no-audit",
        action="store_true",
        help="run the API server without its audit log (no requests by client component)",
    )
    parser.add_argument(
        "--nodes-to-score",
        type=int,
        help="experiment: set percentageOfNodesToScore of Lahar's scheduler (as shipped: unset, "
        "the scheduler's adaptive sampling)",
    )
    parser.add_argument(
        "--service-form",
        action="store_true",
        help="experiment: the standalone extender over mutual TLS (manifests/extender-service/) "
        "instead of the extender beside kube-scheduler on loopback (as shipped)",
    )
    parser.add_argument(
        "--ungated",
        action="store_true",
        help="experiment: gang pods created without Lahar's gate (the webhook's pod entry "
        "removed, as when it is down): their gangs are admitted when the scheduler asks",
    )
    parser.add_argument(
        "--creator-gates",
        action="store_true",
        help="experiment: the benchmark creates gang pods with Lahar's gate itself (as an "
        "operator of its own may), the webhook's pod entry removed",
    )
    parser.add_argument(
        "--managed-only",
        action="store_true",
        help="experiment: Lahar's kube-scheduler calls the extender only for pods asking for the "
        "extended resource lahar.io/gang (managedResources, ignoredByScheduler), which no pod "
        "here asks for: what calling Lahar only for the pods it must see could save at most, "
        "with no gang rule and no reservation kept (for (b) alone)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="folder for py-spy profiles of Lahar's extender and Job controller, per run",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lahar-e2e-") as folder:
        started = time.monotonic()
        bench = start(
            Path(folder),
            nodes=args.nodes,
            qps=args.qps,
            peer=not args.no_peer,
            service_form=args.service_form,
            ungated=args.ungated or args.creator_gates,
            nodes_to_score=args.nodes_to_score,
            managed_only=args.managed_only,
            audit=not args.no_audit,
        )
        print(f"cluster with {args.nodes} nodes up in {time.monotonic() - started:.0f} s")
        try:
            with connect(bench.cluster.kubeconfig) as api:
                results = []
                for run in runs(args.gangs, peer=not args.no_peer):
                    if args.only and run.key not in args.only:
                        continue
                    print(f"({run.key}) {run.label}", flush=True)
                    results.append(measure(bench, api, run, args, burst=args.burst))
                    r = results[-1]
                    first = min(r.bound.values(), default=r.started) - r.started
                    since = "the scheduler's start" if args.burst else "the first create"
                    print(
                        f"  {len(r.bound)}/{r.pods} bound, {r.pods_per_second:.1f} pods/s, "
                        f"the first {first:.1f} s after {since}",
                        flush=True,
                    )
                    clean(api, run)
        finally:
            bench.down()
    report(results, args)


if __name__ == "__main__":
    main()
