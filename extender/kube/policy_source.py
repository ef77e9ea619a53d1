"""The policy the cluster's extender runs, read from its Deployment: the `lahar` run of a what-if.

The shipped install (manifests/scheduler.yaml, manifests/extender-service/, the chart) runs the
extender with `--policy=/etc/lahar/policy/<file>` and mounts there the ConfigMap
`lahar-policy-<hash>` (kustomize's configMapGenerator, or the chart's same hash), whose keys are
the policy files. The policy in force is thus found from the Deployment alone: the container
whose arguments carry `--policy=PATH` (or `--policy PATH`), the volume mounted at PATH's
directory (the longest mountPath holding PATH, its subPath followed), that volume's ConfigMap,
and the key the file is (the volume's `items`, else the file's name). `policy_mount` is that
reading, pure, on a Deployment as the API server returns it; `policy_in_force` reads the
Deployment and the ConfigMap and returns the policy's text and where it was read.

Where there is no such Deployment (the dev cluster runs the extender as a process, a Helm release
may be named otherwise) or it does not say, `PolicyNotFound` is one line naming what is missing
and the flag to pass instead.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from extender.kube.client import KubeError
from extender.kube.snapshot_lists import MissingRight, read_object

DEPLOYMENT = "lahar-system/lahar-scheduler"
FLAG = "--policy"
INSTEAD = "pass --current-policy FILE"


class PolicyNotFound(KubeError):
    """The policy in force cannot be read from the cluster; the message says what is missing
    and which flag to pass instead."""


@dataclass(frozen=True)
class PolicyMount:
    """Where a Deployment's extender reads its policy: `path` (its --policy) in `container`,
    found in key `key` of ConfigMap `config_map` (in the Deployment's namespace) through the
    volume `volume` mounted at `mount_path`."""

    deployment: str  # namespace/name
    container: str
    path: str
    volume: str
    mount_path: str
    config_map: str
    key: str

    @property
    def namespace(self) -> str:
        return self.deployment.partition("/")[0]

    @property
    def where(self) -> str:
        return f"ConfigMap {self.namespace}/{self.config_map} key {self.key}"


def _policy_arg(container: dict[str, Any]) -> str | None:
    """The value of the container's --policy, from its command then its args."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    for i, arg in enumerate(argv):
        if arg.startswith(f"{FLAG}="):
            return arg.partition("=")[2]
        if arg == FLAG and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _within(path: str, mount_path: str) -> str | None:
    """`path` relative to `mount_path` ("" for the mount itself), None when outside it."""
    mount = posixpath.normpath(mount_path)
    if path == mount:
        return ""
    if path.startswith(mount.rstrip("/") + "/"):
        return path[len(mount.rstrip("/")) + 1 :]
    return None


def policy_mount(deployment: dict[str, Any]) -> PolicyMount:
    """Where the extender of `deployment` reads its policy; `PolicyNotFound` when it does not
    say (no --policy, no volume there, a volume that is not a ConfigMap, a file that is no key)."""
    meta = deployment.get("metadata") or {}
    named = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    found = next(
        ((c, arg) for c in spec.get("containers") or [] if (arg := _policy_arg(c)) is not None),
        None,
    )
    if found is None:
        raise PolicyNotFound(f"no container of Deployment {named} has a {FLAG} argument: {INSTEAD}")
    container, arg = found
    said = f"Deployment {named} runs {FLAG}={arg}"
    if not posixpath.isabs(arg):
        raise PolicyNotFound(f"{said}, not an absolute path: {INSTEAD}")
    path = posixpath.normpath(arg)
    mounts = [
        (m, rest)
        for m in container.get("volumeMounts") or []
        if (rest := _within(path, str(m.get("mountPath", "")))) is not None
    ]
    if not mounts:
        raise PolicyNotFound(f"{said} but mounts no volume there: {INSTEAD}")
    mount, rest = max(mounts, key=lambda found: len(str(found[0]["mountPath"])))
    in_volume = posixpath.join(str(mount.get("subPath") or ""), rest).strip("/")
    volumes: list[dict[str, Any]] = spec.get("volumes") or []
    volume = next((v for v in volumes if v.get("name") == mount["name"]), {})
    config_map = volume.get("configMap") or {}
    if not config_map.get("name"):
        raise PolicyNotFound(
            f"{said} from the volume {mount['name']}, which is not a ConfigMap: {INSTEAD}"
        )
    items = config_map.get("items")
    if items:  # (keys projected under paths of their own)
        key = next((i["key"] for i in items if i.get("path") == in_volume), None)
    else:  # (every key a file of its own name)
        key = in_volume if in_volume and "/" not in in_volume else None
    if key is None:
        raise PolicyNotFound(
            f"{said}, which names no key of ConfigMap {config_map['name']}: {INSTEAD}"
        )
    return PolicyMount(
        deployment=named,
        container=str(container.get("name", "")),
        path=path,
        volume=str(mount["name"]),
        mount_path=str(mount["mountPath"]),
        config_map=str(config_map["name"]),
        key=str(key),
    )


def _read(api: k8s.ApiClient, path: str, resource: str, namespace: str) -> dict[str, Any] | None:
    try:
        return read_object(api, path, resource, namespace)
    except MissingRight as error:
        raise PolicyNotFound(f"{error}, or {INSTEAD}") from error


def policy_in_force(api: k8s.ApiClient, deployment: str = DEPLOYMENT) -> tuple[str, str]:
    """The policy file's text that Deployment `deployment` (namespace/name) runs its extender
    with, and where it was read (`ConfigMap lahar-system/lahar-policy-… key lahar.yaml`)."""
    namespace, _, name = deployment.rpartition("/")
    if not namespace or not name:
        raise ValueError(f"the Deployment is named namespace/name, not {deployment!r}")
    found = _read(
        api,
        f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
        "deployments.apps",
        namespace,
    )
    if found is None:
        raise PolicyNotFound(f"no Deployment {deployment} in the cluster: {INSTEAD}")
    mount = policy_mount(found)
    config_map = _read(
        api,
        f"/api/v1/namespaces/{namespace}/configmaps/{mount.config_map}",
        "configmaps",
        namespace,
    )
    if config_map is None:
        raise PolicyNotFound(
            f"ConfigMap {namespace}/{mount.config_map}, which Deployment {deployment} mounts at "
            f"{mount.mount_path}, does not exist: {INSTEAD}"
        )
    text = (config_map.get("data") or {}).get(mount.key)
    if text is None:
        raise PolicyNotFound(
            f"ConfigMap {namespace}/{mount.config_map} has no key {mount.key}, which Deployment "
            f"{deployment} runs as {FLAG}={mount.path}: {INSTEAD}"
        )
    return str(text), mount.where
