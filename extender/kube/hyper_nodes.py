"""Writing the HyperNodes built from node labels (`api.topology_labels`) to the cluster.

`sync_hyper_nodes` reads every HyperNode, plans against them (`topology_labels.plan`), refuses
before writing anything when a wanted name is used by a HyperNode the builder did not make, then
applies the new and changed ones (server-side apply, nearest tier first, so a parent's members
exist when it arrives) and deletes the ones it made before that are no longer wanted.
`ForeignHyperNodes` (a KubeError) names the HyperNodes in the way.
`serves_hyper_nodes` says whether the API server has the kind at all (Volcano's topology CRD is
optional).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubernetes import client as k8s

from extender.api.topology import API_VERSION, KIND
from extender.api.topology_labels import SOURCE, SOURCE_LABEL, Plan, plan
from extender.kube.any_kind import delete, list_objects
from extender.kube.client import KubeError
from extender.kube.manifests import apply_object, dynamic_resource

FIELD_MANAGER = "lahar-hypernodes"


class ForeignHyperNodes(KubeError):
    """Wanted names used by HyperNodes the builder did not make (nothing was written)."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(
            f"HyperNodes {', '.join(names)} exist without the label "
            f"{SOURCE_LABEL}={SOURCE}: they were not built from node labels; rename or delete "
            "them first"
        )
        self.names = tuple(names)


def serves_hyper_nodes(api: k8s.ApiClient) -> bool:
    """Whether the API server serves Volcano's HyperNode (its CRD is installed)."""
    try:
        dynamic_resource(api, API_VERSION, KIND)
    except KubeError:
        return False
    return True


def sync_hyper_nodes(api: k8s.ApiClient, wanted: Sequence[dict[str, Any]]) -> Plan:
    """Make the cluster's HyperNodes of this source exactly `wanted`; return what was done."""
    todo = plan(wanted, list_objects(api, API_VERSION, KIND))
    if todo.foreign:
        raise ForeignHyperNodes(todo.foreign)
    for item in sorted((*todo.create, *todo.update), key=lambda m: m["spec"]["tier"]):
        apply_object(api, item, field_manager=FIELD_MANAGER)
    for name in todo.delete:
        delete(api, API_VERSION, KIND, name)
    return todo
