"""The request guards: only allowed Host names are answered (DNS rebinding), writes need an
Origin or Referer of this server, refusals carry the defensive headers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from clusterwright.web.app import create_app
from tests.web.helpers import BASE, TRAINING, client_of

SAVED = "saved-before"


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    return create_app(tmp_path / "cw.db")


@pytest.fixture
def bare(app: FastAPI) -> Iterator[TestClient]:
    """A client that adds no Origin: each test says which headers it sends."""
    with client_of(app, origin=False) as c:
        c.app.state.web.store.save_scenario(SAVED, TRAINING)  # type: ignore[attr-defined]
        yield c


def _names(c: TestClient) -> list[str]:
    return [s.name for s in c.app.state.web.store.list_scenarios()]  # type: ignore[attr-defined]


def _save(c: TestClient, headers: dict[str, str], name: str = "new") -> int:
    r = c.post("/scenarios", data={"name": name, "yaml": TRAINING}, headers=headers,
               follow_redirects=False)
    return r.status_code


@pytest.mark.parametrize("host", ["evil.com", "evil.com:8000", "127.0.0.1.evil.com",
                                  "localhost.evil.com:8000", "testserver", "0.0.0.0:8000"])
def test_a_foreign_host_is_refused_and_reads_nothing(bare: TestClient, host: str) -> None:
    # A DNS-rebinding page's requests reach 127.0.0.1 with its own name as Host.
    for url in ("/", "/healthz", f"/scenarios/{1}", "/static/app.js"):
        r = bare.get(url, headers={"Host": host})
        assert r.status_code == 400, (url, r.status_code)
        assert SAVED not in r.text
        assert "is not a name this server answers to" in r.json()["detail"]
        assert r.headers["x-frame-options"] == "DENY"  # refusals carry the headers too


def test_a_foreign_host_cannot_write_even_with_a_matching_origin(bare: TestClient) -> None:
    for host in ("evil.com", "evil.com:8000"):
        assert _save(bare, {"Host": host, "Origin": f"http://{host}"}) == 400
        assert _save(bare, {"Host": host, "Referer": f"http://{host}/scenarios/new"}) == 400
    assert _names(bare) == [SAVED]


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "LOCALHOST:8000", "localhost.",
                                  "127.0.0.1", "127.0.0.1:8000", "[::1]", "[::1]:8000",
                                  "[0:0:0:0:0:0:0:1]:8000"])
def test_loopback_hosts_are_answered_with_or_without_a_port(bare: TestClient,
                                                            host: str) -> None:
    r = bare.get("/", headers={"Host": host})
    assert r.status_code == 200 and SAVED in r.text


@pytest.mark.parametrize("host", ["[::1", "a b", "local_host:99999", "::1", "localhost:",
                                  "[::1]x", ""])
def test_a_malformed_host_is_refused(bare: TestClient, host: str) -> None:
    assert bare.get("/healthz", headers={"Host": host}).status_code == 400


def test_a_write_with_neither_origin_nor_referer_is_refused(bare: TestClient) -> None:
    r = bare.post("/scenarios", data={"name": "new", "yaml": TRAINING}, follow_redirects=False)
    assert r.status_code == 403
    assert "Origin or Referer" in r.json()["detail"]
    assert bare.post(f"/scenarios/{1}/runs").status_code == 403
    assert bare.post("/validate", data={"yaml": TRAINING}).status_code == 403
    assert _names(bare) == [SAVED]
    assert bare.app.state.web.store.list_runs() == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("referer", ["http://evil.example/page", "http://127.0.0.1:9999/",
                                     "http://127.0.0.1.evil.example:8000/", "null",
                                     "file:///tmp/x.html", "not a url"])
def test_a_write_with_a_foreign_referer_and_no_origin_is_refused(bare: TestClient,
                                                                 referer: str) -> None:
    assert _save(bare, {"Referer": referer}) == 403
    assert _names(bare) == [SAVED]


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:9999",
                                    "http://127.0.0.1", "http://localhost:8000",
                                    "ftp://127.0.0.1:8000", "http://127.0.0.1:8000.evil.example"])
def test_a_write_with_a_foreign_origin_is_refused(bare: TestClient, origin: str) -> None:
    assert _save(bare, {"Origin": origin}) == 403
    # A same-site Referer does not overrule a foreign Origin.
    assert _save(bare, {"Origin": origin, "Referer": BASE + "/scenarios/new"}) == 403
    assert _names(bare) == [SAVED]


def test_a_write_from_the_servers_own_pages_is_accepted(bare: TestClient) -> None:
    assert _save(bare, {"Origin": BASE}, "by-origin") == 303
    assert _save(bare, {"Referer": BASE + "/scenarios/new?example=x"}, "by-referer") == 303
    # Each loopback name matches itself, port and all (the browser's Host and Origin agree).
    assert _save(bare, {"Host": "localhost:8000", "Origin": "http://localhost:8000"},
                 "by-localhost") == 303
    assert _save(bare, {"Host": "[::1]:8000", "Origin": "http://[::1]:8000"}, "by-v6") == 303
    # No port in Host means the default of the page's scheme (a TLS proxy in front).
    assert _save(bare, {"Host": "localhost", "Origin": "https://localhost"}, "by-tls") == 303
    assert sorted(_names(bare)) == ["by-localhost", "by-origin", "by-referer", "by-tls",
                                    "by-v6", SAVED]


def test_reads_need_no_origin(bare: TestClient) -> None:
    assert bare.get("/").status_code == 200
    assert bare.get("/", headers={"Origin": "http://evil.example"}).status_code == 200


def test_added_host_names_are_answered(tmp_path: Path) -> None:
    app = create_app(tmp_path / "cw.db", allowed_hosts=["Workbench.Example.", "10.0.0.7"])
    assert app.state.web.config.allowed_hosts == {
        "localhost", "127.0.0.1", "[::1]", "workbench.example", "10.0.0.7"}
    with client_of(app, origin=False) as c:
        for host in ("workbench.example", "workbench.example:8000", "10.0.0.7:8000"):
            assert c.get("/healthz", headers={"Host": host}).status_code == 200, host
        assert _save(c, {"Host": "workbench.example:8000",
                         "Origin": "http://workbench.example:8000"}) == 303
        assert c.get("/healthz", headers={"Host": "other.example"}).status_code == 400
    with pytest.raises(ValueError, match="without a port"):
        create_app(tmp_path / "cw.db", allowed_hosts=["workbench.example:8000"])
