"""Where the dev cluster keeps its builds and its state; environment variables override each.

- Built binaries are cached per version outside the repository: `$LAHAR_CACHE_DIR`, else
  `$XDG_CACHE_HOME/lahar`, else `~/.cache/lahar`.
- A running cluster's state (pids, ports, certificates, logs, kubeconfig): `--state-dir`, else
  `$LAHAR_STATE_DIR`, else `$XDG_STATE_HOME/lahar/dev-cluster`, else
  `~/.local/state/lahar/dev-cluster`.
- The Go modules that pin the control plane live in the repository under `tests/controlplane/`
  (`$LAHAR_CONTROLPLANE_SRC` points elsewhere).
- Lahar's policy files and manifests are the checkout's `policy/` and `manifests/`.
"""

from __future__ import annotations

import os
from pathlib import Path

import extender


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    if path := _env_path("LAHAR_CACHE_DIR"):
        return path
    base = _env_path("XDG_CACHE_HOME") or Path.home() / ".cache"
    return base / "lahar"


def default_state_dir() -> Path:
    if path := _env_path("LAHAR_STATE_DIR"):
        return path
    base = _env_path("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return base / "lahar" / "dev-cluster"


def controlplane_source() -> Path:
    if path := _env_path("LAHAR_CONTROLPLANE_SRC"):
        return path
    return repository() / "tests" / "controlplane"


def repository() -> Path:
    return Path(extender.__file__).resolve().parent.parent


def policy_dir() -> Path:
    return repository() / "policy"


def manifests_dir() -> Path:
    return repository() / "manifests"
