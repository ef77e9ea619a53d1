"""make_plugins: known names in a fixed order, and every bad name or argument refused with the
field it sits in (`spec.plugins.<name>`) — never echoing a value that may be a key."""

from __future__ import annotations

import pytest

from extender.jobplugins import KNOWN, PluginError, make_plugins, plugin_problems
from extender.jobplugins.pytorch import PytorchPlugin
from extender.jobplugins.svc import SvcPlugin
from tests.unit.jobplugins.pods import load_job, task

ALL = ("env", "svc", "ssh", "pytorch", "tensorflow", "mpi", "ray", "hcclrank")


def test_known_plugins() -> None:
    """Volcano's eight; hcclrank after pytorch (it reads the RANK pytorch sets)."""
    assert KNOWN == ALL


def test_plugins_come_in_known_order_whatever_the_map_order() -> None:
    plugins = make_plugins({"pytorch": [], "ssh": None, "env": []})
    assert [p.name for p in plugins] == ["env", "ssh", "pytorch"]
    plugins = make_plugins({name: [] for name in reversed(ALL)})
    assert [p.name for p in plugins] == list(ALL)
    assert make_plugins({}) == []


def test_unknown_plugin_names_the_field_and_the_known_ones() -> None:
    with pytest.raises(PluginError) as caught:
        make_plugins({"env": [], "horovod": []})
    assert caught.value.field == "spec.plugins.horovod"
    assert str(caught.value) == (
        "spec.plugins.horovod: unknown plugin "
        "(known: env, svc, ssh, pytorch, tensorflow, mpi, ray, hcclrank)"
    )


def test_plugin_problems_lists_every_plugins_in_the_jobs_order() -> None:
    """Unknown names, bad arguments and the job's own refusals (mpi's master, ray's head), one
    list, in the order of the job's map; a plugin that cannot be configured is not asked."""
    plugins = {
        "ray": [],
        "svc": ["--bogus"],
        "horovod": [],
        "mpi": [],
        "env": [],
        "tensorflow": ["--port=0"],
    }
    job = load_job(
        {"metadata": {"name": "j"}, "spec": {"plugins": plugins, "tasks": [task("w", 2)]}}
    )
    assert [(p.field, p.argument) for p in plugin_problems(job)] == [
        ("spec.plugins.ray", "head"),
        ("spec.plugins.svc", "bogus"),
        ("spec.plugins.horovod", None),
        ("spec.plugins.mpi", "master"),
        ("spec.plugins.tensorflow", "port"),
    ]
    fine = {name: [] for name in ALL if name not in ("mpi", "ray")}
    job = load_job({"metadata": {"name": "j"}, "spec": {"plugins": fine, "tasks": [task("w", 2)]}})
    assert plugin_problems(job) == []


@pytest.mark.parametrize(
    ("args", "publish", "network_policy"),
    [
        (None, False, True),
        ([], False, True),
        (["--publish-not-ready-addresses"], True, True),
        (["-publish-not-ready-addresses=true"], True, True),
        (["--publish-not-ready-addresses=True", "--disable-network-policy=1"], True, False),
        (["--disable-network-policy", "--disable-network-policy=false"], False, True),
    ],
)
def test_switches_parse_like_go_flags(
    args: list[str] | None, publish: bool, network_policy: bool
) -> None:
    [plugin] = make_plugins({"svc": args})
    assert isinstance(plugin, SvcPlugin)
    assert (plugin.publish_not_ready_addresses, plugin.network_policy) == (publish, network_policy)


@pytest.mark.parametrize(
    ("args", "master", "worker", "port"),
    [
        ([], "master", "worker", 23456),
        (["--master=chief", "--worker", "replica", "--port=29500"], "chief", "replica", 29500),
        (["--port", "1", "--port=65535"], "master", "worker", 65535),
    ],
)
def test_options_take_a_value_after_equals_or_as_the_next_argument(
    args: list[str], master: str, worker: str, port: int
) -> None:
    [plugin] = make_plugins({"pytorch": args})
    assert isinstance(plugin, PytorchPlugin)
    assert (plugin.master, plugin.worker, plugin.port) == (master, worker, port)


@pytest.mark.parametrize(
    ("plugin", "args", "argument", "reason"),
    [
        ("env", ["--verbose"], "verbose", "unknown argument --verbose (known: none)"),
        (
            "svc",
            ["--publish-not-ready"],
            "publish-not-ready",
            "unknown argument --publish-not-ready (known: --disable-network-policy, "
            "--publish-not-ready-addresses)",
        ),
        (
            "svc",
            ["--disable-network-policy=maybe"],
            "disable-network-policy",
            "--disable-network-policy must be true or false, got 'maybe'",
        ),
        ("svc", ["true"], None, "argument 1 is not --name[=value]"),
        ("svc", ["--disable-network-policy", "---x"], None, "argument 2 is not --name[=value]"),
        ("svc", ["--"], None, "argument 1 is not --name[=value]"),
        ("pytorch", ["--port"], "port", "argument --port needs a value"),
        ("pytorch", ["--port=0"], "port", "--port must be a whole number in 1..65535, got '0'"),
        (
            "pytorch",
            ["--port=http"],
            "port",
            "--port must be a whole number in 1..65535, got 'http'",
        ),
        (
            "pytorch",
            ["--master=main", "--worker=main"],
            "master",
            "--master and --worker must name two different tasks",
        ),
        (
            "ssh",
            ["--ssh-key-file-path=.ssh"],
            "ssh-key-file-path",
            "--ssh-key-file-path must be an absolute path",
        ),
        (
            "ssh",
            ["--ssh-public-key=ssh-rsa AAAA"],
            "ssh-public-key",
            "--ssh-public-key needs --ssh-private-key",
        ),
    ],
)
def test_bad_arguments_name_the_field_and_the_argument(
    plugin: str, args: list[str], argument: str | None, reason: str
) -> None:
    with pytest.raises(PluginError) as caught:
        make_plugins({"env": [], plugin: args})
    assert (caught.value.plugin, caught.value.argument) == (plugin, argument)
    assert str(caught.value) == f"spec.plugins.{plugin}: {reason}"


@pytest.mark.parametrize(
    "args",
    [
        ["--ssh-private-key=SECRET-MATERIAL"],
        ["--ssh-private-key", "SECRET-MATERIAL", "SECRET-MATERIAL"],
        ["-----BEGIN SECRET-MATERIAL"],
    ],
)
def test_errors_never_echo_key_material(args: list[str]) -> None:
    with pytest.raises(PluginError) as caught:
        make_plugins({"ssh": args})
    assert "SECRET-MATERIAL" not in str(caught.value)
    assert str(caught.value).startswith("spec.plugins.ssh: ")
