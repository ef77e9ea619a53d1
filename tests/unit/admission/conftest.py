"""Fixtures for the admission rule tests: the queues a cluster has."""

from __future__ import annotations

import pytest

from tests.unit.admission.helpers import Queues, cluster_queues


@pytest.fixture
def queues() -> Queues:
    """`default` (Open), `research` (no state yet), `closed` (Closed), `closing` (Closing)."""
    return cluster_queues()
