"""Helpers for end-to-end tests of Volcano Jobs: submit, read back, wait for a phase or for running
pods, tell whether a controller leads, restart the controller (pods are ended with `gangs.finish`
or `end_pod`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from extender import devcluster
from extender.api.batch import BATCH_API_VERSION, JOB_NAME_KEY
from extender.devcluster.lahar import wait_ready
from extender.kube import apply_object, list_objects, read, wait_until
from tests.e2e.conftest import controller_leads

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONTROLLER = "lahar-controller"


def example(name: str, namespace: str) -> dict[str, Any]:
    """A Job from `examples/`, unchanged but for the namespace it is submitted to."""
    body: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    body["metadata"]["namespace"] = namespace
    return body


def submit(api: k8s.ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    return apply_object(api, body)


def job(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return read(api, BATCH_API_VERSION, "Job", name, namespace) or {}


def status(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = job(api, namespace, name).get("status") or {}
    return found


def phase_of(api: k8s.ApiClient, namespace: str, name: str) -> str:
    return str((status(api, namespace, name).get("state") or {}).get("phase", ""))


def wait_job(
    api: k8s.ApiClient, namespace: str, name: str, phase: str, *, timeout: float = 60
) -> dict[str, Any]:
    """Wait until Job `name` is in `phase`; its status."""
    found: dict[str, Any] = wait_until(
        lambda: (
            s
            if ((s := status(api, namespace, name)).get("state") or {}).get("phase") == phase
            else None
        ),
        timeout=timeout,
        what=f"Job {namespace}/{name} to be {phase}",
        describe=lambda: f"status: {status(api, namespace, name)}",
    )
    return found


def pods(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    """The Job's pods (by the label the controller puts on them), by name."""
    listed = list_objects(
        api, "v1", "Pod", namespace=namespace, label_selector=f"{JOB_NAME_KEY}={name}"
    )
    return {p["metadata"]["name"]: p for p in listed}


def running(api: k8s.ApiClient, namespace: str, name: str, count: int) -> dict[str, dict[str, Any]]:
    """Wait until `count` of the Job's pods run (bound, not terminating); those pods."""

    def check() -> dict[str, dict[str, Any]] | None:
        found = {
            n: p
            for n, p in pods(api, namespace, name).items()
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        }
        return found if len(found) == count else None

    result: dict[str, dict[str, Any]] = wait_until(
        check,
        timeout=60,
        what=f"{count} pods of Job {namespace}/{name} to run",
        describe=lambda: str(
            {n: p["status"].get("phase") for n, p in pods(api, namespace, name).items()}
        ),
    )
    return result


def restart_controller(cluster: devcluster.DevCluster) -> None:
    """Start the stopped controller again; wait until it is ready (its cache whole) and leads
    (once the Lease of the one stopped has expired)."""
    record = cluster.start_component(CONTROLLER, die_with_parent=True)
    port = cluster.state.ports[CONTROLLER]
    wait_ready(record, port, timeout=60)
    wait_until(lambda: controller_leads(port), timeout=60, what="the restarted controller to lead")
