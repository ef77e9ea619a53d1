"""`lahar policy import`: the policy on stdout (or in OUT) under a header naming the source, notes
on stderr grouped by kind, `--check` for CI, and errors as one line with exit code 2."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from extender.cli.main import main
from extender.framework.policy import build_policy
from extender.plugins import REGISTRY
from extender.plugins.volcano_conf import NoteKind, import_conf

# installer/helm/chart/volcano/config/volcano-scheduler-ci.conf, as Volcano ships it.
CI_CONF = """\
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: sla
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""


def configmap(text: str) -> str:
    indented = "".join(f"    {line}\n" for line in text.splitlines())
    return (
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: volcano-scheduler-configmap, namespace: volcano-system}\n"
        f"data:\n  volcano-scheduler.conf: |\n{indented}"
    )


@pytest.fixture
def conf_file(tmp_path: Path) -> Path:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(CI_CONF)
    return path


def test_the_policy_is_printed_and_the_notes_go_to_stderr_by_kind(
    conf_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["policy", "import", str(conf_file)]) == 0

    out, err = capsys.readouterr()
    assert out.startswith(
        f"# Lahar's policy imported from Volcano's scheduler configuration {conf_file}\n"
    )
    document = yaml.safe_load(out)
    assert document == import_conf(yaml.safe_load(CI_CONF)).document
    build_policy(document, REGISTRY)
    assert "  - plugins:\n      - name: priority\n" in out  # lists indented, as policy files are

    lines = err.splitlines()
    assert all(line.startswith("lahar policy import: ") for line in lines)
    kinds = [line.split(": ")[1] for line in lines]
    assert kinds == sorted(kinds, key=[k.value for k in NoteKind].index)  # grouped, in order
    assert set(kinds) == {k.value for k in NoteKind}
    assert "lahar policy import: differs: tiers.1.plugins.0: overcommit: dropped" in err
    assert "lahar policy import: always: tiers.1.plugins.6: network-topology-aware" in err


@pytest.mark.parametrize("form", ["conf", "configmap"])
def test_stdin_in_either_form(
    form: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(CI_CONF if form == "conf" else configmap(CI_CONF)))

    assert main(["policy", "import", "-"]) == 0

    out = capsys.readouterr().out
    assert "configuration stdin\n" in out.splitlines()[0] + "\n"
    assert yaml.safe_load(out) == import_conf(yaml.safe_load(CI_CONF)).document


def test_the_configmap_is_found_among_other_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = tmp_path / "volcano.yaml"
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: b}\n"
    stream.write_text(f"{other}---\n{configmap(CI_CONF)}---\nkind: Namespace\n")

    assert main(["policy", "import", str(stream)]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == import_conf(yaml.safe_load(CI_CONF)).document

    stream.write_text(f"{other}---\nkind: Namespace\n")
    assert main(["policy", "import", str(stream)]) == 2
    assert capsys.readouterr().err == (
        f"lahar policy import: {stream}: (top level): 2 documents, and none of them a ConfigMap "
        "with volcano-scheduler.conf: give the one to import\n"
    )


def test_output_is_written_and_checked(
    conf_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "lahar.yaml"
    check = ["policy", "import", str(conf_file), "-o", str(out), "--check"]

    assert main(check) == 1  # missing
    assert capsys.readouterr().err == (
        f"{out} does not exist: run `lahar policy import {conf_file} -o {out}`\n"
    )
    assert not out.exists()

    assert main(["policy", "import", str(conf_file), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"wrote {out}\n"
    assert "lahar policy import: mapped:" in captured.err
    written = out.read_text()
    assert written.startswith("# Lahar's policy imported from")
    build_policy(yaml.safe_load(written), REGISTRY)

    assert main(check) == 0  # equal
    captured = capsys.readouterr()
    assert captured.out == f"{out} is what {conf_file} imports to\n"
    assert captured.err == ""

    out.write_text(written.replace("name: drf", "name: drf\n        enablePreemptable: true"))
    assert main(check) == 1  # differing
    err = capsys.readouterr().err
    assert err.startswith(f"{out} is not what {conf_file} imports to: run `lahar policy import")
    assert "  -        enablePreemptable: true" in err
    assert "enablePreemptable: true" in out.read_text()  # --check writes nothing


def test_a_policy_written_from_the_configmap_on_stdin_checks_against_the_file(
    conf_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/migrating.md's way: written from the cluster's ConfigMap, checked in CI against the
    file in the repository (the header's source line aside, the two are the same)."""
    out = tmp_path / "lahar.yaml"
    monkeypatch.setattr("sys.stdin", io.StringIO(configmap(CI_CONF)))
    assert main(["policy", "import", "-", "-o", str(out)]) == 0
    assert out.read_text().startswith(
        "# Lahar's policy imported from Volcano's scheduler configuration stdin\n"
    )
    capsys.readouterr()
    assert main(["policy", "import", str(conf_file), "-o", str(out), "--check"]) == 0
    assert capsys.readouterr().out == f"{out} is what {conf_file} imports to\n"


@pytest.mark.parametrize(
    ("text", "code", "says"),
    [
        (CI_CONF, 0, "imports to a valid Lahar policy"),
        (CI_CONF.replace("tiers:", "tier:"), 1, "tier: not a key of Volcano's"),
    ],
)
def test_check_without_output_only_validates(
    text: str, code: int, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(text)

    assert main(["policy", "import", str(path), "--check"]) == code

    captured = capsys.readouterr()
    assert says in captured.out + captured.err
    assert "apiVersion" not in captured.out


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            CI_CONF.replace("binpack\n", "binpack\n    arguments: {binpack.weight: x}\n"),
            "tiers.1.plugins.5.arguments.binpack.weight: must be a whole number >= 0, got 'x'",
        ),
        (
            CI_CONF.replace(
                "overcommit\n", "overcommit\n    arguments: {overcommit-factor: 0.5}\n"
            ),
            "tiers.1.plugins.0.arguments.overcommit-factor: must be at least 1.0",
        ),
        (
            CI_CONF.replace('"enqueue,', "[enqueue,").replace('preempt"', "preempt]"),
            "actions: must",
        ),
        ("actions: [unclosed\n", "not valid YAML"),
        ("", "(top level): empty: no configuration in it"),
    ],
)
def test_an_error_is_one_line_with_exit_code_2(
    text: str, error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(text)

    assert main(["policy", "import", str(path)]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"lahar policy import: {path}: {error}")


def test_an_unreadable_file_exits_2_even_when_checking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.conf"

    assert main(["policy", "import", str(missing), "--check"]) == 2
    assert capsys.readouterr().err == (
        f"lahar policy import: {missing}: cannot read it: No such file or directory\n"
    )


def test_an_unwritable_output_exits_2(
    conf_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no-such-folder" / "lahar.yaml"

    assert main(["policy", "import", str(conf_file), "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"lahar policy import: {out}: cannot write it: No such file or directory"
    )
