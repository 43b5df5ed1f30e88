"""report/figures.py: the cost chart draws on-prem and every cloud offer (the policy's choice
bold, estimates labelled), stays drawable from older blueprints and bad values."""

from __future__ import annotations

import json
import re
from typing import Any

from clusterwright.report.figures import cost_over_time


def _traces(fragment: str) -> list[dict[str, Any]]:
    """The traces plotly serialised into the fragment's ``Plotly.newPlot`` call."""
    m = re.search(r"Plotly\.newPlot\(\s*\"fig-cost\",\s*(\[.*?\]),\s*\{", fragment, re.S)
    assert m, fragment[:300]
    out: list[dict[str, Any]] = json.loads(m.group(1))
    return out


def _tco(offers: list[dict[str, Any]] | None) -> dict[str, Any]:
    tco: dict[str, Any] = {"cost_over_time": [
        {"month": m, "on_prem_cumulative_usd": 1e6 + 1e4 * m,
         "cloud_on_demand_cumulative_usd": 5e4 * m, "cloud_committed_cumulative_usd": 4e4 * m}
        for m in range(25)]}
    if offers is not None:
        tco["cloud_offers_over_time"] = offers
    return tco


def _offer(name: str, term: str, rate: float, chosen: bool, est: bool) -> dict[str, Any]:
    return {"offer": name, "term": term, "usd_per_gpu_hour": rate, "chosen": chosen,
            "estimate": est, "cumulative_usd": [rate * 1e4 * m for m in range(25)]}


def test_every_offer_is_a_line_and_the_choice_is_bold() -> None:
    offers = [_offer("lambda-8x", "on_demand", 2.99, True, True),
              _offer("lambda-8x", "committed", 1.85, False, True),
              _offer("aws-p5", "on_demand", 6.88, False, False)]
    fig = cost_over_time(_tco(offers), 20.0)
    assert fig is not None
    traces = _traces(fig)
    names = [t["name"] for t in traces]
    # on-prem plus one line per offer and term; the single-offer series are not repeated
    assert len(traces) == 4 and names[0].startswith("on-prem")
    assert "cloud on-demand" not in names
    chosen = [t for t in traces if t["name"].startswith("cloud, chosen:")]
    assert len(chosen) == 1 and chosen[0]["line"]["width"] == 3
    assert "estimate" in chosen[0]["name"] and "$2.99/GPU-h" in chosen[0]["name"]
    aws = next(t for t in traces if "aws-p5" in t["name"])
    assert "estimate" not in aws["name"] and aws["line"]["dash"] == "dot"
    committed = next(t for t in traces if "committed" in t["name"])
    assert committed["line"]["dash"] == "dash"


def test_older_blueprints_and_bad_series_still_draw() -> None:
    old = cost_over_time(_tco(None), None)
    assert old is not None
    assert [t["name"] for t in _traces(old)] == ["on-prem (capex + opex)", "cloud on-demand",
                                                 "cloud committed"]
    bad = [{"offer": "<b>x</b>", "term": "on_demand", "cumulative_usd": "monthly"},
           {"offer": "y", "term": "1y", "cumulative_usd": [None, "a", 3.0]}, 5]
    fig = cost_over_time(_tco(bad), None)  # type: ignore[arg-type]
    assert fig is not None and "<b>x</b>" not in fig
