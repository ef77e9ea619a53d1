"""Small reads and waits on pods for tests against the dev cluster."""

from __future__ import annotations

from typing import Any

from extender.kube import pod_when

__all__ = ["phase", "pod_when"]


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", ""))
