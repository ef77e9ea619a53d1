"""What a snapshot of a live cluster lists, read-only, and the rights that takes.

`lahar simulate --from-cluster` and `lahar whatif` replay the cluster as it stands: they list, once
and paged (`watch.list_pages`, raw dicts), every collection the extender watches (the paths of
`cache.kinds.KINDS` but Lahar's own ProvisioningRequests) plus batch/v1 Jobs, whose deadlines
bound run times. `SNAPSHOT_KINDS` is that table, kept here rather than read from `cache.kinds`
(the cache sits above this layer; a unit test holds the two together), and it is also what the
ClusterRole `lahar-whatif` (manifests/whatif/) grants: get and list on each, nothing else (no
watch: a snapshot lists once; no write). `list_for_snapshot` reads every kind into a
`RawCluster`, one list per kind. A kind only some clusters serve (a CRD not installed, a beta API
off) answers 404: it is empty and named in `absent`. A refused read (403) is `MissingRight`, one
line saying which verb on which resource is missing and what to bind. `read_object` gets one
object (None when there is none; a refusal is `MissingRight` for `get`), as the policy in force is
read (`policy_source`); `read_config_map` reads a ConfigMap a snapshot can do without: a refusal
or a missing ConfigMap is a logged reason and None, never a failure.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from extender.api.batch import BATCH_API_VERSION
from extender.api.scheduling import API_VERSION as VOLCANO_API
from extender.api.scheduling import GroupKind
from extender.api.topology import API_VERSION as TOPOLOGY_API
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError, send
from extender.kube.watch import list_pages

ROLE = "lahar-whatif"  # the ClusterRole, and the Role in ROLE_NAMESPACE, of manifests/whatif/
ROLE_NAMESPACE = "lahar-system"
ROLE_MANIFESTS = "manifests/whatif/"
READ_VERBS = ("get", "list")
# Finished pods hold nothing on their nodes; the API server leaves them out of the list.
UNFINISHED = "status.phase!=Succeeded,status.phase!=Failed"

log = logging.getLogger(__name__)

Items = list[dict[str, Any]]


@dataclass(frozen=True)
class RawCluster:
    """The cluster's objects as the API server listed them (raw dicts), one list per kind;
    `absent`: the optional kinds the server does not serve, by resource as `Listed.resource`
    names it; `resource_versions`: the resourceVersion of each kind's list, by resource."""

    nodes: Items = field(default_factory=list)
    pods: Items = field(default_factory=list)
    priority_classes: Items = field(default_factory=list)
    volcano_groups: Items = field(default_factory=list)
    coscheduling_groups: Items = field(default_factory=list)
    native_groups: Items = field(default_factory=list)
    queues: Items = field(default_factory=list)
    hyper_nodes: Items = field(default_factory=list)
    volcano_jobs: Items = field(default_factory=list)
    batch_jobs: Items = field(default_factory=list)
    absent: tuple[str, ...] = ()
    resource_versions: dict[str, str] = field(default_factory=dict)


_LISTS = frozenset(f.name for f in dataclasses.fields(RawCluster)) - {"absent", "resource_versions"}


@dataclass(frozen=True)
class Listed:
    """One collection a snapshot lists: its plural resource `name`, API `group` ("" for core) and
    `version`, its cluster-wide `path`, whether only some clusters serve it (`optional`), the
    field selector it is listed with (`fields`) and the `RawCluster` list it fills (`into`)."""

    name: str
    group: str
    version: str
    path: str
    optional: bool
    fields: str = ""
    into: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        if self.into not in _LISTS:
            raise ValueError(f"{self.resource}: into={self.into!r} is not a list of RawCluster")

    @property
    def resource(self) -> str:
        """The resource as kubectl and RBAC name it: `nodes`, `podgroups.scheduling.x-k8s.io`."""
        return f"{self.name}.{self.group}" if self.group else self.name


def _listed(
    name: str, api_version: str, into: str, *, optional: bool = False, fields: str = ""
) -> Listed:
    group, _, version = api_version.rpartition("/")
    root = f"/apis/{api_version}" if group else f"/api/{version}"
    return Listed(name, group, version, f"{root}/{name}", optional, fields, into=into)


NODES = _listed("nodes", "v1", "nodes")
PODS = _listed("pods", "v1", "pods", fields=UNFINISHED)
PRIORITY_CLASSES = _listed("priorityclasses", "scheduling.k8s.io/v1", "priority_classes")
VOLCANO_GROUPS = _listed("podgroups", VOLCANO_API, "volcano_groups")
COSCHEDULING_GROUPS = _listed(
    "podgroups", GroupKind.COSCHEDULING.api_version, "coscheduling_groups", optional=True
)
NATIVE_GROUPS = _listed("podgroups", GroupKind.NATIVE.api_version, "native_groups", optional=True)
QUEUES = _listed("queues", VOLCANO_API, "queues")
HYPER_NODES = _listed("hypernodes", TOPOLOGY_API, "hyper_nodes", optional=True)
VOLCANO_JOBS = _listed("jobs", BATCH_API_VERSION, "volcano_jobs", optional=True)
BATCH_JOBS = _listed("jobs", "batch/v1", "batch_jobs")  # (their activeDeadlineSeconds)
SNAPSHOT_KINDS: tuple[Listed, ...] = (
    NODES,
    PODS,
    PRIORITY_CLASSES,
    VOLCANO_GROUPS,
    COSCHEDULING_GROUPS,
    NATIVE_GROUPS,
    QUEUES,
    HYPER_NODES,
    VOLCANO_JOBS,
    BATCH_JOBS,
)


class MissingRight(KubeError):
    """The API server refused a read (403): one line naming the verb, the resource, where, and
    the role of manifests/whatif/ that grants it."""

    def __init__(self, verb: str, resource: str, namespace: str = "") -> None:
        self.verb, self.resource, self.namespace = verb, resource, namespace
        if not namespace:
            where, fix = "at the cluster scope", f"bind the ClusterRole {ROLE} ({ROLE_MANIFESTS})"
        elif namespace == ROLE_NAMESPACE:
            where = f"in the namespace {namespace}"
            fix = f"bind the Role {ROLE} in {namespace} ({ROLE_MANIFESTS})"
        else:
            where, fix = f"in the namespace {namespace}", f"grant {verb} on {resource} there"
        super().__init__(f"cannot {verb} {resource} {where}: {fix}")


def list_for_snapshot(api: k8s.ApiClient, kinds: tuple[Listed, ...] = SNAPSHOT_KINDS) -> RawCluster:
    """Every object of `kinds` (all of a snapshot's unless told), listed once each."""
    lists: dict[str, Items] = {}
    absent: list[str] = []
    versions: dict[str, str] = {}
    for kind in kinds:
        try:
            items, version = list_pages(api, kind.path, fields=kind.fields)
        except ApiStatusError as error:
            if error.status == 403:
                raise MissingRight("list", kind.resource) from error
            if error.status == 404 and kind.optional:
                log.debug("%s is not served here: listed as empty", kind.resource)
                absent.append(kind.resource)
                continue
            raise
        lists[kind.into] = items
        versions[kind.resource] = version
    return RawCluster(**lists, absent=tuple(absent), resource_versions=versions)


def read_object(
    api: k8s.ApiClient, path: str, resource: str, namespace: str = ""
) -> dict[str, Any] | None:
    """The object at `path` (a `resource`, in `namespace` if namespaced), None when it does not
    exist; a refusal is `MissingRight` for `get`."""
    try:
        found: dict[str, Any] = json.loads(send(api, "GET", path).read())
    except ApiStatusError as error:
        if error.status == 404:
            return None
        if error.status == 403:
            raise MissingRight("get", resource, namespace) from error
        raise
    return found


def read_config_map(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, str] | None:
    """The data of ConfigMap `namespace/name`; None, with the reason logged, when it does not
    exist or may not be read: a snapshot goes on without what it holds."""
    path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
    try:
        found = read_object(api, path, "configmaps", namespace)
    except MissingRight as error:
        log.warning("%s; going on without ConfigMap %s/%s", error, namespace, name)
        return None
    if found is None:
        log.info("ConfigMap %s/%s does not exist; going on without it", namespace, name)
        return None
    data = found.get("data") or {}
    return {str(key): str(value) for key, value in data.items()}
