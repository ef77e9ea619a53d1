"""Reading a plugin's policy arguments: typed, with defaults, and strict about unknown keys.

Errors are `ValueError("<key>: <reason>")`; the policy loader prefixes the file and the plugin's
place, so a user reads `policy/lahar.yaml: tiers.1.plugins.0.arguments.binpack.cpu: must be ...`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from extender.framework.plugin import Argument


def reject_unknown(arguments: Mapping[str, Argument], known: Iterable[str], plugin: str) -> None:
    allowed = set(known)
    for key in arguments:
        if key not in allowed:
            listed = ", ".join(sorted(allowed)) or "none"
            raise ValueError(f"{key}: unknown argument of plugin {plugin} (known: {listed})")


def weight(arguments: Mapping[str, Argument], key: str, default: int = 1) -> int:
    """A whole number ≥ 0 (Volcano's weights are integers)."""
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key}: must be a whole number >= 0, got {value!r}")
    return value


def resource_weights(arguments: Mapping[str, Argument], prefix: str) -> dict[str, int]:
    """Volcano-style resource weights: `<p>.cpu`, `<p>.memory`, and extended resources listed in
    `<p>.resources` ("nvidia.com/gpu, example.com/fpga") each weighted by `<p>.resources.<name>`."""
    weights = {
        "cpu": weight(arguments, f"{prefix}.cpu"),
        "memory": weight(arguments, f"{prefix}.memory"),
    }
    listed = arguments.get(f"{prefix}.resources", "")
    if not isinstance(listed, str):
        raise ValueError(f"{prefix}.resources: must be a comma-separated list of resource names")
    for name in (part.strip() for part in listed.split(",")):
        if name:
            weights[name] = weight(arguments, f"{prefix}.resources.{name}")
    return weights


def scorer_arguments(arguments: Mapping[str, Argument], prefix: str) -> tuple[int, dict[str, int]]:
    """A Volcano-style score plugin's arguments, checked: `<p>.weight` and its resource weights
    (`<p>.cpu`, `<p>.memory`, `<p>.resources` and one `<p>.resources.<name>` per listed name)."""
    weights = resource_weights(arguments, prefix)
    known = {f"{prefix}.{key}" for key in ("weight", "cpu", "memory", "resources")}
    known.update(f"{prefix}.resources.{name}" for name in weights if name not in ("cpu", "memory"))
    reject_unknown(arguments, known, prefix)
    return weight(arguments, f"{prefix}.weight"), weights


def words(arguments: Mapping[str, Argument], key: str, default: str) -> list[str]:
    """A list of words: comma-separated ("preempt, reclaim"), or a YAML list of them."""
    value = arguments.get(key, default)
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, list):
        raise ValueError(f"{key}: must be a comma-separated list of words, got {value!r}")
    return [part.strip() for part in parts if part.strip()]


def seconds(arguments: Mapping[str, Argument], key: str, default: float) -> float:
    """A number of seconds > 0."""
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{key}: must be a number of seconds > 0, got {value!r}")
    return float(value)
