"""HyperNode rules (`topology.volcano.sh/v1alpha1`, cluster-scoped), Volcano's, for CREATE and
UPDATE, every problem at once, each naming its field:

- the spec parses (a tier that is a number, members of type Node or HyperNode);
- `tier` is 0 or more, `tierName` at most 253 characters;
- at least one member;
- each member's selector gives exactly one of exactMatch, regexMatch and labelMatch;
- an exactMatch name is not empty and is a DNS subdomain (a node's or a HyperNode's name);
- a regexMatch pattern is not empty and compiles.

Lahar's CRD (`manifests/crds/crd-topology.yaml`) refuses most of these before the webhook is
called, as Volcano's does; the webhook words them and reports every one, and checks what no schema
can (a pattern that compiles), also where Volcano's own CRD, which lacks some of the checks in
older releases, is installed.

Two departures. Volcano's admission policy checks an exact name as a qualified name (63
characters at most without a prefix); node names are DNS subdomains of up to 253 characters, and
Lahar admits them, as both CRDs do. A pattern is compiled with Python's `re`, which the scheduler
matches with (`api.topology.members_of`), where Volcano's scheduler uses Go's RE2: the common
syntax (classes, groups, alternation, repetition, anchors) reads the same in both, but Python
accepts backreferences and lookaround, which RE2 refuses, refuses a few RE2 forms (`\\z`,
`\\pL`), and reads a POSIX class (`[[:digit:]]`) as a set of characters; write patterns in the
common syntax (`[0-9]`) so that both read them alike.

labelMatch takes effect for members of type Node only (Volcano's API says so; its admission
policy admits it on a HyperNode member all the same). Lahar admits it too and warns, as it warns
of an empty labelMatch, which chooses no node.

The same concept at a higher layer: `controller.hypernodes`, which keeps the HyperNodes built from
node labels in step with the nodes (the model both read is `api.topology`).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from extender.admission.names import dns_subdomain
from extender.admission.problems import LONGEST, Problem, field, parse, shown
from extender.api.topology import MAX_NAME, NODE, HyperNode, MemberSpec

Loc = tuple[str | int, ...]
SELECTORS = "exactMatch, regexMatch or labelMatch"


def parse_hyper_node(obj: Mapping[str, Any] | None) -> tuple[HyperNode | None, list[Problem]]:
    return parse(HyperNode, obj, "HyperNode")


def check_hyper_node(obj: Mapping[str, Any] | None) -> list[Problem]:
    """CREATE and UPDATE: the rules above."""
    hyper_node, problems = parse_hyper_node(obj)
    if hyper_node is None:
        return problems
    spec = hyper_node.spec
    if spec.tier < 0:
        problems.append(Problem("spec.tier", f"must be 0 or more, got {shown(spec.tier)}"))
    if spec.tier_name is not None and len(spec.tier_name) > MAX_NAME:
        problems.append(
            Problem(
                "spec.tierName",
                f"must be at most {MAX_NAME} characters (it is {len(spec.tier_name)})",
            )
        )
    if not spec.members:
        problems.append(
            Problem("spec.members", "must list at least one member (a node or a HyperNode)")
        )
    for index, member in enumerate(spec.members or ()):
        problems += _member(member, ("spec", "members", index))
    return problems


def _member(member: MemberSpec, at: Loc) -> Iterator[Problem]:
    selector = member.selector
    kinds = selector.kinds
    if not kinds:
        yield Problem(field(*at, "selector"), f"must give one of {SELECTORS}")
    elif len(kinds) > 1:
        yield Problem(
            field(*at, "selector"),
            f"gives {' and '.join(kinds)}: give only one of {SELECTORS}",
        )
    if selector.exact_match is not None:
        name = selector.exact_match.name
        where = field(*at, "selector", "exactMatch", "name")
        if not name:
            yield Problem(where, "must not be empty: the name of a node or a HyperNode")
        elif (reason := dns_subdomain(name, MAX_NAME)) is not None:
            yield Problem(where, f"{shown(name)} {reason}")
    if selector.regex_match is not None:
        pattern = selector.regex_match.pattern
        where = field(*at, "selector", "regexMatch", "pattern")
        if not pattern:
            yield Problem(where, "must not be empty: a regular expression on node names")
        elif (reason := pattern_error(pattern)) is not None:
            yield Problem(where, f"{shown(pattern)} is not a regular expression: {reason}")


def pattern_error(pattern: str) -> str | None:
    """Why `pattern` does not compile, or None when it does."""
    try:
        with warnings.catch_warnings():  # (a nested set warns of a future change of meaning)
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(pattern)
    except re.error as error:
        return str(error)[:LONGEST]
    except (RecursionError, OverflowError):  # nesting or a repeat count beyond the compiler
        return "it is too deeply nested or repeats too many times"
    return None


def hyper_node_warnings(obj: Mapping[str, Any] | None) -> list[str]:
    """The webhook's warnings for a HyperNode it admits: a labelMatch that chooses nothing."""
    hyper_node, _ = parse_hyper_node(obj)
    if hyper_node is None:
        return []  # refused
    found = []
    for index, member in enumerate(hyper_node.spec.members or ()):
        label_match = member.selector.label_match
        if label_match is None:
            continue
        where = field("spec", "members", index, "selector", "labelMatch")
        if member.type != NODE:
            found.append(
                f"{where} takes effect for members of type Node only: this member of type "
                f"{member.type} chooses nothing by it"
            )
        elif label_match.empty:
            found.append(f"{where} is empty: it chooses no node")
    return found
