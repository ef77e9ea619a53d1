"""The hcclrank plugin: each pod of an Ascend (HCCL) job carries its rank as an annotation.

A pod gets the annotation `hccl/rankIndex`, decided as Volcano decides it, first rule that applies:
1. the pod already has it (non-empty, from its template): kept;
2. a container has the env var `RANK` (the first one found, containers in order, init containers
   not read) with a non-empty value: that value, so a pytorch job's pods carry their pytorch rank
   (the pytorch plugin runs before this one);
3. a pod of the master task: its index; a pod of the worker task: the master task's replicas
   (0 without a master task) plus its index;
4. a pod of any other task gets nothing.

Arguments (Volcano's): `--master=<task>` (master), `--worker=<task>` (worker). It keeps no objects
and sets no env var.
"""

from __future__ import annotations

from typing import Any

from extender.api.batch import Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import containers

NAME = "hcclrank"
DEFAULT_MASTER = "master"
DEFAULT_WORKER = "worker"
ANNOTATION = "hccl/rankIndex"
RANK_ENV = "RANK"


class HcclRankPlugin:
    name = NAME

    def __init__(self, *, master: str = DEFAULT_MASTER, worker: str = DEFAULT_WORKER) -> None:
        self.master = master
        self.worker = worker

    def objects(self, job: Job) -> list[PluginObject]:
        return []

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        meta = pod.setdefault("metadata", {})
        if (meta.get("annotations") or {}).get(ANNOTATION):
            return
        rank = _rank_env(pod)
        if not rank:
            if task.name == self.master:
                rank = str(index)
            elif task.name == self.worker:
                master = job.task(self.master)
                rank = str((master.replicas if master is not None else 0) + index)
            else:
                return
        meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION: rank}


def _rank_env(pod: dict[str, Any]) -> str:
    """The value of the first `RANK` env var of the pod's containers ('' when none, or when it is
    read from elsewhere), as Volcano's `getEnv` reads it."""
    for container in containers(pod, init=False):
        for variable in container.get("env") or []:
            if variable.get("name") == RANK_ENV:
                return str(variable.get("value") or "")
    return ""


def configure(args: list[str] | None) -> HcclRankPlugin:
    arguments = Arguments(NAME, args, options=("master", "worker"))
    roles = arguments.roles({"master": DEFAULT_MASTER, "worker": DEFAULT_WORKER})
    return HcclRankPlugin(master=roles["master"], worker=roles["worker"])
