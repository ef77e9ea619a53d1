"""The extender's TLS files: loaded at start, loaded again only when they change, and a broken
set never replaces the one being served."""

from __future__ import annotations

import contextlib
import os
import ssl
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from extender.devcluster.pki import make_ca, make_leaf_cert
from extender.server.tls import ServerTls, TlsFiles


def _write(folder: Path, name: str) -> tuple[Path, Path, Path]:
    ca, ca_key = make_ca(f"{name}-ca")
    cert, key = make_leaf_cert(ca, ca_key, name, ("localhost",), ("127.0.0.1",))
    paths = folder / f"{name}.crt", folder / f"{name}.key", folder / f"{name}-ca.crt"
    paths[0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths[2].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return paths


def test_loaded_once_and_again_only_when_a_file_changes(tmp_path: Path) -> None:
    cert, key, ca = _write(tmp_path, "one")
    tls = ServerTls(TlsFiles(cert, key, ca))
    assert tls.requires_client and tls.context.verify_mode == ssl.CERT_OPTIONAL
    assert tls.reload() is False
    new_cert, new_key, _ = _write(tmp_path, "two")
    os.replace(new_cert, cert)
    os.replace(new_key, key)
    os.utime(cert, (1, 1))  # a different mtime, whatever the clock's resolution
    assert tls.reload() is True


def test_a_key_that_does_not_match_is_refused_and_the_old_pair_kept(tmp_path: Path) -> None:
    cert, key, _ = _write(tmp_path, "one")
    served = cert.read_bytes()
    tls = ServerTls(TlsFiles(cert, key))
    assert not tls.requires_client
    _, other_key, _ = _write(tmp_path, "two")
    os.replace(other_key, key)
    os.utime(key, (1, 1))
    with pytest.raises(ssl.SSLError):
        tls.reload()
    assert _served_by(tls.context) == ssl.PEM_cert_to_DER_cert(served.decode())


def _served_by(server: ssl.SSLContext) -> bytes:
    """The certificate a client sees in a handshake with `server` (in memory, no socket)."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    pipes = [(ssl.MemoryBIO(), ssl.MemoryBIO()) for _ in range(2)]
    near = client.wrap_bio(pipes[0][0], pipes[0][1])
    far = server.wrap_bio(pipes[1][0], pipes[1][1], server_side=True)
    for _ in range(10):
        for end in (near, far):
            with contextlib.suppress(ssl.SSLWantReadError):
                end.do_handshake()
        pipes[1][0].write(pipes[0][1].read())
        pipes[0][0].write(pipes[1][1].read())
    der = near.getpeercert(binary_form=True)
    assert der is not None
    return der
