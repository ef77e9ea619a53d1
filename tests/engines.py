"""Engines for tests of the engine's callers: the policy as small as the test needs.

`make_engine(settings)` has the gang plugin alone (with `settings`) in its policy, and any other
plugins given after it, in one tier: what a test of the barrier, the waker, the writers or explain
needs of the engine, built through the same door the extender uses. `preempting_engine(rules)`
adds the preempt plugin and the plugins (and `enablePreemptable`/`enableReclaimable` switches)
that make `rules` the victim rules, as a policy file would: what a test of the preempt verb or
the preemptor needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from extender.api.engine_settings import GangSettings, PreemptionSettings, Rules
from extender.framework.engine import Engine
from extender.framework.plugin import Plugin
from extender.framework.policy import Policy
from extender.plugins.drf import Drf
from extender.plugins.gang import NAME as GANG
from extender.plugins.gang import Gang
from extender.plugins.preempt import Preempt
from extender.plugins.priority import Priority
from extender.plugins.proportion import Proportion


def make_engine(
    settings: GangSettings | None = None,
    *plugins: Plugin,
    schedulers: Collection[str] = (),
    clock: Callable[[], float] = time.monotonic,
) -> Engine:
    """An engine whose policy runs the gang plugin with `settings` (its defaults when None),
    then `plugins`; serving `schedulers` from the start; reading `clock`."""
    tier = (Gang(settings or GangSettings()), *plugins)
    return Engine(Policy("test", (tier,)), schedulers, clock=clock)


def preempting_engine(
    rules: Rules | None = None,
    interval: float = 5.0,
    settings: GangSettings | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Engine:
    """An engine whose policy runs the gang plugin with `settings` and the preempt plugin (both
    its actions, one preemption per `interval` seconds) with `rules` (their defaults when None)
    for victim rules: priority when preempt is on, proportion when reclaim is, drf when a victim
    keeps its share; gang's rules switched off by `enablePreemptable: false` and
    `enableReclaimable: false` unless `rules` has them on."""
    rules = rules or Rules()
    tier: tuple[Plugin, ...] = (Gang(settings or GangSettings()), Preempt(interval))
    tier += (Priority(),) if rules.preempt else ()
    tier += (Proportion(),) if rules.reclaim else ()
    tier += (Drf(),) if rules.keeps_share else ()
    policy = Policy(
        "test",
        (tier,),
        unpreemptable=frozenset(() if rules.spare_members_only else (GANG,)),
        unreclaimable=frozenset(() if rules.reclaims_spares_only else (GANG,)),
    )
    engine = Engine(policy, clock=clock)
    assert engine.preemption == PreemptionSettings(interval, rules)
    return engine
