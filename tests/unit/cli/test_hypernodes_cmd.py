"""`lahar hypernodes`: what build prints (YAML that reads back as the HyperNodes, notes, refusals)
and the tree list shows (indented by depth, nodes and cpu summed up the tree)."""

from __future__ import annotations

import pytest
import yaml

from extender.api.topology_labels import SOURCE, SOURCE_LABEL, build, label_tiers
from extender.cli.hypernodes_cmd import build_output, tree_rows
from extender.cli.main import main
from tests.builders import make_hyper_node, make_node, make_pod

TIERS = label_tiers(["rack", "spine"])


def test_build_output_is_yaml_documents_of_the_manifests() -> None:
    nodes = [make_node(f"n{i}").label("rack", f"r{i}").label("spine", "p0").model() for i in (0, 1)]

    output = build_output(TIERS, build(TIERS, nodes))

    assert list(yaml.safe_load_all(output.yaml)) == list(output.manifests)
    assert [m["metadata"]["name"] for m in output.manifests] == ["t1-r0", "t1-r1", "t2-p0"]
    assert output.notes == ()


@pytest.mark.parametrize(
    ("unlabelled", "notes"),
    [
        (
            2,
            ("2 nodes without the label rack are in no HyperNode: u0, u1",),
        ),
        (
            12,
            (
                "12 nodes without the label rack are in no HyperNode: "
                "u0, u1, u10, u11, u2, u3, u4, u5, u6, u7 and 2 more",
            ),
        ),
    ],
    ids=["named", "ten-named-at-most"],
)
def test_nodes_in_no_hyper_node_are_a_note(unlabelled: int, notes: tuple[str, ...]) -> None:
    nodes = [make_node("n0").label("rack", "r0").model()]
    nodes += [make_node(f"u{i}").model() for i in range(unlabelled)]

    assert build_output(TIERS, build(TIERS, nodes)).notes == notes


def test_no_labelled_node_is_a_note_and_no_yaml() -> None:
    output = build_output(TIERS, build(TIERS, []))

    assert output.yaml == ""
    assert output.notes == ("no node has the label rack: no HyperNodes",)


def test_a_value_under_two_parents_is_refused_naming_it() -> None:
    nodes = [
        make_node("n0").label("rack", "r0").label("spine", "p0").model(),
        make_node("n1").label("rack", "r0").label("spine", "p1").model(),
    ]

    with pytest.raises(ValueError, match=r"^--label: a HyperNode has one parent") as error:
        build_output(TIERS, build(TIERS, nodes))
    assert "rack=r0 (tier 1) is under several values: spine=p0 (nodes n0); spine=p1" in str(
        error.value
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["hypernodes", "build"], "lahar hypernodes build: --label: give at least one"),
        (
            ["hypernodes", "build", "--label", "rack", "--tier-name", "a", "--tier-name", "b"],
            "lahar hypernodes build: --tier-name: 2 names for 1 labels",
        ),
        (
            ["hypernodes", "build", "--label", "no good"],
            "lahar hypernodes build: --label: 'no good'",
        ),
    ],
    ids=["no-label", "more-names-than-labels", "bad-label"],
)
def test_bad_flags_are_refused_before_reaching_a_cluster(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert str(exit_info.value.code).startswith(message)


def test_tree_rows_indent_by_depth_and_sum_nodes_and_cpu_up_the_tree() -> None:
    hyper_nodes = [
        make_hyper_node("t1-r1").nodes("n2").model(),
        make_hyper_node("t2-p0").tier(2, "spine").hyper_nodes("t1-r0", "t1-r1").model(),
        make_hyper_node("t1-r0").tier(1, "rack").nodes("n0", "n1").model(),
        make_hyper_node("t1-gpu")
        .regex("^g")
        .label(SOURCE_LABEL, SOURCE)  # (any source is shown)
        .model(),
    ]
    nodes = [make_node(n).cpu("4").model() for n in ("n0", "n1", "n2", "g0")]
    pods = [
        make_pod("a").cpu("1").on("n0").model(),
        make_pod("b").cpu("500m").on("n2").model(),
        make_pod("done").cpu("4").on("n1").phase("Succeeded").model(),
        make_pod("waiting").cpu("4").model(),
    ]

    rows = tree_rows(hyper_nodes, nodes, pods, wide=True)

    assert rows == [
        ["t2-p0", "2", "3", "10500m", "12", "spine", "-"],
        ["  t1-r0", "1", "2", "7", "8", "rack", "-"],
        ["  t1-r1", "1", "1", "3500m", "4", "-", "-"],
        ["t1-gpu", "1", "1", "4", "4", "-", SOURCE],
    ]


def test_tree_rows_show_a_loop_once_and_unknown_members_as_nothing() -> None:
    hyper_nodes = [
        make_hyper_node("a").tier(2).hyper_nodes("b", "missing").model(),
        make_hyper_node("b").tier(2).hyper_nodes("a").nodes("n0", "gone").model(),
    ]

    rows = tree_rows(hyper_nodes, [make_node("n0").cpu("2").model()], [])

    assert rows == [["a", "2", "1", "2", "2"], ["  b", "2", "1", "2", "2"]]
