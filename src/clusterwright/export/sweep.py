"""Write a sweep's results: results.csv, results.json and sweep.html (offline plots).

The page embeds plotly.js once, from the installed plotly package, so it opens with no
network. It only reads the rows; nothing is recomputed here.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clusterwright import __version__
from clusterwright.export.fabric import atomic_dir, check_out_dir
from clusterwright.jsonsafe import jsonable
from clusterwright.plan.sweep import Row, SweepResult, best_rows, pareto

SCHEMA_VERSION = "1.0"
# Metrics worth a chart against each variable: (key, axis title).
PLOTTED = (
    ("total_cost_usd", "total cost (USD)"),
    ("time_to_train_days", "time to train (days)"),
    ("ttft_p99_s", "TTFT p99, worst workload (s)"),
    ("tpot_p99_s", "TPOT p99, worst workload (s)"),
    ("facility_power_kw", "facility power (kW)"),
)
PARETO = (("total_cost_usd", "time_to_train_days"), ("total_cost_usd", "ttft_p99_s"))
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
          "#999999", "#000000")
CONFIG = {"displaylogo": False, "responsive": True}
MAX_GROUPS = 9  # more distinct colour values than this: one trace, colour by point order


def display(value: Any) -> str:
    """A variable value as a table cell: a list of ids joined by '+', a number as written."""
    if isinstance(value, list):
        return "+".join(display(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def metric_keys(rows: Sequence[Row]) -> list[str]:
    """Every metric key in the rows, in the order the first rows give them."""
    keys: list[str] = []
    for r in rows:
        for k in r.metrics or {}:
            if k not in keys:
                keys.append(k)
    return keys


def _cell(v: Any) -> str:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return ""
    return display(v)


def results_csv(result: SweepResult) -> str:
    """One row per point: index, each variable, each metric, then the error (empty if none)."""
    paths = [v.path for v in result.sweep.variables]
    keys = metric_keys(result.rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["point", *paths, *keys, "error"])
    for r in result.rows:
        m = r.metrics or {}
        w.writerow([r.index, *(display(r.values[p]) for p in paths),
                    *(_cell(m.get(k)) for k in keys), r.error or ""])
    return buf.getvalue()




def counts(result: SweepResult) -> dict[str, int]:
    rows = result.rows
    errors = sum(r.error is not None for r in rows)
    feasible = sum(r.feasible for r in rows)
    return {"points": len(rows), "feasible": feasible, "infeasible": len(rows) - feasible - errors,
            "errors": errors}


def results_json(result: SweepResult) -> dict[str, Any]:
    """The whole sweep as one JSON object: what was swept, every row, the best and Pareto
    points. How it ran (backend, workers, seconds) is under ``run``: the rows do not depend
    on it."""
    s = result.sweep
    variables = [
        {"path": v.path, "values": list(v.values) if v.values is not None else None,
         "min": v.spec.min, "max": v.spec.max, "steps": v.spec.steps, "log": v.spec.log,
         "integer": v.integer}
        for v in s.variables
    ]
    fronts = {f"{x}__{y}": [r.index for r in pareto(result.rows, x, y)] for x, y in PARETO}
    out: dict[str, Any] = jsonable({
        "schema_version": SCHEMA_VERSION,
        "clusterwright_version": __version__,
        "name": s.name,
        "description": s.description,
        "source": s.source,
        "scenario": {"name": s.base.name, "source": s.scenario_source, "seed": s.base.seed},
        "mode": s.mode,
        "seed": s.seed,
        "samples": s.samples,
        "quick": s.quick,
        "variables": variables,
        **counts(result),
        "best_by_cost": [r.index for r in best_rows(result.rows, n=10)],
        "pareto": {k: v for k, v in fronts.items() if v},
        "rows": [r.as_dict() for r in result.rows],
        "run": {"backend": result.backend, "workers": result.workers,
                "elapsed_s": round(result.elapsed_s, 3)},
    })
    return out


# ------------------------------------------------------------------ the page


def _esc(text: str) -> str:
    """Escape a user string for a plotly label. Plotly renders a subset of HTML in labels
    (so ``<`` and ``&`` must go) but shows entities literally: quotes stay as they are."""
    return html.escape(text, quote=False)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _hover(r: Row) -> str:
    parts = [f"point {r.index}"] + [f"{_esc(p)} = {_esc(display(v))}"
                                    for p, v in r.values.items()]
    m = r.metrics or {}
    if m.get("gpu") is not None:
        parts.append(f"{_esc(str(m.get('gpus')))} x {_esc(str(m.get('gpu')))}")
    if not r.feasible:
        parts.append(f"infeasible: {_esc(str(m.get('binding_constraint') or '?'))}")
    return "<br>".join(parts)


def _xs(rows: Sequence[Row], path: str) -> tuple[list[Any], bool]:
    vals = [r.values[path] for r in rows]
    numeric = all(_num(v) is not None for v in vals)
    return ([float(v) for v in vals] if numeric else [display(v) for v in vals]), numeric


def _emit(fig: Any, div_id: str, height: int) -> str:
    out: str = fig.to_html(include_plotlyjs=False, full_html=False, div_id=div_id,
                           config=CONFIG, default_height=f"{height}px", default_width="100%")
    return out


DECADES_FOR_LOG = 1.0  # a positive metric spanning more than 10x is drawn on a log axis


def spans_decades(values: Sequence[Any]) -> bool:
    """True when every value is positive and the largest is more than 10x the smallest: one
    $2B point would flatten the rest on a linear axis."""
    xs = [v for v in (_num(x) for x in values) if v is not None]
    return bool(xs) and min(xs) > 0 and max(xs) / min(xs) > 10 ** DECADES_FOR_LOG


def _layout(fig: Any, title: str, xtitle: str, ytitle: str, log_x: bool,
            log_y: bool = False) -> None:
    # The legend sits above the plot (plotly grows the top margin for it), clear of the
    # x-axis title below.
    fig.update_layout(template="plotly_white", height=380,
                      title={"text": title, "y": 0.98, "yanchor": "top"},
                      margin={"l": 70, "r": 20, "t": 80, "b": 60},
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0,
                              "xanchor": "left", "x": 0},
                      xaxis={"title": xtitle, "type": "log" if log_x else None,
                             "automargin": True},
                      yaxis={"title": ytitle, "type": "log" if log_y else None,
                             "automargin": True})


def metric_figure(result: SweepResult, key: str, title: str, path: str, colour: str | None,
                  div_id: str) -> str | None:
    """``key`` against variable ``path``, one colour per value of ``colour``; infeasible
    points as grey crosses. None when no row has the metric."""
    import plotly.graph_objects as go  # type: ignore[import-untyped]

    rows = [r for r in result.rows if r.error is None and _num((r.metrics or {}).get(key))
            is not None]
    if not rows:
        return None
    var = next(v for v in result.sweep.variables if v.path == path)
    _, numeric = _xs(result.rows, path)
    fig = go.Figure()
    ok = [r for r in rows if r.feasible]
    groups = sorted({display(r.values[colour]) for r in ok}, key=_sort_key) if colour else []
    if colour and len(groups) <= MAX_GROUPS:
        for i, g in enumerate(groups):
            sel = [r for r in ok if display(r.values[colour]) == g]
            xs, _ = _xs(sel, path)
            fig.add_trace(go.Scatter(
                x=xs, y=[(r.metrics or {})[key] for r in sel], mode="markers",
                name=f"{_esc(colour)} = {_esc(g)}", text=[_hover(r) for r in sel],
                hovertemplate="%{text}<br>%{y:.4g}<extra></extra>",
                marker={"color": COLORS[i % len(COLORS)], "size": 9}))
    elif ok:
        xs, _ = _xs(ok, path)
        fig.add_trace(go.Scatter(
            x=xs, y=[(r.metrics or {})[key] for r in ok], mode="markers", name="feasible",
            text=[_hover(r) for r in ok], hovertemplate="%{text}<br>%{y:.4g}<extra></extra>",
            marker={"color": COLORS[0], "size": 8}))
    bad = [r for r in rows if not r.feasible]
    if bad:
        xs, _ = _xs(bad, path)
        fig.add_trace(go.Scatter(
            x=xs, y=[(r.metrics or {})[key] for r in bad], mode="markers", name="infeasible",
            text=[_hover(r) for r in bad], hovertemplate="%{text}<br>%{y:.4g}<extra></extra>",
            marker={"color": "#999999", "symbol": "x", "size": 8}))
    _layout(fig, f"{title} vs {_esc(path)}", _esc(path), title,
            bool(numeric and var.spec.log),
            log_y=spans_decades([(r.metrics or {}).get(key) for r in rows]))
    if not numeric:
        fig.update_xaxes(type="category")
    return _emit(fig, div_id, 380)


def pareto_figure(result: SweepResult, x: str, y: str, div_id: str) -> str | None:
    """Every feasible point in (x, y), the Pareto front (both minimized) joined by a line."""
    import plotly.graph_objects as go

    ok = [r for r in result.rows if r.feasible and _num((r.metrics or {}).get(x)) is not None
          and _num((r.metrics or {}).get(y)) is not None]
    if not ok:
        return None
    front = pareto(result.rows, x, y)
    titles = dict(PLOTTED)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[(r.metrics or {})[x] for r in ok], y=[(r.metrics or {})[y] for r in ok],
        mode="markers", name="feasible points", text=[_hover(r) for r in ok],
        hovertemplate="%{text}<extra></extra>", marker={"color": "#999999", "size": 8}))
    fig.add_trace(go.Scatter(
        x=[(r.metrics or {})[x] for r in front], y=[(r.metrics or {})[y] for r in front],
        mode="lines+markers", name="Pareto front", text=[_hover(r) for r in front],
        hovertemplate="%{text}<extra></extra>",
        marker={"color": COLORS[5], "size": 11}, line={"color": COLORS[5]}))
    _layout(fig, f"Pareto: {titles.get(x, x)} vs {titles.get(y, y)}", titles.get(x, x),
            titles.get(y, y), spans_decades([(r.metrics or {})[x] for r in ok]),
            log_y=spans_decades([(r.metrics or {})[y] for r in ok]))
    return _emit(fig, div_id, 380)


def _sort_key(s: str) -> tuple[int, float, str]:
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


def _fmt(v: Any) -> str:
    f = _num(v)
    if f is None:
        return html.escape(display(v))
    if abs(f) >= 1e5:
        return f"{f:,.0f}"
    return f"{f:.4g}"


def _table(result: SweepResult, rows: Sequence[Row]) -> str:
    paths = [v.path for v in result.sweep.variables]
    keys = [k for k in ("gpu", "gpus", "total_cost_usd", "time_to_train_days", "ttft_p99_s",
                        "tpot_p99_s", "facility_power_kw") if any(
        (r.metrics or {}).get(k) is not None for r in rows)]
    # The last part of a path keeps the table narrow; the whole path is the tooltip.
    head = "".join(f"<th title='{html.escape(c)}'>{html.escape(c.rsplit('.', 1)[-1])}</th>"
                   for c in ["point", *paths, *keys])
    body = "".join(
        "<tr>" + f"<td>{r.index}</td>"
        + "".join(f"<td>{html.escape(display(r.values[p]))}</td>" for p in paths)
        + "".join(f"<td>{_fmt((r.metrics or {}).get(k))}</td>" for k in keys) + "</tr>"
        for r in rows
    )
    return (f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div>")


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #ddd;padding:3px 8px;
text-align:right;white-space:nowrap}th{background:#f4f4f4}.muted{color:#666}
.wide{overflow-x:auto}
"""


def sweep_html(result: SweepResult) -> str:
    """The self-contained page: counts, the cheapest feasible points, each plotted metric
    against each variable (coloured by another variable) and the Pareto views."""
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

    s = result.sweep
    c = counts(result)
    paths = [v.path for v in s.variables]
    # A variable with one value is an override of the base scenario: nothing to plot.
    varied = [p for p in paths if len({display(r.values[p]) for r in result.rows}) > 1]
    figs: list[str] = []
    for k, (key, title) in enumerate(PLOTTED):
        for i, path in enumerate(varied):
            colour = next((p for p in varied if p != path), None)
            fig = metric_figure(result, key, title, path, colour, f"fig-{k}-{i}")
            if fig is not None:
                figs.append(fig)
    paretos = [f for j, (x, y) in enumerate(PARETO)
               if (f := pareto_figure(result, x, y, f"fig-pareto-{j}")) is not None]
    best = best_rows(result.rows, n=10)
    errors = [r for r in result.rows if r.error is not None][:20]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Sweep {html.escape(s.name)}</title><style>{_STYLE}</style>",
        f"<script>{get_plotlyjs()}</script></head><body>",
        f"<h1>Sweep: {html.escape(s.name)}</h1>",
        f"<p>{html.escape(s.description)}</p>" if s.description else "",
        f"<p>Base scenario <b>{html.escape(s.base.name)}</b> (seed {s.base.seed}); "
        f"{html.escape(s.mode)} over {html.escape(', '.join(paths))}. "
        f"{c['points']} points: {c['feasible']} feasible, {c['infeasible']} infeasible, "
        f"{c['errors']} errors.</p>",
        "<h2>Cheapest feasible points</h2>",
        _table(result, best) if best else "<p class='muted'>No feasible point.</p>",
    ]
    if paretos:
        parts += ["<h2>Trade-offs</h2>", *paretos]
    if figs:
        parts += ["<h2>Metrics against each variable</h2>", *figs]
    if errors:
        parts += ["<h2>Points that failed</h2><ul>"]
        parts += [f"<li>point {r.index}: {html.escape(r.error or '')}</li>" for r in errors]
        parts += ["</ul>"]
    parts.append(f"<p class='muted'>clusterwright {html.escape(__version__)}</p></body></html>")
    return "\n".join(parts)


# ------------------------------------------------------------------ writing


def write_sweep(result: SweepResult, out: Path, force: bool = False) -> list[str]:
    """Write results.csv, results.json and sweep.html into ``out`` (built in a temporary
    sibling, then moved into place); returns the file names."""
    out = Path(out)
    check_out_dir(out, force)
    files = {
        "results.csv": results_csv(result),
        "results.json": json.dumps(results_json(result), indent=2) + "\n",
        "sweep.html": sweep_html(result),
    }
    with atomic_dir(out) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8", newline="\n")
    return list(files)
