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

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.power_plan import PowerRequest, power_plan
from clusterwright.errors import InputError
from clusterwright.validation.rows import Row, TableResult, read_csv

FILE = "power.csv"


def predict(cat: Catalog, r: dict[str, str]) -> tuple[float, str]:
    """(predicted value in the row's unit, detail) for one row."""
    try:
        nodes = int(r["nodes"])
    except ValueError as e:
        raise InputError(f"{FILE} row {r['id']}: nodes {r['nodes']!r} is not an integer") from e
    plan = power_plan(PowerRequest(server=r["server"], nodes=nodes), cat)
    p = plan.power
    q = r["quantity"]
    if q == "servers_nameplate_kw":
        return p.servers_nameplate_kw, f"{nodes} x {plan.server.max_power_kw:g} kW"
    if q == "server_typical_kw":
        frac = cat.assumption("server_typical_power_fraction")
        return p.servers_typical_kw / nodes, f"{plan.server.max_power_kw:g} kW x {frac:g}"
    if q == "it_nameplate_mw":
        return p.nameplate_kw / 1e3, (
            f"servers {p.servers_nameplate_kw / 1e3:.2f} MW + network "
            f"{p.network_nameplate_kw / 1e3:.2f} MW (typical IT {p.typical_kw / 1e3:.2f} MW)"
        )
    raise InputError(f"{FILE} row {r['id']}: unknown quantity {q!r}")


def power_table(cat: Catalog | None = None) -> TableResult:
    """Predict every row of ``validation/power.csv``."""
    cat = cat or load_catalog(env={})
    rows = []
    for r in read_csv(FILE):
        value, detail = predict(cat, r)
        rows.append(Row(
            id=r["id"], quantity=r["quantity"], measured=float(r["value"]), predicted=value,
            unit=r["unit"], source=r["source"], set=r["set"] or "dev", detail=detail,
        ))
    return TableResult(name="power", file=FILE, rows=rows, tolerance=0.10)
