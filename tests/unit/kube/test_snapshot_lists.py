"""What a snapshot lists: every collection the extender watches (`cache.kinds.KINDS`, but Lahar's
own ProvisioningRequests), as optional as the cache has it, plus batch/v1 Jobs; each into its own
list of a `RawCluster`, pods without the finished ones. A kind the server does not serve (404) is
empty and named in `absent` when optional, an error when not; a refusal (403) is `MissingRight`,
one line naming the verb, the resource and the role to bind. `read_config_map` answers None, with
the reason logged, for a ConfigMap that is missing or may not be read."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
from kubernetes import client as k8s

from extender.cache.kinds import KINDS, PROVISIONING_REQUESTS
from extender.kube import snapshot_lists
from extender.kube.raw import ApiStatusError
from extender.kube.snapshot_lists import (
    SNAPSHOT_KINDS,
    Listed,
    MissingRight,
    RawCluster,
    list_for_snapshot,
    read_config_map,
)

API = k8s.ApiClient()
BY_PATH = {kind.path: kind for kind in SNAPSHOT_KINDS}
LISTS = (  # RawCluster's lists, as callers read them
    "nodes",
    "pods",
    "priority_classes",
    "volcano_groups",
    "coscheduling_groups",
    "native_groups",
    "queues",
    "hyper_nodes",
    "volcano_jobs",
    "batch_jobs",
)


def test_every_collection_the_extender_watches_is_listed_as_optional_as_the_cache_has_it() -> None:
    watched = {kind.path: kind.optional for kind in KINDS if kind is not PROVISIONING_REQUESTS}
    assert {path: BY_PATH[path].optional for path in watched if path in BY_PATH} == watched


def test_beside_them_only_batch_jobs_are_listed_and_always_served() -> None:
    extra = set(BY_PATH) - {kind.path for kind in KINDS}
    assert extra == {"/apis/batch/v1/jobs"}
    assert not BY_PATH["/apis/batch/v1/jobs"].optional


@pytest.mark.parametrize("kind", SNAPSHOT_KINDS, ids=lambda k: k.resource)
def test_each_path_is_its_group_version_and_resource(kind: Listed) -> None:
    root = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    assert kind.path == f"{root}/{kind.name}"


def test_each_kind_fills_a_list_of_its_own() -> None:
    assert sorted(kind.into for kind in SNAPSHOT_KINDS) == sorted(LISTS)
    assert all(getattr(RawCluster(), name) == [] for name in LISTS)


def test_a_kind_filling_no_list_is_refused() -> None:
    with pytest.raises(ValueError, match="into='widgets' is not a list of RawCluster"):
        Listed("widgets", "", "v1", "/api/v1/widgets", False, into="widgets")


class Server:
    """Answers `list_pages` as an API server would: one item per path (named for the path and
    the field selector asked), or the HTTP status `refusing` gives the path."""

    def __init__(self, refusing: dict[str, int]) -> None:
        self.refusing = refusing

    def list_pages(
        self, api: k8s.ApiClient, path: str, selector: str = "", *, fields: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        if path in self.refusing:
            raise ApiStatusError(f"GET {path}: refused", self.refusing[path])
        return [{"path": path, "fields": fields}], f"rv{len(path)}"


def _listed(monkeypatch: pytest.MonkeyPatch, refusing: dict[str, int]) -> RawCluster:
    monkeypatch.setattr(snapshot_lists, "list_pages", Server(refusing).list_pages)
    return list_for_snapshot(API)


def test_each_kind_lands_in_its_list_with_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _listed(monkeypatch, {})
    for kind in SNAPSHOT_KINDS:
        assert getattr(raw, kind.into) == [{"path": kind.path, "fields": kind.fields}]
        assert raw.resource_versions[kind.resource] == f"rv{len(kind.path)}"
    assert raw.absent == ()
    assert raw.pods[0]["fields"] == "status.phase!=Succeeded,status.phase!=Failed"


@pytest.mark.parametrize(
    ("refused", "status", "absent", "error"),
    [
        (
            "hypernodes.topology.volcano.sh",
            404,
            ("hypernodes.topology.volcano.sh",),
            None,
        ),
        ("podgroups.scheduling.k8s.io", 404, ("podgroups.scheduling.k8s.io",), None),
        ("jobs.batch.volcano.sh", 404, ("jobs.batch.volcano.sh",), None),
        ("queues.scheduling.volcano.sh", 404, (), "GET /apis/scheduling.volcano.sh/v1beta1/queues"),
        (
            "hypernodes.topology.volcano.sh",
            403,
            (),
            "cannot list hypernodes.topology.volcano.sh at the cluster scope",
        ),
        ("nodes", 403, (), "cannot list nodes at the cluster scope"),
        ("jobs.batch", 403, (), "cannot list jobs.batch at the cluster scope"),
        ("pods", 500, (), "GET /api/v1/pods: refused"),
    ],
    ids=[
        "optional, not served",
        "native groups, not served",
        "Volcano Jobs, not served",
        "required, not served",
        "optional, refused",
        "nodes, refused",
        "batch Jobs, refused",
        "server error",
    ],
)
def test_a_kind_not_served_is_absent_if_optional_and_a_refusal_names_the_right(
    monkeypatch: pytest.MonkeyPatch,
    refused: str,
    status: int,
    absent: tuple[str, ...],
    error: str | None,
) -> None:
    (kind,) = (k for k in SNAPSHOT_KINDS if k.resource == refused)
    if error is not None:
        with pytest.raises(ApiStatusError if status != 403 else MissingRight, match=error):
            _listed(monkeypatch, {kind.path: status})
        return
    raw = _listed(monkeypatch, {kind.path: status})
    assert raw.absent == absent
    assert getattr(raw, kind.into) == []
    assert kind.resource not in raw.resource_versions
    others = [k for k in SNAPSHOT_KINDS if k is not kind]
    assert all(getattr(raw, k.into) for k in others)


@pytest.mark.parametrize(
    ("verb", "resource", "namespace", "message"),
    [
        (
            "list",
            "podgroups.scheduling.volcano.sh",
            "",
            "cannot list podgroups.scheduling.volcano.sh at the cluster scope: "
            "bind the ClusterRole lahar-whatif (manifests/whatif/)",
        ),
        (
            "get",
            "configmaps",
            "lahar-system",
            "cannot get configmaps in the namespace lahar-system: "
            "bind the Role lahar-whatif in lahar-system (manifests/whatif/)",
        ),
        (
            "get",
            "deployments.apps",
            "batch-system",
            "cannot get deployments.apps in the namespace batch-system: "
            "grant get on deployments.apps there",
        ),
    ],
    ids=["cluster scope", "Lahar's namespace", "another namespace"],
)
def test_a_missing_right_is_one_line_naming_verb_resource_and_fix(
    verb: str, resource: str, namespace: str, message: str
) -> None:
    error = MissingRight(verb, resource, namespace)
    assert str(error) == message
    assert "\n" not in str(error)
    assert (error.verb, error.resource, error.namespace) == (verb, resource, namespace)


class Response:
    def __init__(self, body: dict[str, Any]) -> None:
        self._body = io.BytesIO(json.dumps(body).encode())

    def read(self) -> bytes:
        return self._body.read()


RUN_TIMES = "/api/v1/namespaces/lahar-system/configmaps/lahar-run-times"
REFUSED = (
    "cannot get configmaps in the namespace lahar-system: bind the Role lahar-whatif in "
    "lahar-system (manifests/whatif/); going on without ConfigMap lahar-system/lahar-run-times"
)
# The server's answer (an HTTP status, or the ConfigMap's data) -> what is read, what is logged.
CONFIG_MAPS: dict[str, tuple[int | dict[str, str] | None, dict[str, str] | None, list[Any]]] = {
    "found": ({"runs.json": "{}"}, {"runs.json": "{}"}, []),
    "found, no data": (None, {}, []),
    "missing": (
        404,
        None,
        [
            (
                logging.INFO,
                "ConfigMap lahar-system/lahar-run-times does not exist; going on without it",
            )
        ],
    ),
    "refused": (403, None, [(logging.WARNING, REFUSED)]),
}


@pytest.mark.parametrize("case", list(CONFIG_MAPS))
def test_a_config_map_missing_or_refused_is_none_and_the_reason_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    answer, expected, logged = CONFIG_MAPS[case]

    def send(api: k8s.ApiClient, method: str, path: str, **_: Any) -> Response:
        assert (method, path) == ("GET", RUN_TIMES)
        if isinstance(answer, int):
            raise ApiStatusError(f"GET {path}: no", answer)
        return Response({"metadata": {"name": "lahar-run-times"}, "data": answer})

    monkeypatch.setattr(snapshot_lists, "send", send)
    caplog.set_level(logging.INFO, logger=snapshot_lists.__name__)
    assert read_config_map(API, "lahar-system", "lahar-run-times") == expected
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == logged
