"""Reservations are capacity held against other pods, not particular nodes promised to members.

kube-scheduler samples nodes and runs its own resource fit before Lahar's filter, so a member of
an admitted gang may be offered any nodes, not its plan's. Whatever nodes are offered and
whichever a member then binds on, two things must hold (hypothesis draws the clusters, the gangs
and the order of events):

- what admitted gangs hold never exceeds what a node has free: the plan of every gang still fits;
- no member is stranded: offered its own slot's node, a member of an admitted gang passes there.
"""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.resources import EMPTY
from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.framework.policy import load_policy
from extender.gangs.reservations import Admission
from extender.plugins import REGISTRY
from tests.builders import cluster, make_group, make_node, make_pod

POLICY = load_policy(Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml", REGISTRY)


def reserved_within_free(state: ClusterState, engine: Engine) -> None:
    nodes = state.view().nodes
    for name, amount in engine.reserved().items():
        left = nodes[name].free - amount
        assert all(value >= 0 for value in left.values()), (name, nodes[name].free, amount)


def nobody_stranded(state: ClusterState, engine: Engine) -> None:
    for admission in _admissions(engine):
        for uid, slot in admission.slots.items():
            outcome = engine.filter(state, state.pods[uid], [slot.node], fit=True)
            assert outcome.gang_reason is None
            assert outcome.passed == [slot.node], uid


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(st.sampled_from([4, 8, 16]), min_size=2, max_size=6),
    gangs=st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=4), min_size=1, max_size=3
    ),  # each gang's members' cpu
    seed=st.integers(0, 2**16),
)
def test_any_offer_and_any_choice_keep_the_plans_whole(
    nodes: list[int], gangs: list[list[int]], seed: int
) -> None:
    rng = random.Random(seed)
    pods = []
    for g, cpus in enumerate(gangs):
        pods += [
            make_pod(f"g{g}-{i}").uid(f"g{g}-{i}").cpu(str(cpu)).group(f"g{g}")
            for i, cpu in enumerate(cpus)
        ]
    state = cluster([make_node(f"n{i}").cpu(str(cpu)) for i, cpu in enumerate(nodes)], pods)
    for g, cpus in enumerate(gangs):
        state.upsert_pod_group(make_group(f"g{g}").min_member(len(cpus)).model())
    engine = Engine(POLICY)
    assert engine.gang_rules
    for g in range(len(gangs)):  # the scheduler asks about each gang once: some are admitted
        engine.filter(state, state.pods[f"g{g}-0"], [])
    reserved_within_free(state, engine)
    nobody_stranded(state, engine)
    plain = 0
    for _ in range(12):
        admitted = [uid for a in _admissions(engine) for uid in a.slots]
        if admitted and rng.random() < 0.7:
            pod = state.pods[rng.choice(sorted(admitted))]
        else:
            plain += 1
            pod = make_pod(f"p{plain}").uid(f"p{plain}").cpu(str(rng.randint(1, 4))).model()
            state.upsert_pod(pod)
        session = engine.session(state.view())
        fitting = session.fitting(pod, sorted(state.view().nodes))  # kube-scheduler's fit
        offered = rng.sample(fitting, k=rng.randint(0, len(fitting)))  # ... on its sample
        passed = engine.filter(state, pod, offered, fit=True).passed
        if passed:
            node = rng.choice(sorted(passed))
            engine.consume(pod.metadata.uid, node)
            state.assume(pod, node)
        reserved_within_free(state, engine)
        nobody_stranded(state, engine)
    assert sum(engine.reserved().values(), EMPTY) == sum(
        (slot.request for a in _admissions(engine) for slot in a.slots.values()), EMPTY
    )


def _admissions(engine: Engine) -> list[Admission]:
    return [a for key in list(engine.admitted()) if (a := engine.admission(key)) is not None]
