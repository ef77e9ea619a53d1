"""What the policy's preempt plugin sets for Lahar's preemption (`framework.policy` reads it from
the policy file; `preemption.loop` runs by it)."""

from __future__ import annotations

from dataclasses import dataclass

from extender.preemption.victims import Rules


@dataclass(frozen=True)
class PreemptionSettings:
    """At most one preemption per `interval` seconds, and who may be evicted (`rules`: by
    priority, by queue shares)."""

    interval: float
    rules: Rules
