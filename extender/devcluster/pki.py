"""Certificates, keys and tokens for a dev cluster, made with `cryptography`.

One CA signs the API server's serving certificate (valid for 127.0.0.1, localhost and the in-cluster
service names), so kubeconfigs verify the server instead of skipping TLS checks; the same CA is the
controller-manager's root CA and CSR signer. The service-account signing key is RSA. Each component
authenticates with its own bearer token and user name, so RBAC in the dev cluster is the real
bootstrap RBAC (admin is in system:masters, the scheduler and the controller-manager are their
system users). Lahar's own components use tokens of their ServiceAccounts instead (see
`devcluster.lahar`).

The same concept at a lower layer: `extender.pki`, Lahar's own certificates, made and rotated, whose
`new_ca` and `new_leaf` make these.
"""

from __future__ import annotations

import datetime
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from extender.pki import new_ca, new_leaf

SERVICE_IP = "10.0.0.1"  # first address of --service-cluster-ip-range
SERVER_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
VALIDITY = datetime.timedelta(days=365)

# user name -> groups; the names are those kube-apiserver's bootstrap RBAC grants roles to.
USERS: dict[str, tuple[str, ...]] = {
    "admin": ("system:masters",),
    "system:kube-scheduler": (),
    "system:kube-controller-manager": (),
    # A real node's kubelet (the Node authorizer) and kube-proxy (system:node-proxier).
    "system:node:lahar-node": ("system:nodes",),
    "system:kube-proxy": (),
}


@dataclass(frozen=True)
class Pki:
    folder: Path
    tokens: dict[str, str]  # user name -> bearer token

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.folder / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.folder / "apiserver.key"

    @property
    def extender_cert(self) -> Path:
        """The extender's HTTPS certificate (127.0.0.1, localhost)."""
        return self.folder / "lahar-extender.crt"

    @property
    def extender_key(self) -> Path:
        return self.folder / "lahar-extender.key"

    @property
    def scheduler_client_cert(self) -> Path:
        """Lahar's kube-scheduler authenticates to the extender with this (mTLS)."""
        return self.folder / "lahar-scheduler-client.crt"

    @property
    def scheduler_client_key(self) -> Path:
        return self.folder / "lahar-scheduler-client.key"

    @property
    def kubelet_client_ca(self) -> Path:
        """The CA a real node's kubelet trusts for its callers: it signs the API server's
        kubelet client certificate and nothing else."""
        return self.folder / "kubelet-client-ca.crt"

    @property
    def kubelet_client_cert(self) -> Path:
        """kube-apiserver authenticates to a real node's kubelet with this (logs, exec)."""
        return self.folder / "apiserver-kubelet-client.crt"

    @property
    def kubelet_client_key(self) -> Path:
        return self.folder / "apiserver-kubelet-client.key"

    @property
    def service_account_key(self) -> Path:
        return self.folder / "sa.key"

    @property
    def token_file(self) -> Path:
        return self.folder / "tokens.csv"


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600)
    path.write_bytes(data)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    now = datetime.datetime.now(datetime.UTC)
    return new_ca(common_name, now + VALIDITY, now)


def make_leaf_cert(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    dns_names: tuple[str, ...],
    ip_addresses: tuple[str, ...],
    *,
    client: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A leaf certificate signed by `ca`: for a server (these names), or with `client` for a
    client authenticating as `common_name`."""
    now = datetime.datetime.now(datetime.UTC)
    hosts = (*dns_names, *ip_addresses)
    not_after = now + VALIDITY
    return new_leaf(ca, ca_key, common_name, hosts, not_after=not_after, now=now, client=client)


def write_pki(folder: Path, *, apiserver_ips: tuple[str, ...] = ()) -> Pki:
    """Create the CA, the API server's certificate (also valid for `apiserver_ips`), the
    extender's (HTTPS) and the client certificate Lahar's kube-scheduler calls it with; the CA a
    real node's kubelet trusts and the API server's client certificate of it; the
    service-account key and the tokens."""
    folder.mkdir(parents=True, exist_ok=True)
    pki = Pki(folder, {user: secrets.token_urlsafe(32) for user in USERS})
    ca, ca_key = make_ca("lahar-dev-cluster-ca")
    cert, key = make_leaf_cert(
        ca, ca_key, "kube-apiserver", SERVER_NAMES, ("127.0.0.1", SERVICE_IP, *apiserver_ips)
    )
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_private(pki.ca_key, _pem_key(ca_key))
    pki.serving_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(pki.serving_key, _pem_key(key))
    for (path, key_path), (name, hosts, ips, client) in (
        (
            (pki.extender_cert, pki.extender_key),
            ("lahar-extender", ("localhost",), ("127.0.0.1",), False),
        ),
        (
            (pki.scheduler_client_cert, pki.scheduler_client_key),
            ("lahar-scheduler", (), (), True),
        ),
    ):
        leaf, leaf_key = make_leaf_cert(ca, ca_key, name, hosts, ips, client=client)
        path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        _write_private(key_path, _pem_key(leaf_key))
    kubelet_ca, kubelet_ca_key = make_ca("lahar-dev-cluster-kubelet-client-ca")
    pki.kubelet_client_ca.write_bytes(kubelet_ca.public_bytes(serialization.Encoding.PEM))
    leaf, leaf_key = make_leaf_cert(
        kubelet_ca, kubelet_ca_key, "kube-apiserver-kubelet-client", (), (), client=True
    )
    pki.kubelet_client_cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    _write_private(pki.kubelet_client_key, _pem_key(leaf_key))
    _write_private(pki.service_account_key, _pem_key(rsa.generate_private_key(65537, 2048)))
    lines = []
    for index, (user, groups) in enumerate(USERS.items()):
        group_field = f',"{",".join(groups)}"' if groups else ""
        lines.append(f"{pki.tokens[user]},{user},uid-{index}{group_field}\n")
    _write_private(pki.token_file, "".join(lines).encode())
    return pki
