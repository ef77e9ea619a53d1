"""Lahar's provisioner on the simulated API server: the plan of `gangs.provisioning` (the one the
extender's `server/provisioner.py` carries out) carried out on the simulation's cluster state.

Each `step` brings the ledger's book of requests up to date and does what the plan says: deletes
the ProvisioningRequests whose gang runs, went or wants no nodes (and their PodTemplates), makes
one for each gang that wants nodes and has none standing (its PodTemplates first, each from one
member of a pod set, kept here as the API server would keep them), and admits through the
engine's door (`Engine.admit_provisioned`) the gangs whose request is Provisioned, the longest
provisioned first, each once it fits.
The plan's consume annotations on the members are not written: they keep a pod-by-pod autoscaler
from scaling up for pods a request stands for, and the simulated autoscaler never sees those pods
one by one anyway (Lahar's gate would hold them: `simulate.autoscaler`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.api.objects import Pod
from extender.api.provisioning import ProvisioningRequest
from extender.cache.state import ClusterState
from extender.framework.engine import (
    Create,
    Engine,
    pod_sets,
    request_body,
    template_name,
    view_gang,
)


class Provisioner:
    def __init__(self, state: ClusterState, engine: Engine) -> None:
        assert engine.gang_rules  # (made only with the gang rules on)
        self.state, self.engine = state, engine
        self.templates: dict[str, Pod] = {}  # namespace/name -> the member it was made from
        self.created = self.deleted = 0  # requests
        self.on_deleted: list[Callable[[str], None]] = []  # told the key of a request deleted

    def step(self, now: float) -> list[str]:
        """One pass of the provisioner; the gangs it admitted."""
        state = self.state
        done = self.engine.provisioning_plan(state, now)
        for deletion in done.delete:
            self._delete(deletion.request)
        for made in done.create:
            self._create(made)
        return self.engine.admit_provisioned(state)

    def next_attempt(self, now: float) -> float | None:
        """When the next attempt for a gang whose request ended may be made, after `now` (None:
        none waits for one): the real provisioner's periodic pass finds it then."""
        moments = [
            at
            for request in self.state.provisioning_requests.values()
            if request.gang is not None
            and (at := self.engine.retry_at(request.gang)) is not None
            and at > now
        ]
        return min(moments, default=None)

    def pods(self, request: ProvisioningRequest) -> list[Pod]:
        """The pods `request` stands for: each pod set's template, as many times as its count
        (none for a set whose template is missing)."""
        namespace = request.metadata.namespace
        found = []
        for pod_set in request.spec.pod_sets:
            template = self.templates.get(f"{namespace}/{pod_set.pod_template_ref.name}")
            if template is not None:
                found += [template] * pod_set.count
        return found

    def _create(self, made: Create) -> None:
        gang = view_gang(self.state, made.gang)
        group = gang.group
        if group is None or not gang.pending:
            return
        namespace = group.metadata.namespace
        sets = []
        for index, (member, count) in enumerate(pod_sets(gang)):
            name = template_name(made.name, index)
            self.templates[f"{namespace}/{name}"] = member
            sets.append((name, count))
        body = request_body(group, made.name, made.attempt, sets)
        self.state.upsert_provisioning_request(ProvisioningRequest.model_validate(body))
        self.created += 1

    def _delete(self, request: ProvisioningRequest) -> None:
        namespace = request.metadata.namespace
        for pod_set in request.spec.pod_sets:
            self.templates.pop(f"{namespace}/{pod_set.pod_template_ref.name}", None)
        if request.key in self.state.provisioning_requests:
            self.state.delete_provisioning_request(request.key)
            self.deleted += 1
            for callback in self.on_deleted:
                callback(request.key)
