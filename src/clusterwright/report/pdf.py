"""``report.pdf``: the report page printed by a headless Chromium (Python Playwright driving
the system's browser: no browser download, no network).

The page is opened from its file, its plotly charts are drawn, every collapsed list (all
racks) is opened, and Chromium prints it (A4, backgrounds on). Without Playwright or a
Chromium, ``pdf_unavailable`` says what is missing, so a face can refuse ``pdf`` before any
work (``plan --formats pdf`` exits 2).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from clusterwright.report.files import atomic_file

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def chromium() -> str | None:
    """The browser to print with: ``$CLUSTERWRIGHT_CHROMIUM``, else the first on PATH."""
    env = os.environ.get("CLUSTERWRIGHT_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    return next((p for name in BROWSERS if (p := shutil.which(name))), None)


def pdf_unavailable() -> str | None:
    """Why a PDF cannot be printed here, or None when it can."""
    if importlib.util.find_spec("playwright") is None:
        return ("pdf needs Python Playwright (pip install 'clusterwright[pdf]') and a "
                "Chromium (apt-get install chromium)")
    if chromium() is None:
        return ("pdf needs a Chromium on PATH (apt-get install chromium) or "
                "$CLUSTERWRIGHT_CHROMIUM")
    return None


def render_pdf(html: Path, path: Path, timeout_s: float = 120.0) -> int:
    """Print the report page ``html`` to ``path`` (written atomically); returns its size in
    bytes. Raises RuntimeError when no browser can print it."""
    why = pdf_unavailable()
    if why is not None:
        raise RuntimeError(why)
    from playwright.sync_api import sync_playwright

    path = Path(path)
    with atomic_file(path, ".pdf") as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True,
                                    args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.set_default_timeout(timeout_s * 1e3)
            # Only the page itself: nothing is fetched from anywhere else.
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
                ("file:", "data:", "blob:", "about:")) else r.abort())
            page.goto(Path(html).resolve().as_uri(), wait_until="load")
            page.wait_for_function(
                "() => [...document.querySelectorAll('.plotly-graph-div')]"
                ".every(d => d.querySelector('.main-svg'))")
            page.evaluate("() => document.querySelectorAll('details')"
                          ".forEach(d => d.open = true)")
            page.emulate_media(media="print")
            page.pdf(path=tmp, format="A4", print_background=True,
                     margin={"top": "12mm", "bottom": "12mm", "left": "10mm",
                             "right": "10mm"})
        finally:
            browser.close()
    return path.stat().st_size
