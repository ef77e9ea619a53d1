"""A queue tree (`spec.parent`) through the real stock kube-scheduler: every level of the tree
shares its parent's capacity by weight, and a starved leaf reclaims from its sibling before its
cousin.

Queues are cluster-scoped: each test names its own after its namespace, parents first (a queue's
parent must exist when it is created).
"""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from extender.api.scheduling import API_VERSION
from extender.kube import apply_object, condition, list_objects, wait_until
from tests.builders import QueueBuilder, make_queue
from tests.e2e.conftest import ClusterObject, NodeFactory, PodFactory, events
from tests.e2e.gangs import BindTimeline, alive, bound, finish, submit_gang, wait_bound


def make_tree(
    namespace: str, cluster_object: ClusterObject, *queues: QueueBuilder
) -> dict[str, str]:
    """Create `queues` (parents before children) named after the namespace: short name -> name."""
    names = {}
    for queue in queues:
        body = queue.build()
        short = body["metadata"]["name"]
        body["metadata"]["name"] = names[short] = f"{namespace}-{short}"
        parent = body["spec"].get("parent")
        if parent:
            body["spec"]["parent"] = names[parent]
        cluster_object(body)
    return names


def test_each_level_of_a_saturated_tree_gets_its_share_by_weight(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    """root -> ml (weight 1) -> {team-a, team-b} (weight 1 each), root -> web (weight 3). Every
    leaf asks for far more than the cluster has. Once the nodes are full, ml holds 1/4 of them
    and web 3/4; within ml, team-a and team-b hold half each. (Were the three leaves shared as
    flat queues, web would hold 1/3, and team-a and team-b 1/3 each.)"""
    own_nodes(2, cpu="64")  # 128 cpu: sixteen gangs of 2 x 4 cpu
    names = make_tree(
        namespace,
        cluster_object,
        make_queue("ml").weight(1),
        make_queue("team-a").parent("ml"),
        make_queue("team-b").parent("ml"),
        make_queue("web").weight(3),
    )
    blockers = [f"blocker-{i}" for i in range(2)]  # outside any queue, until every gang waits
    for name in blockers:
        apply_object(api, pod(name).cpu("64").build())
    wait_bound(api, namespace, blockers, 2, "the blockers bound")

    # Shared is all the cluster's capacity, the dev cluster's own nodes too (16 cpu): each leaf
    # asks for more than its share of all of it, so none deserves less than its weight says.
    counts = {"team-a": 8, "team-b": 8, "web": 16}  # 64, 64 and 128 cpu asked
    gangs: dict[str, list[list[str]]] = {leaf: [] for leaf in counts}
    with BindTimeline(api, namespace) as timeline:
        for index in range(max(counts.values())):  # submitted in turns
            for leaf in (leaf for leaf, count in counts.items() if index < count):
                members = submit_gang(
                    api, namespace, pod, f"{leaf}-{index}", 2, cpu="4", queue=names[leaf]
                )
                gangs[leaf].append(members)
        every = {f"{leaf}-{index}" for leaf, count in counts.items() for index in range(count)}

        def refused() -> bool:  # every gang waits, said on its PodGroup (its pods held)
            conditions = {
                g["metadata"]["name"]: condition(g.get("status") or {}, "Unschedulable")
                for g in list_objects(api, API_VERSION, "PodGroup", namespace=namespace)
            }
            return all(conditions.get(name, {}).get("status") == "True" for name in every)

        wait_until(refused, timeout=120, what="every gang refused while the blockers run")
        finish(api, namespace, blockers)

        def bound_cpu() -> dict[str, int]:  # cpu each leaf's gangs use
            return {
                leaf: 4 * len(bound(api, namespace, [m for g in members for m in g]))
                for leaf, members in gangs.items()
            }

        wait_until(
            lambda: sum(bound_cpu().values()) == 128,
            timeout=120,
            what="the nodes full",
            describe=lambda: str(bound_cpu()),
        )
    figures = bound_cpu()
    ml = figures["team-a"] + figures["team-b"]
    # Top level, 1:3 of 128 cpu: 32 and 96, each within 10% of the 128 shared.
    assert abs(ml - 32) <= 12.8, figures
    assert abs(figures["web"] - 96) <= 12.8, figures
    # Within ml, 1:1 of what ml holds, each within 10% of it.
    for leaf in ("team-a", "team-b"):
        assert abs(figures[leaf] - ml / 2) <= ml / 10, figures
    assert timeline.partial() == []
    assert events(api, namespace, reason="Preempted") == []  # by admission, not by evicting


@pytest.mark.usefixtures("preempting")
def test_a_starved_leaf_reclaims_from_its_sibling_before_its_cousin(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    """root -> ml -> {team-a, team-b}, root -> web. team-b holds 6 cpu and web 10 of 16. web
    deserves 8 and ml 8 (their specs): web is over its share. team-a deserves 4 of ml's 8 (its
    spec; the webhook wants a parent to name what its children's deserved add up to), so team-b
    is over the 4 left to it. A gang of team-a could
    take from either, and web's gangs cost less (one pod each, and their names come first): it
    takes from team-b, its sibling, and web keeps all it runs. (The spec fixes what web and
    team-a deserve: the dev cluster's own nodes are shared too, and would leave room for both.)"""
    own_nodes(2, cpu="8")  # 16 cpu
    names = make_tree(
        namespace,
        cluster_object,
        make_queue("ml").deserved(cpu="8"),
        make_queue("team-a").parent("ml").deserved(cpu="4"),
        make_queue("team-b").parent("ml"),
        make_queue("web").deserved(cpu="8"),
    )
    cousin = [  # first: the one-cpu pods after them fill whatever room they leave
        submit_gang(api, namespace, pod, f"cou{i}", 1, cpu="2", queue=names["web"])
        for i in range(5)
    ]
    for members in cousin:
        wait_bound(api, namespace, members, 1, "web's gang bound")
    sibling = [
        submit_gang(api, namespace, pod, f"sib{i}", 2, cpu="1", queue=names["team-b"])
        for i in range(3)
    ]
    for members in sibling:
        wait_bound(api, namespace, members, 2, "team-b's gang bound")

    with BindTimeline(api, namespace) as timeline:
        wanted = submit_gang(api, namespace, pod, "a0", 2, cpu="1", queue=names["team-a"])
        wait_bound(api, namespace, wanted, 2, "team-a's gang bound after reclaiming")
    assert timeline.partial() == []

    taken = [len(alive(api, namespace, members)) for members in sibling]
    assert sorted(taken) == [0, 2, 2], taken  # one whole gang of team-b's reclaimed
    assert [alive(api, namespace, members) for members in cousin] == cousin  # web untouched
    said = [e["message"] for e in events(api, namespace, reason="Preempting", name="a0")]
    assert said and all(f"{namespace}/cou" not in message for message in said), said
