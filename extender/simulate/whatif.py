"""What a Job would meet if it were submitted now: when it starts, where, whom it evicts, whom it
delays, or why it would not start. `lahar whatif -f` answers with this.

The snapshot (a trace of the running cluster, `simulate.from_cluster`) is played twice through
the real engine in virtual time: as it is, and with the Job arriving at time 0, after every gang
already pending (it is the newest). The Job joins the snapshot by `Trace.with_job`, refused as
the trace would refuse it: a Job of its name or a pod of one of its pods' names is there already,
its queue is no leaf queue of the snapshot, it names a tier the snapshot lacks. Each run ends
once every gang pending at the snapshot (and the Job) has started, at the horizon at the latest.
Comparing them gives:

- the start: "now" when the Job's minimum runs within `NOW_WITHIN` seconds of virtual time (the
  first scheduling rounds), else the time it started;
- the range of that start, by the blocker rule: the gangs whose pods left the nodes it went to
  before it started are what it waited for, so its start moves with their ends: from the latest
  of their earliest ends to the latest of their latest ends (each end from its run-time range,
  `TraceJob.run_time`), shifted by the scheduling slack seen in the run. A blocker whose run time
  is unknown leaves the range open above;
- the nodes its first pods ran on, and the lowest HyperNode holding them all;
- whom it evicted (the evictions made for it) and the evictions only the second run has;
- the gangs pending at the snapshot whose start it moves later, or past the horizon;
- when it does not start: the engine's own explanation (`framework.explain`) at the end of the
  run, and why the run ended (`run.Ended`): nothing was left to move ("never with this
  policy"), or the horizon came first.

An estimate, and the answer says so: arrivals after now, pods of other schedulers that are
pending, node failures and the extender's reservations are not in the snapshot. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from extender.framework.engine import Topology
from extender.framework.explain import explain
from extender.framework.policy import Policy
from extender.simulate.collector import frozen
from extender.simulate.run import Ended, Eviction, Simulation, SimulationOutcome
from extender.simulate.trace import JobRefusal, JobRefused, Trace, TraceJob

NOW_WITHIN = 10.0  # seconds of virtual time: the first rounds of scheduling and backoff
MOVED = 1.0  # a start later than this by more than this is a delay
HORIZON = 24 * 3600.0
IDLE_LIMIT = 3600.0  # nothing moving this long, a run has settled (`Simulation`'s default)
SETTLES = 600.0  # yet never less: longer than the policy's timers (backoff, barrier, sla...)


@dataclass(frozen=True)
class Blocker:
    """A gang whose end the Job waited for: when it ended in the run, and the range its run
    time allows (seconds from the snapshot; `high` infinite when its run time is unknown)."""

    job: str
    ended: float
    low: float
    high: float
    source: str


@dataclass(frozen=True)
class Delay:
    """A gang pending at the snapshot that starts later with the Job (None: not within the
    horizon)."""

    job: str
    before: float | None
    after: float | None


@dataclass(frozen=True)
class Answer:
    job: str
    start: float | None  # seconds from the snapshot; None: not within the horizon
    low: float | None  # the range of the start (the blocker rule)
    high: float | None
    nodes: tuple[str, ...]
    hyper_node: str | None
    blockers: tuple[Blocker, ...]
    victims: tuple[str, ...]  # gangs evicted to make room for the Job
    knock_on: tuple[str, ...]  # gangs evicted in the run with the Job and not in the run without
    delays: tuple[Delay, ...]
    reasons: tuple[str, ...]  # the engine's explanation when it does not start
    stuck: bool  # it does not start and nothing was left to move: never, with this policy
    horizon: float

    @property
    def now(self) -> bool:
        return self.start is not None and self.start <= NOW_WITHIN


def ask(
    trace: Trace,
    job: TraceJob,
    policy: Policy,
    *,
    horizon: float = HORIZON,
    seed: int = 0,
) -> Answer:
    """The answer for `job` submitted at the snapshot `trace` was taken, under `policy`."""
    try:
        asked = trace.with_job(job)
    except JobRefused as error:
        raise ValueError(_refused(job, error.refusal)) from None
    idle = _idle_limit(horizon)
    # Each run ends once every gang waiting at the snapshot (and the Job) has started: the
    # answer asks nothing of the runs after that.
    waiting = [j.key for j in trace.jobs if not j.in_progress]
    with frozen():  # (the snapshot stays out of the collector's walks: `simulate.collector`)
        base = Simulation(
            trace,
            policy,
            "without",
            seed=seed,
            horizon=horizon,
            idle_limit=idle,
            until_started=waiting,
        ).run()
        played = Simulation(
            asked,
            policy,
            "with",
            seed=seed,
            horizon=horizon,
            idle_limit=idle,
            until_started=[*waiting, job.key],
        )
        outcome = played.run()
    record = outcome.jobs[job.key]
    start = record.started
    nodes = _first_nodes(outcome, job.key)
    blockers = _blockers(outcome, asked, job.key, nodes, start)
    low, high = _range(start, blockers)
    topology = Topology.of(played.state)
    spanning = topology.spanning(nodes) if nodes and not topology.empty else None
    reasons: tuple[str, ...] = ()
    if start is None:
        reasons = explain(played.state, played.engine, job.gang_key).lines
    victims = _victims(outcome.evictions, job.key)
    evicted_anyway = {v for e in base.evictions for v in e.victims} | {job.key}
    knock_on = sorted(
        {
            v
            for e in outcome.evictions
            if e.preemptor != job.key
            for v in e.victims
            if v not in evicted_anyway
        }
    )
    return Answer(
        job=job.key,
        start=start,
        low=low,
        high=high,
        nodes=tuple(nodes),
        hyper_node=spanning.name if spanning is not None else None,
        blockers=tuple(blockers),
        victims=victims,
        knock_on=tuple(knock_on),
        delays=tuple(_delays(trace, base, outcome)),
        reasons=reasons,
        stuck=start is None and outcome.ended is Ended.IDLE,
        horizon=horizon,
    )


def _refused(job: TraceJob, refusal: JobRefusal) -> str:
    """Why the snapshot cannot take the Job, in the words of one asking about it."""
    if refusal.rule == "name":
        return (
            f"a Job {job.namespace}/{job.name} exists already (`lahar explain {job.name} -n "
            f"{job.namespace}` says why it waits); ask about a Job of another name"
        )
    if refusal.rule == "pod" and refusal.other != job.name:
        return (
            f"the Job would make pod {job.namespace}/{refusal.pod}, which exists already; rename it"
        )
    return f"the Job: {refusal}"


def _idle_limit(horizon: float) -> float:
    """How long a run watches with nothing moving before it counts the gangs left as stuck (it
    ends `Ended.IDLE`). Nothing tells a stuck gang from one a timer will move but that watch: a
    run settles up to twice this after its last move, and one that reaches its horizon first
    ends `Ended.HORIZON`, where a Job that could never start reads "not within the horizon"
    rather than "never". So a short horizon watches a quarter of itself, though never less than
    `SETTLES`."""
    return min(IDLE_LIMIT, max(SETTLES, horizon / 4))


def _first_nodes(outcome: SimulationOutcome, key: str) -> list[str]:
    """The nodes the job's first incarnation ran on, by name."""
    return sorted({i.node for i in outcome.intervals if i.job == key and i.incarnation == 0})


def _blockers(
    outcome: SimulationOutcome, trace: Trace, key: str, nodes: list[str], start: float | None
) -> list[Blocker]:
    """The gangs whose pods left the job's nodes after the snapshot and by its start."""
    if start is None or start <= NOW_WITHIN:
        return []
    on = set(nodes)
    ended: dict[str, float] = {}
    for interval in outcome.intervals:
        if interval.job == key or interval.node not in on or interval.evicted:
            continue
        if interval.end is not None and 0 < interval.end <= start:
            ended[interval.job] = max(ended.get(interval.job, 0.0), interval.end)
    jobs = {j.key: j for j in trace.jobs}
    blockers = []
    for name, end in sorted(ended.items(), key=lambda item: (item[1], item[0])):
        job = jobs[name]
        began = outcome.jobs[name].started
        expected = max(task.duration for task in job.tasks)
        run_time = job.run_time
        if began is None or run_time is None:
            blockers.append(Blocker(name, end, end, end, "as played"))
            continue
        low = max(0.0, began + run_time.low)
        high = max(0.0, began + run_time.high)
        shift = end - max(0.0, began + expected)  # (the pods' ends as played, less the estimate)
        blockers.append(Blocker(name, end, low + shift, high + shift, run_time.source))
    return blockers


def _range(start: float | None, blockers: list[Blocker]) -> tuple[float | None, float | None]:
    if start is None:
        return None, None
    if not blockers:
        return start, start
    last = max(b.ended for b in blockers)
    slack = start - last  # the rounds from the last blocker's end to the job's start
    low = max(b.low for b in blockers) + slack
    high = max(b.high for b in blockers) + slack
    return max(0.0, min(low, start)), max(high, start)


def _victims(evictions: Iterable[Eviction], key: str) -> tuple[str, ...]:
    return tuple(sorted({v for e in evictions if e.preemptor == key for v in e.victims}))


def _delays(trace: Trace, base: SimulationOutcome, asked: SimulationOutcome) -> list[Delay]:
    """The gangs pending at the snapshot that start later with the job, or no longer within
    the horizon."""
    delays = []
    for job in trace.jobs:
        if job.in_progress:
            continue
        before, after = base.jobs[job.key].started, asked.jobs[job.key].started
        if before is None:
            continue
        if after is None or after > before + MOVED:
            delays.append(Delay(job.key, before, after))
    return delays
