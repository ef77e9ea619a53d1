"""`lahar crds` keeps the Helm chart's crds/ a copy of manifests/crds/: exactly the files that
kustomization lists (the generated ones and Coscheduling's, written by hand), byte for byte, and
no other file Helm would install; `--check` names each file that is not so, `--write` makes it so.
The repository's own folders pass the check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from extender.api.crds import FILES, rendered
from extender.cli.main import main

HAND_WRITTEN = "crd-coscheduling.yaml"
HAND_TEXT = "# Coscheduling's PodGroup, written by hand\nkind: CustomResourceDefinition\n"


def _manifests(folder: Path) -> Path:
    """A manifests/crds/ as the repository has it: the models' files, one written by hand, and
    the kustomization listing them."""
    folder.mkdir()
    for name, text in rendered().items():
        (folder / name).write_text(text)
    (folder / HAND_WRITTEN).write_text(HAND_TEXT)
    listed = [HAND_WRITTEN, *(f.name for f in FILES)]
    (folder / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"  - {name}\n" for name in listed)
    )
    return folder


def _copy(source: Path, chart: Path) -> None:
    chart.mkdir()
    for path in source.iterdir():
        if path.name != "kustomization.yaml":
            (chart / path.name).write_text(path.read_text())


@dataclass(frozen=True)
class Case:
    name: str
    spoil: Callable[[Path, Path], None]  # (manifests/crds, the chart's crds) -> made stale
    said: tuple[str, ...]  # what --check says on stderr


def _no_copy(manifests: Path, chart: Path) -> None:
    chart.mkdir()


def _edited_copy(manifests: Path, chart: Path) -> None:
    _copy(manifests, chart)
    (chart / HAND_WRITTEN).write_text(HAND_TEXT + "# edited\n")


def _unlisted_file(manifests: Path, chart: Path) -> None:
    _copy(manifests, chart)
    (chart / "crd-old.yaml").write_text("kind: CustomResourceDefinition\n")


def _stale_in_both(manifests: Path, chart: Path) -> None:
    (manifests / FILES[0].name).write_text("stale\n")
    _copy(manifests, chart)


CASES = [
    Case(
        "the chart has no copy",
        _no_copy,
        (f"{HAND_WRITTEN} is not what its copy in", *(f"{f.name} is not what" for f in FILES)),
    ),
    Case("a copy differs", _edited_copy, (f"{HAND_WRITTEN} is not what its copy in", "-# edited")),
    Case(
        "a file the kustomization does not list",
        _unlisted_file,
        ("crd-old.yaml is not a CRD the kustomization lists, and Helm would install it",),
    ),
    Case(
        "a generated file is stale in both",
        _stale_in_both,
        (f"{FILES[0].name} is not what the models make",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_names_what_is_stale_and_write_mends_it(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests, chart = _manifests(tmp_path / "manifests"), tmp_path / "chart"
    case.spoil(manifests, chart)
    folders = ["--dir", str(manifests), "--chart-dir", str(chart)]

    assert main(["crds", "--check", *folders]) == 1
    err = capsys.readouterr().err
    assert all(said in err for said in case.said), err

    assert main(["crds", "--write", *folders]) == 0
    capsys.readouterr()
    assert main(["crds", "--check", *folders]) == 0
    assert "are what they should be" in capsys.readouterr().out
    copies = {p.name: p.read_text() for p in chart.iterdir()}
    assert copies == {
        p.name: p.read_text() for p in manifests.iterdir() if p.name != "kustomization.yaml"
    }
    assert copies[HAND_WRITTEN] == HAND_TEXT  # (written by hand: copied, never generated)


def test_a_chart_folder_needs_the_kustomization_it_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = ["--dir", str(tmp_path), "--chart-dir", str(tmp_path / "chart")]
    assert main(["crds", "--check", *folders]) == 2
    assert "kustomization.yaml: cannot read the CRD files it lists" in capsys.readouterr().err


def test_the_repository_chart_holds_what_manifests_crds_applies(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["crds", "--check"]) == 0, capsys.readouterr().err
    assert "charts/lahar/crds are what they should be" in capsys.readouterr().out
