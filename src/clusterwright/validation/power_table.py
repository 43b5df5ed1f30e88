"""Power validation table: published server and cluster power figures, predicted by the power
plan (``design/power_plan.py``: the fabric plan plus ``model/power.py``).

Quantities (``quantity`` column of ``validation/power.csv``):

- ``servers_nameplate_kw``: nodes x the catalog's maximum system power;
- ``server_typical_kw``: one server's sustained training draw (max x typical fraction);
- ``it_nameplate_mw``: servers plus the designed fabric at maximum power.

TCO figures in ``shared/reference/operations.md`` are derived worked examples or spreadsheet
models, not measurements, so they are unit-test vectors (tests/model/test_tco.py), not rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.power_plan import PowerRequest, power_plan
from clusterwright.validation.rows import (
    CsvRow,
    Row,
    TableResult,
    choice,
    integer,
    number,
    predict_each,
    read_csv,
    text,
    unit_scale,
)

FILE = "power.csv"
# Quantity -> the unit it is predicted in (a row may give another power unit).
QUANTITIES = {"servers_nameplate_kw": "kW", "server_typical_kw": "kW", "it_nameplate_mw": "MW"}


def predict(cat: Catalog, r: Mapping[str, str]) -> tuple[float, str]:
    """(predicted value in the row's unit, detail) for one row."""
    q = choice(r, "quantity", QUANTITIES)
    scale = unit_scale(r, QUANTITIES[q], q)
    nodes = integer(r, "nodes", low=1)
    plan = power_plan(PowerRequest(server=text(r, "server"), nodes=nodes), cat)
    p = plan.power
    if q == "servers_nameplate_kw":
        return p.servers_nameplate_kw / scale, f"{nodes} x {plan.server.max_power_kw:g} kW"
    if q == "server_typical_kw":
        frac = cat.assumption("server_typical_power_fraction")
        return p.servers_typical_kw / nodes / scale, (
            f"{plan.server.max_power_kw:g} kW x {frac:g}")
    return p.nameplate_kw / 1e3 / scale, (
        f"servers {p.servers_nameplate_kw / 1e3:.2f} MW + network "
        f"{p.network_nameplate_kw / 1e3:.2f} MW (typical IT {p.typical_kw / 1e3:.2f} MW)"
    )


def power_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/power.csv`` (``path``: another file in its format).
    A row the model cannot predict (a server the catalog lacks, a fabric it cannot design)
    is not covered, with the reason."""
    cat = cat or load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        value, detail = predict(cat, r)
        return [Row(
            id=r["id"], quantity=r["quantity"], measured=number(r, "value", positive=True),
            predicted=value, unit=r["unit"], source=r["source"], set=set_, detail=detail,
        )]

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="power", file=str(path), rows=rows, tolerance=0.10,
                       not_covered=not_covered)
