"""One simulation: a trace played against one policy on virtual time, and what happened.

The simulation plays the API server and the kubelets: jobs arrive at their time (a PodGroup and
its pods, as Volcano's controller makes them), a bind sets the pod Running on its node, a job
starts when `minAvailable` of its pods run, and each pod ends `duration` seconds after its job
started (a pod bound later, that long after its bind). A job ends when every one of its pods
has run and ended, as a Volcano Job completes once all its replicas finished (with
`minAvailable` below the replicas, the others run as room allows). Lahar's preemption evicts
whole victim jobs, which restart (Volcano's PodEvicted -> RestartJob): new pods, waiting
again; each job keeps its waits to start (from its arrival, or a restart, to its start), which
the report's shares per tree level read. Everything Lahar decides goes through `scheduler` and
`preemption.loop`, the extender's own code (this module evicts and keeps the virtual time).

The run ends when every job has ended, or when nothing moved (no bind, end or eviction) for
`idle_limit` seconds with no pod running towards its end and no job still to arrive: the jobs
left are stuck (pods bound part of a gang wait for the rest forever under the stock policy), and
the run counts as ending `idle_limit` after the last move.

A trace with an autoscaled pool runs its autoscaler (`simulate.autoscaler`) beside the scheduler:
told of every move and every pod the scheduler parks, of each pod bound to a node and leaving
it, and asked at the end what it bought (`SimulationOutcome.pool`). `scale_up` is the scale-up
mode every queue of the run carries (`lahar.io/scale-up`; None: the queues say nothing and the
policy's `gang.scaleUp` holds).

A trace taken from a running cluster starts where the cluster was. Before the scheduler starts,
each job in progress is taken up at time 0: its PodGroup and its bound pods are created Running on
their nodes (their intervals open at 0); a job that had started (`TraceJob.started`, before 0)
keeps that start (`SimulatedJob.started`, negative; `resumed` says so, and summaries count no wait
of its from before time 0) and its bound pods end `duration` less the time it had run by 0 (at 0
if that is past); its pending pods go to the scheduler, and a gang found partly bound is
completed first, as the extender does after a restart (`Engine.recover`). What pods Lahar does
not schedule take on a node (`Trace.occupied`) is held by one pod bound there that never ends. A
run given a `horizon` stops there (the run ends then, jobs not started by then never started;
one given `until_started` ends once those jobs have all started),
and `SimulationOutcome.evictions` names who preempted whom when. The outcome says why the run
ended (`Ended`): every job ended, every job awaited started, the horizon came, or nothing moved
and nothing would (the jobs left are stuck). Jobs arriving at the same moment are handed over
in the trace's order, in one callback per moment (asyncio's timers due at one moment do not
keep the order they were set in, and the scheduler's order among pods created at one moment
follows their arrival).

A long run says how far it got: `on_progress` is handed a `Progress` at most every
`progress_every` wall seconds, when something moves, and once where the run ended (`lahar
simulate` shows it on a terminal).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from enum import StrEnum

from extender.actions.bind import BindError
from extender.api.objects import Pod, PodStatus
from extender.api.scale_up import Mode
from extender.api.scheduling import task_of
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, Preemption
from extender.framework.policy import Policy
from extender.simulate import world
from extender.simulate.autoscaler import Autoscaler, PoolRecord
from extender.simulate.clock import Clock, run, watched
from extender.simulate.collector import young_collections_every
from extender.simulate.scheduler import Scheduler, binder_of
from extender.simulate.trace import Trace, TraceJob


@dataclass
class SimulatedJob:
    job: TraceJob
    arrived: float | None = None
    started: float | None = None  # first start (before 0: it ran at time 0, `resumed`)
    finished: float | None = None
    restarts: int = 0
    incarnation: int = 0
    # Uids of its pods on nodes now, in the order they were bound (their ends, due at one
    # moment when the job starts, are set in that order: a run does not hang on hashing).
    running: dict[str, None] = field(default_factory=dict)
    succeeded: int = 0
    started_now: bool = False  # the current incarnation has started
    bound_now: list[Interval] = field(default_factory=list)  # the current incarnation's pods
    waits: list[Wait] = field(default_factory=list)  # per incarnation, its wait to start
    # It had started before time 0 and was taken up running: its wait to that start is not the
    # run's (it has none in `waits`, and summaries leave it out of the waits).
    resumed: bool = False

    @property
    def waiting(self) -> bool:
        return bool(self.waits) and self.waits[-1].until is None


@dataclass
class Wait:
    """A job waiting to start: from its arrival, or the restart a preemption caused, until
    `minAvailable` of its pods ran (None: it never started again)."""

    since: float
    until: float | None = None


@dataclass
class Interval:
    """A pod on a node, from bind to end (None: still there when the run ended)."""

    node: str
    job: str
    queue: str
    incarnation: int
    cpu: int  # millicores
    start: float
    end: float | None = None
    useful_from: float | None = None  # when its job had started (it made progress from then)
    evicted: bool = False  # preempted, or its job restarted for one: its progress was lost
    pod: str = ""  # its name (a member recreated after an eviction keeps it)


@dataclass(frozen=True)
class Eviction:
    """A preemption: when, the job it made room for and the jobs it evicted pods of (whole, or
    spare members), named as `SimulationOutcome.jobs` names them."""

    at: float
    preemptor: str
    victims: tuple[str, ...]


class Ended(StrEnum):
    """Why a run ended."""

    FINISHED = "finished"  # every job ended
    STARTED = "started"  # every job awaited (`until_started`) started
    HORIZON = "horizon"  # at the horizon, jobs not started by then never started
    IDLE = "idle"  # nothing moved for `idle_limit` and nothing would: the jobs left are stuck


@dataclass
class SimulationOutcome:
    policy: str
    trace: Trace
    jobs: dict[str, SimulatedJob]
    intervals: list[Interval]
    preemptions: int
    end: float
    attempts: int  # scheduling attempts (pods tried)
    seconds: float  # wall-clock time the simulation took
    pool: PoolRecord | None = None  # what the autoscaler bought (a trace with a pool)
    evictions: list[Eviction] = field(default_factory=list)
    ended: Ended = Ended.FINISHED

    @property
    def stuck(self) -> list[str]:
        return [name for name, record in self.jobs.items() if record.finished is None]


@dataclass(frozen=True)
class Progress:
    """How far a run got: the simulated time, the trace's jobs arrived, started and finished
    so far, and the wall seconds it took."""

    policy: str
    now: float
    jobs: int
    arrived: int
    started: int
    finished: int
    wall: float


class Simulation:
    def __init__(
        self,
        trace: Trace,
        policy: Policy,
        name: str,
        *,
        seed: int = 0,
        idle_limit: float = 3600,
        on_progress: Callable[[Progress], None] | None = None,
        progress_every: float = 2.0,
        scale_up: Mode | None = None,
        horizon: float | None = None,
        until_started: Collection[str] | None = None,
    ) -> None:
        """`until_started`: job keys; the run ends once every one of them has started (a
        what-if asks nothing of the run after that), at the horizon at the latest."""
        if horizon is not None and not horizon > 0:
            raise ValueError(f"horizon: the run stops at a time after 0, not {horizon!r}")
        self.trace, self.name, self.idle_limit = trace, name, idle_limit
        self.horizon = horizon
        self._at_horizon = False  # the run stopped at its horizon
        self._awaited = None if until_started is None else set(until_started)
        self._settled = False  # the run stopped: every job awaited had started
        self.on_progress, self.progress_every = on_progress, progress_every
        self.clock = Clock()
        self.state = ClusterState(clock=self.clock)
        self.engine = Engine(policy, clock=self.clock, events=self.state.events)
        self.scheduler = Scheduler(self.state, self.engine, binder_of(self._bound), seed=seed)
        self.jobs = {job.key: SimulatedJob(job) for job in trace.jobs}
        self._by_gang = {job.gang_key: job.key for job in trace.jobs}  # gang key -> job key
        self.intervals: list[Interval] = []
        self.evictions: list[Eviction] = []
        self._open: dict[str, Interval] = {}  # uid -> its interval
        self._job_of: dict[str, str] = {}  # uid -> job key
        self.preemptions = 0
        self.progress = 0
        self._moved_at = 0.0  # when something last moved
        self._ending = 0  # pods running towards a known end
        arriving = [job for job in trace.jobs if not job.in_progress]  # (the rest are there)
        self._arrivals = len(arriving)
        self._arrival_times = sorted(job.arrival for job in arriving)  # (they come in order)
        self._started = self._finished = 0  # jobs
        self._began = self._reported = 0.0  # wall clock: when `run` began, last reported
        self._all_done = asyncio.Event()
        for node in world.nodes(trace):
            self.state.upsert_node(node)
        for hyper_node in world.hyper_nodes(trace):
            self.state.upsert_hyper_node(hyper_node)
        for queue in world.queues(trace, scale_up):
            self.state.upsert_queue(queue)
        for priority_class in world.priority_classes(trace):
            self.state.upsert_priority_class(priority_class)
        for taken in trace.occupied:
            self.state.upsert_pod(world.occupied(taken))
        self.autoscaler: Autoscaler | None = None
        if trace.autoscaling is not None:
            self.autoscaler = autoscaler = Autoscaler(
                trace.autoscaling,
                trace.node_names,
                self.state,
                self.engine,
                self.scheduler,
                joined=self._joined,
            )
            self.scheduler.on_parked.append(lambda pod: autoscaler.poke())

    def run(self) -> SimulationOutcome:
        self._began = self._reported = time.perf_counter()
        with young_collections_every():
            run(self._main(), self.clock)
            if self.on_progress is not None:  # where it ended, however soon after the last
                self._report(time.perf_counter())
        end = max((r.finished or 0.0 for r in self.jobs.values()), default=0.0)
        ended = Ended.FINISHED
        if self._settled:
            end, ended = self.clock.now, Ended.STARTED
        elif self._at_horizon:
            assert self.horizon is not None
            end, ended = self.horizon, Ended.HORIZON
        elif any(r.finished is None for r in self.jobs.values()):
            # (watched that long after the last move)
            end, ended = self._moved_at + self.idle_limit, Ended.IDLE
        return SimulationOutcome(
            self.name,
            self.trace,
            self.jobs,
            self.intervals,
            self.preemptions,
            end,
            self.scheduler.attempts,
            time.perf_counter() - self._began,
            self.autoscaler.record(end) if self.autoscaler is not None else None,
            self.evictions,
            ended,
        )

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        in_progress = [job for job in self.trace.jobs if job.in_progress]
        for job in in_progress:
            self._resume(job)
        if in_progress:
            self.engine.recover(self.state)  # (partly bound gangs first, as after a restart)
        background = [watched(loop.create_task(self.scheduler.run()))]
        # Lahar's preemption loop on the simulated cluster, woken only by refusals and with no
        # pause between gangs: a pass, like a scheduling attempt here, takes no time.
        preempting = self.engine.start_preemption(
            self.state,
            carry_out=self._evict,
            sleep=asyncio.sleep,  # (on the simulation's loop: virtual time)
            polling=False,
            pausing=False,
        )
        if preempting is not None:
            background.append(watched(loop.create_task(self.engine.preempting())))
        arriving: dict[float, list[TraceJob]] = {}  # (in the trace's order at each moment)
        for job in self.trace.jobs:
            if not job.in_progress:
                arriving.setdefault(job.arrival, []).append(job)
        for moment, jobs in arriving.items():
            loop.call_at(moment, self._arrive_all, jobs)
        if self.horizon is not None:
            loop.call_at(self.horizon, self._stop)
        if not self.jobs:
            self._all_done.set()
        self._settle()  # (every job awaited may be running already)
        while not self._all_done.is_set():
            before = self.progress
            watch = self.idle_limit
            if self._arrivals and not self._ending:  # (to the next arrival at once, however far)
                upcoming = self._arrival_times[len(self._arrival_times) - self._arrivals]
                watch = max(watch, upcoming - self.clock.now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_done.wait(), timeout=watch)
            if self.progress == before and not self._ending and not self._arrivals:
                break  # nothing moved and nothing will: the jobs left are stuck
        for task in background:
            task.cancel()

    def _moved(self) -> None:
        self.progress += 1
        self._moved_at = self.clock.now
        if self.autoscaler is not None:
            self.autoscaler.poke()
        if self.on_progress is not None:
            wall = time.perf_counter()
            if wall - self._reported >= self.progress_every:
                self._reported = wall
                self._report(wall)

    def _report(self, wall: float) -> None:
        assert self.on_progress is not None
        jobs = len(self.jobs)
        arrived = jobs - self._arrivals
        self.on_progress(
            Progress(
                self.name,
                self.clock.now,
                jobs,
                arrived,
                self._started,
                self._finished,
                wall - self._began,
            )
        )

    # -- the API server and the kubelets --------------------------------------------------------

    def _joined(self) -> None:
        """A node the autoscaler bought joined: a move, and a cluster event for parked pods."""
        self._moved()
        self.scheduler.requeue()

    def _stop(self) -> None:
        """The horizon: the run ends here."""
        self._at_horizon = True
        self._all_done.set()

    def _settle(self) -> None:
        """The run ends here if every job it awaits has started."""
        if self._awaited is not None and not self._awaited and not self._all_done.is_set():
            self._settled = True
            self._all_done.set()

    def _arrive_all(self, jobs: list[TraceJob]) -> None:
        for job in jobs:
            self._arrive(job)

    def _arrive(self, job: TraceJob) -> None:
        self._arrivals -= 1
        self.jobs[job.key].arrived = self.clock.now
        self.jobs[job.key].waits.append(Wait(self.clock.now))
        self.state.upsert_pod_group(world.pod_group(job))
        self._create_pods(job, 0)
        self._moved()

    def _resume(self, job: TraceJob) -> None:
        """Take up a job in progress at time 0: its group, its bound pods Running on their
        nodes, a started job's pods running towards what is left of their duration, its
        pending pods handed to the scheduler."""
        record = self.jobs[job.key]
        record.arrived = 0.0
        self.state.upsert_pod_group(world.pod_group(job))
        pending = []
        for index, (pod, node) in enumerate(
            zip(world.pods(job, 0), job.bound_nodes(), strict=True)
        ):
            self._job_of[pod.metadata.uid] = job.key
            if node is None:
                self.state.upsert_pod(pod)
                pending.append((index, pod))
                continue
            spec = pod.spec.model_copy(update={"node_name": node})
            running = pod.model_copy(update={"spec": spec, "status": _phase("Running")})
            self.state.upsert_pod(running)
            self._placed(record, running, node, 0.0)
        if job.started is not None:
            record.resumed = True
            record.started = job.started
            record.started_now = True
            self._started += 1
            elapsed = -job.started
            for uid in record.running:
                self._run_to_end(uid, 0.0, left=elapsed)
        else:
            record.waits.append(Wait(0.0))
            if record.running and self._stands(record):
                self._start(record, 0.0)
        for index, pod in pending:
            self.scheduler.add(pod, (0.0, index))

    def _create_pods(self, job: TraceJob, incarnation: int) -> None:
        for index, pod in enumerate(world.pods(job, incarnation)):
            self._job_of[pod.metadata.uid] = job.key
            self.state.upsert_pod(pod)
            self.scheduler.add(pod, (self.clock.now, index))

    async def _bound(self, uid: str, node: str) -> None:
        pod = self.state.pods.get(uid)
        if pod is None:  # deleted meanwhile: the API server refuses its binding
            raise BindError(f"pod {uid} not found")
        spec = pod.spec.model_copy(update={"node_name": node})
        self.state.upsert_pod(pod.model_copy(update={"spec": spec, "status": _phase("Running")}))
        record = self.jobs[self._job_of[uid]]
        now = self.clock.now
        self._placed(record, pod, node, now)
        self._moved()
        if record.started_now:
            self._run_to_end(uid, now)
        elif self._stands(record):
            self._start(record, now)

    def _placed(self, record: SimulatedJob, pod: Pod, node: str, now: float) -> None:
        """The pod runs on `node` from `now`: its interval opens."""
        uid = pod.metadata.uid
        self._open[uid] = interval = Interval(
            node,
            record.job.key,
            record.job.queue,
            record.incarnation,
            pod.request["cpu"],
            now,
            pod=pod.metadata.name,
        )
        self.intervals.append(interval)
        if self.autoscaler is not None:
            self.autoscaler.bound(node)
        record.running[uid] = None
        record.bound_now.append(interval)

    def _stands(self, record: SimulatedJob) -> bool:
        """Enough of the job's pods run for it to start: minAvailable, and each task's own
        minimum."""
        job = record.job
        if not job.task_minimums:
            return len(record.running) >= job.minimum
        return job.stands(Counter(task_of(self.state.pods[uid]) for uid in record.running))

    def _start(self, record: SimulatedJob, now: float) -> None:
        """The job starts (this incarnation): its running pods run towards their end."""
        record.started_now = True
        record.waits[-1].until = now
        if record.started is None:
            record.started = now
            self._started += 1
            if self._awaited is not None:
                self._awaited.discard(record.job.key)
                self._settle()
        for member in record.running:
            self._run_to_end(member, now)

    def _run_to_end(self, uid: str, now: float, left: float = 0.0) -> None:
        """The pod makes progress from `now` and ends its task's duration later, less `left`
        seconds it ran already (at `now` at the earliest)."""
        self._open[uid].useful_from = now
        pod = self.state.pods[uid]
        task = next(t for t in self.jobs[self._job_of[uid]].job.tasks if task_of(pod) == t.name)
        self._ending += 1
        asyncio.get_running_loop().call_at(now + max(0.0, task.duration - left), self._end, uid)

    def _end(self, uid: str) -> None:
        pod = self.state.pods.get(uid)
        if pod is None or uid not in self._open:
            return  # evicted meanwhile
        self._ending -= 1
        self.state.upsert_pod(pod.model_copy(update={"status": _phase("Succeeded")}))
        self._close(uid)
        record = self.jobs[self._job_of[uid]]
        record.succeeded += 1
        if not record.running and record.succeeded >= record.job.size:
            self._finish(record)
        self._moved()
        self.scheduler.requeue()

    def _close(self, uid: str) -> None:
        interval = self._open.pop(uid)
        interval.end = self.clock.now
        if self.autoscaler is not None:
            self.autoscaler.left(interval.node)
        self.jobs[self._job_of[uid]].running.pop(uid, None)

    def _finish(self, record: SimulatedJob) -> None:
        if record.finished is None:
            self._finished += 1
        record.finished = self.clock.now
        key = record.job.gang_key
        for pod in self.state.gang_pods(key):
            self.state.delete_pod(pod.metadata.uid)
        self.state.delete_pod_group(key)
        if self._finished == len(self.jobs):
            self._all_done.set()

    # -- preemption -----------------------------------------------------------------------------

    async def _evict(self, preemption: Preemption) -> bool:
        """Evict the victims: a whole job restarts, a spare member is recreated. The simulated
        API server refuses no eviction."""
        self.preemptions += 1
        self._moved()
        preemptor = preemption.preemptor.key
        victims = dict.fromkeys(self._by_gang[unit.key] for unit in preemption.victims)
        self.evictions.append(
            Eviction(self.clock.now, self._by_gang.get(preemptor, preemptor), tuple(victims))
        )
        for unit in preemption.victims:
            record = self.jobs[self._by_gang[unit.key]]
            if unit.whole:  # the job restarts: every pod of it again, none running
                for pod in self.state.gang_pods(unit.key):
                    self._remove(pod)
                for interval in record.bound_now:  # (those that ended too: it runs them again)
                    interval.evicted = True
                record.bound_now = []
                record.restarts += 1
                record.incarnation += 1
                record.started_now = False
                record.succeeded = 0
                if not record.waiting:
                    record.waits.append(Wait(self.clock.now))
                self._create_pods(record.job, record.incarnation)
            else:  # a spare member: recreated, pending again
                for pod, _ in unit.pods:
                    self._remove(pod)
                    replacement = pod.model_copy(
                        update={
                            "metadata": pod.metadata.model_copy(
                                update={"uid": f"{pod.metadata.uid}+"}
                            ),
                            "spec": pod.spec.model_copy(update={"node_name": ""}),
                            "status": _phase("Pending"),
                        }
                    )
                    self._job_of[replacement.metadata.uid] = record.job.name
                    self.state.upsert_pod(replacement)
                    self.scheduler.add(replacement, (self.clock.now, 0))
        self.scheduler.requeue()
        return True

    def _remove(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        if uid in self._open:
            if self._open[uid].useful_from is not None:
                self._ending -= 1
            self._open[uid].evicted = True
            self._close(uid)
        self.state.delete_pod(uid)


def _phase(phase: str) -> PodStatus:
    return PodStatus(phase=phase)


def simulate(
    trace: Trace,
    policy: Policy,
    name: str,
    *,
    seed: int = 0,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: float = 2.0,
    scale_up: Mode | None = None,
    horizon: float | None = None,
) -> SimulationOutcome:
    simulation = Simulation(
        trace,
        policy,
        name,
        seed=seed,
        on_progress=on_progress,
        progress_every=progress_every,
        scale_up=scale_up,
        horizon=horizon,
    )
    return simulation.run()
