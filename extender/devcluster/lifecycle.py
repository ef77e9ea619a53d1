"""Driving a pod's lifecycle on the dev cluster, where KWOK plays the kubelet.

Lahar's own KWOK stage (`kwok-stages.yaml`) ends a running pod that carries the annotation
`sim.lahar.io/exit-code`: code 0 makes it Succeeded, any other code Failed, with that exit code in
every container status. This module is the one place that knows the annotation.
"""

from __future__ import annotations

from kubernetes import client as k8s

from extender.kube import apply_object

EXIT_ANNOTATION = "sim.lahar.io/exit-code"


def end_pod(api: k8s.ApiClient, namespace: str, name: str, exit_code: int) -> None:
    """Ask KWOK to end the running pod `namespace/name` with `exit_code`."""
    apply_object(
        api,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": {EXIT_ANNOTATION: str(exit_code)},
            },
        },
        field_manager="lahar-pod-lifecycle",
    )
