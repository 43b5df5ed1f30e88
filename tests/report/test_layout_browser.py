"""Every shipped example's report in Chromium at 1280x800 and 1920x1080: no console error,
every chart drawn, no SVG text box outside its SVG, no two text boxes of one SVG over each
other (tests/layout_check.py). Skipped without Chromium and Playwright unless
CW_REQUIRE_BROWSER=1 (CI)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterwright.report.html import render_report
from tests.layout_check import VIEWPORTS, layout_problems, wait_for_charts

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/blueprint.json"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("CW_REQUIRE_BROWSER") == "1"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None and not REQUIRED, reason="Chromium is not installed"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if REQUIRED:
            raise
        pytest.skip("playwright is not installed")
    assert CHROMIUM is not None
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                    "--disable-background-networking"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    tmp = tmp_path_factory.mktemp("reports")
    for name in EXAMPLES:
        bp = json.loads((ROOT / "examples" / name / "blueprint.json").read_text())
        render_report(bp, tmp / f"{name}.html")
        out[name] = tmp / f"{name}.html"
    return out


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda v: f"{v['width']}x{v['height']}")
@pytest.mark.parametrize("name", EXAMPLES)
def test_report_layout(browser: Any, reports: dict[str, Path], name: str,
                       viewport: dict[str, int]) -> None:
    ctx = browser.new_context(viewport=viewport)
    try:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            ("file:", "data:", "blob:", "about:")) else r.abort())
        page.goto(reports[name].as_uri())
        wait_for_charts(page)
        assert page.locator(".plotly-graph-div").count() >= 4
        assert errors == []
        problems = layout_problems(page)
        assert problems == [], "\n".join(problems[:40])
    finally:
        ctx.close()


def test_the_check_sees_overlaps_clipping_and_undrawn_charts(browser: Any,
                                                            tmp_path: Path) -> None:
    # Each finding below would pass vacuously if the check stopped looking.
    page_file = tmp_path / "bad.html"
    page_file.write_text(
        '<html><body><svg width="200" height="60" aria-label="bad">'
        '<text x="10" y="20" font-size="14">first label</text>'
        '<text x="30" y="24" font-size="14">second label</text>'
        '<text x="150" y="50" font-size="14">clipped label</text></svg>'
        '<div class="plotly-graph-div" id="empty-chart"></div></body></html>')
    ctx = browser.new_context(viewport=VIEWPORTS[0])
    try:
        page = ctx.new_page()
        page.goto(page_file.as_uri())
        found = "\n".join(layout_problems(page))
    finally:
        ctx.close()
    assert 'overlap in bad: "first label" / "second label"' in found
    assert 'clipped in bad: "clipped label"' in found
    assert "chart not drawn: empty-chart" in found


def test_the_check_reads_the_reports_labels(browser: Any, reports: dict[str, Path]) -> None:
    ctx = browser.new_context(viewport=VIEWPORTS[0])
    try:
        page = ctx.new_page()
        page.goto(reports["training-1k-h100"].as_uri())
        wait_for_charts(page)
        n = page.evaluate("() => [...document.querySelectorAll('svg text')]"
                          ".filter(t => t.getBoundingClientRect().width > 0).length")
    finally:
        ctx.close()
    assert n > 250  # drawings, rack elevations and every chart's ticks and legends


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda v: f"{v['width']}x{v['height']}")
def test_multisite_section_is_drawn_and_fits(browser: Any, tmp_path: Path,
                                             viewport: dict[str, int]) -> None:
    from tests.report.blueprints import multisite

    path = tmp_path / "multisite.html"
    render_report(multisite(), path)
    ctx = browser.new_context(viewport=viewport)
    try:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        wait_for_charts(page)
        section = page.locator("#multisite")
        assert section.is_visible()
        assert page.locator("nav a[href='#multisite']").count() == 1
        text = section.inner_text()
        for s in ("east", "west", "2 sites x 8,192", "DiLoCo (chosen)", "81.7 Gb/s",
                  "WAN for 90 %", "unreachable"):
            assert s in text, s
        # no table of the section runs past the page's content column
        overflow = page.evaluate(
            "() => [...document.querySelectorAll('#multisite table')].filter(t => "
            "t.getBoundingClientRect().right > document.body.getBoundingClientRect().right + 1"
            ").length")
        assert overflow == 0
        assert errors == []
        assert layout_problems(page) == []
    finally:
        ctx.close()
