"""The run times of finished gangs on the dev cluster: a Volcano Job run to completion (KWOK ends
its pods when asked) is in the ConfigMap lahar-system/lahar-run-times within the writer's
interval, under `namespace/job` and its queue, for about as long as its pods ran; the extender
writes it with its own ServiceAccount's rights (manifests' RBAC, as applied to a cluster)."""

from __future__ import annotations

import time

from kubernetes import client as k8s

from extender import devcluster
from extender.api.run_times import OwnerRuns
from extender.kube import wait_until
from extender.kube.run_times import read_history
from tests.builders import make_job
from tests.e2e.conftest import TEST_KEY, NodeFactory, lahar_metric
from tests.e2e.gangs import finish
from tests.e2e.jobs import running, submit, wait_job

RECORDED_WITHIN = 90  # seconds: the writer's interval (60) and the Job's way to Completed


def test_a_job_run_to_completion_is_recorded_under_its_name_and_queue(
    api: k8s.ApiClient,
    namespace: str,
    own_nodes: NodeFactory,
    dev_cluster: devcluster.DevCluster,
) -> None:
    own_nodes(1, cpu="4")
    owner = f"{namespace}/brief"
    body = make_job("brief").ns(namespace).task("main", 2).pinned(TEST_KEY, namespace).build()
    submitted = time.time()
    submit(api, body)
    running(api, namespace, "brief", 2)
    seen_running = time.time()
    time.sleep(5)  # a run long enough to tell from nothing
    ran_at_least = time.time() - seen_running  # (it stood before it was seen running)
    finish(api, namespace, ["brief-main-0", "brief-main-1"])
    wait_job(api, namespace, "brief", "Completed")

    def recorded() -> OwnerRuns | None:
        history, _ = read_history(api)
        return history.owners.get(owner)

    runs: OwnerRuns = wait_until(
        recorded,
        timeout=RECORDED_WITHIN,
        what=f"the run of {owner} in ConfigMap lahar-system/lahar-run-times",
        describe=lambda: str(read_history(api)),
    )
    ran_at_most = time.time() - submitted  # (it ended before it was recorded)
    assert runs.queue == "default"
    (seconds,) = runs.runs
    assert ran_at_least - 1 <= seconds <= ran_at_most + 1  # (times to the whole second)
    history, problem = read_history(api)
    assert problem is None
    assert seconds in history.queues["default"].runs
    assert lahar_metric(dev_cluster, "lahar_run_times_recorded_total") >= 1
    assert lahar_metric(dev_cluster, "lahar_run_times_record_failures_total") == 0
