"""The autoscaler of a trace's autoscaled node pool, played as Cluster Autoscaler plays one node
group: ProvisioningRequests of the best-effort-atomic class, and pod-by-pod scale-up for the
pods kube-scheduler marked Unschedulable.

Cluster Autoscaler looks every `SCAN_INTERVAL` seconds. A pass here runs at such a tick when
something may have changed since the last one (a pod parked, bound or ended, a job arrived, a
node joined) or a moment of its own is due (a request's next try, a booking's end, an added
node's scale-down); a tick where nothing changed is skipped (the fair order moving with the clock
alone comes back through the scheduler's own reminders, as parked pods), so a run still goes
straight to its next arrival. A pass:

1. asks the engine which gangs want nodes (`Engine.want_nodes`, as the extender's waker does:
   their refusals are remembered for the provisioner; those in an `unschedulable` queue are
   *shown*, the gangs whose gate the waker would lift);
2. runs Lahar's provisioner (`simulate.provisioner`): requests made for gangs that want nodes,
   deleted for those that no longer do;
3. serves the requests, in the order they were made: Accepted; when due, its pods are fitted first
   fit onto the *room* it sees: the free room of the nodes in the cluster (each node's allocatable
   less the pods counted on it and what Lahar's admitted gangs reserve, whose members bind within
   moments on a real cluster), then the nodes bought and not joined yet (empty nodes of the pool's
   shape, as Cluster Autoscaler counts upcoming nodes), less what the requests Provisioned for gangs
   neither admitted nor standing book (their pods placed first); then onto new nodes of the pool's
   shape. If the pool stays within `maxNodes` with those new nodes it buys all of them (none, when
   the room has space for the pods) and says Provisioned; else it buys none, says Provisioned False
   (CapacityIsNotFound) and tries again 60 s later, doubling to 600 s. Provisioned capacity is
   booked for its gang for `BOOKING` seconds, then BookingExpired unless the gang stands. When a
   request became Provisioned or ended, the provisioner runs again at once (admitting a gang onto
   room that was there already; asking again for one whose booking expired once its retry is due, a
   pass coming then);
4. scales up pod by pod for the unschedulable pods it sees (`Scheduler.unschedulable`), in the
   order their gangs arrived: each fitted first fit onto the same room, then onto new nodes
   while the pool stays within `maxNodes`; a pod that fits the room of nodes present or coming
   gets no node. Under the stock policy it sees every such pod. Under Lahar's the pods carry no
   gate in the simulation (the scheduler tries them and Lahar refuses them at filter time, which
   costs nothing here), so it sees only the pods Lahar's gate would have let go and that are not
   on their way to the capacity their gang reserves: the members of gangs shown or standing
   (members beyond minMember), not of gangs admitted (the room counts what their slots reserve as
   taken) nor of gangs in a `provisioningRequest` queue (behind the gate, for their request);
5. removes each added node that had no bound pod for `scaleDownAfter` seconds since it joined or its
   last pod left, and that has no member waiting at the barrier and no admitted gang's slot (never a
   starting node).

A node joins `provisioningDelay` seconds after it was bought, at that moment rather than at a
tick: once every node joining at that moment has joined, the provisioner admits the gangs whose
request is Provisioned and now fit (in the plan's order: a gang may be admitted onto nodes bought
for another, as on a real cluster), then the scheduler retries its parked pods (a node added is
a cluster event). `record` says what was bought: each added node, when it was bought, joined and
removed, and the jobs whose pods it was bought for. A node still there when the run ended counts
until the autoscaler would have removed it (the first tick `scaleDownAfter` after it last had a
pod), or until the run's end while pods still sit on it. Pure: no I/O, virtual time.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from extender.api.objects import Pod
from extender.api.provisioning import (
    ACCEPTED,
    BOOKING_EXPIRED,
    ENDED,
    PROVISIONED,
    ProvisioningRequest,
    RequestCondition,
)
from extender.api.resources import EMPTY, Resources
from extender.api.scale_up import Mode
from extender.api.scheduling import gang_key
from extender.cache.state import ClusterState
from extender.framework.engine import Engine, queue_mode, view_gang
from extender.simulate import world
from extender.simulate.provisioner import Provisioner
from extender.simulate.scheduler import Scheduler
from extender.simulate.trace import Autoscaling, job_key

SCAN_INTERVAL = 10.0  # seconds: Cluster Autoscaler's --scan-interval
RETRY, RETRY_MAX = 60.0, 600.0  # a request it found no capacity for is tried again, doubling
BOOKING = 600.0  # seconds Provisioned capacity is booked for its pods (Cluster Autoscaler's)
NOT_FOUND = ("CapacityIsNotFound", "Capacity is not found, CA will try to find it later.")


@dataclass(frozen=True)
class AddedNode:
    """A node the autoscaler added: bought, joined the cluster, removed (or would have been,
    past the run's end), and the jobs whose pods it was bought for."""

    name: str
    bought: float
    joined: float
    removed: float
    jobs: tuple[str, ...]


@dataclass(frozen=True)
class PoolRecord:
    """What the autoscaler bought in one run."""

    starting: int  # the trace's nodes
    max_nodes: int  # the most added at once
    cores: float  # each added node's cpu, in cores
    scale_down_after: float
    nodes: tuple[AddedNode, ...]
    requests: int  # ProvisioningRequests Lahar made


@dataclass
class _Bought:
    name: str
    bought: float
    joined: float
    jobs: tuple[str, ...]
    removed: float | None = None
    pods: int = 0  # bound to it now
    empty_since: float | None = None  # since it joined or its last pod left (None: before)


@dataclass
class _Room:
    """Room to fit pods into, first fit: `free` (nodes present, then coming), then new nodes of
    `shape`, at most `spare` of them (None: no limit)."""

    free: list[Resources]
    shape: Resources
    spare: int | None
    new: list[Resources] = field(default_factory=list)
    jobs: list[dict[str, None]] = field(default_factory=list)  # per new node, the jobs on it

    def copy(self, spare: int | None) -> _Room:
        """A room to try a placement in, this one left as it is, with `spare` new nodes."""
        return _Room(list(self.free), self.shape, spare, list(self.new), list(self.jobs))

    def take(self, request: Resources) -> None:
        """Take room for a pod the room's nodes have space for already (a booked one), if they
        do."""
        for index, room in enumerate(self.free):
            if request.shortfall(room) is None:
                self.free[index] = room - request
                return

    def place(self, request: Resources, job: str) -> bool:
        for index, room in enumerate(self.free):
            if request.shortfall(room) is None:
                self.free[index] = room - request
                return True
        for index, room in enumerate(self.new):
            if request.shortfall(room) is None:
                self.new[index] = room - request
                self.jobs[index][job] = None
                return True
        if request.shortfall(self.shape) is not None:
            return False  # no node of the pool has space for it
        if self.spare is not None and len(self.new) >= self.spare:
            return False
        self.new.append(self.shape - request)
        self.jobs.append({job: None})
        return True


class Autoscaler:
    def __init__(
        self,
        pool: Autoscaling,
        starting: Iterable[str],
        state: ClusterState,
        engine: Engine,
        scheduler: Scheduler,
        *,
        joined: Callable[[], None],
    ) -> None:
        """`starting`: the trace's nodes, in order; `joined`: told when a node joined, after
        Lahar's provisioner looked (the simulation retries parked pods then)."""
        self.pool, self.state, self.engine, self.scheduler = pool, state, engine, scheduler
        self.joined = joined
        self.order = list(starting)  # first-fit order: the starting nodes, then those added
        self.starting = len(self.order)
        self.shape = world.node("shape", pool.nodes.allocatable).status.allocatable
        self.provisioner = Provisioner(state, engine) if engine.gang_rules else None
        if self.provisioner is not None:
            self.provisioner.on_deleted.append(self._forget)
        self._bought: dict[str, _Bought] = {}
        self._number = 0  # of the next node bought
        self._provisioned_at: dict[str, float] = {}
        self._tries: dict[str, tuple[int, float]] = {}  # request key -> (failed tries, next)
        self._ticks: set[float] = set()
        self._settling = False  # (nodes joined at this moment, the provisioner not run yet)
        self._last_pass = -math.inf

    # -- when to look ---------------------------------------------------------------------------

    def poke(self) -> None:
        """Something changed: look at the next tick."""
        self._at(asyncio.get_running_loop().time())

    def _at(self, when: float) -> None:
        """Look at the first tick at or after `when` (after the last pass)."""
        tick = math.ceil(when / SCAN_INTERVAL) * SCAN_INTERVAL
        if tick <= self._last_pass:
            tick = self._last_pass + SCAN_INTERVAL
        if tick not in self._ticks:
            self._ticks.add(tick)
            asyncio.get_running_loop().call_at(tick, self._pass, tick)

    # -- the simulation tells it ----------------------------------------------------------------

    def bound(self, node: str) -> None:
        """A pod was bound to `node`."""
        bought = self._bought.get(node)
        if bought is not None:
            bought.pods += 1

    def left(self, node: str) -> None:
        """A pod bound to `node` ended or was evicted."""
        bought = self._bought.get(node)
        if bought is not None:
            bought.pods -= 1
            if not bought.pods:
                now = asyncio.get_running_loop().time()
                bought.empty_since = now
                self._at(now + self.pool.scale_down_after)

    # -- a pass ---------------------------------------------------------------------------------

    def _pass(self, tick: float) -> None:
        self._ticks.discard(tick)
        self._last_pass = now = tick
        shown: set[str] = set()
        admitted: list[str] = []
        if self.provisioner is not None:
            default = self.engine.gang_settings.scale_up.default
            for key in self.engine.want_nodes(self.state):
                queue = view_gang(self.state, key).queue
                if queue_mode(self.state.queues, queue, default)[0] is Mode.UNSCHEDULABLE:
                    shown.add(key)
            admitted += self.provisioner.step(now)
            if self._serve_requests(now):  # (Lahar's provisioner sees the change at once)
                admitted += self.provisioner.step(now)
            again = self.provisioner.next_attempt(now)
            if again is not None:
                self._at(again)
        self._pod_by_pod(now, shown)
        self._scale_down(now)
        if admitted:
            self.scheduler.requeue()  # (the waker wakes a gang admitted onto its nodes)

    def _forget(self, key: str) -> None:
        """Request `key` was deleted: a request made again under its name is a new one."""
        self._tries.pop(key, None)
        self._provisioned_at.pop(key, None)

    def _serve_requests(self, now: float) -> bool:
        """Cluster Autoscaler's part for the requests (see the module's docstring); whether one
        became Provisioned or ended."""
        assert self.provisioner is not None
        changed = False
        free: _Room | None = None  # (worked out once a request is tried)
        for request in list(self.state.provisioning_requests.values()):
            key, phase = request.key, request.phase
            if phase in ENDED:
                continue
            if phase == PROVISIONED:
                since = self._provisioned_at.get(key, now)
                gang = request.gang
                stands = gang is not None and view_gang(self.state, gang).stands
                if now >= since + BOOKING and not stands:
                    self._say(request, BOOKING_EXPIRED, "True", "BookingExpired", "")
                    changed = True
                continue
            accepted = request
            if phase == "Pending":
                accepted = self._say(request, ACCEPTED, "True", "Accepted", "")
            tries, due = self._tries.get(key, (0, now))
            pods = self.provisioner.pods(request)
            if due > now or not pods or request.gang is None:
                continue
            if free is None:
                free = self._room(now, spare=None)
            job = job_key(request.gang)
            room = free.copy(spare=None)
            fits = all(room.place(pod.request, job) for pod in pods)
            if fits and self._billed() + len(room.new) <= self.starting + self.pool.max_nodes:
                self._buy(now, [(job,)] * len(room.new))
                # What it booked is taken for the requests after it; its new nodes are coming.
                free = _Room(room.free + room.new, self.shape, spare=None)
                self._provisioned_at[key] = now
                self._at(now + BOOKING)
                self._say(accepted, PROVISIONED, "True", "Provisioned", "")
                changed = True
            else:
                tries += 1
                wait = min(RETRY * 2 ** (tries - 1), RETRY_MAX)
                self._tries[key] = (tries, now + wait)
                self._at(now + wait)
                self._say(accepted, PROVISIONED, "False", *NOT_FOUND)
        return changed

    def _say(
        self, request: ProvisioningRequest, kind: str, status: str, reason: str, message: str
    ) -> ProvisioningRequest:
        """Set the request's condition `kind` (as Cluster Autoscaler writes its status)."""
        conditions = [c for c in request.status.conditions if c.type != kind]
        said = RequestCondition(type=kind, status=status, reason=reason, message=message)
        conditions.append(said)
        changed = request.model_copy(
            update={"status": request.status.model_copy(update={"conditions": conditions})}
        )
        self.state.upsert_provisioning_request(changed)
        return changed

    def _pod_by_pod(self, now: float, shown: set[str]) -> None:
        seen = [pod for pod in self.scheduler.unschedulable() if self._sees(pod, shown)]
        if not seen:
            return
        room = self._room(now, spare=self.starting + self.pool.max_nodes - self._billed())
        arrivals = self.state.arrivals
        for pod in sorted(seen, key=lambda p: (arrivals.get(gang_key(p) or "", 0), _name(p))):
            room.place(pod.request, _job(pod))
        self._buy(now, [tuple(jobs) for jobs in room.jobs])

    def _sees(self, pod: Pod, shown: set[str]) -> bool:
        """Whether the pod is marked Unschedulable for the autoscaler to see: under Lahar's
        policy, when its gang's gate would have been lifted (shown, or standing: members beyond
        minMember) and it is not admitted (its members bind onto what its slots reserve, which the
        free room counts as taken)."""
        key = gang_key(pod)
        if not self.engine.gang_rules or key is None:
            return True
        if self.engine.admission(key) is not None:
            return False
        return key in shown or view_gang(self.state, key).stands

    def _scale_down(self, now: float) -> None:
        nodes = self.state.view().nodes
        reserved = self.engine.reserved()
        for bought in self._bought.values():
            info = nodes.get(bought.name)
            if info is None or bought.removed is not None or bought.empty_since is None:
                continue
            if bought.pods or info.requested["pods"] or bought.name in reserved:
                continue
            if now >= bought.empty_since + self.pool.scale_down_after:
                self.state.delete_node(bought.name)
                bought.removed = now

    # -- nodes ----------------------------------------------------------------------------------

    def _billed(self) -> int:
        """Nodes in the pool now: the starting ones and those bought and not removed."""
        return self.starting + sum(1 for b in self._bought.values() if b.removed is None)

    def _room(self, now: float, spare: int | None) -> _Room:
        """The room the autoscaler sees, in first-fit order: the free room of the nodes in the
        cluster (allocatable less the pods counted on them and what admitted gangs reserve), then
        the nodes bought and not joined yet (empty nodes of the pool's shape), less what the
        requests Provisioned for gangs neither admitted nor standing book (their pods placed
        first, as Cluster Autoscaler books capacity for them); `spare` new nodes beyond."""
        nodes = self.state.view().nodes
        reserved = self.engine.reserved()
        free = [
            nodes[name].free - reserved.get(name, EMPTY) for name in self.order if name in nodes
        ]
        coming = (b for b in self._bought.values() if b.name not in nodes and b.removed is None)
        free += [self.shape for _ in coming]
        room = _Room(free, self.shape, spare)
        if self.provisioner is None:
            return room
        for request in self.state.provisioning_requests.values():
            gang = request.gang
            if (
                gang is None
                or request.phase != PROVISIONED
                or self.engine.admission(gang) is not None
            ):
                continue
            if not view_gang(self.state, gang).stands:
                for pod in self.provisioner.pods(request):
                    room.take(pod.request)
        return room

    def _buy(self, now: float, jobs: list[tuple[str, ...]]) -> list[str]:
        """Buy a node for each entry of `jobs` (the jobs whose pods it is for); their names."""
        names = []
        loop = asyncio.get_running_loop()
        for wanted in jobs:
            name = f"{self.pool.name}-{self._number}"
            self._number += 1
            joins = now + self.pool.provisioning_delay
            self._bought[name] = _Bought(name, now, joins, wanted)
            self.order.append(name)
            loop.call_at(joins, self._join, name)
            names.append(name)
        return names

    def _join(self, name: str) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.state.upsert_node(world.node(name, self.pool.nodes.allocatable))
        bought = self._bought[name]
        bought.empty_since = now
        self._at(now + self.pool.scale_down_after)
        if not self._settling:  # (after every node joining at this moment has joined)
            self._settling = True
            loop.call_soon(self._settle)

    def _settle(self) -> None:
        """Nodes joined: Lahar's provisioner sees them all at once (its pass follows a change
        by a moment) and admits the gangs whose request is Provisioned and now fit; then the
        simulation retries parked pods."""
        self._settling = False
        if self.provisioner is not None:
            self.provisioner.step(asyncio.get_running_loop().time())
        self.joined()

    # -- what was bought ------------------------------------------------------------------------

    def record(self, end: float) -> PoolRecord:
        """The nodes bought, a node still there at `end` counted until it would be removed."""
        nodes = []
        for bought in self._bought.values():
            removed = bought.removed
            if removed is None:
                if bought.pods:
                    removed = end
                else:
                    empty = bought.empty_since if bought.empty_since is not None else bought.joined
                    due = empty + self.pool.scale_down_after
                    removed = max(end, math.ceil(due / SCAN_INTERVAL) * SCAN_INTERVAL)
            nodes.append(AddedNode(bought.name, bought.bought, bought.joined, removed, bought.jobs))
        return PoolRecord(
            starting=self.starting,
            max_nodes=self.pool.max_nodes,
            cores=self.pool.nodes.allocatable["cpu"] / 1000,
            scale_down_after=self.pool.scale_down_after,
            nodes=tuple(nodes),
            requests=self.provisioner.created if self.provisioner is not None else 0,
        )


def _job(pod: Pod) -> str:
    """The job (gang) a pod is of: its gang's name, or its own for a pod of no gang."""
    key = gang_key(pod)
    return job_key(key) if key is not None else pod.metadata.name


def _name(pod: Pod) -> str:
    return pod.metadata.name
