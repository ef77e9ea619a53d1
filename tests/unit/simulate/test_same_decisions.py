"""The simulator decides as the real path does: on the same cluster state, the nodes the
simulated scheduler chooses among are exactly those kube-scheduler's in-tree filters (cordon,
node selector and affinity, taints) and resource fit keep and the extender's filter verb passes,
that score highest (hypothesis draws the clusters, gangs included, and pods asked about first,
so that the gang rules hold admissions and reservations when w0 is asked; and, in a second
test, nodes with labels, taints and cordons and pods that select, require or tolerate them)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.actions.filter import filter_nodes
from extender.api.candidates import Candidates
from extender.api.objects import Pod
from extender.api.wire import ExtenderArgs
from extender.cache.state import ClusterState
from extender.framework.engine import Engine
from extender.framework.policy import load_policy
from extender.plugins import REGISTRY
from extender.simulate.scheduler import Scheduler
from tests.builders import (
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    cluster,
    make_group,
    make_node,
    make_pod,
)

POLICY = load_policy(Path(__file__).resolve().parents[3] / "policy" / "lahar.yaml", REGISTRY)


@dataclass
class Scene:
    nodes: list[NodeBuilder] = field(default_factory=list)
    pods: list[PodBuilder] = field(default_factory=list)
    groups: list[PodGroupBuilder] = field(default_factory=list)
    ahead: list[str] = field(default_factory=list)  # uids asked about before w0, in order

    def state(self) -> ClusterState:
        state = cluster(self.nodes, self.pods)
        for group in self.groups:
            state.upsert_pod_group(group.model())
        return state


@st.composite
def scenes(draw: st.DrawFn) -> Scene:
    """Nodes, pods bound where they fit, and a pending gang or plain pods (w0 is asked about)."""
    scene = Scene()
    count = draw(st.integers(2, 6))
    free = [draw(st.sampled_from([2, 4, 8])) for _ in range(count)]
    scene.nodes = [make_node(f"n{i}").cpu(str(cpu)) for i, cpu in enumerate(free)]
    for index in range(draw(st.integers(0, 8))):
        node = draw(st.integers(0, count - 1))
        cpu = draw(st.integers(1, 3))
        if cpu <= free[node]:
            free[node] -= cpu
            scene.pods.append(make_pod(f"r{index}").cpu(str(cpu)).on(f"n{node}").uid(f"r{index}"))
    size = draw(st.integers(1, 4))
    cpu = draw(st.integers(1, 4))
    gang = draw(st.booleans())
    if gang:
        scene.groups.append(make_group("g").min_member(size))
    for index in range(size):
        pod = make_pod(f"w{index}").cpu(str(cpu)).uid(f"w{index}").scheduler("lahar")
        scene.pods.append(pod.group("g") if gang else pod)
    if draw(st.booleans()):  # a gang h asked about first: admitted (holding room) or refused
        first = draw(st.integers(1, 3))
        scene.groups.append(make_group("h").min_member(first))
        for index in range(first):
            pod = make_pod(f"h{index}").cpu(str(draw(st.integers(1, 4)))).uid(f"h{index}")
            scene.pods.append(pod.scheduler("lahar").group("h"))
        scene.ahead = ["h0"]
    return scene


@st.composite
def constrained_scenes(draw: st.DrawFn) -> Scene:
    """A scene whose nodes carry a zone label, maybe a taint, maybe a cordon, and whose pending
    pods may select a zone, require one by node affinity or tolerate the taint (each task's
    pods alike, as a Job's template makes them)."""
    scene = draw(scenes())
    for node in scene.nodes:
        node.label("zone", draw(st.sampled_from(["a", "b"])))
        if draw(st.integers(0, 3)) == 0:
            node.taint(
                "gpu", draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]))
            )
        if draw(st.integers(0, 4)) == 0:
            node.cordoned()
    for prefix in ("w", "h"):
        members = [pod for pod in scene.pods if pod.build()["metadata"]["name"][0] == prefix]
        zone = draw(st.sampled_from([None, "a", "b"]))
        required = draw(st.sampled_from([None, ("In", "a"), ("NotIn", "a")]))
        tolerates = draw(st.booleans())
        for pod in members:
            if zone is not None:
                pod.node_selector("zone", zone)
            if required is not None:
                pod.requires("zone", *required)
            if tolerates:
                pod.tolerate_any("gpu")
    return scene


def _in_tree(state: ClusterState, pod: Pod) -> list[str]:
    """The nodes kube-scheduler's in-tree filters pass before it asks the extender: not
    cordoned (NodeUnschedulable), matching the node selector and required node affinity
    (NodeAffinity), no NoSchedule or NoExecute taint the pod does not tolerate
    (TaintToleration)."""
    return [
        name
        for name, info in sorted(state.view().nodes.items())
        if not info.unschedulable and pod.may_run_on(info.labels, info.taints, name)
    ]


def _extender_choices(engine: Engine, state: ClusterState, pod: Pod) -> set[str]:
    """As the real path decides: kube-scheduler's in-tree filters and resource fit
    (NodeResourcesFit: what Lahar's predicates compute) keep the nodes the pod may run and fits
    on, the filter verb keeps what Lahar allows of those, and the fullest scores highest
    (binpack in-tree)."""
    session = engine.session(state.view())
    names = session.fitting(pod, _in_tree(state, pod))
    if not names:
        return set()
    args = ExtenderArgs(pod=pod, node_names=names)
    reply = json.loads(filter_nodes(engine, state, args, Candidates(names, frozenset(names))))
    passed = reply["NodeNames"]
    if not passed:
        return set()
    return session.best(pod, set(passed))


async def _never(namespace: str, name: str, uid: str, node: str) -> None:
    raise AssertionError("nothing is bound here")


@settings(max_examples=150, deadline=None)
@given(scenes())
def test_the_simulator_chooses_among_the_nodes_the_extender_would(scene: Scene) -> None:
    _same_choices(scene)


@settings(max_examples=150, deadline=None)
@given(constrained_scenes())
def test_on_labelled_tainted_and_cordoned_nodes_too(scene: Scene) -> None:
    _same_choices(scene)


def _same_choices(scene: Scene) -> None:
    extender_state, simulator_state = scene.state(), scene.state()
    extender = Engine(POLICY)
    simulator = Scheduler(simulator_state, Engine(POLICY), _never)
    for uid in [*scene.ahead, "w0"]:
        expected = _extender_choices(extender, extender_state, extender_state.pods[uid])
        assert simulator.choices(simulator_state.pods[uid]) == expected, uid
    if scene.ahead:
        assert extender.gang_rules and simulator.engine.gang_rules
        assert set(extender.admitted()) == set(simulator.engine.admitted())
