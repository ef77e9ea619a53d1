"""The tensorflow plugin: `TF_CONFIG`, the cluster a `tf.distribute` strategy reads, per pod.

Every container (init containers are left alone, as in Volcano) of every pod gets `TF_CONFIG`, JSON
written as Go's `encoding/json` writes Volcano's (compact, keys in this order):

    {"cluster":{"ps":[...],"worker":[...],"chief":[...],"evaluator":[...]},
     "task":{"type":"worker","index":1}}

`cluster` maps each role to its task's hosts, one `<host>:<port>` per replica in index order
(`<job>-<task>-<i>.<job>`, or the template's hostname/subdomain); a role whose task is missing or
has no replicas is left out. The evaluator is listed in `cluster` like the other roles (Volcano
does so, although TensorFlow itself keeps it out of the cluster). `task` is the pod's role and
index; a pod of a task playing no role gets its task name as type (as in Volcano). A job of one
task with one replica is stand-alone TensorFlow and gets no `TF_CONFIG`.

Arguments (Volcano's): `--ps=<task>` (ps), `--worker=<task>` (worker), `--chief=<task>` (chief),
`--evaluator=<task>` (evaluator), `--port=<n>` (2222). The plugin opens no port. Hosts resolve
through the svc plugin's Service: the webhook adds svc to a job that names tensorflow, as
Volcano's does.
"""

from __future__ import annotations

import json
from typing import Any

from extender.api.batch import Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import host, set_env

NAME = "tensorflow"
DEFAULT_PORT = 2222
ENV = "TF_CONFIG"
ROLES = ("ps", "worker", "chief", "evaluator")  # the flags, defaults and JSON keys, in Go's order


class TensorflowPlugin:
    name = NAME

    def __init__(self, *, tasks: dict[str, str] | None = None, port: int = DEFAULT_PORT) -> None:
        self.tasks = {role: role for role in ROLES} | (tasks or {})  # role -> task name
        self.port = port

    def objects(self, job: Job) -> list[PluginObject]:
        return []

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        if len(job.spec.tasks) == 1 and job.spec.tasks[0].replicas == 1:
            return  # stand-alone
        set_env(pod, [{"name": ENV, "value": self.tf_config(job, task, index)}], init=False)

    def tf_config(self, job: Job, task: TaskSpec, index: int) -> str:
        cluster: dict[str, list[str]] = {}
        for role in ROLES:
            member = job.task(self.tasks[role])
            if member is not None and member.replicas > 0:
                cluster[role] = [
                    f"{host(job, member, i).address}:{self.port}" for i in range(member.replicas)
                ]
        role = next((r for r in ROLES if self.tasks[r] == task.name), task.name)
        spec = {"cluster": cluster, "task": {"type": role, "index": index}}
        return json.dumps(spec, separators=(",", ":"))


def configure(args: list[str] | None) -> TensorflowPlugin:
    arguments = Arguments(NAME, args, options=(*ROLES, "port"))
    return TensorflowPlugin(
        tasks=arguments.roles({role: role for role in ROLES}),
        port=arguments.number("port", DEFAULT_PORT, 1, 65535),
    )
