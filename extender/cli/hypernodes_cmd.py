"""`lahar hypernodes build|list`: Volcano's HyperNodes made from node labels, and the tree shown.

build reads the cluster's nodes and makes the HyperNodes their labels describe
(`api.topology_labels`: `--label` the nearest tier first, `--tier-name` naming tiers in the same
order). It prints them as YAML for `kubectl apply -f -`; with `--apply` it writes them instead and
deletes the ones it made before that the labels no longer describe (only HyperNodes carrying its
source label are ever changed or deleted: `kube.hyper_nodes`). A value whose nodes sit under two
values of the label above is refused before anything is printed or written (a HyperNode has one
parent); nodes without the tier-1 label are named on stderr, as a note.

list prints the HyperNode tree as the cluster holds it, whoever made it: each HyperNode under its
parent, indented two spaces per level, with its tier, how many nodes it contains (directly or
through its members) and their cpu: allocatable, and free of the pods bound there that have not
finished. The tree's pure parts (`tree_rows`, `build_output`) are here; reading and writing go
through the kube layer.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from extender.api.objects import Node, Pod
from extender.api.quantity import format_units
from extender.api.resources import CPU
from extender.api.topology import API_VERSION, HYPER_NODE, KIND, NODE, HyperNode, members_of
from extender.api.topology_labels import (
    SOURCE_LABEL,
    LabelTier,
    LabelTopology,
    build,
    label_tiers,
    manifest,
)
from extender.cli import kubectl
from extender.kube import list_objects
from extender.kube.hyper_nodes import sync_hyper_nodes

HEADERS = ("NAME", "TIER", "NODES", "FREE-CPU", "ALLOCATABLE-CPU")
WIDE = ("TIERNAME", "SOURCE")
SHOWN_NAMES = 10  # nodes named in a note, at most
RUNNING = "status.phase!=Succeeded,status.phase!=Failed"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "hypernodes", help="build Volcano HyperNodes from node labels, or list the HyperNode tree"
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    building = verbs.add_parser(
        "build",
        help="print the HyperNodes the nodes' labels describe as YAML (or --apply them)",
    )
    building.add_argument(
        "--label",
        dest="labels",
        action="append",
        default=[],
        metavar="LABEL",
        help="a node label whose values are a tier's HyperNodes; once per tier, the nearest "
        "first (e.g. --label rack --label spine)",
    )
    building.add_argument(
        "--tier-name",
        dest="tier_names",
        action="append",
        default=[],
        metavar="NAME",
        help="the name of each tier, in --label's order (default: its label)",
    )
    building.add_argument(
        "--apply",
        action="store_true",
        help="create or update them, and delete the HyperNodes made from labels before that "
        "are no longer described",
    )
    kubectl.add_connection_flags(building, namespaced=False)
    building.set_defaults(run=_build)
    kubectl.add_list(
        verbs, _list, help="the HyperNode tree with node counts and cpu", namespaced=False
    )


@dataclass(frozen=True)
class BuildOutput:
    """What build prints: the manifests, YAML on stdout, and notes for stderr."""

    manifests: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]

    @property
    def yaml(self) -> str:
        return "---\n".join(yaml.safe_dump(m, sort_keys=False) for m in self.manifests)


def build_output(tiers: Sequence[LabelTier], built: LabelTopology) -> BuildOutput:
    """The manifests and notes of a built topology; a ValueError when a value would need two
    parents (each such value on a line of its own)."""
    if built.conflicts:
        raise ValueError(
            "--label: a HyperNode has one parent, but the labels put these under several:\n  "
            + "\n  ".join(str(c) for c in built.conflicts)
        )
    notes = []
    if built.unplaced:
        shown = ", ".join(built.unplaced[:SHOWN_NAMES])
        more = len(built.unplaced) - SHOWN_NAMES
        notes.append(
            f"{len(built.unplaced)} nodes without the label {tiers[0].label} are in no "
            f"HyperNode: {shown}{f' and {more} more' if more > 0 else ''}"
        )
    if not built.hyper_nodes:
        notes.append(f"no node has the label {tiers[0].label}: no HyperNodes")
    return BuildOutput(tuple(manifest(h) for h in built.hyper_nodes), tuple(notes))


def _build(args: argparse.Namespace) -> int:
    try:
        tiers = label_tiers(args.labels, args.tier_names)
    except ValueError as error:
        raise SystemExit(f"lahar hypernodes build: {error}") from None
    with kubectl.connect(args) as cluster:
        nodes = [Node.model_validate(n) for n in list_objects(cluster.api, "v1", "Node")]
        try:
            output = build_output(tiers, build(tiers, nodes))
        except ValueError as error:
            raise SystemExit(f"lahar hypernodes build: {error}") from None
        for note in output.notes:
            print(f"lahar hypernodes build: {note}", file=sys.stderr)
        if not args.apply:
            if output.manifests:
                print(output.yaml, end="")
            return 0
        done = sync_hyper_nodes(cluster.api, output.manifests)
    for verb, items in (("created", done.create), ("configured", done.update)):
        for item in items:
            print(f"hypernode {item['metadata']['name']} {verb}")
    if done.unchanged:
        print(f"{len(done.unchanged)} hypernodes unchanged")
    for name in done.delete:
        print(f"hypernode {name} deleted")
    return 0


def _list(args: argparse.Namespace) -> int:
    with kubectl.connect(args) as cluster:
        found = list_objects(cluster.api, API_VERSION, KIND)
        if args.output in ("json", "yaml"):
            found.sort(key=lambda h: h["metadata"]["name"])
            print(kubectl.dump(kubectl.listed([kubectl.clean(h) for h in found]), args.output))
            return 0
        if not found:
            print("No HyperNodes found.")
            return 0
        nodes = list_objects(cluster.api, "v1", "Node")
        pods = list_objects(cluster.api, "v1", "Pod", field_selector=RUNNING)
    cells = tree_rows(
        [HyperNode.model_validate(h) for h in found],
        [Node.model_validate(n) for n in nodes],
        [Pod.model_validate(p) for p in pods],
        wide=args.output == "wide",
    )
    print(kubectl.table(HEADERS + (WIDE if args.output == "wide" else ()), cells))
    return 0


def tree_rows(
    hyper_nodes: Sequence[HyperNode],
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    *,
    wide: bool = False,
) -> list[list[str]]:
    """The HyperNodes' rows in tree order: the top ones (in no other) by tier, highest first,
    then name; each followed by its HyperNode members by name, indented by depth. A HyperNode
    that is a member of several is shown under each; one on a loop only (no top) at the end."""
    named = {h.name: h for h in hyper_nodes}
    labelled = [(n.metadata.name, n.metadata.labels) for n in nodes]
    allocatable = {n.metadata.name: n.status.allocatable.get(CPU) for n in nodes}
    used: dict[str, int] = defaultdict(int)
    for pod in pods:
        if pod.spec.node_name and not pod.finished:
            used[pod.spec.node_name] += pod.request.get(CPU)

    def children(h: HyperNode) -> list[str]:
        return sorted(
            name
            for m in h.spec.members or ()
            if m.type == HYPER_NODE
            for name in members_of(m.selector, [])
            if name in named
        )

    def own_nodes(h: HyperNode) -> set[str]:
        return {
            name
            for m in h.spec.members or ()
            if m.type == NODE
            for name in members_of(m.selector, labelled)
            if name in allocatable
        }

    def contained(name: str, path: frozenset[str]) -> set[str]:
        h = named[name]
        found = own_nodes(h)
        for child in children(h):
            if child not in path:
                found |= contained(child, path | {child})
        return found

    def walk(name: str, depth: int, path: frozenset[str]) -> Iterator[list[str]]:
        h = named[name]
        inside = contained(name, path)
        alloc = sum(allocatable[n] for n in inside)
        free = alloc - sum(used[n] for n in inside)
        row = ["  " * depth + name, str(h.spec.tier), str(len(inside))]
        row += [format_units(free, CPU), format_units(alloc, CPU)]
        if wide:
            row += [h.spec.tier_name or "-", h.metadata.labels.get(SOURCE_LABEL) or "-"]
        yield row
        for child in children(h):
            if child not in path:
                yield from walk(child, depth + 1, path | {child})

    below = {child for h in hyper_nodes for child in children(h)}
    tops = sorted((n for n in named if n not in below), key=lambda n: (-named[n].spec.tier, n))
    rows = [row for top in tops for row in walk(top, 0, frozenset({top}))]
    for name in sorted(named):
        if name not in {row[0].strip() for row in rows}:
            rows += walk(name, 0, frozenset({name}))
    return rows
