"""How the work queue logs a handler's failure: an API call that failed (refused, conflicting, the
job's pods refused) or an API server out of reach is one WARNING line naming the object, without
a traceback; any other exception is a bug, an ERROR with its traceback. Either is retried."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest
import urllib3

from extender.api.log_fields import SUBJECT
from extender.controller.workqueue import WorkQueue
from extender.controller.writer import PodsRefused
from extender.kube import KubeError
from extender.kube.raw import ApiStatusError


@pytest.mark.parametrize(
    ("error", "level", "traceback"),
    [
        (KubeError("creating ConfigMap ml/mnist-svc: forbidden"), logging.WARNING, False),
        (ApiStatusError("writing status of Job ml/mnist: conflict", 409), logging.WARNING, False),
        (PodsRefused("job ml/mnist: pods are forbidden: exceeded quota"), logging.WARNING, False),
        (ConnectionRefusedError(111, "Connection refused"), logging.WARNING, False),
        (urllib3.exceptions.ProtocolError("Connection aborted"), logging.WARNING, False),
        (KeyError("replicas"), logging.ERROR, True),
        (TypeError("unsupported operand"), logging.ERROR, True),
    ],
)
def test_a_failure_is_logged_by_whose_it_is_and_retried(
    error: Exception, level: int, traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    async def body() -> None:
        queue, retried = WorkQueue("Job", base_delay=0.01), asyncio.Event()

        async def handler(key: str) -> None:
            calls.append(key)
            if len(calls) == 1:
                raise error
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
    [record] = [r for r in caplog.records if r.name == "extender.controller.workqueue"]
    assert record.levelno == level
    assert record.getMessage().startswith("ml/mnist: ")
    assert record.getMessage().endswith("retrying in 0.0s")
    assert (record.exc_info is not None) == traceback
    if not traceback:
        assert str(error) in record.getMessage()
    assert getattr(record, SUBJECT) == {"kind": "Job", "namespace": "ml", "name": "mnist"}
