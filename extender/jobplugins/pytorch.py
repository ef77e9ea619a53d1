"""The pytorch plugin: what `torch.distributed` reads from the environment, per pod.

Every container of every pod gets `MASTER_ADDR` (pod 0 of the master task, `<job>-<master>-0.<job>`
unless its template fixes hostname/subdomain), `MASTER_PORT` and `WORLD_SIZE`; pods of the master
task get `RANK` 0 and pods of the worker task `RANK` = index + 1. Every container also declares the
port (`pytorchjob-port`) unless it already has it. Init containers are left alone, as in Volcano.

With `--wait-master-enabled`, each worker pod also gets an init container `wait-for-master`
(image `--wait-master-image`) that waits until the master's port answers, for at most
`--wait-master-timeout` seconds, then fails the pod (the job's policies decide what follows); a
template that already has an init container of that name keeps its own.

Arguments (Volcano's): `--master=<task>` (master), `--worker=<task>` (worker), `--port=<n>`
(23456), `--wait-master-enabled` (false), `--wait-master-timeout=<seconds>` (300),
`--wait-master-image=<image>` (busybox:1.36.1).

`WORLD_SIZE` counts the master and worker replicas only (a side task such as a dashboard is not
part of the process group), as Volcano counts them. A job without the master task gets nothing,
as in Volcano. `MASTER_ADDR` resolves through the svc
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
WAIT_CONTAINER = "wait-for-master"
DEFAULT_WAIT_TIMEOUT = 300
DEFAULT_WAIT_IMAGE = "busybox:1.36.1"


class PytorchPlugin:
    name = NAME

    def __init__(
        self,
        *,
        master: str = DEFAULT_MASTER,
        worker: str = DEFAULT_WORKER,
        port: int = DEFAULT_PORT,
        wait_master: bool = False,
        wait_timeout: int = DEFAULT_WAIT_TIMEOUT,
        wait_image: str = DEFAULT_WAIT_IMAGE,
    ) -> None:
        self.master = master
        self.worker = worker
        self.port = port
        self.wait_master = wait_master
        self.wait_timeout = wait_timeout
        self.wait_image = wait_image

    def objects(self, job: Job) -> list[PluginObject]:
        return []

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        master = job.task(self.master)
        if master is None:
            return
        world = sum(t.replicas for t in job.spec.tasks if t.name in (self.master, self.worker))
        address = host(job, master, 0).address
        env = [
            {"name": "MASTER_ADDR", "value": address},
            {"name": "MASTER_PORT", "value": str(self.port)},
            {"name": "WORLD_SIZE", "value": str(world)},
        ]
        if task.name == self.master:
            env.append({"name": "RANK", "value": "0"})
        elif task.name == self.worker:
            env.append({"name": "RANK", "value": str(index + 1)})
            if self.wait_master:
                self._wait_for(pod, address)
        set_env(pod, env, init=False)
        for container in containers(pod, init=False):
            open_port(container, self.port, PORT_NAME)

    def _wait_for(self, pod: dict[str, Any], address: str) -> None:
        spec = pod.setdefault("spec", {})
        init: list[dict[str, Any]] = spec.setdefault("initContainers", [])
        if any(c.get("name") == WAIT_CONTAINER for c in init):
            return
        command = ["sh", "-c", self.wait_script(address)]
        init.append({"name": WAIT_CONTAINER, "image": self.wait_image, "command": command})

    def wait_script(self, address: str) -> str:
        """A POSIX shell loop: until the master's port accepts a connection (nc, else bash's
        /dev/tcp), every 2 s, failing after the timeout."""
        probe = f"nc -z {address} {self.port} || echo > /dev/tcp/{address}/{self.port}"
        return (
            f'echo "Waiting for master {address}:{self.port}..."\n'
            f"TIMEOUT={self.wait_timeout}\n"
            "ELAPSED=0\n"
            f"until {{ {probe}; }} 2>/dev/null; do\n"
            '  if [ "$ELAPSED" -ge "$TIMEOUT" ]; then\n'
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
            "    exit 1\n"
            "  fi\n"
            "  sleep 2\n"
            "  ELAPSED=$((ELAPSED + 2))\n"
            "done\n"
            'echo "Master is ready"'
        )


def configure(args: list[str] | None) -> PytorchPlugin:
    arguments = Arguments(
        NAME,
        args,
        switches=("wait-master-enabled",),
        options=("master", "worker", "port", "wait-master-timeout", "wait-master-image"),
    )
    roles = arguments.roles({"master": DEFAULT_MASTER, "worker": DEFAULT_WORKER})
    image = arguments.text("wait-master-image", DEFAULT_WAIT_IMAGE)
    if not image:
        raise arguments.error("--wait-master-image must name an image", "wait-master-image")
    return PytorchPlugin(
        master=roles["master"],
        worker=roles["worker"],
        port=arguments.number("port", DEFAULT_PORT, 1, 65535),
        wait_master=arguments.switch("wait-master-enabled"),
        wait_timeout=arguments.number("wait-master-timeout", DEFAULT_WAIT_TIMEOUT, 1, 86400),
        wait_image=image,
    )
