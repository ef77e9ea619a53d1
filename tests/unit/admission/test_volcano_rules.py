"""Volcano's admission rules, rule by rule (docs/admission-rules.md lists them): for each, a job,
PodGroup or Queue Volcano accepts is accepted, and one Volcano refuses is refused, the denial
naming the field. Each table is one family of rules; a row's id is the rule's name in the doc.
Reference implementations of Volcano's dependsOn check and queue resource check are ported below
and compared with Lahar's rules over generated inputs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.admission.admit import (
    Outcome,
    Rule,
    Settings,
    mutate_job,
    validate_job,
    validate_pod_group,
    validate_queue,
)
from extender.admission.jobs import check_job, parse_job
from extender.admission.queues import check_queue
from extender.api.quantity import parse_quantity
from tests.builders import (
    JobBuilder,
    PodGroupBuilder,
    QueueBuilder,
    ReviewBuilder,
    make_group,
    make_job,
    make_queue,
    make_review,
)
from tests.unit.admission.helpers import Queues, cluster_queues

GPU = "nvidia.com/gpu"
CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
T = "spec.tasks[0].template.spec"
C = f"{T}.containers[0]"


def run(rule: Rule, review: ReviewBuilder, view: Queues | None = None) -> Outcome:
    return rule(review.request(), view or cluster_queues(), Settings("lahar"))


def accepted(outcome: Outcome) -> None:
    assert outcome.decision.allowed, outcome.message


def refused(outcome: Outcome, path: str, reason: str) -> None:
    """Refused, the denial naming `path` with a reason that says `reason`."""
    assert not outcome.decision.allowed
    found = {p.path: p.reason for p in outcome.decision.problems}
    assert path in found, outcome.message
    assert reason in found[path], found[path]
    assert f"{path}: " in outcome.message if path else reason in outcome.message


def tf() -> JobBuilder:
    """A job Volcano accepts: `ps` (1) and `worker` (2)."""
    return make_job("tf").task("ps").task("worker", 2)


def job(*, spec: dict[str, Any] | None = None, **container: Any) -> JobBuilder:
    """One task `w` whose pod spec has `spec` merged in and whose container `main` has
    `container` merged in (camelCase keys)."""
    builder = make_job("j").task("w")
    body = builder.build()["spec"]["tasks"][0]["template"]["spec"]
    builder.set(T, {**body, **(spec or {})})
    builder.set("spec.tasks[0].template.spec.containers[0]", {**body["containers"][0], **container})
    return builder


def fanned(name_length: int) -> JobBuilder:
    """Eleven one-pod tasks; the last, `a`, sits at position 10, where Volcano puts the replica
    index when it checks pod names: its pods are named j...j-a-0, Volcano checks j...j-a-10."""
    builder = make_job("j" * name_length)
    for name in "bcdefghijk":
        builder.task(name)
    return builder.task("a")


# -- Job CREATE ----------------------------------------------------------------------------------

JOB_CREATE = [
    # tasks
    ("tasks-required", tf(), make_job("tf"), "spec.tasks", "at least one task"),
    (
        "task-names-unique",
        tf(),
        make_job("tf").task("w").task("w"),
        "spec.tasks[1].name",
        "is the name of spec.tasks[0]",
    ),
    (
        "task-name-dns-label",
        make_job("tf").task("worker-1"),
        make_job("tf").task("Worker"),
        "spec.tasks[0].name",
        "lower case",
    ),
    (
        "task-replicas-not-negative",
        tf().set("spec.tasks[0].replicas", 0),
        tf().set("spec.tasks[0].replicas", -1),
        "spec.tasks[0].replicas",
        "greater than or equal to 0",
    ),
    (
        "task-min-available-not-negative",
        tf().set("spec.tasks[0].minAvailable", 0),
        tf().set("spec.tasks[0].minAvailable", -1),
        "spec.tasks[0].minAvailable",
        "greater than or equal to 0",
    ),
    (
        "task-min-available-within-replicas",
        make_job("tf").task("w", 2, min_available=2),
        make_job("tf").task("w", 2, min_available=3),
        "spec.tasks[0].minAvailable",
        "3 is more than the task's 2 replicas",
    ),
    (
        "task-max-retry-not-negative",
        make_job("tf").task("w", max_retry=0),
        make_job("tf").task("w", max_retry=-1),
        "spec.tasks[0].maxRetry",
        "must be from 0",
    ),
    # the job's numbers
    (
        "min-available-not-negative",
        tf().min_available(0),
        tf().min_available(-1),
        "spec.minAvailable",
        "greater than or equal to 0",
    ),
    (
        "min-available-within-replicas",
        tf().min_available(3),
        tf().min_available(4),
        "spec.minAvailable",
        "4 is more than the tasks' 3 replicas",
    ),
    ("max-retry-not-negative", tf().max_retry(0), tf().max_retry(-1), "spec.maxRetry", "from 0"),
    (
        "ttl-not-negative",
        tf().ttl(0),
        tf().ttl(-1),
        "spec.ttlSecondsAfterFinished",
        "greater than or equal to 0",
    ),
    (
        "min-success-at-least-1",
        tf().min_success(1),
        tf().min_success(0),
        "spec.minSuccess",
        "greater than or equal to 1",
    ),
    # names
    (
        "job-name-qualified",
        make_job("x" * 59).task("w"),
        make_job("x" * 64).task("w"),
        "metadata.name",
        "at most 63 characters",
    ),
    (
        "pod-name-at-most-63",
        make_job("x" * 59).task("w"),  # x...x-w-0: 63 characters
        make_job("x" * 60).task("w"),
        "spec.tasks[0].name",
        "with the task's position as index",
    ),
    (
        "pod-name-checked-once-per-task",  # as Volcano: the 101st replica's name is not checked
        make_job("x" * 58).task("w", 101),  # x...x-w-0: 62 characters, x...x-w-100: 64
        make_job("x" * 60).task("w", 101),
        "spec.tasks[0].name",
        "with the task's position as index",
    ),
    (
        "pod-name-with-task-position",
        fanned(58),  # j...j-a-0: 62 characters, j...j-a-10: 63
        fanned(59),
        "spec.tasks[10].name",
        "with the task's position as index",
    ),
    # lifecycle policies
    (
        "policy-event-or-exit-code",
        tf().policy("PodFailed", "RestartJob"),
        tf().policy("PodFailed", "RestartJob", exit_code=3),
        "spec.policies[0]",
        "not both",
    ),
    (
        "policy-needs-event-or-exit-code",
        tf().policy(None, "RestartJob", exit_code=3),
        tf().policy(None, "RestartJob"),
        "spec.policies[0]",
        "needs an event",
    ),
    (
        "policy-event-allowed",
        tf().policy("PodEvicted", "RestartJob"),
        tf().policy("PodRunning", "RestartJob"),
        "spec.policies[0].event",
        "unknown event 'PodRunning'",
    ),
    (
        "policy-action-allowed",
        tf().policy("PodFailed", "AbortJob"),
        tf().policy("PodFailed", "SyncJob"),
        "spec.policies[0].action",
        "got 'SyncJob'",
    ),
    (
        "policy-event-once",
        tf().policy(events=["PodFailed", "PodFailed"]).policy("PodEvicted"),
        tf().policy("PodFailed").policy(events=["PodEvicted", "PodFailed"]),
        "spec.policies[1].events[1]",
        "already handled by spec.policies[0]",
    ),
    (
        "policy-exit-code-not-0",
        tf().policy(exit_code=1),
        tf().policy(exit_code=0),
        "spec.policies[0].exitCode",
        "0 means success",
    ),
    (
        "policy-exit-code-once",
        tf().policy(exit_code=1).policy(exit_code=2),
        tf().policy(exit_code=1).policy(exit_code=1),
        "spec.policies[1].exitCode",
        "already handled",
    ),
    (
        "policy-any-event-alone",
        tf().policy("*", "RestartJob"),
        tf().policy("*", "RestartJob").policy("PodFailed", "AbortJob"),
        "spec.policies",
        "'*' matches every event",
    ),
    (
        "task-policies",
        tf().policy("TaskCompleted", "CompleteJob", task="worker"),
        tf().policy("Done", "CompleteJob", task="worker"),
        "spec.tasks[1].policies[0].event",
        "unknown event",
    ),
    # plugins
    (
        "plugins-known",
        tf().plugin("env").plugin("svc").plugin("ssh").plugin("pytorch"),
        tf().plugin("horovod"),
        "spec.plugins.horovod",
        "unknown plugin",
    ),
    # volumes
    (
        "volume-mount-path-required",
        tf().volume("/data", claim_name="data"),
        tf().volume("", claim_name="data"),
        "spec.volumes[0].mountPath",
        "required",
    ),
    (
        "volume-mount-path-no-colon",
        tf().volume("/data", claim_name="data"),
        tf().volume("/data:ro", claim_name="data"),
        "spec.volumes[0].mountPath",
        "must not contain ':'",
    ),
    (
        "volume-mount-path-once",
        tf().volume("/a", claim_name="a").volume("/b", claim=CLAIM),
        tf().volume("/a", claim_name="a").volume("/a", claim=CLAIM),
        "spec.volumes[1].mountPath",
        "is mounted by spec.volumes[0] already",
    ),
    (
        "volume-claim-or-claim-name",
        tf().volume("/a", claim=CLAIM),
        tf().volume("/a"),
        "spec.volumes[0]",
        "one of the two",
    ),
    (
        "volume-claim-not-both",
        tf().volume("/a", claim_name="a"),
        tf().volume("/a", claim_name="a", claim=CLAIM),
        "spec.volumes[0]",
        "one of the two",
    ),
    (
        "volume-claim-name-valid",
        tf().volume("/a", claim_name="data.set-1"),
        tf().volume("/a", claim_name="Data_1"),
        "spec.volumes[0].volumeClaimName",
        "lower case",
    ),
    # the queue
    ("queue-exists", tf().queue("research"), tf().queue("nope"), "spec.queue", "does not exist"),
    ("queue-open", tf().queue("default"), tf().queue("closed"), "spec.queue", "is Closed"),
    (
        "queue-not-root",
        tf().queue("research"),
        tf().queue("root"),
        "spec.queue",
        "the root queue takes no jobs",
    ),
    (
        "queue-name-dns-subdomain",
        tf().queue("research"),
        tf().queue("Research"),
        "spec.queue",
        "lower case",
    ),
    # dependsOn
    (
        "depends-on-known-tasks",
        tf().task("eval", depends_on=["worker"]),
        tf().task("eval", depends_on=["trainer"]),
        "spec.tasks[2].dependsOn.name[0]",
        "no task is named 'trainer'",
    ),
    (
        "depends-on-each-task-once",
        tf().task("eval", depends_on=["ps", "worker"]),
        tf().task("eval", depends_on=["worker", "worker"]),
        "spec.tasks[2].dependsOn.name[1]",
        "worker is named by spec.tasks[2].dependsOn.name[0] too",
    ),
    (
        "depends-on-acyclic",
        make_job("d").task("a").task("b", depends_on=["a"]),
        make_job("d").task("a", depends_on=["b"]).task("b", depends_on=["a"]),
        "spec.tasks",
        "dependsOn forms a cycle (a -> b -> a)",
    ),
    # names Volcano's schema checks
    (
        "priority-class-name-dns-subdomain",
        tf().priority_class("high-priority"),
        tf().priority_class("High_Priority"),
        "spec.priorityClassName",
        "lower case",
    ),
    (
        "scheduler-name-at-most-63",
        tf().scheduler_name("s" * 63),
        tf().scheduler_name("s" * 64),
        "spec.schedulerName",
        "at most 63 characters",
    ),
    # topologyPolicy
    (
        "topology-policy-known",
        tf().set("spec.tasks[0].topologyPolicy", "none"),
        tf().set("spec.tasks[0].topologyPolicy", "numa"),
        "spec.tasks[0].topologyPolicy",
        "Input should be 'none', 'best-effort'",
    ),
    (
        "topology-policy-whole-cpus",
        make_job("t").task("w", cpu="2").set("spec.tasks[0].topologyPolicy", "single-numa-node"),
        make_job("t").task("w", cpu="1500m").set("spec.tasks[0].topologyPolicy", "restricted"),
        f"{C}.resources.requests.cpu",
        "needs a whole number of CPUs",
    ),
    (
        "topology-policy-limits-without-requests",
        make_job("t")
        .task("w")
        .set(f"{C}.resources", {"limits": {"cpu": "4"}})
        .set("spec.tasks[0].topologyPolicy", "best-effort"),
        make_job("t")
        .task("w")
        .set(f"{C}.resources", {"limits": {"memory": "1Gi"}})
        .set("spec.tasks[0].topologyPolicy", "best-effort"),
        f"{C}.resources.limits.cpu",
        "needs a whole number of CPUs",
    ),
]


@pytest.mark.parametrize(
    ("good", "bad", "path", "reason"),
    [pytest.param(*row[1:], id=row[0]) for row in JOB_CREATE],
)
def test_job_create(good: JobBuilder, bad: JobBuilder, path: str, reason: str) -> None:
    accepted(run(validate_job, make_review(good.build())))
    refused(run(validate_job, make_review(bad.build())), path, reason)


# -- Job CREATE: the pod template, as Kubernetes validates it -------------------------------------

TEMPLATE = [
    ("container-name-dns-label", job(name="main-1"), job(name="Main"), f"{C}.name", "lower case"),
    (
        "container-names-unique",
        make_job("j").task("w").container("w", "side"),
        make_job("j").task("w").container("w", "main", init=True),
        f"{T}.containers[0].name",
        "is the name of another container",
    ),
    ("image-required", job(image="busybox"), job(image=""), f"{C}.image", "required"),
    (
        "image-pull-policy",
        job(imagePullPolicy="IfNotPresent"),
        job(imagePullPolicy="Sometimes"),
        f"{C}.imagePullPolicy",
        "must be one of Always",
    ),
    (
        "port-number",
        job(ports=[{"containerPort": 65535}]),
        job(ports=[{"containerPort": 0}]),
        f"{C}.ports[0].containerPort",
        "from 1 to 65535",
    ),
    (
        "host-port-number",
        job(ports=[{"containerPort": 80, "hostPort": 8080}]),
        job(ports=[{"containerPort": 80, "hostPort": 70000}]),
        f"{C}.ports[0].hostPort",
        "from 1 to 65535",
    ),
    (
        "port-protocol",
        job(ports=[{"containerPort": 80, "protocol": "SCTP"}]),
        job(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
        f"{C}.ports[0].protocol",
        "must be one of TCP, UDP, SCTP",
    ),
    (
        "port-name-iana",
        job(ports=[{"containerPort": 80, "name": "http-2"}]),
        job(ports=[{"containerPort": 80, "name": "http--2"}]),
        f"{C}.ports[0].name",
        "twice in a row",
    ),
    (
        "port-names-unique",
        job(ports=[{"containerPort": 80, "name": "a"}, {"containerPort": 81, "name": "b"}]),
        job(ports=[{"containerPort": 80, "name": "a"}, {"containerPort": 81, "name": "a"}]),
        f"{C}.ports[1].name",
        f"names {C}.ports[0] already",
    ),
    (
        "port-and-protocol-once",
        job(ports=[{"containerPort": 53}, {"containerPort": 53, "protocol": "UDP"}]),
        job(ports=[{"containerPort": 53}, {"containerPort": 53, "protocol": "TCP"}]),
        f"{C}.ports[1].containerPort",
        "53/TCP is listed already",
    ),
    (
        "host-port-once-in-the-pod",
        make_job("j").task("w", ports=None).container("w", "a", ports=[80]),
        make_job("j")
        .task("w")
        .set(f"{C}.ports", [{"containerPort": 80, "hostPort": 80}])
        .container("w", "a")
        .set(f"{T}.containers[1].ports", [{"containerPort": 81, "hostPort": 80}]),
        f"{T}.containers[1].ports[0].hostPort",
        f"80/TCP is taken by {C}.ports[0].hostPort",
    ),
    (
        "host-network-host-port",
        job(spec={"hostNetwork": True}, ports=[{"containerPort": 80, "hostPort": 80}]),
        job(spec={"hostNetwork": True}, ports=[{"containerPort": 80, "hostPort": 81}]),
        f"{C}.ports[0].hostPort",
        "must equal containerPort with hostNetwork",
    ),
    (
        "env-name",
        job(env=[{"name": "a.b-c", "value": "1"}]),
        job(env=[{"name": "A=B", "value": "1"}]),
        f"{C}.env[0].name",
        "other than '='",
    ),
    (
        "env-once",
        job(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        job(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
        f"{C}.env[1].name",
        f"A is set by {C}.env[0] already",
    ),
    (
        "env-value-or-value-from",
        job(env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
        job(env=[{"name": "N", "value": "x", "valueFrom": {"fieldRef": {}}}]),
        f"{C}.env[0].valueFrom",
        "cannot be given beside a value",
    ),
    (
        "volume-mount-names-a-volume",
        job(
            spec={"volumes": [{"name": "d", "emptyDir": {}}]},
            volumeMounts=[{"name": "d", "mountPath": "/d"}],
        ),
        job(volumeMounts=[{"name": "d", "mountPath": "/d"}]),
        f"{C}.volumeMounts[0].name",
        "no volume of the pod is named 'd'",
    ),
    (
        "volume-mount-path-once-in-a-container",
        job(
            spec={"volumes": [{"name": "d"}, {"name": "e"}]},
            volumeMounts=[{"name": "d", "mountPath": "/d"}, {"name": "e", "mountPath": "/e"}],
        ),
        job(
            spec={"volumes": [{"name": "d"}, {"name": "e"}]},
            volumeMounts=[{"name": "d", "mountPath": "/d"}, {"name": "e", "mountPath": "/d"}],
        ),
        f"{C}.volumeMounts[1].mountPath",
        "is mounted by",
    ),
    (
        "volume-sub-path-relative",
        job(
            spec={"volumes": [{"name": "d"}]},
            volumeMounts=[{"name": "d", "mountPath": "/d", "subPath": "a/b"}],
        ),
        job(
            spec={"volumes": [{"name": "d"}]},
            volumeMounts=[{"name": "d", "mountPath": "/d", "subPath": "../b"}],
        ),
        f"{C}.volumeMounts[0].subPath",
        "relative path without '..'",
    ),
    (
        "volume-names",
        job(spec={"volumes": [{"name": "data"}]}),
        job(spec={"volumes": [{"name": "data"}, {"name": "data"}]}),
        f"{T}.volumes[1].name",
        "names another volume",
    ),
    (
        "resource-name",
        job(resources={"requests": {"ephemeral-storage": "1Gi", GPU: 1}, "limits": {GPU: 1}}),
        job(resources={"requests": {"gpu": 1}}),
        f"{C}.resources.requests.gpu",
        "must be cpu, memory, ephemeral-storage",
    ),
    (
        "quantity-not-negative",
        job(resources={"requests": {"cpu": "0"}}),
        job(resources={"requests": {"cpu": "-1"}}),
        f"{C}.resources.requests.cpu",
        "must not be negative",
    ),
    (
        "extended-resource-whole",
        job(resources={"limits": {GPU: "2"}}),
        job(resources={"limits": {GPU: "0.5"}}),
        f"{C}.resources.limits.{GPU}",
        "must be a whole number",
    ),
    (
        "request-within-limit",
        job(resources={"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}),
        job(resources={"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}),
        f"{C}.resources.requests.cpu",
        "must be at most the limit '2'",
    ),
    (
        "extended-request-equals-limit",
        job(resources={"requests": {GPU: 2}, "limits": {GPU: 2}}),
        job(resources={"requests": {GPU: 1}, "limits": {GPU: 2}}),
        f"{C}.resources.requests.{GPU}",
        "cannot be overcommitted",
    ),
    (
        "extended-request-needs-limit",
        job(resources={"limits": {GPU: 1}}),
        job(resources={"requests": {GPU: 1}}),
        f"{C}.resources.limits.{GPU}",
        "needs an equal limit",
    ),
    (
        "hugepages-need-cpu-or-memory",
        job(resources={"limits": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}}),
        job(resources={"limits": {"hugepages-2Mi": "2Mi"}}),
        f"{C}.resources",
        "hugepages need a cpu or memory",
    ),
    (
        "restart-policy",
        job(spec={"restartPolicy": "OnFailure"}),
        job(spec={"restartPolicy": "Sometimes"}),
        f"{T}.restartPolicy",
        "must be one of Always",
    ),
    (
        "dns-policy",
        job(spec={"dnsPolicy": "Default"}),
        job(spec={"dnsPolicy": "Cluster"}),
        f"{T}.dnsPolicy",
        "must be one of ClusterFirst",
    ),
    (
        "dns-none-needs-a-nameserver",
        job(spec={"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]}}),
        job(spec={"dnsPolicy": "None"}),
        f"{T}.dnsConfig.nameservers",
        "at least one nameserver",
    ),
    (
        "nameservers-at-most-3",
        job(spec={"dnsConfig": {"nameservers": ["1.1.1.1"] * 3}}),
        job(spec={"dnsConfig": {"nameservers": ["1.1.1.1"] * 4}}),
        f"{T}.dnsConfig.nameservers",
        "at most 3",
    ),
    (
        "hostname-dns-label",
        job(spec={"hostname": "node-1"}),
        job(spec={"hostname": "node.1"}),
        f"{T}.hostname",
        "lower case",
    ),
    (
        "subdomain-dns-label",
        job(spec={"subdomain": "workers"}),
        job(spec={"subdomain": "Workers"}),
        f"{T}.subdomain",
        "lower case",
    ),
    (
        "service-account-name",
        job(spec={"serviceAccountName": "trainer.sa"}),
        job(spec={"serviceAccountName": "Trainer"}),
        f"{T}.serviceAccountName",
        "lower case",
    ),
    (
        "node-name",
        job(spec={"nodeName": "node-1.example"}),
        job(spec={"nodeName": "node_1"}),
        f"{T}.nodeName",
        "lower case",
    ),
    (
        "template-priority-class-name",
        job(spec={"priorityClassName": "high"}),
        job(spec={"priorityClassName": "High"}),
        f"{T}.priorityClassName",
        "lower case",
    ),
    (
        "active-deadline-seconds",
        job(spec={"activeDeadlineSeconds": 1}),
        job(spec={"activeDeadlineSeconds": 0}),
        f"{T}.activeDeadlineSeconds",
        "must be from 1 to 2147483647",
    ),
    (
        "node-selector",
        job(spec={"nodeSelector": {"example.com/pool": "gpu_a"}}),
        job(spec={"nodeSelector": {"pool": "gpu a"}}),
        f"{T}.nodeSelector.pool",
        "must be letters, digits",
    ),
    (
        "template-labels",
        make_job("j").task("w").set("spec.tasks[0].template.metadata.labels", {"app": "x"}),
        make_job("j").task("w").set("spec.tasks[0].template.metadata.labels", {"a/b/c": "x"}),
        "spec.tasks[0].template.metadata.labels.a/b/c",
        "the key 'a/b/c'",
    ),
    (
        "template-annotations",
        make_job("j").task("w").set("spec.tasks[0].template.metadata.annotations", {"Note": "x"}),
        make_job("j").task("w").set("spec.tasks[0].template.metadata.annotations", {"-x": "y"}),
        "spec.tasks[0].template.metadata.annotations.-x",
        "starting and ending with a letter or digit",
    ),
    (
        "toleration-key",
        job(spec={"tolerations": [{"key": "example.com/gpu", "operator": "Exists"}]}),
        job(spec={"tolerations": [{"key": "gpu!", "operator": "Exists"}]}),
        f"{T}.tolerations[0].key",
        "must be letters",
    ),
    (
        "toleration-operator",
        job(spec={"tolerations": [{"key": "a", "operator": "Equal", "value": "b"}]}),
        job(spec={"tolerations": [{"key": "a", "operator": "In", "value": "b"}]}),
        f"{T}.tolerations[0].operator",
        "must be one of Equal, Exists",
    ),
    (
        "toleration-without-key-is-exists",
        job(spec={"tolerations": [{"operator": "Exists"}]}),
        job(spec={"tolerations": [{"value": "b"}]}),
        f"{T}.tolerations[0].operator",
        "must be Exists when no key is given",
    ),
    (
        "toleration-exists-without-value",
        job(spec={"tolerations": [{"key": "a", "operator": "Exists"}]}),
        job(spec={"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]}),
        f"{T}.tolerations[0].value",
        "must be empty when the operator is Exists",
    ),
    (
        "toleration-effect",
        job(spec={"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute"}]}),
        job(spec={"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoRun"}]}),
        f"{T}.tolerations[0].effect",
        "must be one of NoSchedule",
    ),
    (
        "toleration-seconds-with-no-execute",
        job(
            spec={
                "tolerations": [
                    {
                        "key": "a",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 5,
                    }
                ]
            }
        ),
        job(spec={"tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 5}]}),
        f"{T}.tolerations[0].effect",
        "must be NoExecute when tolerationSeconds is given",
    ),
]


@pytest.mark.parametrize(
    ("good", "bad", "path", "reason"),
    [pytest.param(*row[1:], id=row[0]) for row in TEMPLATE],
)
def test_job_create_template(good: JobBuilder, bad: JobBuilder, path: str, reason: str) -> None:
    accepted(run(validate_job, make_review(good.build())))
    refused(run(validate_job, make_review(bad.build())), path, reason)


# -- Job UPDATE ----------------------------------------------------------------------------------


def stored() -> JobBuilder:
    """A job as stored (its defaults given)."""
    return (
        make_job("tf")
        .task("ps", 1, min_available=1, max_retry=3)
        .task("worker", 2, min_available=2, max_retry=3)
        .queue("default")
        .scheduler_name("lahar")
        .max_retry(3)
        .min_available(3)
    )


JOB_UPDATE = [
    (
        "update-replicas-and-min-available",
        stored().set("spec.tasks[1].replicas", 4).set("spec.tasks[1].minAvailable", 1),
        stored().set("spec.tasks[1].minAvailable", 3),
        "spec.tasks[1].minAvailable",
        "3 is more than the task's 2 replicas",
    ),
    (
        "update-min-available-within-replicas",
        stored().min_available(1),
        stored().min_available(4),
        "spec.minAvailable",
        "4 is more than the tasks' 3 replicas",
    ),
    (
        "update-priority-class-name",
        stored().priority_class("urgent"),
        stored().scheduler_name("volcano"),
        "spec.schedulerName",
        "cannot change once the job exists",
    ),
    (
        "update-tasks-kept",
        stored()
        .set("spec.tasks[0].replicas", 0)
        .set("spec.tasks[0].minAvailable", 0)
        .min_available(2),
        stored().task("eval", max_retry=3),
        "spec.tasks",
        "tasks cannot be added or removed (2 before, 3 now)",
    ),
    (
        "update-queue-fixed",
        stored(),
        stored().queue("research"),
        "spec.queue",
        "cannot change once the job exists",
    ),
    (
        "update-max-retry-fixed",
        stored().unset("spec.maxRetry"),  # the default, filled in again
        stored().max_retry(5),
        "spec.maxRetry",
        "cannot change once the job exists",
    ),
    (
        "update-task-max-retry-fixed",
        stored().set("spec.tasks[0].maxRetry", 0),  # the default, filled in again
        stored().set("spec.tasks[0].maxRetry", 1),
        "spec.tasks[0].maxRetry",
        "cannot change once the job exists",
    ),
    (
        "update-template-fixed-by-value",
        stored().set(f"{C}.resources.requests.cpu", "1000m"),
        stored().set(f"{C}.resources.requests.cpu", "2"),
        "spec.tasks[0].template",
        "cannot change once the job exists",
    ),
    (
        "update-policies-fixed",
        stored().unset("spec.policies"),
        stored().policy("PodFailed", "RestartJob"),
        "spec.policies",
        "cannot change once the job exists",
    ),
]


@pytest.mark.parametrize(
    ("good", "bad", "path", "reason"),
    [pytest.param(*row[1:], id=row[0]) for row in JOB_UPDATE],
)
def test_job_update(good: JobBuilder, bad: JobBuilder, path: str, reason: str) -> None:
    old = stored().build()
    accepted(run(validate_job, make_review(good.build()).update(old)))
    refused(run(validate_job, make_review(bad.build()).update(old)), path, reason)


# -- Job defaults (CREATE) -----------------------------------------------------------------------

JOB_DEFAULTS = [
    ("default-queue", make_job("j").task("w"), "/spec/queue", "default"),
    ("default-scheduler-name", make_job("j").task("w"), "/spec/schedulerName", "lahar"),
    ("default-max-retry", make_job("j").task("w").max_retry(0), "/spec/maxRetry", 3),
    ("default-task-name", make_job("j").task(""), "/spec/tasks/0/name", "default0"),
    ("default-task-min-available", make_job("j").task("w", 4), "/spec/tasks/0/minAvailable", 4),
    ("default-task-max-retry", make_job("j").task("w", max_retry=0), "/spec/tasks/0/maxRetry", 3),
    (
        "default-min-available",
        make_job("j").task("a", 2).task("b", 3, min_available=1),
        "/spec/minAvailable",
        3,
    ),
    (
        "default-host-network-dns-policy",
        make_job("j").task("w", host_network=True),
        "/spec/tasks/0/template/spec/dnsPolicy",
        "ClusterFirstWithHostNet",
    ),
    ("default-svc-for-pytorch", make_job("j").task("w").plugin("pytorch"), "/spec/plugins/svc", []),
    (
        "default-svc-for-tensorflow",
        make_job("j").task("w").plugin("tensorflow"),
        "/spec/plugins/svc",
        [],
    ),
    ("default-svc-for-ray", make_job("j").task("w").plugin("ray"), "/spec/plugins/svc", []),
    ("default-svc-for-mpi", make_job("j").task("w").plugin("mpi"), "/spec/plugins/svc", []),
    ("default-ssh-for-mpi", make_job("j").task("w").plugin("mpi"), "/spec/plugins/ssh", []),
]


@pytest.mark.parametrize(
    ("builder", "path", "value"), [pytest.param(*row[1:], id=row[0]) for row in JOB_DEFAULTS]
)
def test_job_defaults(builder: JobBuilder, path: str, value: Any) -> None:
    patch = run(mutate_job, make_review(builder.build())).decision.patch
    assert {"op": "add", "path": path, "value": value} in patch


# -- PodGroup CREATE -----------------------------------------------------------------------------

POD_GROUP = [
    (
        "pod-group-queue-exists",
        make_group("g").queue("research"),
        make_group("g").queue("nope"),
        "spec.queue",
        "does not exist",
    ),
    (
        "pod-group-queue-open",
        make_group("g").queue("default"),
        make_group("g").queue("closed"),
        "spec.queue",
        "is Closed",
    ),
    (
        "pod-group-queue-name",
        make_group("g").queue("research"),
        make_group("g").queue("Research"),
        "spec.queue",
        "lower case",
    ),
    (
        "pod-group-queue-not-empty",
        make_group("g"),
        make_group("g").queue(""),
        "spec.queue",
        "must not be empty",
    ),
    (
        "pod-group-min-member-not-negative",
        make_group("g").min_member(0),
        make_group("g").min_member(-1),
        "spec.minMember",
        "must be from 0",
    ),
    (
        "pod-group-priority-class-name-length",
        make_group("g").set("spec.priorityClassName", "p" * 253),
        make_group("g").set("spec.priorityClassName", "p" * 254),
        "spec.priorityClassName",
        "at most 253 characters",
    ),
]


@pytest.mark.parametrize(
    ("good", "bad", "path", "reason"),
    [pytest.param(*row[1:], id=row[0]) for row in POD_GROUP],
)
def test_pod_group_create(
    good: PodGroupBuilder, bad: PodGroupBuilder, path: str, reason: str
) -> None:
    accepted(run(validate_pod_group, make_review(good.build())))
    refused(run(validate_pod_group, make_review(bad.build())), path, reason)


# -- Queue CREATE and UPDATE ---------------------------------------------------------------------


def queue() -> QueueBuilder:
    return make_queue("team")


def hierarchy(path: str, weights: str) -> QueueBuilder:
    annotations = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    return queue().set("metadata.annotations", annotations)


QUEUE = [
    (
        "queue-guarantee-within-deserved",
        queue().guarantee(cpu="2").deserved(cpu="2"),
        queue().guarantee(cpu="3").deserved(cpu="2"),
        "spec.guarantee.resource.cpu",
        "3 is more than the deserved 2",
    ),
    (
        "queue-guarantee-deserved-too",
        queue().guarantee(memory="1Gi").deserved(memory="1Gi"),
        queue().guarantee(memory="1Gi").deserved(cpu="1"),
        "spec.deserved.memory",
        "required: at least the guarantee 1Gi",
    ),
    (
        "queue-deserved-within-capability",
        queue().deserved(cpu="1").capability(cpu="1000m"),
        queue().deserved(cpu="1001m").capability(cpu="1"),
        "spec.deserved.cpu",
        "1001m is more than the capability 1",
    ),
    (
        "queue-exact-amounts",
        queue().deserved(cpu="1.0004").capability(cpu="1.0005"),
        queue().deserved(cpu="1.0005").capability(cpu="1.0004"),
        "spec.deserved.cpu",
        "1.0005 is more than the capability 1.0004",
    ),
    (
        "queue-amounts-not-negative",
        queue().capability(memory="0"),
        queue().capability(memory="-0.5"),
        "spec.capability.memory",
        "must not be negative",
    ),
    (
        "queue-extended-resources-whole",
        queue().capability(**{GPU: "8"}),
        queue().capability(**{GPU: "0.5"}),
        f"spec.capability.{GPU}",
        "must be a whole number",
    ),
    (
        "queue-pods-whole",
        queue().deserved(pods="10"),
        queue().deserved(pods="10500m"),
        "spec.deserved.pods",
        "must be a whole number",
    ),
    (
        "queue-state",
        queue().state("Closed"),
        queue().state("Paused"),
        "status.state",
        "must be one of Open, Closed",
    ),
    ("queue-weight", queue().weight(65535), queue().weight(65536), "spec.weight", "at most 65535"),
    (
        "queue-priority-not-negative",
        queue().set("spec.priority", 0),
        queue().set("spec.priority", -1),
        "spec.priority",
        "must be from 0",
    ),
    (
        "queue-dequeue-strategy",
        queue().set("spec.dequeueStrategy", "fifo"),
        queue().set("spec.dequeueStrategy", "lifo"),
        "spec.dequeueStrategy",
        "Input should be 'fifo' or 'traverse'",
    ),
    (
        "queue-type-length",
        queue().set("spec.type", "t" * 253),
        queue().set("spec.type", "t" * 254),
        "spec.type",
        "at most 253 characters",
    ),
    (
        "queue-hierarchy-lengths",
        hierarchy("root/sci", "1/2"),
        hierarchy("root/sci", "1"),
        "metadata.annotations.volcano.sh/hierarchy-weights",
        "as many weights as volcano.sh/hierarchy has queues (1 for 2)",
    ),
    (
        "queue-hierarchy-weights-positive",
        hierarchy("root/sci", "1/0.5"),
        hierarchy("root/sci", "1/0"),
        "metadata.annotations.volcano.sh/hierarchy-weights",
        "'0' must be more than 0",
    ),
    (
        "queue-hierarchy-weights-numbers",
        hierarchy("sci", "2e1"),
        hierarchy("sci", "two"),
        "metadata.annotations.volcano.sh/hierarchy-weights",
        "'two' is not a number",
    ),
    (
        "queue-scale-up-mode",
        queue().annotate("lahar.io/scale-up", "provisioningRequest"),
        queue().annotate("lahar.io/scale-up", "atomic"),
        "metadata.annotations.lahar.io/scale-up",
        "'atomic' is not a scale-up mode (one of none, provisioningRequest, unschedulable)",
    ),
    (
        "queue-parent-dns-subdomain",
        queue().set("spec.parent", "research"),
        queue().set("spec.parent", "Research"),
        "spec.parent",
        "lower case",
    ),
    (
        "queue-parent-not-itself",
        queue().set("spec.parent", "root"),
        queue().set("spec.parent", "team"),
        "spec.parent",
        "cannot be its own parent",
    ),
    (
        "queue-parent-exists",
        queue().set("spec.parent", "research"),
        queue().set("spec.parent", "nope"),
        "spec.parent",
        "queue 'nope' does not exist",
    ),
]


@pytest.mark.parametrize(
    ("good", "bad", "path", "reason"), [pytest.param(*row[1:], id=row[0]) for row in QUEUE]
)
def test_queue_create(good: QueueBuilder, bad: QueueBuilder, path: str, reason: str) -> None:
    accepted(run(validate_queue, make_review(good.build())))
    refused(run(validate_queue, make_review(bad.build())), path, reason)


def test_a_missing_parent_is_looked_for_only_when_the_parent_changes() -> None:
    """Volcano checks the parent on CREATE and when it changes: a queue whose parent has gone
    can still be edited."""
    orphan = queue().set("spec.parent", "gone")
    accepted(run(validate_queue, make_review(orphan.weight(3).build()).update(orphan.build())))
    moved = queue().set("spec.parent", "nope").build()
    outcome = run(validate_queue, make_review(moved).update(orphan.build()))
    refused(outcome, "spec.parent", "queue 'nope' does not exist")


def test_the_root_queues_resources_cannot_change() -> None:
    root = make_queue("root").capability(cpu="64")
    same = make_queue("root").capability(cpu="64000m").weight(2)
    accepted(run(validate_queue, make_review(same.build()).update(root.build())))
    grown = make_queue("root").capability(cpu="65").build()
    outcome = run(validate_queue, make_review(grown).update(root.build()))
    refused(outcome, "spec.capability", "the root queue's resources cannot be changed")
    accepted(run(validate_queue, make_review(grown)))  # made with them
    other = make_queue("team").capability(cpu="65").build()
    accepted(run(validate_queue, make_review(other).update(make_queue("team").build())))


# -- Queue DELETE --------------------------------------------------------------------------------

QUEUE_DELETE = [
    ("delete-default-queue", "research", "default", "the default queue cannot be deleted"),
    ("delete-root-queue", "research", "root", "the root queue cannot be deleted"),
]


@pytest.mark.parametrize(
    ("good", "bad", "reason"), [pytest.param(*row[1:], id=row[0]) for row in QUEUE_DELETE]
)
def test_queue_delete(good: str, bad: str, reason: str) -> None:
    accepted(run(validate_queue, make_review(make_queue(good).build()).delete()))
    refused(run(validate_queue, make_review(make_queue(bad).build()).delete()), "", reason)


# -- Volcano's dependsOn check, ported: refused iff it finds no order ------------------------------


def volcano_is_dag(tasks: list[tuple[str, list[str] | None]]) -> bool:
    """`topoSort` of Volcano's webhook (jobs/validate/util.go), as written: in-degrees count every
    name listed (an unknown or repeated one is never paid back), edges are a set."""
    graph: dict[str, dict[str, bool]] = {}
    in_degree: dict[str, int] = {}
    for name, depends_on in tasks:
        in_degree[name] = 0
        for needed in depends_on or []:
            graph.setdefault(needed, {})[name] = True
            in_degree[name] += 1
    stack = [task for task, degree in in_degree.items() if degree == 0]
    order = []
    while stack:
        out = stack.pop()
        order.append(out)
        for following, connected in graph.get(out, {}).items():
            if connected:
                graph[out][following] = False
                in_degree[following] -= 1
                if in_degree[following] == 0:
                    stack.append(following)
    return len(order) == len(tasks)


NAMES = ("a", "b", "c", "d", "e")


@st.composite
def graphs(draw: st.DrawFn) -> list[tuple[str, list[str] | None]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    listed = st.sampled_from([*names, *names, "x", ""])  # known names more often than not
    return [(name, draw(st.none() | st.lists(listed, max_size=3))) for name in names]


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_depends_on_is_refused_iff_volcano_finds_no_order(
    tasks: list[tuple[str, list[str] | None]],
) -> None:
    builder = make_job("g")
    for index, (name, depends_on) in enumerate(tasks):
        builder.task(name)
        if depends_on is not None:
            builder.set(f"spec.tasks[{index}].dependsOn", {"name": depends_on})
    body = builder.build()
    parsed, problems = parse_job(body)
    assert parsed is not None, problems
    found = check_job(parsed, cluster_queues(), [])
    about_order = [p for p in found if p.path == "spec.tasks" or ".dependsOn." in p.path]
    assert found == about_order  # nothing else is wrong with these jobs
    assert bool(about_order) == (not volcano_is_dag(tasks))


# -- Volcano's queue resource check, ported: refused iff it refuses --------------------------------


def volcano_refuses_resources(spec: dict[str, Any]) -> bool:
    """`validateResourceQuantityOfQueue` of Volcano's queue webhook, as written."""
    capability = {k: parse_quantity(v) for k, v in spec.get("capability", {}).items()}
    deserved = {k: parse_quantity(v) for k, v in spec.get("deserved", {}).items()}
    guarantee = {
        k: parse_quantity(v) for k, v in spec.get("guarantee", {}).get("resource", {}).items()
    }
    for amounts in (capability, deserved, guarantee):
        for name, amount in amounts.items():
            whole = name == "pods" or "/" in name
            if amount < 0 or (whole and amount != amount.to_integral_value()):
                return True
    for name, amount in guarantee.items():
        if name not in deserved or deserved[name] < amount:
            return True
    return any(
        name in capability and amount > capability[name] for name, amount in deserved.items()
    )


AMOUNTS = st.sampled_from(["0", "1", "1500m", "2", "4", "0.5", "-1", "3Gi"])
LEVEL = st.dictionaries(st.sampled_from(["cpu", "memory", "pods", GPU]), AMOUNTS, max_size=3)


@settings(max_examples=400, deadline=None)
@given(LEVEL, LEVEL, LEVEL)
def test_queue_resources_are_refused_iff_volcano_refuses(
    capability: dict[str, str], deserved: dict[str, str], guarantee: dict[str, str]
) -> None:
    spec: dict[str, Any] = {"capability": capability, "deserved": deserved}
    spec["guarantee"] = {"resource": guarantee}
    problems = check_queue(queue().set("spec", {"weight": 1, **spec}).build())
    assert bool(problems) == volcano_refuses_resources(spec), problems


# -- Where Lahar differs on purpose (docs/admission-rules.md says why) ----------------------------

DIFFERENCES = [
    # Volcano refuses, Lahar accepts
    ("queue-without-state", validate_job, make_review(tf().queue("research").build()), ""),
    ("default-queue-not-made-yet", validate_job, make_review(tf().build()), ""),
    ("queue-state-closing", validate_queue, make_review(queue().state("Closing").build()), ""),
    (
        "update-without-the-defaults",
        validate_job,
        make_review(stored().unset("spec.maxRetry").build()).update(stored().build()),
        "",
    ),
    # Volcano accepts, Lahar refuses
    (
        "image-with-surrounding-whitespace",
        validate_job,
        make_review(job(image=" busybox").build()),
        f"{C}.image",
    ),
    (
        "pending-policy-needs-timeout",
        validate_job,
        make_review(tf().policy("PodPending", "RestartJob").build()),
        "spec.policies[0].timeout",
    ),
    (
        "exit-code-policy-needs-action",
        validate_job,
        make_review(tf().policy(exit_code=3, action="").build()),
        "spec.policies[0].action",
    ),
    (
        "plugin-arguments",
        validate_job,
        make_review(tf().plugin("svc", "--bogus").build()),
        "spec.plugins.svc",
    ),
    (
        "min-success-within-replicas",
        validate_job,
        make_review(tf().min_success(4).build()),
        "spec.minSuccess",
    ),
    (
        "service-name-with-svc",
        validate_job,
        make_review(make_job("1st").task("w").plugin("svc").build()),
        "metadata.name",
    ),
    (
        "queue-name-label-value",
        validate_job,
        make_review(tf().queue("q" * 64).build()),
        "spec.queue",
    ),
    (
        "update-rechecks-names",
        validate_job,
        make_review(make_job("j" * 55).task("w", 1_000_000).plugin("svc").build()).update(
            make_job("j" * 55).task("w", 10).plugin("svc").build()
        ),
        "spec.tasks[0].name",
    ),
    (
        "pod-group-min-task-member-not-negative",
        validate_pod_group,
        make_review(make_group("g").min_task("w", -1).build()),
        "spec.minTaskMember.w",
    ),
]


@pytest.mark.parametrize(
    ("rule", "review", "path"), [pytest.param(*row[1:], id=row[0]) for row in DIFFERENCES]
)
def test_deliberate_differences(rule: Rule, review: ReviewBuilder, path: str) -> None:
    outcome = run(rule, review)
    if not path:
        accepted(outcome)
    else:
        assert not outcome.decision.allowed
        assert path in [p.path for p in outcome.decision.problems], outcome.message


def test_deleting_a_queue_pod_groups_name_is_refused() -> None:
    """Volcano lets it go (it checks allocated pods only when told to); Lahar keeps it while
    PodGroups name it."""
    view = cluster_queues().with_groups("research", "ml/tf")
    outcome = run(validate_queue, make_review(make_queue("research").build()).delete(), view)
    refused(outcome, "", "still has 1 PodGroup(s) (ml/tf)")
