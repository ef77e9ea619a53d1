"""Job rules on CREATE: every problem at once, each at its field (`spec.tasks[1].minAvailable`)
with a reason that says what is wrong."""

from __future__ import annotations

import pytest

from extender.admission.problems import Problem
from tests.builders import JobBuilder, make_job, make_queue
from tests.unit.admission.helpers import Queues, check, problems_of, tf

INT32 = 2**31 - 1
CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


@pytest.mark.parametrize(
    "builder",
    [
        tf(),
        tf().min_available(3).min_success(3).max_retry(0).ttl(0),
        tf().queue("research"),
        tf().queue("default"),
        make_job("tf").task("ps", 0).task("worker", 0),
        make_job("tf").task("w", 3, min_available=0),
        make_job("tf").task("w", INT32, min_available=INT32).max_retry(INT32),
        tf().plugin("env").plugin("svc", "--publish-not-ready-addresses").plugin("ssh"),
        make_job("mnist").task("master").task("worker", 3).plugin("pytorch", "--port=29500"),
        tf().plugin("tensorflow", "--ps=ps", "--worker=worker", "--port=2222"),
        make_job("mpi").task("master").task("worker", 2).plugin("mpi").plugin("svc").plugin("ssh"),
        make_job("ray")
        .task("head")
        .container("head", "head")
        .task("worker", 2)
        .container("worker", "worker")
        .plugin("ray")
        .plugin("svc"),
        make_job("npu").task("master").task("worker", 3).plugin("hcclrank").plugin("pytorch"),
        tf().plugin("svc").policy("PodEvicted", "RestartJob"),
        tf().volume("/data", claim_name="data-0").volume("/scratch", claim=CLAIM),
        tf().volume("/a", claim={}),
        make_job("dag")
        .task("a")
        .task("b", depends_on=["a"])
        .task("c", depends_on=["a"])
        .task("d", depends_on=["b", "c"], iteration="any"),
        make_job("Upper_Case.job").task("w").set("metadata.name", "upper-case.job"),
        make_job("x" * 59).task("w"),  # x...x-w-0: 63 characters
        make_job("x" * 59).task("w", 10).plugin("svc"),  # x...x-w-9: 63 characters
        make_job("tf").generate_name("tf-").task("w").plugin("svc"),
        tf().container("ps", "sidecar", requests={"cpu": "1"}, limits={"cpu": "2"}),
        tf().priority_class("high").scheduler_name("lahar"),
    ],
    ids=[
        "tf",
        "numbers-at-their-bounds",
        "queue-without-state",
        "queue-open",
        "no-replicas",
        "min-available-zero",
        "int32-max",
        "plugins",
        "pytorch",
        "tensorflow",
        "mpi",
        "ray",
        "hcclrank",
        "svc-and-policy",
        "volumes",
        "empty-claim-spec",
        "dag",
        "dotted-name",
        "pod-name-63",
        "hostname-63",
        "generate-name",
        "second-container",
        "priority-and-scheduler",
    ],
)
def test_good_jobs(builder: JobBuilder) -> None:
    assert check(builder) == ([], [])


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        # tasks
        (make_job("a"), {"spec.tasks": "required: at least one task"}),
        (
            make_job("a").task(""),
            {"spec.tasks[0].name": "required (the mutating webhook names it)"},
        ),
        (make_job("a").task("Worker"), {"spec.tasks[0].name": "'Worker' must be lower case"}),
        (make_job("a").task("w_1"), {"spec.tasks[0].name": "'w_1' must be lower case"}),
        (make_job("a").task("-w"), {"spec.tasks[0].name": "starting and ending"}),
        (
            make_job("a").task("w" * 64),
            {"spec.tasks[0].name": "must be at most 63 characters (it is 64)"},
        ),
        (
            make_job("a").task("w").task("ps").task("w"),
            {"spec.tasks[2].name": "w is the name of spec.tasks[0]"},
        ),
        (
            make_job("a").task("w", 2, min_available=3),
            {"spec.tasks[0].minAvailable": "3 is more than the task's 2 replicas"},
        ),
        (
            tf().min_available(4),
            {"spec.minAvailable": "4 is more than the tasks' 3 replicas"},
        ),
        (
            make_job("a").task("w", 2**40),
            {"spec.tasks[0].replicas": "must be from 0 to 2147483647, got 1099511627776"},
        ),
        (
            make_job("a").task("w", 2**31),
            {"spec.tasks[0].replicas": "got 2147483648"},
        ),
        (
            make_job("a").task("w", 10**30, min_available=10**30),
            {
                "spec.tasks[0].replicas": "got a 31-digit number",
                "spec.tasks[0].minAvailable": "got a 31-digit number",
            },
        ),
        (
            make_job("a").task("w", INT32).task("v", INT32).min_available(2**32),
            {"spec.minAvailable": "must be from 0 to 2147483647, got 4294967296"},
        ),
        (
            make_job("a").task("w").min_available(2**40),
            {
                "spec.minAvailable": (
                    "must be from 0 to 2147483647, got 1099511627776 | 1099511627776 is more"
                )
            },
        ),
        # numbers of the job
        (
            tf().min_success(4),
            {
                "spec.minSuccess": (
                    "4 is more than the tasks' 3 replicas: the job could never complete"
                )
            },
        ),
        (tf().max_retry(-1), {"spec.maxRetry": "must be from 0 to 2147483647, got -1"}),
        (tf().max_retry(2**31), {"spec.maxRetry": "got 2147483648"}),
        (tf().ttl(2**40), {"spec.ttlSecondsAfterFinished": "must be from 0 to 2147483647"}),
        # plugins
        (
            tf().plugin("horovod"),
            {
                "spec.plugins.horovod": "unknown plugin "
                "(known: env, svc, ssh, pytorch, tensorflow, mpi, ray, hcclrank)"
            },
        ),
        (
            tf().plugin("mpi"),
            {
                "spec.plugins.mpi": "no task is named 'master': the mpi master task (--master) "
                "must exist"
            },
        ),
        (
            tf().plugin("mpi", "--master=ps", "--worker=ps"),
            {"spec.plugins.mpi": "--master and --worker must name two different tasks"},
        ),
        (
            tf().plugin("tensorflow", "--chief=ps"),
            {"spec.plugins.tensorflow": "--ps, --worker, --chief and --evaluator must name four"},
        ),
        (
            tf().plugin("ray"),
            {"spec.plugins.ray": "no task is named 'head': the ray head task (--head) must exist"},
        ),
        (
            tf().plugin("ray", "--head=ps", "--port=8265"),
            {"spec.plugins.ray": "--port, --dashboardPort and --clientPort must be three differ"},
        ),
        (
            tf().plugin("hcclrank", "--rank=1"),
            {"spec.plugins.hcclrank": "unknown argument --rank (known: --master, --worker)"},
        ),
        (
            tf().plugin("svc", "--bogus"),
            {"spec.plugins.svc": "unknown argument --bogus (known: --disable-network-policy"},
        ),
        (
            tf().plugin("svc", "--publish-not-ready-addresses=maybe"),
            {"spec.plugins.svc": "must be true or false, got 'maybe'"},
        ),
        (tf().plugin("env", "--x=1"), {"spec.plugins.env": "unknown argument --x (known: none)"}),
        (tf().plugin("svc", "publish"), {"spec.plugins.svc": "argument 1 is not --name[=value]"}),
        (
            tf().plugin("pytorch", "--port=0"),
            {"spec.plugins.pytorch": "--port must be a whole number in 1..65535, got '0'"},
        ),
        (tf().plugin("pytorch", "--master"), {"spec.plugins.pytorch": "--master needs a value"}),
        (
            tf().plugin("ssh", "--ssh-key-file-path=keys"),
            {"spec.plugins.ssh": "must be an absolute path"},
        ),
        # names the svc plugin and pods make from the job's name
        (
            make_job("1st").task("w").plugin("svc"),
            {
                "metadata.name": "starting with a letter: the svc plugin names a Service after "
                "the job"
            },
        ),
        (
            make_job("x" * 50).task("worker-of-the-job", 2).plugin("svc"),
            {
                "spec.tasks[0].name": f"pods would be named {'x' * 50}-worker-of-the-job-1, which "
                "as a hostname (svc plugin) must be at most 63 characters (it is 70)"
            },
        ),
        (
            make_job("x" * 59).task("w", 11).plugin("svc"),
            {"spec.tasks[0].name": "-w-10, which as a hostname (svc plugin)"},
        ),
        (
            make_job("x" * 64).task("w"),
            {
                "metadata.name": "must be at most 63 characters to be a label value (it is 64): "
                "pods are labelled with the job's name"
            },
        ),
        (
            make_job("a" * 64).task("w").plugin("svc"),
            {"metadata.name": "to be a label value", "spec.tasks[0].name": "(it is 68)"},
        ),
        (
            make_job("Tf").task("w"),
            {"spec.tasks[0].name": "pods would be named Tf-w-0, which as a pod name must be"},
        ),
        # volumes
        (
            tf().volume("", claim_name="c"),
            {"spec.volumes[0].mountPath": "required: where the pods mount the claim"},
        ),
        (
            tf()
            .volume("/d", claim_name="a")
            .volume("/e", claim_name="b")
            .volume("/d", claim=CLAIM),
            {"spec.volumes[2].mountPath": "'/d' is mounted by spec.volumes[0] already"},
        ),
        (
            tf().volume("/d", claim_name="c", claim=CLAIM),
            {
                "spec.volumes[0]": "give volumeClaimName to mount an existing claim or "
                "volumeClaim to have one made, one of the two"
            },
        ),
        (tf().volume("/d"), {"spec.volumes[0]": "one of the two"}),
        (tf().volume("/d", claim_name=""), {"spec.volumes[0]": "one of the two"}),
        (
            tf().volume("/d", claim_name="Data_1"),
            {"spec.volumes[0].volumeClaimName": "'Data_1' must be lower case letters"},
        ),
        (
            tf().volume("/d", claim_name="c" * 254),
            {"spec.volumes[0].volumeClaimName": "must be at most 253 characters (it is 254)"},
        ),
        # the queue
        (tf().queue("nope"), {"spec.queue": "queue 'nope' does not exist"}),
        (tf().queue("closed"), {"spec.queue": "queue 'closed' is Closed: it takes no new work"}),
        (tf().queue("closing"), {"spec.queue": "queue 'closing' is Closing"}),
        (tf().queue("a b"), {"spec.queue": "'a b' must be lower case letters, digits"}),
        (tf().queue("q" * 64), {"spec.queue": "must be at most 63 characters to be a label value"}),
        # dependsOn
        (
            tf().task("eval", depends_on=["trainer"]),
            {"spec.tasks[2].dependsOn.name[0]": "no task is named 'trainer'"},
        ),
        (
            tf().task("eval", depends_on=["ps", ""]),
            {"spec.tasks[2].dependsOn.name[1]": "no task is named ''"},
        ),
        (
            tf().task("eval", depends_on=["eval"]),
            {"spec.tasks": "dependsOn forms a cycle (eval -> eval): these tasks never start"},
        ),
        (
            make_job("a").task("a", depends_on=["b"]).task("b", depends_on=["a"]),
            {"spec.tasks": "dependsOn forms a cycle (a -> b -> a)"},
        ),
        (
            make_job("a")
            .task("start")
            .task("a", depends_on=["start", "b"])
            .task("b", depends_on=["c"])
            .task("c", depends_on=["a"]),
            {"spec.tasks": "dependsOn forms a cycle (a -> b -> c -> a)"},
        ),
        # pod templates
        (
            make_job("a").task("w").unset("spec.tasks[0].template.spec"),
            {
                "spec.tasks[0].template.spec": (
                    "required: the pods' spec, with at least one container"
                )
            },
        ),
        (
            make_job("a").task("w").set("spec.tasks[0].template.spec.containers", []),
            {"spec.tasks[0].template.spec.containers": "required: at least one container"},
        ),
        (
            make_job("a").task("w").set("spec.tasks[0].template.spec.containers[0].image", ""),
            {"spec.tasks[0].template.spec.containers[0].image": "required: the container image"},
        ),
        (
            tf().container("worker", "main", init=True),
            {
                "spec.tasks[1].template.spec.containers[0].name": (
                    "'main' is the name of another container"
                )
            },
        ),
        (
            tf().container("ps", "c", requests={"memory": "2Gi"}, limits={"memory": "1Gi"}),
            {
                "spec.tasks[0].template.spec.containers[1].resources.requests.memory": (
                    "must be at most the limit '1Gi'"
                )
            },
        ),
        (
            tf().container("ps", "c", limits={"cpu": "one"}),
            {
                "spec.tasks[0].template.spec.containers[1].resources.limits.cpu": (
                    "must be a quantity such as 500m or 2Gi, got 'one'"
                )
            },
        ),
        (
            tf().set("spec.tasks[1].template.spec.restartPolicy", "Maybe"),
            {"spec.tasks[1].template.spec.restartPolicy": "must be one of Always"},
        ),
        (
            tf().container("ps", "c", ports=[99999]),
            {
                "spec.tasks[0].template.spec.containers[1].ports[0].containerPort": (
                    "must be a port number from 1 to 65535, got 99999"
                )
            },
        ),
        # policies, job and task
        (tf().policy("Bogus", "RestartJob"), {"spec.policies[0].event": "unknown event 'Bogus'"}),
        (
            tf().policy("PodFailed", "Explode", task="worker"),
            {"spec.tasks[1].policies[0].action": "got 'Explode'"},
        ),
    ],
    ids=[
        "no-tasks",
        "task-name-empty",
        "task-name-upper",
        "task-name-underscore",
        "task-name-leading-dash",
        "task-name-too-long",
        "task-name-duplicate",
        "task-min-available-over-replicas",
        "job-min-available-over-replicas",
        "replicas-2-40",
        "replicas-over-int32",
        "replicas-and-min-available-huge",
        "job-min-available-over-int32",
        "job-min-available-huge",
        "min-success-over-replicas",
        "max-retry-negative",
        "max-retry-over-int32",
        "ttl-over-int32",
        "unknown-plugin",
        "mpi-without-master",
        "mpi-same-tasks",
        "tensorflow-same-tasks",
        "ray-without-head",
        "ray-without-head-container",
        "hcclrank-unknown-argument",
        "svc-unknown-argument",
        "svc-bad-switch",
        "env-takes-no-argument",
        "positional-argument",
        "pytorch-bad-port",
        "pytorch-option-without-value",
        "ssh-relative-path",
        "svc-job-name-not-rfc1035",
        "svc-hostname-too-long",
        "svc-hostname-too-long-by-index",
        "job-name-too-long",
        "job-name-too-long-with-svc",
        "pod-name-upper-case",
        "volume-no-mount-path",
        "volume-duplicate-mount-path",
        "volume-both-claims",
        "volume-neither-claim",
        "volume-empty-claim-name",
        "volume-bad-claim-name",
        "volume-claim-name-too-long",
        "queue-missing",
        "queue-closed",
        "queue-closing",
        "queue-bad-name",
        "queue-name-too-long",
        "depends-on-unknown",
        "depends-on-empty-name",
        "depends-on-self",
        "depends-on-2-cycle",
        "depends-on-3-cycle",
        "template-no-spec",
        "template-no-containers",
        "template-no-image",
        "template-duplicate-container-across-init",
        "template-request-over-limit",
        "template-bad-quantity",
        "template-bad-restart-policy",
        "template-bad-port",
        "job-policy",
        "task-policy",
    ],
)
def test_each_rule_names_its_field(builder: JobBuilder, expected: dict[str, str]) -> None:
    found = problems_of(builder)
    assert set(found) == set(expected), found
    for path, reason in expected.items():
        assert reason in found[path], found[path]


def test_a_queue_without_state_counts_as_open() -> None:
    view = Queues(make_queue("fresh"))
    assert problems_of(tf().queue("fresh"), view) == {}


def test_the_default_queue_need_not_exist_yet() -> None:
    assert problems_of(tf(), Queues()) == {}


def test_only_the_first_cycle_is_named() -> None:
    builder = (
        make_job("a")
        .task("a", depends_on=["a"])
        .task("b", depends_on=["c"])
        .task("c", depends_on=["b"])
    )
    assert check(builder)[0] == [
        Problem("spec.tasks", "dependsOn forms a cycle (a -> a): these tasks never start")
    ]


def test_a_duplicate_task_still_has_its_other_fields_checked() -> None:
    builder = make_job("a").task("w").task("w", 1, min_available=2)
    assert sorted(problems_of(builder)) == ["spec.tasks[1].minAvailable", "spec.tasks[1].name"]


def test_all_problems_are_reported_at_once() -> None:
    builder = (
        make_job("tf")
        .task("ps", 1, min_available=2)  # 1: minAvailable over replicas
        .task("Worker", 2)  # 2: bad task name
        .max_retry(-3)  # 3: negative maxRetry
        .plugin("horovod")  # 4: unknown plugin
        .queue("closed")  # 5: closed queue
    )
    problems, _ = check(builder)
    assert sorted(p.path for p in problems) == [
        "spec.maxRetry",
        "spec.plugins.horovod",
        "spec.queue",
        "spec.tasks[0].minAvailable",
        "spec.tasks[1].name",
    ]


def test_many_problems_across_the_job_are_all_found() -> None:
    builder = (
        make_job("1st")
        .task("ps", 1, min_available=2, depends_on=["nobody"])
        .task("ps")
        .plugin("svc", "--nope")
        .min_success(9)
        .volume("/d")
        .queue("nope")
        .policy("PodPending", "RestartPod")
        .container("ps", "main")
    )
    assert sorted(problems_of(builder)) == [
        "metadata.name",
        "spec.minSuccess",
        "spec.plugins.svc",
        "spec.policies[0].timeout",
        "spec.queue",
        "spec.tasks[0].dependsOn.name[0]",
        "spec.tasks[0].minAvailable",
        "spec.tasks[0].template.spec.containers[1].name",
        "spec.tasks[1].name",
        "spec.volumes[0]",
    ]


def test_policy_warnings_come_back_beside_no_problem() -> None:
    problems, warnings = check(tf().policy("PodFailed", "RestartJob", timeout="1m"))
    assert problems == []
    assert warnings == [
        "spec.policies[0].timeout: Lahar waits only on PodPending; this policy acts at once"
    ]
