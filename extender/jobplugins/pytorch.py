"""The pytorch plugin: what `torch.distributed` reads from the environment, per pod.

Every container of every pod gets `MASTER_ADDR` (pod 0 of the master task, `<job>-<master>-0.<job>`
unless its template fixes hostname/subdomain), `MASTER_PORT` and `WORLD_SIZE`; pods of the master
task get `RANK` 0 and pods of the worker task `RANK` = index + 1. Every container also declares the
port (`pytorchjob-port`) unless it already has it. Init containers are left alone, as in Volcano.

Arguments (Volcano's): `--master=<task>` (master), `--worker=<task>` (worker), `--port=<n>`
(23456).

`WORLD_SIZE` counts the master and worker replicas only (Volcano counts every task of the job, so a
side task such as a dashboard would make the group wait for a member that never joins). A job
without the master task gets nothing, as in Volcano. `MASTER_ADDR` resolves through the svc
plugin's Service: Volcano's webhook adds svc to a job that names pytorch; Lahar's must too (this
plugin does not create the Service itself).
"""

from __future__ import annotations

from typing import Any

from extender.api.batch import Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import containers, host, open_port, set_env

NAME = "pytorch"
DEFAULT_MASTER = "master"
DEFAULT_WORKER = "worker"
DEFAULT_PORT = 23456
PORT_NAME = "pytorchjob-port"


class PytorchPlugin:
    name = NAME

    def __init__(
        self,
        *,
        master: str = DEFAULT_MASTER,
        worker: str = DEFAULT_WORKER,
        port: int = DEFAULT_PORT,
    ) -> None:
        self.master = master
        self.worker = worker
        self.port = port

    def objects(self, job: Job) -> list[PluginObject]:
        return []

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        master = job.task(self.master)
        if master is None:
            return
        world = sum(t.replicas for t in job.spec.tasks if t.name in (self.master, self.worker))
        env = [
            {"name": "MASTER_ADDR", "value": host(job, master, 0).address},
            {"name": "MASTER_PORT", "value": str(self.port)},
            {"name": "WORLD_SIZE", "value": str(world)},
        ]
        if task.name == self.master:
            env.append({"name": "RANK", "value": "0"})
        elif task.name == self.worker:
            env.append({"name": "RANK", "value": str(index + 1)})
        set_env(pod, env, init=False)
        for container in containers(pod, init=False):
            open_port(container, self.port, PORT_NAME)


def configure(args: list[str] | None) -> PytorchPlugin:
    arguments = Arguments(NAME, args, options=("master", "worker", "port"))
    roles = arguments.roles({"master": DEFAULT_MASTER, "worker": DEFAULT_WORKER})
    return PytorchPlugin(
        master=roles["master"],
        worker=roles["worker"],
        port=arguments.number("port", DEFAULT_PORT, 1, 65535),
    )
