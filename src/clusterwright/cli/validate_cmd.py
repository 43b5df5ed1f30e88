"""``clusterwright validate``: predict published measurements and print the error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.table import Table

from clusterwright.cli.common import console, emit_json, fail, progress_bar, user_errors
from clusterwright.cli.serve_engine_cmd import breakdown_lines
from clusterwright.sim.serving_steady import SATURATED_SENSITIVITY
from clusterwright.validation.rows import TableResult
from clusterwright.validation.serving_silicon import (
    PARTITION_MIN,
    TARGET,
    SiliconResult,
    explain_row,
    serving_silicon,
)
from clusterwright.validation.tables import TABLES

SILICON = "serving-silicon"


def _payload(r: TableResult) -> dict[str, Any]:
    return {
        "file": r.file,
        "rows": len(r.rows),
        "mape": r.mape,
        "max_abs_error": r.max_abs_error,
        "tolerance": r.tolerance,
        "held_out_rows": len(r.held_out_rows),
        "held_out_mape": r.held_out_mape,
        # Well-formed rows the model cannot predict, with the reason; in no MAPE.
        "not_covered_rows": len(r.not_covered),
        "not_covered": [{"id": x.id, "line": x.line, "set": x.set, "reason": x.reason}
                        for x in r.not_covered],
        "per_row": [
            {
                "id": x.id,
                "set": x.set,
                "quantity": x.quantity,
                "measured": x.measured,
                "predicted": x.predicted,
                "unit": x.unit,
                "error": x.error,
                "detail": x.detail,
                "group": x.group,
                "tags": dict(x.tags),
            }
            for x in r.rows
        ],
        "by": {key: {k: {"rows": n, "mape": m, "max_abs_error": mx}
                     for k, (n, m, mx) in r.mape_by(key).items()}
               for key in _keys(r)},
        "held_out_by": {key: {k: {"rows": n, "mape": m, "max_abs_error": mx}
                              for k, (n, m, mx) in r.mape_by(key, "held-out").items()}
                        for key in _keys(r)},
    }


def _keys(r: TableResult) -> list[str]:
    """The regime tags a table's rows carry (stack, precision, family, ...), and group."""
    keys = sorted({k for x in r.rows for k, _ in x.tags})
    if any(x.group for x in r.rows):
        keys.append("group")
    return keys


SUMMARY_ABOVE = 80  # rows: larger tables print one line per group and their worst rows


def _print_rows(r: TableResult) -> None:
    t = Table(title=f"{r.name} ({r.file})", title_justify="left")
    for col in ("row", "set", "measured", "predicted", "unit", "error", "layout used"):
        right = col in ("measured", "predicted", "error")
        t.add_column(col, justify="right" if right else "left", overflow="fold")
    for x in r.rows:
        t.add_row(
            x.id,
            x.set,
            f"{x.measured:.4g}",
            f"{x.predicted:.4g}",
            x.unit,
            f"{100 * x.error:+.1f}%",
            x.detail,
        )
    console.print(t)


def _print_groups(r: TableResult) -> None:
    """One line per group (a measured curve): rows, MAPE, worst error, where it lies."""
    t = Table(title=f"{r.name} ({r.file}): {len(r.rows)} rows, one line per group",
              title_justify="left")
    for col in ("group", "set", "rows", "MAPE", "worst", "worst row", "what"):
        t.add_column(col, justify="right" if col in ("rows", "MAPE", "worst") else "left",
                     overflow="fold")
    groups: dict[str, list[Any]] = {}
    for x in r.rows:
        groups.setdefault(x.group, []).append(x)
    for name, rows in groups.items():
        worst = max(rows, key=lambda x: abs(x.error))
        mape = sum(abs(x.error) for x in rows) / len(rows)
        # A group may mix development and held-out rows; "what" describes the worst row
        # (it printed the group's first row's beside the worst row's name).
        sets = " + ".join(sorted({x.set for x in rows}))
        t.add_row(name, sets, str(len(rows)), f"{100 * mape:.1f}%",
                  f"{100 * worst.error:+.1f}%", worst.id.split("@")[-1], worst.detail)
    console.print(t)


NOT_COVERED_SHOWN = 20  # rows listed one by one; the rest are counted (all are in --json)


def _print_not_covered(r: TableResult) -> None:
    """Each row the model cannot predict, with its line in the CSV and the reason."""
    if r.not_covered:
        console.print(f"  not covered ({len(r.not_covered)} rows of {r.file}, in no MAPE):",
                      markup=False, highlight=False)
    for x in r.not_covered[:NOT_COVERED_SHOWN]:
        console.print(f"    {x.id} (line {x.line}, {x.set}): {x.reason}", markup=False,
                      highlight=False)
    more = len(r.not_covered) - NOT_COVERED_SHOWN
    if more > 0:
        console.print(f"    ... and {more} more (see --json)")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f}%"


def _print_row(d: dict[str, Any]) -> None:
    """One serving-silicon row: how it was read, its prediction, where the time goes."""
    m = d["measured"]
    console.print(f"[bold]{d['id']}[/] (line {d['line']}): {d['model']} on {d['system']} "
                  f"under {d['backend']}, {d['mode']}")
    if "skipped" in d:
        console.print(f"  not covered: {d['skipped']}")
        return
    pr = d["predicted"]

    def err(q: str) -> str:
        return _signed((pr[q] - m[q]) / m[q]) if m[q] else "-"

    console.print(f"  measured TTFT {m['ttft_ms']:,.1f} ms, TPOT {m['tpot_ms']:.2f} ms; "
                  f"predicted TTFT {pr['ttft_ms']:,.1f} ms ({err('ttft_ms')}), TPOT "
                  f"{pr['tpot_ms']:.2f} ms ({err('tpot_ms')})")
    console.print(f"  {d['input_len']:,} in / {d['output_len']:,} out (the client's means); "
                  f"{d['detail']}")
    console.print(f"  read as: {d['note']}")
    if d["deployments"] > 1:
        console.print(f"  the prediction is the geometric mean of {d['deployments']} "
                      "deployments; the breakdown below is the first one's")
    if d["rounds"]:
        console.print(f"  the breakdown is the steady state's, without the benchmark's "
                      f"opening wave (one of its {d['rounds']:g} rounds)")
    for line in breakdown_lines(d["steady_state"]):
        console.print(f"  {line}")


def _print_split(part: dict[str, Any], rest: dict[str, Any], what: str,
                 medians: bool = False) -> None:
    """One line: the MAPE of the rows ``what`` describes (``part``) and of the others."""
    if not part["n"]:
        return

    def errs(q: dict[str, Any]) -> str:
        med = f" (median {_signed(q['ttft_median_error'])})" if medians else ""
        return f"TTFT MAPE {_pct(q['ttft_mape'])}{med}, TPOT MAPE {_pct(q['tpot_mape'])}"

    console.print(f"  {part['n']} {what}: {errs(part)}; the other {rest['n']}: {errs(rest)}")


def _print_silicon(res: SiliconResult) -> None:
    """Per-partition (system x backend x mode) MAPE, the worst rows, and what is not covered."""
    p = res.payload()
    # Nine columns: without the vertical rules they fit an 80-column terminal (CI logs)
    t = Table(title=f"serving-silicon: {p['covered']} of {p['total']} rows predicted, "
              "per system x backend x mode", title_justify="left", box=box.SIMPLE_HEAD)
    numbers = ("rows", "TTFT MAPE", "TTFT median", "TPOT MAPE", "TPOT median")
    for col in ("system", "backend", "mode", *numbers, "held"):
        t.add_column(col, justify="right" if col in numbers else "left",
                     no_wrap=col not in numbers)
    for q in p["partitions"]:
        held = "-" if q["n"] < PARTITION_MIN else (
            "yes" if (q["ttft_mape"] or 0) <= TARGET and (q["tpot_mape"] or 0) <= TARGET
            else "no")
        t.add_row(q["system"], q["backend"], q["mode"], str(q["n"]), _pct(q["ttft_mape"]),
                  _signed(q["ttft_median_error"]), _pct(q["tpot_mape"]),
                  _signed(q["tpot_median_error"]), held)
    console.print(t)
    console.print("  median: the median signed error, (model - measured) / measured; below 0 "
                  "the model is under most measurements (optimistic for an SLO)")
    skipped: dict[str, int] = {}
    for r in res.rows:
        if r.skipped:
            skipped[r.skipped] = skipped.get(r.skipped, 0) + 1
    for why, n in sorted(skipped.items(), key=lambda kv: -kv[1]):
        console.print(f"  not covered ({n}): {why}")
    read = len(res.covered) - len(res.recorded)
    if read:
        rec = p["recorded"]
        console.print(f"  {read} rows read by a rule or with inferred worker counts (see --json);"
                      f" the {rec['n']} read as recorded: TTFT MAPE {_pct(rec['ttft_mape'])}, "
                      f"TPOT MAPE {_pct(rec['tpot_mape'])}")
    _print_split(p["unwarmed"], p["warmed"], "InferenceMAX rows measured before its client "
                 "sent warm-up requests (cold kernels in the opening wave, not modelled)")
    _print_split(p["saturated"], p["unsaturated"], "rows where the model's loop is saturated "
                 "(the rate fixed by the prefill workers or the batch slots; TTFT = clients / "
                 f"rate - decode time moves {SATURATED_SENSITIVITY:g} % or more per 1 % of "
                 "rate error)", medians=True)
    _print_split(p["open_deployment"], p["settled_deployment"], "rows whose deployment the "
                 "data leaves open (the benchmark ran several at the row's client count, "
                 "predictions pooled; or speculative decoding no source sizes, predicted "
                 "without)")
    full, held = p["complete"], p["complete"]["within_target"]
    if full["n"]:
        console.print(
            f"  {full['n']} rows the data describes in full (a deployment it settles, a "
            f"server its client warmed up): TTFT MAPE {_pct(full['ttft_mape'])}, TPOT MAPE "
            f"{_pct(full['tpot_mape'])}; their partitions of {PARTITION_MIN}+ rows within "
            f"{100 * TARGET:.0f}%: TTFT {held['ttft']} of {held['partitions']}, TPOT "
            f"{held['tpot']} of {held['partitions']}")
    noise = p.get("repeat_noise") or {}
    rep, inp = noise.get("repeats"), noise.get("model_inputs")
    if rep and inp and inp["measurements"]:
        console.print(
            f"  the file against itself (each measurement by its group's median): identical "
            f"repeats ({rep['measurements']}) TTFT {_pct(rep['ttft_mape'])}, TPOT "
            f"{_pct(rep['tpot_mape'])}; rows the model's inputs cannot tell apart "
            f"({inp['measurements']}: other checkpoint path or version of one architecture "
            f"and engine) TTFT {_pct(inp['ttft_mape'])}, TPOT {_pct(inp['tpot_mape'])}")
    console.print(
        f"[bold]serving-silicon[/]: {p['covered']}/{p['total']} rows "
        f"({100 * p['covered'] / max(p['total'], 1):.1f}%), TTFT MAPE {_pct(p['ttft_mape'])} "
        f"(median {_signed(p['ttft_median_error'])}), TPOT MAPE {_pct(p['tpot_mape'])} "
        f"(median {_signed(p['tpot_median_error'])}); partitions of {PARTITION_MIN}+ rows within "
        f"{100 * TARGET:.0f}%: {'all' if res.passed else 'not all'} (TTFT "
        f"{p['within_target']['ttft']}, TPOT {p['within_target']['tpot']} of "
        f"{p['within_target']['partitions']})")


def validate(
    table: str | None = typer.Option(
        None, "--table", help=f"One of: {', '.join([*TABLES, SILICON])}."),
    data: Path | None = typer.Option(
        None, "--data", help=f"With --table {SILICON}: a CSV in serving_silicon.csv's format "
        "(default: the shipped validation/serving_silicon.csv)."),
    row: str | None = typer.Option(
        None, "--row", help=f"With --table {SILICON}: one row's id: how it is read, its "
        "prediction and where the prediction's time goes."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Compare every model against published measurements in validation/ (error per row, MAPE).

    ``--table serving-silicon`` exits 1 unless every partition (system x backend x mode) of
    10+ rows has TTFT and TPOT MAPE within 20 %; without ``--table`` its summary is printed
    and the exit code is 0."""
    known = [*TABLES, SILICON]
    if table is not None and table != SILICON and table.replace("-", "_") in TABLES:
        table = table.replace("-", "_")  # serving-energy names the serving_energy table
    if table is not None and table not in known:
        fail(f"--table: unknown table {table!r} (tables: {', '.join(known)})")
    if data is not None and table != SILICON:
        fail(f"--data: only with --table {SILICON}")
    if row is not None and table != SILICON:
        fail(f"--row: only with --table {SILICON}")
    if row is not None:
        with user_errors():
            one = explain_row(row, data)
        if as_json:
            emit_json(one)
        else:
            _print_row(one)
        return
    if table == SILICON:
        with user_errors(), progress_bar(f"predicting {SILICON}") as tick:
            tick(0, 1)
            res = serving_silicon(data)
            tick(1, 1)
        if as_json:
            emit_json(res.payload())
        else:
            _print_silicon(res)
        raise typer.Exit(code=0 if res.passed else 1)
    names = [table] if table else list(TABLES)
    results: list[TableResult] = []
    silicon: SiliconResult | None = None
    steps = len(names) + (1 if table is None else 0)
    with user_errors(), progress_bar("predicting published measurements") as tick:
        tick(0, steps)
        for n in names:
            results.append(TABLES[n]())
            tick(len(results), steps)
        if table is None:
            silicon = serving_silicon()
            tick(steps, steps)
    if as_json:
        out: dict[str, Any] = {"tables": {r.name: _payload(r) for r in results}}
        if silicon is not None:
            # Its own shape (the contract for --table serving-silicon), so beside the
            # per-row tables rather than among them.
            out["serving_silicon"] = silicon.payload()
        emit_json(out)
        return
    for r in results:
        if len(r.rows) > SUMMARY_ABOVE and any(x.group for x in r.rows):
            _print_groups(r)
        else:
            _print_rows(r)
        subsets = [s for s, rows in (("dev", r.dev_rows), ("held-out", r.held_out_rows)) if rows]
        for key in _keys(r):
            if key == "group":
                continue
            for subset in subsets:
                parts = ", ".join(f"{k} {100 * m:.1f}% ({n})"
                                  for k, (n, m, _) in sorted(r.mape_by(key, subset).items()))
                console.print(f"  {subset} MAPE by {key}: {parts}")
        held = (
            f"; held-out {len(r.held_out_rows)} rows, MAPE {100 * r.held_out_mape:.1f}%"
            if r.held_out_mape is not None
            else ""
        )
        _print_not_covered(r)
        if r.name == "accelerators":
            from clusterwright.validation.accelerators_table import coverage

            cov = coverage(r)
            missing = [g for g, n in cov.items() if n == 0]
            console.print("  rows per accelerator: " + ", ".join(
                f"{g} {n}" for g, n in cov.items() if n) + (
                f"; no published run with its configuration yet: {', '.join(missing)} "
                "(their estimates say they are unvalidated)" if missing else ""))
        if not r.dev_rows:
            console.print(f"[bold]{r.name}[/]: no development rows (nothing fitted on it){held}")
            continue
        console.print(
            f"[bold]{r.name}[/]: {len(r.dev_rows)} development rows, MAPE {100 * r.mape:.2f}%, "
            f"max |error| {100 * r.max_abs_error:.2f}% (held to {100 * r.tolerance:.0f}%){held}"
        )
    if silicon is not None:
        _print_silicon(silicon)
