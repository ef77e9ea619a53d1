"""Volcano's scheduler configuration read into Lahar's policy: Volcano's shipped configuration and
its variations become a policy `build_policy` accepts, every action, plugin, argument and switch
gets a note of its kind, and what is not Volcano's is an error naming its path."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.framework.policy import Policy, build_policy
from extender.plugins import REGISTRY
from extender.plugins.binpack import Binpack
from extender.plugins.volcano_conf import (
    CONFIGMAP_KEY,
    Imported,
    NoteKind,
    VolcanoConfError,
    import_conf,
)
from extender.plugins.volcano_names import GATED, SWITCHES, VOLCANO_PLUGINS

# installer/helm/chart/volcano/config/volcano-scheduler.conf, as Volcano ships it.
SHIPPED = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def plugin(name: str, arguments: Any = None, **switches: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, **switches}
    if arguments is not None:
        entry["arguments"] = arguments
    return entry


def conf(*tiers: list[dict[str, Any]], actions: Any = "enqueue, allocate, backfill") -> Any:
    """A Volcano configuration of these tiers (gang alone when none is given)."""
    return {"actions": actions, "tiers": [{"plugins": t} for t in tiers or ([plugin("gang")],)]}


def configmap(text: str, key: str = CONFIGMAP_KEY) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {key: text},
    }


def valid(imported: Imported) -> Policy:
    return build_policy(imported.document, REGISTRY, source="imported")


def notes(imported: Imported) -> dict[str, list[NoteKind]]:
    """The kinds of the notes at each path."""
    found: dict[str, list[NoteKind]] = {}
    for note in imported.notes:
        found.setdefault(note.path, []).append(note.kind)
    return found


def entries(imported: Imported) -> list[list[dict[str, Any]]]:
    return [tier["plugins"] for tier in imported.document["tiers"]]


def named(imported: Imported, name: str) -> dict[str, Any]:
    return next(e for tier in entries(imported) for e in tier if e["name"] == name)


def error_of(document: Any) -> VolcanoConfError:
    with pytest.raises(VolcanoConfError) as caught:
        import_conf(document)
    return caught.value


# Volcano's shipped configuration


def test_volcanos_shipped_configuration() -> None:
    imported = import_conf(yaml.safe_load(SHIPPED))

    assert imported.document == {
        "apiVersion": "lahar.io/v1alpha1",
        "kind": "SchedulerPolicy",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}]},
            {
                "plugins": [
                    {"name": "drf", "enablePreemptable": False},
                    {"name": "predicates"},
                    {"name": "proportion"},
                    {"name": "binpack"},
                ]
            },
        ],
    }
    assert notes(imported) == {
        "actions": [NoteKind.ALWAYS, NoteKind.ALWAYS, NoteKind.KUBE_SCHEDULER],
        "tiers.0.plugins.0": [NoteKind.MAPPED],
        "tiers.0.plugins.1": [NoteKind.MAPPED],
        "tiers.0.plugins.1.enablePreemptable": [NoteKind.MAPPED],
        "tiers.0.plugins.2": [NoteKind.ALWAYS],
        "tiers.1.plugins.0": [NoteKind.DIFFERS],
        "tiers.1.plugins.1": [NoteKind.MAPPED],
        "tiers.1.plugins.1.enablePreemptable": [NoteKind.MAPPED],
        "tiers.1.plugins.2": [NoteKind.KUBE_SCHEDULER],
        "tiers.1.plugins.3": [NoteKind.MAPPED],
        "tiers.1.plugins.4": [NoteKind.KUBE_SCHEDULER],
        "tiers.1.plugins.5": [NoteKind.MAPPED, NoteKind.KUBE_SCHEDULER],
    }
    texts = [str(n) for n in imported.notes]
    assert "tiers.0.plugins.2: conformance: always on" in " ".join(texts)
    assert any(t.startswith("tiers.1.plugins.0: overcommit: dropped") for t in texts)
    assert any("--scheduler-config` checks" in t for t in texts)

    policy = valid(imported)
    assert policy.preemption is None  # enqueue, allocate, backfill: Volcano evicts nothing
    assert [p.name for p in policy.plugins] == [
        "priority",
        "gang",
        "drf",
        "predicates",
        "proportion",
        "binpack",
    ]


def test_the_configmap_form_imports_the_same() -> None:
    assert import_conf(configmap(SHIPPED)) == import_conf(yaml.safe_load(SHIPPED))


@pytest.mark.parametrize(
    ("document", "path", "reason"),
    [
        (
            configmap(SHIPPED, key="scheduler.conf"),
            "data",
            "no key volcano-scheduler.conf, which holds Volcano's scheduler configuration "
            "(it has: scheduler.conf)",
        ),
        ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "data", "(it has: none)"),
        (configmap("actions: [unclosed"), "data.volcano-scheduler.conf", "not valid YAML"),
    ],
)
def test_a_configmap_without_the_configuration_is_named(
    document: Any, path: str, reason: str
) -> None:
    error = error_of(document)
    assert error.path == path
    assert reason in error.reason


# actions


@pytest.mark.parametrize(
    ("actions", "chosen", "preempt", "reclaim"),
    [
        ("enqueue, allocate, backfill", None, False, False),
        ("enqueue, allocate, preempt, backfill", "preempt", True, False),
        ("enqueue, allocate, reclaim, backfill", "reclaim", False, True),
        ("enqueue, reclaim, allocate, backfill, preempt", "preempt, reclaim", True, True),
        ("enqueue,allocate,gangpreempt,gangreclaim", "preempt, reclaim", True, True),
    ],
)
def test_preempt_and_reclaim_become_the_preempt_plugin(
    actions: str, chosen: str | None, preempt: bool, reclaim: bool
) -> None:
    imported = import_conf(
        conf([plugin("priority"), plugin("gang")], [plugin("proportion")], actions=actions)
    )
    policy = valid(imported)
    if chosen is None:
        assert all(e["name"] != "preempt" for tier in entries(imported) for e in tier)
        assert policy.preemption is None
        return
    assert entries(imported)[0][-1] == {
        "name": "preempt",
        "arguments": {"preempt.actions": chosen},
    }
    assert policy.preemption is not None
    assert (policy.preemption.rules.preempt, policy.preemption.rules.reclaim) == (preempt, reclaim)
    mapped = [n.text for n in imported.notes if n.path == "actions" and n.kind is NoteKind.MAPPED]
    assert len(mapped) == len(chosen.split(", "))


@pytest.mark.parametrize(
    ("actions", "missing", "says"),
    [
        ("enqueue, allocate, preempt", [plugin("gang")], "preempt: Lahar preempts for priority"),
        ("enqueue, allocate, reclaim", [plugin("gang")], "reclaim: Lahar reclaims only with"),
        ("allocate, backfill", [plugin("gang")], "no enqueue: Volcano lets every job in"),
        ("enqueue, allocate", [plugin("gang")], "no backfill"),
        ("enqueue, allocate, shuffle", [plugin("gang")], "shuffle: dropped"),
    ],
)
def test_what_lahar_does_otherwise_with_the_actions_is_said(
    actions: str, missing: list[dict[str, Any]], says: str
) -> None:
    imported = import_conf(conf(missing, actions=actions))
    valid(imported)
    differs = [n.text for n in imported.notes if n.kind is NoteKind.DIFFERS]
    assert any(text.startswith(says) for text in differs), differs


# plugins and their arguments


@pytest.mark.parametrize(
    ("arguments", "expected", "weights"),
    [
        ({}, None, {"cpu": 1, "memory": 1}),
        (
            {"binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 1},
            {"binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 1},
            {"cpu": 5, "memory": 1},
        ),
        (
            {
                "binpack.weight": 10,
                "binpack.cpu": 5,
                "binpack.memory": 1,
                "binpack.resources": "nvidia.com/gpu, example.com/foo",
                "binpack.resources.nvidia.com/gpu": 2,
                "binpack.resources.example.com/foo": 3,
            },
            {
                "binpack.weight": 10,
                "binpack.cpu": 5,
                "binpack.memory": 1,
                "binpack.resources": "nvidia.com/gpu, example.com/foo",
                "binpack.resources.nvidia.com/gpu": 2,
                "binpack.resources.example.com/foo": 3,
            },
            {"cpu": 5, "memory": 1, "nvidia.com/gpu": 2, "example.com/foo": 3},
        ),
        (  # a listed resource without a weight weighs 1; a weight of an unlisted one is ignored
            {
                "binpack.resources": " nvidia.com/gpu,,nvidia.com/gpu ",
                "binpack.resources.example.com/foo": 3,
            },
            {"binpack.resources": "nvidia.com/gpu"},
            {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1},
        ),
        (  # cpu and memory are weighed by binpack.cpu and binpack.memory, even when listed
            {
                "binpack.cpu": 2,
                "binpack.resources": "cpu, nvidia.com/gpu",
                "binpack.resources.cpu": 9,
            },
            {"binpack.cpu": 2, "binpack.resources": "nvidia.com/gpu"},
            {"cpu": 2, "memory": 1, "nvidia.com/gpu": 1},
        ),
        ({"binpack.weight": 0}, {"binpack.weight": 0}, {"cpu": 1, "memory": 1}),
    ],
)
def test_binpack_weights(
    arguments: dict[str, Any], expected: dict[str, Any] | None, weights: dict[str, int]
) -> None:
    imported = import_conf(conf([plugin("binpack", arguments)]))
    entry = named(imported, "binpack")
    assert entry.get("arguments") == expected
    binpack = next(p for p in valid(imported).plugins if isinstance(p, Binpack))
    assert binpack.resource_weights == weights
    assert NoteKind.KUBE_SCHEDULER in notes(imported)["tiers.0.plugins.0"]


@given(
    weight=st.integers(0, 1000),
    cpu=st.integers(0, 1000),
    memory=st.integers(0, 1000),
    extended=st.dictionaries(
        st.from_regex(r"[a-z]{1,8}\.(io|com)/[a-z]{1,8}", fullmatch=True),
        st.integers(0, 1000),
        max_size=4,
    ),
)
@settings(max_examples=60, deadline=None)
def test_any_binpack_weights_import_into_a_valid_policy(
    weight: int, cpu: int, memory: int, extended: dict[str, int]
) -> None:
    arguments: dict[str, Any] = {"binpack.weight": weight, "binpack.cpu": cpu}
    arguments["binpack.memory"] = memory
    arguments["binpack.resources"] = ", ".join(extended)
    arguments.update({f"binpack.resources.{name}": w for name, w in extended.items()})

    policy = valid(import_conf(conf([plugin("gang")], [plugin("binpack", arguments)])))

    binpack = next(p for p in policy.plugins if isinstance(p, Binpack))
    assert binpack.weight == weight
    assert binpack.resource_weights == {"cpu": cpu, "memory": memory, **extended}


@pytest.mark.parametrize(
    ("option", "entry", "kinds"),
    [
        (plugin("proportion"), {"name": "proportion"}, [NoteKind.MAPPED]),
        (plugin("capacity"), {"name": "proportion"}, [NoteKind.MAPPED]),
        (
            plugin("capacity", {"ancestorReclaimLevel": 2}),
            {"name": "proportion"},
            [NoteKind.MAPPED, NoteKind.DIFFERS],
        ),
        (
            plugin("capacity", {"capacity.DynamicResourceAllocationEnable": "true"}),
            {"name": "proportion"},
            [NoteKind.MAPPED, NoteKind.DIFFERS],
        ),
        (plugin("capacity", enableHierarchy=True), {"name": "proportion"}, [NoteKind.MAPPED] * 2),
        (plugin("overcommit", {"overcommit-factor": 1.5}), None, [NoteKind.DIFFERS] * 2),
        (plugin("overcommit", {"overcommit-factor": 2}), None, [NoteKind.DIFFERS] * 2),
        (
            plugin("sla", {"sla-waiting-time": "10m"}),
            {"name": "sla", "arguments": {"sla.waitingTimeSeconds": 600}},
            [NoteKind.MAPPED],
        ),
        (
            plugin("sla", {"sla-waiting-time": "1h2m3s500ms"}),
            {"name": "sla", "arguments": {"sla.waitingTimeSeconds": 3723.5}},
            [NoteKind.MAPPED],
        ),
        (plugin("sla"), {"name": "sla"}, [NoteKind.DIFFERS]),
        (
            plugin("nodeorder", {"leastrequested.weight": 1, "nodeaffinity.weight": 2}),
            None,
            [NoteKind.KUBE_SCHEDULER] * 3,
        ),
        (
            plugin(
                "predicates",
                {
                    "predicate.NodeAffinityEnable": False,
                    "predicate.CacheEnable": True,
                    "predicate.GPUSharingEnable": True,
                    "predicate.resources.nvidia.com/gpu.cpu": 4,
                    "volumebinding.weight": 2,
                },
            ),
            {"name": "predicates"},
            [NoteKind.KUBE_SCHEDULER] * 2 + [NoteKind.DIFFERS] * 3 + [NoteKind.KUBE_SCHEDULER],
        ),
        (
            plugin("predicates", {"predicate.NodePortsEnable": "true"}),
            {"name": "predicates"},
            [NoteKind.KUBE_SCHEDULER],
        ),
        (plugin("conformance"), None, [NoteKind.ALWAYS]),
        (plugin("pdb"), None, [NoteKind.ALWAYS]),
        (plugin("network-topology-aware", {"weight": 10}), None, [NoteKind.ALWAYS]),
        (plugin("tdm", {"tdm.evict.period": "1m"}), None, [NoteKind.DIFFERS]),
        (plugin("numa-aware"), None, [NoteKind.KUBE_SCHEDULER]),
        (plugin("reservation"), None, [NoteKind.DIFFERS]),
    ],
)
def test_each_plugin_becomes_lahars_or_a_note(
    option: dict[str, Any], entry: dict[str, Any] | None, kinds: list[NoteKind]
) -> None:
    imported = import_conf(conf([plugin("gang")], [option]))
    valid(imported)
    if entry is None:
        assert len(entries(imported)) == 1  # the tier left empty goes
    else:
        assert entries(imported)[1] == [entry]
    assert [n.kind for n in imported.notes if n.path.startswith("tiers.1.")] == kinds


@pytest.mark.parametrize("name", VOLCANO_PLUGINS)
def test_every_plugin_volcano_ships_imports(name: str) -> None:
    other = plugin("priority") if name == "gang" else plugin("gang")
    imported = import_conf(conf([other, plugin(name)]))
    valid(imported)
    assert [n.path for n in imported.notes].count("tiers.0.plugins.1") >= 1


# switches


@pytest.mark.parametrize(
    ("option", "entry", "kind"),
    [
        (
            plugin("gang", enablePreemptable=False),
            {"name": "gang", "enablePreemptable": False},
            NoteKind.MAPPED,
        ),
        (
            plugin("gang", enablePreemptable=True),
            {"name": "gang", "enablePreemptable": True},
            NoteKind.MAPPED,
        ),
        (
            plugin("drf", enablePreemptable=False),
            {"name": "drf", "enablePreemptable": False},
            NoteKind.MAPPED,
        ),
        (
            plugin("gang", enableReclaimable=False),
            {"name": "gang", "enableReclaimable": False},
            NoteKind.MAPPED,
        ),
        (plugin("drf", enableReclaimable=False), {"name": "drf"}, NoteKind.DIFFERS),
        (plugin("priority", enablePreemptable=False), {"name": "priority"}, NoteKind.DIFFERS),
        (plugin("capacity", enablePreemptable=False), {"name": "proportion"}, NoteKind.DIFFERS),
        (plugin("gang", enableJobReady=False), {"name": "gang"}, NoteKind.DIFFERS),
        (plugin("gang", enableJobOrder=False), {"name": "gang"}, NoteKind.MAPPED),
        (plugin("priority", enableJobOrder=False), {"name": "priority"}, NoteKind.DIFFERS),
        (plugin("priority", enableTaskOrder=False), {"name": "priority"}, NoteKind.KUBE_SCHEDULER),
        (plugin("drf", enableHierarchy=True), {"name": "drf"}, NoteKind.DIFFERS),
        (plugin("proportion", enableQueueOrder=False), {"name": "proportion"}, NoteKind.DIFFERS),
        (plugin("proportion", enableReclaimable=False), {"name": "proportion"}, NoteKind.DIFFERS),
        (
            plugin("predicates", enablePredicate=False),
            {"name": "predicates"},
            NoteKind.KUBE_SCHEDULER,
        ),
        (plugin("binpack", enableNodeOrder=False), None, NoteKind.MAPPED),
        (plugin("binpack", enableJobOrder=False), {"name": "binpack"}, NoteKind.MAPPED),
        (plugin("sla", enableJobOrder=False), {"name": "sla"}, NoteKind.DIFFERS),
    ],
)
def test_switches(option: dict[str, Any], entry: dict[str, Any] | None, kind: NoteKind) -> None:
    (switch,) = (key for key in option if key in SWITCHES)
    imported = import_conf(
        conf([plugin("priority") if option["name"] != "priority" else plugin("gang")], [option])
    )
    valid(imported)
    assert entries(imported)[1:] == ([[entry]] if entry else [])  # binpack may be left out
    assert notes(imported)[f"tiers.1.plugins.0.{switch}"] == [kind]


@pytest.mark.parametrize(
    ("name", "switch"),
    [(name, switch) for name, gated in GATED.items() for switch in sorted(gated)],
)
def test_every_switch_that_changes_a_plugin_is_noted(name: str, switch: str) -> None:
    """Each switch set away from Volcano's default, on each plugin where it changes something."""
    value = switch in ("enableHierarchy", "enabledClusterOrder")
    imported = import_conf(
        conf([plugin("priority" if name == "gang" else "gang")], [plugin(name, **{switch: value})])
    )
    valid(imported)
    assert len(notes(imported)[f"tiers.1.plugins.0.{switch}"]) == 1


def test_a_switch_at_volcanos_default_says_nothing() -> None:
    imported = import_conf(conf([plugin("gang", enableJobReady=True, enableHierarchy=False)]))
    assert "tiers.0.plugins.0.enableJobReady" not in notes(imported)
    assert "tiers.0.plugins.0.enableHierarchy" not in notes(imported)


def test_switches_on_a_dropped_plugin_are_covered_by_its_note() -> None:
    imported = import_conf(conf([plugin("gang"), plugin("nodeorder", enableNodeOrder=False)]))
    assert notes(imported)["tiers.0.plugins.1.enableNodeOrder"] == [NoteKind.KUBE_SCHEDULER]


# errors


@pytest.mark.parametrize(
    ("document", "path", "reason"),
    [
        (
            {"actions": "enqueue", "tier": []},
            "tier",
            "not a key of Volcano's scheduler configuration; did you mean tiers? (known: "
            "actions, tiers, configurations, metrics)",
        ),
        ([1, 2], "(top level)", "must be a mapping"),
        ({"tiers": [{"plugins": [plugin("gang")]}]}, "actions", "required"),
        (conf(actions=["enqueue", "allocate"]), "actions", "must be one string"),
        (conf(actions="enqueue, alocate"), "actions", "unknown action 'alocate'"),
        (conf(actions="enqueue, allocate,"), "actions", "an empty name"),
        ({"actions": "allocate"}, "tiers", "required"),
        (
            {"actions": "allocate", "tiers": [{"plugin": []}]},
            "tiers.0.plugin",
            "not a key of a tier",
        ),
        (
            conf([plugin("gang", enableNodeorder=False)]),
            "tiers.0.plugins.0.enableNodeorder",
            "not a key of a plugin entry (Volcano's PluginOption); did you mean "
            "enableNodeOrder? (known: name, arguments, enableJobOrder",
        ),
        (
            conf([plugin("gang", enableJobReady="false")]),
            "tiers.0.plugins.0.enableJobReady",
            "must be true or false, got 'false'",
        ),
        (conf([plugin("binpak")]), "tiers.0.plugins.0.name", "did you mean binpack?"),
        (conf([{"arguments": {}}]), "tiers.0.plugins.0.name", "required"),
        (
            conf([plugin("binpack", {"binpack.weight": "x"})]),
            "tiers.0.plugins.0.arguments.binpack.weight",
            "must be a whole number >= 0, got 'x'",
        ),
        (
            conf([plugin("binpack", {"binpack.cpu": -1})]),
            "tiers.0.plugins.0.arguments.binpack.cpu",
            "must be a whole number >= 0",
        ),
        (
            conf([plugin("binpack", {"binpack.resources": ["nvidia.com/gpu"]})]),
            "tiers.0.plugins.0.arguments.binpack.resources",
            "must be a comma-separated list",
        ),
        (
            conf([plugin("binpack", {"binpack.gpu": 2})]),
            "tiers.0.plugins.0.arguments.binpack.gpu",
            "not an argument of Volcano's binpack",
        ),
        (
            conf([plugin("binpack", {"binpack.resources.nvidia.com/gpu": 1.5})]),
            "tiers.0.plugins.0.arguments.binpack.resources.nvidia.com/gpu",
            "must be a whole number",
        ),
        (
            conf([plugin("gang", {"gang.barrierTimeoutSeconds": 20})]),
            "tiers.0.plugins.0.arguments.gang.barrierTimeoutSeconds",
            "not a key of Volcano's gang arguments (known: none)",
        ),
        (
            conf([plugin("gang"), plugin("overcommit", {"overcommit-factor": "x"})]),
            "tiers.0.plugins.1.arguments.overcommit-factor",
            "must be a number, got 'x'",
        ),
        (
            conf([plugin("gang"), plugin("overcommit", {"overcommit-factor": 0.5})]),
            "tiers.0.plugins.1.arguments.overcommit-factor",
            "must be at least 1.0",
        ),
        (
            conf([plugin("gang"), plugin("overcommit", {"overcommitFactor": 2})]),
            "tiers.0.plugins.1.arguments.overcommitFactor",
            "did you mean overcommit-factor?",
        ),
        (
            conf([plugin("sla", {"sla-waiting-time": "ten minutes"})]),
            "tiers.0.plugins.0.arguments.sla-waiting-time",
            "invalid duration 'ten minutes'",
        ),
        (
            conf([plugin("sla", {"sla-waiting-time": 600})]),
            "tiers.0.plugins.0.arguments.sla-waiting-time",
            "must be a Go duration",
        ),
        (
            conf([plugin("sla", {"sla-waiting-time": "0s"})]),
            "tiers.0.plugins.0.arguments.sla-waiting-time",
            "must be a duration > 0",
        ),
        (
            conf([plugin("predicates", {"predicate.NodeAffinity": True})]),
            "tiers.0.plugins.0.arguments.predicate.NodeAffinity",
            "did you mean predicate.NodeAffinityEnable?",
        ),
        (
            conf([plugin("predicates", {"predicate.NodeAffinityEnable": "yes"})]),
            "tiers.0.plugins.0.arguments.predicate.NodeAffinityEnable",
            "must be true or false",
        ),
        (
            conf([plugin("gang"), plugin("nodeorder", {"leastrequested": 1})]),
            "tiers.0.plugins.1.arguments.leastrequested",
            "did you mean leastrequested.weight?",
        ),
        (
            conf([plugin("capacity", {"ancestorReclaimLevel": "2"})]),
            "tiers.0.plugins.0.arguments.ancestorReclaimLevel",
            "must be a whole number",
        ),
        (
            conf([plugin("gang")], [plugin("gang")]),
            "tiers.1.plugins.0.name",
            "plugin 'gang' is named twice: already in tiers.0.plugins.0",
        ),
        (
            conf([plugin("proportion"), plugin("capacity")]),
            "tiers.0.plugins.1.name",
            "capacity and proportion (tiers.0.plugins.0) both share queues",
        ),
        (
            conf([plugin("drf", enableHierarchy=True), plugin("proportion")]),
            "tiers.0.plugins.0.enableHierarchy",
            "Volcano refuses it",
        ),
        (conf([plugin("nodeorder"), plugin("conformance")]), "tiers", "nothing Lahar runs is left"),
        (conf([plugin("gang", arguments=[1])]), "tiers.0.plugins.0.arguments", "must be a mapping"),
        (
            {**conf(), "configurations": [{"name": "preempt", "args": {}}]},
            "configurations.0.args",
            "did you mean arguments?",
        ),
        (
            {**conf(), "configurations": [{"name": "allocate", "arguments": {"x": 1}}]},
            "configurations.0.arguments.x",
            "not a key of the allocate action's arguments (known: predicateErrorCacheEnable)",
        ),
        ({**conf(), "metrics": "prometheus"}, "metrics", "must be a mapping"),
    ],
)
def test_what_is_not_volcanos_is_an_error_naming_its_path(
    document: Any, path: str, reason: str
) -> None:
    error = error_of(document)
    assert error.path == path
    assert reason in error.reason, error.reason
    assert str(error) == f"{path}: {error.reason}"


# configurations and metrics


def test_action_configurations_and_metrics_are_noted() -> None:
    document = {
        **conf(actions="enqueue, allocate, preempt, backfill"),
        "configurations": [
            {"name": "preempt", "arguments": {"minCandidateNodesPercentage": 10}},
            {"name": "allocate", "arguments": {"predicateErrorCacheEnable": True}},
            {"name": "enqueue", "arguments": {"overcommit-factor": 1.2}},
            {"name": "init-params", "arguments": {"grace-over-time": "900"}},
        ],
        "metrics": {"type": "prometheus", "address": "http://prometheus:9090"},
    }
    imported = import_conf(document)
    valid(imported)
    found = notes(imported)
    for path in (
        "configurations.0.arguments.minCandidateNodesPercentage",
        "configurations.1.arguments.predicateErrorCacheEnable",
        "configurations.2.arguments.overcommit-factor",
        "configurations.3",
        "metrics",
    ):
        assert found[path] == [NoteKind.DIFFERS]


# any configuration of Volcano's plugins Lahar has imports into a valid policy (binpack may be
# left out by its switch, so another plugin Lahar has stays)

LAHARS = ("priority", "gang", "drf", "proportion", "predicates", "binpack", "sla", "capacity")
DROPPED = ("conformance", "overcommit", "nodeorder", "pdb", "tdm", "usage")


@given(
    chosen=st.lists(st.sampled_from(LAHARS + DROPPED), min_size=1, unique=True).filter(
        lambda names: (
            any(n in LAHARS and n != "binpack" for n in names)
            and not {"proportion", "capacity"} <= set(names)
        )
    ),
    switches=st.lists(st.tuples(st.sampled_from(sorted(SWITCHES)), st.booleans()), max_size=4),
    split=st.integers(0, 8),
    actions=st.lists(
        st.sampled_from(["enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"]),
        min_size=1,
    ),
)
@settings(max_examples=80, deadline=None)
def test_any_configuration_of_volcanos_plugins_imports_into_a_valid_policy(
    chosen: list[str], switches: list[tuple[str, bool]], split: int, actions: list[str]
) -> None:
    options = [plugin(name) for name in chosen]
    for i, (switch, value) in enumerate(switches):
        options[i % len(options)][switch] = value
    for option in options:  # Volcano refuses drf's hierarchy beside proportion
        if option["name"] == "drf" and "proportion" in chosen:
            option.pop("enableHierarchy", None)
    tiers = [t for t in (options[:split], options[split:]) if t]

    imported = import_conf(conf(*tiers, actions=", ".join(actions)))

    policy = valid(imported)
    assert {p.name for p in policy.plugins} <= set(REGISTRY)
    assert all(note.kind in NoteKind for note in imported.notes)
