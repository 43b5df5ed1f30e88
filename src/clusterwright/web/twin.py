"""The live twin page: a blueprint (a finished run's artifacts, or the shipped example)
against uploaded as-built dumps, with the findings drawn on the fabric.

Files are uploads, never server paths typed into a form: a workbench reachable from another
machine (``--allow-remote``) must not read the server's files for a visitor. Uploads are
written to a temporary directory for the parsers and removed afterwards; the request body
limit of the app applies (a large cluster's dumps are for ``clusterwright twin diff``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any
from xml.sax.saxutils import escape

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.responses import Response

from clusterwright.errors import ClusterwrightError
from clusterwright.ingest import PARSERS
from clusterwright.store import RunRow, StoreError
from clusterwright.web.examples import EXAMPLES_DIR
from clusterwright.web.state import WebState, web

router = APIRouter()
State = Annotated[WebState, Depends(web)]
EXAMPLE = EXAMPLES_DIR / "twin"
LABELS = {"lldp": "LLDP (lldpctl -f json)", "ibnet": "ibnetdiscover",
          "slurm": "Slurm topology / scontrol / sinfo", "k8s": "kubectl get nodes -o json",
          "gpu_topo": "nvidia-smi topo -m / -q", "metrics": "Prometheus metrics (DCGM, ports)",
          "bgp": "FRR show bgp summary json", "steps": "per-rank step times"}
MAX_FILES = 32  # per request
DRAWN_TIERS = ("node-leaf", "leaf-spine", "spine-core")
SEVERITY_COLOR = {"critical": "#c62828", "major": "#ef6c00", "minor": "#757575"}


def _blueprints(w: WebState) -> list[tuple[str, str]]:
    """(value, label) of every blueprint the page can compare against."""
    out: list[tuple[str, str]] = []
    if (EXAMPLE / "blueprint" / "cabling.csv").is_file():
        out.append(("example", "shipped example: 32 x DGX H100 (examples/twin)"))
    for r in w.store.list_runs(limit=50, with_blueprint=False):
        if r.status == "done" and _run_dir(w, r) is not None:
            out.append((f"run:{r.id}", f"run {r.id}: {r.scenario_name} ({r.created_at})"))
    return out


def _run_dir(w: WebState, r: RunRow) -> Path | None:
    d = w.store.artifacts_dir(r)
    return d if d is not None and (d / "cabling.csv").is_file() else None


def _resolve(w: WebState, value: str) -> Path | None:
    if value == "example":
        return EXAMPLE / "blueprint"
    if value.startswith("run:") and value[4:].isdigit():
        try:
            r = w.store.get_run(int(value[4:]))
        except StoreError:
            return None
        return _run_dir(w, r) if r.status == "done" else None
    return None


@router.get("/twin")
def twin_page(request: Request, w: State) -> Response:
    """The form: a blueprint, as-built files per kind, and whether to simulate the impact."""
    return w.render(request, "twin.html", blueprints=_blueprints(w), labels=LABELS,
                    result=None, problems=[], svg="", chosen="example")


@router.post("/twin")
async def twin_run(request: Request, w: State) -> Response:
    """Compare: uploaded files (or, with ``use_example``, the example's as-built dumps)."""
    form = await request.form()
    chosen = str(form.get("blueprint", "example"))
    bp = _resolve(w, chosen)
    problems: list[str] = []
    if bp is None:
        problems.append(f"no blueprint {chosen!r}: choose one from the list")
    tmp = Path(tempfile.mkdtemp(prefix="clusterwright-twin-web-"))
    try:
        inputs: dict[str, tuple[Path, ...]] = {}
        if form.get("use_example") and not problems:
            inputs = _example_inputs()
        else:
            n = 0
            for kind in PARSERS:
                files: list[Path] = []
                for i, up in enumerate(form.getlist(kind)):
                    if not isinstance(up, UploadFile) or not up.filename:
                        continue
                    n += 1
                    if n > MAX_FILES:
                        problems.append(f"more than {MAX_FILES} files")
                        break
                    name = Path(up.filename).name or f"{kind}{i}"
                    d = tmp / kind / str(i)
                    d.mkdir(parents=True)
                    p = d / name
                    p.write_bytes(await up.read())
                    files.append(p)
                if files:
                    inputs[kind] = tuple(files)
        if not inputs and not problems:
            problems.append("upload at least one as-built file, or compare the example's")
        result = None
        svg = ""
        if not problems and bp is not None:
            try:
                result, svg = await run_in_threadpool(_compare, w, bp, inputs,
                                                      bool(form.get("impact")), tmp)
            except ClusterwrightError as exc:
                problems.append(str(exc).replace(str(tmp) + "/", ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return w.render(request, "twin.html", blueprints=_blueprints(w), labels=LABELS,
                    result=result, problems=problems, svg=svg, chosen=chosen,
                    status_code=200)


def _example_inputs() -> dict[str, tuple[Path, ...]]:
    d = EXAMPLE / "as-built"
    files = {"ibnet": "ibnetdiscover.txt", "lldp": "lldp.json", "bgp": "bgp.json",
             "slurm": "topology.conf", "k8s": "nodes.json", "gpu_topo": "topo.txt",
             "metrics": "metrics.prom", "steps": "steps.csv"}
    return {k: (d / v,) for k, v in files.items() if (d / v).is_file()}


def _compare(w: WebState, bp: Path, inputs: dict[str, tuple[Path, ...]], impact: bool,
             tmp: Path) -> tuple[dict[str, Any], str]:
    from clusterwright.twin.blueprint import load_plan
    from clusterwright.twin.run import TwinRequest, twin_diff

    plan = load_plan(bp, w.catalog)
    report = twin_diff(TwinRequest(blueprint=bp, inputs=inputs, impact=impact), w.catalog,
                       plan=plan)
    data = report.as_dict()
    cut = str(tmp) + "/"
    for f in data["findings"]:
        f["evidence"] = [e.replace(cut, "") for e in f["evidence"]]
    data["blueprint"] = "examples/twin/blueprint" if bp == EXAMPLE / "blueprint" else bp.name
    return data, topology_svg(plan, data["findings"])


def topology_svg(plan: Any, findings: list[dict[str, Any]]) -> str:
    """The backend fabric (spines, leaves, hosts in rows, cores on top) with every planned
    cable, the cables and devices of each finding drawn in its severity's colour (the worst
    finding wins) and titled with the finding."""
    roles = {"core": 0, "spine": 1, "leaf": 2, "host": 3}
    rows: dict[int, list[str]] = {r: [] for r in range(4)}
    for name, d in sorted(plan.devices.items()):
        if d.role in roles and any(plan.links[i].tier in DRAWN_TIERS
                                   for i in plan.by_device.get(name, [])):
            rows[roles[d.role]].append(name)
    rows = {r: v for r, v in rows.items() if v}
    if not rows:
        return ""
    width = 1100
    row_y = {r: 40 + i * 150 for i, r in enumerate(sorted(rows))}
    pos: dict[str, tuple[float, float]] = {}
    for r, names in rows.items():
        step = (width - 40) / max(1, len(names))
        for i, n in enumerate(names):
            pos[n] = (20 + step * (i + 0.5), row_y[r])
    rank = {"critical": 0, "major": 1, "minor": 2}
    dev_mark: dict[str, dict[str, Any]] = {}
    for f in findings:
        for dname in f["devices"]:
            cur = dev_mark.get(dname)
            if cur is None or rank[f["severity"]] < rank[cur["severity"]]:
                dev_mark[dname] = f
    cable_mark: dict[tuple[str, str], dict[str, Any]] = {}
    for f in findings:
        ds = [dname for dname in f["devices"] if dname in pos]
        for a in ds:
            for b in ds:
                if a < b and f["kind"] not in ("wrong_label", "slow_gpu", "node_unavailable",
                                               "gpu_missing", "nvlink_degraded"):
                    cur = cable_mark.get((a, b))
                    if cur is None or rank[f["severity"]] < rank[cur["severity"]]:
                        cable_mark[(a, b)] = f
    height = max(row_y.values()) + 40
    small = len(pos) > 200
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'class="twin-topology" role="img" aria-label="backend fabric with findings">']
    for lk in plan.links:
        if lk.tier not in DRAWN_TIERS or lk.a not in pos or lk.b not in pos:
            continue
        (x1, y1), (x2, y2) = pos[lk.a], pos[lk.b]
        parts.append(f'<line x1="{x1:.1f}" y1="{y1}" x2="{x2:.1f}" y2="{y2}" '
                     'stroke="#cfd8dc" stroke-width="0.5"/>')
    for (a, b), f in sorted(cable_mark.items()):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        parts.append(f'<line x1="{x1:.1f}" y1="{y1}" x2="{x2:.1f}" y2="{y2}" '
                     f'stroke="{SEVERITY_COLOR[f["severity"]]}" stroke-width="2.5">'
                     f'<title>{escape(f["id"] + " " + f["summary"])}</title></line>')
    r = 3 if small else 6
    for n, (x, y) in pos.items():
        mark = dev_mark.get(n)
        color = SEVERITY_COLOR[mark["severity"]] if mark else "#37474f"
        title = escape(n + (f": {mark['id']} {mark['summary']}" if mark else ""))
        parts.append(f'<circle cx="{x:.1f}" cy="{y}" r="{r if not mark else r + 2}" '
                     f'fill="{color}" data-device="{escape(n)}"><title>{title}</title>'
                     "</circle>")
    for rr, y in row_y.items():
        label = ("cores", "spines", "leaves", "hosts")[rr]
        parts.append(f'<text x="2" y="{y - 12}" font-size="11" fill="#546e7a">{label} '
                     f"({len(rows[rr])})</text>")
    parts.append("</svg>")
    return "".join(parts)
