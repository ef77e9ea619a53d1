"""What the policy's preempt plugin sets for Lahar's preemption (`framework.policy` reads it from
the policy file; `preemption.loop` runs by it)."""

from __future__ import annotations

from dataclasses import dataclass

from extender.preemption.victims import Rules


@dataclass(frozen=True)
class PreemptionSettings:
    """At most one preemption per `interval` seconds, and who may be evicted (`rules`: the
    preempt plugin's actions, by priority and by queue shares, and gang's and drf's rules on
    victims as `enablePreemptable` leaves them; protected pods never, whatever the rules)."""

    interval: float
    rules: Rules
