"""Carbon validation table (``validation/carbon.csv``): published training footprints.

- ``card_location_t`` / ``card_kwh``: the model cards' convention (GPU-hours x TDP x PUE, at a
  grid's average intensity) with the catalog's TDP and grid intensity (``grid_regions``) and
  the operator's published PUE: Llama 3.1 (8B, 70B, 405B), Llama 2 (7B, 13B, 70B), BLOOM's
  dynamic energy and carbon. The region and year are chosen by a rule, not by the error: the
  operator's country, at the latest grid-intensity release published before the model card.
- ``embodied_t``: BLOOM's embodied carbon from the catalog's hardware carbon amortised over its
  life at the catalog's utilisation (``model/energy.embodied_t``).
- ``full_system_kwh``: BLOOM's dynamic plus idle energy, and MLPerf Training v4.0 Power's
  measured node energy of Llama 2 70B LoRA runs on 1, 8 and 64 8-GPU H100 nodes, against the
  full-system model (the catalog server at its sustained training draw).
- ``system_t``: training footprints published with every input stated (device-hours, measured
  system power per device, PUE, the grid's intensity when run): Patterson et al. 2021 Table 4
  (T5, Meena, GShard, Switch, GPT-3, the Evolved Transformer search) and LLMCarbon's XLM row.
  The power is the source's measurement, so these check the accounting (hours x power x PUE x
  intensity) and the sources' own arithmetic, not the catalog's power.

Development or held out by source, not by error: the Llama 2 card's rows are development,
because its stated method ("time: total GPU time ... power consumption: peak power capacity per
GPU device ... adjusted for power usage efficiency") is the convention ``model/energy.
model_card_kwh`` implements; the Llama 3.1 card (the same convention on another fleet and
grid year) and BLOOM's measured energy and carbon are held out. By the same rule the
``system_t`` rows are development (their stated method, with every input given, is the
accounting the model implements), and the MLPerf rows are held out (the catalog's server power
predicts a measurement). No catalog number was set from any of these figures.
"""

from __future__ import annotations

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import InputError
from clusterwright.model import energy as en
from clusterwright.plan.energy import embodied, grid, per_gpu_kw
from clusterwright.validation.rows import Row, TableResult, read_csv

FILE = "carbon.csv"


def _num(r: dict[str, str], col: str) -> float:
    try:
        return float(r[col])
    except ValueError as e:
        raise InputError(f"{FILE} row {r['id']}: {col} {r[col]!r} is not a number") from e


def predict(cat: Catalog, r: dict[str, str]) -> tuple[float, str]:
    q = r["quantity"]
    hours = _num(r, "gpu_hours")
    if q in ("card_location_t", "card_kwh"):
        tdp = cat.gpu(r["gpu"]).tdp_w
        pue = _num(r, "pue")
        kwh = en.model_card_kwh(hours, tdp, pue)
        if q == "card_kwh":
            return kwh, f"{hours:,.0f} GPU-h x {tdp:g} W x PUE {pue:g}"
        g = grid(cat, r["region"], int(r["year"]))
        c = en.carbon(kwh, g.gco2_per_kwh)
        return c.location_t, (f"{kwh / 1e3:,.0f} MWh ({hours:,.0f} GPU-h x {tdp:g} W x PUE "
                              f"{pue:g}) x {g.gco2_per_kwh:g} g/kWh ({g.region.id} {g.year})")
    if q == "system_t":
        w, gco2, pue = _num(r, "power_w"), _num(r, "gco2_per_kwh"), _num(r, "pue")
        e = en.energy(hours, w / 1e3, pue=pue)
        c = en.carbon(e.facility_kwh, gco2)
        return c.location_t, (f"{e.facility_kwh / 1e3:,.1f} MWh ({hours:,.0f} device-h x {w:g} W "
                              f"x PUE {pue:g}) x {gco2:g} g/kWh (stated)")
    server = cat.server(r["server"])
    if q == "embodied_t":
        t = embodied(cat, hours, server)
        return t, (f"{hours:,.0f} GPU-h x ({cat.assumption('embodied_server_kgco2e'):g} kg / "
                   f"{server.gpus} + {cat.assumption('embodied_gpu_kgco2e'):g} kg) / "
                   f"({cat.assumption('embodied_lifetime_years'):g} y x 8,760 h x "
                   f"{cat.assumption('cluster_utilization'):g})")
    if q == "full_system_kwh":
        kw = per_gpu_kw(cat, server)
        e = en.energy(hours, kw, pue=_num(r, "pue"))
        h = f"{hours:,.0f}" if hours >= 100 else f"{hours:.3g}"
        return e.facility_kwh, f"{h} GPU-h x {kw:.4f} kW ({server.id} sustained / GPU)"
    raise InputError(f"{FILE} row {r['id']}: unknown quantity {q!r}")


def carbon_table(cat: Catalog | None = None) -> TableResult:
    """Predict every row of ``validation/carbon.csv``."""
    cat = cat or load_catalog(env={})
    rows = []
    for r in read_csv(FILE):
        value, detail = predict(cat, r)
        rows.append(Row(id=r["id"], quantity=r["quantity"], measured=_num(r, "value"),
                        predicted=value, unit=r["unit"], source=r["source"],
                        set=r["set"] or "dev", detail=detail, group=r["quantity"]))
    return TableResult(name="carbon", file=FILE, rows=rows, tolerance=0.15)
