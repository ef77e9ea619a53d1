"""What `lahar simulate` runs when it is given no trace or no policy.

- The story trace: the two-job contention story (the demo's second story) as a trace: two copies of
  the TensorFlow example grown to 1 ps + 5 workers (11 cpu, minAvailable 6) arriving together on two
  8-cpu nodes that have room for one of them, not both. Each trains for ten minutes once whole.
- The `stock` policy: the stock kube-scheduler's way, pod after pod: resource fit and least
  allocated first (its NodeResourcesFit default), no gangs, no queues, no preemption. Compared
  with Lahar's policy it shows what gang scheduling changes. Pure.
"""

from __future__ import annotations

from extender.framework.policy import Policy, build_policy
from extender.plugins import REGISTRY
from extender.simulate.trace import Trace, parse_trace

STOCK = "stock"
STORY_MINUTES = 10


def stock_policy() -> Policy:
    document = {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [{"plugins": [{"name": "predicates"}, {"name": "spread"}]}],
    }
    return build_policy(document, REGISTRY, source="the stock policy")


def story_trace() -> Trace:
    seconds = STORY_MINUTES * 60
    job = {
        "arrival": 0,
        "minAvailable": 6,
        "tasks": [
            {"name": "ps", "replicas": 1, "cpu": "1", "memory": "1Gi", "duration": seconds},
            {"name": "worker", "replicas": 5, "cpu": "2", "memory": "2Gi", "duration": seconds},
        ],
    }
    return parse_trace(
        {
            "nodes": [{"count": 2, "cpu": "8", "memory": "32Gi"}],
            "jobs": [{**job, "name": "tf-a"}, {**job, "name": "tf-b"}],
        },
        source="the story trace",
    )
