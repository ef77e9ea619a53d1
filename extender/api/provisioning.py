"""Cluster Autoscaler's ProvisioningRequest (`autoscaling.x-k8s.io/v1`), as Lahar writes and reads
it to ask for the nodes a whole gang needs.

A ProvisioningRequest names pod sets (a PodTemplate in its namespace and a count); the class
`best-effort-atomic-scale-up.autoscaling.x-k8s.io` asks Cluster Autoscaler for all of the nodes
they need, or none. Cluster Autoscaler answers in conditions: `Accepted`; `Provisioned` True once
it found the capacity or asked the cloud for all of it (the nodes come a little later), False
while it finds none (`CapacityIsNotFound`: it tries again by itself); the capacity is then booked
for the consuming pods for a while (10 minutes by default), ending with `BookingExpired`
(`CapacityBookingConsumed` once they are all scheduled); `Failed` (its pod templates missing,
for one); `CapacityRevoked`. Pods that consume a request carry its name and
class in annotations, so Cluster Autoscaler neither scales up for them one by one nor counts them
twice. The CRD is Cluster Autoscaler's (installed with it, served with
`--enable-provisioning-requests`); a cluster without it has no requests, and Lahar says so.

Lahar labels the requests and PodTemplates it makes (`MANAGED_BY`: its informer watches only
those) and annotates them with the gang they are for and the attempt. Pure.

The same concept at higher layers: `gangs.provisioning`, the plan of the requests a gang's scale-up
needs, and `kube.scale_up`, their writes.
"""

from __future__ import annotations

from pydantic import Field

from extender.api.model import KubeModel
from extender.api.objects import ObjectMeta

GROUP = "autoscaling.x-k8s.io"
API_VERSION = f"{GROUP}/v1"
KIND = "ProvisioningRequest"
RESOURCE = "provisioningrequests"
ATOMIC_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CONSUME_ANNOTATION = f"{GROUP}/consume-provisioning-request"
CLASS_ANNOTATION = f"{GROUP}/provisioning-class-name"
# Conditions Cluster Autoscaler sets.
ACCEPTED = "Accepted"
PROVISIONED = "Provisioned"
FAILED = "Failed"
BOOKING_EXPIRED = "BookingExpired"
CAPACITY_REVOKED = "CapacityRevoked"
ENDED = (FAILED, BOOKING_EXPIRED, CAPACITY_REVOKED)  # a request that will not serve any more
# What Lahar puts on what it makes.
MANAGED_BY = ("app.kubernetes.io/managed-by", "lahar")
GANG_ANNOTATION = "lahar.io/gang"
ATTEMPT_ANNOTATION = "lahar.io/attempt"


class RequestCondition(KubeModel):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


class PodTemplateRef(KubeModel):
    name: str = ""


class PodSet(KubeModel):
    pod_template_ref: PodTemplateRef = PodTemplateRef()
    count: int = 0


class ProvisioningRequestSpec(KubeModel):
    provisioning_class_name: str = ""
    pod_sets: list[PodSet] = Field(default_factory=list)
    parameters: dict[str, str] = Field(default_factory=dict)


class ProvisioningRequestStatus(KubeModel):
    conditions: list[RequestCondition] = Field(default_factory=list)


class ProvisioningRequest(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: ProvisioningRequestSpec = ProvisioningRequestSpec()
    status: ProvisioningRequestStatus = ProvisioningRequestStatus()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def gang(self) -> str | None:
        """The key of the gang Lahar made it for (None: not one of Lahar's)."""
        return self.metadata.annotations.get(GANG_ANNOTATION)

    @property
    def attempt(self) -> int:
        text = self.metadata.annotations.get(ATTEMPT_ANNOTATION, "1")
        return int(text) if text.isdigit() else 1

    def condition(self, kind: str) -> RequestCondition | None:
        """The condition of type `kind` when its status is True (None: not so)."""
        for condition in self.status.conditions:
            if condition.type == kind and condition.status == "True":
                return condition
        return None

    @property
    def said(self) -> str:
        """What the autoscaler says of where it stands: "reason: message" of the phase's
        condition (while Accepted, of a Provisioned condition that is False: why no capacity
        was found yet); "" for nothing to say."""
        phase = self.phase
        if phase == ACCEPTED:
            found = next(
                (
                    c
                    for c in self.status.conditions
                    if c.type == PROVISIONED and c.status == "False"
                ),
                None,
            )
        else:
            found = self.condition(phase)
        if found is None:
            return ""
        return ": ".join(part for part in (found.reason, found.message) if part)

    @property
    def phase(self) -> str:
        """Where it stands: the last of its True conditions in the order they come (an ending
        one first, then Provisioned, then Accepted), else "Pending"."""
        for kind in (*ENDED, PROVISIONED, ACCEPTED):
            if self.condition(kind) is not None:
                return kind
        return "Pending"
