"""Whether a standby extender takes over from a leader whose extender cannot serve: the decision.

kube-scheduler keeps its Lease as long as it runs, whether or not the extender beside it can
serve; a leader whose extender crash-loops, hangs or cannot sync stops all gang scheduling while
the other replica idles. Restarting that kube-scheduler does not help: it takes the Lease back
within a second, before the standby's. So the standby's extender acts: when the pod whose
kube-scheduler holds the Lease has had its `extender` container not ready for longer than a bound
(`lahar serve --take-over-after`, 20 s), it evicts that pod; kube-scheduler releases the Lease as
it stops, and the standby's kube-scheduler takes it.

This module is the pure part: `decide` takes what the standby saw in one look (`Look`: whether
this replica leads and is ready, the Lease, the holder's pod, the clocks) and what it remembers
(`Watch`: the pod it watches, since when it has seen that pod's extender not ready, the pods it
evicted, when it may evict again), and returns the outcome as a value, `TakeOver`, `Wait(reason)`
or `Nothing(why)`, with the new memory. The adapter (`server.watchdog`) looks every few seconds,
reads the Lease and the pod from the API server, and carries out a `TakeOver` with the Eviction
API, reporting back with `evicted`, `gone` or `refused`.

The rules, in order:

- only a standby (its scheduler does not hold the Lease) that is itself ready (its cache synced,
  no Lease problem) acts; otherwise there is nothing to watch and the memory is reset;
- the Lease must be held, valid (`renewTime + leaseDurationSeconds` after now) and by another pod:
  its holder identity is kube-scheduler's `<pod name>_<uuid>`, the pod in the Lease's namespace;
- only the kubelet's readiness of the holder pod's `extender` container counts (not ready, or no
  status for it): a ready extender is never the reason, whatever else ails the pod. The time is
  measured from when this standby first saw it not ready, and starts again when it is ready
  again or another pod holds the Lease;
- it takes over once that has lasted longer than the bound; never twice for one pod (its uid), a
  pod already terminating is left to go, and after an eviction it waits `backoff` seconds before
  any other (the replacement pod gets a fresh chance); a refused eviction (a
  PodDisruptionBudget, the API server) is tried again after `retry` seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

CONTAINER = "extender"  # the extender's container in the scheduler's pod (manifests/scheduler.yaml)
BACKOFF_SECONDS = 60.0  # after an eviction, no other for this long
RETRY_SECONDS = 10.0  # after a refused eviction, try again after this long
KEEP_EVICTED = 16  # the uids of the pods evicted last, never evicted again


@dataclass(frozen=True)
class Rule:
    """The followed Lease (`namespace`/`name`), this replica's pod (`identity`: the hostname its
    scheduler's identity begins with), and how long a leader's extender may stay not ready
    (`bound` seconds; 0 or less: never take over)."""

    namespace: str
    name: str
    identity: str
    bound: float
    backoff: float = BACKOFF_SECONDS
    retry: float = RETRY_SECONDS

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class LeaseSeen:
    """What the Lease says: its holder identity ("" when nobody holds it), when it was last
    renewed (Unix seconds) and for how long (None when it does not say)."""

    holder: str
    renewed: float | None = None
    duration: float | None = None


@dataclass(frozen=True)
class PodSeen:
    """What the holder's pod says: whether its `extender` container is ready (False without a
    status for it), and whether it is being deleted already."""

    name: str
    uid: str
    extender_ready: bool
    terminating: bool = False


@dataclass(frozen=True)
class Look:
    """One look: whether this replica leads, why it is not ready (None: ready), the Lease (None:
    there is none) and the pod its holder names (None: no such pod, or not read because the Lease
    names none), or `trouble` when a read failed; `now` (monotonic) and `wall` (Unix) seconds."""

    leading: bool
    unready: str | None
    lease: LeaseSeen | None
    pod: PodSeen | None
    now: float
    wall: float
    trouble: str | None = None


@dataclass(frozen=True)
class Watch:
    """What the standby remembers between looks: the holder pod watched (its uid), since when
    (monotonic) its extender has been seen not ready, the pods evicted (uids, last ones kept), and
    when it may evict again."""

    uid: str = ""
    since: float | None = None
    evicted: tuple[str, ...] = ()
    quiet_until: float = 0.0


@dataclass(frozen=True)
class TakeOver:
    """Evict `namespace/pod` (only that very pod: `uid`): its extender has not been ready for
    `lasted` seconds while its kube-scheduler holds `lease`."""

    namespace: str
    pod: str
    uid: str
    lasted: float
    lease: str

    @property
    def message(self) -> str:
        return (
            f"evicting {self.namespace}/{self.pod}: its extender has not been ready for "
            f"{self.lasted:.0f} s while its kube-scheduler holds Lease {self.lease}; this "
            "replica's scheduler takes over"
        )


@dataclass(frozen=True)
class Wait:
    """The leader's extender is not ready, but it is not (yet) time to evict: `reason`."""

    reason: str


@dataclass(frozen=True)
class Nothing:
    """Nothing to watch or nothing wrong: `why`."""

    why: str


Outcome = TakeOver | Wait | Nothing


def lease_seen(lease: Mapping[str, Any]) -> LeaseSeen:
    """A coordination.k8s.io/v1 Lease (as the API server returns it) as `LeaseSeen`; a renewTime
    that does not parse is none (the Lease is then not known to be valid)."""
    spec = lease.get("spec") or {}
    renewed = None
    text = spec.get("renewTime")
    if isinstance(text, str) and text:
        try:
            renewed = datetime.fromisoformat(text).timestamp()
        except ValueError:
            renewed = None
    duration = spec.get("leaseDurationSeconds")
    return LeaseSeen(
        str(spec.get("holderIdentity") or ""),
        renewed,
        float(duration) if isinstance(duration, int | float) else None,
    )


def pod_seen(pod: Mapping[str, Any]) -> PodSeen:
    """A Pod (as the API server returns it) as `PodSeen`: `status.containerStatuses` of the
    container named `extender`, `ready` true; anything else is not ready."""
    meta = pod.get("metadata") or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    ready = any(
        isinstance(status, Mapping)
        and status.get("name") == CONTAINER
        and status.get("ready") is True
        for status in statuses
    )
    return PodSeen(
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
        ready,
        bool(meta.get("deletionTimestamp")),
    )


def holder_pod(rule: Rule, lease: LeaseSeen | None, wall: float) -> str | Nothing:
    """The name of the pod whose scheduler holds the Lease, valid at `wall`, when it is another
    pod than this one; else why there is no such pod."""
    if lease is None or not lease.holder:
        return Nothing(f"nobody holds Lease {rule.lease}")
    name, underscore, _ = lease.holder.partition("_")
    if not underscore or not name:
        return Nothing(f"holder {lease.holder!r} of Lease {rule.lease} names no pod")
    if name == rule.identity:
        return Nothing(f"the scheduler beside this extender holds Lease {rule.lease}")
    if lease.renewed is None or lease.duration is None:
        return Nothing(f"Lease {rule.lease} has no renewTime or leaseDurationSeconds")
    if lease.renewed + lease.duration <= wall:
        return Nothing(f"Lease {rule.lease} of {name} has expired: a scheduler takes it over")
    return name


def decide(rule: Rule, watch: Watch, look: Look) -> tuple[Outcome, Watch]:
    """What to do after `look`, remembering `watch`: the outcome and what to remember next."""
    fresh = replace(watch, uid="", since=None)
    idle = _idle(rule, look)
    if idle is not None:
        return idle, fresh
    if look.trouble is not None:
        return Wait(look.trouble), watch  # (no news: neither reset nor count)
    name = holder_pod(rule, look.lease, look.wall)
    if isinstance(name, Nothing):
        return name, fresh
    pod = look.pod
    where = f"{rule.namespace}/{name}"
    if pod is None or pod.name != name:
        return Nothing(f"the Lease's holder {where} is no pod (not found)"), fresh
    if pod.uid != watch.uid:
        watch = replace(watch, uid=pod.uid, since=None)
    if pod.extender_ready:
        return Nothing(f"the extender of {where} is ready"), replace(watch, since=None)
    since = look.now if watch.since is None else watch.since
    watch = replace(watch, since=since)
    outcome = _not_ready(rule, watch, pod, where=where, lasted=look.now - since, now=look.now)
    return outcome, watch


def _idle(rule: Rule, look: Look) -> Nothing | None:
    """Why this replica watches nothing: switched off, leading, or not ready itself."""
    if rule.bound <= 0:
        return Nothing("taking over is switched off")
    if look.leading:
        return Nothing("this replica leads")
    if look.unready is not None:
        return Nothing(f"this replica is not ready: {look.unready}")
    return None


def _not_ready(
    rule: Rule, watch: Watch, pod: PodSeen, *, where: str, lasted: float, now: float
) -> Outcome:
    """The extender of `pod` (`where`) has been seen not ready for `lasted` seconds: evict it?"""
    if pod.uid in watch.evicted:
        return Wait(f"{where} was evicted; waiting for it to go")
    if pod.terminating:
        return Wait(f"{where} is terminating: its scheduler releases the Lease as it stops")
    if lasted <= rule.bound:
        return Wait(
            f"the extender of {where} has not been ready for {lasted:.0f} s; this replica takes "
            f"over after {rule.bound:g} s"
        )
    if now < watch.quiet_until:
        return Wait(
            f"the extender of {where} has not been ready for {lasted:.0f} s; not evicting again "
            f"for {watch.quiet_until - now:.0f} s"
        )
    return TakeOver(rule.namespace, pod.name, pod.uid, lasted, rule.lease)


def evicted(rule: Rule, watch: Watch, uid: str, now: float) -> Watch:
    """The pod `uid` was evicted at `now`: never again, and no other for `rule.backoff`."""
    kept = (*watch.evicted, uid)[-KEEP_EVICTED:]
    return replace(watch, evicted=kept, quiet_until=now + rule.backoff)


def gone(watch: Watch) -> Watch:
    """The pod to evict was gone already: nothing more to watch of it."""
    return replace(watch, uid="", since=None)


def refused(rule: Rule, watch: Watch, now: float) -> Watch:
    """The eviction was refused at `now`: try again after `rule.retry`."""
    return replace(watch, quiet_until=now + rule.retry)
