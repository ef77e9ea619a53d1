"""How the work queue logs a handler's failure: an API call that failed (refused, conflicting, the
job's pods refused) or an API server out of reach is one WARNING line naming the object, without
a traceback; any other exception is a bug, an ERROR with its traceback. Either is retried.

"Out of reach" is checked against what the kubernetes client really raises, calling a local socket
that refuses, hangs up or never answers; an `OSError` of Lahar's own (a file it cannot open) is an
ERROR."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
import urllib3
from kubernetes import client as k8s

from extender.api.log_fields import SUBJECT
from extender.controller.workqueue import WorkQueue
from extender.controller.writer import PodsRefused
from extender.kube import KubeError
from extender.kube.raw import ApiStatusError, send

POOL = urllib3.HTTPSConnectionPool("kubernetes.default.svc")  # (an error's pool; never opened)


@pytest.mark.parametrize(
    ("error", "level", "traceback"),
    [
        (KubeError("creating ConfigMap ml/mnist-svc: forbidden"), logging.WARNING, False),
        (ApiStatusError("writing status of Job ml/mnist: conflict", 409), logging.WARNING, False),
        (PodsRefused("job ml/mnist: pods are forbidden: exceeded quota"), logging.WARNING, False),
        (ConnectionRefusedError(111, "Connection refused"), logging.WARNING, False),
        (ConnectionResetError(104, "Connection reset by peer"), logging.WARNING, False),
        (TimeoutError("timed out"), logging.WARNING, False),
        (urllib3.exceptions.ProtocolError("Connection aborted"), logging.WARNING, False),
        (
            urllib3.exceptions.MaxRetryError(POOL, "/apis/batch.volcano.sh/v1alpha1/jobs"),
            logging.WARNING,
            False,
        ),
        (
            urllib3.exceptions.ReadTimeoutError(POOL, "/api/v1/pods", "read timed out"),
            logging.WARNING,
            False,
        ),
        (KeyError("replicas"), logging.ERROR, True),
        (TypeError("unsupported operand"), logging.ERROR, True),
        (
            FileNotFoundError(2, "No such file or directory", "/etc/lahar/policy.yaml"),
            logging.ERROR,
            True,
        ),
        (PermissionError(13, "Permission denied", "/var/run/lahar/token"), logging.ERROR, True),
        (urllib3.exceptions.LocationParseError("http://[::1"), logging.ERROR, True),
    ],
)
def test_a_failure_is_logged_by_whose_it_is_and_retried(
    error: Exception, level: int, traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async def fail() -> None:
        raise error

    [record] = _first_failure(fail, caplog)
    assert record.levelno == level
    assert (record.exc_info is not None) == traceback
    if not traceback:
        assert str(error) in record.getMessage()


@contextlib.contextmanager
def _api_server(answer: str) -> Iterator[str]:
    """The address of a local socket standing in for an API server out of reach: `refuses`
    (nothing listens), `hangs up` (accepts and closes without a word) or `silent` (accepts and
    never answers)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{listener.getsockname()[1]}"
        if answer == "refuses":
            listener.close()
            yield address
            return
        listener.listen()
        accepted: list[socket.socket] = []

        def serve() -> None:
            with contextlib.suppress(OSError):
                while True:
                    connection, _ = listener.accept()
                    connection.recv(65536)
                    if answer == "hangs up":
                        connection.close()
                    else:
                        accepted.append(connection)

        threading.Thread(target=serve, daemon=True).start()
        try:
            yield address
        finally:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # (wakes the accept)
            for connection in accepted:
                connection.close()


@pytest.mark.parametrize("answer", ["refuses", "hangs up", "silent"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_api_server_out_of_reach_is_a_warning_whatever_the_client_raises(
    answer: str, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    with _api_server(answer) as address:
        configuration = k8s.Configuration()
        configuration.host = address
        with k8s.ApiClient(configuration) as api:

            async def call() -> None:
                path = "/api/v1/namespaces/ml/pods"
                await asyncio.to_thread(send, api, method, path, body={}, timeout=(1.0, 0.2))

            [record] = _first_failure(call, caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None


def _first_failure(
    fail: Callable[[], Awaitable[None]], caplog: pytest.LogCaptureFixture
) -> list[logging.LogRecord]:
    """The work queue's log lines when its handler for Job ml/mnist runs `fail` once and then
    succeeds; checks that it was retried and that the lines name the Job."""
    calls: list[str] = []

    async def body() -> None:
        queue, retried = WorkQueue("Job", base_delay=0.01), asyncio.Event()

        async def handler(key: str) -> None:
            calls.append(key)
            if len(calls) == 1:
                await fail()
            retried.set()

        queue.add("ml/mnist")
        task = asyncio.create_task(queue.run(handler, 1))
        try:
            await asyncio.wait_for(retried.wait(), 5)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    with caplog.at_level(logging.DEBUG, logger="extender.controller.workqueue"):
        asyncio.run(body())
    assert calls == ["ml/mnist", "ml/mnist"]
    records = [r for r in caplog.records if r.name == "extender.controller.workqueue"]
    for record in records:
        assert record.getMessage().startswith("ml/mnist: ")
        assert record.getMessage().endswith("retrying in 0.0s")
        assert getattr(record, SUBJECT) == {"kind": "Job", "namespace": "ml", "name": "mnist"}
    return records
