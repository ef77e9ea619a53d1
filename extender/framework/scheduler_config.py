"""The kube-scheduler configuration Lahar's policy expects, checked against it at start.

kube-scheduler does in Go what it does well: resource fit (NodeResourcesFit filters), scoring and
node sampling. Lahar's filter then decides only what in-tree plugins cannot (gang admission, other
gangs' reservations, queue shares), so the configuration that calls Lahar must keep:

- NodeResourcesFit on in every profile (filter and pre-filter): Lahar no longer repeats resource
  fit, and without it a pod would be offered nodes it does not fit on;
- NodeResourcesFit's scoring as Lahar's policy says, one source of truth: the policy's `binpack`
  plugin is `scoringStrategy.type: MostAllocated`, `spread` is `LeastAllocated`, with the same
  resource weights (`binpack.cpu`, `binpack.memory`, `binpack.resources.<name>`; a weight of 0
  leaves the resource out, as Volcano's does) — `fit_arguments` renders them;
- one extender, Lahar, with the filter, preempt and bind verbs, `nodeCacheCapable` (names on the
  wire, not node objects), not ignorable (an ignorable binder falls through to the default binder
  and binds gangs partly), and an `httpTimeout` above the gang barrier's timeout (a bind waiting at
  the barrier must end before the scheduler gives up on it).

`config_problems` returns each departure as one line naming the field and the reason; the
command that starts Lahar refuses to start with any. Pure: the document is handed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.api.duration import parse_duration
from extender.framework.policy import Policy

FIT = "NodeResourcesFit"
STRATEGIES = {"binpack": "MostAllocated", "spread": "LeastAllocated"}
DEFAULT_HTTP_TIMEOUT = 5.0  # kube-scheduler's default httpTimeout, seconds


def profile_names(config: Mapping[str, Any]) -> frozenset[str]:
    """The schedulerNames of the configuration's profiles (default-scheduler when none)."""
    profiles = config.get("profiles") or [{}]
    return frozenset(str(p.get("schedulerName") or "default-scheduler") for p in profiles)


def fit_arguments(policy: Policy) -> dict[str, Any] | None:
    """NodeResourcesFit's arguments as the policy's score plugin says (None without one)."""
    scorers = [s for s in policy.scorers if s.name in STRATEGIES and s.weight > 0]
    if not scorers:
        return None
    scorer = scorers[0]
    weights = getattr(scorer, "resource_weights", {})
    resources = [{"name": name, "weight": weight} for name, weight in weights.items() if weight]
    return {"scoringStrategy": {"type": STRATEGIES[scorer.name], "resources": resources}}


def config_problems(config: Mapping[str, Any], policy: Policy, source: str) -> list[str]:
    """What in `config` (a KubeSchedulerConfiguration read from `source`) departs from what
    Lahar's `policy` needs, one line each."""
    found: list[str] = []
    scorers = [s.name for s in policy.scorers if s.name in STRATEGIES and s.weight > 0]
    if len(scorers) > 1:
        found.append(
            f"{policy.source}: plugins {' and '.join(scorers)}: kube-scheduler's "
            "NodeResourcesFit scores one way; keep one of them"
        )
    wanted = fit_arguments(policy)
    for index, profile in enumerate(config.get("profiles") or [{}]):
        where = f"{source}: profiles.{index}"
        found += _fit_kept(profile, where)
        if wanted is not None:
            found += _fit_scored(profile, where, wanted, policy)
    found += _extender(config, policy, source)
    return found


def _fit_kept(profile: Mapping[str, Any], where: str) -> list[str]:
    plugins = profile.get("plugins") or {}
    found = []
    for point in ("preFilter", "filter", "multiPoint"):
        disabled = (plugins.get(point) or {}).get("disabled") or []
        if any(entry.get("name") in (FIT, "*") for entry in disabled):
            found.append(
                f"{where}.plugins.{point}.disabled: {FIT} must run: Lahar's filter leaves "
                "resource fit to kube-scheduler"
            )
    return found


def _fit_scored(
    profile: Mapping[str, Any], where: str, wanted: dict[str, Any], policy: Policy
) -> list[str]:
    configs = profile.get("pluginConfig") or []
    index, entry = next(
        ((i, c) for i, c in enumerate(configs) if c.get("name") == FIT), (None, None)
    )
    strategy = wanted["scoringStrategy"]
    if entry is None:
        return [
            f"{where}.pluginConfig: no {FIT} entry; {policy.source} asks for scoringStrategy "
            f"{strategy}"
        ]
    got = ((entry.get("args") or {}).get("scoringStrategy")) or {}
    at = f"{where}.pluginConfig.{index}.args.scoringStrategy"
    found = []
    if got.get("type") != strategy["type"]:
        found.append(
            f"{at}.type: {got.get('type')!r}, but {policy.source} asks for {strategy['type']!r}"
        )
    have = {r.get("name"): r.get("weight") for r in got.get("resources") or []}
    need = {r["name"]: r["weight"] for r in strategy["resources"]}
    if have != need:
        found.append(
            f"{at}.resources: weights {have}, but {policy.source} asks for {need} (the score "
            "plugin's resource weights)"
        )
    return found


def _extender(config: Mapping[str, Any], policy: Policy, source: str) -> list[str]:
    extenders = config.get("extenders") or []
    if len(extenders) != 1:
        return [f"{source}: extenders: expected Lahar's one extender, found {len(extenders)}"]
    extender = extenders[0]
    where = f"{source}: extenders.0"
    found = [
        f"{where}.{verb}: missing; Lahar needs it"
        for verb in ("filterVerb", "preemptVerb", "bindVerb")
        if not extender.get(verb)
    ]
    if extender.get("nodeCacheCapable") is not True:
        found.append(f"{where}.nodeCacheCapable: must be true (node names on the wire)")
    if extender.get("ignorable"):
        found.append(
            f"{where}.ignorable: must be false: an ignorable binder falls through to the default "
            "binder, which would bind gangs partly"
        )
    timeout = _seconds(extender.get("httpTimeout"), DEFAULT_HTTP_TIMEOUT)
    settings = policy.gang_settings
    if timeout is None:
        found.append(f"{where}.httpTimeout: not a duration: {extender.get('httpTimeout')!r}")
    elif settings is not None and timeout <= settings.barrier_timeout:
        found.append(
            f"{where}.httpTimeout: {timeout:g}s must be above gang.barrierTimeoutSeconds "
            f"({settings.barrier_timeout:g}s in {policy.source}): a bind waiting at the barrier "
            "must end first"
        )
    return found


def _seconds(value: object, default: float) -> float | None:
    if value is None:
        return default
    try:
        return parse_duration(str(value))
    except ValueError:
        return None
