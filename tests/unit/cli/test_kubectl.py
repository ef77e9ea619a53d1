"""What the resource commands share with kubectl, checked without a cluster: names refused before
any call (an empty one would address the whole collection), listings printed as a List however
many items, and an API server that cannot be reached named in one line."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from extender.cli.kubectl import dump, kubeconfig_path, listed
from extender.cli.main import main
from extender.kube import KubeError, writes
from extender.kube.any_kind import read
from extender.kube.client import context_namespace, load_client


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (["job", "delete", ""], "resource name may not be empty"),
        (["job", "view", ""], "resource name may not be empty"),
        (["job", "suspend", ".."], "resource name may not be '..'"),
        (["queue", "delete", ""], "resource name may not be empty"),
        (["queue", "close", "a/b"], "'a/b': resource name may not contain '/'"),
        (["queue", "create", "a%2F"], "'a%2F': resource name may not contain '%'"),
    ],
)
def test_a_name_that_names_no_object_is_refused_before_any_call(
    command: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (no kubeconfig there: a refusal that got as far as connecting would say so instead)
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--kubeconfig", str(tmp_path / "none")])
    assert exit_info.value.code == 2
    assert f"argument name: {error}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ("job/", "job/: resource name may not be empty"),
        ("podgroup/..", "podgroup/..: resource name may not be '..'"),
        ("nodes/x", "nodes/x: expected JOB, PODGROUP, job/NAME, podgroup/NAME or pod/NAME"),
    ],
)
def test_explain_refuses_a_target_naming_no_object_before_any_call(
    given: str, error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", given, "--kubeconfig", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"lahar: error: {error}"


def test_the_api_layer_refuses_an_empty_name_too() -> None:
    api = k8s.ApiClient()
    with pytest.raises(ValueError, match="deleting a Job needs its name"):
        writes.delete(api, "batch.volcano.sh/v1alpha1", "Job", "ml", "")
    with pytest.raises(ValueError, match="reading a Queue needs its name"):
        read(api, "scheduling.volcano.sh/v1beta1", "Queue", "")


@pytest.mark.parametrize("count", [0, 1, 2])
def test_a_listing_prints_a_list_however_many_items(count: int) -> None:
    items = [{"kind": "Job", "metadata": {"name": f"j{i}"}} for i in range(count)]
    for output, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        document = load(dump(listed(items), output))
        assert document["kind"] == "List"
        assert [item["metadata"]["name"] for item in document["items"]] == [
            f"j{i}" for i in range(count)
        ]


def _kubeconfig(path: Path, name: str, server: str) -> Path:
    """A kubeconfig of one context `name` (namespace ns-`name`) on `server`, current."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": {"token": "t"}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": f"ns-{name}"}}
        ],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(document))
    return path


def test_kubeconfig_env_files_merge_as_kubectl_merges_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _kubeconfig(tmp_path / "first", "a", "https://127.0.0.1:6443")
    second = _kubeconfig(tmp_path / "second", "b", "https://127.0.0.2:6443")
    missing = tmp_path / "missing"
    monkeypatch.setenv("KUBECONFIG", f"{missing}:{first}:{second}")
    files = kubeconfig_path(None)
    assert files == (missing, first, second)
    # The first file to set current-context wins; a context of another file can be chosen.
    assert context_namespace(files) == "ns-a"
    assert context_namespace(files, "b") == "ns-b"
    assert load_client(files).configuration.host == "https://127.0.0.1:6443"
    assert load_client(files, "b").configuration.host == "https://127.0.0.2:6443"
    with pytest.raises(KubeError, match="has no context 'c'"):
        context_namespace(files, "c")
    assert kubeconfig_path(tmp_path / "given") == tmp_path / "given"
    with pytest.raises(KubeError, match=f"kubeconfig {missing} does not exist"):
        load_client((missing,))


def test_an_api_server_that_cannot_be_reached_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = _kubeconfig(tmp_path / "config", "x", f"https://127.0.0.1:{port}")

    assert main(["job", "list", "--kubeconfig", str(config)]) == 2

    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(
        f"lahar: error: cannot reach the API server at https://127.0.0.1:{port}: "
    )
    assert "Connection refused" in line and "Max retries" not in line
