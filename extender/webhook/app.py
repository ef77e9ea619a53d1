"""`lahar webhook` as an aiohttp app: the admission endpoints (one per rule set, see
`admission.admit.RULES`), probes and metrics, the informers the rules read, and the certificate
keeper. All served over the one TLS listener; the process shell (`extender.shell`) gives it its
probes, /metrics, informers, and the certificate check as a guarded task (one that dies ends the
process): every `--check-interval`, and at once when the certificates' Secret changes or is
deleted (a watch of it). At start and at each certificate check it also writes the schedulers it
serves into the pod webhook's `matchConditions` (`webhook.conditions`). Ready once its cache is
whole, the caBundle is published and the scheduler names are written.

The handler is a thin adapter: bytes -> AdmissionReview -> rule -> AdmissionReview, run in a
worker thread (a large object must not stall the loop, its probes and other reviews), at most four
at once (so at most four bodies are in memory). What is not an AdmissionReview v1 (not JSON, nested
too deep, no request uid, an unknown operation) is a 400 with the reason; a body declared over
`MAX_BODY` is a 413 before it is read (aiohttp stops reading an undeclared one there too, and the
answer is the same). Each of these is the caller's mistake: one WARNING line names it, without a
traceback, as does a path no rule is served at (`shell.unrouted`). An object nested too deeply to
compare is denied saying so; a rule that raises (a bug) is logged at ERROR with its traceback,
counted as `error` and answered as a denial saying so, never a 500: the API server then reports
Lahar's message instead of a failed call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from kubernetes import client as k8s
from pydantic import ValidationError

from extender.admission.admit import RULES, Outcome, Rule, Settings
from extender.admission.problems import AdmissionDecision, Problem, from_validation
from extender.api.admission import AdmissionRequest, AdmissionReview, response
from extender.api.log_fields import Extra, about, about_gang, about_queue
from extender.api.scheduling import API_VERSION, Queue
from extender.cache.informer import Informers
from extender.kube.any_kind import read
from extender.kube.client import UNREACHABLE, KubeError
from extender.shell import SHELL, guarded, informers, install
from extender.shell.unrouted import log_unrouted
from extender.webhook.conditions import SchedulerNames
from extender.webhook.metrics import WebhookMetrics
from extender.webhook.store import KINDS, WebhookStore
from extender.webhook.tls import ServingCertificate

log = logging.getLogger(__name__)
MAX_BODY = 8 * 1024 * 1024  # the API server sends objects of at most ~3 MiB, twice on UPDATE
# Seconds between two certificate checks at least: the Secret's events (this webhook's own writes
# among them) come in bursts, and one check sees them all.
MIN_CHECK_GAP = 0.5


STORE: web.AppKey[WebhookStore] = web.AppKey("store", WebhookStore)
TLS: web.AppKey[ServingCertificate] = web.AppKey("tls", ServingCertificate)
METRICS = web.AppKey("metrics", WebhookMetrics)
# Reviews read and checked at once: bounds memory (each body is at most MAX_BODY).
ADMITTING = web.AppKey("admitting", asyncio.Semaphore)
OPTIONS: web.AppKey[Settings] = web.AppKey("options", Settings)
NAMES: web.AppKey[SchedulerNames] = web.AppKey("names", SchedulerNames)


def make_app(api: k8s.ApiClient, tls: ServingCertificate, options: Settings) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY)
    app[STORE] = store = WebhookStore(fetch=_queue_reader(api))
    app[TLS] = tls
    app[METRICS] = WebhookMetrics(tls)
    app[ADMITTING] = asyncio.Semaphore(4)
    app[OPTIONS] = options
    app[NAMES] = SchedulerNames(api, tls.options.configurations, options.served)
    install(app, app[METRICS].registry, lambda: _unready(app))

    def build(app: web.Application) -> Informers[WebhookStore]:
        return Informers(api, store, asyncio.get_running_loop(), KINDS)

    def synced(app: web.Application) -> None:
        log.info("cache synced: %d queues", len(store.queues))

    app.cleanup_ctx.append(informers(build, synced))
    app.cleanup_ctx.append(guarded(_rotation, "certificate rotation"))
    log_unrouted(app, log)
    for path, (resource, rule) in RULES.items():
        app.router.add_post(path, _handler(resource, rule))
    return app


def _unready(app: web.Application) -> str | None:
    missing = [
        what
        for what, done in (
            ("cache not synced", app[SHELL].synced.is_set()),
            ("caBundle not published", app[TLS].published),
            ("scheduler names not written to the webhook configurations", app[NAMES].published),
        )
        if not done
    ]
    return "; ".join(missing) or None


def _queue_reader(api: k8s.ApiClient) -> Callable[[str], Queue | None]:
    def fetch(name: str) -> Queue | None:
        """A queue the cache lacks (created moments ago, or not at all), as the API server has
        it now; None when it has none, or cannot say (then the rule says it does not exist)."""
        try:
            found = read(api, API_VERSION, "Queue", name)
            return Queue.model_validate(found) if found is not None else None
        except (KubeError, ValidationError, *UNREACHABLE) as error:
            log.warning(
                "queue %s: not in the cache, and reading it failed: %s",
                name,
                error,
                extra=about_queue(name),
            )
            return None

    return fetch


def _handler(resource: str, rule: Rule) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def admit(request: web.Request) -> web.Response:
        started = time.perf_counter()
        app = request.app
        too_large = f"the body is over {MAX_BODY} bytes"
        if (request.content_length or 0) > MAX_BODY:
            return _refused(request, resource, 413, too_large)
        async with app[ADMITTING]:  # bounds the bodies in memory at once
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:  # (a body that did not declare its length)
                return _refused(request, resource, 413, too_large)
            try:
                answer, operation, result = await asyncio.to_thread(
                    _answer, body, resource, rule, app[STORE], app[OPTIONS]
                )
            except _BadReview as error:
                return _refused(request, resource, 400, f"not an AdmissionReview v1: {error}")
        app[METRICS].admissions.labels(resource, operation, result).inc()
        app[METRICS].seconds.labels(resource).observe(time.perf_counter() - started)
        return web.Response(body=answer, content_type="application/json")

    return admit


def _refused(request: web.Request, resource: str, status: int, reason: str) -> web.Response:
    """The answer to a request that is not a review Lahar can read: the caller's mistake."""
    log.warning("refused a review of %s from %s: %s", resource, request.remote, reason)
    request.app[METRICS].admissions.labels(resource, "unknown", "bad_request").inc()
    return web.Response(status=status, text=f"{reason}\n")


def _answer(
    body: bytes, resource: str, rule: Rule, store: WebhookStore, options: Settings
) -> tuple[bytes, str, str]:
    """The AdmissionReview answering `body` (in a worker thread: a large object must not stall
    the loop), the operation and the result for the metrics."""
    review = _validated(_json(body))
    request = review.request
    try:
        outcome = rule(request, store, options)
        result = _result(outcome)
        answer = response(
            request.uid,
            denial=None if outcome.decision.allowed else outcome.message,
            patch=list(outcome.decision.patch),
            warnings=list(outcome.warnings),
        )
        encoded = json.dumps(answer).encode()
    except RecursionError:
        outcome, result = _deep(resource, request.uid), "denied"
        encoded = _denial(request.uid, outcome.message)
    except Exception as error:  # a bug: say so, never a 500
        log.exception("admission of %s %s failed", resource, request.name, extra=_subject(request))
        outcome, result = _bug(resource, error), "error"
        encoded = _denial(request.uid, outcome.message)
    _log(review, resource, outcome)
    return encoded, request.operation.value, result


def _denial(uid: str, message: str) -> bytes:
    return json.dumps(response(uid, denial=message)).encode()


def _deep(resource: str, uid: str) -> Outcome:
    message = f"the {resource} object is nested too deeply to check"
    return Outcome(AdmissionDecision((Problem("", message),)), message)


class _BadReview(ValueError):
    pass


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except RecursionError as error:
        raise _BadReview("the JSON is nested too deeply") from error
    except ValueError as error:  # also UnicodeDecodeError
        raise _BadReview(f"the body is not JSON ({error})") from error


def _validated(data: object) -> AdmissionReview:
    try:
        return AdmissionReview.model_validate(data)
    except ValidationError as error:
        raise _BadReview("; ".join(str(p) for p in from_validation(error)[:5])) from error
    except RecursionError as error:
        raise _BadReview("the JSON is nested too deeply") from error


def _bug(resource: str, error: Exception) -> Outcome:
    message = (
        f"Lahar's webhook failed on this {resource} request ({type(error).__name__}); "
        "see the webhook's log"
    )
    return Outcome(AdmissionDecision((Problem("", message),)), message)


def _result(outcome: Outcome) -> str:
    if not outcome.decision.allowed:
        return "denied"
    return "patched" if outcome.decision.patch else "allowed"


def _log(review: AdmissionReview, resource: str, outcome: Outcome) -> None:
    request = review.request
    name = _key(request)
    subject = _subject(request)
    if not outcome.decision.allowed:
        denied = outcome.message
        log.info("%s %s %s denied: %s", request.operation, resource, name, denied, extra=subject)
    elif outcome.decision.patch:
        paths = ", ".join(op["path"] for op in outcome.decision.patch)
        log.info("%s %s %s defaulted: %s", request.operation, resource, name, paths, extra=subject)


def _key(request: AdmissionRequest) -> str:
    return f"{request.namespace}/{request.name}" if request.namespace else request.name


def _subject(request: AdmissionRequest) -> Extra:
    """The object a review is about, for the log: a PodGroup is a gang, a Queue a queue."""
    kind, key = request.kind.kind, _key(request)
    if kind == "PodGroup":
        return about_gang(key)
    if kind == "Queue":
        return about_queue(key)
    return about(kind, key)


async def _rotation(app: web.Application) -> None:
    """Check the certificate every `interval`, and at once when the Secret changes or is deleted
    (its watch): rotate when due, create it again when gone, reload what the files hold. The
    scheduler names are written at start and checked with it."""
    tls = app[TLS]
    changed = asyncio.Event()
    watch = tls.watch(asyncio.get_running_loop(), changed.set)
    try:
        await _write_names(app[NAMES])
        while True:
            await asyncio.sleep(MIN_CHECK_GAP)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    changed.wait(), max(tls.options.interval - MIN_CHECK_GAP, 0.0)
                )
            changed.clear()  # (what changed before the check below is seen by it)
            try:
                tls.install(await asyncio.to_thread(tls.refresh))
            except (KubeError, *UNREACHABLE) as error:  # the API server, for a while
                log.warning("certificate check failed (%s); serving the current one", error)
            except Exception:  # a file, or a bug: keep serving, try again
                log.exception("certificate check failed; serving the current one")
            await _write_names(app[NAMES])
    finally:
        if watch is not None:
            watch.stop()


async def _write_names(names: SchedulerNames) -> None:
    """Write the scheduler names into the configurations; a failure is logged and tried again at
    the next check (the rules check the names themselves meanwhile)."""
    try:
        await asyncio.to_thread(names.publish)
    except (KubeError, *UNREACHABLE) as error:
        log.warning(
            "writing the scheduler names failed (%s); trying again at the next check", error
        )
    except Exception:  # a bug: keep serving, try again
        log.exception("writing the scheduler names failed; trying again at the next check")
