"""The fault run: Lahar on a dev cluster with gangs, plain pods and Volcano Jobs flowing, one fault
injected at a time, and for each fault what an operator must know:

  fault s         from the fault's start until its end: the component back and ready, the
                  standby leading, the connections no longer cut
  recovered s     from the fault's end until every pod of the round is placed: gangs whole,
                  plain pods bound, Jobs Running
  partial         gangs seen partly bound for longer than PARTIAL_GRACE (must be 0)
  jobs lost/dup   Jobs without exactly their pods, or not Running (must be 0)
  unbound         pods of the round left unbound that should bind (must be 0)
  cache           the extender's cache holds as many pods, PodGroups, Queues and nodes, and the
                  controller as many Jobs, as a fresh list of the API server at the end of the
                  round (a missed delete leaves one too many)

The faults, in order:

  apiserver   kube-apiserver stopped and started again while a round is being placed
  etcd        etcd stopped and started again while a round is being placed
  extender    the extender killed (SIGKILL) while a gang's binds are held at its barrier; work
              submitted while it is dead; then started again
  takeover    the leading scheduler pod (kube-scheduler and its extender) killed while a gang's
              binds are held; a standby pod takes the scheduler's Lease and places everything
  controller  the Job controller killed while it creates a Job's pods, then started again: the
              Job ends with exactly its pods, none twice
  webhook     the admission webhook killed: pods of any scheduler and namespace are still
              created (the pod and PodGroup webhooks fail open); a Volcano Job is refused with
              the webhook's name (its webhooks fail closed, as Volcano's do); started again,
              the Job is admitted and runs
  watches     every connection of Lahar's extender, controller and webhook to the API server cut
              every 2 s for 30 s (a proxy in front of the API server) while pods come and go:
              no event is missed, deletes included

Each round submits work before the fault (2 gangs of 3, 2 plain pods, a Job of 3), injects it,
submits the same again while the fault lasts (or just after, when the API server is down), heals
it and waits for every pod to be placed. The run prints one row per fault and exits 1 when any
invariant failed.

  python benchmarks/faults.py                      # every fault, about 6 minutes on 2 cores
  python benchmarks/faults.py --only extender watches
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender import devcluster
from extender.api.batch import BATCH_API_VERSION, JOB_NAME_KEY
from extender.api.scheduling import API_VERSION, GROUP_ANNOTATION
from extender.demo.log_errors import count_log
from extender.devcluster import child_processes
from extender.devcluster.lahar import wait_ready
from extender.devcluster.ports import free_ports
from extender.devcluster.replica import SchedulerReplica, start_replica
from extender.kube import apply_object, connect, delete, list_objects, read, wait_until
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, send

SCHEDULER = "lahar"
HOLD = "lahar.io/faults-hold"  # a gate of the run's own: keeps one member from the scheduler
# Seconds a gang may be seen partly bound while its members' binds land (they are made together,
# in well under a second; the margin is for a loaded machine just after the API server restarted).
PARTIAL_GRACE = 5.0
LEASE = ("coordination.k8s.io/v1", "Lease", "lahar-scheduler", "lahar-system")
STANDBY = "lahar-scheduler-b"
LAHAR = ("lahar-webhook", "lahar", "lahar-controller")  # processes, by their dev cluster name
WEBHOOK_NAME = "job-defaults.lahar.dev"  # manifests/base/webhook.yaml
# What a call raises while the API server is away.
DOWN = (KubeError, OSError, k8s.ApiException, urllib3.exceptions.HTTPError)


# -- the work of a round ------------------------------------------------------------------------


@dataclass
class Work:
    """What a round submitted. The partial-gang watcher reads it from its thread while the round
    adds to it: both go through the lock (`add`, `copy`)."""

    gangs: dict[str, list[str]] = field(default_factory=dict)  # PodGroup -> its pods
    plain: list[str] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)  # Job -> its pod count
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, other: Work) -> None:
        with self._lock:
            self.gangs.update(other.gangs)
            self.plain += other.plain
            self.jobs.update(other.jobs)

    def copy(self) -> Work:
        with self._lock:
            return Work(dict(self.gangs), list(self.plain), dict(self.jobs))


def pod_body(name: str, namespace: str, *, cpu: str, group: str = "", hold: bool = False) -> Any:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if group:
        metadata["annotations"] = {GROUP_ANNOTATION: group}
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
    }
    if hold:
        spec["schedulingGates"] = [{"name": HOLD}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def gang(api: k8s.ApiClient, namespace: str, name: str, size: int, *, hold: bool = False) -> Work:
    """A PodGroup of `size` and its pods (with `hold`, the last behind the run's own gate)."""
    apply_object(
        api,
        {
            "apiVersion": API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": size},
        },
    )
    names = [f"{name}-{i}" for i in range(size)]
    for index, member in enumerate(names):
        held = hold and index == size - 1
        apply_object(api, pod_body(member, namespace, cpu="500m", group=name, hold=held))
    return Work(gangs={name: names})


def job_body(name: str, namespace: str, replicas: int, cpu: str) -> dict[str, Any]:
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
        }
    }
    return {
        "apiVersion": BATCH_API_VERSION,
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": SCHEDULER,
            "minAvailable": replicas,
            "tasks": [{"name": "worker", "replicas": replicas, "template": template}],
        },
    }


def round_of(api: k8s.ApiClient, namespace: str, tag: str, *, jobs: bool = True) -> Work:
    """2 gangs of 3, 2 plain pods and (with `jobs`) a Job of 3."""
    work = Work()
    for index in range(2):
        work.add(gang(api, namespace, f"{tag}-g{index}", 3))
    for index in range(2):
        name = f"{tag}-p{index}"
        apply_object(api, pod_body(name, namespace, cpu="250m"))
        work.plain.append(name)
    if jobs:
        apply_object(api, job_body(f"{tag}-j", namespace, 3, "250m"))
        work.jobs[f"{tag}-j"] = 3
    return work


# -- what the cluster shows ---------------------------------------------------------------------


def pods_of(api: k8s.ApiClient, namespace: str) -> list[dict[str, Any]]:
    return list_objects(api, "v1", "Pod", namespace=namespace)


def members(pods: list[dict[str, Any]], work: Work) -> dict[str, list[dict[str, Any]]]:
    """The pods of each gang of `work`: a PodGroup's by name, a Job's by its label."""
    by_name = {p["metadata"]["name"]: p for p in pods}
    found = {g: [by_name[n] for n in names if n in by_name] for g, names in work.gangs.items()}
    for job in work.jobs:
        labelled = [p for p in pods if (p["metadata"].get("labels") or {}).get(JOB_NAME_KEY) == job]
        found[job] = labelled
    return found


def sizes(work: Work) -> dict[str, int]:
    return {**{g: len(names) for g, names in work.gangs.items()}, **work.jobs}


def is_bound(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName"))


def unplaced(api: k8s.ApiClient, namespace: str, work: Work) -> list[str]:
    """What of `work` is not placed yet (empty: everything is)."""
    pods = pods_of(api, namespace)
    bound = {p["metadata"]["name"] for p in pods if is_bound(p)}
    missing = [n for names in work.gangs.values() for n in names if n not in bound]
    missing += [n for n in work.plain if n not in bound]
    for job, pods_of_job in members(pods, Work(jobs=work.jobs)).items():
        running = sum(1 for p in pods_of_job if is_bound(p))
        phase = (
            ((read(api, BATCH_API_VERSION, "Job", job, namespace) or {}).get("status") or {}).get(
                "state"
            )
            or {}
        ).get("phase")
        if running != work.jobs[job] or phase != "Running":
            missing.append(f"Job {job} ({running}/{work.jobs[job]} bound, {phase or 'no phase'})")
    return missing


class PartialWatch:
    """Samples the round's gangs every quarter second in a thread: a gang some but not all of
    whose pods are bound for longer than `PARTIAL_GRACE` is a partial gang."""

    def __init__(self, kubeconfig: Path, namespace: str, work: Work) -> None:
        self.kubeconfig, self.namespace, self.work = kubeconfig, namespace, work
        self.partial: set[str] = set()
        self._since: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PartialWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        with connect(self.kubeconfig) as api:
            while not self._stop.wait(0.25):
                try:
                    pods = pods_of(api, self.namespace)
                except DOWN:  # the API server is away
                    continue
                self._look(pods, self.work.copy(), time.monotonic())

    def _look(self, pods: list[dict[str, Any]], work: Work, now: float) -> None:
        wanted = sizes(work)
        for name, found in members(pods, work).items():
            bound = sum(1 for p in found if is_bound(p))
            if 0 < bound < wanted[name]:
                since = self._since.setdefault(name, now)
                if now - since > PARTIAL_GRACE:
                    self.partial.add(name)
            else:
                self._since.pop(name, None)


def metric(url: str, name: str, **labels: str) -> float | None:
    """One sample of a Lahar process's /metrics (None when it cannot be read)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310
            text = answer.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def cache_problems(api: k8s.ApiClient, extender: str, controller: str) -> list[str]:
    """How the extender's cache and the controller's Jobs differ from a fresh list (empty: they
    agree), given a few seconds for the last events to arrive."""
    kinds = {
        "pods": ("v1", "Pod"),
        "pod_groups": (API_VERSION, "PodGroup"),
        "queues": (API_VERSION, "Queue"),
        "nodes": ("v1", "Node"),
    }

    def differences() -> list[str]:
        found = []
        for kind, (api_version, listed) in kinds.items():
            fresh = len(list_objects(api, api_version, listed))
            cached = metric(f"{extender}/metrics", "lahar_cache_objects", kind=kind)
            if cached != fresh:
                found.append(f"extender {kind} {cached} != {fresh}")
        jobs = len(list_objects(api, BATCH_API_VERSION, "Job"))
        known = metric(f"{controller}/metrics", "lahar_controller_jobs")
        if known != jobs:
            found.append(f"controller jobs {known} != {jobs}")
        return found

    deadline = time.monotonic() + 15
    while (found := differences()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


# -- the run ------------------------------------------------------------------------------------


@dataclass
class Row:
    fault: str
    lasted: float | None = None  # seconds from the fault's start to its end
    recovered: float | None = None  # seconds from the fault's end to every pod placed
    partial: int = 0
    jobs_wrong: int = 0
    unbound: int = 0
    cache: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # fault-specific checks that failed
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        wrong = self.partial or self.jobs_wrong or self.unbound or self.cache or self.failures
        return not wrong and self.recovered is not None


@dataclass
class Run:
    """The cluster under faults. It plays the kubelet too: a process that exits unasked (a
    scheduler or a Lahar process that lost its Lease while the API server was away ends itself,
    as client-go's leaders do) is started again within a second, and noted; a process the fault
    stopped stays down until the fault starts it."""

    cluster: devcluster.DevCluster
    api: k8s.ApiClient
    timeout: float
    extender_port: int = 0  # the serving extender's port (the standby's after a takeover)
    # What a fault undoes once its round is settled (last first): a standby pod stopped, the
    # proxy taken out.
    after: list[Callable[[], None]] = field(default_factory=list)
    began: float | None = None  # when the round's fault began (its first stop, or as it says)
    restarted: list[str] = field(default_factory=list)  # processes the kubelet's role restarted
    _down: set[str] = field(default_factory=set)  # stopped by the fault
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def supervise(self) -> threading.Thread:
        thread = threading.Thread(target=self._supervise, daemon=True)
        thread.start()
        return thread

    def _supervise(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                for record in list(self.cluster.state.processes):
                    if record.name in self._down or child_processes.is_running(record):
                        continue
                    try:
                        self.cluster.start_component(record.name, die_with_parent=True)
                    except Exception as error:  # tried again in a second; the row shows it
                        self.restarted.append(f"{record.name} (failed: {error})")
                    else:
                        self.restarted.append(record.name)

    def halt(self) -> None:
        """No more restarts: the run is over."""
        self._stop.set()
        with self._lock:  # (waits out a restart under way)
            pass

    def stop(self, name: str, *, kill: bool = False) -> None:
        if self.began is None:
            self.began = time.monotonic()
        with self._lock:
            self._down.add(name)
            self.cluster.stop_component(name, kill=kill)

    def stopped(self, name: str) -> bool:
        """Whether the fault stopped `name` (and has not started it again)."""
        with self._lock:
            return name in self._down

    def start(self, name: str) -> child_processes.ProcessRecord:
        with self._lock:
            self._down.discard(name)
            return self.cluster.start_component(name, die_with_parent=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.cluster.state.ports[name]}"

    @property
    def extender(self) -> str:
        return f"http://127.0.0.1:{self.extender_port or self.cluster.state.ports['lahar']}"

    def namespace(self, fault: str) -> str:
        name = f"faults-{fault}"
        apply_object(
            self.api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        return name

    def restart(self, name: str) -> None:
        """Start a stopped Lahar process again; wait until it is ready."""
        record = self.start(name)
        wait_ready(
            record, self.cluster.state.ports[name], self.timeout, tls=name == "lahar-webhook"
        )

    def restart_control_plane(self, name: str) -> None:
        """Start etcd or kube-apiserver again; wait until the API server is ready."""
        self.start(name)
        wait_until(self._ready, timeout=self.timeout, what="the API server to be ready")

    def _ready(self) -> bool:
        try:
            send(self.api, "GET", "/readyz").read()
        except (ApiStatusError, *DOWN):
            return False
        return True

    def held(self, count: int) -> None:
        wait_until(
            lambda: (metric(f"{self.extender}/metrics", "lahar_gang_members_held") or 0) >= count,
            timeout=self.timeout,
            what=f"{count} gang members held at the extender's bind barrier",
        )


def settle(
    run: Run, row: Row, namespace: str, work: Work, *, healed: float, partial: PartialWatch
) -> None:
    """Wait for every pod of `work` to be placed; fill the row's invariants."""
    missing: list[str] = []

    def placed() -> bool:
        nonlocal missing
        with contextlib.suppress(*DOWN):
            missing = unplaced(run.api, namespace, work)
        return not missing

    with contextlib.suppress(TimeoutError):
        wait_until(placed, timeout=run.timeout, what="the round placed", interval=0.2)
    if not missing:
        row.recovered = time.monotonic() - healed
    row.unbound = sum(1 for m in missing if not m.startswith("Job "))
    pods = pods_of(run.api, namespace)
    wrong = set()
    for job, found in members(pods, Work(jobs=work.jobs)).items():
        if len(found) != work.jobs[job]:  # (pod names are unique: more is a pod made twice)
            wrong.add(job)
            row.notes.append(f"Job {job} has {len(found)} pods, wants {work.jobs[job]}")
    wrong |= {m.split()[1] for m in missing if m.startswith("Job ")}  # not Running
    row.jobs_wrong = len(wrong)
    if not partial.alive:
        row.failures.append("the partial-gang watcher died: partial gangs were not counted")
    row.partial = len(partial.partial)
    row.cache = cache_problems(run.api, run.extender, run.url("lahar-controller"))


def play(run: Run, fault: str, inject: Callable[[Run, Row, str, Work], float]) -> Row:
    """One round: work before the fault, the fault (which submits work while it lasts and returns
    when it was healed), everything placed; then the round's namespace deleted."""
    row = Row(fault)
    restarted = len(run.restarted)
    namespace = run.namespace(fault)
    work = Work()
    try:
        with PartialWatch(run.cluster.kubeconfig, namespace, work) as partial:
            work.add(round_of(run.api, namespace, "before"))
            run.began = None
            healed = inject(run, row, namespace, work)
            row.lasted = None if run.began is None else healed - run.began
            settle(run, row, namespace, work, healed=healed, partial=partial)
    except Exception as error:  # the fault broke the round: the row says how, the run goes on
        row.failures.append(f"{type(error).__name__}: {error}")
    finally:
        while run.after:
            try:
                run.after.pop()()
            except Exception as error:
                row.failures.append(f"undoing the fault: {type(error).__name__}: {error}")
    if exited := run.restarted[restarted:]:
        row.notes.append(f"restarted after exiting: {', '.join(exited)}")
    try:
        delete(run.api, "v1", "Namespace", namespace)
    except Exception as error:
        row.failures.append(f"deleting namespace {namespace}: {error}")
    return row


# -- the faults ---------------------------------------------------------------------------------


def control_plane_restart(component: str) -> Callable[[Run, Row, str, Work], float]:
    def inject(run: Run, row: Row, namespace: str, work: Work) -> float:
        run.stop(component)
        time.sleep(2.0)
        run.restart_control_plane(component)
        healed = time.monotonic()
        work.add(round_of(run.api, namespace, "after"))
        return healed

    return inject


def extender_killed(run: Run, row: Row, namespace: str, work: Work) -> float:
    held = gang(run.api, namespace, "held", 3, hold=True)
    work.add(held)
    run.held(2)
    run.stop("lahar", kill=True)
    names = held.gangs["held"]
    if any(is_bound(p) for p in pods_of(run.api, namespace) if p["metadata"]["name"] in names):
        row.failures.append("a held member was bound although the extender died holding it")
    work.add(round_of(run.api, namespace, "during"))  # parked while no extender answers
    apply_object(run.api, pod_body(names[-1], namespace, cpu="500m", group="held"))  # gate off
    run.restart("lahar")
    return time.monotonic()


def takeover(run: Run, row: Row, namespace: str, work: Work) -> float:
    replica = start_replica(run.cluster, STANDBY, ready_timeout=run.timeout)
    run.after.append(lambda: _give_back(run, replica))
    standby = f"http://127.0.0.1:{replica.port}/readyz"
    wait_until(lambda: _ok(standby), timeout=run.timeout, what="the standby's cache")
    held = gang(run.api, namespace, "held", 3, hold=True)
    work.add(held)
    run.held(2)
    run.stop("lahar-scheduler", kill=True)
    run.stop("lahar", kill=True)
    run.extender_port = replica.port
    work.add(round_of(run.api, namespace, "during"))
    names = held.gangs["held"]
    apply_object(run.api, pod_body(names[-1], namespace, cpu="500m", group="held"))
    wait_until(
        lambda: _holder(run.api).startswith(f"{STANDBY}_"),
        timeout=run.timeout,
        what="the standby to take the scheduler's Lease",
    )
    return time.monotonic()  # (the fault ends when the standby leads)


def _give_back(run: Run, replica: SchedulerReplica) -> None:
    """The first scheduler pod back; the standby stopped (releasing the Lease) so it leads."""
    for name in ("lahar", "lahar-scheduler"):
        if run.stopped(name):
            run.start(name)
    replica.stop()
    run.extender_port = 0
    wait_until(
        lambda: (h := _holder(run.api)) != "" and not h.startswith(STANDBY),
        timeout=run.timeout,
        what="the first scheduler to lead again",
    )
    wait_until(lambda: _ok(f"{run.extender}/readyz"), timeout=run.timeout, what="the extender")


def _holder(api: k8s.ApiClient) -> str:
    lease = read(api, *LEASE) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def controller_killed(run: Run, row: Row, namespace: str, work: Work) -> float:
    replicas = 40
    apply_object(run.api, job_body("big", namespace, replicas, "50m"))
    work.jobs["big"] = replicas
    selector = f"{JOB_NAME_KEY}=big"

    def created() -> int:
        return len(list_objects(run.api, "v1", "Pod", namespace=namespace, label_selector=selector))

    deadline = time.monotonic() + run.timeout
    while not created() and time.monotonic() < deadline:  # kill at its first pod
        time.sleep(0.01)
    run.stop("lahar-controller", kill=True)
    row.notes.append(f"controller killed with {created()}/{replicas} pods of a Job created")
    work.add(round_of(run.api, namespace, "during", jobs=False))
    run.restart("lahar-controller")
    return time.monotonic()


def webhook_down(run: Run, row: Row, namespace: str, work: Work) -> float:
    run.stop("lahar-webhook", kill=True)
    other = run.namespace("faults-other")
    try:
        plain = pod_body("elsewhere", other, cpu="100m")
        plain["spec"]["schedulerName"] = "default-scheduler"
        apply_object(run.api, plain)
        wait_until(
            lambda: is_bound(read(run.api, "v1", "Pod", "elsewhere", other) or {"spec": {}}),
            timeout=run.timeout,
            what="a default-scheduler pod in another namespace bound",
        )
    finally:
        delete(run.api, "v1", "Namespace", other)
    work.add(round_of(run.api, namespace, "during", jobs=False))
    try:
        apply_object(run.api, job_body("refused", namespace, 3, "250m"))
        row.failures.append("a Job was admitted while the webhook was down")
    except KubeError as error:
        if WEBHOOK_NAME not in str(error):
            row.failures.append(f"the Job's refusal does not name the webhook: {error}")
        else:
            row.notes.append("Job refused naming the webhook")
    run.restart("lahar-webhook")
    healed = time.monotonic()
    apply_object(run.api, job_body("admitted", namespace, 3, "250m"))
    work.jobs["admitted"] = 3
    return healed


def watches_cut(run: Run, row: Row, namespace: str, work: Work) -> float:
    kubeconfigs = {name: _kubeconfig_of(run.cluster, name) for name in LAHAR}
    server = yaml.safe_load(kubeconfigs["lahar"].read_text())["clusters"][0]["cluster"]["server"]
    proxy = CuttingProxy(run.cluster.state.ports["apiserver"]).__enter__()

    def through(address: str) -> None:
        """Lahar's processes started again, talking to the API server at `address`."""
        for name, path in kubeconfigs.items():
            _point_at(path, address)
            run.stop(name)
            run.restart(name)

    def undo() -> None:
        try:
            through(server)
        finally:
            proxy.__exit__()

    run.after.append(undo)
    through(f"https://127.0.0.1:{proxy.port}")
    proxy.cutting = True
    run.began = time.monotonic()
    work.add(round_of(run.api, namespace, "during"))
    churned = 0
    until = time.monotonic() + 30
    while time.monotonic() < until:  # pods come and go while the streams are cut
        name = f"churn-{churned}"
        apply_object(run.api, pod_body(name, namespace, cpu="100m"))
        time.sleep(0.5)
        delete(run.api, "v1", "Pod", name, namespace)
        churned += 1
    proxy.cutting = False  # (the proxy stays until the round is settled: then undone)
    row.notes.append(f"{proxy.cuts} cuts of {proxy.closed} connections, {churned} pods churned")
    reconnects = metric(
        f"{run.extender}/metrics", "lahar_cache_watch_reconnects_total", kind="pods"
    )
    row.notes.append(f"the extender's pod watch reconnected {reconnects or 0:.0f} times")
    return time.monotonic()


def _kubeconfig_of(cluster: devcluster.DevCluster, name: str) -> Path:
    record = next(p for p in cluster.state.processes if p.name == name)
    flag = next(a for a in record.argv if a.startswith("--kubeconfig="))
    return Path(flag.partition("=")[2])


def _point_at(path: Path, server: str) -> None:
    config = yaml.safe_load(path.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = server
    path.write_text(yaml.safe_dump(config))


class CuttingProxy:
    """A TCP proxy on loopback in front of the API server that, while `cutting`, closes every
    connection through it every `interval` seconds (TLS passes through untouched)."""

    def __init__(self, target: int, interval: float = 2.0) -> None:
        self.target, self.interval = target, interval
        self.port = free_ports(1)[0]
        self.cutting = False
        self.cuts = self.closed = 0
        self._open: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> CuttingProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    async def _close(self) -> None:
        """Stop listening and end every connection, before the loop stops."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._open):
            writer.transport.abort()
        # The pipes end on their own once their connections are aborted (cancelling them instead
        # trips asyncio's stream callback, which asks a cancelled task for its exception).
        if others := [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            await asyncio.wait(others, timeout=5)

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self._loop.create_task(self._cut_forever())

    async def _cut_forever(self) -> None:
        while self._server is not None and self._server.is_serving():
            await asyncio.sleep(self.interval)
            if self.cutting and self._open:
                self.cuts += 1
                self.closed += len(self._open)
                for writer in list(self._open):
                    writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        self._open -= {writer, up_writer}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.transport.abort()


FAULTS: dict[str, Callable[[Run, Row, str, Work], float]] = {
    "apiserver": control_plane_restart("kube-apiserver"),
    "etcd": control_plane_restart("etcd"),
    "extender": extender_killed,
    "takeover": takeover,
    "controller": controller_killed,
    "webhook": webhook_down,
    "watches": watches_cut,
}


def report(rows: list[Row], command: str) -> None:
    print(f"\n$ {command}")
    header = (
        "fault",
        "fault s",
        "recovered s",
        "partial",
        "jobs lost/dup",
        "unbound",
        "cache = list",
        "result",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        recovered = "never" if row.recovered is None else f"{row.recovered:.1f}"
        cache = "yes" if not row.cache else "no: " + "; ".join(row.cache)
        result = "ok" if row.ok else "FAILED: " + "; ".join(row.failures or ["see columns"])
        lasted = "" if row.lasted is None else f"{row.lasted:.1f}"
        cells = (
            row.fault,
            lasted,
            recovered,
            row.partial,
            row.jobs_wrong,
            row.unbound,
            cache,
            result,
        )
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for row in rows:
        if row.notes:
            print(f"  {row.fault}: {'; '.join(row.notes)}")


def errors(cluster: devcluster.DevCluster) -> None:
    """What Lahar's processes logged as errors over the whole run (a Lease lost while the API
    server was away is one; a traceback never is)."""
    print("ERROR lines and tracebacks in Lahar's logs over the run:")
    for record in cluster.state.processes:
        found = count_log(record.name, record.log) if record.name in LAHAR else None
        if found is not None:
            count = found.count
            print(f"  {record.name}: {count.errors} ERROR lines, {count.tracebacks} tracebacks")
            for line in count.first:
                print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4, help="fake nodes of 8 cpu (default 4)")
    parser.add_argument("--only", nargs="+", choices=list(FAULTS), help="these faults only")
    parser.add_argument("--timeout", type=float, default=120, help="seconds a round may take")
    args = parser.parse_args()
    chosen = args.only or list(FAULTS)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="lahar-faults-") as folder:
        options = devcluster.ClusterOptions(
            state_dir=Path(folder) / "cluster",
            nodes=args.nodes,
            with_lahar=True,
            die_with_parent=True,
        )
        cluster = devcluster.up(options)
        run: Run | None = None
        try:
            with connect(cluster.kubeconfig) as api:
                run = Run(cluster, api, args.timeout)
                run.supervise()
                for fault in chosen:
                    started = time.monotonic()
                    row = play(run, fault, FAULTS[fault])
                    took = time.monotonic() - started
                    print(f"{fault}: {'ok' if row.ok else 'FAILED'} in {took:.0f}s", flush=True)
                    rows.append(row)
        finally:
            if run is not None:
                run.halt()
            errors(cluster)
            if len(rows) < len(chosen) or not all(r.ok for r in rows):
                kept = Path(tempfile.mkdtemp(prefix="lahar-faults-logs-"))
                shutil.copytree(cluster.state.state_dir / "logs", kept, dirs_exist_ok=True)
                print(f"the components' logs are kept in {kept}")
            cluster.down()
    report(rows, "python benchmarks/faults.py " + " ".join(sys.argv[1:]))
    sys.exit(0 if all(r.ok for r in rows) else 1)


if __name__ == "__main__":
    main()
