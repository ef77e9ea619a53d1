"""env: every container and init container of a pod learns the pod's index within its task."""

from __future__ import annotations

import pytest

from extender.api.batch import Job
from extender.jobplugins import make_plugins
from tests.unit.jobplugins.pods import MakePod, all_containers, env_of


@pytest.mark.parametrize(("task", "index"), [("ps", 0), ("worker", 0), ("worker", 1)])
def test_index_on_every_container(tf_job: Job, make_pod: MakePod, task: str, index: int) -> None:
    [env] = make_plugins({"env": []})
    pod, spec = make_pod(tf_job, task, index)
    env.mutate_pod(pod, tf_job, spec, index)
    assert env.objects(tf_job) == []
    for c in all_containers(pod):
        assert env_of(c) == {"VK_TASK_INDEX": str(index), "VC_TASK_INDEX": str(index)}


def test_a_template_variable_of_the_same_name_is_replaced_in_place(
    tf_job: Job, make_pod: MakePod
) -> None:
    [env] = make_plugins({"env": None})
    pod, spec = make_pod(tf_job, "worker", 1)
    container = pod["spec"]["containers"][0]
    container["env"] = [{"name": "VC_TASK_INDEX", "value": "7"}, {"name": "KEEP", "value": "x"}]
    env.mutate_pod(pod, tf_job, spec, 1)
    env.mutate_pod(pod, tf_job, spec, 1)  # twice: still no duplicates
    assert [e["name"] for e in container["env"]] == ["VC_TASK_INDEX", "KEEP", "VK_TASK_INDEX"]
    assert env_of(container) == {"VC_TASK_INDEX": "1", "KEEP": "x", "VK_TASK_INDEX": "1"}
