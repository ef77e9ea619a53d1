"""`lahar job list|view|suspend|resume|delete`: Volcano Jobs, as vcctl handles them.

suspend and resume create the Command `vcctl job suspend|resume` creates (AbortJob, ResumeJob);
the controller performs it and deletes it. view shows the job, its state with the reason and
message (why it failed, or why its pods cannot be created), its tasks, its PodGroup's latest
condition (why it waits, in the scheduler's words) and its pods.
"""

from __future__ import annotations

import argparse
import secrets
from typing import Any

from extender.api.batch import BATCH_API_VERSION, BUS_API_VERSION, JOB_NAME_KEY
from extender.api.scheduling import API_VERSION as SCHEDULING_API_VERSION
from extender.cli import kubectl, rows
from extender.kube import KubeError, delete, list_objects, read
from extender.kube.writes import create

ACTIONS = {"suspend": "AbortJob", "resume": "ResumeJob"}


def register(commands: Any) -> None:
    parser = commands.add_parser("job", help="list, view, suspend, resume or delete Volcano Jobs")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    kubectl.add_list(
        verbs, _list, help="the Jobs of a namespace (-A: of every namespace)", namespaced=True
    )
    view = verbs.add_parser("view", help="one Job: status, tasks, why it waits, its pods")
    kubectl.add_name(view)
    kubectl.add_connection_flags(view, namespaced=True)
    kubectl.add_output_flag(view)
    view.set_defaults(run=_view)
    for verb, action in ACTIONS.items():
        acting = verbs.add_parser(verb, help=f"{verb} a Job (a Command with action {action})")
        kubectl.add_name(acting)
        kubectl.add_connection_flags(acting, namespaced=True)
        acting.set_defaults(run=_command, action=action)
    deleting = verbs.add_parser("delete", help="delete a Job (its pods and PodGroup go with it)")
    kubectl.add_name(deleting)
    kubectl.add_connection_flags(deleting, namespaced=True)
    deleting.set_defaults(run=_delete)


def _list(args: argparse.Namespace) -> int:
    return kubectl.print_list(args, BATCH_API_VERSION, "Job", rows.job_headers, rows.job_row)


def read_job(cluster: kubectl.Connection, name: str) -> dict[str, Any]:
    job = read(cluster.api, BATCH_API_VERSION, "Job", name, cluster.namespace)
    if job is None:
        raise KubeError(f"Job {cluster.namespace}/{name} not found")
    return job


def group_of(cluster: kubectl.Connection, job: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The name of the Job's PodGroup (as the controller names it) and the PodGroup, if made."""
    name = f"{job['metadata']['name']}-{job['metadata']['uid']}"
    return name, read(cluster.api, SCHEDULING_API_VERSION, "PodGroup", name, cluster.namespace)


def _view(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        job = read_job(cluster, args.name)
        _, group = group_of(cluster, job)
        pods = list_objects(
            cluster.api,
            "v1",
            "Pod",
            namespace=cluster.namespace,
            label_selector=f"{JOB_NAME_KEY}={args.name}",
        )
    if args.output in ("json", "yaml"):
        print(kubectl.dump(kubectl.clean(job), args.output))
        return 0
    print("\n".join(describe(job, group, pods)))
    return 0


def describe(
    job: dict[str, Any], group: dict[str, Any] | None, pods: list[dict[str, Any]]
) -> list[str]:
    """The lines `lahar job view` prints (pure)."""
    meta, spec, status = job["metadata"], job.get("spec") or {}, job.get("status") or {}
    state = status.get("state") or {}
    lines = [
        f"Name:          {meta['name']}",
        f"Namespace:     {meta.get('namespace', '')}",
        f"Queue:         {spec.get('queue') or 'default'}",
        f"Scheduler:     {spec.get('schedulerName') or '-'}",
        f"Min available: {spec.get('minAvailable') or 0}",
        f"Status:        {state.get('phase') or 'Pending'}"
        + (f" ({state['reason']})" if state.get("reason") else ""),
        *([f"Message:       {state['message']}"] if state.get("message") else []),
        f"Pods:          {status.get('pending') or 0} pending, {status.get('running') or 0} "
        f"running, {status.get('succeeded') or 0} succeeded, {status.get('failed') or 0} failed",
        f"Retries:       {status.get('retryCount') or 0} (version {status.get('version') or 0})",
        "Tasks:",
    ]
    for task in spec.get("tasks") or []:
        lines.append(f"  {task.get('name')}: {task.get('replicas', 0)} replicas")
    if group is not None:
        condition = rows.last_condition(group)
        phase = (group.get("status") or {}).get("phase") or "Pending"
        lines.append(f"PodGroup:      {group['metadata']['name']} ({phase})")
        if condition is not None:
            lines.append(
                f"  {condition.get('type')}={condition.get('status')} "
                f"{condition.get('reason') or ''}: {condition.get('message') or ''}".rstrip()
            )
    if pods:
        lines.append("Pod list:")
        table = [
            [
                p["metadata"]["name"],
                (p.get("status") or {}).get("phase") or "-",
                (p.get("spec") or {}).get("nodeName") or "<none>",
            ]
            for p in sorted(pods, key=lambda p: p["metadata"]["name"])
        ]
        lines += [
            "  " + line for line in kubectl.table(("NAME", "PHASE", "NODE"), table).split("\n")
        ]
    return lines


def _command(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        job = read_job(cluster, args.name)
        target = {
            "apiVersion": BATCH_API_VERSION,
            "kind": "Job",
            "name": args.name,
            "uid": job["metadata"]["uid"],
        }
        name = f"{args.name}-{args.action.lower()}-{secrets.token_hex(3)}"
        body = {
            "apiVersion": BUS_API_VERSION,
            "kind": "Command",
            "metadata": {
                "name": name,
                "namespace": cluster.namespace,
                "ownerReferences": [{**target, "controller": True}],
            },
            "target": target,
            "action": args.action,
        }
        create(cluster.api, body)
    print(f"job {cluster.namespace}/{args.name}: {args.action} requested (Command {name})")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        if not delete(cluster.api, BATCH_API_VERSION, "Job", args.name, cluster.namespace):
            raise KubeError(f"Job {cluster.namespace}/{args.name} not found")
    print(f"job {cluster.namespace}/{args.name} deleted")
    return 0
