"""The svc plugin: the job's pods find each other by name.

Kept for the job:
- a headless Service `<job>` selecting the job's pods, so `<pod>.<job>` resolves (with one
  placeholder port, as Volcano declares, and `publishNotReadyAddresses` from the argument);
- a ConfigMap `<job>-svc` listing each task's hosts: `<task>.host` (one per line),
  `VC_<TASK>_HOSTS` (comma-separated) and `VC_<TASK>_NUM`, where `<task>` has `-` turned into `_`
  and `<TASK>` is that upper-cased. It follows the job's replicas (replaced on scaling);
- a NetworkPolicy `<job>` letting only the job's own pods in, unless `--disable-network-policy`.

Each pod gets `hostname` = its name and `subdomain` = the job (unless its template sets them), the
ConfigMap mounted at `/etc/volcano`, and every task's `VC_<TASK>_HOSTS` / `VC_<TASK>_NUM` as env
read from the ConfigMap, on containers and init containers.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from extender.api.batch import Job, TaskSpec, pod_name
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import hosts, job_labels, metadata, mount, set_env

NAME = "svc"
MOUNT_PATH = "/etc/volcano"
PUBLISH_NOT_READY = "publish-not-ready-addresses"
DISABLE_NETWORK_POLICY = "disable-network-policy"


def config_map_name(job: Job) -> str:
    return f"{job.metadata.name}-{NAME}"


def _key(task: TaskSpec) -> str:
    return task.name.replace("-", "_")


def hosts_env(task: TaskSpec) -> str:
    return f"VC_{_key(task).upper()}_HOSTS"


def num_env(task: TaskSpec) -> str:
    return f"VC_{_key(task).upper()}_NUM"


def host_file(job: Job) -> dict[str, str]:
    """The ConfigMap's data: each task's hosts as a file and as env values."""
    data: dict[str, str] = {}
    for task in job.spec.tasks:
        addresses = [h.address for h in hosts(job, task)]
        data[f"{_key(task)}.host"] = "\n".join(addresses)
        data[hosts_env(task)] = ",".join(addresses)
        data[num_env(task)] = str(len(addresses))
    return data


class SvcPlugin:
    name = NAME

    def __init__(self, *, publish_not_ready_addresses: bool, network_policy: bool) -> None:
        self.publish_not_ready_addresses = publish_not_ready_addresses
        self.network_policy = network_policy

    def objects(self, job: Job) -> list[PluginObject]:
        name = job.metadata.name
        kept = [
            PluginObject("v1", "ConfigMap", config_map_name(job), partial(_config_map, job)),
            PluginObject("v1", "Service", name, partial(self._service, job)),
        ]
        if self.network_policy:
            kept.append(
                PluginObject(
                    "networking.k8s.io/v1", "NetworkPolicy", name, partial(_network_policy, job)
                )
            )
        return kept

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        spec = pod.setdefault("spec", {})
        spec["hostname"] = spec.get("hostname") or pod_name(job.metadata.name, task.name, index)
        spec["subdomain"] = spec.get("subdomain") or job.metadata.name
        config_map = config_map_name(job)
        set_env(
            pod,
            [
                {"name": env, "valueFrom": {"configMapKeyRef": {"name": config_map, "key": env}}}
                for t in job.spec.tasks
                for env in (hosts_env(t), num_env(t))
            ],
        )
        mount(
            pod,
            {"name": config_map, "configMap": {"name": config_map}},
            {"name": config_map, "mountPath": MOUNT_PATH},
        )

    def _service(self, job: Job) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(job, job.metadata.name),
            "spec": {
                "clusterIP": "None",
                "selector": job_labels(job),
                "publishNotReadyAddresses": self.publish_not_ready_addresses,
                # Volcano's placeholder: the Service exists for DNS, not for a port.
                "ports": [
                    {"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}
                ],
            },
        }


def _config_map(job: Job) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(job, config_map_name(job)),
        "data": host_file(job),
    }


def _network_policy(job: Job) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(job, job.metadata.name),
        "spec": {
            "podSelector": {"matchLabels": job_labels(job)},
            "ingress": [{"from": [{"podSelector": {"matchLabels": job_labels(job)}}]}],
            "policyTypes": ["Ingress"],
        },
    }


def configure(args: list[str] | None) -> SvcPlugin:
    arguments = Arguments(NAME, args, switches=(PUBLISH_NOT_READY, DISABLE_NETWORK_POLICY))
    return SvcPlugin(
        publish_not_ready_addresses=arguments.switch(PUBLISH_NOT_READY),
        network_policy=not arguments.switch(DISABLE_NETWORK_POLICY),
    )
