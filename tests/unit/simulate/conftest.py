"""The policies simulator tests play: the shipped one and the one with preemption on."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.framework.policy import Policy, load_policy
from extender.plugins import REGISTRY

POLICIES = Path(__file__).resolve().parents[3] / "policy"


@pytest.fixture(scope="session")
def lahar() -> Policy:
    """policy/lahar.yaml, as shipped: it evicts nothing."""
    return load_policy(POLICIES / "lahar.yaml", REGISTRY)


@pytest.fixture(scope="session")
def preempting() -> Policy:
    """policy/preemption.yaml: preempt and reclaim on."""
    return load_policy(POLICIES / "preemption.yaml", REGISTRY)
