"""Lahar's policy file: plugins in tiers, with arguments, validated when a component starts.

The file (`policy/lahar.yaml`) reads like Volcano's scheduler configuration:

    apiVersion: lahar.io/v1alpha1
    kind: SchedulerPolicy
    tiers:
      - plugins:
          - name: predicates
      - plugins:
          - name: binpack
            arguments: {binpack.weight: 10, binpack.cpu: 1}
          - name: drf
            enablePreemptable: false

Plugins are looked up in a registry handed in by the caller (the framework does not know the
plugins); each factory validates its own arguments. Every problem is a `PolicyError` naming the
file, the key (`tiers.1.plugins.0.arguments.binpack.cpu`) and the reason. `load_policy` reads a
file; `parse_policy` takes text read elsewhere (a ConfigMap) and names that source instead.

`enablePreemptable` is Volcano's switch beside a plugin's name and arguments: it turns the
plugin's rule on whom preempt may evict (`Switches.spares_gang_cores`: gang's;
`Switches.keeps_victim_shares`: drf's) off when false; absent, the rule is on (as in Volcano).
`enableReclaimable` does the same for reclaim's victims (gang's rule, which Volcano's gang plugin
also gives its reclaim action). On a plugin without such a rule either is an error.

The engine reads three values, each merged from the plugins' `Switches` in tier order (the first
plugin that sets a value wins where only one can hold, an on/off rule is on when any plugin turns
it on): `Policy.gang_settings` (the gang plugin's), `Policy.ordering` (the job-order hooks, queue
shares, the starvation limit) and `Policy.preemption`: the preempt plugin's interval and actions
(`preempt` with the priority plugin, `reclaim` with proportion) and the rules on victims left on
(`preemption.victims.Rules`); without the gang (or drf) plugin, no such rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from extender.api.engine_settings import GangSettings, Ordering, PreemptionSettings, Rules
from extender.api.wire import describe_invalid
from extender.framework.plugin import (
    Argument,
    JobOrder,
    NodeFilter,
    NodeScorer,
    Plugin,
    PluginFactory,
    Switches,
    Switching,
)

API_VERSION = "lahar.io/v1alpha1"
KIND = "SchedulerPolicy"
_NO_SWITCHES = Switches()

T = TypeVar("T")


class PolicyError(Exception):
    """The policy file is unusable; the message names the file, the key and the reason."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginEntry(_Strict):
    name: str = Field(min_length=1)
    # Volcano's switches of the plugin's rules on whom preempt, and reclaim, may evict (None:
    # unset, on).
    enable_preemptable: StrictBool | None = Field(default=None, alias="enablePreemptable")
    enable_reclaimable: StrictBool | None = Field(default=None, alias="enableReclaimable")
    arguments: dict[str, Argument] = {}


class TierEntry(_Strict):
    plugins: list[PluginEntry] = Field(min_length=1)


class PolicyFile(_Strict):
    api_version: Literal["lahar.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["SchedulerPolicy"]
    tiers: list[TierEntry] = Field(min_length=1)


@dataclass(frozen=True)
class Policy:
    """The plugins to run, in tier order, built from a validated policy file."""

    source: str
    tiers: tuple[tuple[Plugin, ...], ...]
    # The plugins whose entry says `enablePreemptable: false` (`enableReclaimable: false`):
    # their rule on preempt's (reclaim's) victims is off.
    unpreemptable: frozenset[str] = frozenset()
    unreclaimable: frozenset[str] = frozenset()

    @property
    def plugins(self) -> list[Plugin]:
        return [plugin for tier in self.tiers for plugin in tier]

    @property
    def filters(self) -> list[NodeFilter]:
        return [p for p in self.plugins if isinstance(p, NodeFilter)]

    @property
    def scorers(self) -> list[NodeScorer]:
        return [p for p in self.plugins if isinstance(p, NodeScorer)]

    def switches(self, *, but: frozenset[str] = frozenset()) -> list[Switches]:
        """What the plugins switch on in the engine, in tier order; those named in `but` left
        out (the plugins whose rule on victims their entry switches off)."""
        return [_switches_of(p) for p in self.plugins if p.name not in but]

    @property
    def gang_settings(self) -> GangSettings | None:
        """The gang plugin's settings; None when the policy has no gang plugin."""
        return _first(s.gang for s in self.switches())

    @property
    def preemption(self) -> PreemptionSettings | None:
        """Seconds between preemptions and who may be evicted, with the preempt plugin; else
        None. Preempt needs its `preempt` action and the priority plugin, reclaim its `reclaim`
        action and proportion; gang's and drf's rules on victims hold unless switched off."""
        switches = self.switches()
        interval = _first(s.preempt_interval for s in switches)
        if interval is None:
            return None
        preempt_on = self.switches(but=self.unpreemptable)
        reclaim_on = self.switches(but=self.unreclaimable)
        return PreemptionSettings(
            interval,
            Rules(
                preempt=any(s.preempts_within_queue for s in switches)
                and any(s.preempts_lower_priority for s in switches),
                reclaim=any(s.reclaims_between_queues for s in switches)
                and any(s.queue_shares for s in switches),
                spare_members_only=any(s.spares_gang_cores for s in preempt_on),
                reclaims_spares_only=any(s.spares_gang_cores for s in reclaim_on),
                keeps_share=any(s.keeps_victim_shares for s in preempt_on),
            ),
        )

    @property
    def ordering(self) -> Ordering:
        """The fair order's rules: job-order plugins in tier order, queue shares, starvation."""
        switches = self.switches()
        return Ordering(
            job_keys=tuple(p.job_key for p in self.plugins if isinstance(p, JobOrder)),
            by_queue_share=any(s.queue_shares for s in switches),
            starving_after=_first(s.starving_after for s in switches),
        )


def _switches_of(plugin: Plugin) -> Switches:
    """What `plugin` switches on in the engine; nothing for a plugin of hooks only."""
    return plugin.switches if isinstance(plugin, Switching) else _NO_SWITCHES


def _first(values: Iterable[T | None]) -> T | None:
    """The first value set, in tier order (where only one can hold)."""
    return next((value for value in values if value is not None), None)


def load_policy(path: Path, registry: Mapping[str, PluginFactory]) -> Policy:
    """Read, validate and build the policy in `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"policy {path}: cannot read it: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise PolicyError(
            f"policy {path}: not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from exc
    return parse_policy(text, registry, source=str(path))


def parse_policy(text: str, registry: Mapping[str, PluginFactory], *, source: str) -> Policy:
    """Parse, validate and build the policy YAML `text`, read from `source` (a file, the
    ConfigMap it came from), which every error names."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy {source}: not valid YAML: {exc}") from exc
    return build_policy(document, registry, source=source)


def build_policy(
    document: object, registry: Mapping[str, PluginFactory], *, source: str = "policy"
) -> Policy:
    """Validate a parsed policy document and build its plugins."""
    if not isinstance(document, dict):
        raise PolicyError(f"{source}: must be a YAML mapping with apiVersion, kind and tiers")
    try:
        parsed = PolicyFile.model_validate(document)
    except ValidationError as exc:
        raise PolicyError(f"{source}: {describe_invalid(exc, root='(top level)')}") from exc
    seen: dict[str, str] = {}
    unpreemptable: set[str] = set()
    unreclaimable: set[str] = set()
    tiers = []
    for t, tier in enumerate(parsed.tiers):
        built = []
        for p, entry in enumerate(tier.plugins):
            where = f"tiers.{t}.plugins.{p}"
            factory = registry.get(entry.name)
            if factory is None:
                known = ", ".join(sorted(registry))
                raise PolicyError(
                    f"{source}: {where}.name: unknown plugin {entry.name!r} (known: {known})"
                )
            if entry.name in seen:
                raise PolicyError(
                    f"{source}: {where}.name: plugin {entry.name!r} "
                    f"is already in {seen[entry.name]}"
                )
            seen[entry.name] = where
            try:
                plugin = factory(entry.arguments)
            except ValueError as exc:
                raise PolicyError(f"{source}: {where}.arguments.{exc}") from exc
            if entry.enable_preemptable is not None and not _limits_victims(plugin):
                raise PolicyError(
                    f"{source}: {where}.enablePreemptable: plugin {entry.name!r} has no rule on "
                    f"whom preempt may evict to switch (plugins with one: {_with_rules(registry)})"
                )
            if entry.enable_preemptable is False:
                unpreemptable.add(entry.name)
            if entry.enable_reclaimable is not None and not _switches_of(plugin).spares_gang_cores:
                raise PolicyError(
                    f"{source}: {where}.enableReclaimable: plugin {entry.name!r} has no rule on "
                    "whom reclaim may evict to switch (the plugin with one: gang)"
                )
            if entry.enable_reclaimable is False:
                unreclaimable.add(entry.name)
            built.append(plugin)
        tiers.append(tuple(built))
    return Policy(
        source=source,
        tiers=tuple(tiers),
        unpreemptable=frozenset(unpreemptable),
        unreclaimable=frozenset(unreclaimable),
    )


def _limits_victims(plugin: Plugin) -> bool:
    """Whether the plugin has a rule on whom preempt may evict (`enablePreemptable` switches)."""
    switches = _switches_of(plugin)
    return switches.spares_gang_cores or switches.keeps_victim_shares


def _with_rules(registry: Mapping[str, PluginFactory]) -> str:
    """The plugins of `registry` with a rule on victims, named (each built with its defaults)."""
    names = []
    for name, factory in sorted(registry.items()):
        try:
            plugin = factory({})
        except ValueError:
            continue
        if _limits_victims(plugin):
            names.append(name)
    return ", ".join(names) or "none"
