"""The ray plugin: a Ray cluster from a head task and a worker task, started by the `ray` CLI.

In pods of the head task, the container named `--headContainer` runs

    sh -c "ray start --head --block --dashboard-host=0.0.0.0 --port=<port>
           --dashboard-port=<dashboardPort> --ray-client-server-port=<clientPort>"

(one line) and declares the ports `gcs`, `dashboard` and `client-server` (each unless it declares
that number already; unnamed when the name is taken). In pods of the worker task, the container
named `--workerContainer` runs `sh -c "ray start --block --address=<head-0 host>:<port>"`, the head
pod's host through the svc plugin's Service (`<job>-<head>-0.<job>`, or the head template's
hostname/subdomain). The command replaces the template's; its `args` are kept, as in Volcano.
Other containers and tasks are left alone.

Kept for the job: a Service `<job>-head-svc` selecting the head task's pods, with the ports `gcs`,
`dashboard` and `client-server` (TCP), so clients and `kubectl port-forward` reach the dashboard
and the client server.

Arguments (Volcano's, camelCase as its flags are): `--head=<task>` (head), `--worker=<task>`
(worker), `--headContainer=<name>` (head), `--workerContainer=<name>` (worker), `--port=<n>`
(6379, the GCS), `--dashboardPort=<n>` (8265), `--clientPort=<n>` (10001). Volcano's user guide
calls the last one `--clientServerPort`; its code does not know that flag, nor does Lahar.

A task without a container of the given name keeps its template's commands (Volcano's behaviour:
such a template may start Ray itself). Where Volcano fails every pod's creation (no head task) or
starts a cluster that cannot run (two ports the same), the webhook refuses the job. A job without a
worker task is a head-only cluster. The webhook adds svc to a job that names ray, as
Volcano's does.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from extender.api.batch import TASK_SPEC_KEY, Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import host, job_labels, metadata, open_port

NAME = "ray"
DEFAULT_HEAD = "head"
DEFAULT_WORKER = "worker"
DEFAULT_HEAD_CONTAINER = "head"
DEFAULT_WORKER_CONTAINER = "worker"
DEFAULT_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265
DEFAULT_CLIENT_PORT = 10001
GCS_PORT_NAME = "gcs"
DASHBOARD_PORT_NAME = "dashboard"
CLIENT_PORT_NAME = "client-server"
SERVICE_SUFFIX = "-head-svc"
_SERVICE_NAME_MAX = 63  # a Service name is a DNS-1035 label


def service_name(job: Job) -> str:
    return f"{job.metadata.name}{SERVICE_SUFFIX}"


class RayPlugin:
    name = NAME

    def __init__(
        self,
        *,
        head: str = DEFAULT_HEAD,
        worker: str = DEFAULT_WORKER,
        head_container: str = DEFAULT_HEAD_CONTAINER,
        worker_container: str = DEFAULT_WORKER_CONTAINER,
        port: int = DEFAULT_PORT,
        dashboard_port: int = DEFAULT_DASHBOARD_PORT,
        client_port: int = DEFAULT_CLIENT_PORT,
    ) -> None:
        self.head = head
        self.worker = worker
        self.head_container = head_container
        self.worker_container = worker_container
        self.port = port
        self.dashboard_port = dashboard_port
        self.client_port = client_port

    @property
    def ports(self) -> list[tuple[str, int]]:
        return [
            (GCS_PORT_NAME, self.port),
            (DASHBOARD_PORT_NAME, self.dashboard_port),
            (CLIENT_PORT_NAME, self.client_port),
        ]

    def objects(self, job: Job) -> list[PluginObject]:
        return [PluginObject("v1", "Service", service_name(job), partial(self._service, job))]

    def problems(self, job: Job) -> list[PluginError]:
        head = job.task(self.head)
        if head is None:
            reason = f"no task is named {self.head!r}: the ray head task (--head) must exist"
            return [PluginError(NAME, reason, "head")]
        found = []
        name = service_name(job)
        if job.metadata.name and len(name) > _SERVICE_NAME_MAX:
            reason = (
                f"the head Service would be named {name}, longer than {_SERVICE_NAME_MAX} "
                "characters: shorten the job's name"
            )
            found.append(PluginError(NAME, reason))
        return found

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        head = job.task(self.head)
        if head is None:
            return  # refused by `problems`
        for container in (pod.get("spec") or {}).get("containers") or []:
            if task.name == self.head and container.get("name") == self.head_container:
                for port_name, port in self.ports:
                    open_port(container, port, port_name)
                container["command"] = ["sh", "-c", self.head_command()]
            if task.name == self.worker and container.get("name") == self.worker_container:
                container["command"] = ["sh", "-c", self.worker_command(job, head)]

    def head_command(self) -> str:
        return (
            f"ray start --head --block --dashboard-host=0.0.0.0 --port={self.port} "
            f"--dashboard-port={self.dashboard_port} --ray-client-server-port={self.client_port}"
        )

    def worker_command(self, job: Job, head: TaskSpec) -> str:
        return f"ray start --block --address={host(job, head, 0).address}:{self.port}"

    def _service(self, job: Job) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(job, service_name(job)),
            "spec": {
                "selector": {**job_labels(job), TASK_SPEC_KEY: self.head},
                # The target is the number, not Volcano's port name: it reaches the head even
                # where its container declares the number under another name (or not at all).
                "ports": [
                    {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
                    for name, port in self.ports
                ],
            },
        }


def configure(args: list[str] | None) -> RayPlugin:
    options = (
        "head",
        "worker",
        "headContainer",
        "workerContainer",
        "port",
        "dashboardPort",
        "clientPort",
    )
    arguments = Arguments(NAME, args, options=options)
    roles = arguments.roles({"head": DEFAULT_HEAD, "worker": DEFAULT_WORKER})
    containers = {
        flag: arguments.text(flag, default)
        for flag, default in (
            ("headContainer", DEFAULT_HEAD_CONTAINER),
            ("workerContainer", DEFAULT_WORKER_CONTAINER),
        )
    }
    for flag, value in containers.items():
        if not value:
            raise arguments.error(f"--{flag} must name a container", flag)
    ports = {
        flag: arguments.number(flag, default, 1, 65535)
        for flag, default in (
            ("port", DEFAULT_PORT),
            ("dashboardPort", DEFAULT_DASHBOARD_PORT),
            ("clientPort", DEFAULT_CLIENT_PORT),
        )
    }
    clashing = [f for f, port in ports.items() if list(ports.values()).count(port) > 1]
    if clashing:
        raise arguments.error(
            "--port, --dashboardPort and --clientPort must be three different ports",
            next((f for f in clashing if arguments.given(f)), clashing[0]),  # the one given
        )
    return RayPlugin(
        head=roles["head"],
        worker=roles["worker"],
        head_container=containers["headContainer"],
        worker_container=containers["workerContainer"],
        port=ports["port"],
        dashboard_port=ports["dashboardPort"],
        client_port=ports["clientPort"],
    )
