"""Report files are written whole or not at all (report/files.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterwright.report.files import atomic_file


def test_the_file_appears_whole_and_readable(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    with atomic_file(out, ".html") as tmp:
        Path(tmp).write_text("<html></html>", encoding="utf-8")
        assert not out.exists()  # nothing at the final name until the block ends
    assert out.read_text(encoding="utf-8") == "<html></html>"
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_failure_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "report.xlsx"
    out.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_file(out, ".xlsx") as tmp:
        Path(tmp).write_text("half", encoding="utf-8")
        raise RuntimeError("writer failed")
    assert out.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.xlsx"]
