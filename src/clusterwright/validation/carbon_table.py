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

from collections.abc import Mapping
from pathlib import Path

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.model import energy as en
from clusterwright.plan.energy import embodied, grid, per_gpu_kw
from clusterwright.validation.rows import (
    CsvRow,
    Row,
    TableResult,
    in_row_unit,
    integer,
    number,
    predict_each,
    read_csv,
    required,
    text,
)

FILE = "carbon.csv"
# Quantity -> the unit it is predicted in (a row may give another energy or mass unit).
QUANTITIES = {"card_location_t": "tCO2e", "card_kwh": "kWh", "embodied_t": "tCO2e",
              "full_system_kwh": "kWh", "system_t": "tCO2e"}


def _num(r: Mapping[str, str], col: str) -> float:
    return number(r, col, positive=True)


def predict(cat: Catalog, r: Mapping[str, str]) -> tuple[float, str]:
    """(predicted value in the row's unit, detail) for one row."""
    return in_row_unit(cat, r, QUANTITIES, _predict)


def _predict(cat: Catalog, r: Mapping[str, str], q: str) -> tuple[float, str]:
    hours = _num(r, "gpu_hours")
    if q in ("card_location_t", "card_kwh"):
        pue = _num(r, "pue")
        year = integer(r, "year", low=1) if q == "card_location_t" and text(r, "year") else None
        tdp = cat.gpu(required(r, "gpu")).tdp_w
        kwh = en.model_card_kwh(hours, tdp, pue)
        if q == "card_kwh":
            return kwh, f"{hours:,.0f} GPU-h x {tdp:g} W x PUE {pue:g}"
        g = grid(cat, text(r, "region") or None, year)
        c = en.carbon(kwh, g.gco2_per_kwh)
        return c.location_t, (f"{kwh / 1e3:,.0f} MWh ({hours:,.0f} GPU-h x {tdp:g} W x PUE "
                              f"{pue:g}) x {g.gco2_per_kwh:g} g/kWh ({g.region.id} {g.year})")
    if q == "system_t":
        w, gco2, pue = _num(r, "power_w"), _num(r, "gco2_per_kwh"), _num(r, "pue")
        e = en.energy(hours, w / 1e3, pue=pue)
        c = en.carbon(e.facility_kwh, gco2)
        return c.location_t, (f"{e.facility_kwh / 1e3:,.1f} MWh ({hours:,.0f} device-h x {w:g} W "
                              f"x PUE {pue:g}) x {gco2:g} g/kWh (stated)")
    pue = _num(r, "pue") if q == "full_system_kwh" else 1.0
    server = cat.server(required(r, "server"))
    if q == "embodied_t":
        t = embodied(cat, hours, server)
        return t, (f"{hours:,.0f} GPU-h x ({cat.assumption('embodied_server_kgco2e'):g} kg / "
                   f"{server.gpus} + {cat.assumption('embodied_gpu_kgco2e'):g} kg) / "
                   f"({cat.assumption('embodied_lifetime_years'):g} y x 8,760 h x "
                   f"{cat.assumption('cluster_utilization'):g})")
    kw = per_gpu_kw(cat, server)  # full_system_kwh
    e = en.energy(hours, kw, pue=pue)
    h = f"{hours:,.0f}" if hours >= 100 else f"{hours:.3g}"
    return e.facility_kwh, f"{h} GPU-h x {kw:.4f} kW ({server.id} sustained / GPU)"


def carbon_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/carbon.csv`` (``path``: another file in its format).
    A row the model cannot predict (a GPU, server, grid region or year the catalog lacks) is
    not covered, with the reason."""
    cat = cat or load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        value, detail = predict(cat, r)
        return [Row(id=r["id"], quantity=r["quantity"], measured=_num(r, "value"),
                    predicted=value, unit=r["unit"], source=r["source"], set=set_,
                    detail=detail, group=r["quantity"])]

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="carbon", file=str(path), rows=rows, tolerance=0.15,
                       not_covered=not_covered)
