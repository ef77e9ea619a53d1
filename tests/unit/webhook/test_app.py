"""The webhook's probes, on a real aiohttp test server: with an API server it cannot reach, its
cache never syncs, no caBundle is published and no scheduler names are written, so it is alive but
not ready, saying why; /metrics has its registry."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from aiohttp.test_utils import TestClient, TestServer
from kubernetes import client as k8s

from extender.admission.admit import Settings
from extender.devcluster.ports import free_ports
from extender.pki import CertOptions
from extender.webhook.app import make_app
from extender.webhook.tls import ServingCertificate, TlsOptions


@pytest.fixture
def unreachable() -> Iterator[k8s.ApiClient]:
    """A client of an API server that is not there (a port nothing listens on)."""
    (port,) = free_ports(1)
    client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{port}"))
    yield client
    client.close()


def test_alive_but_not_ready_until_its_cache_syncs(unreachable: k8s.ApiClient) -> None:
    configurations = (("MutatingWebhookConfiguration", "lahar-webhook"),)
    options = TlsOptions(CertOptions(hosts=("lahar-webhook",)), configurations=configurations)
    tls = ServingCertificate(unreachable, options)

    async def main() -> None:
        app = make_app(unreachable, tls, Settings("lahar", frozenset({"lahar"})))
        async with TestClient(TestServer(app)) as client:
            health = await client.get("/healthz")
            assert (health.status, await health.text()) == (200, "ok")
            ready = await client.get("/readyz")
            assert ready.status == 503
            assert await ready.text() == (
                "cache not synced; caBundle not published; scheduler names not written to the "
                "webhook configurations"
            )
            metrics = await (await client.get("/metrics")).text()
            assert "lahar_webhook_certificate_expiry_timestamp_seconds 0.0" in metrics

    try:
        asyncio.run(main())
    finally:
        tls.close()
