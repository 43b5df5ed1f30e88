"""The editor's field completion: /scenario-schema.json serves the scenario format from the
pydantic models, the editor page loads complete.js wired to it, and a contradiction between
fields shows in the editor at its line with the other field's line in the message."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from clusterwright.spec.reference import completion
from clusterwright.web.app import create_app
from tests.web.helpers import client_of


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with client_of(create_app(tmp_path / "cw.db")) as c:
        yield c


def test_schema_endpoint_serves_the_models_fields(client: TestClient) -> None:
    r = client.get("/scenario-schema.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    data = r.json()
    assert data == completion()
    cluster = data["sections"]["Cluster"]
    assert set(cluster) == {"gpus", "spares", "headroom"}
    assert "spare" in cluster["spares"]["description"].lower()
    assert data["sections"][data["root"]]["workloads"]["kinds"]["training"] == "TrainingWorkload"


def test_editor_loads_completion_wired_to_the_schema(client: TestClient) -> None:
    html = client.get("/scenarios/new").text
    assert '<script src="/static/complete.js"></script>' in html
    assert 'id="completion"' in html and 'id="field-hint"' in html
    js = client.get("/static/complete.js")
    assert js.status_code == 200
    for needle in ('"/scenario-schema.json"', '"scenario-yaml"', '"completion"',
                   '"field-hint"', "keysAt", "fieldAt"):
        assert needle in js.text, needle


BAD = """\
name: "c"
workloads:
  - kind: "training"
    name: "a"
    model: "llama-3.1-8b"
    tokens: 1.0e11
    gpus: 64
cluster:
  gpus: 32
"""


def test_a_contradiction_shows_at_both_lines_naming_the_other(client: TestClient) -> None:
    html = client.post("/validate", data={"yaml": BAD}).text
    errors = [(int(n), unescape(m)) for n, m in
              re.findall(r'<li class="error" data-line="(\d+)">(.*?)</li>', html, re.S)]
    # One message, shown at both lines it names (as a fabric contradiction is).
    assert sorted(n for n, _ in errors) == [7, 9], html
    for _, msg in errors:
        assert "cluster.gpus (line 9)" in msg and "workloads[0].gpus (line 7)" in msg
