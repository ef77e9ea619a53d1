"""The real Cluster Autoscaler in place of the stand-in, for a run of the autoscaling tests against
it: `LAHAR_CLUSTER_AUTOSCALER` names a `cluster-autoscaler` binary built with its `kwok` cloud
provider (`go build -tags kwok` in its source's `cluster-autoscaler/`; its Go module is not served
to the machines CI runs on, so CI never does this).

`ClusterAutoscaler` has the stand-in's shape (`tests.autoscaler.provisioner.Provisioner`): a
context manager for one test's namespace and node pool, with `nodes` and `log`. It writes the kwok
provider's two ConfigMaps (in kube-system, where the provider reads them: one node group, named
after the namespace, whose template is the pool's node with the group's label and the max-count
annotation) and runs the binary against the cluster with ProvisioningRequests on
(`--enable-provisioning-requests`), a 2 s loop, scale-down off and no leader election. Leaving the
context stops it with SIGTERM, on which the kwok provider deletes its group's nodes; then the
ConfigMaps go. The pool's `delay` is not the real one's to take: kwok nodes come in about a
second. The ProvisioningRequest CRD is the tests' own (`provisioningrequests.yaml`, served as the
real one's v1), which the dev cluster serves from its start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from kubernetes import client as k8s

from extender.kube import apply_object, delete, list_objects, wait_until
from tests.autoscaler.provisioner import NodePool

BINARY = "LAHAR_CLUSTER_AUTOSCALER"
NAMESPACE = "kube-system"
GROUP_LABEL = "lahar.io/ca-node-group"
GROUP_ANNOTATION = "cluster-autoscaler.kwok.nodegroup"


def binary() -> Path | None:
    """The Cluster Autoscaler binary to run, when the environment names one."""
    named = os.environ.get(BINARY)
    return Path(named) if named else None


class ClusterAutoscaler:
    def __init__(
        self, api: k8s.ApiClient, kubeconfig: Path, namespace: str, pool: NodePool, *, log: Path
    ) -> None:
        self.api, self.kubeconfig, self.namespace, self.pool = api, kubeconfig, namespace, pool
        self.group = namespace[:63].rstrip("-")
        self.output = log
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def nodes(self) -> list[str]:
        """The nodes of its node group now."""
        found = list_objects(self.api, "v1", "Node", label_selector=f"{GROUP_LABEL}={self.group}")
        return sorted(node["metadata"]["name"] for node in found)

    @property
    def log(self) -> list[tuple[Any, ...]]:
        """What it did is in its own log (`output`), not in entries."""
        return []

    def _template(self) -> dict[str, Any]:
        node = self.pool.template(f"{self.group}-template")
        meta = node["metadata"]
        meta.setdefault("labels", {})[GROUP_LABEL] = self.group
        meta.setdefault("annotations", {}).update(
            {
                f"{GROUP_ANNOTATION}/name": self.group,
                f"{GROUP_ANNOTATION}/min-count": "0",
                f"{GROUP_ANNOTATION}/max-count": str(self.pool.max_nodes),
            }
        )
        return node

    def _config_maps(self) -> list[dict[str, Any]]:
        provider = (
            "apiVersion: v1alpha1\nreadNodesFrom: configmap\n"
            f"nodegroups:\n  fromNodeLabelKey: {json.dumps(GROUP_LABEL)}\n"
            "nodes:\n  skipTaint: true\nconfigmap:\n  name: kwok-provider-templates\n"
        )
        templates = json.dumps({"apiVersion": "v1", "kind": "List", "items": [self._template()]})
        return [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "data": {key: value},
            }
            for name, key, value in (
                ("kwok-provider-config", "config", provider),
                ("kwok-provider-templates", "templates", templates),
            )
        ]

    def __enter__(self) -> Self:
        path = binary()
        if path is None:
            raise RuntimeError(f"${BINARY} names no Cluster Autoscaler binary")
        for config_map in self._config_maps():
            apply_object(self.api, config_map)
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KWOK_PROVIDER_MODE": "local",  # (its client from $KUBECONFIG, not in-cluster)
            "POD_NAMESPACE": NAMESPACE,  # (where it reads its ConfigMaps)
        }
        args = [
            str(path),
            f"--kubeconfig={self.kubeconfig}",
            "--cloud-provider=kwok",
            f"--namespace={NAMESPACE}",
            "--leader-elect=false",
            "--address=127.0.0.1:0",
            "--enable-provisioning-requests=true",
            "--scan-interval=2s",
            "--scale-down-enabled=false",
            "--new-pod-scale-up-delay=0s",
            "--logtostderr=true",
            "--v=4",
        ]
        with self.output.open("ab") as out:
            self._process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        process = self._process
        if process is not None:
            process.send_signal(signal.SIGTERM)  # (the kwok provider deletes its nodes)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for name in self.nodes:  # (whatever it left)
            delete(self.api, "v1", "Node", name)
        wait_until(lambda: not self.nodes, timeout=60, what=f"node group {self.group} gone")
        for config_map in self._config_maps():
            delete(self.api, "v1", "ConfigMap", config_map["metadata"]["name"], NAMESPACE)
