"""When each pod of a namespace is first seen bound, for `benchmarks/e2e.py` and `backlog.py`.

A thread of its own lists the namespace's pods and watches them from the list's version, or from
a version the caller took before its pods existed (so the first event of each is seen, and not a
list of thousands of pods). Pods are read as plain JSON: nothing wraps each field of each pod, so
the benchmark's own client stays a small share of the CPU the cluster spends. A watch the API
server ends because its version is too old (a long backlog outruns the watch cache) is followed by
a new list, whose bound pods count from that moment (a little late, never early). Each pod seen
bound also tells the Volcano Job it belongs to, if any (`volcano.sh/job-name`): a Job's pods get
names from its controller, so its members are known from their label.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender.api.batch import JOB_NAME_KEY
from extender.kube import connect
from extender.kube.watch import Gone, list_pages, watch_lines

WATCH_SECONDS = 600  # how long one watch request lasts before it is opened again


class BindWatch:
    """The pods of `namespace` seen bound, until `total` are."""

    def __init__(
        self, kubeconfig: Path, namespace: str, total: int, version: str | None = None
    ) -> None:
        self.bound: dict[str, float] = {}  # pod name -> when first seen bound (monotonic)
        self.jobs: dict[str, str] = {}  # pod name -> its Volcano Job, for the pods seen bound
        self._kubeconfig, self._namespace, self._total = kubeconfig, namespace, total
        self._version = version  # None: list first
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait(self, deadline: float, tick: Callable[[], None]) -> None:
        """Until every pod is bound or the monotonic `deadline` passes, calling `tick` twice a
        second meanwhile."""
        while self._thread.is_alive() and time.monotonic() < deadline:
            self._thread.join(timeout=0.5)
            tick()

    def _run(self) -> None:
        path = f"/api/v1/namespaces/{self._namespace}/pods"
        version = self._version
        with connect(self._kubeconfig) as api:
            while len(self.bound) < self._total:
                if version is None:
                    pods, version = list_pages(api, path)
                    for pod in pods:
                        self._see(pod)
                try:
                    for line in watch_lines(api, path, version, timeout_seconds=WATCH_SECONDS):
                        pod = json.loads(line)["object"]
                        version = pod["metadata"].get("resourceVersion", version)
                        self._see(pod)
                        if len(self.bound) >= self._total:
                            return
                except Gone:
                    version = None

    def _see(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"].get("name")
        if name is None or name in self.bound or not (pod.get("spec") or {}).get("nodeName"):
            return
        job = (pod["metadata"].get("labels") or {}).get(JOB_NAME_KEY)
        if job is not None:
            self.jobs[name] = job
        self.bound[name] = time.monotonic()
