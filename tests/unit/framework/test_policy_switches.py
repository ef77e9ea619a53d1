"""What the engine reads of a policy is its plugins' `Switches` merged in tier order: the gang
settings, the fair order and preemption, each as the policy file says (the first plugin that sets
a value wins where only one can hold; an on/off rule is on when any plugin turns it on; an entry's
`enablePreemptable: false` / `enableReclaimable: false` leaves that plugin's rule on victims out).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from extender.api.engine_settings import (
    GangSettings,
    JobKey,
    Ordering,
    PreemptionSettings,
    Rules,
)
from extender.framework.plugin import JobOrder, Plugin
from extender.framework.policy import Policy, build_policy, load_policy
from extender.plugins import REGISTRY
from extender.plugins.gang import Gang
from extender.plugins.preempt import Preempt
from extender.plugins.sla import Sla

POLICIES = Path(__file__).resolve().parents[3] / "policy"

GANG: dict[str, Any] = {
    "name": "gang",
    "arguments": {"gang.backoffSeconds": 3, "gang.maxPodsInFlight": 8},
}
PREEMPT: dict[str, Any] = {"name": "preempt", "arguments": {"preempt.intervalSeconds": 7}}
PRIORITY, DRF, PROPORTION, SLA = (
    {"name": "priority"},
    {"name": "drf"},
    {"name": "proportion"},
    {"name": "sla"},
)
TUNED_GANG = GangSettings(backoff=3, max_pods_in_flight=8)


def document(*tiers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [{"plugins": plugins} for plugins in tiers],
    }


def preempting(gang: dict[str, Any]) -> dict[str, Any]:
    """Preempt, priority, proportion and drf, with `gang` first."""
    return document([gang, PRIORITY, PREEMPT], [DRF, PROPORTION])


@dataclass(frozen=True)
class Case:
    id: str
    policy: str | dict[str, Any]  # a file of policy/, or a document
    gang: GangSettings | None
    preemption: PreemptionSettings | None
    job_order: tuple[str, ...]  # the job-order plugins, in the order they rank
    by_queue_share: bool
    starving_after: float | None


CASES = [
    Case(
        "the shipped policy",
        "lahar.yaml",
        gang=GangSettings(barrier_timeout=20, backoff=10, reservation_timeout=60),
        preemption=None,
        job_order=("sla", "priority", "drf"),
        by_queue_share=True,
        starving_after=120,
    ),
    Case(
        "the shipped policy with preempt, Volcano's switches off",
        "preemption.yaml",
        gang=GangSettings(barrier_timeout=20, backoff=10, reservation_timeout=60),
        preemption=PreemptionSettings(5, Rules(preempt=True, reclaim=True)),
        job_order=("sla", "priority", "drf"),
        by_queue_share=True,
        starving_after=120,
    ),
    Case(
        "preempt, priority, proportion, drf and gang",
        preempting(GANG),
        gang=TUNED_GANG,
        preemption=PreemptionSettings(
            7, Rules(spare_members_only=True, reclaims_spares_only=True, keeps_share=True)
        ),
        job_order=("priority", "drf"),
        by_queue_share=True,
        starving_after=None,
    ),
    Case(
        "gang's enablePreemptable false",
        preempting({**GANG, "enablePreemptable": False}),
        gang=TUNED_GANG,
        preemption=PreemptionSettings(
            7, Rules(spare_members_only=False, reclaims_spares_only=True, keeps_share=True)
        ),
        job_order=("priority", "drf"),
        by_queue_share=True,
        starving_after=None,
    ),
    Case(
        "gang's enableReclaimable false",
        preempting({**GANG, "enableReclaimable": False}),
        gang=TUNED_GANG,
        preemption=PreemptionSettings(
            7, Rules(spare_members_only=True, reclaims_spares_only=False, keeps_share=True)
        ),
        job_order=("priority", "drf"),
        by_queue_share=True,
        starving_after=None,
    ),
    Case(
        "without the gang plugin",
        document([SLA, PRIORITY, PREEMPT], [DRF, PROPORTION]),
        gang=None,
        preemption=PreemptionSettings(7, Rules(keeps_share=True)),
        job_order=("sla", "priority", "drf"),
        by_queue_share=True,
        starving_after=300,
    ),
    Case(
        "hooks only: nothing switched",
        document([{"name": "predicates"}, {"name": "binpack"}]),
        gang=None,
        preemption=None,
        job_order=(),
        by_queue_share=False,
        starving_after=None,
    ),
]


def job_keys(built: Policy, names: tuple[str, ...]) -> tuple[JobKey, ...]:
    by_name = {plugin.name: plugin for plugin in built.plugins if isinstance(plugin, JobOrder)}
    return tuple(by_name[name].job_key for name in names)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_merged_switches_are_what_the_engine_reads(case: Case) -> None:
    if isinstance(case.policy, str):
        built = load_policy(POLICIES / case.policy, REGISTRY)
    else:
        built = build_policy(case.policy, REGISTRY)
    assert built.gang_settings == case.gang
    assert built.preemption == case.preemption
    assert built.ordering == Ordering(
        job_keys=job_keys(built, case.job_order),
        by_queue_share=case.by_queue_share,
        starving_after=case.starving_after,
    )


@pytest.mark.parametrize(
    ("tiers", "gang", "starving_after", "interval"),
    [
        (((Gang(TUNED_GANG),), (Gang(GangSettings()),)), TUNED_GANG, None, None),
        (((Sla(60),), (Sla(120),)), None, 60, None),
        (((Preempt(3),), (Preempt(9),)), None, None, 3),
    ],
    ids=["gang settings", "starvation limits", "preemption intervals"],
)
def test_where_only_one_value_holds_the_first_plugin_in_tier_order_wins(
    tiers: tuple[tuple[Plugin, ...], ...],
    gang: GangSettings | None,
    starving_after: float | None,
    interval: float | None,
) -> None:
    built = Policy("two tiers", tiers)
    assert built.gang_settings == gang
    assert built.ordering.starving_after == starving_after
    assert (None if built.preemption is None else built.preemption.interval) == interval
