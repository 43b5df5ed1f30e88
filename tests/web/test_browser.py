"""The web workbench in a real browser: Python Playwright driving Debian's Chromium
(/usr/bin/chromium, headless, no browser download) against `clusterwright web` started on a
free loopback port with a temporary database.

The journey: home -> shipped example -> a bad value flagged at its line -> fixed -> save and
run -> progress finishes -> the report draws its plotly charts -> a second scenario with a
changed constraint -> both runs ticked on the home page and compared. Every step checks
that the page logged no console error, raised no uncaught exception, got no HTTP error and
asked for nothing off this machine (all assets are served locally). A scenario named
`<script>alert(1)</script>` shows as text and opens no dialog; one holding an `<a href>` shows
as text in the compare charts, not as a link. A page reached by a name other than this
server's (DNS rebinding) gets nothing.

Skipped only where Chromium is absent and CW_REQUIRE_BROWSER != "1" (CI sets it and installs
Chromium, so there it runs or fails)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.layout_check import VIEWPORTS, layout_problems, wait_for_charts

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("CW_REQUIRE_BROWSER") == "1"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None and not REQUIRED,
                       reason="Chromium is not installed (apt-get install chromium)"),
]

REBOUND = "rebound.test"
# The flags /work/.library/env/machines/python.md gives: without the background-networking
# ones Chromium keeps trying to reach Google's hosts through a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # What DNS rebinding achieves: a foreign name that resolves to this machine.
    f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",
]
EXAMPLE = "training-1k-h100"
XSS = "<script>alert(1)</script>"
LINK = '<a href="https://example.com/pwn">CLICK</a>'  # plotly.js renders <a> in labels
SECOND = f"denser 60 kW {XSS} {LINK}"
# A plan of training-1k-h100 takes about 2 s; generous so a loaded CI machine does not flake.
PLAN_TIMEOUT_MS = 60_000


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    base: str
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`clusterwright web` as a user starts it, on a free loopback port, fresh database."""
    tmp = tmp_path_factory.mktemp("web")
    port = _free_port()
    log = tmp / "server.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "clusterwright", "web", "--host", "127.0.0.1",
             "--port", str(port), "--db", str(tmp / "cw.db")],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    srv = Server(f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}:\n{srv.tail()}")
            try:
                with urllib.request.urlopen(srv.base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"/healthz did not answer within 30 s:\n{srv.tail()}")
            time.sleep(0.1)
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Watch:
    """What a page did that it should not: console errors, uncaught exceptions, dialogs,
    requests that left the machine, failed same-origin responses."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    offsite: list[str] = field(default_factory=list)
    bad_status: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [*self.console, *self.errors, *self.dialogs, *self.offsite, *self.bad_status]

    def check(self, step: str) -> None:
        assert self.problems() == [], f"after {step}: {self.problems()}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if REQUIRED:
            raise
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    assert CHROMIUM is not None, "CW_REQUIRE_BROWSER=1 but no Chromium on PATH"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[tuple[Any, Watch]]:
    ctx = browser.new_context()
    ctx.set_default_timeout(20_000)
    pg = ctx.new_page()
    w = Watch()
    pg.on("console", lambda m: w.console.append(f"console {m.type}: {m.text}")
          if m.type in ("error", "assert") else None)
    pg.on("pageerror", lambda e: w.errors.append(f"pageerror: {e}"))

    def on_dialog(d: Any) -> None:
        w.dialogs.append(f"dialog {d.type}: {d.message}")
        d.dismiss()

    pg.on("dialog", on_dialog)

    def on_response(r: Any) -> None:
        if r.url.startswith(server.base) and r.status >= 400:
            w.bad_status.append(f"HTTP {r.status} {r.request.method} {r.url}")

    pg.on("response", on_response)

    def route(rt: Any) -> None:
        url = rt.request.url
        if url.startswith(server.base) or url.startswith(("data:", "blob:", "about:")):
            rt.continue_()
        else:
            w.offsite.append(f"off-machine request: {url}")
            rt.abort()

    pg.route("**/*", route)
    try:
        yield pg, w
    finally:
        ctx.close()


def _line_of(text: str, prefix: str) -> int:
    """1-based number of the first line of ``text`` that starts (after spaces) with prefix."""
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith(prefix):
            return i
    raise AssertionError(f"no line starting with {prefix!r}")


def _edit(pg: Any, text: str) -> None:
    """Replace the editor's YAML as a user would: fill fires `input`, the key fires
    keydown/keyup, so the HTMX live validation triggers whichever event it listens to."""
    area = pg.locator("textarea#scenario-yaml")
    area.fill(text)
    area.press("End")


def _run_id(pg: Any) -> int:
    m = re.search(r"/runs/(\d+)", pg.url)
    assert m, f"not on a run page: {pg.url}"
    return int(m.group(1))


def _wait_run_done(pg: Any, server: Server) -> None:
    # The progress fragment keeps polling until the plan is done; then the report link shows.
    try:
        pg.locator("a#report-link").wait_for(state="visible", timeout=PLAN_TIMEOUT_MS)
    except Exception as exc:
        progress = pg.locator("#progress").inner_text() if pg.locator("#progress").count() else ""
        raise AssertionError(f"run did not finish: progress {progress!r}\n{server.tail()}") from exc


def test_the_watch_sees_what_it_must(page: tuple[Any, Watch], server: Server) -> None:
    # Each check below would pass vacuously if a listener stopped firing.
    pg, w = page
    pg.goto(server.base + "/healthz")
    pg.evaluate("""() => {
        console.error("boom-console");
        alert("boom-dialog");
        setTimeout(() => { throw new Error("boom-uncaught"); }, 0);
        fetch("http://example.invalid/x").catch(() => {});
        fetch("/no-such-page");
    }""")
    needles = ("boom-console", "boom-dialog", "boom-uncaught", "example.invalid", "HTTP 404 GET")
    # Events arrive asynchronously: poll (up to 15 s on a loaded machine) rather than sleep.
    for _ in range(150):
        found = "\n".join(w.problems())
        if all(n in found for n in needles):
            break
        pg.wait_for_timeout(100)
    for needle in needles:
        assert needle in found, f"{needle!r} not seen in {found!r}"


def test_journey_edit_run_report_compare(page: tuple[Any, Watch], server: Server) -> None:
    pg, w = page

    # Home: the shipped examples are offered.
    pg.goto(server.base + "/")
    link = pg.locator(f'a.example-link[data-example="{EXAMPLE}"]')
    assert link.count() == 1
    w.check("home")

    # Load an example: the editor holds its YAML, byte for byte what ships in examples/.
    link.click()
    pg.wait_for_load_state()
    shipped = (Path(__file__).resolve().parents[2] / "examples" / EXAMPLE /
               "scenario.yaml").read_text()
    area = pg.locator("textarea#scenario-yaml")
    original = area.input_value()
    assert original.strip() == shipped.strip()
    assert pg.locator("#errors li.error").count() == 0
    w.check("load example")

    # A bad value: the live validation flags the line it is on (19 in the shipped file:
    # two comment lines, then the fields; computed here rather than hard-coded).
    bad_line = _line_of(original, "power_per_rack_kw:")
    _edit(pg, original.replace("power_per_rack_kw: 40", "power_per_rack_kw: -40"))
    err = pg.locator("#errors li.error")
    err.first.wait_for(state="visible")
    assert err.count() == 1
    assert err.first.get_attribute("data-line") == str(bad_line)
    assert "power_per_rack_kw" in err.first.inner_text()
    bad = pg.locator("#gutter .bad")
    assert bad.count() == 1 and bad.first.get_attribute("data-line") == str(bad_line)
    w.check("bad value")

    # Broken indentation: `cooling:` indented under the previous value is a YAML syntax
    # error ("mapping values are not allowed here") on the cooling line itself (20).
    indent_line = _line_of(original, "cooling:")
    _edit(pg, original.replace("  cooling:", "      cooling:", 1))
    pg.wait_for_function(
        "n => [...document.querySelectorAll('#errors li.error')]"
        ".some(li => li.dataset.line === String(n))", arg=indent_line)
    assert err.count() == 1
    assert "power_per_rack_kw" not in err.first.inner_text()
    w.check("bad indentation")

    # Fixed: the errors clear.
    _edit(pg, original)
    pg.wait_for_function("() => document.querySelectorAll('#errors li.error').length === 0")
    assert pg.locator("#errors p.valid").count() == 1
    assert pg.locator("#gutter .bad").count() == 0
    w.check("fixed")

    # Save and run: the run page's progress reaches the end, then the report and metrics.
    pg.locator("input#scenario-name").fill("baseline 40 kW")
    pg.locator("button#run").click()
    pg.wait_for_url(re.compile(r"/runs/\d+"))
    first = _run_id(pg)
    _wait_run_done(pg, server)
    assert pg.locator("#progress").get_attribute("data-status") == "done"
    assert pg.locator("#metrics").count() == 1
    # The artifacts download is a zip archive (local file header "PK\x03\x04").
    href = pg.locator("a#download-link").get_attribute("href")
    assert href
    z = pg.request.get(server.base + href if href.startswith("/") else href)
    assert z.status == 200 and z.body()[:4] == b"PK\x03\x04"
    w.check("first run")

    # The report: plotly draws every chart (each chart is at least one .main-svg layer).
    pg.locator("a#report-link").click()
    pg.wait_for_url(re.compile(rf"/runs/{first}/report"))
    pg.wait_for_function("() => document.querySelectorAll('.main-svg').length >= 6")
    assert pg.locator(".main-svg").count() >= 6
    w.check("report")

    # A second scenario: the same example with a higher rack power limit.
    pg.goto(server.base + "/")
    pg.locator(f'a.example-link[data-example="{EXAMPLE}"]').click()
    pg.wait_for_load_state()
    text = pg.locator("textarea#scenario-yaml").input_value()
    _edit(pg, text.replace("power_per_rack_kw: 40", "power_per_rack_kw: 60"))
    # Its name carries markup: the run page, home and compare must show it as text.
    pg.locator("input#scenario-name").fill(SECOND)
    pg.locator("button#run").click()
    pg.wait_for_url(re.compile(r"/runs/\d+"))
    second = _run_id(pg)
    assert second != first
    _wait_run_done(pg, server)
    assert pg.get_by_text(XSS, exact=False).count() >= 1
    w.check("second run")

    # Compare the two runs as a user does: tick both on the home page, press compare.
    pg.goto(server.base + "/")
    for run in (first, second):
        pg.locator(f'input.compare-run[value="{run}"]').check()
    pg.locator("button#compare").click()
    pg.wait_for_url(re.compile(r"/compare\?"))
    assert sorted(re.findall(r"run=(\d+)", pg.url)) == sorted([str(first), str(second)])
    table = pg.locator("table#compare")
    table.wait_for(state="visible")
    body = table.inner_text()
    assert "baseline 40 kW" in body and SECOND in body
    plots = pg.locator("div.plot")
    assert plots.count() >= 1
    pg.wait_for_function(
        "n => document.querySelectorAll('div.plot .main-svg').length >= n", arg=plots.count())
    # The chart labels show the name as text: no link, no element made from it.
    assert pg.locator("div.plot a").count() == 0
    ticks = pg.locator("div.plot").first.locator(".ytick text").all_text_contents()
    assert f"#{second} {SECOND} r1" in ticks, ticks
    w.check("compare")


def test_script_in_a_name_shows_as_text(page: tuple[Any, Watch], server: Server) -> None:
    pg, w = page
    pg.goto(f"{server.base}/scenarios/new?example={EXAMPLE}")
    pg.locator("input#scenario-name").fill(XSS)
    pg.locator("button#save").click()
    pg.wait_for_url(re.compile(r"/scenarios/\d+"))
    assert pg.locator("input#scenario-name").input_value() == XSS
    w.check("saved")

    pg.goto(server.base + "/")
    # The name is on the page as text, and no element came from it.
    assert pg.get_by_text(XSS, exact=False).count() >= 1
    assert XSS not in pg.evaluate("() => [...document.scripts].map(s => s.outerHTML).join()")
    assert w.dialogs == []
    w.check("home with the name")


def test_a_page_on_a_rebound_name_gets_nothing(browser: Any, server: Server) -> None:
    # A page on rebound.test, whose name now resolves to 127.0.0.1, is the server's own
    # origin to the browser: only the Host header tells the server it is not.
    port = server.base.rsplit(":", 1)[1]
    ctx = browser.new_context()
    try:
        pg = ctx.new_page()
        r = pg.goto(f"http://{REBOUND}:{port}/")
        assert r is not None and r.status == 400
        assert "is not a name this server answers to" in pg.content()
        status = pg.evaluate("""async () => (await fetch("/scenarios", {method: "POST",
            body: new URLSearchParams({name: "rebound", yaml: "name: x"})})).status""")
        assert status == 400
    finally:
        ctx.close()
    with urllib.request.urlopen(server.base + "/", timeout=10) as home:
        assert "rebound" not in home.read().decode()



def test_editor_completes_field_names_with_their_descriptions(
        page: tuple[Any, Watch], server: Server) -> None:
    """Typing the start of a key offers the keys valid at that place (from the models), each
    with its description; Tab inserts the chosen one; the hint describes the field under the
    cursor, with its path."""
    pg, w = page
    pg.goto(server.base + "/scenarios/new?example=" + EXAMPLE)
    area = pg.locator("textarea#scenario-yaml")
    area.click()
    area.press("Control+End")
    pg.wait_for_function("window.ClusterwrightComplete && window.ClusterwrightComplete.ready()")
    area.press("Enter")
    area.type("cluster:")
    area.press("Enter")
    area.type("  sp")
    box = pg.locator("#completion")
    box.wait_for(state="visible")
    options = box.locator("li")
    assert options.count() == 1
    assert options.first.get_attribute("data-name") == "spares"
    assert "Spare servers" in options.first.inner_text()
    area.press("Tab")
    assert area.input_value().endswith("cluster:\n  spares: ")
    assert box.is_hidden()
    area.type("2")
    hint = pg.locator("#field-hint")
    assert hint.inner_text().startswith("cluster.spares: integer; default unset")
    # The same section again: only the keys not written yet (spares is).
    area.press("Enter")
    area.type("  ")
    area.press("Control+Space")
    assert [o.get_attribute("data-name") for o in box.locator("li").all()] == [
        "gpus", "headroom"]
    area.press("Escape")
    assert box.is_hidden()
    # Inside a workload, the keys of its kind, read from its `kind:` line.
    names = pg.evaluate("""() => {
        const t = 'workloads:\\n  - kind: "training"\\n    la';
        return window.ClusterwrightComplete.keysAt(t, t.length).map(c => c.name);
    }""")
    assert names == ["layout"]
    w.check("completion")


# One past SQLite's largest INTEGER (2**63 - 1): a well-formed id no row can have.
HUGE_ID = 2**63


@pytest.mark.parametrize("path", [
    f"/runs/{HUGE_ID}", f"/runs/{HUGE_ID}/progress", f"/runs/{HUGE_ID}/report",
    f"/runs/{HUGE_ID}/artifacts.zip", f"/scenarios/{HUGE_ID}", f"/compare?run={HUGE_ID}&run=1",
    f"POST /scenarios/{HUGE_ID}/runs",
])
def test_an_id_beyond_sqlite_integers_is_not_found(server: Server, path: str) -> None:
    method, _, path = path.rpartition(" ")
    # A write carries the Origin a page of the server would send (else it is refused, 403).
    req = urllib.request.Request(server.base + path, method=method or "GET",
                                 data=b"" if method == "POST" else None,
                                 headers={"Origin": server.base} if method == "POST" else {})
    body = ""
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, body = r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        status = exc.code
    if path.startswith("/compare"):
        # The compare page lists unknown runs as problems, as it does for any missing id.
        assert status == 200 and f"run {HUGE_ID} is not in this database" in body
        return
    # /runs/9223372036854775807 (2**63 - 1) already answers 404; one more must too.
    assert status in (404, 422), f"{path}: HTTP {status}"


def _stored_runs(server: Server) -> tuple[int, int]:
    """Two finished runs of the shipped example, written to the server's database as a plan
    records them (the server reads the same file)."""
    from clusterwright.store import Store

    db = server.log.parent / "cw.db"
    bp = (Path(__file__).resolve().parents[2] / "examples" / EXAMPLE / "blueprint.json")
    data = json.loads(bp.read_text())
    store = Store(db)
    try:
        text = (bp.parent / "scenario.yaml").read_text()
        ids = []
        for name in ("layout baseline with a long run name for the compare page",
                     "layout second"):
            sc = store.save_scenario(name, text)
            run = store.create_run(sc.id)
            store.finish_run(run.id, metrics={"total_cost_usd": 7.2e7, "gpus": 1024,
                                               "leaf_switches": 32, "spine_switches": 16},
                             blueprint=data, artifacts_dir=None)
            ids.append(int(run.id))
    finally:
        store.close()
    return ids[0], ids[1]


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda v: f"{v['width']}x{v['height']}")
def test_workbench_pages_lay_out_cleanly(browser: Any, server: Server,
                                         viewport: dict[str, int]) -> None:
    first, second = _stored_runs(server)
    ctx = browser.new_context(viewport=viewport)
    try:
        pg = ctx.new_page()
        errors: list[str] = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        for path in ("/", f"/scenarios/new?example={EXAMPLE}", f"/runs/{first}",
                     f"/runs/{first}/whatif", f"/compare?run={first}&run={second}",
                     "/catalog?kind=gpus"):
            pg.goto(server.base + path)
            wait_for_charts(pg)
            assert errors == [], (path, errors)
            problems = layout_problems(pg)
            assert problems == [], (path, problems[:20])
        # The compare charts read each run's whole name.
        pg.goto(f"{server.base}/compare?run={first}&run={second}")
        wait_for_charts(pg)
        ticks = pg.locator("div.plot").first.locator(".ytick text").all_text_contents()
        assert any("long run name for the compare page" in t for t in ticks), ticks
    finally:
        ctx.close()


def test_whatif_reprices_and_keeps_the_last_valid_state(page: tuple[Any, Watch],
                                                         server: Server) -> None:
    pg, w = page
    first, _ = _stored_runs(server)
    pg.goto(f"{server.base}/runs/{first}/whatif")
    total = pg.locator('#whatif-results tr[data-key="total_cost_usd"] td')
    pg.wait_for_function("() => document.querySelector("
                         "'#whatif-results tr[data-key=\"total_cost_usd\"] td').textContent")
    before = total.inner_text()
    assert before == "$74.0M"  # the example with its 3 spare DGX H100
    # Dearer electricity: the total rises, with no plan.
    pg.locator("#wi-electricity_usd_per_kwh").fill("0.3")
    pg.wait_for_function("t => document.querySelector("
                         "'#whatif-results tr[data-key=\"total_cost_usd\"] td').textContent "
                         "!== t", arg=before)
    dearer = total.inner_text()
    assert dearer != before
    # Out of range: a message naming the control; the numbers stay those of the last state.
    pg.locator("#wi-utilization").fill("1.5")
    err = pg.locator("#whatif-error")
    err.wait_for(state="visible")
    assert err.inner_text().startswith("utilization: ")
    assert total.inner_text() == dearer
    # A deadline shorter than the training time asks for a re-plan.
    pg.locator("#wi-utilization").fill("0.8")
    pg.locator("#wi-deadline_days").fill("10")
    pg.locator("#whatif-replan").wait_for(state="visible")
    assert "re-plan" in pg.locator("#whatif-replan-why").inner_text()
    assert pg.locator("button#replan").count() == 1
    w.check("what-if")  # the refusal was a message: no failed request, no console error
