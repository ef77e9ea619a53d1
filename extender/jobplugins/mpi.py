"""The mpi plugin: the launcher (master) learns its workers' hosts, every pod opens the ssh port.

Pods of the master task get `MPI_HOST`, the worker task's hosts comma-separated
(`<job>-<worker>-0.<job>,<job>-<worker>-1.<job>,...`; one host when the worker template fixes its
hostname; empty when the task has no replicas), in every container and init container. Every
container and init container of every pod of the job declares the port (`mpijob-port`) unless it
already declares that number; a container that already has a port named `mpijob-port` gets it
unnamed.

Arguments (Volcano's): `--master=<task>` (master), `--worker=<task>` (worker), `--port=<n>` (22,
sshd's). The master task must exist: the webhook refuses the job otherwise (Volcano's webhook
does). A job without the worker task is left as Volcano leaves it: its master pods get neither
`MPI_HOST` nor the port, the other pods get the port.

The launcher reaches the workers by ssh through the svc plugin's hostnames: the webhook adds svc
and ssh to a job that names mpi, as Volcano's does (this plugin makes neither itself).
"""

from __future__ import annotations

from typing import Any

from extender.api.batch import Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import containers, hosts, open_port, set_env

NAME = "mpi"
DEFAULT_MASTER = "master"
DEFAULT_WORKER = "worker"
DEFAULT_PORT = 22
PORT_NAME = "mpijob-port"
ENV = "MPI_HOST"


class MpiPlugin:
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
        if job.task(self.master) is not None:
            return []
        reason = f"no task is named {self.master!r}: the mpi master task (--master) must exist"
        return [PluginError(NAME, reason, "master")]

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        if task.name == self.master:
            worker = job.task(self.worker)
            if worker is None:
                return  # as in Volcano: no MPI_HOST, no port
            addresses = ",".join(h.address for h in hosts(job, worker))
            set_env(pod, [{"name": ENV, "value": addresses}])
        for container in containers(pod):
            open_port(container, self.port, PORT_NAME)


def configure(args: list[str] | None) -> MpiPlugin:
    arguments = Arguments(NAME, args, options=("master", "worker", "port"))
    roles = arguments.roles({"master": DEFAULT_MASTER, "worker": DEFAULT_WORKER})
    return MpiPlugin(
        master=roles["master"],
        worker=roles["worker"],
        port=arguments.number("port", DEFAULT_PORT, 1, 65535),
    )
