"""The summary metrics of runs (``Blueprint.metrics()`` as stored) as table rows and charts.

Values are shown as stored (SI or the unit in the key); only the display converts: dollars
to $M, seconds to ms for latency. A missing value shows as a dash, never as zero.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clusterwright.store import RunRow

DASH = "-"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _fmt(scale: float, spec: str) -> Callable[[Any], str]:
    def f(v: Any) -> str:
        x = _num(v)
        return DASH if x is None else format(x * scale, spec)
    return f


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return DASH if v is None else str(v)


@dataclass(frozen=True)
class Metric:
    """One row of the table: the metrics key, its label with unit, how to show it, and the
    factor from the stored unit to the charted one (None: not charted)."""

    key: str
    label: str
    show: Callable[[Any], str]
    chart_scale: float | None = None


METRICS: tuple[Metric, ...] = (
    Metric("feasible", "meets every constraint", _text),
    Metric("gpu", "GPU", _text),
    Metric("server", "server", _text),
    Metric("deployment", "deployment", _text),
    Metric("gpus", "GPUs", _fmt(1, ",.0f"), 1.0),
    Metric("nodes", "servers", _fmt(1, ",.0f")),
    Metric("total_cost_usd", "total cost ($M)", _fmt(1e-6, ",.2f"), 1e-6),
    Metric("capex_usd", "capex ($M)", _fmt(1e-6, ",.2f")),
    Metric("annual_opex_usd", "opex per year ($M)", _fmt(1e-6, ",.2f")),
    Metric("cloud_annual_cost_usd", "cloud on demand per year ($M)", _fmt(1e-6, ",.2f")),
    Metric("breakeven_months", "breakeven vs cloud (months)", _fmt(1, ",.0f")),
    Metric("time_to_train_days", "time to train (days)", _fmt(1, ",.1f"), 1.0),
    Metric("ttft_p99_s", "p99 TTFT (ms)", _fmt(1e3, ",.0f"), 1e3),
    Metric("tpot_p99_s", "p99 TPOT (ms)", _fmt(1e3, ",.1f"), 1e3),
    Metric("it_power_kw", "IT power, typical (kW)", _fmt(1, ",.0f"), 1.0),
    Metric("facility_power_kw", "facility power, typical (kW)", _fmt(1, ",.0f")),
    Metric("leaf_switches", "leaf switches", _fmt(1, ",.0f"), 1.0),
    Metric("spine_switches", "spine switches", _fmt(1, ",.0f"), 1.0),
    Metric("core_switches", "core switches", _fmt(1, ",.0f"), 1.0),
    Metric("ettr", "effective training time ratio (%)", _fmt(100, ".1f")),
    Metric("binding_constraint", "binding constraint", _text),
)
SWITCH_KEYS = ("leaf_switches", "spine_switches", "core_switches")
CHARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("total cost ($M)", ("total_cost_usd",)),
    ("time to train (days)", ("time_to_train_days",)),
    ("p99 TTFT (ms)", ("ttft_p99_s",)),
    ("p99 TPOT (ms)", ("tpot_p99_s",)),
    ("IT power, typical (kW)", ("it_power_kw",)),
    ("switches", SWITCH_KEYS),
    ("GPUs", ("gpus",)),
)
_BY_KEY = {m.key: m for m in METRICS}


def chart_text(s: str) -> str:
    """User text as a plotly label. plotly.js renders a subset of HTML in titles, ticks,
    legends and hover text (``<a href>`` becomes a link), so ``<``, ``>`` and ``&`` are
    escaped; quotes are not, since plotly would show ``&quot;`` as it is. The same rule as
    ``report.figures.esc``, which this module does not import: that pulls in plotly."""
    return html.escape(s, quote=False)


def run_label(run: RunRow) -> str:
    """How a run is named in tables and legends: ``#id name rN``."""
    rev = getattr(run, "scenario_revision", 0)
    return f"#{run.id} {run.scenario_name}" + (f" r{rev}" if rev else "")


def metric_rows(runs: Sequence[RunRow]) -> list[dict[str, Any]]:
    """One row per metric: its label and the shown value of each run (in order)."""
    return [{"key": m.key, "label": m.label,
             "values": [m.show((r.metrics or {}).get(m.key)) for r in runs]}
            for m in METRICS]


def figures(runs: Sequence[RunRow]) -> list[dict[str, Any]]:
    """Plotly bar charts (``{"title", "data", "layout"}``) of the charted metrics; a chart
    whose metric no run has is left out (e.g. TTFT for training-only scenarios)."""
    labels = [chart_text(run_label(r)) for r in runs]  # scenario names are user text
    out: list[dict[str, Any]] = []
    for title, keys in CHARTS:
        traces = []
        for key in keys:
            scale = _BY_KEY[key].chart_scale or 1.0
            ys = [_num((r.metrics or {}).get(key)) for r in runs]
            if all(y is None for y in ys):
                continue
            traces.append({"type": "bar", "orientation": "h", "name": _BY_KEY[key].label,
                           "y": labels, "x": [None if y is None else y * scale for y in ys]})
        if not traces:
            continue
        # Horizontal bars: each run's whole name reads on the left (the margin grows to
        # hold it), never cut under a bar.
        out.append({"title": title, "data": traces, "layout": {
            "title": {"text": title}, "barmode": "stack" if len(keys) > 1 else "group",
            "height": 140 + 36 * len(runs) + (30 if len(traces) > 1 else 0),
            "margin": {"l": 20, "r": 20, "t": 50, "b": 40},
            "legend": {"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
            "showlegend": len(traces) > 1,
            "xaxis": {"rangemode": "tozero", "automargin": True},
            "yaxis": {"automargin": True, "autorange": "reversed"}}})
    return out
