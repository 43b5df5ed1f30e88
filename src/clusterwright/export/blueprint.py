"""Write a Blueprint's artifacts: blueprint.json, bom.csv, cabling.csv, configs/ (every export
of the fabric designer) and the report in the formats asked for: report.html (default),
report.xlsx and report.pdf.

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
from clusterwright.errors import InputError
from clusterwright.export.fabric import atomic_dir, check_out_dir, write_fabric
from clusterwright.jsonsafe import jsonable


def blueprint_json(bp: Blueprint | dict[str, Any]) -> str:
    """The blueprint as the JSON text written to blueprint.json (NaN/inf as null)."""
    data = bp.to_dict() if isinstance(bp, Blueprint) else bp
    return json.dumps(jsonable(data), indent=1) + "\n"


FORMATS = ("html", "xlsx", "pdf")
DEFAULT_FORMATS = ("html",)


def parse_formats(text: str) -> tuple[str, ...]:
    """``"html,xlsx,pdf"`` as a tuple of report formats; an unknown or empty name is an
    InputError on field ``formats``; ``pdf`` where no browser can print is one too."""
    names = [n.strip().lower() for n in text.split(",")]
    bad = [n for n in names if n not in FORMATS]
    if bad or not any(names):
        raise InputError(f"formats: unknown report format {', '.join(map(repr, bad)) or '(none)'}"
                         f" (formats: {', '.join(FORMATS)}, comma-separated)", field="formats")
    if "pdf" in names:
        from clusterwright.report.pdf import pdf_unavailable

        why = pdf_unavailable()
        if why is not None:
            raise InputError(f"formats: {why}", field="formats")
    return tuple(dict.fromkeys(names))


def _report_renderer() -> Any:
    try:
        from clusterwright.report.html import render_report
    except ImportError:
        return None
    return render_report


def write_blueprint(bp: Blueprint, fab: Fabric | None, out: Path, force: bool = False,
                    report: bool = True,
                    formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[str]:
    """Write every artifact of ``bp`` under ``out``; returns the relative paths written
    (configs/ counted as one entry per file). ``fab`` is the designed fabric of the
    recommendation (None: no BOM, cabling or configs, e.g. a blueprint read back from JSON).
    ``formats``: the report's formats (html, xlsx, pdf); ``report=False`` writes none."""
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
        for name, site_fab in bp.site_fabrics.items():
            # Each site's own IaC (plan/site_fabrics): a job split across sites builds these.
            files = write_fabric(site_fab, tmp / "sites" / name)
            written += [f"sites/{name}/{p}" for p in files]
            artifacts.setdefault("sites", {})[name] = f"sites/{name}/"
        render = _report_renderer() if report else None
        formats = formats if render is not None else ()
        if "html" in formats:
            artifacts["report"] = "report.html"
        if "xlsx" in formats:
            artifacts["report_xlsx"] = "report.xlsx"
        if "pdf" in formats:
            artifacts["report_pdf"] = "report.pdf"
        bp.artifacts = {**bp.artifacts, **artifacts}
        data = json.loads(blueprint_json(bp))
        (tmp / "blueprint.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        written.append("blueprint.json")
        if render is not None and ("html" in formats or "pdf" in formats):
            html = tmp / ("report.html" if "html" in formats else ".report-print.html")
            render(data, html)
            if "html" in formats:
                written.append("report.html")
            if "pdf" in formats:
                from clusterwright.report.pdf import render_pdf

                render_pdf(html, tmp / "report.pdf")
                written.append("report.pdf")
                if "html" not in formats:
                    html.unlink()
        if "xlsx" in formats:
            from clusterwright.report.xlsx import render_xlsx

            render_xlsx(data, tmp / "report.xlsx")
            written.append("report.xlsx")
    return written
