"""The workbench pages without running a plan: every page renders, validation names the YAML
line, saving, escaping (pages and chart data), refusals (413, cross-origin, traversal),
input the loader did not foresee, concurrent saves, validation off the event loop."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from clusterwright.web import pages
from clusterwright.web.app import create_app
from clusterwright.web.examples import shipped_examples
from clusterwright.web.validation import Problem
from tests.web.helpers import BASE, TRAINING, client_of

XSS = "<script>alert(1)</script>"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with client_of(create_app(tmp_path / "cw.db")) as c:
        yield c


def _errors(html: str) -> list[tuple[int, str]]:
    return [(int(n), msg) for n, msg in
            re.findall(r'<li class="error" data-line="(\d+)">(.*?)</li>', html, re.S)]


def _bad_gutter_lines(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<span class="bad" data-line="(\d+)">', html)]


def test_every_page_renders(client: TestClient) -> None:
    for url in ("/", "/scenarios/new", "/scenarios/new?example=training-1k-h100", "/compare",
                "/catalog", "/catalog?kind=servers", "/catalog?kind=switches",
                "/catalog?kind=models", "/catalog?kind=optics", "/catalog/rows?kind=gpus&q=h",
                "/static/htmx.min.js", "/static/style.css", "/static/app.js", "/healthz",
                "/favicon.ico"):
        r = client.get(url)
        # 204 for the icon: the report page links none; a 404 is a browser console error.
        assert r.status_code == (204 if url == "/favicon.ico" else 200), url
    assert client.get("/healthz").json() == {"ok": True}


def test_home_lists_examples_with_data_attributes(client: TestClient) -> None:
    html = client.get("/").text
    assert shipped_examples(), "the repository ships examples/*/scenario.yaml"
    for name in shipped_examples():
        assert f'class="example-link" data-example="{name}"' in html


def test_example_loads_into_the_editor_and_is_valid(client: TestClient) -> None:
    html = client.get("/scenarios/new?example=training-1k-h100").text
    assert 'id="scenario-yaml"' in html and 'id="scenario-name"' in html
    assert 'name: &#34;training-1k-h100&#34;' in html  # the text, escaped inside the textarea
    assert 'class="valid"' in html and _errors(html) == []


def test_unknown_example_is_404_and_no_path_is_read(client: TestClient) -> None:
    for name in ("../training-1k-h100", "training-1k-h100/../frontier-16k", "/etc/passwd"):
        r = client.get("/scenarios/new", params={"example": name})
        assert r.status_code == 404
        assert "no shipped example" in r.text


def test_static_assets_are_local_and_htmx_is_vendored(client: TestClient) -> None:
    html = client.get("/").text
    srcs = re.findall(r'(?:src|href)="([^"]+)"', html)
    # Every asset the page loads is served by the app itself (works with no internet).
    assert all(not s.startswith(("http:", "https:", "//")) for s in srcs), srcs
    assert "/static/htmx.min.js" in srcs
    assert client.get("/static/htmx.min.js").text.startswith("var htmx=")


def test_plotly_is_served_from_the_plotly_package_with_an_etag(client: TestClient) -> None:
    r = client.get("/static/plotly.min.js")
    assert r.status_code == 200 and len(r.content) > 1_000_000
    assert b"plotly.js" in r.content[:2000]
    again = client.get("/static/plotly.min.js", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


@pytest.mark.parametrize(("text", "line", "words"), [
    # a YAML syntax error: the flow sequence opened on line 4 is still open where the text
    # ends, line 5 (PyYAML reports where it noticed)
    ('name: "x"\nworkloads:\n  - kind: "training"\n    gpus: [8\n', 5, "invalid YAML"),
    # an unknown field inserted after deadline_days (line 15 of the example): line 16
    (TRAINING.replace("    deadline_days: 45", "    deadline_days: 45\n    gpu_count: 3"),
     16, "unknown field"),
    # an unknown model id: "model:" is line 9 of the example
    (TRAINING.replace('model: "llama-3.1-70b"', 'model: "llama-9"'), 9, "unknown model id"),
    # a negative GPU count: "gpus: 1024" is line 14 of the example
    (TRAINING.replace("gpus: 1024", "gpus: -4"), 14, "greater than 0"),
])
def test_validation_errors_carry_the_yaml_line(client: TestClient, text: str, line: int,
                                               words: str) -> None:
    html = client.post("/validate", data={"yaml": text}).text
    errors = _errors(html)
    assert [n for n, _ in errors] == [line], errors
    assert words in errors[0][1]
    assert _bad_gutter_lines(html) == [line]
    assert 'hx-swap-oob="true"' in html  # the gutter is refreshed with the errors


def test_line_numbers_of_the_shipped_example(client: TestClient) -> None:
    # training-1k-h100 line 14 is "    gpus: 1024" (counted in the file by hand).
    assert TRAINING.splitlines()[13].strip() == "gpus: 1024"
    bad = TRAINING.replace("gpus: 1024", "gpus: many")
    assert [n for n, _ in _errors(client.post("/validate", data={"yaml": bad}).text)] == [14]


def test_size_caps_are_errors_at_the_field_line(client: TestClient) -> None:
    big = TRAINING.replace("gpus: 1024", "gpus: 10000000")
    errors = _errors(client.post("/validate", data={"yaml": big}).text)
    assert len(errors) == 1 and errors[0][0] == 14
    # The scenario model has the same cap now; either one names it.
    assert "131,072" in errors[0][1] or "131072" in errors[0][1]


def test_empty_text_is_one_error_without_a_line(client: TestClient) -> None:
    assert _errors(client.post("/validate", data={"yaml": "  \n"}).text)[0][0] == 0


def test_save_redirects_to_the_editor_and_saves_revisions(client: TestClient) -> None:
    r = client.post("/scenarios", data={"name": "", "yaml": TRAINING}, follow_redirects=False)
    assert r.status_code == 303
    first = int(r.headers["location"].rsplit("/", 1)[1])
    r2 = client.post("/scenarios", data={"name": "training-1k-h100", "yaml": TRAINING + "\n"},
                     follow_redirects=False)
    second = int(r2.headers["location"].rsplit("/", 1)[1])
    store = client.app.state.web.store  # type: ignore[attr-defined]
    assert store.get_scenario(first).name == "training-1k-h100"  # taken from the YAML
    assert store.get_scenario(second).revision == 2
    assert "training-1k-h100" in client.get(f"/scenarios/{second}").text


def test_an_invalid_scenario_is_not_saved(client: TestClient) -> None:
    bad = TRAINING.replace("gpus: 1024", "gpus: many")
    r = client.post("/scenarios", data={"name": "bad", "yaml": bad})
    assert r.status_code == 422
    assert "not saved" in r.text and [n for n, _ in _errors(r.text)] == [14]
    assert client.app.state.web.store.list_scenarios() == []  # type: ignore[attr-defined]


def test_a_script_name_is_shown_as_text(client: TestClient) -> None:
    r = client.post("/scenarios", data={"name": XSS, "yaml": TRAINING})
    assert r.status_code == 200  # followed to the editor
    for html in (r.text, client.get("/").text):
        assert XSS not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # Error messages quote user text: escaped too.
    bad = TRAINING.replace('model: "llama-3.1-70b"', f'model: "{XSS}"')
    html = client.post("/validate", data={"yaml": bad}).text
    assert XSS not in html and "&lt;script&gt;" in html


def test_missing_ids_are_404_and_non_integer_ids_are_refused(client: TestClient) -> None:
    assert client.get("/scenarios/99").status_code == 404
    assert client.get("/runs/99").status_code == 404
    assert client.get("/runs/99/report").status_code == 404
    assert client.get("/runs/99/artifacts.zip").status_code == 404
    assert client.post("/scenarios/99/runs").status_code == 404
    for url in ("/runs/..%2F1/artifacts.zip", "/runs/1%2F..%2F2/report", "/runs/-/progress",
                "/scenarios/..%2F..%2Fetc", "/static/..%2F..%2Fpyproject.toml",
                "/static/../app.py"):
        r = client.get(url)
        assert r.status_code in (404, 422), url
        assert "[build-system]" not in r.text and "def create_app" not in r.text, url


def test_body_over_the_limit_gets_413(tmp_path: Path) -> None:
    with client_of(create_app(tmp_path / "cw.db", max_body_bytes=2_000)) as c:
        r = c.post("/validate", data={"yaml": "x" * 5_000})
        assert r.status_code == 413
        assert "limit of 2,000 bytes" in r.json()["detail"]
        # No Content-Length (chunked): the bytes are counted as they arrive.
        chunks = iter([b"yaml=" + b"y" * 1_500, b"y" * 1_500])
        r = c.post("/validate", content=chunks,
                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 413
        assert c.post("/validate", data={"yaml": "name: x"}).status_code == 200


def test_cross_origin_writes_are_refused(client: TestClient) -> None:
    r = client.post("/scenarios", data={"name": "x", "yaml": TRAINING},
                    headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    r = client.post("/validate", data={"yaml": TRAINING}, headers={"Origin": "null"})
    assert r.status_code == 403
    ok = client.post("/validate", data={"yaml": TRAINING}, headers={"Origin": BASE})
    assert ok.status_code == 200
    assert ok.headers["x-content-type-options"] == "nosniff"
    assert client.app.state.web.store.list_scenarios() == []  # type: ignore[attr-defined]


def test_concurrent_saves_lose_nothing(client: TestClient) -> None:
    threads, per_thread = 6, 5
    failures: list[str] = []

    def save(t: int) -> None:
        for i in range(per_thread):
            r = client.post("/scenarios", data={"name": f"s{t % 2}", "yaml": TRAINING +
                                                f"# {t}-{i}\n"}, follow_redirects=False)
            if r.status_code != 303:
                failures.append(f"{t}-{i}: {r.status_code}")

    workers = [threading.Thread(target=save, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []
    store = client.app.state.web.store  # type: ignore[attr-defined]
    revisions = [store.list_revisions(f"s{k}") for k in (0, 1)]
    # 3 threads x 5 saves per name; revisions numbered 1..15 with no gap or repeat.
    assert [sorted(r.revision for r in revs) for revs in revisions] == [list(range(1, 16))] * 2
    texts = {r.yaml_text.rsplit("# ", 1)[1].strip() for revs in revisions for r in revs}
    assert texts == {f"{t}-{i}" for t in range(threads) for i in range(per_thread)}


def test_catalog_search_filters_rows(client: TestClient) -> None:
    all_rows = client.get("/catalog?kind=gpus").text.count('class="catalog-row"')
    h100 = client.get("/catalog?kind=gpus&q=H100").text
    rows = re.findall(r'(<tr class="catalog-row" data-id="([^"]+)".*?</tr>)', h100, re.S)
    # A hit may match on its name rather than its id (gh200 is "H100 GPU in GH200 ...").
    assert rows and all("h100" in html.lower() for html, _ in rows) and len(rows) < all_rows
    assert "h100-sxm" in [i for _, i in rows]
    part = client.get("/catalog/rows", params={"kind": "gpus", "q": "h100"}).text
    assert part.startswith('<div id="catalog-results">') and "<html" not in part
    assert 'id="catalog-search"' in client.get("/catalog").text
    nothing = client.get("/catalog", params={"kind": "models", "q": XSS}).text
    assert "0 entries" in nothing and XSS not in nothing


def test_compare_needs_two_finished_runs(client: TestClient) -> None:
    html = client.get("/compare?run=1&run=2").text
    assert "run 1 is not in this database" in html
    assert 'id="compare"' not in html
    assert client.get("/compare?run=abc").status_code == 422


@pytest.mark.parametrize("bad", ["[a, b]", "{first: a}"])
def test_a_workload_name_that_is_not_text_is_an_error_not_a_500(client: TestClient,
                                                                bad: str) -> None:
    # The loader's repeated-name check hashed the name: a list or a mapping raised TypeError.
    text = TRAINING.replace('name: "pretrain-70b"', f"name: {bad}", 1)
    assert text != TRAINING
    r = client.post("/validate", data={"yaml": text})
    assert r.status_code == 200 and _errors(r.text), r.text
    assert "Internal Server Error" not in r.text
    saved = client.post("/scenarios", data={"name": "odd", "yaml": text})
    assert saved.status_code == 422 and "not saved" in saved.text and _errors(saved.text)
    assert client.app.state.web.store.list_scenarios() == []  # type: ignore[attr-defined]


def test_an_unforeseen_error_while_checking_is_a_message(client: TestClient,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kw: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("clusterwright.web.validation.loads_scenario", broken)
    r = client.post("/validate", data={"yaml": TRAINING})
    assert r.status_code == 200
    assert [msg for _, msg in _errors(r.text)] == [
        "the scenario could not be checked (RecursionError: maximum recursion depth exceeded); "
        "a field probably has the wrong type, e.g. a list or mapping where a name or number "
        "belongs"]
    assert client.post("/scenarios", data={"name": "x", "yaml": TRAINING}).status_code == 422


def test_validation_runs_off_the_event_loop(client: TestClient,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that takes long (a huge or hostile document) must not stop other requests.
    entered, release = threading.Event(), threading.Event()

    def slow(text: str, cat: Any) -> tuple[None, list[Problem]]:
        entered.set()
        release.wait(30)  # a guard: if the loop were blocked the test fails, it does not hang
        return None, [Problem(None, "slow")]

    monkeypatch.setattr(pages, "check_text", slow)
    answers: list[int] = []
    t = threading.Thread(target=lambda: answers.append(
        client.post("/validate", data={"yaml": "name: x"}).status_code))
    t.start()
    try:
        assert entered.wait(30)
        # Answered while the check still runs; before release.set() below.
        assert client.get("/healthz").json() == {"ok": True}
        assert client.get("/catalog").status_code == 200
        assert not release.is_set() and answers == []
    finally:
        release.set()
        t.join(30)
    assert answers == [200]


PWN = '<a href="https://example.com/pwn">CLICK</a>'


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def test_compare_charts_show_markup_in_names_as_text(client: TestClient) -> None:
    store = client.app.state.web.store  # type: ignore[attr-defined]
    ids = []
    for name, cost in ((PWN, 1.0e8), ("b & <i>c</i>", 2.0e8)):
        run = store.create_run(store.save_scenario(name, TRAINING).id)
        store.finish_run(run.id, blueprint={}, metrics={"total_cost_usd": cost, "gpus": 1024},
                         artifacts_dir=None)
        ids.append(run.id)
    page = client.get("/compare", params={"run": ids}).text
    figs = [json.loads(unescape(f))
            for f in re.findall(r'<div class="plot" data-figure=\'([^\']+)\'', page)]
    assert len(figs) == 2  # total cost and GPUs
    strings = [s for f in figs for s in _strings(f)]
    # plotly.js renders <a href> in labels as a link; the figure data must hold none.
    assert not any("<a" in s or "<i>" in s for s in strings), strings
    assert figs[0]["data"][0]["y"] == [
        f'#{ids[0]} &lt;a href="https://example.com/pwn"&gt;CLICK&lt;/a&gt; r1',
        f"#{ids[1]} b &amp; &lt;i&gt;c&lt;/i&gt; r1"]
    # The table shows the names as text (Jinja escapes them once, for HTML).
    assert "&lt;a href=&#34;https://example.com/pwn&#34;&gt;CLICK&lt;/a&gt;" in page
    assert PWN not in page
