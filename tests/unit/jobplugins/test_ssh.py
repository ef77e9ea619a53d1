"""ssh: a Secret created once with a valid RSA key pair (or the user's), the ssh config listing
every pod, and the key files mounted 0600 in every container."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from extender.api.batch import Job
from extender.jobplugins import JobPlugin, make_plugins
from tests.unit.jobplugins.pods import MakePod, all_containers

CONFIG = """StrictHostKeyChecking no
UserKnownHostsFile /dev/null
Host tensorflow-benchmark-ps-0
  HostName tensorflow-benchmark-ps-0.tensorflow-benchmark
Host tensorflow-benchmark-worker-0
  HostName tensorflow-benchmark-worker-0.tensorflow-benchmark
Host tensorflow-benchmark-worker-1
  HostName tensorflow-benchmark-worker-1.tensorflow-benchmark
"""


def ssh(*args: str) -> JobPlugin:
    [plugin] = make_plugins({"ssh": list(args)})
    return plugin


def secret_files(plugin: JobPlugin, job: Job) -> dict[str, bytes]:
    [secret] = plugin.objects(job)
    assert (secret.api_version, secret.kind, secret.name) == (
        "v1",
        "Secret",
        f"{job.metadata.name}-ssh",
    )
    assert secret.replace is False  # a new key under running pods would lock them out
    body = secret.build()
    assert body["metadata"] == {
        "name": "tensorflow-benchmark-ssh",
        "namespace": "ml",
        "labels": {"volcano.sh/job-name": "tensorflow-benchmark", "volcano.sh/job-namespace": "ml"},
        "ownerReferences": [job.owner_reference()],
    }
    assert body["type"] == "Opaque"
    return {key: base64.b64decode(value) for key, value in body["data"].items()}


def test_generated_key_pair_is_valid_and_matches(tf_job: Job) -> None:
    files = secret_files(ssh(), tf_job)
    assert sorted(files) == ["authorized_keys", "config", "id_rsa", "id_rsa.pub"]
    assert files["id_rsa"].startswith(b"-----BEGIN RSA PRIVATE KEY-----\n")
    private = serialization.load_pem_private_key(files["id_rsa"], password=None)
    assert isinstance(private, rsa.RSAPrivateKey)
    assert private.key_size == 2048
    public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert files["id_rsa.pub"] == files["authorized_keys"] == public + b"\n"
    assert files["config"].decode() == CONFIG


def test_each_build_is_a_new_key_so_the_controller_creates_it_once(tf_job: Job) -> None:
    [secret] = ssh().objects(tf_job)
    assert secret.build()["data"]["id_rsa"] != secret.build()["data"]["id_rsa"]


def test_user_keys_are_used_as_given(tf_job: Job) -> None:
    files = secret_files(
        ssh("--ssh-private-key=PRIVATE", "--ssh-public-key=ssh-rsa AAAA u@h"), tf_job
    )
    assert files["id_rsa"] == b"PRIVATE\n"
    assert files["id_rsa.pub"] == files["authorized_keys"] == b"ssh-rsa AAAA u@h\n"


@pytest.mark.parametrize("encoding", ["pem", "openssh"])
def test_a_user_private_key_alone_gives_its_public_key(tf_job: Job, encoding: str) -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    private_format = {
        "pem": serialization.PrivateFormat.PKCS8,
        "openssh": serialization.PrivateFormat.OpenSSH,
    }[encoding]
    private = key.private_bytes(
        serialization.Encoding.PEM, private_format, serialization.NoEncryption()
    ).decode()
    files = secret_files(ssh(f"--ssh-private-key={private}"), tf_job)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert files["id_rsa"] == private.encode()
    assert files["authorized_keys"] == public + b"\n"


@pytest.mark.parametrize(
    ("args", "path"),
    [((), "/root/.ssh"), (("--ssh-key-file-path=/home/mpi/.ssh",), "/home/mpi/.ssh")],
)
def test_key_files_are_mounted_in_every_container(
    tf_job: Job, make_pod: MakePod, args: tuple[str, ...], path: str
) -> None:
    pod, task = make_pod(tf_job, "worker", 1)
    plugin = ssh(*args)
    plugin.mutate_pod(pod, tf_job, task, 1)
    plugin.mutate_pod(pod, tf_job, task, 1)  # twice: nothing repeated
    volume: dict[str, Any] = {
        "name": "tensorflow-benchmark-ssh",
        "secret": {
            "secretName": "tensorflow-benchmark-ssh",
            "items": [
                {"key": key, "path": f".ssh/{key}"}
                for key in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
            ],
            "defaultMode": 0o600,
        },
    }
    assert pod["spec"]["volumes"] == [volume]
    assert volume["secret"]["defaultMode"] == 384
    for c in all_containers(pod):
        assert c["volumeMounts"] == [
            {"name": "tensorflow-benchmark-ssh", "mountPath": path, "subPath": ".ssh"}
        ]
