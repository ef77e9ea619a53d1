"""The API server's requests by client component, for `benchmarks/e2e.py`: read from its audit log.

The API server's own counter of requests (`apiserver_request_total`) has no label for who asked.
Each component of the dev cluster has an identity of its own, but two pairs share one: Lahar's
extender runs beside its kube-scheduler with the scheduler's ServiceAccount (as in its pod), and
KWOK, the Coscheduling peer and the benchmark all use the admin user. Priority and fairness
(counting by FlowSchema) tells only users apart, and the dev cluster runs with it off. The audit
log names the user *and* the client's User-Agent of every request, which tells all of them apart:
the stock scheduler binary calls itself `kube-scheduler`, the peer `scheduler`, KWOK `kwok`, and
Lahar's Python clients their library.

What it costs the API server: one JSON line per request, at the `Metadata` level (no bodies),
written to a local file as the request completes (a watch when it starts), with every other stage
left out. That is a few microseconds against the milliseconds each pod costs it (the e2e report
can be run without it: `--no-audit`, and compare). The file is emptied when a run begins and read
when it ends, so it never grows past one run's requests.
"""

from __future__ import annotations

import datetime
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from extender.devcluster.lahar import CONTROLLER, EXTENDER, NAMESPACE, SCHEDULER, WEBHOOK

# One event per request: a watch's when it starts (it may outlive the run), any other's when it
# completes; Metadata, the lowest level that records anything, names the user and the agent.
POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Metadata", "verbs": ["watch"], "omitStages": ["ResponseComplete"]},
        {"level": "Metadata", "omitStages": ["ResponseStarted"]},
    ],
}
# The component behind each identity the dev cluster gives (see devcluster.cluster and .lahar);
# the names are those of the cluster's processes, as the CPU table prints them.
USERS = {
    "system:kube-scheduler": "kube-scheduler",
    "system:kube-controller-manager": "kube-controller-manager",
    "system:apiserver": "kube-apiserver",
    f"system:serviceaccount:{NAMESPACE}:{EXTENDER}": "lahar",  # the standalone form's
    f"system:serviceaccount:{NAMESPACE}:{CONTROLLER}": "lahar-controller",
    f"system:serviceaccount:{NAMESPACE}:{WEBHOOK}": "lahar-webhook",
}
# The identities two or more components share, told apart by the User-Agent's product.
SHARED = {
    f"system:serviceaccount:{NAMESPACE}:{SCHEDULER}": {"kube-scheduler": "lahar-scheduler"},
    "admin": {"kwok": "kwok", "scheduler": "coscheduling"},
}
SHARED_REST = {  # what the rest of a shared identity's requests come from
    f"system:serviceaccount:{NAMESPACE}:{SCHEDULER}": "lahar",  # the extender beside it
    "admin": "benchmark client",
}
CONTROLLERS = "system:serviceaccount:kube-system:"  # each controller of the controller manager


def component(user: str, agent: str) -> str:
    """The component that sent a request as `user` with User-Agent `agent`."""
    if user in USERS:
        return USERS[user]
    if user.startswith(CONTROLLERS):
        return "kube-controller-manager"
    if user in SHARED:
        product = agent.split("/", 1)[0]
        return SHARED[user].get(product, SHARED_REST[user])
    return f"{user} ({agent.split(' ', 1)[0]})"


@dataclass(frozen=True)
class AuditLog:
    """The audit log of the dev cluster's API server, in `folder`."""

    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / "audit.log"

    def flags(self) -> tuple[str, ...]:
        """The API server's flags for it (its policy file written): one plain file, never
        rotated (a size of 0), written as each request's event is made."""
        policy = self.folder / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(POLICY))
        return (
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.path}",
            "--audit-log-maxsize=0",
            "--audit-log-format=json",
        )

    def begin(self) -> str:
        """Empty the log (the API server appends to it) and return the moment as the log
        spells it: what `count` counts from."""
        os.truncate(self.path, 0)
        return now()

    def count(self, since: str, until: str) -> Counter[str]:
        """Requests received from `since` to `until` (`now()` then), by component."""
        counts: Counter[str] = Counter()
        with self.path.open("rb") as log:
            for line in log:
                event = json.loads(line)
                if not since <= event.get("requestReceivedTimestamp", "") < until:
                    continue  # in flight when the log was emptied, or after the end
                user = (event.get("user") or {}).get("username", "")
                counts[component(user, event.get("userAgent", ""))] += 1
        return counts


def now() -> str:
    """This moment as the audit log writes times (RFC 3339, UTC, microseconds): they sort as
    text."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
