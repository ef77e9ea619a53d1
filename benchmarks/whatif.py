"""How long `lahar whatif -f job.yaml` takes on a large cluster, phase by phase, on one core.

    .venv/bin/python benchmarks/whatif.py [--nodes 1000] [--gangs 1000] [--horizon 24]
                                          [--policy policy/lahar.yaml] [--cpu N]
                                          [--one-machine] [--profile FILE] [--top 30]

The cluster is the lists a real API server would return for it (`kube.snapshot_lists.RawCluster`,
raw dicts built by `benchmarks/cluster_json.py`), at the default size 1,000 nodes and 10,000 pods:

- nodes of four machines (60% 32-cpu, 20% 64-cpu labelled for memory, 15% with 8 GPUs, tainted,
  5% infrastructure, tainted), in three zones, one in 97 cordoned;
- `--gangs` Volcano Jobs running, 8 pods each, with their PodGroups (Running), in five queues
  (`research` the parent of two), bin-packed onto the nodes they fit, started 5 minutes to 12
  hours before the snapshot; three in five say their run time (`lahar.io/expected-run-time`,
  none of them overdue), the others leave it unknown;
- 1.5 pending pods per running gang, in Jobs of 4 to 16 (about 190 at the default size), Inqueue
  with their pods created and unbound, most with a run time;
- one DaemonSet pod on every second node (no gang, bound: `occupied` in the trace);
- the PriorityClasses the pods name.

Each kind is serialised in pages of `watch.PAGE` items, as `list_for_snapshot` receives them. In
a fresh process pinned to one core (os.sched_setaffinity; `--cpu`, default the last core this
process may use), so nothing else is resident, these are timed apart, wall and cpu seconds, with
the time the cyclic garbage collector took in each: the JSON decode of every page (`json.loads`),
`from_cluster.snapshot` (and its `load_state`: the extender's models and cache), `job_input.
read_job` of one Job, and `whatif.ask`, split into each of its two Simulations' setup (the trace
into a `ClusterState`), the running gangs taken up at time 0 (`_resume`, `Engine.recover`) and
the run to the end or the horizon, then the comparison that makes the answer. Printed: the table,
RSS after each phase and the peak (VmHWM, as `benchmarks/memory.py` reads it), the answer, and
the command line. `--one-machine` makes every node a 32-cpu machine and every gang plain (no
GPUs, node selectors or taints to tell nodes apart), the same sizes otherwise. `--profile FILE`
runs the same under cProfile (slower), writes FILE and prints the `--top` functions by own and
by cumulative time. Listing the objects from a real API server (`list_for_snapshot`) is not
timed here: the decode is what the client does with the pages it receives.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import logging
import multiprocessing
import os
import pstats
import queue
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster_json import (
    GANG,
    M6I,
    Machine,
    Member,
    group_json,
    job_json,
    mib,
    node_json,
    pod_json,
    priority_class_json,
    queue_json,
)

from extender.api.batch import pod_name
from extender.api.quantity import parse_quantity
from extender.api.run_times import RUN_TIME_ANNOTATION, RunHistory
from extender.api.times import parse_time, rfc3339
from extender.cache.state import ClusterState
from extender.cli.kubectl import table
from extender.cli.serve_cmd import default_policy
from extender.framework.policy import load_policy
from extender.kube.snapshot_lists import RawCluster
from extender.kube.watch import PAGE
from extender.plugins import REGISTRY
from extender.simulate import from_cluster, whatif, whatif_words
from extender.simulate.collector import young_collections_every
from extender.simulate.job_input import Refused, read_job
from extender.simulate.run import Simulation, SimulationOutcome

TAKEN_AT = parse_time("2026-11-30T12:00:00Z") or 0.0
GPU = "nvidia.com/gpu"
PENDING_PER_GANG = 1.5  # pending pods per running gang: 1,500 at 1,000 gangs
PENDING_SIZES = (8, 4, 8, 16, 8, 4, 8)  # the pending Jobs' sizes, in turn (8 on average)
CORDONED_EVERY = 97

MEMORY = Machine(
    "r6i.16xlarge",
    {"cpu": "64", "memory": "512Gi", "pods": "110"},
    {"cpu": "63770m", "memory": "500Gi", "pods": "110"},
    labels={"lahar.example/memory": "high"},
    taints=M6I.taints,
)
GPUS = Machine(
    "p4d.24xlarge",
    {"cpu": "96", "memory": "1152Gi", "pods": "110", GPU: "8"},
    {"cpu": "95690m", "memory": "1100Gi", "pods": "110", GPU: "8"},
    labels={"nvidia.com/gpu.product": "A100-SXM4-40GB"},
    taints=({"key": GPU, "value": "present", "effect": "NoSchedule"},),
)
INFRA = Machine(
    "m6i.4xlarge",
    {"cpu": "16", "memory": "64Gi", "pods": "110"},
    {"cpu": "15820m", "memory": "60Gi", "pods": "110"},
    labels={"node-role.kubernetes.io/infra": ""},
    taints=({"key": "node-role.kubernetes.io/infra", "effect": "NoSchedule"},),
)
# The machine of node i: by i % 20.
MACHINES = (M6I,) * 12 + (MEMORY,) * 4 + (GPUS,) * 3 + (INFRA,)


@dataclass(frozen=True)
class Work:
    """A kind of gang: its pods' request and where they may run."""

    requests: dict[str, str]
    machines: tuple[Machine, ...]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ({"key": "dedicated", "operator": "Exists"},)


CPU_WORK = Work({"cpu": "3500m", "memory": "14Gi"}, (M6I, MEMORY))
MEMORY_WORK = Work(
    {"cpu": "7", "memory": "48Gi"}, (MEMORY,), node_selector={"lahar.example/memory": "high"}
)
GPU_WORK = Work(
    {"cpu": "10", "memory": "80Gi", GPU: "1"},
    (GPUS,),
    node_selector={"nvidia.com/gpu.product": "A100-SXM4-40GB"},
    tolerations=({"key": GPU, "operator": "Exists"},),
)
# The work of gang g: by g % 20.
WORKS = (CPU_WORK,) * 14 + (MEMORY_WORK,) * 4 + (GPU_WORK,) * 2
# Queue (its namespace): by gang number, in turn.
QUEUES = (
    ("research-vision", "vision"),
    ("research-nlp", "nlp"),
    ("prod", "prod"),
    ("batch", "batch"),
    ("default", "default"),
)
RUNNING_RUN_TIMES = ("2h", "1h-4h", "8h", None, None)  # by gang number: 3 in 5 say one
# How long ago they started, at most (minutes): within what they say, so none is overdue.
RUNNING_SINCE = (120, 240, 480, 720, 720)
PENDING_RUN_TIMES = ("1h", "30m-2h", "3h", None)

ASKED = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: whatif-train
  namespace: vision
  annotations:
    lahar.io/expected-run-time: 2h
spec:
  schedulerName: lahar
  queue: research-vision
  minAvailable: 8
  priorityClassName: batch
  tasks:
    - name: worker
      replicas: 8
      template:
        spec:
          restartPolicy: Never
          tolerations:
            - {key: dedicated, operator: Exists}
          containers:
            - name: main
              image: registry.example.com/train:1.0
              resources:
                requests: {cpu: "3500m", memory: 14Gi}
"""


# -- the cluster -------------------------------------------------------------------------------


class Nodes:
    """The nodes' free capacity, to bind pods where they fit (first fit from where the last pod
    of that work went: the nodes fill in turn, as under binpack)."""

    def __init__(self, machines: list[tuple[str, Machine, bool]]) -> None:
        self.machines = machines
        self.free = [_units(machine.allocatable) for _, machine, _ in machines]
        self._cursor: dict[tuple[str, ...], int] = {}

    def bind(self, work: Work, count: int) -> list[str] | None:
        """The nodes `count` pods of `work` go to, taken from the free capacity; None when
        they do not all fit (nothing is taken)."""
        need = _units(work.requests)
        kinds = tuple(m.instance_type for m in work.machines)
        start = self._cursor.get(kinds, 0)
        taken: list[int] = []
        left: dict[int, dict[str, int]] = {}  # what the nodes taken from would have left
        size = len(self.machines)
        for step in range(size):
            index = (start + step) % size
            _, machine, cordoned = self.machines[index]
            if cordoned or machine not in work.machines:
                continue
            room = left.setdefault(index, dict(self.free[index]))
            while len(taken) < count and all(room.get(k, 0) >= v for k, v in need.items()):
                for k, v in need.items():
                    room[k] -= v
                taken.append(index)
            if len(taken) == count:
                for at, room in left.items():
                    self.free[at] = room
                self._cursor[kinds] = index
                return [self.machines[i][0] for i in taken]
        return None

    def take(self, index: int, requests: dict[str, str]) -> None:
        """A pod bound to node `index` whatever it has left (a DaemonSet's)."""
        for k, v in _units(requests).items():
            self.free[index][k] -= v

    def used(self, resource: str) -> float:
        total = sum(_units(m.allocatable).get(resource, 0) for _, m, _ in self.machines)
        left = sum(f.get(resource, 0) for f in self.free)
        return (total - left) / total if total else 0.0


def _units(amounts: dict[str, str]) -> dict[str, int]:
    units = {k: int(parse_quantity(v) * (1000 if k == "cpu" else 1)) for k, v in amounts.items()}
    return units | {"pods": 1} if "pods" not in amounts else units


def cluster(
    nodes: int,
    gangs: int,
    *,
    machines: tuple[Machine, ...] = MACHINES,
    works: tuple[Work, ...] = WORKS,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """The lists of a cluster of `nodes` nodes (node i of `machines[i % len]`) and `gangs`
    running gangs (gang g doing `works[g % len]`), by `RawCluster` field; and what it holds
    (counts, how full)."""
    listed = [
        (f"node-{i:05d}", machines[i % len(machines)], i % CORDONED_EVERY == CORDONED_EVERY // 2)
        for i in range(nodes)
    ]
    room = Nodes(listed)
    lists: dict[str, list[dict[str, Any]]] = {f.name: [] for f in fields(RawCluster)}
    for name in ("absent", "resource_versions"):
        del lists[name]
    lists["nodes"] = [node_json(i, m, cordoned=c) for i, (_, m, c) in enumerate(listed)]
    lists["priority_classes"] = [
        priority_class_json("batch", 100),
        priority_class_json("batch-high", 1000),
        priority_class_json("system-node-critical", 2000001000),
    ]
    lists["queues"] = [
        queue_json("root"),
        queue_json("default"),
        queue_json("research", weight=4),
        queue_json("research-vision", weight=2, parent="research"),
        queue_json("research-nlp", weight=1, parent="research"),
        queue_json("prod", weight=4, reclaimable=False),
        queue_json("batch", weight=1),
    ]
    pods = lists["pods"]
    daemon = {"cpu": "100m", "memory": "180Mi"}
    for index in range(0, nodes, 2):  # a node exporter on every second node
        node = listed[index][0]
        room.take(index, daemon)
        member = Member(
            f"node-exporter-{index:05d}",
            "monitoring",
            "",
            "node-exporter",
            requests=daemon,
            priority_class="system-node-critical",
            priority=2000001000,
            scheduler="default-scheduler",
            tolerations=({"operator": "Exists"},),
            owner=("apps/v1", "DaemonSet"),
            created=rfc3339(TAKEN_AT - 86400 * 30),
            started=rfc3339(TAKEN_AT - 86400 * 30),
        )
        pods.append(pod_json(len(pods), node, "", member))
    unplaced = 0
    for g in range(gangs):
        minutes = 5 + (g * 37) % (RUNNING_SINCE[g % len(RUNNING_SINCE)] - 10)
        started = TAKEN_AT - minutes * 60
        work = works[g % len(works)]
        bound = room.bind(work, GANG)
        if bound is None:
            unplaced += 1
            continue
        _gang(
            lists,
            f"train-{g:05d}",
            g,
            work=work,
            nodes=bound,
            at=started,
            run_times=RUNNING_RUN_TIMES,
        )
    pending_pods = round(gangs * PENDING_PER_GANG)
    p = made = 0
    while made < pending_pods:
        size = min(PENDING_SIZES[p % len(PENDING_SIZES)], pending_pods - made)
        created = TAKEN_AT - (1 + (p * 13) % 240) * 60
        work = works[(p * 7) % len(works)]
        _gang(
            lists,
            f"queued-{p:04d}",
            gangs + p,
            work=work,
            nodes=[""] * size,
            at=created,
            run_times=PENDING_RUN_TIMES,
        )
        made, p = made + size, p + 1
    held = {
        "nodes": nodes,
        "cordoned": sum(1 for *_, c in listed if c),
        "pods": len(pods),
        "running gangs": gangs - unplaced,
        "running gangs that did not fit": unplaced,
        "pending gangs": p,
        "pending pods": pending_pods,
        "DaemonSet pods": len(range(0, nodes, 2)),
        "cpu bound": f"{room.used('cpu'):.0%}",
        "gpus bound": f"{room.used(GPU):.0%}",
    }
    return lists, held


def _gang(
    lists: dict[str, list[dict[str, Any]]],
    name: str,
    number: int,
    *,
    work: Work,
    nodes: list[str],
    at: float,
    run_times: tuple[str | None, ...],
) -> None:
    """One Volcano Job of `len(nodes)` workers with its PodGroup and pods: running on `nodes`
    since `at`, or (nodes "") created at `at` and waiting."""
    queue, namespace = QUEUES[number % len(QUEUES)]
    running = all(nodes)
    uid = f"{number:08x}-0000-4000-8000-{number:012x}"
    group = f"{name}-{uid}"  # (as Volcano names a Job's PodGroup)
    run_time = run_times[number % len(run_times)]
    annotations = {RUN_TIME_ANNOTATION: run_time} if run_time else None
    created = rfc3339(at - 60 if running else at)
    high = queue == "prod"
    member = Member(
        "",
        namespace,
        group,
        name,
        requests=work.requests,
        priority_class="batch-high" if high else "batch",
        priority=1000 if high else 100,
        node_selector=work.node_selector,
        tolerations=work.tolerations,
        created=created,
        started=rfc3339(at) if running else None,
    )
    phase = "Running" if running else "Pending"
    lists["volcano_jobs"].append(
        job_json(
            name,
            uid,
            [(member, len(nodes))],
            queue=queue,
            phase=phase,
            created=created,
            annotations=annotations,
        )
    )
    lists["volcano_groups"].append(
        group_json(
            group,
            namespace=namespace,
            queue=queue,
            min_member=len(nodes),
            phase=phase if running else "Inqueue",
            annotations=annotations,
            created=created,
        )
    )
    pods = lists["pods"]
    for index, node in enumerate(nodes):
        pod = replace(member, name=pod_name(name, member.task, index))
        pods.append(pod_json(len(pods), node, group, pod))


def pages(items: list[dict[str, Any]], kind: str) -> Iterator[bytes]:
    """The list as the API server sends it, `PAGE` items a page."""
    for start in range(0, max(len(items), 1), PAGE):
        more = start + PAGE < len(items)
        meta = {"resourceVersion": "1000000", **({"continue": f"p{start}"} if more else {})}
        body = {"apiVersion": "v1", "kind": f"{kind}List", "metadata": meta}
        yield json.dumps({**body, "items": items[start : start + PAGE]}).encode()


# -- the measurement, in a process of its own --------------------------------------------------


@dataclass
class Phase:
    name: str
    wall: float = 0.0
    cpu: float = 0.0
    collected: float = 0.0  # seconds in the cyclic garbage collector
    rss: float | None = None  # MiB after it


class Warnings(logging.Handler):
    """Counts what the engine logs at WARNING and above (virtual time: `lahar whatif` prints only
    ERROR lines), unprinted."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class Collections:
    """The seconds the cyclic garbage collector has taken so far (gc.callbacks)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0
        gc.callbacks.append(self._called)

    def _called(self, moment: str, info: dict[str, int]) -> None:
        if moment == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began


class Clock:
    """Times phases: wall, cpu and collector seconds, added up per name in order."""

    def __init__(self) -> None:
        self.phases: dict[str, Phase] = {}
        self.collections = Collections()

    @contextmanager
    def phase(self, name: str, *, rss: bool = False) -> Iterator[None]:
        timed = self.phases.setdefault(name, Phase(name))  # (listed in the order begun)
        wall, cpu, collected = time.perf_counter(), time.process_time(), self.collections.seconds
        try:
            yield
        finally:
            timed.wall += time.perf_counter() - wall
            timed.cpu += time.process_time() - cpu
            timed.collected += self.collections.seconds - collected
            if rss:
                timed.rss = mib()


def timed_simulations(clock: Clock, played: list[SimulationOutcome]) -> type[Simulation]:
    """`Simulation` timing its setup, the taking up of the running gangs and its run, per
    Simulation of `whatif.ask` (the first `without`, the second `with`)."""

    class Timed(Simulation):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.label = args[2] if len(args) > 2 else kwargs["name"]
            with clock.phase(f"{self.label} setup"):
                super().__init__(*args, **kwargs)
            recover = self.engine.recover

            def recovering(*a: Any, **k: Any) -> Any:
                with clock.phase(f"{self.label} taken up"):
                    return recover(*a, **k)

            self.engine.recover = recovering  # type: ignore[method-assign]

        def _resume(self, job: Any) -> None:
            with clock.phase(f"{self.label} taken up"):
                super()._resume(job)

        def run(self) -> SimulationOutcome:
            with clock.phase(f"{self.label} run"):
                outcome = super().run()
            played.append(outcome)
            return outcome

    return Timed


def measure(directory: str, options: dict[str, Any], out: Any) -> None:
    """Every phase from the pages in `directory` to the answer; the figures into `out`."""
    os.sched_setaffinity(0, {options["cpu"]})
    logger = logging.getLogger("extender")
    logger.setLevel(logging.WARNING)  # (to count them; `lahar whatif` prints ERROR only)
    logger.propagate = False
    warned = Warnings()
    logger.addHandler(warned)
    policy = load_policy(Path(options["policy"]), REGISTRY)
    files = sorted(Path(directory).glob("*.json"))
    clock = Clock()
    empty = mib()
    profile = cProfile.Profile() if options["profile"] else None
    if profile is not None:
        profile.enable()
    lists: dict[str, list[dict[str, Any]]] = {}
    loading = from_cluster.load_state

    def load_state(raw: RawCluster) -> ClusterState:
        with clock.phase("load_state"):
            return loading(raw)

    from_cluster.load_state = load_state
    with young_collections_every():  # (as `cluster_snapshot.take` lists and snapshots)
        for path in files:  # (read apart: the client reads each page off the socket)
            body = path.read_bytes()
            with clock.phase("decode"):
                kind = path.stem.rsplit("-", 1)[0]
                lists.setdefault(kind, []).extend(json.loads(body)["items"])
            del body
        raw = RawCluster(**cast(dict[str, Any], lists))
        clock.phases["decode"].rss = mib()
        with clock.phase("snapshot", rss=True):
            taken = from_cluster.snapshot(raw, TAKEN_AT, RunHistory())
            del raw, lists  # (as `take` lets the lists go once the trace is made)
    trace = taken.trace
    with clock.phase("read_job", rss=True):
        asked = read_job(ASKED, trace, namespace="vision", history=RunHistory())
    if isinstance(asked, Refused):
        raise SystemExit(f"the Job asked about was refused: {asked.message}")
    played: list[SimulationOutcome] = []
    whatif.Simulation = timed_simulations(clock, played)  # type: ignore[attr-defined]
    with clock.phase("ask", rss=True):
        answer = whatif.ask(trace, asked.job, policy, horizon=options["horizon"] * 3600)
    if profile is not None:
        profile.disable()
        profile.dump_stats(options["profile"])
    out.put(
        {
            "phases": list(clock.phases.values()),
            "empty": empty,
            "peak": mib("VmHWM"),
            "answer": whatif_words.lines(answer),
            "warnings": warned.count,
            "trace": {
                "node groups": len(trace.nodes),
                "jobs": len(trace.jobs),
                "of them running": sum(1 for j in trace.jobs if j.in_progress),
                "occupied nodes": len(trace.occupied),
                "left out": len(taken.limits.left_out),
                "pending elsewhere": len(taken.limits.pending_elsewhere),
            },
            "runs": [(o.policy, o.end, o.attempts, o.preemptions, len(o.stuck)) for o in played],
        }
    )


ROWS = (
    ("decode", "decode: json.loads of every page"),
    ("snapshot", "from_cluster.snapshot"),
    ("load_state", "  of which load_state (the extender's models, a ClusterState)"),
    ("read_job", "job_input.read_job of one Job"),
    ("ask", "whatif.ask"),
)
RUNS = (
    ("setup", "setup (the trace into a ClusterState)"),
    ("taken up", "running gangs taken up at 0"),
    ("run", "run to the end or the horizon"),
)


def report(figures: dict[str, Any], held: dict[str, Any], args: argparse.Namespace) -> None:
    timed: dict[str, Phase] = {p.name: p for p in figures["phases"]}
    rows = [_row(label, timed[key]) for key, label in ROWS]
    simulated = Phase("simulated")
    for name in ("without", "with"):
        setup, taken_up, run = (timed.get(f"{name} {part}", Phase("")) for part, _ in RUNS)
        for phase in (setup, run):
            simulated.wall += phase.wall
            simulated.cpu += phase.cpu
        rest = Phase(
            "",
            run.wall - taken_up.wall,
            run.cpu - taken_up.cpu,
            run.collected - taken_up.collected,
        )
        for (_, label), phase in zip(RUNS, (setup, taken_up, rest), strict=True):
            rows.append(_row(f"  {name}: {label}", phase))
    ask = timed["ask"]
    rest = Phase("", ask.wall - simulated.wall, ask.cpu - simulated.cpu)
    rows.append(_row("  the comparison, the answer", rest))
    top = [timed[key] for key in ("decode", "snapshot", "read_job", "ask")]
    total = Phase(
        "",
        sum(p.wall for p in top),
        sum(p.cpu for p in top),
        sum(p.collected for p in top),
    )
    rows.append(_row("total, decode to answer", total))
    print(f"lahar whatif on {args.nodes} nodes, {held['pods']} pods, one core (cpu {args.cpu}):")
    print("  " + ", ".join(f"{k} {v}" for k, v in held.items()))
    print("  trace: " + ", ".join(f"{k} {v}" for k, v in figures["trace"].items()))
    for name, end, attempts, preemptions, stuck in figures["runs"]:
        print(
            f"  run {name}: ended at {end / 3600:.1f} h, {attempts} scheduling attempts, "
            f"{preemptions} preemptions, {stuck} jobs not finished"
        )
    print()
    print(table(("PHASE", "WALL S", "CPU S", "GC S", "RSS MIB"), rows))
    print()
    warned = figures["warnings"]
    print(f"lines the engine logged at WARNING (virtual time; lahar whatif prints none): {warned}")
    empty, peak = figures["empty"], figures["peak"]
    print(f"RSS of the empty process {empty:.1f} MiB, peak (VmHWM) {peak:.1f} MiB")
    print(f"under 10 s on one core: {'yes' if total.wall < 10 else 'no'} ({total.wall:.1f} s)")
    if args.profile:
        print(f"(under cProfile: the times above are inflated; profile in {args.profile})")
    print()
    print("the answer:")
    for line in figures["answer"]:
        print(f"  {line}")
    print()
    print("command: " + shlex.join([".venv/bin/python", "benchmarks/whatif.py", *sys.argv[1:]]))


def _row(label: str, phase: Phase) -> tuple[str, ...]:
    return (
        label,
        f"{phase.wall:.2f}",
        f"{phase.cpu:.2f}",
        f"{phase.collected:.2f}" if phase.collected else "",
        f"{phase.rss:.0f}" if phase.rss is not None else "",
    )


def print_profile(path: str, count: int) -> None:
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        stats = pstats.Stats(path, stream=text)
        stats.sort_stats(order).print_stats(count)
        print(f"cProfile, the {count} functions first by {order}:")
        print("\n".join(text.getvalue().splitlines()[6:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=1000, help="running gangs of 8 pods")
    parser.add_argument("--horizon", type=float, default=24.0, help="hours played")
    parser.add_argument("--policy", default=str(default_policy()), help="a Lahar policy file")
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--profile", metavar="FILE", help="run under cProfile, dump into FILE")
    parser.add_argument("--top", type=int, default=30, help="functions printed with --profile")
    parser.add_argument(
        "--one-machine",
        action="store_true",
        help="every node a 32-cpu machine, every gang plain (no GPUs, selectors or taints)",
    )
    args = parser.parse_args()
    if args.one_machine:
        lists, held = cluster(args.nodes, args.gangs, machines=(M6I,), works=(CPU_WORK,))
    else:
        lists, held = cluster(args.nodes, args.gangs)
    kinds = {f.name: f.name.title().replace("_", "") for f in fields(RawCluster)}
    context = multiprocessing.get_context("spawn")  # (inherits none of the parent's memory)
    with tempfile.TemporaryDirectory(prefix="lahar-whatif-bench-") as directory:
        for name, items in lists.items():
            for number, page in enumerate(pages(items, kinds[name])):
                Path(directory, f"{name}-{number:04d}.json").write_bytes(page)
        held["list bytes"] = f"{_size(directory) / 2**20:.1f} MiB"
        del lists
        out = context.Queue()
        options = {
            "cpu": args.cpu,
            "policy": args.policy,
            "horizon": args.horizon,
            "profile": args.profile,
        }
        child = context.Process(target=measure, args=(directory, options, out))
        child.start()
        while True:
            try:
                figures = out.get(timeout=1.0)
                break
            except queue.Empty:
                if not child.is_alive():
                    ended = f"the measuring process ended, exit code {child.exitcode}"
                    raise SystemExit(ended) from None
        child.join()
    report(figures, held, args)
    if args.profile:
        print()
        print_profile(args.profile, args.top)


def _size(directory: str) -> int:
    return sum(path.stat().st_size for path in Path(directory).iterdir())


if __name__ == "__main__":
    main()
