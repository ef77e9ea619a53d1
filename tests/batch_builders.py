"""Builders for Volcano's batch objects and admission reviews (see `tests.builders`):

make_job("tf").task("ps", 1, cpu="1").task("worker", 2).policy("PodEvicted", "RestartJob")
make_job_pod(job, "worker", 0).phase("Failed", exit_code=3).model()   # a pod the controller made
make_review(make_job("tf").task("w").build()).update(old).request()   # an AdmissionRequest
"""

from __future__ import annotations

import copy
from typing import Any, Self

from extender.api.admission import ADMISSION_API_VERSION, AdmissionRequest
from extender.api.batch import (
    BATCH_API_VERSION,
    JOB_NAME_KEY,
    JOB_VERSION_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    Job,
    JobPod,
    pod_name,
)
from tests.paths import set_path, steps


class JobBuilder:
    """A Volcano Job: `.build()` a dict to apply, `.model()` an api.batch.Job for pure tests."""

    def __init__(self, name: str) -> None:
        self._job: dict[str, Any] = {
            "apiVersion": BATCH_API_VERSION,
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"tasks": [], "policies": []},
        }
        self._pinned: tuple[str, str] | None = None

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._job["spec"]
        return spec

    def ns(self, namespace: str) -> Self:
        self._job["metadata"]["namespace"] = namespace
        return self

    def task(
        self,
        name: str,
        replicas: int = 1,
        *,
        cpu: str = "1",
        min_available: int | None = None,
        depends_on: list[str] | None = None,
        iteration: str = "all",
        scheduler: str = "volcano",
        max_retry: int | None = None,
        **template: Any,
    ) -> Self:
        """A task of `replicas` pods asking for `cpu` each; keyword `template` fields (such as
        `node_selector`, `tolerations`) go into the pod spec under their camelCase names."""
        pod_spec: dict[str, Any] = {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
        }
        for key, value in template.items():
            head, *rest = key.split("_")
            pod_spec[head + "".join(part.title() for part in rest)] = value
        task: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": pod_spec}}
        if min_available is not None:
            task["minAvailable"] = min_available
        if max_retry is not None:
            task["maxRetry"] = max_retry
        if depends_on:
            task["dependsOn"] = {"name": depends_on, "iteration": iteration}
        self._spec["tasks"].append(task)
        return self

    def min_available(self, count: int) -> Self:
        self._spec["minAvailable"] = count
        return self

    def min_success(self, count: int) -> Self:
        self._spec["minSuccess"] = count
        return self

    def max_retry(self, count: int) -> Self:
        self._spec["maxRetry"] = count
        return self

    def ttl(self, seconds: int) -> Self:
        self._spec["ttlSecondsAfterFinished"] = seconds
        return self

    def queue(self, name: str) -> Self:
        self._spec["queue"] = name
        return self

    def plugin(self, name: str, *args: str) -> Self:
        self._spec.setdefault("plugins", {})[name] = list(args)
        return self

    def scheduler_name(self, name: str) -> Self:
        self._spec["schedulerName"] = name
        return self

    def priority_class(self, name: str) -> Self:
        self._spec["priorityClassName"] = name
        return self

    def generate_name(self, prefix: str) -> Self:
        """No name: the API server makes one from `prefix` (after the mutating webhooks)."""
        self._job["metadata"]["name"] = ""
        self._job["metadata"]["generateName"] = prefix
        return self

    def volume(
        self, mount_path: str, claim_name: str | None = None, claim: dict[str, Any] | None = None
    ) -> Self:
        """A volume at `mount_path`: an existing claim (`claim_name`) or one to make (`claim`,
        a PersistentVolumeClaim spec); neither or both for the webhook to refuse."""
        volume: dict[str, Any] = {"mountPath": mount_path}
        if claim_name is not None:
            volume["volumeClaimName"] = claim_name
        if claim is not None:
            volume["volumeClaim"] = claim
        self._spec.setdefault("volumes", []).append(volume)
        return self

    def container(
        self,
        task: str,
        name: str,
        image: str = "busybox",
        *,
        init: bool = False,
        requests: dict[str, Any] | None = None,
        limits: dict[str, Any] | None = None,
        ports: list[int] | None = None,
    ) -> Self:
        """One more container (or, `init`, init container) in the pod template of `task`."""
        container: dict[str, Any] = {"name": name, "image": image}
        resources = {
            kind: amounts
            for kind, amounts in (("requests", requests), ("limits", limits))
            if amounts is not None
        }
        if resources:
            container["resources"] = resources
        if ports is not None:
            container["ports"] = [{"containerPort": port} for port in ports]
        spec = self._task(task)["template"]["spec"]
        spec.setdefault("initContainers" if init else "containers", []).append(container)
        return self

    def set(self, path: str, value: Any) -> Self:
        """Any field by its path (`spec.tasks[0].replicas`), whatever its type: for malformed
        jobs and fields without a builder method."""
        set_path(self._job, path, value)
        return self

    def unset(self, path: str) -> Self:
        """Remove the field at `path` (`spec.tasks[0].template.spec`)."""
        *parents, last = steps(path)
        owner: Any = self._job
        for step in parents:
            owner = owner[step]
        del owner[last]
        return self

    def _task(self, name: str) -> dict[str, Any]:
        task: dict[str, Any] = next(t for t in self._spec["tasks"] if t["name"] == name)
        return task

    def policy(
        self,
        event: str | None = None,
        action: str = "RestartJob",
        *,
        task: str | None = None,
        exit_code: int | None = None,
        timeout: str | None = None,
        events: list[str] | None = None,
    ) -> Self:
        """A lifecycle policy on the job, or (with `task`) on that task."""
        policy: dict[str, Any] = {"action": action}
        if event is not None:
            policy["event"] = event
        if events is not None:
            policy["events"] = events
        if exit_code is not None:
            policy["exitCode"] = exit_code
        if timeout is not None:
            policy["timeout"] = timeout
        owner = next(t for t in self._spec["tasks"] if t["name"] == task) if task else self._spec
        owner.setdefault("policies", []).append(policy)
        return self

    def status(self, **fields: Any) -> Self:
        """Status fields by their camelCase names; `phase=` sets status.state.phase."""
        status = self._job.setdefault("status", {})
        if "phase" in fields:
            status["state"] = {"phase": fields.pop("phase")}
        status.update(fields)
        return self

    def pinned(self, key: str, value: str) -> Self:
        """Every task's pods select nodes labelled `key=value` and tolerate that taint."""
        self._pinned = (key, value)
        return self

    def build(self) -> dict[str, Any]:
        body = copy.deepcopy(self._job)
        body["metadata"].pop("uid")
        if self._pinned is not None:
            key, value = self._pinned
            toleration = {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}
            for task in body["spec"]["tasks"]:
                spec = task["template"]["spec"]
                spec.setdefault("nodeSelector", {})[key] = value
                spec.setdefault("tolerations", []).append(toleration)
        return body

    def model(self) -> Job:
        return Job.model_validate(self._job)


def make_job(name: str) -> JobBuilder:
    return JobBuilder(name)


_RESOURCES = {
    "Job": ("batch.volcano.sh", "v1alpha1", "jobs"),
    "Queue": ("scheduling.volcano.sh", "v1beta1", "queues"),
    "PodGroup": ("scheduling.volcano.sh", "v1beta1", "podgroups"),
    "Pod": ("", "v1", "pods"),
    "HyperNode": ("topology.volcano.sh", "v1alpha1", "hypernodes"),
}


class ReviewBuilder:
    """An AdmissionReview as the API server sends it: CREATE of `obj` (its kind, name and
    namespace from the object) unless told otherwise."""

    def __init__(self, obj: dict[str, Any] | None, kind: str | None = None) -> None:
        kind = kind or (obj or {}).get("kind", "Job")
        group, version, resource = _RESOURCES[kind]
        meta = (obj or {}).get("metadata", {})
        self._request: dict[str, Any] = {
            "uid": "0f6c3b9e-review",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "operation": "CREATE",
            "object": copy.deepcopy(obj),
        }

    def update(self, old: dict[str, Any]) -> Self:
        self._request["operation"] = "UPDATE"
        self._request["oldObject"] = copy.deepcopy(old)
        return self

    def delete(self) -> Self:
        """As the API server sends a DELETE: the object gone, the old one in `oldObject`."""
        self._request["operation"] = "DELETE"
        self._request["oldObject"] = self._request["object"]
        self._request["object"] = None
        return self

    def operation(self, operation: str) -> Self:
        self._request["operation"] = operation
        return self

    def resource(self, group: str, resource: str, version: str = "v1") -> Self:
        self._request["resource"] = {"group": group, "version": version, "resource": resource}
        return self

    def sub_resource(self, name: str) -> Self:
        self._request["subResource"] = name
        return self

    def named(self, name: str, namespace: str | None = None) -> Self:
        self._request["name"] = name
        if namespace is not None:
            self._request["namespace"] = namespace
        return self

    def dry_run(self) -> Self:
        self._request["dryRun"] = True
        return self

    def build(self) -> dict[str, Any]:
        """The AdmissionReview body the webhook receives."""
        request = copy.deepcopy(self._request)
        return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "request": request}

    def request(self) -> AdmissionRequest:
        return AdmissionRequest.model_validate(copy.deepcopy(self._request))


def make_review(obj: dict[str, Any] | None, kind: str | None = None) -> ReviewBuilder:
    return ReviewBuilder(obj, kind)


class JobPodBuilder:
    """A pod as the controller made it for `job` (task, index, the job's current version)."""

    def __init__(self, job: Job, task: str, index: int) -> None:
        name = pod_name(job.metadata.name, task, index)
        keys = {JOB_NAME_KEY: job.metadata.name, TASK_SPEC_KEY: task, TASK_INDEX_KEY: str(index)}
        self._pod: dict[str, Any] = {
            "metadata": {
                "name": name,
                "namespace": job.metadata.namespace,
                "uid": f"uid-{name}",
                "labels": dict(keys),
                "annotations": {**keys, JOB_VERSION_KEY: str(job.status.version)},
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "status": {"phase": "Running"},
        }

    def phase(self, phase: str, *, exit_code: int | None = None) -> Self:
        self._pod["status"]["phase"] = phase
        if exit_code is not None:
            terminated = {"exitCode": exit_code}
            self._pod["status"]["containerStatuses"] = [
                {"name": "main", "state": {"terminated": terminated}}
            ]
        return self

    def version(self, version: int) -> Self:
        self._pod["metadata"]["annotations"][JOB_VERSION_KEY] = str(version)
        return self

    def uid(self, uid: str) -> Self:
        self._pod["metadata"]["uid"] = uid
        return self

    def terminating(self) -> Self:
        self._pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
        return self

    def owned_by(self, job_uid: str) -> Self:
        """Controlled by the Job of uid `job_uid` (an earlier namesake's pod, if not the job's)."""
        meta = self._pod["metadata"]
        owner = {
            "apiVersion": BATCH_API_VERSION,
            "kind": "Job",
            "name": meta["labels"][JOB_NAME_KEY],
        }
        meta["ownerReferences"] = [{**owner, "uid": job_uid, "controller": True}]
        return self

    def created(self, timestamp: str) -> Self:
        self._pod["metadata"]["creationTimestamp"] = timestamp
        return self

    def restarts(self, count: int) -> Self:
        self._pod["status"]["containerStatuses"] = [{"name": "main", "restartCount": count}]
        return self

    def model(self) -> JobPod:
        return JobPod.model_validate(self._pod)


def make_job_pod(job: Job, task: str, index: int) -> JobPodBuilder:
    return JobPodBuilder(job, task, index)
