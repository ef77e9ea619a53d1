"""The takeover decision, without a cluster: a ready standby evicts the pod whose scheduler holds
the Lease only when that pod's `extender` container has not been ready for longer than the bound,
counted from when the standby first saw it so; never for a ready extender, never twice for one
pod, and not while it leads, is not ready itself, or the Lease is free, expired or its own."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from extender.server.takeover import (
    KEEP_EVICTED,
    LeaseSeen,
    Look,
    Nothing,
    Outcome,
    PodSeen,
    Rule,
    TakeOver,
    Wait,
    Watch,
    decide,
    evicted,
    gone,
    holder_pod,
    lease_seen,
    pod_seen,
    refused,
)

RULE = Rule("lahar-system", "lahar-scheduler", "sched-b", 20.0)
WALL = 1_700_000_000.0
HELD = LeaseSeen("sched-a_1b2c", renewed=WALL - 5, duration=15)  # by the other pod, valid
SICK = PodSeen("sched-a", "uid-a", extender_ready=False)
WELL = PodSeen("sched-a", "uid-a", extender_ready=True)
WATCHED = Watch(uid="uid-a", since=100.0)  # not ready since 100 s


def look(
    now: float = 100.0,
    *,
    lease: LeaseSeen | None = HELD,
    pod: PodSeen | None = SICK,
    leading: bool = False,
    unready: str | None = None,
    trouble: str | None = None,
) -> Look:
    return Look(leading, unready, lease, pod, now, WALL, trouble)


def kind(outcome: Outcome) -> str:
    return type(outcome).__name__


def text(outcome: Outcome) -> str:
    match outcome:
        case TakeOver():
            return outcome.message
        case Wait():
            return outcome.reason
        case Nothing():
            return outcome.why


@dataclass(frozen=True)
class Case:
    """What the standby remembered and saw, and what it must decide: the outcome's kind, words
    in its text, and the `since` it remembers after."""

    case: str
    rule: Rule
    watch: Watch
    seen: Look
    expected: str
    words: str
    since: float | None


CASES = [
    Case("first seen not ready", RULE, Watch(), look(100), "Wait", "for 0 s", 100.0),
    Case("not ready for 20 s: not longer", RULE, WATCHED, look(120), "Wait", "after 20 s", 100.0),
    Case("not ready longer than the bound", RULE, WATCHED, look(120.5), "TakeOver", "", 100.0),
    Case("a ready extender is never evicted", RULE, WATCHED, look(500, pod=WELL), "Nothing",
         "is ready", None),
    Case("another pod of that name: counted anew", RULE, WATCHED,
         look(130, pod=replace(SICK, uid="uid-a2")), "Wait", "for 0 s", 130.0),
    Case("this replica leads", RULE, WATCHED, look(130, leading=True), "Nothing", "leads", None),
    Case("this replica is not ready", RULE, WATCHED, look(130, unready="cache not synced"),
         "Nothing", "not ready: cache not synced", None),
    Case("switched off", replace(RULE, bound=0), WATCHED, look(130), "Nothing", "off", None),
    Case("nobody holds the Lease", RULE, WATCHED, look(130, lease=LeaseSeen("")), "Nothing",
         "nobody holds", None),
    Case("no Lease", RULE, WATCHED, look(130, lease=None), "Nothing", "nobody holds", None),
    Case("the Lease expired", RULE, WATCHED,
         look(130, lease=replace(HELD, renewed=WALL - 15)), "Nothing", "expired", None),
    Case("the Lease says not how long", RULE, WATCHED,
         look(130, lease=replace(HELD, duration=None)), "Nothing", "leaseDurationSeconds", None),
    Case("its own scheduler holds it", RULE, WATCHED,
         look(130, lease=replace(HELD, holder="sched-b_9f")), "Nothing", "beside this", None),
    Case("a holder naming no pod", RULE, WATCHED,
         look(130, lease=replace(HELD, holder="somebody")), "Nothing", "names no pod", None),
    Case("the holder's pod does not exist", RULE, WATCHED, look(130, pod=None), "Nothing",
         "not found", None),
    Case("a read failed: no news, memory kept", RULE, WATCHED, look(130, trouble="HTTP 500"),
         "Wait", "HTTP 500", 100.0),
    Case("already evicted", RULE, replace(WATCHED, evicted=("uid-a",)), look(300), "Wait",
         "was evicted", 100.0),
    Case("terminating", RULE, WATCHED, look(130, pod=replace(SICK, terminating=True)), "Wait",
         "terminating", 100.0),
    Case("backing off after an eviction", RULE, replace(WATCHED, quiet_until=140.0), look(130),
         "Wait", "not evicting again for 10 s", 100.0),
    Case("the backoff over", RULE, replace(WATCHED, quiet_until=140.0), look(140), "TakeOver",
         "", 100.0),
]  # fmt: skip


@pytest.mark.parametrize("c", CASES, ids=[c.case for c in CASES])
def test_the_decision(c: Case) -> None:
    outcome, after = decide(c.rule, c.watch, c.seen)
    assert kind(outcome) == c.expected, outcome
    assert c.words in text(outcome), outcome
    assert after.since == c.since
    assert after.evicted == c.watch.evicted


def test_take_over_names_the_pod_the_time_and_the_lease() -> None:
    outcome, _ = decide(RULE, WATCHED, look(120.5))
    assert outcome == TakeOver("lahar-system", "sched-a", "uid-a", 20.5, RULE.lease)
    assert isinstance(outcome, TakeOver)
    assert outcome.message == (
        "evicting lahar-system/sched-a: its extender has not been ready for 20 s while its "
        "kube-scheduler holds Lease lahar-system/lahar-scheduler; this replica's scheduler takes "
        "over"
    )


def test_a_sequence_counts_from_the_first_sight_and_starts_again_when_ready() -> None:
    """Not ready 0..18 s, ready at 19 s, not ready again from 21 s: no eviction before 41 s."""
    watch, outcomes = Watch(), []
    for now, pod in [(0, SICK), (10, SICK), (18, SICK), (19, WELL), (21, SICK), (40, SICK),
                     (41.5, SICK)]:  # fmt: skip
        outcome, watch = decide(RULE, watch, look(now, pod=pod))
        outcomes.append(kind(outcome))
    assert outcomes == ["Wait", "Wait", "Wait", "Nothing", "Wait", "Wait", "TakeOver"]


def test_a_new_holder_is_counted_anew() -> None:
    watch = decide(RULE, Watch(), look(0))[1]
    other = LeaseSeen("sched-c_77", WALL, 15)
    outcome, watch = decide(RULE, watch, look(25, lease=other, pod=PodSeen("sched-c", "c", False)))
    assert isinstance(outcome, Wait) and "for 0 s" in outcome.reason
    assert (watch.uid, watch.since) == ("c", 25)


def test_after_an_eviction_never_that_pod_again_and_no_other_for_the_backoff() -> None:
    outcome, watch = decide(RULE, WATCHED, look(121))
    assert isinstance(outcome, TakeOver)
    watch = evicted(RULE, watch, outcome.uid, 121)
    assert watch.quiet_until == 121 + RULE.backoff
    # the evicted pod lingers (still holding the Lease): never evicted again
    assert kind(decide(RULE, watch, look(1000))[0]) == "Wait"
    # its replacement, not ready and holding the Lease: its own 20 s, and the backoff
    fresh = PodSeen("sched-a2", "uid-a2", False)
    lease = replace(HELD, holder="sched-a2_x")
    outcome, watch = decide(RULE, watch, look(150, lease=lease, pod=fresh))
    outcome, watch = decide(RULE, watch, look(175, lease=lease, pod=fresh))
    assert isinstance(outcome, Wait) and "not evicting again for 6 s" in outcome.reason
    assert kind(decide(RULE, watch, look(181, lease=lease, pod=fresh))[0]) == "TakeOver"


def test_a_refused_eviction_is_tried_again_after_the_retry() -> None:
    watch = refused(RULE, WATCHED, 121)
    assert kind(decide(RULE, watch, look(125))[0]) == "Wait"
    assert kind(decide(RULE, watch, look(121 + RULE.retry))[0]) == "TakeOver"
    assert gone(watch).since is None


def test_only_the_last_evicted_pods_are_kept() -> None:
    watch = Watch()
    for i in range(KEEP_EVICTED + 3):
        watch = evicted(RULE, watch, f"u{i}", float(i))
    assert len(watch.evicted) == KEEP_EVICTED and watch.evicted[-1] == f"u{KEEP_EVICTED + 2}"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "holderIdentity": "sched-a_1b2c",
                "renewTime": "2023-11-14T22:13:15.000000Z",
                "leaseDurationSeconds": 15,
            },
            LeaseSeen("sched-a_1b2c", 1_699_999_995.0, 15.0),
        ),
        ({"holderIdentity": "sched-a_1"}, LeaseSeen("sched-a_1", None, None)),
        ({"holderIdentity": "x_1", "renewTime": "yesterday"}, LeaseSeen("x_1", None, None)),
        ({}, LeaseSeen("", None, None)),
    ],
)
def test_a_lease_as_the_api_server_has_it(spec: dict[str, Any], expected: LeaseSeen) -> None:
    assert lease_seen({"spec": spec}) == expected


def test_the_holder_pod_is_its_identity_up_to_the_first_underscore() -> None:
    assert holder_pod(RULE, LeaseSeen("sched-a_x_y", WALL, 15), WALL) == "sched-a"
    assert isinstance(holder_pod(RULE, LeaseSeen("_x", WALL, 15), WALL), Nothing)


def _pod(statuses: Any, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "sched-a", "uid": "uid-a", **meta},
        "status": {} if statuses is None else {"containerStatuses": statuses},
    }


@pytest.mark.parametrize(
    ("pod", "ready", "terminating"),
    [
        (_pod([{"name": "kube-scheduler", "ready": True}, {"name": "extender", "ready": True}]),
         True, False),
        (_pod([{"name": "kube-scheduler", "ready": True}, {"name": "extender", "ready": False}]),
         False, False),
        (_pod([{"name": "kube-scheduler", "ready": True}]), False, False),
        (_pod(None), False, False),
        (_pod([{"name": "extender"}]), False, False),
        (_pod([{"name": "extender", "ready": True}], deletionTimestamp="2024-01-01T00:00:00Z"),
         True, True),
    ],
)  # fmt: skip
def test_a_pod_as_the_api_server_has_it(
    pod: dict[str, Any], ready: bool, terminating: bool
) -> None:
    assert pod_seen(pod) == PodSeen("sched-a", "uid-a", ready, terminating)
