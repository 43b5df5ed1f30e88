"""The report in a real browser: Debian's Chromium, headless, no network. Every shipped
example's report.html loads with no console message (errors, warnings or logs) and draws its
plotly charts. Skipped where Chromium is not installed, unless CW_REQUIRE_BROWSER=1 (CI sets
it and installs Chromium, so there it runs or fails)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterwright.report.html import render_report

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/blueprint.json"))


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = _chromium()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None and os.environ.get("CW_REQUIRE_BROWSER") != "1",
                       reason="Chromium is not installed (apt-get install chromium)"),
]


def _load(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """(DOM after scripts ran, console messages) for ``page``."""
    assert CHROMIUM is not None, "CW_REQUIRE_BROWSER=1 but no Chromium on PATH"
    out = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--no-proxy-server", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=1", "--virtual-time-budget=10000", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    console = [line for line in out.stderr.splitlines() if ":CONSOLE" in line]
    return out.stdout, console


def test_the_console_check_sees_errors(tmp_path: Path) -> None:
    # The check below would be empty if Chromium stopped logging the console.
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    _, console = _load(page, tmp_path)
    assert any("undefinedFunction" in line for line in console)


@pytest.mark.parametrize("name", EXAMPLES)
def test_report_loads_offline_with_no_console_message(name: str, tmp_path: Path) -> None:
    bp = json.loads((ROOT / "examples" / name / "blueprint.json").read_text())
    page = tmp_path / "report.html"
    render_report(bp, page)
    dom, console = _load(page, tmp_path)
    assert console == []
    charts = len(re.findall(r'class="main-svg"', dom))
    assert charts >= 6, f"only {charts} plotly SVG layers drawn"
    assert bp["recommendation"]["gpu"] in dom
