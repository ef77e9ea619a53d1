"""Fair sharing over time through the real stock kube-scheduler: two queues weighted 1:3 hold the
capacity 1:3 however the scheduler orders their pods, and a large gang behind a stream of small
ones starts once it has waited its sla limit.

Both run under a `BindTimeline`: no gang may stay partly bound longer than its bindings take.
"""

from __future__ import annotations

import time

from kubernetes import client as k8s

from extender.api.scheduling import API_VERSION, SLA_ANNOTATION
from extender.kube import apply_object, condition, list_objects, wait_until
from tests.builders import make_queue
from tests.e2e.conftest import ClusterObject, NodeFactory, PodFactory, events, priority_class
from tests.e2e.gangs import BindTimeline, bound, finish, submit_gang, wait_bound


def test_two_queues_weighted_one_to_three_share_the_capacity_one_to_three(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    pod: PodFactory,
    cluster_object: ClusterObject,
) -> None:
    """Both queues ask for far more than the cluster has; whenever capacity frees, the fair order
    hands it out by share of deserved, so they hold 1:3 of it, not first come first served (the
    light queue submits first, and the scheduler tries its pods first) and without reclaiming."""
    own_nodes(2, cpu="64")  # 128 cpu: sixteen gangs of 2 x 4 cpu
    light, heavy = f"{namespace}-light", f"{namespace}-heavy"
    cluster_object(make_queue(light).weight(1).build())
    cluster_object(make_queue(heavy).weight(3).build())
    # The scheduler tries the light queue's pods first.
    first = cluster_object(priority_class(f"{namespace}-first", 100))
    blockers = [f"blocker-{i}" for i in range(2)]  # outside any queue, until all gangs wait
    for name in blockers:
        apply_object(api, pod(name).cpu("64").build())
    wait_bound(api, namespace, blockers, 2, "the blockers bound")

    gangs: dict[str, list[list[str]]] = {light: [], heavy: []}
    with BindTimeline(api, namespace) as timeline:
        for queue, count in ((light, 12), (heavy, 24)):  # the light queue submits first
            for index in range(count):
                name = f"{queue.rsplit('-', 1)[1]}{index}"
                urgency = first if queue == light else ""
                members = submit_gang(
                    api, namespace, pod, name, 2, cpu="4", queue=queue, priority_class=urgency
                )
                gangs[queue].append(members)
        every = {
            f"{queue.rsplit('-', 1)[1]}{index}"
            for queue, members in gangs.items()
            for index in range(len(members))
        }

        def refused() -> bool:  # every gang waits, said on its PodGroup (its pods held)
            conditions = {
                g["metadata"]["name"]: condition(g.get("status") or {}, "Unschedulable")
                for g in list_objects(api, API_VERSION, "PodGroup", namespace=namespace)
            }
            return all(conditions.get(name, {}).get("status") == "True" for name in every)

        wait_until(refused, timeout=120, what="every gang refused while the blockers run")
        finish(api, namespace, blockers)

        def bound_cpu() -> dict[str, int]:  # cpu of the queue's gangs that still run
            return {
                q: 4 * len(bound(api, namespace, [m for g in members for m in g]))
                for q, members in running.items()
            }

        def one_to_three(when: str) -> None:
            wait_until(
                lambda: sum(bound_cpu().values()) == 128,
                timeout=120,
                what=f"the nodes full ({when})",
                describe=lambda: str(bound_cpu()),
            )
            figures = bound_cpu()  # 1:3 of 128 cpu is 32:96, within 10% of the allocated 128
            assert abs(figures[light] - 32) <= 12.8, (when, figures)
            assert abs(figures[heavy] - 96) <= 12.8, (when, figures)

        running = gangs
        one_to_three("first fill")
        # A quarter of each queue's running gangs end: 64 cpu free, handed out by share again.
        for queue, ending in ((light, 2), (heavy, 6)):
            done = [g for g in gangs[queue] if bound(api, namespace, g) == g][:ending]
            for members in done:
                finish(api, namespace, members)
            running = {**running, queue: [g for g in gangs[queue] if g not in done]}
        one_to_three("after a quarter ended")
    assert timeline.partial() == []
    assert events(api, namespace, reason="Preempted") == []  # by admission, not by evicting


def test_a_large_gang_behind_a_stream_of_small_ones_starts_after_its_sla_limit(
    api: k8s.ApiClient, namespace: str, own_nodes: NodeFactory, pod: PodFactory
) -> None:
    """One 8-cpu node; one-pod 2-cpu gangs keep coming, each running about a second, so there
    is always a small one that fits the capacity just freed and never the 8 cpu the large gang
    needs at once (it is older, but backfill lets the small ones past it). Once it has waited
    its PodGroup's `sla-waiting-time`, it holds what frees until it fits."""
    own_nodes(1, cpu="8")
    limit = 15.0
    smalls: list[str] = []

    def submit_small() -> None:
        smalls.extend(submit_gang(api, namespace, pod, f"s{len(smalls)}", 1, cpu="2"))

    for _ in range(4):
        submit_small()
    wait_until(lambda: len(bound(api, namespace, smalls)) == 4, timeout=60, what="node full")

    with BindTimeline(api, namespace) as timeline:
        started = time.monotonic()
        big = submit_gang(
            api, namespace, pod, "big", 2, cpu="4", annotations={SLA_ANNOTATION: f"{limit:g}s"}
        )
        ended: set[str] = set()
        passed_it = 0  # small gangs bound while the large one waited
        while time.monotonic() - started < limit + 45 and bound(api, namespace, big) != big:
            running = [s for s in bound(api, namespace, smalls) if s not in ended]
            passed_it = len(bound(api, namespace, smalls)) - 4
            oldest = min(running, key=lambda s: timeline.bound_at.get(s, 0.0), default=None)
            if oldest is not None and time.monotonic() - timeline.bound_at.get(oldest, 0.0) > 1:
                finish(api, namespace, [oldest])  # one at a time: never 8 cpu free at once
                ended.add(oldest)
            if len(smalls) - len(bound(api, namespace, smalls)) < 3:
                submit_small()  # three small gangs always wait
            time.sleep(0.3)
        waited = time.monotonic() - started

    assert bound(api, namespace, big) == big, f"the large gang never started ({waited:.0f}s)"
    assert passed_it >= 4, "the stream did not keep the node busy: nothing was tested"
    assert waited >= limit - 1, f"started after {waited:.1f}s: the stream did not starve it"
    assert waited <= limit + 20, f"started {waited - limit:.1f}s after its limit"
    assert timeline.partial() == []
    assert events(api, namespace, reason="Preempted") == []  # by draining, not by evicting
