"""Manifests are read from files and folders; a broken one is reported with its file, document
index and field before anything is sent to a server."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.kube import KubeError, load_manifests

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def test_a_folder_is_read_recursively_in_path_order_skipping_kustomization(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a.yaml").write_text(
        CONFIG_MAP.format(name="one") + "---\n---\n" + CONFIG_MAP.format(name="two")
    )
    (tmp_path / "b" / "c.yml").write_text(CONFIG_MAP.format(name="three"))
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml]\n")
    (tmp_path / "notes.txt").write_text("not a manifest")

    manifests = load_manifests(tmp_path)

    assert [m.name for m in manifests] == ["one", "two", "three"]
    assert manifests[1].source == f"{tmp_path / 'a.yaml'}#2"
    assert {m.kind for m in manifests} == {"ConfigMap"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "kind: ConfigMap\nmetadata: {name: x}\n",
            "#0: field apiVersion is missing or not a string",
        ),
        ("apiVersion: v1\nmetadata: {name: x}\n", "#0: field kind is missing or not a string"),
        ("apiVersion: v1\nkind: ConfigMap\n", "#0: field metadata.name is missing or not a string"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 7}\n",
            "field metadata.name is missing",
        ),
        ("- just\n- a list\n", "#0: a manifest must be a mapping, got list"),
        ("kind: [unclosed\n", "not valid YAML"),
    ],
)
def test_a_broken_manifest_names_the_file_and_field(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    with pytest.raises(KubeError) as error:
        load_manifests(path)
    assert str(error.value).startswith(str(path))
    assert message in str(error.value)


def test_a_missing_path_is_reported(tmp_path: Path) -> None:
    with pytest.raises(KubeError, match="does not exist"):
        load_manifests(tmp_path / "absent")


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_any_yaml_document_loads_or_fails_with_a_kube_error(document: object) -> None:
    path = Path(tempfile.mkdtemp()) / "doc.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        manifests = load_manifests(path)
    except KubeError as error:
        assert str(error).startswith(str(path))  # noqa: PT017
    else:
        assert all(isinstance(m.name, str) and m.kind for m in manifests)
