"""A running dev cluster's state file: where everything is, so any later command can find it.

`state.json` is written (atomically) after every process starts, so even an interrupted `up` leaves
enough behind for `down` to stop what it started. A state file whose processes are all gone is
stale; the commands report it instead of guessing.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from extender.devcluster.child_processes import ProcessRecord, is_running
from extender.devcluster.errors import DevClusterError

STATE_FILE = "state.json"


class DevClusterState(BaseModel):
    state_dir: Path
    kubeconfig: Path
    server: str
    kubernetes_version: str
    ports: dict[str, int]
    processes: list[ProcessRecord] = []
    real_node: bool = False  # a kubelet and containerd run (`node_host.teardown` on `down`)

    def running(self) -> list[ProcessRecord]:
        return [record for record in self.processes if is_running(record)]

    def save(self) -> None:
        path = self.state_dir / STATE_FILE
        partial = path.with_suffix(".partial")
        partial.write_text(self.model_dump_json(indent=2))
        os.replace(partial, path)


def load_state(state_dir: Path) -> DevClusterState | None:
    """The state in `state_dir`, or None when there is none; a corrupt file is an error."""
    path = state_dir / STATE_FILE
    try:
        return DevClusterState.model_validate_json(path.read_text())
    except FileNotFoundError:
        return None
    except (ValidationError, ValueError) as exc:
        raise DevClusterError(
            f"{path} is not a dev cluster state file ({exc.__class__.__name__}); "
            f"remove {state_dir} (after stopping anything it started) and run the command again"
        ) from exc
