"""PodGroup rules (`scheduling.volcano.sh/v1beta1`) for CREATE: the spec parses (minMember,
minTaskMember, minResources as quantities), priorityClassName is at most 253 characters, a network
topology (the group's, each sub-group policy's) gives highestTierAllowed or highestTierName, not
both (Volcano's rule), with a mode of hard or soft, a tier of 0 or more and a tier name of at most
253 characters (`topology.network_topology_problems`, as for Jobs), and the queue it names is a DNS
subdomain (as Volcano's schema has it), exists, is Open under Open ancestors and is a leaf (no
child queues), so a gang is refused at creation instead of waiting forever in a queue that takes no
work. Volcano's PodGroup rules do not ask for a leaf queue (its Job rules do); Lahar does, since
its scheduler admits no gang in a queue with child queues. Operators such as Kubeflow's and Spark's
create PodGroups too; they get the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.admission.names import MAX_SUBDOMAIN, dns_subdomain
from extender.admission.problems import INT32, Problem, field, parse, shown
from extender.admission.queue_tree import QueueLookup
from extender.admission.queues import work_queue_problems
from extender.admission.topology import network_topology_problems
from extender.api.scheduling import PodGroup


def check_pod_group(obj: Mapping[str, Any] | None, view: QueueLookup) -> list[Problem]:
    group, problems = parse(PodGroup, obj, "PodGroup")
    if group is None:
        return problems
    spec = group.spec
    problems = []
    if not 0 <= spec.min_member <= INT32:
        problems.append(
            Problem("spec.minMember", f"must be from 0 to {INT32}, got {shown(spec.min_member)}")
        )
    for task, count in spec.min_task_member.items():
        if not 0 <= count <= INT32:
            problems.append(
                Problem(
                    field("spec", "minTaskMember", task),
                    f"must be from 0 to {INT32}, got {shown(count)}",
                )
            )
    if (length := len(spec.priority_class_name)) > MAX_SUBDOMAIN:
        problems.append(
            Problem(
                "spec.priorityClassName",
                f"must be at most {MAX_SUBDOMAIN} characters (it is {length})",
            )
        )
    problems += network_topology_problems(spec.network_topology, "spec", "networkTopology")
    for index, policy in enumerate(spec.sub_group_policy or ()):
        at = ("spec", "subGroupPolicy", index, "networkTopology")
        problems += network_topology_problems(policy.network_topology, *at)
    if not spec.queue:  # (left out, it reads as the default queue)
        problems.append(Problem("spec.queue", "must not be empty: leave it out for `default`"))
        return problems
    if (reason := dns_subdomain(spec.queue)) is not None:  # as Volcano's schema has it
        problems.append(Problem("spec.queue", f"{shown(spec.queue)} {reason}"))
        return problems
    problems += [Problem("spec.queue", p.reason) for p in work_queue_problems(group.queue, view)]
    return problems
