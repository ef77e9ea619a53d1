"""What a real node needs of the machine and undoes on it: refused with a reason where the
machine cannot have one, and a teardown that touches only what its own node made."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.devcluster import node_host, real_node
from extender.devcluster.errors import DevClusterError
from extender.devcluster.images import host_tools


def test_missing_tools_are_named_with_their_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)  # not root: nothing is installed
    with pytest.raises(DevClusterError, match="a real node needs the Debian packages no-such-pkg"):
        host_tools({"no-such-command-here": "no-such-pkg"}, "a real node")


def test_teardown_of_a_state_directory_that_never_prepared_the_host_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge, the cgroup root and the node are the machine's one real node: another
    cluster's state directory must not tear them down."""
    ran: list[list[str]] = []
    monkeypatch.setattr(node_host, "sh", lambda argv, *_, **__: ran.append(argv))
    monkeypatch.setattr(node_host.os, "kill", lambda *_: ran.append(["kill"]))
    node_host.teardown(real_node.NodePaths(tmp_path / "never"))
    assert ran == []


def test_a_real_node_is_refused_without_root_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(DevClusterError, match="a real node needs root"):
        node_host.check_host(real_node.NodePaths(tmp_path), running=lambda _: False)


def test_teardown_removes_only_the_rules_that_were_not_there_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another cluster's kube-proxy rules on the machine stay; the node's go, in both families."""
    tables = {
        "nat": "*nat\n:KUBE-OTHER - [0:0]\n:KUBE-NODE - [0:0]\n-A PREROUTING -j KUBE-NODE\nCOMMIT",
    }
    saved = {f"{save} nat": [":KUBE-OTHER - [0:0]"] for save, _ in node_host.FILTERS}
    restored: list[tuple[str, str]] = []
    monkeypatch.setattr(
        node_host,
        "sh",
        lambda argv, *_, **__: __import__("subprocess").CompletedProcess(
            argv, 0, tables.get(argv[-1], ""), ""
        ),
    )
    monkeypatch.setattr(
        node_host.subprocess,
        "run",
        lambda argv, **kwargs: restored.append((argv[0], kwargs["input"])),
    )
    node_host._clean_iptables(saved)
    assert [Path(command).name for command, _ in restored] == [
        "iptables-restore",
        "ip6tables-restore",
    ]
    for _, text in restored:
        assert ":KUBE-OTHER - [0:0]" in text
        assert "KUBE-NODE" not in text
