"""Speed of the what-if re-pricing (``clusterwright.plan.whatif.reprice``) and of the web
route that serves it (``GET /runs/{id}/whatif.json``), and of the report's outputs.

For each shipped example blueprint (examples/<name>/blueprint.json), on this machine:
  (a) ``reprice`` in process, median and worst of ``--repeats`` calls, at changed values;
  (b) the route through FastAPI's TestClient with the run stored in a temporary database
      (loading the stored blueprint, re-pricing, JSON), median and worst;
  (c) rendering report.html and report.xlsx from the blueprint (best of 3).

Target from issue 17 (reported, not asserted): the re-pricing answers in under 100 ms on
the server side.

    python benchmarks/whatif_speed.py [--repeats 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from _bench import best_of, machine_lines, table, timings, write

from clusterwright.plan.whatif import WhatIf, reprice
from clusterwright.report.html import render_report
from clusterwright.report.xlsx import render_xlsx

ROOT = Path(__file__).resolve().parents[1]
CHANGE = WhatIf(utilization=0.6, electricity_usd_per_kwh=0.15, server_price_usd=250_000,
                cloud_usd_per_gpu_hour=2.5, cloud_term="on_demand", deadline_days=60)
PARAMS = {"utilization": 0.6, "electricity_usd_per_kwh": 0.15, "server_price_usd": 250000,
          "cloud_usd_per_gpu_hour": 2.5, "deadline_days": 60}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from fastapi.testclient import TestClient

    from clusterwright.web.app import create_app

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Path(tmp) / "bench.db")
        store = app.state.web.store
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            for path in sorted((ROOT / "examples").glob("*/blueprint.json")):
                bp = json.loads(path.read_text())
                name = path.parent.name
                fn, _ = timings(lambda bp=bp: reprice(bp, CHANGE), args.repeats)
                sc = store.save_scenario(name, "name: x\n")
                run = store.create_run(sc.id)
                store.finish_run(run.id, metrics={}, blueprint=bp, artifacts_dir=None)
                url = f"/runs/{run.id}/whatif.json"

                def call(url: str = url) -> None:
                    r = client.get(url, params=PARAMS)
                    assert r.status_code == 200, r.text

                web, _ = timings(call, args.repeats)
                html, _ = best_of(lambda bp=bp: render_report(bp, Path(tmp) / "r.html"), 3)
                xlsx, _ = best_of(lambda bp=bp: render_xlsx(bp, Path(tmp) / "r.xlsx"), 3)
                rows.append([name, f"{len(path.read_bytes()) / 1e3:,.0f} kB",
                             f"{statistics.median(fn) * 1e3:.3f}", f"{max(fn) * 1e3:.3f}",
                             f"{statistics.median(web) * 1e3:.1f}", f"{max(web) * 1e3:.1f}",
                             f"{html:.2f}", f"{xlsx:.2f}"])
    lines = [*machine_lines(), "",
             f"What-if re-pricing, {args.repeats} calls each (target: under 100 ms server "
             "side); report rendering, best of 3.", "",
             *table(["example", "blueprint", "reprice median ms", "reprice max ms",
                     "route median ms", "route max ms", "report.html s", "report.xlsx s"],
                    rows)]
    write("whatif_speed.md", lines)


if __name__ == "__main__":
    main()
