"""When a process leads: at once without a Lease; while it holds its own; while the scheduler
beside it holds the followed one. Losing either ends the process. A standby could take over while
it reads its Lease; `lahar_leader` is 1 while the process leads, 0 otherwise. The elector and the
follower are replaced by stand-ins that report what the API server would (their own tests run
against a real one in tests/e2e)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from extender.devcluster.ports import free_ports
from extender.kube.leader import FollowOptions, LeaseOptions, LeaseProblem
from extender.shell import SHELL, Shell, install, lead, lease, run

LEASE = LeaseOptions("lahar-controller", "lahar-system", "me")
FOLLOW = FollowOptions("lahar-scheduler", "lahar-system", "host-a")


@pytest.fixture
def api() -> Iterator[k8s.ApiClient]:
    client = k8s.ApiClient()
    yield client
    client.close()


def _app() -> tuple[web.Application, list[str]]:
    app = web.Application()
    install(app, CollectorRegistry(), lambda: None)
    return app, []


def _run(app: web.Application) -> int:
    (port,) = free_ports(1)
    return run(app, host="127.0.0.1", port=port)


def test_without_a_lease_it_leads_at_once() -> None:
    app, _ = _app()
    lead(app, None)
    assert app[SHELL].leading.is_set()


def test_without_an_api_client_a_lease_keeps_it_a_standby() -> None:
    app, _ = _app()
    lead(app, None, lease=LEASE)
    assert not app[SHELL].leading.is_set()


def test_it_holds_a_lease_or_follows_one_not_both(api: k8s.ApiClient) -> None:
    app, _ = _app()
    with pytest.raises(ValueError, match="either holds its own Lease or follows"):
        lead(app, api, lease=LEASE, follow=FOLLOW)


class _Elector:
    """Grants the Lease at once, and takes it away a moment later."""

    def __init__(
        self,
        api: Any,
        options: LeaseOptions,
        leading: asyncio.Event,
        on_lost: Callable[[], None],
        on_problem: Callable[[LeaseProblem | None], None],
    ) -> None:
        self.leading, self.on_lost = leading, on_lost

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(self.leading.set)
        loop.call_later(0.05, self.on_lost)


def test_losing_the_lease_it_held_ends_the_process(
    api: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "Elector", _Elector)
    app, hooks = _app()
    lead(
        app,
        api,
        lease=LEASE,
        on_lead=lambda app: hooks.append("lead"),
        on_leave=lambda app: hooks.append("leave"),
    )
    assert _run(app) == 1
    assert hooks == ["lead", "leave"]
    assert app[SHELL].lease_lost and not app[SHELL].leading.is_set()


def test_a_failing_leave_hook_still_ends_the_process(
    api: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without its Lease a process must not go on, whatever its own hook does on the way out."""
    monkeypatch.setattr(lease, "Elector", _Elector)
    app, _ = _app()

    def leave(app: web.Application) -> None:
        raise RuntimeError("could not say goodbye")

    lead(app, api, lease=LEASE, on_leave=leave)
    assert _run(app) == 1
    assert app[SHELL].lease_lost


def _follower(holders: list[str]) -> type:
    class Follower:
        """Reports `holders` one after the other, as the watch would."""

        def __init__(
            self,
            api: Any,
            options: FollowOptions,
            seen: Callable[[str], None],
            trouble: Callable[[LeaseProblem | None], None],
        ) -> None:
            self.seen = seen

        def start(self) -> None:
            loop = asyncio.get_running_loop()
            for i, holder in enumerate(holders):
                loop.call_later(0.01 * (i + 1), self.seen, holder)

        def stop(self) -> None:
            pass

    return Follower


@pytest.mark.parametrize(
    "case",
    [
        (["host-b_1", "host-a_2", "host-a_2", ""], False, "released the Lease"),
        (["host-a_2", "host-b_3"], True, "went to host-b_3"),
    ],
    ids=["released", "taken"],
)
def test_following_leads_while_the_scheduler_beside_it_holds_the_lease(
    api: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    case: tuple[list[str], bool, str],
) -> None:
    holders, lost, said = case
    monkeypatch.setattr(lease, "LeaseFollower", _follower(holders))
    app, hooks = _app()
    lead(
        app,
        api,
        follow=FOLLOW,
        on_lead=lambda app: hooks.append("lead"),
        on_leave=lambda app: hooks.append("leave"),
    )
    with caplog.at_level(logging.INFO, logger="extender.shell"):
        assert _run(app) == (1 if lost else 0)
    assert hooks == ["lead", "leave"]  # once each: leading again while it leads changes nothing
    assert app[SHELL].lease_lost == lost
    assert said in caplog.text and "stopping" in caplog.text


PROBLEMS = [
    # (problem, following, words the line must have)
    (
        LeaseProblem(
            "lahar-system", "lahar-controller", 404, 'namespaces "lahar-system" not found'
        ),
        False,
        [
            "cannot take Lease lahar-system/lahar-controller",
            "namespace lahar-system does not exist",
            "kubectl create namespace lahar-system",
            "--lease-namespace",
        ],
    ),
    (
        LeaseProblem("ops", "lahar-extender", 403, 'leases is forbidden: User "x" cannot create'),
        False,
        ["cannot take Lease ops/lahar-extender", "forbidden (leases is forbidden", "get, create"],
    ),
    (
        LeaseProblem("ops", "lahar-scheduler", 404, 'namespaces "ops" not found'),
        True,
        ["cannot read Lease ops/lahar-scheduler", "--follow-scheduler-lease NAMESPACE/NAME"],
    ),
    (
        LeaseProblem("ops", "lahar-scheduler", 403, "forbidden"),
        True,
        ["get, list and watch on leases in namespace ops"],
    ),
    (
        LeaseProblem("ops", "lahar-extender", 500, "etcdserver: request timed out"),
        False,
        ["cannot take Lease ops/lahar-extender: the API server refused it (etcdserver"],
    ),
]


@pytest.mark.parametrize(
    "case", PROBLEMS, ids=["missing", "forbidden", "follow-missing", "follow-forbidden", "other"]
)
def test_a_lease_problem_names_the_lease_and_the_fix(
    case: tuple[LeaseProblem, bool, list[str]],
) -> None:
    problem, following, words = case
    line = lease.describe(problem, following=following)
    for word in words:
        assert word in line


def test_a_lasting_problem_is_said_once_then_reminded_then_cleared() -> None:
    notice = lease.ProblemNotice(remind=60.0)
    heard = [
        notice.heard(text, now)
        for text, now in [
            (None, 0.0),
            ("no namespace", 1.0),
            ("no namespace", 3.0),
            ("no namespace", 59.0),
            ("no namespace", 61.0),
            ("no namespace", 63.0),
            ("forbidden", 65.0),
            (None, 67.0),
            (None, 69.0),
        ]
    ]
    assert heard == [None, "appeared", None, None, "lasts", None, "appeared", "cleared", None]


class _RefusedElector:
    """The namespace is missing for two attempts; the third takes the Lease."""

    def __init__(
        self,
        api: Any,
        options: LeaseOptions,
        leading: asyncio.Event,
        on_lost: Callable[[], None],
        on_problem: Callable[[LeaseProblem | None], None],
    ) -> None:
        self.options, self.leading, self.on_problem = options, leading, on_problem

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        missing = LeaseProblem(self.options.namespace, self.options.name, 404, "not found")
        loop.call_soon(self.on_problem, missing)
        loop.call_later(0.01, self.on_problem, missing)
        loop.call_later(0.02, self.on_problem, None)
        loop.call_later(0.02, self.leading.set)


def test_a_lease_it_cannot_take_is_an_error_until_it_can(
    api: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lease, "Elector", _RefusedElector)
    app, hooks = _app()
    problems: list[str | None] = []

    def led(app: web.Application) -> None:
        hooks.append("lead")
        problems.append(app[SHELL].lease_problem)
        raise web.GracefulExit()

    async def watch(app: web.Application) -> AsyncIterator[None]:
        async def sample() -> None:
            await asyncio.sleep(0.005)
            problems.append(app[SHELL].lease_problem)

        task = asyncio.create_task(sample())
        yield
        await task

    app.cleanup_ctx.append(watch)
    lead(app, api, lease=LEASE, on_lead=led)
    with caplog.at_level(logging.INFO, logger="extender.shell"):
        _run(app)
    assert hooks == ["lead"]
    assert problems[0] is not None and "kubectl create namespace lahar-system" in problems[0]
    assert problems[-1] is None  # it leads: the problem cleared
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "lahar-system/lahar-controller" in errors[0].getMessage()
    assert "can take Lease lahar-system/lahar-controller now" in caplog.text


def test_a_refusal_on_rbac_is_a_problem_only_once_it_lasts() -> None:
    """A restarting API server refuses for a moment, until its authorizer has synced: a 403 that
    passes within the grace is never said; one that lasts is, once."""
    forbidden = "cannot take Lease ns/l: forbidden"
    notice = lease.ProblemNotice(grace=10.0)
    assert [notice.heard(forbidden, t, patient=True) for t in (0.0, 2.0, 4.0)] == [None] * 3
    assert notice.heard(None, 6.0) is None  # it passed: nothing to say, nothing to clear
    said = [notice.heard(forbidden, t, patient=True) for t in (20.0, 25.0, 30.0, 32.0)]
    assert said == [None, None, "appeared", None]
    assert notice.heard(None, 40.0) == "cleared"


def test_an_attempt_that_reads_the_lease_is_kept(
    api: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused attempts read nothing; the one that takes the Lease read it."""
    monkeypatch.setattr(lease, "Elector", _RefusedElector)
    app, _ = _app()
    reads: list[float | None] = []

    def led(app: web.Application) -> None:
        reads.append(app[SHELL].lease_read)
        raise web.GracefulExit()

    async def watch(app: web.Application) -> AsyncIterator[None]:
        async def sample() -> None:
            await asyncio.sleep(0.005)
            reads.append(app[SHELL].lease_read)

        task = asyncio.create_task(sample())
        yield
        await task

    app.cleanup_ctx.append(watch)
    lead(app, api, lease=LEASE, on_lead=led)
    _run(app)
    assert reads[0] is None and reads[-1] is not None


def test_a_standby_could_take_over_while_it_reads_its_lease() -> None:
    """Not while the API server refuses the Lease, nor before an attempt read it, nor once none
    has for a whole lease duration (15 s)."""
    shell = Shell(CollectorRegistry(), lambda: None)
    where = "Lease lahar-system/lahar-controller"
    assert lease.cannot_take_over(shell, LEASE, 100.0) == f"has not read {where} yet"
    shell.lease_read = 90.0
    assert lease.cannot_take_over(shell, LEASE, 100.0) is None
    assert lease.cannot_take_over(shell, LEASE, 105.0) is None
    assert lease.cannot_take_over(shell, LEASE, 106.0) == (
        f"has not read {where} for 16 s: the API server is unreachable or failing"
    )
    shell.lease_problem = f"cannot take {where}: forbidden"
    assert lease.cannot_take_over(shell, LEASE, 100.0) == shell.lease_problem


@pytest.mark.parametrize(
    ("component", "options", "lease_label"),
    [
        ("controller", LEASE, "lahar-system/lahar-controller"),
        ("extender", FOLLOW, "lahar-system/lahar-scheduler"),
    ],
    ids=["holding", "following"],
)
def test_lahar_leader_is_1_while_it_leads_and_0_on_a_standby(
    api: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
    component: str,
    options: LeaseOptions | FollowOptions,
    lease_label: str,
) -> None:
    """Sampled at the start (a standby), on coming to lead and on ceasing to."""
    monkeypatch.setattr(lease, "Elector", _Elector)  # (leads at once, loses it a moment later)
    monkeypatch.setattr(lease, "LeaseFollower", _follower(["host-b_1", "host-a_2", "host-b_3"]))
    app, _ = _app()
    registry = app[SHELL].registry
    lease.show_leading(lease.leader_gauge(registry), component, options, app[SHELL])
    labels = {"component": component, "lease": lease_label}
    values: list[float | None] = []

    def sample(app: web.Application) -> None:
        values.append(registry.get_sample_value("lahar_leader", labels))

    sample(app)
    if isinstance(options, LeaseOptions):
        lead(app, api, lease=options, on_lead=sample, on_leave=sample)
    else:
        lead(app, api, follow=options, on_lead=sample, on_leave=sample)
    assert _run(app) == 1  # (the Lease lost, or taken by another scheduler)
    assert values == [0.0, 1.0, 0.0]


def test_without_a_lease_lahar_leader_is_1_at_once() -> None:
    app, _ = _app()
    registry = app[SHELL].registry
    lead(app, None)
    lease.show_leading(lease.leader_gauge(registry), "extender", None, app[SHELL])
    labels = {"component": "extender", "lease": ""}
    assert registry.get_sample_value("lahar_leader", labels) == 1.0
