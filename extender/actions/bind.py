"""The bind verb: create the pod's binding and count the pod on its node at once.

The pod is *assumed* on the node before the API call, so filters that run while the call is in
flight already see the capacity as taken (as kube-scheduler does); if the API refuses the binding,
the assumption is forgotten and the error goes back to the scheduler, which frees the pod's place
and retries it later.

Before assuming, the pod must still fit (`no_room`): kube-scheduler filters the next pod while the
previous one's binding is under way, and Lahar (the resource authority for its profiles) counts a
pod only at bind, so two pods can pass filter for the last room on a node. The second bind is
refused with the reason and the scheduler places that pod again. The binder is a function handed
in (the kube layer's `bind_pod` run in a thread, in the server), so this logic is tested without a
cluster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from extender.api.log_fields import about_pod
from extender.api.objects import Pod
from extender.api.wire import ExtenderBindingArgs, ExtenderBindingResult
from extender.cache.state import ClusterState
from extender.framework.status import insufficient

log = logging.getLogger(__name__)

Binder = Callable[[str, str, str, str], Awaitable[None]]  # namespace, name, uid, node


class BindError(Exception):
    """The binding was refused; the message says why (it goes back to the scheduler as is)."""


def no_room(state: ClusterState, pod: Pod, node: str) -> str | None:
    """Why `pod` no longer fits on `node` (room taken since it was filtered); None when it fits,
    counts there already, or the node is unknown (the API server decides then)."""
    if state.placed_on(pod.metadata.uid) == node:
        return None
    info = state.view().nodes.get(node)
    request = pod.request
    short = request.shortfall(info.free) if info is not None else None
    if info is None or short is None:
        return None
    why = insufficient(short, request[short], info.free.get(short, 0))
    return f"node {node} has no room left for pod {pod.key} since it was filtered: {why}"


async def bind(
    state: ClusterState, binder: Binder, args: ExtenderBindingArgs, *, note: str = ""
) -> ExtenderBindingResult:
    """Bind a pod that needs no barrier (outside a gang, or an extra member of a gang that
    stands): refused when it no longer fits, else counted on its node and bound."""
    pod = state.pods.get(args.pod_uid) if args.pod_uid else None
    if pod is None:
        note = " (not yet in Lahar's cache: counted when the watch shows it)"
    elif (why := no_room(state, pod, args.node)) is not None:
        log.info("refused to bind: %s", why, extra=about_pod(pod.key))
        return ExtenderBindingResult(error=why)
    else:
        state.assume(pod, args.node)
    return ExtenderBindingResult(error=await create_binding(state, binder, args, note=note))


async def create_binding(
    state: ClusterState, binder: Binder, args: ExtenderBindingArgs, *, note: str = ""
) -> str:
    """Create the binding of a pod already counted on its node: "" when made, else why not (the
    assumption is then dropped)."""
    key = f"{args.pod_namespace}/{args.pod_name}"
    started = time.monotonic()
    try:
        await binder(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
    except BindError as error:
        state.forget(args.pod_uid)
        log.warning(
            "bind of pod %s to node %s refused: %s", key, args.node, error, extra=about_pod(key)
        )
        return str(error)
    took = (time.monotonic() - started) * 1000
    # One line per pod at debug, as kube-scheduler logs its own binds only at -v=2: at hundreds
    # of pods a second the line cost more than the rest of the bind's Python.
    log.debug("bound pod %s to node %s in %.0f ms%s", key, args.node, took, note)
    return ""
