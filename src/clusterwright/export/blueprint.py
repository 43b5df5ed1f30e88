"""Write a Blueprint's artifacts: blueprint.json, bom.csv, cabling.csv, configs/ (every export
of the fabric designer) and report.html.

Everything is written into a temporary directory next to ``out`` and moved into place only
when every file is written (the pattern of ``export/fabric.py``), so a failure leaves nothing
half-written; a non-empty ``out`` is replaced only with ``force``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from clusterwright.design.blueprint import Blueprint
from clusterwright.design.fabric import Fabric
from clusterwright.export.fabric import atomic_dir, check_out_dir, write_fabric
from clusterwright.jsonsafe import jsonable


def blueprint_json(bp: Blueprint | dict[str, Any]) -> str:
    """The blueprint as the JSON text written to blueprint.json (NaN/inf as null)."""
    data = bp.to_dict() if isinstance(bp, Blueprint) else bp
    return json.dumps(jsonable(data), indent=1) + "\n"


def _report_renderer() -> Any:
    try:
        from clusterwright.report.html import render_report
    except ImportError:
        return None
    return render_report


def write_blueprint(bp: Blueprint, fab: Fabric | None, out: Path, force: bool = False,
                    report: bool = True) -> list[str]:
    """Write every artifact of ``bp`` under ``out``; returns the relative paths written
    (configs/ counted as one entry per file). ``fab`` is the designed fabric of the
    recommendation (None: no BOM, cabling or configs, e.g. a blueprint read back from JSON)."""
    out = Path(out)
    check_out_dir(out, force)
    with atomic_dir(out) as tmp:
        written: list[str] = []
        artifacts: dict[str, Any] = {"blueprint": "blueprint.json"}
        if fab is not None:
            configs = write_fabric(fab, tmp / "configs")
            written += [f"configs/{p}" for p in configs]
            for name in ("bom.csv", "cabling.csv"):
                shutil.copyfile(tmp / "configs" / name, tmp / name)
                written.append(name)
            artifacts.update(bom="bom.csv", cabling="cabling.csv", configs="configs/",
                             config_files=len(configs))
        render = _report_renderer() if report else None
        if render is not None:
            artifacts["report"] = "report.html"
        bp.artifacts = {**bp.artifacts, **artifacts}
        data = json.loads(blueprint_json(bp))
        (tmp / "blueprint.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        written.append("blueprint.json")
        if render is not None:
            render(data, tmp / "report.html")
            written.append("report.html")
    return written
