"""`lahar explain JOB|PODGROUP|pod/NAME`: why a gang is where it is, in plain words.

By default from the API alone, so any user who may read the namespace can ask: the PodGroup's
phase and the condition Lahar's extender wrote (for a waiting gang, the summary of
`framework.explain`: the gang rules' reason, the backoff's end, the gangs with reservations,
what each kind of pending member lacks on the nodes, the queue's share against what it
deserves), and per pod its phase, node and what kube-scheduler last said of it. With
`--extender URL` it asks the extender's `/debug/explain` instead, live (the fair order's gangs
ahead of it, the seconds of backoff left); that needs the client certificate kube-scheduler
calls the extender with (`--cert`, `--key`; `--cacert` and `--tls-server-name` to check the
extender's certificate, e.g. through a port-forward).

NAME is a Job (its PodGroup is the one the controller made for it) or else a PodGroup;
`job/NAME` and `podgroup/NAME` say which. A Coscheduling or native PodGroup is named as kubectl
names it, `podgroups.scheduling.x-k8s.io/NAME` or `podgroups.scheduling.k8s.io/NAME`: the first
says why its gang waits in Events (its schema has no conditions), the latest Lahar recorded; the
second in Lahar's condition `lahar.io/GangScheduled`.

`pod/NAME` says which group the pod waits for, the field that names it and, when it names groups
in more than one field (a pod the webhook did not see), which field wins and why; then explains
that group. Explaining a group from the API also says which of the pods naming it wait for
another group instead, and which of its members name another one too (`framework.explain`'s
`group_naming`, which the extender's live answer carries as well).
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import ValidationError

from extender.api.batch import BATCH_API_VERSION, JOB_NAME_KEY
from extender.api.coscheduling import API_VERSION as COSCHEDULING_API
from extender.api.group_fields import FIELDS, Naming, pod_fields, split_key
from extender.api.native_groups import API_VERSION as NATIVE_API
from extender.api.native_groups import CONDITION as NATIVE_CONDITION
from extender.api.native_groups import lahars_condition
from extender.api.objects import Pod
from extender.api.scheduling import (
    API_VERSION,
    COSCHEDULING_LABEL,
    GANG_GATE,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    GroupKind,
)
from extender.cli import job_cmd, kubectl, rows
from extender.framework.explain import group_naming
from extender.kube import KubeError, list_objects, read, unschedulable_message

KINDS = {
    "pod": "Pod",
    "pods": "Pod",
    "po": "Pod",
    "job": "Job",
    "jobs": "Job",
    "podgroup": "PodGroup",
    "podgroups": "PodGroup",
    "pg": "PodGroup",
    GroupKind.COSCHEDULING.value: GroupKind.COSCHEDULING.value,
    GroupKind.NATIVE.value: GroupKind.NATIVE.value,
}
# The API version of each other kind of PodGroup, by its kubectl name.
OTHER_GROUPS = {
    GroupKind.COSCHEDULING.value: COSCHEDULING_API,
    GroupKind.NATIVE.value: NATIVE_API,
}
PodObject = dict[str, Any]
LAHAR_GATE = (
    f"held by Lahar's scheduling gate {GANG_GATE}: kube-scheduler tries them once Lahar lets "
    "the gang in"
)


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "explain", help="why a Job's, PodGroup's or pod's gang is pending, in plain words"
    )
    parser.add_argument(
        "name",
        help="JOB or PODGROUP (job/NAME, podgroup/NAME to say which; "
        "podgroups.scheduling.x-k8s.io/NAME or podgroups.scheduling.k8s.io/NAME for the other "
        "kinds of PodGroup; pod/NAME for the group a pod waits for)",
    )
    kubectl.add_connection_flags(parser, namespaced=True)
    parser.add_argument(
        "-o", "--output", choices=("text", "json", "yaml"), default="text", help="text (default)"
    )
    live = parser.add_argument_group("live, from the extender (needs its client certificate)")
    live.add_argument("--extender", metavar="URL", help="the extender, e.g. https://127.0.0.1:8443")
    live.add_argument("--cert", type=Path, help="client certificate file (PEM)")
    live.add_argument("--key", type=Path, help="its private key file (PEM)")
    live.add_argument("--cacert", type=Path, help="CA file that signed the extender's certificate")
    live.add_argument(
        "--tls-server-name",
        help="the name to check the extender's certificate against (e.g. "
        "lahar-extender.lahar-system.svc through a port-forward)",
    )
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    wanted, given = target(args.name)
    if wanted == "Pod":
        return _run_pod(args, given)
    return _explain(args, wanted, given, [])


def _explain(args: argparse.Namespace, wanted: str | None, given: str, asked: list[str]) -> int:
    """Explain the Job or PodGroup `given` (`asked`: what to say first of the pod asked about)."""
    if wanted in OTHER_GROUPS:
        return _run_other(args, GroupKind(wanted), given, asked)
    with kubectl.connect(args) as cluster:
        namespace = cluster.namespace
        job, name, group = _resolve(cluster, wanted, given)
        if job is not None:
            selector = f"{JOB_NAME_KEY}={job}"
            pods = list_objects(
                cluster.api, "v1", "Pod", namespace=namespace, label_selector=selector
            )
        else:
            pods = [
                pod
                for pod in list_objects(cluster.api, "v1", "Pod", namespace=namespace)
                if _annotation(pod, GROUP_ANNOTATION) == name
            ]
        naming = [] if args.extender else _naming(cluster, f"{namespace}/{name}", pods)
    if args.extender:
        extender = Extender(args.extender, args.cert, args.key, args.cacert, args.tls_server_name)
        lines = from_extender(extender, f"{namespace}/{name}")
        source = f"extender {args.extender}"
    else:
        lines = from_group(group) if group else ["no PodGroup yet: the controller makes it"]
        source = "PodGroup status written by Lahar's extender"
    phase = ((group or {}).get("status") or {}).get("phase") or "Pending"
    return _answer(
        args, f"{namespace}/{name}", job, phase, source, lines, pods, asked=asked, naming=naming
    )


def _run_pod(args: argparse.Namespace, name: str) -> int:
    """`lahar explain pod/NAME`: the group the pod waits for and why, then that group's
    explanation (or, when that group does not exist, that it waits until it is made)."""
    with kubectl.connect(args) as cluster:
        namespace = cluster.namespace
        found = read(cluster.api, "v1", "Pod", name, namespace)
        if found is None:
            raise KubeError(f"Pod {namespace}/{name} not found")
        try:
            naming = pod_fields(Pod.model_validate(found))
        except ValidationError as error:
            raise KubeError(f"pod {namespace}/{name} does not read as a pod: {error}") from None
        if not naming:
            ways = ", ".join(field.said for field in FIELDS)
            raise KubeError(
                f"pod {namespace}/{name} names no PodGroup (by {ways}): it is placed alone"
            )
        field, group = naming[0]
        exists = _exists(cluster, field.kind.key(namespace, group))
    asked = pod_group_lines(f"{namespace}/{name}", naming, exists=exists)
    if exists:
        wanted = "PodGroup" if field.kind is GroupKind.VOLCANO else field.kind.value
        return _explain(args, wanted, group, asked)
    key = field.kind.key(namespace, group)
    return _answer(args, key, None, "NotFound", f"pod {namespace}/{name}", [], [found], asked=asked)


def pod_group_lines(pod: str, naming: Naming, *, exists: bool = True) -> list[str]:
    """What `lahar explain pod/NAME` says first: the group the pod waits for, by which field,
    and, when it names groups in more than one, which field wins and why (pure)."""
    namespace = pod.partition("/")[0]
    (field, group), *others = naming
    line = (
        f"pod {pod} waits for the {field.kind_name} {namespace}/{group}, named by its {field.said}"
    )
    if others:
        lost = " and ".join(
            f"its {other.said} naming the {other.kind_name} {namespace}/{named}"
            for other, named in others
        )
        ways = ", ".join(f.short for f in FIELDS[:-1]) + f" or {FIELDS[-1].short}"
        line += (
            f", which wins over {lost}: a pod joins one PodGroup, the one named by the first of "
            f"{ways} it carries (the webhook refuses a pod that names two)"
        )
    lines = [line]
    if not exists:
        missing = f"the {field.kind_name} {namespace}/{group} does not exist"
        lines.append(f"{missing}: the pod waits until it is made")
    return lines


def _naming(cluster: kubectl.Connection, key: str, pods: list[PodObject]) -> list[str]:
    """What the pods naming gang `key`'s group say of it when they name another group too
    (`group_naming`); a pod that does not read as one is left out."""
    read_pods = []
    for pod in pods:
        try:
            read_pods.append(Pod.model_validate(pod))
        except ValidationError:
            continue
    return group_naming(key, read_pods, lambda other: _exists(cluster, other))


def _exists(cluster: kubectl.Connection, key: str) -> bool:
    """Whether the group of gang `key` exists (True when that cannot be read: not said missing)."""
    namespace, kind, name = split_key(key)
    try:
        return read(cluster.api, kind.api_version, "PodGroup", name, namespace) is not None
    except KubeError:
        return True


def _run_other(args: argparse.Namespace, kind: GroupKind, name: str, asked: list[str]) -> int:
    """`lahar explain` of a Coscheduling or native PodGroup."""
    api_version = OTHER_GROUPS[kind.value]
    with kubectl.connect(args) as cluster:
        namespace = cluster.namespace
        group = read(cluster.api, api_version, "PodGroup", name, namespace)
        if group is None:
            raise KubeError(f"{kind.value} {namespace}/{name} not found")
        if kind is GroupKind.COSCHEDULING:
            selector = f"{COSCHEDULING_LABEL}={name}"
            pods = list_objects(
                cluster.api, "v1", "Pod", namespace=namespace, label_selector=selector
            )
            said = _latest_warning(cluster, group)
        else:
            pods = [
                pod
                for pod in list_objects(cluster.api, "v1", "Pod", namespace=namespace)
                if ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
                == name
            ]
            said = None
        key = kind.key(namespace, name)
        naming = [] if args.extender else _naming(cluster, key, pods)
    if args.extender:
        extender = Extender(args.extender, args.cert, args.key, args.cacert, args.tls_server_name)
        lines = from_extender(extender, key)
        source = f"extender {args.extender}"
    elif kind is GroupKind.COSCHEDULING:
        lines = from_coscheduling_group(group, said)
        source = "PodGroup status and the Events Lahar's extender recorded"
    else:
        lines = from_native_group(group)
        source = f"condition {NATIVE_CONDITION} written by Lahar's extender"
    phase = _other_phase(kind, group)
    return _answer(args, key, None, phase, source, lines, pods, asked=asked, naming=naming)


def _answer(  # noqa: PLR0917 (the fields of the answer)
    args: argparse.Namespace,
    gang: str,
    job: str | None,
    phase: str,
    source: str,
    lines: list[str],
    pods: list[PodObject],
    *,
    asked: list[str],
    naming: list[str] | None = None,
) -> int:
    """Print the answer as asked (`text`, or the JSON or YAML of its fields): `asked`, what is
    said of the pod asked about (`pod/NAME`), `naming` what the pods naming the group say of it
    when they name another group too."""
    answer = {
        "pod": asked,
        "gang": gang,
        "job": job,
        "phase": phase,
        "source": source,
        "lines": lines,
        "naming": naming or [],
        "pods": [pod_row(p) for p in sorted(pods, key=lambda p: p["metadata"]["name"])],
    }
    if args.output == "text":
        print("\n".join(text(answer)))
    else:
        print(kubectl.dump(answer, args.output))
    return 0


def _latest_warning(cluster: kubectl.Connection, group: dict[str, Any]) -> dict[str, Any] | None:
    """The latest Warning event recorded about the group (why its gang waits)."""
    meta = group["metadata"]
    fields = f"involvedObject.name={meta['name']},involvedObject.kind=PodGroup,type=Warning"
    found = [
        event
        for event in list_objects(
            cluster.api, "v1", "Event", namespace=meta["namespace"], field_selector=fields
        )
        if (event.get("involvedObject") or {}).get("uid") == meta.get("uid")
    ]
    return max(found, key=_event_time, default=None)


def _event_time(event: dict[str, Any]) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or "")


def _other_phase(kind: GroupKind, group: dict[str, Any]) -> str:
    status = group.get("status") or {}
    if kind is GroupKind.COSCHEDULING:
        return str(status.get("phase") or "Pending")
    condition = lahars_condition(group.get("status") or {})
    if condition is None:
        return "Pending"
    return "GangScheduled" if condition.get("status") == "True" else "Waiting"


def from_coscheduling_group(group: dict[str, Any], said: dict[str, Any] | None) -> list[str]:
    """What a Coscheduling PodGroup shows: its phase and counts, and the latest Warning event
    Lahar recorded about it, split into its sentences."""
    status, spec = group.get("status") or {}, group.get("spec") or {}
    queue = ((group.get("metadata") or {}).get("annotations") or {}).get(
        QUEUE_ANNOTATION, "default"
    )
    lines = [
        f"phase {status.get('phase') or 'Pending'}: {status.get('running') or 0} running, "
        f"{status.get('succeeded') or 0} succeeded, {status.get('failed') or 0} failed of "
        f"minMember {spec.get('minMember') or 0} (queue {queue})"
    ]
    if said is None:
        return [*lines, "no Warning event about it: nothing has kept its gang waiting yet"]
    lines.append(f"{said.get('reason')} at {_event_time(said) or '?'}:")
    message = str(said.get("message") or "")
    return lines + ["  " + part for part in message.split(". ") if part]


def from_native_group(group: dict[str, Any]) -> list[str]:
    """What a native PodGroup shows: its gang policy and Lahar's condition."""
    policy = (group.get("spec") or {}).get("schedulingPolicy") or {}
    gang = policy.get("gang")
    queue = ((group.get("metadata") or {}).get("annotations") or {}).get(
        QUEUE_ANNOTATION, "default"
    )
    minimum = f"gang minCount {gang.get('minCount')}" if gang else "basic (each pod alone)"
    lines = [f"{minimum} (queue {queue})"]
    condition = lahars_condition(group.get("status") or {})
    if condition is None:
        return [*lines, "no condition yet: Lahar has not been asked about its pods"]
    lines.append(
        f"{NATIVE_CONDITION}={condition.get('status')} ({condition.get('reason') or '-'}) "
        f"since {condition.get('lastTransitionTime') or '?'}:"
    )
    message = str(condition.get("message") or "")
    return lines + ["  " + part for part in message.split(". ") if part]


def target(given: str) -> tuple[str | None, str]:
    """The kind asked for (Job, PodGroup, Pod, or None: Job or PodGroup) and the name, from NAME,
    job/NAME, podgroup/NAME or pod/NAME; refused before any call when it names no object."""
    kind, _, name = given.rpartition("/")
    if kind and kind.lower() not in KINDS:
        raise KubeError(f"{given}: expected JOB, PODGROUP, job/NAME, podgroup/NAME or pod/NAME")
    try:
        kubectl.object_name(name)
    except argparse.ArgumentTypeError as error:
        raise KubeError(f"{given}: {error}") from None
    return (KINDS[kind.lower()] if kind else None), name


def _resolve(
    cluster: kubectl.Connection, wanted: str | None, name: str
) -> tuple[str | None, str, dict[str, Any] | None]:
    """The Job's name (None for a PodGroup named alone), the PodGroup's name and the PodGroup
    (None while the controller has not made it)."""
    namespace = cluster.namespace
    if wanted == "Job":
        return (name, *job_cmd.group_of(cluster, job_cmd.read_job(cluster, name)))
    if wanted is None:
        job = read(cluster.api, BATCH_API_VERSION, "Job", name, namespace)
        if job is not None:
            return (name, *job_cmd.group_of(cluster, job))
    group = read(cluster.api, API_VERSION, "PodGroup", name, namespace)
    if group is None:
        what = "PodGroup" if wanted else "Job or PodGroup"
        raise KubeError(f"{what} {namespace}/{name} not found")
    return None, name, group


def from_group(group: dict[str, Any]) -> list[str]:
    """What the PodGroup's status says: its phase, counts and latest condition, the summary
    split back into its sentences."""
    status = group.get("status") or {}
    spec = group.get("spec") or {}
    lines = [
        f"phase {status.get('phase') or 'Pending'}: {status.get('running') or 0} running, "
        f"{status.get('succeeded') or 0} succeeded, {status.get('failed') or 0} failed of "
        f"minMember {spec.get('minMember') or 0} (queue {spec.get('queue') or 'default'})"
    ]
    condition = rows.last_condition(group)
    if condition is None:
        return [*lines, "no condition yet: Lahar has not been asked about its pods"]
    lines.append(
        f"{condition.get('type')}={condition.get('status')} ({condition.get('reason') or '-'}) "
        f"since {condition.get('lastTransitionTime') or '?'}:"
    )
    message = condition.get("message") or ""
    return lines + ["  " + part for part in message.split(". ") if part]


@dataclass(frozen=True)
class Extender:
    """Where the live answer comes from, and the TLS to reach it with."""

    url: str
    cert: Path | None = None
    key: Path | None = None
    ca: Path | None = None
    server_name: str | None = None  # the name its certificate carries, when the URL's is not


def from_extender(extender: Extender, gang: str) -> list[str]:
    """The extender's live explanation of `gang` (its `/debug/explain`)."""
    url = extender.url.rstrip("/")
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise KubeError(f"--extender {url}: expected an http:// or https:// URL")
    if extender.key is not None and extender.cert is None:
        raise KubeError("--key needs --cert (the client certificate it belongs to)")
    try:
        context = ssl.create_default_context(cafile=str(extender.ca) if extender.ca else None)
        if extender.cert is not None:
            context.load_cert_chain(extender.cert, extender.key)
    except (OSError, ssl.SSLError) as error:
        raise KubeError(f"--cert/--key/--cacert: {error}") from error
    address = f"{url}/debug/explain?{urllib.parse.urlencode({'gang': gang})}"
    try:
        return asyncio.run(_get(address, context, extender.server_name))
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        raise KubeError(f"{address}: {error or type(error).__name__}") from error


async def _get(address: str, context: ssl.SSLContext, server_name: str | None) -> list[str]:
    timeout = aiohttp.ClientTimeout(total=10)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(address, ssl=context, server_hostname=server_name) as reply,
    ):
        if reply.status != 200:
            raise KubeError(f"{address}: HTTP {reply.status}: {(await reply.text()).strip()}")
        answer = await reply.json()
    return [str(line) for line in answer.get("lines") or []]


def pod_row(pod: PodObject) -> dict[str, str]:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    gates = {gate.get("name") for gate in spec.get("schedulingGates") or []}
    return {
        "name": pod["metadata"]["name"],
        "phase": status.get("phase") or "Pending",
        "node": spec.get("nodeName") or "<none>",
        "scheduler": unschedulable_message(pod) or "",
        "gated": ", ".join(sorted(str(g) for g in gates)),
    }


def text(answer: dict[str, Any]) -> list[str]:
    """The lines `lahar explain` prints (pure)."""
    job = f" (Job {answer['job']})" if answer["job"] else ""
    lines = [*answer.get("pod", ()), f"PodGroup {answer['gang']}{job}: {answer['phase']}"]
    if answer["lines"]:
        lines.append(f"From the {answer['source']}:")
        lines += ["  " + line for line in answer["lines"]]
    lines += answer.get("naming", ())
    pods = answer["pods"]
    if not pods and answer["job"] and answer["phase"] in ("", "Pending"):
        lines.append("No pods yet: the Job's controller creates them once Lahar admits the gang")
    if pods:
        lines.append("Pods:")
        cells = [[p["name"], p["phase"], p["node"]] for p in pods]
        lines += [
            "  " + line for line in kubectl.table(("NAME", "PHASE", "NODE"), cells).split("\n")
        ]
    said: dict[str, list[str]] = {}
    for pod in pods:
        if pod["scheduler"]:
            said.setdefault(pod["scheduler"], []).append(pod["name"])
    for message, names in said.items():
        lines.append(f"kube-scheduler of {_few(names)}: {message}")
    held: dict[str, list[str]] = {}
    for pod in pods:
        if pod.get("gated"):
            held.setdefault(pod["gated"], []).append(pod["name"])
    for gates, names in held.items():
        why = LAHAR_GATE if gates == GANG_GATE else f"held by scheduling gates {gates}"
        lines.append(f"{_few(names)}: {why}")
    return lines


def _few(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"


def _annotation(obj: dict[str, Any], key: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None
