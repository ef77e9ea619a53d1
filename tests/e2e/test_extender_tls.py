"""Mutual TLS between the stock kube-scheduler and the extender on the dev cluster, wired as a
user wires it (`enableHTTPS` and `tlsConfig` in the scheduler's extender entry; `lahar serve
--tls-cert-file --tls-key-file --client-ca-file`). Every other e2e test already schedules through
it; these check that callers without the scheduler's client certificate get nothing."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from extender import devcluster
from extender.devcluster.pki import make_ca, make_leaf_cert
from tests.e2e.conftest import extender_tls, extender_url, lahar_metric

REQUESTS = "lahar_extender_requests_total"
BIND = {"PodName": "x", "PodNamespace": "default", "PodUID": "x", "Node": "nowhere"}


def _post(url: str, context: ssl.SSLContext) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(BIND).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize("verb", ["/bind", "/preempt", "/filter", "/prioritize"])
def test_a_caller_without_a_client_certificate_is_refused_on_every_verb(
    dev_cluster: devcluster.DevCluster, verb: str
) -> None:
    before = lahar_metric(
        dev_cluster, "lahar_extender_requests_total", verb=verb[1:], result="forbidden"
    )
    status, text = _post(extender_url(dev_cluster, verb), extender_tls(dev_cluster, client=False))
    assert status == 403 and "client certificate" in text
    after = lahar_metric(
        dev_cluster, "lahar_extender_requests_total", verb=verb[1:], result="forbidden"
    )
    assert after == before + 1


def test_a_client_certificate_from_another_ca_fails_the_handshake(
    dev_cluster: devcluster.DevCluster, tmp_path: Path
) -> None:
    context = extender_tls(dev_cluster, client=False)
    cert, key = _self_signed_client(tmp_path)
    context.load_cert_chain(cert, key)
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _post(extender_url(dev_cluster, "/bind"), context)


def test_the_schedulers_certificate_is_served_and_probes_need_none(
    dev_cluster: devcluster.DevCluster,
) -> None:
    status, text = _post(extender_url(dev_cluster, "/bind"), extender_tls(dev_cluster))
    assert status == 200 and "Error" in json.loads(text)  # an unknown pod: refused by Lahar
    url = extender_url(dev_cluster, "/readyz")
    with urllib.request.urlopen(url, context=extender_tls(dev_cluster, client=False)) as answer:
        assert answer.status == 200


def _self_signed_client(folder: Path) -> tuple[Path, Path]:
    """A client certificate from a CA the extender does not trust."""
    ca, ca_key = make_ca("intruder-ca")
    cert, key = make_leaf_cert(ca, ca_key, "intruder", (), (), client=True)
    cert_path, key_path = folder / "intruder.crt", folder / "intruder.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
