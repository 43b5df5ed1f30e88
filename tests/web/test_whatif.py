"""The what-if page of a finished run: its sliders start at the plan's values, the JSON route
re-prices the stored blueprint without a new plan, and a value outside its range is refused
(422) naming the control, the page keeping its last valid numbers (tests/web/test_browser.py
drives that in Chromium)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from clusterwright.web.app import create_app
from clusterwright.web.examples import EXAMPLES_DIR
from tests.web.helpers import TRAINING, client_of

BLUEPRINT = json.loads((EXAMPLES_DIR / "training-1k-h100" / "blueprint.json").read_text())


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with client_of(create_app(tmp_path / "cw.db")) as c:
        yield c


def done_run(client: TestClient, blueprint: dict[str, object] = BLUEPRINT) -> int:
    """A finished run holding ``blueprint`` (the shipped example's), recorded as a plan does."""
    store = client.app.state.web.store  # type: ignore[attr-defined]
    sc = store.save_scenario("training-1k-h100", TRAINING)
    run = store.create_run(sc.id)
    store.finish_run(run.id, metrics={"gpus": 1024}, blueprint=blueprint, artifacts_dir=None)
    return int(run.id)


def test_the_page_starts_at_the_plans_values(client: TestClient) -> None:
    rid = done_run(client)
    r = client.get(f"/runs/{rid}/whatif")
    assert r.status_code == 200
    for control in ("utilization", "electricity_usd_per_kwh", "server_price_usd",
                    "cloud_usd_per_gpu_hour", "deadline_days"):
        assert f'id="wi-{control}"' in r.text, control
    assert 'id="wi-utilization" name="utilization" data-control="utilization" step="any" ' \
           'value="0.8"' in r.text
    assert "action=\"/scenarios/" in r.text  # the Re-plan button


def test_json_reprices_without_a_plan(client: TestClient) -> None:
    rid = done_run(client)
    base = client.get(f"/runs/{rid}/whatif.json").json()
    assert base["total_cost_usd"] == pytest.approx(BLUEPRINT["recommendation"]["total_cost_usd"])
    dear = client.get(f"/runs/{rid}/whatif.json",
                      params={"electricity_usd_per_kwh": 0.3, "cloud_term": "committed"}).json()
    assert dear["annual_opex_usd"] > base["annual_opex_usd"]
    assert dear["inputs"]["cloud_term"] == "committed"
    late = client.get(f"/runs/{rid}/whatif.json", params={"deadline_days": 10}).json()
    assert late["replan"] and "re-plan" in late["replan"][0]


@pytest.mark.parametrize("params, control", [
    ({"utilization": 0}, "utilization"), ({"utilization": 1.5}, "utilization"),
    ({"electricity_usd_per_kwh": -1}, "electricity_usd_per_kwh"),
    ({"server_price_usd": -10}, "server_price_usd"),
    ({"cloud_usd_per_gpu_hour": "nan"}, "cloud_usd_per_gpu_hour"),
    ({"cloud_term": "weekly"}, "cloud_term"),
])
def test_a_value_out_of_range_is_422_naming_the_control(client: TestClient,
                                                        params: dict[str, object],
                                                        control: str) -> None:
    rid = done_run(client)
    r = client.get(f"/runs/{rid}/whatif.json", params=params)
    assert r.status_code == 422
    assert r.json()["control"] == control and r.json()["error"].startswith(f"{control}: ")


def test_a_run_without_a_blueprint_has_no_whatif(client: TestClient) -> None:
    assert client.get("/runs/999/whatif").status_code == 404
    assert client.get("/runs/999/whatif.json").status_code == 404


def test_a_stored_blueprint_that_cannot_be_repriced_says_so(client: TestClient) -> None:
    bp = json.loads(json.dumps(BLUEPRINT))
    bp["tco"]["capex_breakdown_usd"]["network"] = None  # an edited or damaged blueprint
    rid = done_run(client, bp)
    page = client.get(f"/runs/{rid}/whatif")
    assert page.status_code == 200 and 'id="whatif-none"' in page.text
    r = client.get(f"/runs/{rid}/whatif.json")
    assert r.status_code == 422 and "re-plan" in r.json()["error"]
