"""The env plugin: each pod learns its index within its task.

`VK_TASK_INDEX` (Volcano's old name) and `VC_TASK_INDEX` are set to the pod's index on every
container and init container. It keeps no objects and takes no arguments.
"""

from __future__ import annotations

from typing import Any

from extender.api.batch import Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import set_env

NAME = "env"
INDEX_ENV = ("VK_TASK_INDEX", "VC_TASK_INDEX")


class EnvPlugin:
    name = NAME

    def objects(self, job: Job) -> list[PluginObject]:
        return []

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        set_env(pod, [{"name": name, "value": str(index)} for name in INDEX_ENV])


def configure(args: list[str] | None) -> EnvPlugin:
    Arguments(NAME, args)  # none known: any argument is an error
    return EnvPlugin()
