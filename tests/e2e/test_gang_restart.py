"""Lahar killed and restarted around gangs: nothing bound partly, nothing bound twice.

Lahar's state lives in the API (pods, bindings, PodGroups); a restarted Lahar rebuilds it and
answers no filter or bind before it has. A gang held at the bind barrier when Lahar dies has
nothing bound (held bindings are created only together); a gang found partly bound (bindings cut
short by the kill) is completed before any other gang and reported on its PodGroup.
"""

from __future__ import annotations

from kubernetes import client as k8s

from extender import devcluster
from extender.kube import apply_object, pod_when, wait_until
from tests.builders import make_group
from tests.e2e.conftest import (
    NodeFactory,
    PodFactory,
    lahar_metric,
    restart_lahar,
    scheduled_counts_of,
)
from tests.e2e.gangs import (
    bound,
    finish,
    group_events,
    refused_as,
    submit_gang,
    wait_bound,
    wait_phase,
)

GATE = "lahar.io/e2e-hold"


def test_killed_while_a_gang_waits_at_the_barrier(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    """Three members reach bind and are held; the fourth is kept from the scheduler by a
    scheduling gate. Lahar is killed: none of the three is bound. After the restart the gate is
    lifted and the whole gang binds, each pod once."""
    own_nodes(2, cpu="4")
    apply_object(api, make_group("held").ns(namespace).min_member(4).build())
    names = [f"held-{i}" for i in range(4)]
    for name in names[:3]:
        apply_object(api, pod(name).cpu("1").group("held").build())
    apply_object(api, pod(names[3]).cpu("1").group("held").gated(GATE).build())
    wait_until(
        lambda: lahar_metric(dev_cluster, "lahar_gang_members_held") >= 3,
        timeout=60,
        what="three members to be held at Lahar's bind barrier",
    )

    dev_cluster.stop_component("lahar", kill=True)
    try:
        assert bound(api, namespace, names) == []
    finally:
        restart_lahar(dev_cluster)
    apply_object(api, pod(names[3]).cpu("1").group("held").build())  # the gate lifted

    wait_bound(api, namespace, names, 4, "the whole gang to bind after the restart")
    wait_phase(api, namespace, "held", "Running")
    assert scheduled_counts_of(api, namespace, names) == dict.fromkeys(names, 1)
    assert lahar_metric(dev_cluster, "lahar_partial_gangs_total") == 0


def test_a_gang_found_partly_bound_is_completed_before_a_rival(
    dev_cluster: devcluster.DevCluster,
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
) -> None:
    """While Lahar is down, gang `half` (4 x 2 cpu) has 2 members bound, as if Lahar had been
    killed between its bindings, and gang `rival` (2 x 2 cpu) wants the same free node. The
    restarted Lahar completes `half` first and says so on its PodGroup; `rival` follows."""
    first, _second = own_nodes(2, cpu="4")
    dev_cluster.stop_component("lahar", kill=True)
    try:
        apply_object(api, make_group("half").ns(namespace).min_member(4).build())
        half = [f"half-{i}" for i in range(4)]
        for index, name in enumerate(half):
            member = pod(name).cpu("2").group("half")
            apply_object(api, (member.on(first) if index < 2 else member).build())
        rival = submit_gang(api, namespace, pod, "rival", 2, cpu="2")
        wait_bound(api, namespace, half, 2, "two members of half to be bound by hand")
    finally:
        restart_lahar(dev_cluster)

    wait_bound(api, namespace, half, 4, "the partly bound gang to be completed")
    for name in rival:
        pod_when(api, namespace, name, "to wait for room", refused_as(api, namespace, "rival"))
    assert bound(api, namespace, rival) == []
    reported = [message for reason, message in group_events(api, namespace, "half")]
    assert any("found 2 of 4 members bound; completing it first" in m for m in reported)

    finish(api, namespace, half)
    wait_bound(api, namespace, rival, 2, "the rival gang once half finished")
