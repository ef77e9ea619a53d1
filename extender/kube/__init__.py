"""The only code that talks to the Kubernetes API server.

Everything above this layer gets API access through these modules: a client built from a kubeconfig
(`client`), server-side apply of manifests (`manifests`) and condition waits (`wait`). Callers get
values or a `KubeError` naming the object and the reason; raw client exceptions do not leak upward.
"""

from extender.kube.client import KubeError, connect, load_client
from extender.kube.manifests import Manifest, apply_object, load_manifests
from extender.kube.objects import delete, list_objects, read
from extender.kube.wait import wait_until

__all__ = [
    "KubeError",
    "Manifest",
    "apply_object",
    "connect",
    "delete",
    "list_objects",
    "load_client",
    "load_manifests",
    "read",
    "wait_until",
]
