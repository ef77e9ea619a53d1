"""Volcano's scheduler configuration (`volcano-scheduler.conf`) read into Lahar's policy.

`import_conf` takes the parsed configuration, or the ConfigMap holding it under the data key
`volcano-scheduler.conf`, and returns the policy document `framework.policy.build_policy` reads
(Volcano's tiers in Volcano's order, each plugin Lahar has under its Lahar name with its
arguments; a tier left empty goes) and a `Note` for each action, plugin, argument and switch
Volcano would act on. The names and the answer for each (the note's kind, `NoteKind`, and most
of its text) are `volcano_names`'s tables; this module walks a configuration against them:
`_Importer` checks each part's shape and values, turns each plugin Lahar has into its policy
entry (capacity into proportion, `sla-waiting-time` into `sla.waitingTimeSeconds`, binpack's
weights kept; the preempt and reclaim actions into the preempt plugin's `preempt.actions`), and
notes the rest: arguments and switches against each plugin's defaults, actions and action
configurations against what is in `actions`.

What is not Volcano's at all is an error, `VolcanoConfError` (a ValueError) naming the path and
why: a key that Volcano's `SchedulerConfiguration`, a tier or a plugin entry (`PluginOption`)
does not have, a plugin or action Volcano does not ship, an argument unknown to a plugin whose
arguments are read here, a value Volcano would not read (a weight "x", actions not a string), a
combination Lahar's policy cannot hold or Volcano refuses (a plugin twice, capacity beside
proportion, drf's hierarchy beside proportion). Of the plugins Lahar drops, only overcommit's and
nodeorder's arguments are read; the others' are covered by the plugin's note.

Pure: the caller reads the files, validates the result with `build_policy` and writes it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import yaml

from extender.api.duration import parse_duration
from extender.api.preemptable import parse_bool
from extender.framework.policy import API_VERSION, KIND
from extender.plugins import gang, preempt, sla
from extender.plugins.volcano_names import (
    ACTION_ARGUMENT_NOTES,
    ACTION_ARGUMENTS,
    ACTION_NOTES,
    ACTIONS,
    BASIC_RESOURCES,
    BINPACK_KEYS,
    BINPACK_PREFIX,
    CAPACITY_ARGUMENTS,
    CARRIES_PREEMPTABLE,
    CARRIES_RECLAIMABLE,
    DROPPED,
    EVICTING_ACTIONS,
    GATED,
    MISSING_ACTIONS,
    NODEORDER,
    OFF_UNLESS_SET,
    OPTION_KEYS,
    PREDICATE_FILTERS,
    PREDICATE_OTHERS,
    PREEMPTABLE,
    PREEMPTABLE_MEANS,
    PROPORTIONAL_PREFIX,
    RECLAIMABLE,
    RECLAIMABLE_MEANS,
    SAME_PLUGINS,
    SHARES_QUEUES,
    SWITCHED_OFF,
    SWITCHES,
    TOP_KEYS,
    VOLCANO_PLUGINS,
)

CONFIGMAP_KEY = "volcano-scheduler.conf"


class VolcanoConfError(ValueError):
    """A configuration that is not Volcano's, or a value Volcano would not read."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NoteKind(StrEnum):
    MAPPED = "mapped"  # honoured, possibly under another name
    ALWAYS = "always"  # always on in Lahar
    KUBE_SCHEDULER = "kube-scheduler"  # left to kube-scheduler and its profile
    DIFFERS = "differs"  # not honoured; the note says what Lahar does instead


@dataclass(frozen=True)
class Note:
    """What became of one Volcano action, plugin, argument or switch, at its path in the file."""

    kind: NoteKind
    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}: {self.text}"


@dataclass(frozen=True)
class Imported:
    """Lahar's policy document, ready to dump as YAML, and the notes on how it was made."""

    document: dict[str, Any]
    notes: tuple[Note, ...]


def unwrap(document: object) -> object:
    """The configuration itself: `document`, or the YAML under `volcano-scheduler.conf` of a
    ConfigMap."""
    if not (isinstance(document, dict) and document.get("kind") == "ConfigMap"):
        return document
    data = document.get("data")
    if not isinstance(data, dict) or CONFIGMAP_KEY not in data:
        keys = ", ".join(sorted(str(k) for k in data)) if isinstance(data, dict) else ""
        raise VolcanoConfError(
            "data",
            f"the ConfigMap has no key {CONFIGMAP_KEY}, which holds Volcano's scheduler "
            f"configuration (it has: {keys or 'none'})",
        )
    text = data[CONFIGMAP_KEY]
    if not isinstance(text, str):
        raise VolcanoConfError(f"data.{CONFIGMAP_KEY}", "must be the configuration's YAML text")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())  # one line
        raise VolcanoConfError(f"data.{CONFIGMAP_KEY}", f"not valid YAML: {reason}") from exc


def import_conf(document: object) -> Imported:
    """Lahar's policy for Volcano's configuration `document` (or its ConfigMap), with notes."""
    return _Importer().run(unwrap(document))


def _hint(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def _mapping(value: object, path: str, what: str) -> dict[str, object]:
    """`value` as a mapping with text keys (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VolcanoConfError(path, f"must be a mapping of {what}, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise VolcanoConfError(f"{path}.{key}", f"{what} are named by text, got {key!r}")
    return value


def _only(found: Mapping[str, object], known: Iterable[str], path: str, what: str) -> None:
    allowed = list(known)
    for key in found:
        if key not in allowed:
            listed = ", ".join(allowed) or "none"
            where = f"{path}.{key}" if path else key
            raise VolcanoConfError(
                where, f"not a key of {what}{_hint(key, allowed)} (known: {listed})"
            )


def _whole(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise VolcanoConfError(path, f"must be a whole number >= 0, got {value!r}")
    return value


def _boolean(value: object, path: str) -> bool:
    """A boolean as Volcano's arguments read one: true/false, or text Go's ParseBool reads."""
    read = parse_bool(value) if isinstance(value, str) else value
    if not isinstance(read, bool):
        raise VolcanoConfError(path, f"must be true or false, got {value!r}")
    return read


@dataclass(frozen=True)
class _Option:
    """One plugin entry of a tier, checked."""

    name: str
    path: str
    switches: Mapping[str, bool]
    arguments: Mapping[str, object]


@dataclass
class _Importer:
    notes: list[Note] = field(default_factory=list)

    def note(self, kind: str, path: str, text: str) -> None:
        self.notes.append(Note(NoteKind(kind), path, text))

    def run(self, conf: object) -> Imported:
        if not isinstance(conf, dict):
            raise VolcanoConfError(
                "(top level)",
                "must be a mapping with actions and tiers (Volcano's scheduler configuration, "
                f"or a ConfigMap holding it under {CONFIGMAP_KEY})",
            )
        top = _mapping(conf, "(top level)", "keys")
        _only(top, TOP_KEYS, "", "Volcano's scheduler configuration")
        actions = self._actions(top.get("actions"))
        options = self._options(top.get("tiers"))
        self._check_together(options)
        names = {o.name for tier in options for o in tier}
        converted = [[self._plugin(o, actions) for o in tier] for tier in options]
        tiers = [[e for e in tier if e is not None] for tier in converted]
        tiers = [tier for tier in tiers if tier]
        if not tiers:
            raise VolcanoConfError(
                "tiers",
                "nothing Lahar runs is left (of gang, priority, drf, proportion or capacity, "
                "predicates, binpack, sla): the policy would be empty",
            )
        preempting = self._preemption(actions, names)
        if preempting is not None:
            tiers[0].append(preempting)
        self._configurations(top.get("configurations"), actions)
        if top.get("metrics") is not None:
            _mapping(top["metrics"], "metrics", "settings")
            self.note(
                "differs",
                "metrics",
                "dropped: Volcano's node-usage metrics source (for usage and rescheduling); "
                "Lahar reads no node metrics",
            )
        document = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "tiers": [{"plugins": tier} for tier in tiers],
        }
        return Imported(document, tuple(self.notes))

    # actions

    def _actions(self, raw: object) -> list[str]:
        if raw is None:
            raise VolcanoConfError(
                "actions", 'required: the actions in order, e.g. "enqueue, allocate, backfill"'
            )
        if not isinstance(raw, str):
            raise VolcanoConfError(
                "actions",
                f'must be one string of comma-separated actions, e.g. "enqueue, allocate, '
                f'backfill", got {type(raw).__name__}',
            )
        names = [part.strip() for part in raw.split(",")]
        for name in names:
            if not name:
                raise VolcanoConfError("actions", f"an empty name in {raw!r}")
            if name not in ACTIONS:
                raise VolcanoConfError(
                    "actions",
                    f"unknown action {name!r}{_hint(name, ACTIONS)} (Volcano's: "
                    f"{', '.join(ACTIONS)})",
                )
        for name in dict.fromkeys(names):
            if name in ACTION_NOTES:
                kind, text = ACTION_NOTES[name]
                self.note(kind, "actions", f"{name}: {text}")
        for name, text in MISSING_ACTIONS.items():
            if name not in names:
                self.note("differs", "actions", f"no {name}: {text}")
        return names

    def _preemption(self, actions: list[str], plugins: set[str]) -> dict[str, Any] | None:
        """The preempt plugin for Volcano's preempt and reclaim actions (None without either)."""
        interval = preempt.DEFAULT_INTERVAL
        chosen = []
        for lahar, volcano in EVICTING_ACTIONS.items():
            given = [name for name in volcano if name in actions]
            if not given:
                continue
            chosen.append(lahar)
            for name in given:
                whole = (
                    " (Lahar's victims are always whole gangs or members beyond minMember)"
                    if name.startswith("gang")
                    else ""
                )
                self.note(
                    "mapped",
                    "actions",
                    f"{name}: the preempt plugin with {lahar} in preempt.actions{whole}, at most "
                    f"one preemption every {interval:g}s (preempt.intervalSeconds)",
                )
        if preempt.PREEMPT in chosen and "priority" not in plugins:
            self.note(
                "differs",
                "actions",
                "preempt: Lahar preempts for priority only with the priority plugin, which the "
                "configuration has not: nothing is preempted for priority",
            )
        if preempt.RECLAIM in chosen and not plugins & {"proportion", "capacity"}:
            self.note(
                "differs",
                "actions",
                "reclaim: Lahar reclaims only with the proportion plugin (or capacity), which "
                "the configuration has not: nothing is reclaimed",
            )
        if not chosen:
            return None
        return {"name": preempt.NAME, "arguments": {preempt.ACTIONS: ", ".join(chosen)}}

    def _configurations(self, raw: object, actions: list[str]) -> None:
        if raw is None:
            return
        if not isinstance(raw, list):
            raise VolcanoConfError("configurations", "must be a list of {name, arguments}")
        for i, item in enumerate(raw):
            path = f"configurations.{i}"
            entry = _mapping(item, path, "keys")
            _only(entry, ("name", "arguments"), path, "an action's configuration")
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                raise VolcanoConfError(f"{path}.name", "required: the action's name")
            arguments = _mapping(entry.get("arguments"), f"{path}.arguments", "arguments")
            if name not in ACTION_ARGUMENTS:
                self.note("differs", path, f"{name}: dropped: not an action's configuration")
                continue
            known = ACTION_ARGUMENTS[name]
            _only(arguments, known, f"{path}.arguments", f"the {name} action's arguments")
            unused = "" if name in actions else f" (and {name} is not in actions)"
            for key in arguments:
                self.note(
                    "differs",
                    f"{path}.arguments.{key}",
                    f"dropped{unused}: {ACTION_ARGUMENT_NOTES[key]}",
                )

    # tiers and plugin entries

    def _options(self, raw: object) -> list[list[_Option]]:
        if raw is None:
            raise VolcanoConfError("tiers", "required: the tiers of plugins")
        if not isinstance(raw, list):
            raise VolcanoConfError("tiers", "must be a list of tiers, each with plugins")
        tiers = []
        for t, item in enumerate(raw):
            path = f"tiers.{t}"
            tier = _mapping(item, path, "keys")
            _only(tier, ("plugins",), path, "a tier")
            plugins = tier.get("plugins")
            if plugins is None:
                plugins = []
            if not isinstance(plugins, list):
                raise VolcanoConfError(f"{path}.plugins", "must be a list of plugins")
            tiers.append([self._option(p, f"{path}.plugins.{i}") for i, p in enumerate(plugins)])
        return tiers

    def _option(self, raw: object, path: str) -> _Option:
        entry = _mapping(raw, path, "keys")
        _only(entry, OPTION_KEYS, path, "a plugin entry (Volcano's PluginOption)")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise VolcanoConfError(f"{path}.name", "required: the plugin's name")
        if name not in VOLCANO_PLUGINS:
            raise VolcanoConfError(
                f"{path}.name",
                f"unknown plugin {name!r}: not one Volcano ships{_hint(name, VOLCANO_PLUGINS)} "
                "(Lahar cannot run a custom plugin: leave it out)",
            )
        switches = {}
        for key in SWITCHES:
            value = entry.get(key)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise VolcanoConfError(f"{path}.{key}", f"must be true or false, got {value!r}")
            switches[key] = value
        arguments = _mapping(entry.get("arguments"), f"{path}.arguments", "arguments")
        return _Option(name, path, switches, arguments)

    def _check_together(self, tiers: list[list[_Option]]) -> None:
        """Refuse what Lahar's policy cannot hold twice, and what Volcano itself refuses."""
        seen: dict[str, str] = {}
        for tier in tiers:
            for option in tier:
                if option.name in seen:
                    raise VolcanoConfError(
                        f"{option.path}.name",
                        f"plugin {option.name!r} is named twice: already in {seen[option.name]}",
                    )
                other = SHARES_QUEUES.get(option.name)
                if other in seen:
                    raise VolcanoConfError(
                        f"{option.path}.name",
                        f"{option.name} and {other} ({seen[other]}) both share queues: keep one",
                    )
                seen[option.name] = option.path
            hierarchy = [o for o in tier if o.name == "drf" and o.switches.get("enableHierarchy")]
            if hierarchy and any(o.name == "proportion" for o in tier):
                raise VolcanoConfError(
                    f"{hierarchy[0].path}.enableHierarchy",
                    "drf with hierarchy and proportion in one tier conflict (Volcano refuses it)",
                )

    def _plugin(self, option: _Option, actions: list[str]) -> dict[str, Any] | None:
        """Lahar's entry for one Volcano plugin (None when Lahar has none), noting what became of
        it, its arguments and its switches."""
        if option.name in DROPPED:
            kind, text = DROPPED[option.name]
            self.note(kind, option.path, f"{option.name}: {text}")
            if option.name in _ARGUMENTS_READ:
                _ARGUMENTS_READ[option.name](self, option)
            return None
        entry = _CONVERTERS[option.name](self, option)
        if entry is not None:
            self._switch_notes(option, entry["name"], actions)
        return entry

    def _switch_notes(self, option: _Option, lahar: str, actions: list[str]) -> None:
        evicting = any(name in actions for names in EVICTING_ACTIONS.values() for name in names)
        for key, value in option.switches.items():
            path = f"{option.path}.{key}"
            idle = "" if evicting else "; nothing is evicted without preempt or reclaim in actions"
            if key == PREEMPTABLE and lahar in CARRIES_PREEMPTABLE:
                self.note("mapped", path, f"kept: {PREEMPTABLE_MEANS[lahar, value]}{idle}")
                continue
            if key == RECLAIMABLE and lahar in CARRIES_RECLAIMABLE:
                self.note("mapped", path, f"kept: {RECLAIMABLE_MEANS[lahar, value]}{idle}")
                continue
            if value == (key not in OFF_UNLESS_SET):
                continue  # Volcano's default
            gated = key in GATED.get(option.name, frozenset())
            if key == "enableHierarchy" and value and option.name == "capacity":
                self.note(
                    "mapped", path, "Lahar's proportion always follows queue trees (spec.parent)"
                )
                continue
            if key == "enableHierarchy" and value and gated:
                self.note(
                    "differs",
                    path,
                    "hierarchical DRF is not Lahar's: queue trees (spec.parent) are shared by "
                    "proportion",
                )
                continue
            if not gated:
                self.note(
                    "mapped",
                    path,
                    f"no effect: Volcano's {option.name} has no {SWITCHES[key]} either",
                )
                continue
            kind, text = SWITCHED_OFF.get(
                (option.name, key),
                ("differs", f"Lahar's {lahar} cannot switch off its {SWITCHES[key]}: it stays on"),
            )
            self.note(kind, path, text)

    # the plugins Lahar has

    def _entry(
        self, name: str, option: _Option, arguments: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name}
        if name in CARRIES_PREEMPTABLE and PREEMPTABLE in option.switches:
            entry[PREEMPTABLE] = option.switches[PREEMPTABLE]
        if name in CARRIES_RECLAIMABLE and RECLAIMABLE in option.switches:
            entry[RECLAIMABLE] = option.switches[RECLAIMABLE]
        if arguments:
            entry["arguments"] = dict(arguments)
        return entry

    def _gang(self, option: _Option) -> dict[str, Any]:
        _no_arguments(option)
        defaults = gang.DEFAULTS
        self.note(
            "mapped",
            option.path,
            "gang: all or nothing, with a bind barrier (gang.barrierTimeoutSeconds "
            f"{defaults.barrier_timeout:g}s; Lahar's other gang arguments at their defaults too)",
        )
        return self._entry("gang", option)

    def _same(self, option: _Option) -> dict[str, Any]:
        _no_arguments(option)
        self.note("mapped", option.path, f"{option.name}: {SAME_PLUGINS[option.name]}")
        return self._entry(option.name, option)

    def _capacity(self, option: _Option) -> dict[str, Any]:
        args = option.arguments
        _only(args, CAPACITY_ARGUMENTS, f"{option.path}.arguments", "Volcano's capacity arguments")
        self.note(
            "mapped",
            option.path,
            "capacity: proportion, which keeps each queue within its Queue's capability, gives it "
            "its deserved when set (weights share what is left) and keeps its guarantee",
        )
        for key in args:
            path = f"{option.path}.arguments.{key}"
            if key == "ancestorReclaimLevel":
                _whole(args[key], path)
            else:
                _boolean(args[key], path)
            kind, text = CAPACITY_ARGUMENTS[key]
            self.note(kind, path, text)
        return self._entry("proportion", option)

    def _predicates(self, option: _Option) -> dict[str, Any]:
        self.note(
            "kube-scheduler",
            option.path,
            "predicates: Lahar plans gangs by resource fit; kube-scheduler's filters check the "
            "rest (affinity, taints, ports, volumes, topology spread), as its profile sets them",
        )
        for key, value in option.arguments.items():
            path = f"{option.path}.arguments.{key}"
            if key in PREDICATE_FILTERS:
                if not _boolean(value, path):
                    self.note(
                        "kube-scheduler",
                        path,
                        f"kube-scheduler's {PREDICATE_FILTERS[key]} filter: disable it in its "
                        "profile",
                    )
                continue
            if key.startswith(PROPORTIONAL_PREFIX) and key.endswith((".cpu", ".memory")):
                _number(value, path)
                kind, text = PREDICATE_OTHERS["predicate.resources"]
            elif key in PREDICATE_OTHERS:
                kind, text = PREDICATE_OTHERS[key]
            else:
                known = [*PREDICATE_FILTERS, *PREDICATE_OTHERS, f"{PROPORTIONAL_PREFIX}<name>.cpu"]
                raise VolcanoConfError(
                    path,
                    f"not an argument of Volcano's predicates{_hint(key, known)} (known: "
                    f"{', '.join(known)})",
                )
            self.note(kind, path, text)
        return self._entry("predicates", option)

    def _binpack(self, option: _Option) -> dict[str, Any] | None:
        args, path = option.arguments, f"{option.path}.arguments"
        out: dict[str, Any] = {}
        for key in BINPACK_KEYS[:3]:
            if key in args:
                out[key] = _whole(args[key], f"{path}.{key}")
        listed = args.get("binpack.resources", "")
        if not isinstance(listed, str):
            raise VolcanoConfError(
                f"{path}.binpack.resources",
                f"must be a comma-separated list of resource names, got {listed!r}",
            )
        listed_names = list(dict.fromkeys(n.strip() for n in listed.split(",") if n.strip()))
        names = [n for n in listed_names if n not in BASIC_RESOURCES]
        if names:
            out["binpack.resources"] = ", ".join(names)
        for name in (n for n in listed_names if n in BASIC_RESOURCES):
            self.note(
                "mapped",
                f"{path}.binpack.resources",
                f"{name}: weighed by binpack.{name} (Volcano ignores it in this list)",
            )
        for key, value in args.items():
            if key in BINPACK_KEYS:
                continue
            name = key.removeprefix(BINPACK_PREFIX)
            if name == key or not name:
                known = [*BINPACK_KEYS, f"{BINPACK_PREFIX}<name>"]
                raise VolcanoConfError(
                    f"{path}.{key}",
                    f"not an argument of Volcano's binpack{_hint(key, known)} (known: "
                    f"{', '.join(known)})",
                )
            weight = _whole(value, f"{path}.{key}")
            if name in names:
                out[key] = weight
            elif name in BASIC_RESOURCES:
                self.note("mapped", f"{path}.{key}", f"dropped: binpack.{name} weighs {name}")
            else:
                self.note(
                    "differs",
                    f"{path}.{key}",
                    f"dropped: {name} is not in binpack.resources, so Volcano ignores this "
                    "weight too",
                )
        if option.switches.get("enableNodeOrder") is False:
            self.note(
                "mapped", f"{option.path}.enableNodeOrder", "binpack scores nothing then: left out"
            )
            self.note("mapped", option.path, "binpack: left out (its node order is off)")
            return None
        self.note(
            "mapped",
            option.path,
            "binpack: the fullest node that fits first; Lahar's plans weigh resources the same",
        )
        self.note(
            "kube-scheduler",
            option.path,
            "binpack: kube-scheduler's NodeResourcesFit scores nodes, with scoringStrategy "
            "MostAllocated and these resource weights; its configuration must carry the same "
            "weights (`lahar serve --scheduler-config` checks)",
        )
        return self._entry("binpack", option, out)

    def _sla(self, option: _Option) -> dict[str, Any]:
        args, path = option.arguments, f"{option.path}.arguments"
        _only(args, ("sla-waiting-time",), path, "Volcano's sla arguments")
        if "sla-waiting-time" not in args:
            default = sla.DEFAULT_WAITING
            self.note(
                "differs",
                option.path,
                "sla: Volcano sets no waiting limit for a job without its own sla-waiting-time "
                f"annotation; Lahar's sla gives every gang {default:g}s (sla.waitingTimeSeconds)",
            )
            return self._entry("sla", option)
        value = args["sla-waiting-time"]
        where = f"{path}.sla-waiting-time"
        if not isinstance(value, str):
            raise VolcanoConfError(
                where, f"must be a Go duration such as 10m or 1h30m, got {value!r}"
            )
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise VolcanoConfError(where, str(exc)) from exc
        if seconds <= 0:
            raise VolcanoConfError(where, f"must be a duration > 0, got {value!r}")
        whole = int(seconds) if seconds == int(seconds) else seconds
        self.note(
            "mapped",
            where,
            f"sla.waitingTimeSeconds: {whole}: a gang waiting longer goes first in its queue and "
            "drains capacity (a PodGroup's sla-waiting-time annotation still sets its own)",
        )
        return self._entry("sla", option, {sla.WAITING: whole})


def _number(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise VolcanoConfError(path, f"must be a number, got {value!r}")
    return float(value)


def _read_overcommit(importer: _Importer, option: _Option) -> None:
    path = f"{option.path}.arguments"
    _only(option.arguments, ("overcommit-factor",), path, "Volcano's overcommit arguments")
    if "overcommit-factor" in option.arguments:
        where = f"{path}.overcommit-factor"
        if _number(option.arguments["overcommit-factor"], where) < 1:
            raise VolcanoConfError(where, "must be at least 1.0 (Volcano uses 1.2 instead)")
        importer.note("differs", where, "dropped: " + ACTION_ARGUMENT_NOTES["overcommit-factor"])


def _read_nodeorder(importer: _Importer, option: _Option) -> None:
    path = f"{option.path}.arguments"
    _only(option.arguments, NODEORDER, path, "Volcano's nodeorder arguments")
    for key, value in option.arguments.items():
        where = f"{path}.{key}"
        weight = _whole(value, where)
        importer.note(
            "kube-scheduler", where, f"{weight}: kube-scheduler's {NODEORDER[key]} score weight"
        )
    if option.switches.get("enableNodeOrder") is False:
        importer.note(
            "kube-scheduler",
            f"{option.path}.enableNodeOrder",
            "kube-scheduler's score plugins are switched off in its profile",
        )


def _no_arguments(option: _Option) -> None:
    _only(option.arguments, (), f"{option.path}.arguments", f"Volcano's {option.name} arguments")


def _read_none(importer: _Importer, option: _Option) -> None:
    _no_arguments(option)


_ARGUMENTS_READ: Mapping[str, Callable[[_Importer, _Option], None]] = {
    "overcommit": _read_overcommit,
    "nodeorder": _read_nodeorder,
    "conformance": _read_none,
}
_CONVERTERS: Mapping[str, Callable[[_Importer, _Option], dict[str, Any] | None]] = {
    "gang": _Importer._gang,
    "priority": _Importer._same,
    "drf": _Importer._same,
    "proportion": _Importer._same,
    "capacity": _Importer._capacity,
    "predicates": _Importer._predicates,
    "binpack": _Importer._binpack,
    "sla": _Importer._sla,
}
