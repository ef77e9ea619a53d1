"""Building the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
KWOK) and kubectl (whose `kubectl kustomize` renders `manifests/`) from the Go modules pinned under
`tests/controlplane/`; asked for, also a real node's kubelet and kube-proxy (`--real-node`), from
the same Kubernetes pin as the control plane; and the tools that check what Lahar ships (Helm for
the chart, Prometheus and promtool for the alert rules and dashboards), each its own module.

Each Go module is built once per content of its go.mod and go.sum: the binaries go to
`<cache>/bin/<module>-<version>-<hash>/`, written to a temporary folder first and renamed into
place, so an interrupted build never leaves a half-written binary that looks finished. A file lock
makes concurrent callers (a test run and a demo) wait for one build instead of racing it. The build
says what it builds and how long it took; a missing or too old Go fails with one line saying what
to do.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from extender.devcluster.errors import DevClusterError
from extender.devcluster.paths import cache_dir, controlplane_source

# The stock KWOK stages the dev cluster uses: nodes turn Ready and keep a heartbeat, bound pods
# turn Running, deleted pods go away. (The stock pod-complete stage is left out on purpose: it
# completes every pod owned by any kind named Job, Volcano Jobs included.)
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat/node-heartbeat.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-delete.yaml",
)


@dataclass(frozen=True)
class GoModule:
    """One Go module under tests/controlplane and the binaries built from it."""

    folder: str
    pinned: str  # the module path whose version names the build
    packages: tuple[str, ...]
    binaries: tuple[str, ...]
    version_ldflags: bool = False
    optional: bool = False  # built only when asked for (the benchmarks' peer, the real node)
    part: str = ""  # names the build when one module gives two (the control plane, the node)


# The Kubernetes minor versions the dev cluster runs, each pinned by a Go module of its own under
# tests/controlplane (its staging modules at the same patch), and the one used unless told.
KUBERNETES = {"1.35": "kubernetes", "1.37": "kubernetes-1.37"}
DEFAULT_KUBERNETES = "1.37"

MODULES = (
    GoModule(
        folder="kubernetes",
        pinned="k8s.io/kubernetes",
        packages=(
            "k8s.io/kubernetes/cmd/kube-apiserver",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-scheduler",
            "k8s.io/kubernetes/cmd/kubectl",
        ),
        binaries=("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
        version_ldflags=True,
    ),
    GoModule(
        folder="etcd",
        pinned="go.etcd.io/etcd/server/v3",
        packages=(".",),
        binaries=("etcd",),
    ),
    GoModule(
        folder="kwok",
        pinned="sigs.k8s.io/kwok",
        packages=("sigs.k8s.io/kwok/cmd/kwok",),
        binaries=("kwok",),
    ),
    # A real node (`dev-cluster up --real-node`): kubelet and kube-proxy of the same pin.
    GoModule(
        folder="kubernetes",
        pinned="k8s.io/kubernetes",
        packages=("k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"),
        binaries=("kubelet", "kube-proxy"),
        version_ldflags=True,
        optional=True,
        part="node",
    ),
    # The gang-scheduling peer of benchmarks/e2e.py: kube-scheduler with scheduler-plugins'
    # Coscheduling, at the version matching the control plane.
    GoModule(
        folder="scheduler-plugins",
        pinned="sigs.k8s.io/scheduler-plugins",
        packages=("sigs.k8s.io/scheduler-plugins/cmd/scheduler",),
        binaries=("scheduler",),
        optional=True,
    ),
    # The tools that check what Lahar ships: Helm lints and renders charts/lahar; promtool checks
    # and unit-tests the alert rules and parses the dashboards' queries; Prometheus scrapes the
    # dev cluster in an end-to-end test.
    GoModule(
        folder="helm",
        pinned="helm.sh/helm/v3",
        packages=("helm.sh/helm/v3/cmd/helm",),
        binaries=("helm",),
        optional=True,
    ),
    GoModule(
        folder="prometheus",
        pinned="github.com/prometheus/prometheus",
        packages=(
            "github.com/prometheus/prometheus/cmd/prometheus",
            "github.com/prometheus/prometheus/cmd/promtool",
        ),
        binaries=("prometheus", "promtool"),
        optional=True,
    ),
)

# The optional modules that build tools rather than a cluster's parts.
TOOLS = ("helm", "prometheus")


@dataclass(frozen=True)
class Binaries:
    """Paths of the built control-plane binaries and KWOK's stock stage files."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path
    kwok_stages: tuple[Path, ...]
    kubernetes_version: str
    coscheduling_scheduler: Path | None = None  # with ensure_binaries(peer=True)
    kubelet: Path | None = None  # with ensure_binaries(node=True), and kube-proxy beside it
    kube_proxy: Path | None = None


def _go_directive(text: str, keyword: str) -> str | None:
    match = re.search(rf"^{re.escape(keyword)}\s+(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None


def module_version(go_mod: str, module: str) -> str:
    """The version `go_mod` requires of `module`."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod, re.MULTILINE)
    if not match:
        raise DevClusterError(f"go.mod does not require {module}; the control-plane pin is broken")
    return match.group(1)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def check_go(required: str) -> str:
    """Return the path of `go`; fail with one clear line if Go is missing or too old."""
    go = shutil.which("go")
    what = "kube-apiserver, kube-scheduler, kube-controller-manager, etcd and KWOK"
    if go is None:
        raise DevClusterError(
            f"Go is not installed (no `go` on PATH): Lahar builds {what} from Go modules on first "
            f"use; install Go {required} or newer and run the command again"
        )
    found = subprocess.run(
        [go, "env", "GOVERSION"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if _version_tuple(found) < _version_tuple(required):
        raise DevClusterError(
            f"Go {found or '(unknown version)'} is too old: the pinned control plane needs Go "
            f"{required} or newer; install it and run the command again"
        )
    return go


def _ldflags(module: GoModule, version: str) -> str:
    flags = "-s -w"
    if module.version_ldflags:
        major, minor = _version_tuple(version)[:2]
        base = "k8s.io/component-base/version"
        flags += (
            f" -X {base}.gitVersion={version} -X {base}.gitMajor={major} -X {base}.gitMinor={minor}"
        )
    return flags


def _build_dir(root: Path, module: GoModule) -> tuple[Path, str, str]:
    source = root / module.folder
    try:
        go_mod = (source / "go.mod").read_text()
        go_sum = (source / "go.sum").read_bytes()
    except FileNotFoundError as exc:
        raise DevClusterError(
            f"the control-plane Go module {source} is missing ({exc.filename}); "
            "run from a Lahar checkout or set LAHAR_CONTROLPLANE_SRC"
        ) from exc
    version = module_version(go_mod, module.pinned)
    digest = hashlib.sha256(go_mod.encode() + go_sum + _ldflags(module, version).encode())
    part = f"-{module.part}" if module.part else ""
    name = f"{module.folder}{part}-{version}-{digest.hexdigest()[:12]}"
    return cache_dir() / "bin" / name, version, go_mod


@contextmanager
def _build_lock() -> Iterator[None]:
    cache_dir().mkdir(parents=True, exist_ok=True)
    with (cache_dir() / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    return env


def _build_module(go: str, root: Path, module: GoModule, target: Path, version: str) -> None:
    names = ", ".join(module.binaries)
    print(f"lahar: building {names} {version} from Go modules (once per version) ...", flush=True)
    started = time.monotonic()
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    log = target.with_name(target.name + ".log")
    command = [go, "build", "-ldflags", _ldflags(module, version), "-o", f"{partial}/"]
    with log.open("w") as out:
        result = subprocess.run(
            [*command, *module.packages],
            cwd=root / module.folder,
            env=_go_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if result.returncode != 0:
        tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        raise DevClusterError(f"building {names} failed: {tail[0]} (full log: {log})")
    if module.folder == "kwok":
        _copy_kwok_stages(go, partial, version)
    partial.rename(target)
    print(f"lahar: built {names} in {time.monotonic() - started:.0f} s", flush=True)


def _copy_kwok_stages(go: str, target: Path, version: str) -> None:
    modcache = subprocess.run(
        [go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stages = Path(modcache) / f"sigs.k8s.io/kwok@{version}" / "kustomize" / "stage"
    (target / "stages").mkdir()
    for stage in KWOK_STAGES:
        shutil.copyfile(stages / stage, target / "stages" / Path(stage).name)


def chosen_kubernetes() -> str:
    """The version to run unless told otherwise: `$LAHAR_KUBERNETES`, else the default."""
    return os.environ.get("LAHAR_KUBERNETES") or DEFAULT_KUBERNETES


def kubernetes_folder(version: str) -> str:
    """The folder under tests/controlplane pinning Kubernetes `version` ("1.37", or "1.37.2"
    when that is the patch pinned: checked when it is built)."""
    minor = ".".join(version.removeprefix("v").split(".")[:2])
    if minor not in KUBERNETES:
        known = ", ".join(sorted(KUBERNETES))
        raise DevClusterError(f"Kubernetes {version}: the dev cluster runs {known}")
    return KUBERNETES[minor]


def ensure_binaries(
    *, quiet: bool = False, peer: bool = False, node: bool = False, kubernetes: str | None = None
) -> Binaries:
    """Build whatever is not cached yet and return the binaries' paths: the control plane of
    Kubernetes `kubernetes` (a minor version of `KUBERNETES`; default `chosen_kubernetes()`),
    etcd and KWOK (with `peer`, also the benchmarks' Coscheduling scheduler, which matches
    1.35; with `node`, a real node's kubelet and kube-proxy)."""
    kubernetes = kubernetes or chosen_kubernetes()
    root = controlplane_source()
    folder = kubernetes_folder(kubernetes)
    modules = [replace(m, folder=folder) if m.folder == "kubernetes" else m for m in MODULES]
    asked = {"scheduler-plugins": peer, "node": node, **dict.fromkeys(TOOLS, False)}
    wanted = [m for m in modules if not m.optional or asked[m.part or m.folder]]
    plans = [(module, *_build_dir(root, module)) for module in wanted]
    pinned = plans[0][2]  # (the Kubernetes module comes first)
    if node and "k8s.io/kubernetes/cmd/kubelet" not in plans[0][3]:
        raise DevClusterError(
            f"Kubernetes {kubernetes}: a real node runs on {DEFAULT_KUBERNETES} only "
            f"(tests/controlplane/{folder} pins no kubelet)"
        )
    if not pinned.removeprefix("v").startswith(kubernetes.removeprefix("v")):
        raise DevClusterError(f"Kubernetes {kubernetes}: tests/controlplane/{folder} pins {pinned}")
    missing = [plan for plan in plans if not plan[1].is_dir()]
    if missing:
        required = max(
            (_go_directive(go_mod, "go") or "1.0" for *_, go_mod in missing), key=_version_tuple
        )
        go = check_go(required)
        with _build_lock():
            for module, target, version, _ in missing:
                if not target.is_dir():  # another process may have built it while we waited
                    _build_module(go, root, module, target, version)
    elif not quiet:
        print(f"lahar: control plane binaries cached in {cache_dir() / 'bin'}", file=sys.stderr)
    dirs = {module.part or module.folder: target for module, target, _, _ in plans}
    kube = dirs[folder]
    return Binaries(
        etcd=dirs["etcd"] / "etcd",
        kube_apiserver=kube / "kube-apiserver",
        kube_controller_manager=kube / "kube-controller-manager",
        kube_scheduler=kube / "kube-scheduler",
        kubectl=kube / "kubectl",
        kwok=dirs["kwok"] / "kwok",
        kwok_stages=tuple(dirs["kwok"] / "stages" / Path(s).name for s in KWOK_STAGES),
        kubernetes_version=pinned,
        coscheduling_scheduler=(
            dirs["scheduler-plugins"] / "scheduler" if "scheduler-plugins" in dirs else None
        ),
        kubelet=dirs["node"] / "kubelet" if "node" in dirs else None,
        kube_proxy=dirs["node"] / "kube-proxy" if "node" in dirs else None,
    )


def ensure_tool(name: str) -> Path:
    """The folder holding the binaries of tool module `name` (one of `TOOLS`: `helm` holds
    `helm`, `prometheus` holds `prometheus` and `promtool`), built first when not cached."""
    if name not in TOOLS:
        raise DevClusterError(f"no tool {name!r}: the tools built are {', '.join(TOOLS)}")
    (module,) = (m for m in MODULES if m.folder == name)
    target, version, go_mod = _build_dir(controlplane_source(), module)
    if not target.is_dir():
        go = check_go(_go_directive(go_mod, "go") or "1.0")
        with _build_lock():
            if not target.is_dir():
                _build_module(go, controlplane_source(), module, target, version)
    return target
