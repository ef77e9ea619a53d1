"""Asking Cluster Autoscaler for a gang's nodes: the leader's provisioner carries out the plan
`gangs.provisioning` makes, one pass at a time.

A pass runs after a change that may move a gang's need for nodes (a gang refused anew, its pods or
PodGroup changed, a Queue changed, one of Lahar's ProvisioningRequests changed) and every
`interval` seconds (an ended request's next attempt comes due with no event). It brings the book
of what was asked (`gangs.scale_up.ScaleUps`) up to date from the requests the cache holds, then:

- creates, for each gang that wants nodes and has no request standing, the PodTemplates of its
  pod sets (each from one member as the API server has it) and then the ProvisioningRequest that
  names them (a name that exists already, made before a restart, is taken as made);
- deletes the requests whose gangs run, are gone or want nodes no more (their templates go with
  them: they are owned by the PodGroup and deleted by name too);
- annotates the pending members with the request they consume (and takes the annotation off when
  the request goes for a gang that still waits, so an autoscaler sees its pods again);
- tells the waker when a gang's request is Provisioned: the waker's passes admit such gangs onto
  the new capacity ahead of the fair order, before it lets anyone else in
  (`gangs.wanting`); Cluster Autoscaler says Provisioned once it asked the cloud for
  the nodes, so a gang that does not fit yet is tried again as nodes come.

A cluster that does not serve ProvisioningRequests (Cluster Autoscaler's CRD is not installed) gets
no request and no error: each gang that wants one says why none was made (its PodGroup condition,
`lahar explain`). A write that fails is logged and tried at the next pass. The cache lists Lahar's
requests before this replica serves, so a restarted extender finds the request it made before and
makes no second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from extender.api.log_fields import about, about_gang, about_pod
from extender.api.objects import Pod
from extender.api.provisioning import (
    API_VERSION,
    ATOMIC_CLASS,
    CLASS_ANNOTATION,
    CONSUME_ANNOTATION,
    KIND,
)
from extender.api.scale_up import Mode
from extender.api.scheduling import PodGroup
from extender.cache.events import (
    CapacityFreed,
    GangChanged,
    PodGroupChanged,
    ProvisioningRequestChanged,
    QueuesChanged,
)
from extender.cache.state import ClusterState
from extender.framework.engine import (
    Create,
    Delete,
    Engine,
    GangAdmitted,
    GangRejected,
    GangReleased,
    pod_sets,
    queue_modes,
    request_body,
    template_body,
    template_name,
    view_gang,
)
from extender.kube.raw import ApiStatusError

log = logging.getLogger(__name__)
NOT_SERVED = (
    "this cluster does not serve autoscaling.x-k8s.io/v1 ProvisioningRequests (Cluster "
    "Autoscaler installs the CRD; run it with --enable-provisioning-requests)"
)


class ScaleUpApi(Protocol):
    """The writes the provisioner makes (`kube.scale_up` on the extender's async client)."""

    async def create(self, body: Mapping[str, Any]) -> bool: ...

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str
    ) -> bool: ...

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def annotate(
        self, namespace: str, name: str, values: Mapping[str, str | None]
    ) -> None: ...


class Provisioner:
    def __init__(
        self,
        state: ClusterState,
        engine: Engine,
        api: ScaleUpApi,
        *,
        served: Callable[[], bool],
        changed: Callable[[str], None] = lambda key: None,
        provisioned: Callable[[], None] = lambda: None,
        ready: asyncio.Event | None = None,
        delay: float = 0.2,
        interval: float = 5.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`served`: whether the cluster serves ProvisioningRequests now; `changed(key)`: what
        the provisioner tells of gang `key` changed (its PodGroup's condition says it);
        `provisioned()`: a gang's request is Provisioned and it waits to be admitted (the
        waker's next pass admits it, `gangs.wanting`)."""
        assert engine.gang_rules  # (made only with the gang rules on)
        self.state, self.engine, self.api = state, engine, api
        self.served, self.changed, self.provisioned = served, changed, provisioned
        self.ready = ready
        self.delay, self.interval = delay, interval
        self.clock = clock or engine.clock  # (the engine's, unless told another)
        self._wake = asyncio.Event()
        self._annotated = False  # the last pass changed some pod's annotation
        self.on_created: Callable[[], None] = lambda: None
        self.on_deleted: Callable[[], None] = lambda: None

    def attach(self) -> None:
        """Listen to the gang rules and the state (call on the event loop)."""
        engine = self.engine
        engine.events.subscribe(GangRejected, lambda event: self.poke())
        engine.events.subscribe(GangAdmitted, lambda event: self.poke())
        engine.events.subscribe(GangReleased, lambda event: self.poke())
        self.state.events.subscribe(GangChanged, lambda event: self.poke())
        self.state.events.subscribe(PodGroupChanged, lambda event: self.poke())
        self.state.events.subscribe(QueuesChanged, lambda event: self.poke())
        self.state.events.subscribe(ProvisioningRequestChanged, lambda event: self.poke())
        # (capacity freed: the nodes of a Provisioned request joined)
        self.state.events.subscribe(CapacityFreed, lambda event: self.poke())

    def poke(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        if self.ready is not None:
            await self.ready.wait()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            await asyncio.sleep(self.delay)  # (what else happens meanwhile joins the pass)
            self._wake.clear()
            try:
                await self.step()
            except Exception:  # a bug must not end the provisioner: say so, try next pass
                log.exception("a pass of the provisioner failed; trying again at the next one")

    def _idle(self) -> bool:
        """Whether a pass has nothing to do (as shipped, every queue's mode `none`): no queue
        asks for ProvisioningRequests, none of Lahar's stands, the book says nothing and the
        last pass changed no pod's annotation. A pass reads every waiting gang and pod."""
        default = self.engine.gang_settings.scale_up.default
        asks = default is Mode.PROVISIONING_REQUEST or any(
            mode is Mode.PROVISIONING_REQUEST
            for mode in queue_modes(self.state.queues, default).values()
        )
        return not (
            asks or self.state.provisioning_requests or self.engine.asking() or self._annotated
        )

    async def step(self) -> None:
        """One pass: the book brought up to date, then the plan carried out (none while there
        is nothing to do)."""
        if self._idle():
            return
        engine, now = self.engine, self.clock()
        before = {key: engine.scale_up_said(key, now) for key in engine.refused()}
        done = engine.provisioning_plan(self.state, now)
        for deletion in done.delete:
            await self._delete(deletion)
        if done.create and not self.served():
            for made in done.create:
                engine.not_asked(made.gang, NOT_SERVED)
        else:
            for made in done.create:
                await self._create(made)
        for namespace, name, request in done.annotate:
            await self._annotate(namespace, name, request)
        self._annotated = bool(done.annotate)  # (the next pass sees them done, or redoes them)
        if done.admit:  # (the waker admits them onto the new nodes, before anyone else)
            self.provisioned()
        for key, said in before.items():
            if engine.scale_up_said(key, now) != said:
                self.changed(key)
        for made in done.create:
            self.changed(made.gang)

    async def _create(self, made: Create) -> None:
        gang = view_gang(self.state, made.gang)
        group = gang.group
        if group is None or not gang.pending:
            return
        try:
            sets = await self._templates(group, made.name, pod_sets(gang))
            if not sets:
                return
            created = await self.api.create(request_body(group, made.name, made.attempt, sets))
        except ApiStatusError as error:
            if error.status == 404:  # (the CRD went away between the watch and the write)
                self.engine.not_asked(made.gang, NOT_SERVED)
                return
            self.engine.not_asked(made.gang, f"creating it failed: {error}")
            log.warning(
                "gang %s: could not create ProvisioningRequest: %s",
                made.gang,
                error,
                extra=about_gang(made.gang),
            )
            return
        except Exception as error:  # an API hiccup: the next pass tries again
            self.engine.not_asked(made.gang, f"creating it failed: {error}")
            log.warning(
                "gang %s: could not create ProvisioningRequest: %s",
                made.gang,
                error,
                extra=about_gang(made.gang),
            )
            return
        total = sum(count for _, count in sets)
        found = self.state.provisioning_requests.get(f"{group.metadata.namespace}/{made.name}")
        if not created and (found is None or found.gang != made.gang):
            why = f"a ProvisioningRequest named {made.name} exists and is not this gang's"
            self.engine.not_asked(made.gang, why)
            log.warning("gang %s: %s", made.gang, why, extra=about_gang(made.gang))
            return
        if created:
            self.on_created()
            log.info(
                "gang %s: asked Cluster Autoscaler for the nodes of %d pods at once: "
                "ProvisioningRequest %s/%s (attempt %d)",
                made.gang,
                total,
                group.metadata.namespace,
                made.name,
                made.attempt,
                extra=about_gang(made.gang),
            )

    async def _templates(
        self, group: PodGroup, request: str, sets: list[tuple[Pod, int]]
    ) -> list[tuple[str, int]]:
        """Create the PodTemplate of each pod set (from one member as the API server has it);
        the (template name, count) of each made or found."""
        made: list[tuple[str, int]] = []
        for index, (member, count) in enumerate(sets):
            raw = await self.api.read_pod(member.metadata.namespace, member.metadata.name)
            if raw is None:  # (gone meanwhile: the next pass plans without it)
                return []
            name = template_name(request, index)
            await self.api.create(template_body(group, name, raw, request))
            made.append((name, count))
        return made

    async def _delete(self, deletion: Delete) -> None:
        request = deletion.request
        meta = request.metadata
        try:
            gone = await self.api.delete(API_VERSION, KIND, meta.namespace, meta.name, uid=meta.uid)
            for index, _ in enumerate(request.spec.pod_sets):
                template = request.spec.pod_sets[index].pod_template_ref.name
                if template:
                    await self.api.delete("v1", "PodTemplate", meta.namespace, template, uid="")
        except Exception as error:
            log.warning(
                "could not delete ProvisioningRequest %s: %s",
                request.key,
                error,
                extra=about("ProvisioningRequest", request.key, gang=request.gang),
            )
            return
        if gone:
            self.on_deleted()
            log.info(
                "deleted ProvisioningRequest %s of gang %s: %s",
                request.key,
                request.gang,
                deletion.why,
                extra=about("ProvisioningRequest", request.key, gang=request.gang),
            )

    async def _annotate(self, namespace: str, name: str, request: str | None) -> None:
        values: dict[str, str | None] = {CONSUME_ANNOTATION: request, CLASS_ANNOTATION: None}
        if request is not None:
            values[CLASS_ANNOTATION] = ATOMIC_CLASS
        try:
            await self.api.annotate(namespace, name, values)
        except Exception as error:  # a deleted pod, an API hiccup: the next pass tries again
            log.info(
                "could not annotate pod %s/%s: %s",
                namespace,
                name,
                error,
                extra=about_pod(f"{namespace}/{name}"),
            )
