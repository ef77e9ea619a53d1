"""The scheduler names in the webhook configurations, kept to the ones this webhook serves.

The API server calls the pod webhook only for the pods its `matchConditions` let through, one of
which, `lahar-scheduler`, is `object.spec.schedulerName in [...]`. The shipped manifests say
`lahar` and `volcano`; `lahar webhook --scheduler-name` may say others, so the webhook writes its
own names there (sorted, so replicas given the same names in another order agree): at start and at
every certificate check (`--check-interval`), which also undoes a `kubectl apply` of the shipped
manifests within that interval. An operator who serves another profile gives the flag and nothing
else; the webhook's RBAC already allows reading and replacing its two configurations (it keeps
their caBundle). Only conditions of that name are rewritten, in whichever webhook has one: a
configuration without it (an operator's own) is left as it is, and the API server then calls the
webhook for every gang pod, which it leaves alone unless its scheduler is served (the rules check
the names too, so a condition not yet rewritten never lets the webhook act for another scheduler).
A replace that conflicts (another replica wrote the caBundle meanwhile) reads again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from kubernetes import client as k8s

from extender.admission.names import dns_subdomain
from extender.kube.client import KubeError
from extender.kube.raw import ApiStatusError
from extender.kube.webhooks import ADMISSION_REGISTRATION
from extender.kube.writes import get, replace

log = logging.getLogger(__name__)
CONDITION = "lahar-scheduler"  # the matchCondition naming the schedulers whose pods are sent
ATTEMPTS = 3  # reads and replaces of one configuration before a conflict is given up on


def expression(names: Iterable[str]) -> str:
    """The CEL expression admitting pods of the schedulers `names` (DNS subdomains: nothing in
    them needs quoting), sorted."""
    served = sorted(set(names))
    bad = [name for name in served if dns_subdomain(name) is not None]
    if not served or bad:
        raise ValueError(f"scheduler names must be DNS subdomains, at least one: got {bad}")
    quoted = ", ".join(f"'{name}'" for name in served)
    return f"object.spec.schedulerName in [{quoted}]"


def with_names(config: dict[str, Any], wanted: str) -> tuple[bool, int]:
    """Set every matchCondition `CONDITION` of the configuration's webhooks to `wanted` (in
    place); whether that changed it, and how many conditions it has of that name."""
    changed, found = False, 0
    for hook in config.get("webhooks") or []:
        for condition in hook.get("matchConditions") or []:
            if condition.get("name") != CONDITION:
                continue
            found += 1
            if condition.get("expression") != wanted:
                condition["expression"] = wanted
                changed = True
    return changed, found


class SchedulerNames:
    """Keeps the `CONDITION` of the `configurations` ((kind, name) pairs) to `names`."""

    def __init__(
        self, api: k8s.ApiClient, configurations: Sequence[tuple[str, str]], names: Iterable[str]
    ) -> None:
        self.api = api
        self.configurations = tuple(configurations)
        self.expression = expression(names)
        self.published = False  # the configurations carry these names (once, at least)
        self._said_none = False

    def publish(self) -> list[str]:
        """Write the names where they differ (blocking I/O); the configurations changed, as
        "kind name". Raises `KubeError` when a configuration is missing or cannot be written."""
        changed, found = [], 0
        for kind, name in self.configurations:
            wrote, count = self._publish(kind, name)
            found += count
            if wrote:
                changed.append(f"{kind} {name}")
        if changed:
            log.info(
                "%s: matchCondition %s set to %s", ", ".join(changed), CONDITION, self.expression
            )
        if not found and not self._said_none:
            log.info(
                "no webhook of %s has a matchCondition %s: the API server sends the gang pods of "
                "every scheduler, and the webhook leaves those of the others alone",
                ", ".join(f"{kind} {name}" for kind, name in self.configurations),
                CONDITION,
            )
            self._said_none = True
        self.published = True
        return changed

    def _publish(self, kind: str, name: str) -> tuple[bool, int]:
        for attempt in range(ATTEMPTS):
            config = get(self.api, ADMISSION_REGISTRATION, kind, "", name)
            if config is None:
                raise KubeError(
                    f"{kind} {name} not found: apply Lahar's webhook configurations first"
                )
            changed, found = with_names(config, self.expression)
            if not changed:
                return False, found
            try:
                replace(self.api, config)
            except ApiStatusError as error:
                if error.status != 409 or attempt == ATTEMPTS - 1:
                    raise
                continue  # (someone wrote it since it was read: read it again)
            return True, found
        raise AssertionError("unreachable")  # (the last attempt returns or raises)
