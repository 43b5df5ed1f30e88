"""The web workbench under hostile requests: every route with forged Host, Origin and Referer
headers, hostile ids and query values, and hostile bodies (the file corpus, random text).

Every answer must be below 500. A forged Host is refused (400) before anything is read; a
write without a same-site Origin or Referer is refused (403) and saves nothing; nothing a
refused request sends reaches the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from clusterwright.web.app import create_app
from tests.fuzz.harness import CASE_TIMEOUT_S, alarm
from tests.fuzz.test_files import CORPUS
from tests.web.helpers import BASE, TRAINING

GET_ROUTES = ["/", "/scenarios/new", "/scenarios/{id}", "/runs/{id}", "/runs/{id}/progress",
              "/runs/{id}/report", "/runs/{id}/artifacts.zip", "/compare?run={id}",
              "/catalog?kind={text}", "/catalog/rows?kind={text}", "/scenarios/new?example={text}",
              "/healthz", "/favicon.ico", "/static/{text}", "/runs/{id}/whatif",
              "/runs/{id}/whatif.json", "/runs/1/whatif.json?utilization={text}",
              "/runs/1/whatif.json?cloud_term={text}&deadline_days={text}"]
POST_ROUTES = ["/validate", "/scenarios", "/scenarios/{id}/runs"]

HOSTILE_IDS = ["0", "-1", "99999999999999999999999", "1e3", "abc", "..%2f..%2fetc%2fpasswd",
               "%00", "1;DROP TABLE runs", "\u0661"]
HOSTILE_TEXT = ["", "../../etc/passwd", "%2e%2e%2f", "<script>alert(1)</script>", "x" * 5000,
                "gpus%00", "\u202e"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("web") / "cw.db"
    app = create_app(db, max_concurrent_runs=1)
    with TestClient(app, base_url=BASE, headers={"Origin": BASE}) as c:
        yield c


def _scenarios(client: TestClient) -> int:
    return len(client.app.state.web.store.list_scenarios())  # type: ignore[attr-defined]


def _fill(route: str, value: str) -> str:
    return route.replace("{id}", value).replace("{text}", value)


def _request(client: TestClient, method: str, url: str, **kw: object):  # type: ignore[no-untyped-def]
    with alarm(CASE_TIMEOUT_S):
        return client.request(method, url, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("route", GET_ROUTES)
def test_get_routes_with_hostile_values(client: TestClient, route: str) -> None:
    bad = []
    for v in HOSTILE_IDS + HOSTILE_TEXT:
        r = _request(client, "GET", _fill(route, v))
        if r.status_code >= 500:
            bad.append(f"GET {_fill(route, v)[:80]} -> {r.status_code}: {r.text[:200]}")
    assert not bad, "\n".join(bad)


HOSTS = ["evil.com", "evil.com:8000", "127.0.0.1.evil.com", "localhost.evil.com", "",
         "127.0.0.1:8000@evil.com", "[::1", "127.0.0.1 evil.com", "xn--80ak6aa92e.com"]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("route", ["/", "/scenarios/new", "/catalog", "/healthz"])
def test_forged_host_is_refused_before_anything_is_read(client: TestClient, host: str,
                                                         route: str) -> None:
    r = _request(client, "GET", route, headers={"Host": host})
    assert r.status_code == 400, (host, r.status_code, r.text[:200])


# (Origin, Referer, allowed): None = header not sent.
WRITE_HEADERS = [
    (BASE, None, True), (None, BASE + "/scenarios/new", True),
    (None, None, False), ("https://evil.com", None, False), ("null", None, False),
    (None, "https://evil.com/page", False), ("https://evil.com", BASE + "/", False),
    (BASE + ".evil.com", None, False), ("http://127.0.0.1:9999", None, False),
    (None, "http://127.0.0.1:8000.evil.com/", False), ("file://", None, False),
]


@pytest.mark.parametrize("origin,referer,allowed", WRITE_HEADERS)
def test_writes_need_a_same_site_origin_or_referer(tmp_path: Path, origin: str | None,
                                                   referer: str | None, allowed: bool) -> None:
    app = create_app(tmp_path / "cw.db")
    with TestClient(app, base_url=BASE) as c:
        headers = {k: v for k, v in (("Origin", origin), ("Referer", referer)) if v is not None}
        r = c.post("/scenarios", data={"name": "x", "yaml": TRAINING}, headers=headers,
                   follow_redirects=False)
        saved = _scenarios(c)
    if allowed:
        assert r.status_code < 400 and saved == 1, (r.status_code, r.text[:200])
    else:
        assert r.status_code == 403 and saved == 0, (r.status_code, r.text[:200])


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.iterdir()))
def test_corpus_posted_as_a_scenario_saves_nothing(client: TestClient, name: str) -> None:
    text = (CORPUS / name).read_bytes().decode("utf-8", "replace")
    before = _scenarios(client)
    for route in ("/validate", "/scenarios"):
        r = _request(client, "POST", route, data={"name": "fuzz", "yaml": text},
                     follow_redirects=False)
        assert r.status_code < 500, (route, r.status_code, r.text[:300])
    assert _scenarios(client) == before


_WRITE_ROUTE = st.sampled_from(POST_ROUTES)
_FORM_TEXT = st.text(max_size=2000)


@given(route=_WRITE_ROUTE, ident=st.sampled_from(HOSTILE_IDS), name=_FORM_TEXT,
       body=_FORM_TEXT, extra=st.dictionaries(st.text(max_size=20), st.text(max_size=50),
                                              max_size=3))
def test_any_form_on_any_write_route(client: TestClient, route: str, ident: str, name: str,
                                     body: str, extra: dict[str, str]) -> None:
    before = _scenarios(client)
    r = _request(client, "POST", _fill(route, ident),
                 data={**extra, "name": name, "yaml": body}, follow_redirects=False)
    assert r.status_code < 500, (r.status_code, r.text[:300])
    # Random text is never a valid scenario: nothing may be saved.
    assert _scenarios(client) == before


@given(path=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_path_answers_below_500(client: TestClient, path: str) -> None:
    # Percent-encoded as a browser would send it (httpx refuses raw control characters).
    r = _request(client, "GET", "/" + quote(path.lstrip("/"), safe="/?=&%."))
    assert r.status_code < 500, (path, r.status_code, r.text[:300])
