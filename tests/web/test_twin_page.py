"""The live twin page: the example compared, uploads compared, bad uploads as messages
(never a 500), escaping, and no server path taken from the form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from clusterwright.web.app import create_app
from tests.web.helpers import client_of

EX = Path(__file__).resolve().parents[2] / "examples" / "twin"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with client_of(create_app(tmp_path / "cw.db")) as c:
        yield c


def test_page_renders_with_the_example_blueprint_and_a_nav_link(client: TestClient) -> None:
    html = client.get("/twin").text
    assert 'value="example"' in html and 'name="lldp"' in html and 'name="ibnet"' in html
    assert 'href="/twin"' in client.get("/").text


def test_the_example_is_compared_and_drawn(client: TestClient) -> None:
    r = client.post("/twin", data={"blueprint": "example", "use_example": "1"})
    assert r.status_code == 200
    rows = re.findall(r'<tr data-kind="(\w+)" data-severity="(\w+)">', r.text)
    assert len(rows) >= 15
    assert {k for k, _ in rows} >= {"missing_link", "miswired_link", "wrong_speed", "slow_gpu"}
    assert "<svg" in r.text and 'data-device="leaf-su001-r1"' in r.text
    assert "GPU-hours lost per day" in r.text


def test_uploads_are_compared_without_impact(client: TestClient) -> None:
    files = [("ibnet", ("ib.txt", (EX / "as-built" / "ibnetdiscover.txt").read_bytes()))]
    r = client.post("/twin", data={"blueprint": "example"}, files=files)
    assert r.status_code == 200
    kinds = {k for k, _ in re.findall(r'<tr data-kind="(\w+)" data-severity="(\w+)">', r.text)}
    assert "missing_link" in kinds and "slow_gpu" not in kinds


def test_a_bad_upload_is_a_message_naming_the_file_and_line(client: TestClient) -> None:
    files = [("lldp", ("lldp.json", b'{"gpu00001": {"lldp": {"interface": \n'))]
    r = client.post("/twin", data={"blueprint": "example"}, files=files)
    assert r.status_code == 200
    assert re.search(r'class="notice" role="alert">lldp/0/lldp\.json:2: truncated JSON', r.text)
    assert "clusterwright-twin-web-" not in r.text  # the server's temp path is not shown


def test_nothing_uploaded_and_unknown_blueprint(client: TestClient) -> None:
    r = client.post("/twin", data={"blueprint": "example"})
    assert "upload at least one" in r.text
    r = client.post("/twin", data={"blueprint": "/etc", "use_example": "1"})
    assert "no blueprint &#39;/etc&#39;" in r.text


def test_file_names_are_escaped(client: TestClient) -> None:
    files = [("steps", ("<img src=x onerror=alert(1)>.csv", b"nothing here\n"))]
    r = client.post("/twin", data={"blueprint": "example"}, files=files)
    assert "<img src=x" not in r.text and "&lt;img src=x onerror=alert(1)&gt;.csv" in r.text
