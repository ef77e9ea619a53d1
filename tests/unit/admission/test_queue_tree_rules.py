"""Volcano's rules for the queue tree (`spec.parent`), rule by rule (docs/admission-rules.md lists
them): for each, a Queue, Job or PodGroup Volcano accepts is accepted, and one it refuses is
refused, the denial naming the field. Volcano's nearest-ancestor capability check is ported below
and compared with Lahar's over generated trees.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.admission.admit import (
    Outcome,
    Rule,
    Settings,
    validate_job,
    validate_pod_group,
    validate_queue,
)
from extender.admission.queue_defaults import queue_defaults
from extender.admission.queue_tree import MAX_DEPTH, lineage
from extender.admission.queues import check_queue
from extender.api.quantity import parse_quantity
from tests.builders import (
    QueueBuilder,
    ReviewBuilder,
    make_group,
    make_job,
    make_queue,
    make_review,
)
from tests.unit.admission.helpers import Queues

GPU = "nvidia.com/gpu"


def under(parent: str, name: str) -> QueueBuilder:
    return make_queue(name).set("spec.parent", parent)


def tree() -> Queues:
    """root
    ├── default
    ├── ml        capability cpu 8, memory 32Gi; deserved cpu 6; guarantee cpu 4
    │   ├── train capability cpu 4; deserved cpu 3; guarantee cpu 2
    │   │   └── big    (no resources)
    │   └── serve deserved cpu 2; guarantee cpu 1
    ├── plain     (no resources, no children)
    ├── busy      (no children; PodGroup ns/g1 names it)
    ├── shut      Closed
    │   └── inner
    ├── winding   Closing
    │   └── down
    │       └── leaf
    └── l1 ── l2 ── l3 ── l4 ── l5   (a chain MAX_DEPTH deep)
    """
    view = Queues(
        make_queue("default").state("Open"),
        make_queue("ml")
        .capability(cpu="8", memory="32Gi")
        .deserved(cpu="6")
        .guarantee(cpu="4")
        .set("spec.parent", "root"),
        under("ml", "train").capability(cpu="4").deserved(cpu="3").guarantee(cpu="2"),
        under("train", "big"),
        under("ml", "serve").deserved(cpu="2").guarantee(cpu="1"),
        make_queue("plain"),
        make_queue("busy"),
        make_queue("shut").state("Closed"),
        under("shut", "inner"),
        make_queue("winding").state("Closing"),
        under("winding", "down"),
        under("down", "leaf"),
        make_queue("l1"),
    )
    for level in range(2, MAX_DEPTH + 1):
        view.add(under(f"l{level - 1}", f"l{level}"))
    return view.with_groups("busy", "ns/g1")


def ml() -> QueueBuilder:
    """`ml` as stored."""
    return (
        make_queue("ml")
        .capability(cpu="8", memory="32Gi")
        .deserved(cpu="6")
        .guarantee(cpu="4")
        .set("spec.parent", "root")
    )


def run(rule: Rule, review: ReviewBuilder, view: Queues | None = None) -> Outcome:
    return rule(review.request(), view or tree(), Settings("lahar"))


def accepted(outcome: Outcome) -> None:
    assert outcome.decision.allowed, outcome.message


def refused(outcome: Outcome, path: str, reason: str) -> None:
    """Refused, the denial naming `path` with a reason that says `reason`."""
    assert not outcome.decision.allowed
    found = [p.reason for p in outcome.decision.problems if p.path == path]
    assert found, outcome.message
    assert any(reason in said for said in found), found
    assert f"{path}: " in outcome.message if path else reason in outcome.message


def create(builder: QueueBuilder) -> ReviewBuilder:
    return make_review(builder.build())


def moved(builder: QueueBuilder, stored: QueueBuilder) -> ReviewBuilder:
    return make_review(builder.build()).update(stored.build())


# -- Queue CREATE and UPDATE ---------------------------------------------------------------------

QUEUE = [
    (
        "queue-tree-depth",
        create(under(f"l{MAX_DEPTH - 1}", "q")),
        create(under(f"l{MAX_DEPTH}", "q")),
        "spec.parent",
        f"queue q would be {MAX_DEPTH + 1} levels under root, more than {MAX_DEPTH}",
    ),
    (
        "queue-tree-no-cycle",
        moved(under("serve", "big"), under("train", "big")),
        moved(ml().set("spec.parent", "big"), ml()),
        "spec.parent",
        "queue big is under queue ml (ml -> train -> big, each the parent of the next): "
        "a queue cannot be under its own descendant",
    ),
    (
        "queue-tree-parent-without-work",
        create(under("plain", "q")),
        create(under("busy", "q")),
        "spec.parent",
        "queue busy has 1 PodGroup(s) (ns/g1) and no child queue: a queue with work cannot "
        "become a parent",
    ),
    (
        "queue-capability-within-parent",
        create(under("train", "q").capability(cpu="4")),
        create(under("train", "q").capability(cpu="4001m")),
        "spec.capability.cpu",
        "4001m is more than the capability 4 of queue train above it",
    ),
    (
        "queue-capability-within-nearest-ancestor",
        create(under("big", "q").capability(memory="32Gi")),
        create(under("big", "q").capability(memory="33Gi")),
        "spec.capability.memory",
        "33Gi is more than the capability 32Gi of queue ml above it",
    ),
    (
        "queue-siblings-guarantee",
        create(under("ml", "q").guarantee(cpu="1").deserved(cpu="1")),
        create(under("ml", "q").guarantee(cpu="2").deserved(cpu="2")),
        "spec.guarantee.resource.cpu",
        "the child queues of ml would have a guarantee of 5 in all "
        "(serve 1, train 2, this queue 2), more than ml's guarantee 4",
    ),
    (
        "queue-siblings-deserved",
        create(under("ml", "q").deserved(cpu="1")),
        create(under("ml", "q").deserved(cpu="1500m")),
        "spec.deserved.cpu",
        "the child queues of ml would have a deserved of 6500m in all",
    ),
    (
        "queue-siblings-guarantee-parent-names-none",
        create(under("plain", "q").capability(cpu="2")),
        create(under("plain", "q").guarantee(cpu="1").deserved(cpu="1")),
        "spec.guarantee.resource.cpu",
        "more than plain's guarantee, which names no cpu (0)",
    ),
    (
        "queue-capability-covers-descendants",
        moved(ml().capability(cpu="5", memory="32Gi").deserved(cpu="5"), ml()),
        moved(ml().capability(cpu="3", memory="32Gi").deserved(cpu="3").guarantee(cpu="3"), ml()),
        "spec.capability.cpu",
        "3 is less than the capability 4 of queue train under it",
    ),
    (
        "queue-children-guarantee-within-own",
        moved(ml().guarantee(cpu="3"), ml()),
        moved(ml().guarantee(cpu="2900m"), ml()),
        "spec.guarantee.resource.cpu",
        "its child queues would have a guarantee of 3 in all (serve 1, train 2), more than "
        "its own guarantee 2900m",
    ),
    (
        "queue-children-deserved-within-own",
        moved(ml().deserved(cpu="5"), ml()),
        moved(ml().deserved(cpu="4").guarantee(cpu="4"), ml()),
        "spec.deserved.cpu",
        "its child queues would have a deserved of 5 in all",
    ),
    (
        "queue-moved-under-a-parent-rechecked",
        moved(under("ml", "plain").deserved(cpu="1"), make_queue("plain")),
        moved(under("ml", "plain").deserved(cpu="2"), make_queue("plain")),
        "spec.deserved.cpu",
        "the child queues of ml would have a deserved of 7 in all",
    ),
]


@pytest.mark.parametrize(
    ("good", "bad", "path", "reason"), [pytest.param(*row[1:], id=row[0]) for row in QUEUE]
)
def test_queue_tree(good: ReviewBuilder, bad: ReviewBuilder, path: str, reason: str) -> None:
    accepted(run(validate_queue, good))
    refused(run(validate_queue, bad), path, reason)


def test_a_queue_is_checked_against_the_tree_only_when_it_moves_or_its_resources_change() -> None:
    """Volcano's needsValidateHierarchicalQueue: an UPDATE that keeps the parent and the resources
    is not checked against the tree (which may have changed around it), nor is the root queue."""

    def stored() -> QueueBuilder:
        return ml().guarantee(cpu="1").deserved(cpu="1")  # below its children's sums

    view = tree().add(stored())
    accepted(run(validate_queue, moved(stored().weight(4), stored()), view))
    same = ml().guarantee(cpu="1000m").deserved(cpu="1").weight(4)
    accepted(run(validate_queue, moved(same, stored()), view))  # amounts by value
    grown = ml().guarantee(cpu="2").deserved(cpu="2")
    outcome = run(validate_queue, moved(grown, stored()), view)
    refused(outcome, "spec.guarantee.resource.cpu", "more than its own guarantee 2")
    root = make_queue("root").capability(cpu="1")
    accepted(
        run(validate_queue, create(root), tree().add(under("root", "wide").capability(cpu="9")))
    )


def test_a_queue_under_root_is_not_summed_with_the_other_top_queues() -> None:
    """Volcano checks sums only under a parent other than root (which the scheduler sizes)."""
    accepted(run(validate_queue, create(make_queue("q").guarantee(cpu="99").deserved(cpu="99"))))
    accepted(run(validate_queue, create(under("root", "q").capability(cpu="999"))))


def test_resources_volcano_does_not_count_are_not_compared() -> None:
    """Volcano's resource vector holds no object counts (`count/...`, `secrets`)."""
    capped = {"cpu": "4", "pods": "3", "count/pods": "1", "secrets": "1"}
    view = tree().add(under("ml", "train").capability(**capped))
    bigger = {"count/pods": "10", "secrets": "10", "pods": "3"}
    accepted(run(validate_queue, create(under("train", "q").capability(**bigger)), view))
    outcome = run(
        validate_queue, create(under("train", "q").capability(**{**bigger, "pods": "4"})), view
    )
    refused(outcome, "spec.capability.pods", "4 is more than the capability 3 of queue train")
    assert len(outcome.decision.problems) == 1, outcome.message


def test_a_subtree_moved_deeper_keeps_within_the_depth() -> None:
    """Volcano counts only the moved queue's depth; Lahar counts its deepest descendant too, so
    the limit cannot be passed by moving a subtree."""
    view = tree().add(make_queue("s")).add(under("s", "t")).add(under("t", "u"))
    accepted(run(validate_queue, moved(under("l2", "s"), make_queue("s")), view))  # u: depth 5
    outcome = run(validate_queue, moved(under("l3", "s"), make_queue("s")), view)
    refused(outcome, "spec.parent", "queue u, under queue s, would be 6 levels under root")


def test_a_loop_already_above_the_parent_is_named() -> None:
    view = Queues(under("y", "x"), under("x", "y"))
    outcome = run(validate_queue, create(under("x", "q")), view)
    refused(
        outcome, "spec.parent", "the queues above queue q form a cycle (x -> y -> x, each under"
    )


def test_a_parent_whose_own_parent_is_gone_is_refused() -> None:
    """Volcano's depth walk fails on a missing ancestor; so does Lahar's."""
    view = Queues(under("gone", "orphan"))
    outcome = run(validate_queue, create(under("orphan", "q")), view)
    refused(outcome, "spec.parent", "queue 'gone', above queue orphan, does not exist")


def test_lineage_stops_where_it_loops() -> None:
    view = Queues(under("b", "a"), under("a", "b"))
    found = lineage("a", "b", view)
    assert [q.metadata.name for q in found.ancestors] == ["b"] and found.cycle == ("a", "b", "a")


def test_a_new_queue_gets_no_parent_written() -> None:
    """Volcano's controller writes `parent: root` into a queue naming none; Lahar reads none as
    root everywhere, so the mutating webhook leaves the field alone (an applied manifest stays
    as its author wrote it)."""
    assert queue_defaults(make_queue("q").build()) == [
        {"op": "add", "path": "/spec/reclaimable", "value": True}
    ]


# -- Work goes in Open leaf queues ---------------------------------------------------------------

WORK = [
    (
        "job-queue-leaf",
        validate_job,
        make_review(make_job("tf").task("w").queue("serve").build()),
        make_review(make_job("tf").task("w").queue("ml").build()),
        "spec.queue",
        "queue ml has 2 child queues (serve, train): jobs go in leaf queues",
    ),
    (
        "job-queue-ancestors-open",
        validate_job,
        make_review(make_job("tf").task("w").queue("big").build()),
        make_review(make_job("tf").task("w").queue("inner").build()),
        "spec.queue",
        "queue 'inner' is under queue shut, which is Closed: it takes no new work",
    ),
    (
        "job-queue-ancestors-not-closing",
        validate_job,
        make_review(make_job("tf").task("w").queue("plain").build()),
        make_review(make_job("tf").task("w").queue("leaf").build()),
        "spec.queue",
        "queue 'leaf' is under queue winding, which is Closing",
    ),
    (
        "pod-group-queue-leaf",
        validate_pod_group,
        make_review(make_group("g").queue("big").build()),
        make_review(make_group("g").queue("train").build()),
        "spec.queue",
        "queue train has 1 child queue (big): jobs go in leaf queues",
    ),
    (
        "pod-group-queue-ancestors-open",
        validate_pod_group,
        make_review(make_group("g").queue("serve").build()),
        make_review(make_group("g").queue("inner").build()),
        "spec.queue",
        "queue 'inner' is under queue shut, which is Closed",
    ),
]


@pytest.mark.parametrize(
    ("rule", "good", "bad", "path", "reason"),
    [pytest.param(*row[1:], id=row[0]) for row in WORK],
)
def test_work_goes_in_open_leaf_queues(
    rule: Rule, good: ReviewBuilder, bad: ReviewBuilder, path: str, reason: str
) -> None:
    accepted(run(rule, good))
    refused(run(rule, bad), path, reason)


def test_a_pod_group_in_root_is_refused_while_queues_hang_under_it() -> None:
    view = tree().add(make_queue("root"))
    outcome = run(validate_pod_group, make_review(make_group("g").queue("root").build()), view)
    refused(
        outcome, "spec.queue", "queue root has 7 child queues (busy, default, l1, ml, plain, ...)"
    )


# -- Queue DELETE --------------------------------------------------------------------------------


def test_a_queue_with_child_queues_cannot_be_deleted() -> None:
    accepted(run(validate_queue, make_review(make_queue("serve").build()).delete()))
    outcome = run(validate_queue, make_review(ml().build()).delete())
    refused(outcome, "", "queue ml cannot be deleted because it has 2 child queues: serve, train")
    both = tree().with_groups("ml", "ns/stale")
    outcome = run(validate_queue, make_review(ml().build()).delete(), both)
    assert [p.reason.split(":")[0] for p in outcome.decision.problems] == [
        "queue ml cannot be deleted because it has 2 child queues",
        "queue ml still has 1 PodGroup(s) (ns/stale)",
    ]


# -- Volcano's nearest-ancestor capability check, ported: refused iff it refuses -------------------

NAMES = ("a", "b", "c", "d", "e")
AMOUNTS = st.sampled_from(["0", "500m", "1", "1500m", "2", "4"])
WHOLE = st.sampled_from(["0", "1", "2", "4"])  # (a fraction of a GPU is refused before this)
CAPABILITY = st.fixed_dictionaries({}, optional={"cpu": AMOUNTS, "memory": AMOUNTS, GPU: WHOLE})


def volcano_refuses_capability(
    queues: dict[str, dict[str, Any]], parent: str, capability: dict[str, str]
) -> bool:
    """`validateChildAgainstAncestor` of Volcano's queue webhook, as written: per resource the
    child names (at least 0.1 in Volcano's units: millicores, bytes, milli-units for the rest),
    the first ancestor up the parents (root excluded, a missing one ending the walk) whose
    capability of it is above 0 caps it."""

    def units(name: str, quantity: str) -> float:
        amount = parse_quantity(quantity)  # Value() for memory, MilliValue() else: rounded up
        return float(math.ceil(amount if name == "memory" else amount * 1000))

    def nearest(name: str) -> float | None:
        above = parent
        while above not in ("", "root"):
            if above not in queues:
                return None
            value = units(name, queues[above].get("capability", {}).get(name, "0"))
            if value > 0:
                return value
            above = queues[above].get("parent", "")
        return None

    for name, quantity in capability.items():
        mine = units(name, quantity)
        if mine < 0.1:
            continue
        limit = nearest(name)
        if limit is not None and mine > limit:
            return True
    return False


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, dict[str, Any]], str, dict[str, str]]:
    """Queues `a`..`e`, each under root or a queue before it (no loop), a capability each; then
    a parent for a new queue and its capability."""
    count = draw(st.integers(min_value=1, max_value=len(NAMES)))
    queues: dict[str, dict[str, Any]] = {}
    for index, name in enumerate(NAMES[:count]):
        parent = draw(st.sampled_from(["", "root", *NAMES[:index]]))
        queues[name] = {"parent": parent, "capability": draw(CAPABILITY)}
    return queues, draw(st.sampled_from(list(queues))), draw(CAPABILITY)


@settings(max_examples=400, deadline=None)
@given(trees())
def test_a_capability_above_an_ancestors_is_refused_iff_volcano_refuses(
    drawn: tuple[dict[str, dict[str, Any]], str, dict[str, str]],
) -> None:
    queues, parent, capability = drawn
    view = Queues()
    for name, spec in queues.items():
        view.add(under(spec["parent"], name).capability(**spec["capability"]))
    body = under(parent, "new").capability(**capability).build()
    found = [
        p
        for p in check_queue(body, view)
        if p.path.startswith("spec.capability.") and "above it" in p.reason
    ]
    assert bool(found) == volcano_refuses_capability(queues, parent, capability), found
