"""Setting a value deep in an object by a field path (`spec.tasks[0].minAvailable`), for builders
that let a test set what they have no method for."""

from __future__ import annotations

from typing import Any


def steps(path: str) -> list[str | int]:
    """`spec.tasks[0].replicas` -> ["spec", "tasks", 0, "replicas"]."""
    steps: list[str | int] = []
    for part in path.split("."):
        name, *indexes = part.split("[")
        if name:
            steps.append(name)
        steps += [int(index.rstrip("]")) for index in indexes]
    return steps


def set_path(body: dict[str, Any], path: str, value: Any) -> None:
    """Set the field at `path` (`spec.tasks[0].replicas`), making missing objects on the way."""
    *parents, last = steps(path)
    owner: Any = body
    for step in parents:
        owner = owner[step] if isinstance(step, int) else owner.setdefault(step, {})
    owner[last] = value
