"""The files `lahar certs` writes for the extender and kube-scheduler: private, replaced whole,
and left untouched when unchanged (both readers reload on a new modification time)."""

from __future__ import annotations

import stat
from pathlib import Path

from extender.server.certificates import write_files


def test_files_are_private_and_rewritten_only_when_they_change(tmp_path: Path) -> None:
    folder = tmp_path / "tls"
    assert write_files(folder, {"tls.crt": b"one", "tls.key": b"key"}) is True
    key = folder / "tls.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    before = key.stat().st_mtime_ns
    assert write_files(folder, {"tls.crt": b"one", "tls.key": b"key"}) is False
    assert key.stat().st_mtime_ns == before
    assert write_files(folder, {"tls.crt": b"two", "tls.key": b"key"}) is True
    assert (folder / "tls.crt").read_bytes() == b"two"
    assert key.stat().st_mtime_ns == before
    assert sorted(p.name for p in folder.iterdir()) == ["tls.crt", "tls.key"]  # no leftovers
