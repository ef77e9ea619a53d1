"""Container images built on this machine, without a registry or a Docker engine: Lahar's image
from the repository's Dockerfile, and the two images a real node needs besides it (the stock
kube-scheduler the manifests run beside the extender, and the pause image of every pod sandbox).

- **Tools** are Debian's: buildah builds a Dockerfile without a daemon, mmdebstrap makes a root
  file system from Debian packages, gcc compiles the pause program. `host_tools` checks them and,
  run as root on Debian, installs what is missing with apt-get (one line says so); otherwise it
  fails naming the packages.
- **Lahar's image** is the Dockerfile as shipped, built with `BASE` set to an image made here from
  Debian bookworm's python3 and python3-venv (the public python image cannot be pulled without a
  registry). The base is made once and kept in buildah's store; the build reuses unchanged layers.
  The host's CA bundle is passed as the build secret `ca`, for a network behind a TLS proxy.
- **kube-scheduler** is the binary the dev cluster built from the control plane's pin, alone in
  an image named as the manifests name it (`registry.k8s.io/kube-scheduler:v1.37.2`), so the
  shipped manifests run unchanged. **pause** is Kubernetes' own pause.c from the same module,
  compiled statically.
- Each image is written as a docker-archive tar under `<cache>/images/`, which
  `ctr images import` loads into a node's containerd. The archive's name holds what it was built
  from, so an unchanged input is not written again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import extender
from extender.devcluster.errors import DevClusterError
from extender.devcluster.paths import cache_dir, repository

LAHAR_IMAGE = f"lahar:{extender.__version__}"  # the name manifests/kustomization.yaml sets
BASE_IMAGE = "localhost/lahar-base:bookworm"
PAUSE_IMAGE = "lahar.local/pause:3.10"
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# What a slim image leaves out of the packages it installs.
SLIM = ("/usr/share/man/*", "/usr/share/doc/*", "/usr/share/locale/*", "/usr/share/info/*")

# command -> the Debian package that has it
IMAGE_TOOLS = {"buildah": "buildah", "mmdebstrap": "mmdebstrap", "gcc": "gcc"}


@dataclass(frozen=True)
class Image:
    """A built image: its name and the docker-archive tar holding it."""

    name: str
    archive: Path
    seconds: float  # how long building it took (0 when it was already built)

    @property
    def size(self) -> int:
        return self.archive.stat().st_size


def host_tools(tools: dict[str, str], why: str) -> None:
    """Make sure each command of `tools` (command -> Debian package) is on PATH: as root on Debian
    install the missing packages with apt-get, else fail naming them and `why` they are needed."""
    missing = sorted({package for command, package in tools.items() if not shutil.which(command)})
    if not missing:
        return
    names = " ".join(missing)
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise DevClusterError(
            f"{why} needs the Debian packages {names}; install them (apt-get install {names}) "
            "and run the command again"
        )
    print(f"lahar: installing {names} from Debian ({why})", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        _run(command, f"installing {names}", env=env)


def run(
    argv: Sequence[str],
    what: str,
    *,
    check: bool = True,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a step of a build or of a node's set-up; with `check`, a failure (or a command that
    is not installed) is one line naming the step and the tail of its output. Without it, the
    result is returned whatever it was (127: not installed)."""
    try:
        result = subprocess.run(
            list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        if check:
            raise DevClusterError(f"{what} failed: {argv[0]} is not installed") from None
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]} is not installed")
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(result.stdout + result.stderr)
    if check and result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["(no output)"]
        where = f" (full output: {log})" if log else ""
        raise DevClusterError(f"{what} failed: {lines[-1]}{where}")
    return result


def _run(
    argv: Sequence[str],
    what: str,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> str:
    """`run` a build step that must succeed; its output."""
    return run(argv, what, cwd=cwd, env=env, log=log).stdout


def tool(command: str) -> str:
    """The full path of `command` (the name itself when it is not on PATH: running it fails
    with that name)."""
    return shutil.which(command) or command


def images_dir() -> Path:
    return cache_dir() / "images"


def _has_image(name: str) -> bool:
    return (
        subprocess.run(
            [tool("buildah"), "inspect", "--type", "image", name], capture_output=True, check=False
        ).returncode
        == 0
    )


def _image_id(name: str) -> str:
    return _run(
        ["buildah", "inspect", "--type", "image", "--format", "{{.FromImageID}}", name],
        f"reading the id of {name}",
    ).strip()


def _archive(name: str, key: str) -> Path:
    """Where the docker-archive of image `name` built from `key` lives."""
    stem = name.replace("/", "_").replace(":", "-")
    return images_dir() / f"{stem}-{key[:12]}.tar"


def _write_archive(name: str, key: str) -> Path:
    """Write image `name` as a docker-archive (once per `key`), dropping older ones of it."""
    target = _archive(name, key)
    if target.is_file():
        return target
    images_dir().mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")  # (each writer its own)
    _run(["buildah", "push", name, f"docker-archive:{partial}:{name}"], f"writing {name} to a tar")
    for older in images_dir().glob(target.name.rsplit("-", 1)[0] + "-*.tar"):
        older.unlink()
    partial.rename(target)
    return target


def base_image() -> str:
    """The Dockerfile's BASE made from Debian packages (once: kept in buildah's store)."""
    if _has_image(BASE_IMAGE):
        return BASE_IMAGE
    print(f"lahar: making {BASE_IMAGE} from Debian {DEBIAN_SUITE} packages (once) ...", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lahar-base-") as folder:
        rootfs = Path(folder) / "rootfs.tar"
        _run(
            [
                "mmdebstrap",
                "--variant=essential",
                f"--include={','.join(BASE_PACKAGES)}",
                *(f"--dpkgopt=path-exclude={path}" for path in SLIM),
                DEBIAN_SUITE,
                str(rootfs),
            ],
            "making the base image's root file system with mmdebstrap",
            log=images_dir() / "base.log",
        )
        container = _run(["buildah", "from", "scratch"], "starting the base image").strip()
        try:
            _run(["buildah", "add", container, str(rootfs), "/"], "filling the base image")
            _run(
                [
                    "buildah",
                    "config",
                    "--env",
                    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    container,
                ],
                "configuring the base image",
            )
            _run(["buildah", "commit", container, BASE_IMAGE], "committing the base image")
        finally:
            subprocess.run([tool("buildah"), "rm", container], capture_output=True, check=False)
    print(f"lahar: made {BASE_IMAGE} in {time.monotonic() - started:.0f} s", flush=True)
    return BASE_IMAGE


def lahar_image(source: Path | None = None) -> Image:
    """Build Lahar's image from the Dockerfile of `source` (default: this checkout)."""
    host_tools(IMAGE_TOOLS, "building Lahar's image")
    source = source or repository()
    base = base_image()
    started = time.monotonic()
    secret = [f"--secret=id=ca,src={CA_BUNDLE}"] if CA_BUNDLE.is_file() else []
    _run(
        [
            "buildah",
            "bud",
            "--layers",
            # (a RUN step in a chroot needs no OCI runtime and no cgroup of its own: crun refuses
            # to start a container on a host whose cgroups are mounted in hybrid mode)
            "--isolation=chroot",
            "--network=host",
            f"--build-arg=BASE={base}",
            *secret,
            f"--tag={LAHAR_IMAGE}",
            "--file=Dockerfile",
            ".",
        ],
        f"building {LAHAR_IMAGE} from {source / 'Dockerfile'}",
        cwd=source,
        log=images_dir() / "lahar-build.log",
    )
    archive = _write_archive(LAHAR_IMAGE, _image_id(LAHAR_IMAGE))
    return Image(LAHAR_IMAGE, archive, time.monotonic() - started)


def _single_binary_image(name: str, binary: Path, inside: str, entrypoint: Sequence[str]) -> Image:
    """An image holding one static binary at `inside` (once per content of the binary)."""
    key = hashlib.sha256(binary.read_bytes() + name.encode()).hexdigest()
    if (archive := _archive(name, key)).is_file():
        return Image(name, archive, 0.0)
    started = time.monotonic()
    container = _run(["buildah", "from", "scratch"], f"starting {name}").strip()
    try:
        _run(["buildah", "copy", "--chmod=0755", container, str(binary), inside], f"filling {name}")
        entry = "[" + ", ".join(f'"{part}"' for part in entrypoint) + "]"
        _run(
            [
                "buildah",
                "config",
                "--env=PATH=/usr/local/bin:/usr/bin:/bin",
                f"--entrypoint={entry}",
                container,
            ],
            f"configuring {name}",
        )
        _run(["buildah", "commit", container, name], f"committing {name}")
    finally:
        subprocess.run([tool("buildah"), "rm", container], capture_output=True, check=False)
    return Image(name, _write_archive(name, key), time.monotonic() - started)


def kube_scheduler_image(binary: Path, version: str) -> Image:
    """The stock kube-scheduler `binary` as the image the manifests run beside the extender."""
    host_tools(IMAGE_TOOLS, "building the kube-scheduler image")
    name = f"registry.k8s.io/kube-scheduler:{version}"
    return _single_binary_image(name, binary, "/usr/local/bin/kube-scheduler", ["kube-scheduler"])


def kubernetes_module_source(version: str) -> Path:
    """The source of `k8s.io/kubernetes@version` in Go's module cache (the dev cluster's build
    put it there)."""
    modcache = _run(["go", "env", "GOMODCACHE"], "asking Go for its module cache").strip()
    source = Path(modcache) / f"k8s.io/kubernetes@{version}"
    if not source.is_dir():
        raise DevClusterError(
            f"{source} is missing from Go's module cache: run `go mod download` in "
            "tests/controlplane/kubernetes-1.37 (or `lahar dev-cluster build` on a fresh machine)"
        )
    return source


def pause_image(kubernetes_source: Path) -> Image:
    """The pod sandbox's pause image, from `build/pause/linux/pause.c` of the Kubernetes module
    at `kubernetes_source`, compiled statically."""
    host_tools(IMAGE_TOOLS, "building the pause image")
    source = kubernetes_source / "build" / "pause" / "linux" / "pause.c"
    binary = images_dir() / "pause"
    images_dir().mkdir(parents=True, exist_ok=True)
    _run(
        ["gcc", "-Os", "-static", "-DVERSION=3.10-lahar", "-o", str(binary), str(source)],
        f"compiling {source}",
    )
    return _single_binary_image(PAUSE_IMAGE, binary, "/pause", ["/pause"])
