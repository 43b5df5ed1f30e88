"""The HTML report: offline, escaped, every section present or "not applicable", SVGs
well-formed, the blueprint's numbers on the page. Blueprints are built by hand
(tests/report/blueprints.py) so these tests do not run the planners."""

from __future__ import annotations

import functools
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from plotly.offline import get_plotlyjs

from clusterwright.report.html import render_html, render_report
from tests.report import blueprints

HEADINGS = (
    "1. Recommendation", "2. Why: alternatives considered",
    "3. Backend fabric",
    "4. Rack elevations", "5. Bill of materials", "6. Training step-time breakdown",
    "7. Inference latency vs QPS", "8. Cost over time: cloud vs on-prem",
    "9. Failures and checkpoints", "10. Power", "11. Challenges and risks", "12. Sources",
)
URL_ATTRS = {"src", "href", "srcset", "action", "data", "poster", "xlink:href", "formaction"}


class _Refs(HTMLParser):
    """Every URL-bearing attribute of every element, and the tags seen (script text is data,
    so URLs inside plotly.js's source are not element attributes and are not collected)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"
        for k, v in attrs:
            if k in URL_ATTRS and v is not None:
                self.urls.append((tag, k, v))

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


@functools.cache
def _page(kind: str) -> str:
    bp = {"full": blueprints.full, "infeasible": blueprints.infeasible,
          "inference": blueprints.inference_only}[kind]()
    return render_html(bp)


def _refs(page: str) -> _Refs:
    p = _Refs()
    p.feed(page)
    p.close()
    return p


def _svgs(page: str) -> list[str]:
    """The SVG elements of the body (plotly.js in the head has SVG markup in its strings)."""
    return re.findall(r"<svg\b.*?</svg>", page[page.index("<body>"):], flags=re.S)


@pytest.mark.parametrize("kind", ["full", "infeasible", "inference"])
def test_page_loads_nothing_from_the_network(kind: str) -> None:
    page = _page(kind)
    refs = _refs(page)
    external = [u for u in refs.urls if re.match(r"\s*(https?:)?//", u[2], flags=re.I)]
    # A link a reader may follow to a cited datasheet or price list is not a load.
    assert [u for u in external if u[:2] != ("a", "href")] == []
    # All scripts inline, no stylesheet links, no CSS imports or remote url(...).
    assert [t for t, a in refs.tags if t == "script" and "src" in a] == []
    assert [t for t, _ in refs.tags if t == "link"] == []
    css = "".join(refs.styles)
    assert "@import" not in css and not re.search(r"url\(\s*['\"]?(https?:)?//", css)
    # The only hrefs are in-page anchors, and links to cited sources.
    assert all(v.startswith("#") or (t == "a" and v.startswith("https://"))
               for t, k, v in refs.urls if k == "href")


@pytest.mark.parametrize("kind", ["full", "infeasible", "inference"])
def test_plotly_js_is_embedded_exactly_once(kind: str) -> None:
    page = _page(kind)
    head = get_plotlyjs()[:200]  # the bundle's licence banner and loader: unique to it
    assert page.count(head) == 1
    assert page.count("* plotly.js v") == 1


def test_full_page_has_every_section_heading_and_footer() -> None:
    page = _page("full")
    for h in HEADINGS:
        assert f">{h}" in page, h
    assert "clusterwright 0.1.0 · blueprint schema 1.0" in page
    assert "Not applicable" not in page  # the full blueprint fills every section


def test_catalog_prices_link_to_their_source() -> None:
    page = _page("full")
    # The BOM's unit price carries [n], the number of its entry in the sources section.
    lines = page[page.index('id="bom-lines"'):]
    m = re.search(r'<tr><td>switch</td><td>sn5600</td>[^\n]*?<a href="#src-(\d+)">', lines)
    assert m, "no source reference on the sn5600 line"
    entry = re.search(rf'<li id="src-{m.group(1)}">(.*?)</li>', page, flags=re.S)
    assert entry and "NVIDIA SN5000 user manual" in entry.group(1)
    assert '<a href="https://example.org/sn5600-price"' in entry.group(1)
    # Capex by category on the headline page sums the TCO's categories.
    assert "Capex by category" in page and "Opex per year by category" in page


def test_full_page_shows_the_blueprints_numbers() -> None:
    page = _page("full")
    # recommendation: total_cost_usd 79,184,079.6 -> $79.2M; capex 40,866,810 -> $40.9M;
    # 1,024 GPUs; breakeven 11.76 months -> "11.8 months" (3 significant digits).
    for s in ("h100-sxm", "dgx-h100", "$79.2M", "$40.9M", "1,024", "11.8 months",
              "$2.21"):
        assert s in page, s
    # alternatives and why they lost
    assert "cost +23 %" in page and "misses deadline by 12 days" in page
    # training: MFU 0.412 -> 41.2 %; step time 9.87 s; layout TP8 PP4 DP32
    assert "41.2 %" in page and "9.87 s" in page and "TP8 · PP4 · DP32" in page
    # power: limit 42.9 kW, facility 1,659.6 kW -> "1,660 kW"
    assert "42.9 kW" in page and "1,660 kW" in page
    # one figure each: step time, latency, diurnal, cost, timeline, time to train, rack power
    for div in ("fig-step-time", "fig-latency-0", "fig-diurnal-0", "fig-cost", "fig-timeline",
                "fig-ttt", "fig-rack-power", "fig-power-trace"):
        assert f'id="{div}"' in page, div
    assert page.count("Plotly.newPlot(") == 8


def test_risks_are_listed_high_first_with_severity_tags() -> None:
    page = _page("full")
    high = page.index("Racks at 95 % of the air limit")
    medium = page.index("A failure every 46 hours")
    low = page.index("No oversubscription")
    assert high < medium < low
    assert '<span class="sev high">high</span>' in page


def test_svgs_are_well_formed_xml() -> None:
    page = _page("full")
    found = _svgs(page)
    # one SU, the whole fabric, the frontend/OOB networks + 4 representative racks (densest
    # compute, densest network, then the fullest)
    assert len(found) == 7
    roots = [ET.fromstring(s) for s in found]
    assert all(r.tag == "svg" for r in roots)
    labels = [r.get("aria-label") or "" for r in roots]
    assert labels[0] == "one scalable unit of the Ethernet (RoCE) backend"
    assert labels[1].startswith("backend fabric: 16 leaf, 8 spine, 0 core")
    assert labels[2] == "frontend, storage and out-of-band networks"
    assert {"rack r001-01 elevation", "rack n001 elevation"} <= set(labels)


def test_user_text_is_escaped() -> None:
    bp = blueprints.full()
    bp["scenario"]["name"] = "<script>alert(1)</script>"
    bp["scenario"]["description"] = '<img src=x onerror="alert(2)">'
    bp["workloads"][0]["name"] = "<b>bold</b>"
    bp["racks"][0]["devices"][0]["name"] = "<rack&dev>"
    bp["risks"][0]["title"] = "</li><script>alert(3)</script>"
    page = render_html(bp)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # title and h1, as text
    assert "<img src=x" not in page and "&lt;img src=x" in page
    assert "<b>bold</b>" not in page
    assert "<script>alert(3)" not in page
    assert "&lt;rack&amp;dev&gt;" in page  # escaped inside the rack SVG
    assert [u for u in _refs(page).urls if u[2] == "x"] == []
    for s in _svgs(page):
        ET.fromstring(s)


def test_infeasible_page_says_which_constraint_binds_and_by_how_much() -> None:
    page = _page("infeasible")
    verdict = page.index("Not feasible")
    assert verdict < page.index(">2. Why")  # at the top, in section 1
    # limit 20 kW, needed 40.8 kW, excess_fraction 1.04 -> +104 %
    for s in ("power_per_rack_kw", "40.8 kW", "20 kW", "+104 %", 'role="alert"'):
        assert s in page, s
    for h in HEADINGS:
        assert f">{h}" in page, h
    # sections 2-12 have no data; each says so instead of failing
    # with the headline's cost and performance, and the storage tier and energy subsections
    assert page.count("Not applicable:") == 15


def test_binding_excess_is_derived_for_display_when_absent() -> None:
    bp = blueprints.infeasible()
    del bp["binding_constraints"][0]["excess_fraction"]
    # 40.8 / 20 - 1 = 1.04 -> +104 %
    assert "+104 %" in render_html(bp)


def test_inference_only_page() -> None:
    page = _page("inference")
    assert "Not applicable: no training workload" in page
    assert "Not applicable: no racks in this blueprint" in page
    assert "Not applicable: no on-prem fabric" in page
    assert 'id="fig-latency-0"' in page and 'id="fig-step-time"' not in page
    # SLO 0.5 s -> "SLO 500 ms" on the TTFT plot; peak 20 QPS marked
    assert "SLO 500 ms" in page and "peak 20 QPS" in page
    assert _svgs(page) == []


@pytest.mark.parametrize("junk", [None, "x", [], 3])
def test_missing_or_mistyped_keys_degrade_to_not_applicable(junk: Any) -> None:
    bp: dict[str, Any] = dict.fromkeys(blueprints.full(), junk)
    page = render_html(bp)
    for h in HEADINGS:
        assert f">{h}" in page, h
    assert page.count("Not applicable:") >= 9


def test_mistyped_nested_values_do_not_fail() -> None:
    bp = blueprints.full()
    w = bp["workloads"][0]
    w["breakdown"] = {"compute_s": "fast", "tp_comm_s": None, "x": [1]}
    w["layout"] = "tp8"
    bp["workloads"][1]["curve"] = [{"qps": "a"}, 5, {"qps": 3, "ttft_p99_s": "b"}]
    bp["racks"][0]["devices"] = [{"u": "low"}, {"u": 99, "height_u": 4}, None]
    bp["reliability"]["timeline"] = [{"t_h": None}, {"t_h": 1.0, "event": None}]
    bp["tco"]["cost_over_time"] = "monthly"
    bp["fabric"]["leaf_switches"] = "many"
    page = render_html(bp)
    assert ">6. Training step-time breakdown</h2>" in page
    for s in _svgs(page):
        ET.fromstring(s)


def test_render_report_writes_the_page_atomically(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    render_report(blueprints.infeasible(), out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_feasible_blueprint_with_binding_constraints_is_not_an_alert() -> None:
    bp = blueprints.full()
    bp["binding_constraints"] = [{"constraint": "budget_usd", "workload": None, "limit": 8e7,
                                  "needed": 7.9e7, "unit": "USD", "excess_fraction": -0.0125,
                                  "message": "The budget is nearly spent."}]
    page = render_html(bp)
    assert 'class="verdict warn"' in page and 'role="alert"' not in page
    assert "-1 %" in page  # 7.9e7 / 8e7 - 1 = -1.25 % -> "-1 %"


EXAMPLE_BLUEPRINTS = sorted((Path(__file__).resolve().parents[2] / "examples").glob(
    "*/blueprint.json"))


@pytest.mark.skipif(not EXAMPLE_BLUEPRINTS, reason="no generated example blueprints yet")
@pytest.mark.parametrize("path", EXAMPLE_BLUEPRINTS, ids=lambda p: p.parent.name)
def test_shipped_example_blueprints_render(path: Path) -> None:
    bp = json.loads(path.read_text(encoding="utf-8"))
    page = render_html(bp)
    for h in HEADINGS:
        assert f">{h}" in page, h
    assert [u for u in _refs(page).urls if not u[2].startswith("#") and u[0] != "a"] == []
    for s in _svgs(page):
        ET.fromstring(s)
    rec = bp.get("recommendation") or {}
    if rec.get("gpu"):
        assert str(rec["gpu"]) in page


def test_decisions_are_shown_with_the_alternatives_they_beat() -> None:
    bp = blueprints.full()
    bp["decisions"] = [
        {"area": "cluster_size", "subject": "pretrain", "choice": "1,024 h100-sxm",
         "why": "the fewest GPUs meeting deadline_days 30: 27.5 days",
         "alternatives": [{"option": "768 GPUs", "outcome": "36.1 days: misses the deadline "
                                                            "by 6.1 days"}]},
        {"area": "server", "subject": None, "choice": "dgx-h100", "why": "constraints.servers",
         "alternatives": []},
    ]
    page = render_html(bp)
    assert 'class="decisions"' in page
    for s in ("cluster size", "pretrain", "1,024 h100-sxm", "meeting deadline_days 30",
              "768 GPUs: 36.1 days: misses the deadline by 6.1 days", "constraints.servers"):
        assert s in page, s


def test_a_blueprint_without_decisions_has_no_decisions_table() -> None:
    bp = blueprints.full()
    bp.pop("decisions", None)
    assert 'class="decisions"' not in render_html(bp)


def test_a_pool_without_backend_says_so_in_the_topology_facts() -> None:
    root = Path(__file__).parents[2] / "examples" / "enterprise-inference-pool"
    bp = json.loads((root / "blueprint.json").read_text())
    assert bp["fabric"]["backend"] == "none"
    page = render_html(bp)
    assert "no backend fabric" in page and "none (growth: sn5600)" in page


def test_cost_section_lists_every_offer_and_the_estimated_prices() -> None:
    bp = blueprints.full()
    bp["tco"]["cloud"]["estimate"] = True
    bp["tco"]["cloud_term"] = "on_demand"
    bp["tco"]["pricing"] = {"why": "cheapest on demand $/GPU-hour of 5 catalog offers"}
    bp["tco"]["cloud_offers_over_time"] = [
        {"offer": "lambda-8x-h100-sxm", "term": "on_demand", "usd_per_gpu_hour": 2.99,
         "annual_usd": 1.34e6, "chosen": True, "estimate": True, "cumulative_usd": [0, 1.1e5]},
        {"offer": "aws-p5e.48xlarge", "term": "on_demand", "usd_per_gpu_hour": 5.41,
         "annual_usd": 2.4e6, "chosen": False, "estimate": False, "cumulative_usd": [0, 2e5]}]
    bp["tco"]["estimates"] = [{"input": "cloud:lambda-8x-h100-sxm", "value": 2.99,
                               "why": "costnimbus.com <i>weak</i>"}]
    page = render_html(bp)
    section = page.split('<section id="cost">', 1)[1].split("</section>", 1)[0]
    assert "Cloud offers renting this GPU" in section
    assert "aws-p5.48xlarge (estimate: no primary source)" in section
    assert "cheapest on demand $/GPU-hour of 5 catalog offers" in section
    assert "<td>aws-p5e.48xlarge</td>" in section and "<td>primary</td>" in section
    assert "Estimated prices and inputs (no primary source)" in section
    assert "costnimbus.com &lt;i&gt;weak&lt;/i&gt;" in section


def test_failure_model_storage_and_energy_are_on_the_page() -> None:
    page = _page("full")
    fail = page.split('<section id="failures">', 1)[1].split("</section>", 1)[0]
    # spares: 3 recommended, p50 37.27 -> "37.3 days", ETTR 0.968 -> "96.8 %";
    # the repair wait 131,065 s -> "36.4 h"; a rack loss takes 4 nodes for 3.5 h
    for s in ("recommended hot spares", "37.3 days", "96.8 %", "36.4 h", "3.5 h",
              "4.8 % of nodes fail 20× as often", "spare wait 699 h",
              "SKT/Upstage B200 report: 3 of 63 nodes"):
        assert s in fail, s
    # storage: 4 units, 43.6 GB/s read, a 0.988 TB async checkpoint persisted in 44.9 s;
    # the binding interval is shown with its numbers
    for s in ("4 × minio-nvme-node", "43.6 GB/s", "0.988 TB async", "44.9 s",
              "The storage tier binds", "120 s", "114 s", "$920,000 more"):
        assert s in fail, s
    power = page.split('<section id="power">', 1)[1].split("</section>", 1)[0]
    # energy: 1,232,293 kWh -> "1.23 GWh", 564.39 t -> "564 t", 0.52 kWh per M tokens
    for s in ("fig-power-trace", "631 kW", "1.23 GWh", "564 t", "9.85 t", "0.52 kWh",
              "458 gCO2e/kWh", "battery", "$45k", "Ember Global Electricity Review 2026"):
        assert s in power, s
    head = page.split('id="card-cost"', 1)[1].split("</div>", 1)[0]
    assert "CO2e of pretrain-70b" in head and "574 t" in head and "5,074 t" in head
