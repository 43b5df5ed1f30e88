"""Plotly figures of the report, each emitted as an HTML fragment (a div and the script that
draws it) without plotly.js, which the page embeds once.

Names that come from the user (workloads, causes) are HTML-escaped before they reach plotly:
plotly.js renders a subset of HTML in labels, and a name must show as the text it is.
Every function answers ``None`` when its data is absent so the section can say so.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]
from plotly.subplots import make_subplots  # type: ignore[import-untyped]

from clusterwright.report.fmt import fmt, get, num, records

CONFIG = {"displaylogo": False, "responsive": True}
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
          "#999999", "#000000")
EVENT_COLORS = {"failure": "#D55E00", "checkpoint": "#009E73", "restart": "#0072B2"}


def esc(s: Any) -> str:
    """A user-provided value as plotly label text (escaped, so ``<b>`` shows as ``<b>``).
    Quotes stay: outside a tag they are harmless, and plotly.js decodes only a few named
    entities (not ``&quot;``), so an escaped quote would show as ``&quot;``."""
    return html.escape(str(s), quote=False)


# A small template of our own: plotly's named templates are validated and deep-copied for every
# figure (0.3 s of a 0.5 s render) and add about 10 kB of JSON per figure.
_AXIS = {"gridcolor": "#e5e5e5", "linecolor": "#999", "zerolinecolor": "#ccc",
         "automargin": True}
TEMPLATE = {"layout": {
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
             "color": "#1d1d1f"},
    "paper_bgcolor": "white", "plot_bgcolor": "white", "colorway": list(COLORS),
    "xaxis": _AXIS, "yaxis": _AXIS, "hoverlabel": {"align": "left"},
}}


def _figure() -> Any:
    return go.Figure(layout={"template": TEMPLATE})


def _layout(fig: Any, height: int, **kw: Any) -> None:
    # The legend sits above the plot, left-aligned: plotly grows the top margin to hold it,
    # and it stays clear of the x-axis title below (a legend under the plot covered it).
    kw.setdefault("margin", {"l": 60, "r": 20, "t": 30, "b": 50})
    fig.update_layout(height=height,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02,
                              "xanchor": "left", "x": 0}, **kw)


def emit(fig: Any, div_id: str, height: int) -> str:
    """The figure as a div plus its drawing script; a fixed id keeps the page reproducible."""
    out: str = fig.to_html(include_plotlyjs=False, full_html=False, div_id=div_id,
                           config=CONFIG, default_height=f"{height}px", default_width="100%")
    return out


def _label(key: str) -> str:
    return key.removesuffix("_s").replace("_", " ")


def step_time(training: Sequence[Mapping[str, Any]]) -> str | None:
    """Stacked horizontal bar of the step-time breakdown (s) per training workload."""
    rows = [(w, b) for w in training if isinstance(b := w.get("breakdown"), Mapping)]
    if not rows:
        return None
    keys: list[str] = []
    for _, b in rows:
        for k, v in b.items():
            if k not in keys and num(v) is not None:
                keys.append(k)
    names = [esc(w.get("name") or f"training {i + 1}") for i, (w, _) in enumerate(rows)]
    fig = _figure()
    for i, k in enumerate(keys):
        xs = [num(b.get(k)) or 0.0 for _, b in rows]
        fig.add_trace(go.Bar(y=names, x=xs, name=esc(_label(k)), orientation="h",
                             marker_color=COLORS[i % len(COLORS)],
                             hovertemplate="%{y}: %{x:.4g} s<extra>" + esc(_label(k))
                             + "</extra>"))
    height = 160 + 50 * len(rows)
    _layout(fig, height, barmode="stack", xaxis_title="seconds per step")
    return emit(fig, "fig-step-time", height)


def latency(w: Mapping[str, Any], index: int) -> str | None:
    """TTFT p99 and TPOT p99 (ms) against offered QPS with the SLO lines and the peak QPS."""
    curve = [p for p in records(w.get("curve")) if num(p.get("qps")) is not None]
    if not curve:
        return None
    curve.sort(key=lambda p: float(p["qps"]))
    qps = [float(p["qps"]) for p in curve]
    ok = [p.get("meets_slo") is not False for p in curve]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, figure=_figure(),
                        subplot_titles=("TTFT p99 (ms)", "TPOT p99 (ms)"))
    for col, key in ((1, "ttft_p99_s"), (2, "tpot_p99_s")):
        ys = [None if num(p.get(key)) is None else float(p[key]) * 1e3 for p in curve]
        fig.add_trace(go.Scatter(
            x=qps, y=ys, mode="lines+markers", name=_label(key).replace(" p99", " p99"),
            line={"color": COLORS[col - 1]},
            marker={"symbol": ["circle" if o else "x" for o in ok], "size": 8},
            hovertemplate="QPS %{x:.4g}: %{y:.4g} ms<extra></extra>"), row=1, col=col)
        slo = num(get(w, "slo", key))
        if slo is not None:
            fig.add_hline(y=slo * 1e3, line_dash="dash", line_color="#b00020", row=1, col=col,
                          annotation_text=f"SLO {fmt(slo * 1e3)} ms",
                          annotation_position="top left")
        peak = num(w.get("peak_qps"))
        if peak is not None:
            fig.add_vline(x=peak, line_dash="dot", line_color="#555", row=1, col=col,
                          annotation_text=f"peak {fmt(peak)} QPS",
                          annotation_position="bottom right")
        fig.update_xaxes(title_text="requests/s", row=1, col=col)
    _layout(fig, 360, showlegend=False)
    return emit(fig, f"fig-latency-{index}", 360)


def diurnal(w: Mapping[str, Any], index: int) -> str | None:
    """GPUs the workload needs each hour of the day (bar), when the blueprint gives 24 values."""
    hours = w.get("diurnal_gpus")
    if not isinstance(hours, Sequence) or isinstance(hours, str) or not hours:
        return None
    ys = [num(h) or 0.0 for h in hours]
    fig = _figure()
    fig.add_trace(go.Bar(x=list(range(len(ys))), y=ys, marker_color=COLORS[2],
                         hovertemplate="hour %{x}: %{y:.4g} GPUs<extra></extra>"))
    _layout(fig, 240, xaxis_title="hour of day", yaxis_title="GPUs needed")
    return emit(fig, f"fig-diurnal-{index}", 240)


def _offer_traces(fig: Any, offers: list[Mapping[str, Any]], months: list[float]) -> None:
    """One line per cloud offer and term: the chosen one bold, the others thin (dotted on
    demand, dashed committed) so the comparison stays readable."""
    others = 0
    for s in offers:
        vals = s.get("cumulative_usd")
        ys = [num(v) for v in vals][: len(months)] if isinstance(vals, list) else []
        if not ys:
            continue
        term = str(s.get("term") or "")
        name = (f"{esc(s.get('offer'))} {'on demand' if term == 'on_demand' else esc(term)}"
                f" (${fmt(s.get('usd_per_gpu_hour'))}/GPU-h"
                + (", estimate" if s.get("estimate") else "") + ")")
        if s.get("chosen"):
            line = {"color": COLORS[1], "width": 3}
            name = "cloud, chosen: " + name
        else:
            line = {"color": COLORS[2 + others % (len(COLORS) - 3)], "width": 1.2,
                    "dash": "dot" if term == "on_demand" else "dash"}
            others += 1
        fig.add_trace(go.Scatter(x=months[: len(ys)], y=ys, mode="lines", name=name, line=line,
                                 opacity=1.0 if s.get("chosen") else 0.75,
                                 hovertemplate="month %{x}: $%{y:,.0f}<extra>" + name
                                 + "</extra>"))


def cost_over_time(tco: Mapping[str, Any], breakeven_months: float | None) -> str | None:
    """Cumulative cost (USD) by month: on-prem against every cloud offer renting the GPU (on
    demand and committed, the pricing policy's choice in bold), with the breakeven month
    marked. A blueprint without per-offer series draws its one offer on demand and committed."""
    pts = [p for p in records(tco.get("cost_over_time")) if num(p.get("month")) is not None]
    if not pts:
        return None
    months = [float(p["month"]) for p in pts]
    fig = _figure()
    offers = records(tco.get("cloud_offers_over_time"))
    series = [("on_prem_cumulative_usd", "on-prem (capex + opex)", COLORS[0], "solid")]
    if not offers:
        series += [("cloud_on_demand_cumulative_usd", "cloud on-demand", COLORS[1], "solid"),
                   ("cloud_committed_cumulative_usd", "cloud committed", COLORS[3], "dash")]
    for key, name, color, dash in series:
        ys = [num(p.get(key)) for p in pts]
        if all(v is None for v in ys):
            continue
        fig.add_trace(go.Scatter(x=months, y=ys, mode="lines", name=name,
                                 line={"color": color, "dash": dash,
                                       "width": 3 if offers else 2},
                                 hovertemplate="month %{x}: $%{y:,.0f}<extra>" + name
                                 + "</extra>"))
    _offer_traces(fig, offers, months)
    # Breakeven past the horizon is said in the section's facts, not in a title that would
    # compete with the legend above the plot.
    if breakeven_months is not None and breakeven_months <= max(months):
        fig.add_vline(x=breakeven_months, line_dash="dot", line_color="#b00020",
                      annotation_text=f"breakeven {breakeven_months:.1f} months",
                      annotation_position="top left")
    height = 400 + 22 * (len(offers) // 2)  # room for the legend above the plot
    _layout(fig, height, xaxis_title="months", yaxis_title="cumulative cost (USD)",
            yaxis_tickprefix="$")
    return emit(fig, "fig-cost", height)


def timeline(events: Sequence[Mapping[str, Any]]) -> str | None:
    """Failures, checkpoints and restarts of one seeded sample run against time (hours)."""
    pts = [e for e in events if num(e.get("t_h")) is not None]
    if not pts:
        return None
    kinds: list[str] = []
    for e in pts:
        k = str(e.get("event") or "event")
        if k not in kinds:
            kinds.append(k)
    fig = _figure()
    for i, k in enumerate(kinds):
        sel = [e for e in pts if str(e.get("event") or "event") == k]
        fig.add_trace(go.Scatter(
            x=[float(e["t_h"]) for e in sel], y=[esc(k)] * len(sel), mode="markers",
            name=esc(k), marker={"color": EVENT_COLORS.get(k, COLORS[i % len(COLORS)]),
                                 "size": 11 if k == "failure" else 6,
                                 "symbol": "x" if k == "failure" else "line-ns-open"},
            text=[esc(e.get("cause") or "") for e in sel],
            hovertemplate="%{x:.2f} h %{text}<extra>" + esc(k) + "</extra>"))
    _layout(fig, 260, xaxis_title="hours since start", showlegend=False)
    return emit(fig, "fig-timeline", 260)


def time_to_train(training: Sequence[Mapping[str, Any]]) -> str | None:
    """Time to train (days) per training workload: the p10-p90 range of the failure Monte
    Carlo around its p50, the failure-free estimate and the deadline."""
    rows = [w for w in training if num(w.get("time_to_train_days_p50")) is not None]
    if not rows:
        return None
    names = [esc(w.get("name") or f"training {i + 1}") for i, w in enumerate(rows)]
    p50 = [float(w["time_to_train_days_p50"]) for w in rows]
    lo = [p - (num(w.get("time_to_train_days_p10")) or p) for w, p in zip(rows, p50, strict=True)]
    hi = [(num(w.get("time_to_train_days_p90")) or p) - p for w, p in zip(rows, p50, strict=True)]
    fig = _figure()
    fig.add_trace(go.Scatter(
        x=p50, y=names, mode="markers", name="with failures: p50 (bar p10–p90)",
        marker={"color": COLORS[0], "size": 11},
        error_x={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo,
                 "thickness": 3, "width": 8},
        hovertemplate="%{y}: p50 %{x:.3g} days<extra></extra>"))
    # Failure-free: the steps alone (compute_days; older blueprints had only
    # time_to_train_days, which then meant the same).
    ideal = [num(w.get("compute_days", w.get("time_to_train_days"))) for w in rows]
    if any(v is not None for v in ideal):
        fig.add_trace(go.Scatter(x=ideal, y=names, mode="markers", name="failure-free estimate",
                                 marker={"color": COLORS[2], "symbol": "diamond", "size": 9}))
    prod = [num(w.get("time_to_train_days")) if "compute_days" in w else None for w in rows]
    if any(v is not None for v in prod):
        fig.add_trace(go.Scatter(x=prod, y=names, mode="markers",
                                 name="production estimate (evaluation, expected failures)",
                                 marker={"color": COLORS[1], "symbol": "square", "size": 9}))
    dl = [num(w.get("deadline_days")) for w in rows]
    if any(v is not None for v in dl):
        fig.add_trace(go.Scatter(x=dl, y=names, mode="markers", name="deadline",
                                 marker={"color": "#b00020", "symbol": "line-ns-open",
                                         "size": 22, "line": {"width": 3}}))
    height = 170 + 50 * len(rows)
    _layout(fig, height, xaxis_title="days")
    return emit(fig, "fig-ttt", height)


def rack_power(racks: Sequence[Mapping[str, Any]], limit_kw: float | None) -> str | None:
    """Per-rack kW (typical and nameplate bars) against the per-rack limit line."""
    rows = [r for r in racks if num(r.get("kw_nameplate")) is not None
            or num(r.get("kw_typical")) is not None]
    if not rows:
        return None
    names = [esc(r.get("name") or f"rack {i + 1}") for i, r in enumerate(rows)]
    name_p = [num(r.get("kw_nameplate")) for r in rows]
    over = [limit_kw is not None and v is not None and v > limit_kw for v in name_p]
    fig = _figure()
    fig.add_trace(go.Bar(x=names, y=name_p, name="nameplate kW",
                         marker_color=["#D55E00" if o else "#E69F00" for o in over],
                         hovertemplate="%{x}: %{y:.3g} kW nameplate<extra></extra>"))
    fig.add_trace(go.Bar(x=names, y=[num(r.get("kw_typical")) for r in rows], name="typical kW",
                         marker_color=COLORS[0],
                         hovertemplate="%{x}: %{y:.3g} kW typical<extra></extra>"))
    if limit_kw is not None:
        fig.add_hline(y=limit_kw, line_dash="dash", line_color="#b00020",
                      annotation_text=f"limit {fmt(limit_kw)} kW",
                      annotation_position="top left")
    # Rack names read vertically under their bars, the bottom margin sized to the longest
    # (plotly's automargin alone let "r001-01" clip); past 60 racks the names are in the
    # hover and the table, not under bars too narrow to hold them.
    shown = len(rows) <= 60
    longest = max(len(str(n)) for n in names)
    height = 340 + (7 * longest if shown else 0)
    _layout(fig, height, barmode="overlay", yaxis_title="kW per rack", bargap=0.1,
            xaxis={"type": "category", "showticklabels": shown, "tickangle": -90,
                   "automargin": True, "title": {"text": "rack" if shown else
                                                 f"{len(rows)} racks (names in the table)"}},
            margin={"l": 60, "r": 20, "t": 30, "b": 40 + (7 * longest if shown else 0)})
    return emit(fig, "fig-rack-power", height)


def power_trace(trace: Mapping[str, Any]) -> str | None:
    """The IT power of a synchronous training job against time (MW, a step trace): a few
    steps (computing high, communicating low) and one failure's restart dip, with the
    average and any grid ramp limit as lines."""
    t, mw = trace.get("t_s"), trace.get("mw")
    if not isinstance(t, Sequence) or not isinstance(mw, Sequence) or isinstance(t, str) \
            or isinstance(mw, str):
        return None
    pts = [(num(a), num(b)) for a, b in zip(t, mw, strict=False)]
    xs = [a for a, b in pts if a is not None and b is not None]
    ys = [b for a, b in pts if a is not None and b is not None]
    if len(xs) < 2:
        return None
    fig = _figure()
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"shape": "hv", "color": COLORS[0]},
                             name="IT power", hovertemplate="%{x:.3g} s: %{y:.3g} MW"
                             "<extra></extra>"))
    avg = num(trace.get("average_mw"))
    if avg is not None:
        fig.add_hline(y=avg, line_dash="dot", line_color=COLORS[2],
                      annotation_text=f"average {fmt(avg)} MW", annotation_position="top left")
    _layout(fig, 300, xaxis_title="seconds", yaxis_title="MW (IT, before PUE)",
            showlegend=False)
    return emit(fig, "fig-power-trace", 300)
