"""The ssh plugin: the job's pods log in to each other without passwords (MPI's launcher does).

Kept for the job: a Secret `<job>-ssh` with `id_rsa` (an RSA 2048 private key, PEM), `id_rsa.pub`
and `authorized_keys` (its public key, OpenSSH format) and `config` (no host key checking, and a
`Host <pod>` / `HostName <pod>.<job>` entry per pod). The key pair is the user's when
`--ssh-private-key` is given (the public key is `--ssh-public-key`, or derived from the private
key), else generated.

The Secret is created once and never replaced (`replace=False`): a new key pair under running pods
would lock them out of each other, and Volcano does not update it either (pods mount it with a
subPath, which never sees updates). So `config` lists the pods of the job as it was created;
pods added by scaling are still reachable as `<pod>.<job>` through the svc plugin's DNS, with
host key checking off for every host. Building the body generates the key, so it happens only
when the controller creates the Secret.

Each pod mounts the Secret's files at `/root/.ssh` (or `--ssh-key-file-path`), mode 0600, in
every container and init container.
"""

from __future__ import annotations

import base64
from functools import partial
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from extender.api.batch import Job, TaskSpec
from extender.jobplugins._base import Arguments, PluginError, PluginObject
from extender.jobplugins._pods import hosts, metadata, mount

NAME = "ssh"
KEY_FILE_PATH = "ssh-key-file-path"
PRIVATE_KEY = "ssh-private-key"
PUBLIC_KEY = "ssh-public-key"
DEFAULT_PATH = "/root/.ssh"
KEY_BITS = 2048
FILE_MODE = 0o600
FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
_SUBPATH = ".ssh"  # the files sit under this folder of the volume, mounted with it as subPath


def secret_name(job: Job) -> str:
    return f"{job.metadata.name}-{NAME}"


def generate_key_pair() -> tuple[bytes, bytes]:
    """A new RSA key pair: the private key as PEM (PKCS#1), the public key as OpenSSH."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return private, _openssh_public(key.public_key())


def ssh_config(job: Job) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.spec.tasks:
        for h in hosts(job, task):
            lines += [f"Host {h.name}", f"  HostName {h.address}"]
    return "\n".join(lines) + "\n"


class SshPlugin:
    name = NAME

    def __init__(
        self, *, path: str = DEFAULT_PATH, key_pair: tuple[bytes, bytes] | None = None
    ) -> None:
        self.path = path
        self.key_pair = key_pair  # the user's (private, public); None: generated per job

    def objects(self, job: Job) -> list[PluginObject]:
        return [PluginObject("v1", "Secret", secret_name(job), partial(self._secret, job), False)]

    def problems(self, job: Job) -> list[PluginError]:
        return []

    def mutate_pod(self, pod: dict[str, Any], job: Job, task: TaskSpec, index: int) -> None:
        name = secret_name(job)
        mount(
            pod,
            {
                "name": name,
                "secret": {
                    "secretName": name,
                    "items": [{"key": f, "path": f"{_SUBPATH}/{f}"} for f in FILES],
                    "defaultMode": FILE_MODE,
                },
            },
            {"name": name, "mountPath": self.path, "subPath": _SUBPATH},
        )

    def _secret(self, job: Job) -> dict[str, Any]:
        private, public = self.key_pair or generate_key_pair()
        files = {
            "id_rsa": private,
            "id_rsa.pub": public,
            "authorized_keys": public,
            "config": ssh_config(job).encode(),
        }
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata(job, secret_name(job)),
            "type": "Opaque",
            "data": {key: base64.b64encode(value).decode() for key, value in files.items()},
        }


def configure(args: list[str] | None) -> SshPlugin:
    arguments = Arguments(NAME, args, options=(KEY_FILE_PATH, PRIVATE_KEY, PUBLIC_KEY))
    path = arguments.text(KEY_FILE_PATH, DEFAULT_PATH)
    if not path.startswith("/"):
        raise arguments.error(f"--{KEY_FILE_PATH} must be an absolute path", KEY_FILE_PATH)
    if not arguments.given(PRIVATE_KEY):
        if arguments.given(PUBLIC_KEY):
            raise arguments.error(f"--{PUBLIC_KEY} needs --{PRIVATE_KEY}", PUBLIC_KEY)
        return SshPlugin(path=path)
    private = _line_ended(arguments.text(PRIVATE_KEY, ""))
    if arguments.given(PUBLIC_KEY):
        public = _line_ended(arguments.text(PUBLIC_KEY, ""))
    else:
        public = _derived_public(private, arguments)
    return SshPlugin(path=path, key_pair=(private, public))


def _derived_public(private: bytes, arguments: Arguments) -> bytes:
    """The OpenSSH public key of a private key given as PEM or in OpenSSH's own format."""
    for load in (serialization.load_pem_private_key, serialization.load_ssh_private_key):
        try:
            return _openssh_public(load(private, None).public_key())
        except (ValueError, TypeError, UnsupportedAlgorithm):
            continue
    raise arguments.error(
        f"--{PRIVATE_KEY} is not an unencrypted private key (PEM or OpenSSH); "
        f"give --{PUBLIC_KEY} too, or fix the key",
        PRIVATE_KEY,
    )


def _openssh_public(key: PublicKeyTypes) -> bytes:
    encoding, format_ = serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    return key.public_bytes(encoding, format_) + b"\n"


def _line_ended(text: str) -> bytes:
    """ssh refuses a key file whose last line has no newline."""
    return (text if text.endswith("\n") else text + "\n").encode()
