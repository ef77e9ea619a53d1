"""The dev cluster's PKI: the serving certificate verifies against the CA for every name clients
use, keys are private to the user, and each component has its own token."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from extender.devcluster import pki


def test_serving_certificate_is_signed_by_the_ca_for_every_server_name(tmp_path: Path) -> None:
    keys = pki.write_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(keys.ca_cert.read_bytes())
    cert = x509.load_pem_x509_certificate(keys.serving_cert.read_bytes())

    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == set(pki.SERVER_NAMES)
    assert set(names.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address(pki.SERVICE_IP),
    }
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_private_keys_and_tokens_are_readable_only_by_the_owner(tmp_path: Path) -> None:
    keys = pki.write_pki(tmp_path)
    for path in (keys.ca_key, keys.serving_key, keys.service_account_key, keys.token_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert isinstance(
        load_pem_private_key(keys.service_account_key.read_bytes(), None), rsa.RSAPrivateKey
    )
    assert isinstance(
        load_pem_private_key(keys.serving_key.read_bytes(), None), ec.EllipticCurvePrivateKey
    )


def test_token_file_gives_each_component_its_own_identity(tmp_path: Path) -> None:
    keys = pki.write_pki(tmp_path)
    rows = [line.split(",", 3) for line in keys.token_file.read_text().splitlines()]

    assert [row[1] for row in rows] == list(pki.USERS)
    assert len({row[0] for row in rows}) == len(rows)
    assert {row[1]: keys.tokens[row[1]] for row in rows} == {row[1]: row[0] for row in rows}
    admin = next(row for row in rows if row[1] == "admin")
    assert admin[3] == '"system:masters"'
    assert pki.write_pki(tmp_path / "other").tokens != keys.tokens
