"""Storage validation table (``validation/storage.csv``).

- ``accelerators_from_throughput`` (development, consistency): every MLPerf Storage v1.0 Closed
  training result. The accelerators its measured sample rate keeps at the workload's AU
  threshold, floor(samples/s / (AU x batch / compute time)), against the accelerators the
  submitter reported. It checks the encoding of MLPerf's workloads (``model/storage.py``:
  sample sizes, emulated compute time, thresholds) that the storage planner sizes data reads
  with; the storage system does not enter.
- ``accelerators_from_datasheet`` (held out): the DDN AI400X2T, IEIT AS13000 and Micron
  single-drive results predicted from the catalog entry named in ``system`` (x
  ``system_units``) alone, as the planner sizes a tier: its read bandwidth, and where the
  entry gives them its read IOPS and file-open rate against the workload's request and file
  sizes (``model/storage.read_ceiling``), capped by the benchmark hosts' storage NICs
  (``clients`` x ``client_nic_gbit_s``, from the submission's system description) where the
  row gives them.
- ``checkpoint_gib`` (held out): published checkpoint sizes (MLPerf Storage v2.0 Llama 3
  checkpoint workloads, BLOOM-176B, OPT-175B) against weights + mixed-precision Adam state
  (``model/reliability.checkpoint_bytes``, 14 B/param; 10 B/param where the row's
  ``fp32_master`` is ``no``: the run kept no fp32 master copy, as OPT-175B's paper states).

Development or held out is decided per source, never by the error: rows whose prediction uses
the row's own measurement are consistency rows (dev); rows predicted from the catalog or the
model alone are held out.
"""

from __future__ import annotations

import math

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.model import storage as st
from clusterwright.model.params import total_params
from clusterwright.validation.rows import Row, TableResult, read_csv

FILE = "storage.csv"
GIB = 2.0**30


def _num(r: dict[str, str], col: str) -> float:
    try:
        return float(r[col])
    except ValueError as e:
        raise InputError(f"{FILE} row {r['id']}: {col} {r[col]!r} is not a number") from e


def _workload(r: dict[str, str]) -> st.DataWorkload:
    key = (r["workload"], r["accelerator"])
    if key not in st.MLPERF_WORKLOADS:
        raise InputError(f"{FILE} row {r['id']}: no MLPerf workload {key}")
    return st.MLPERF_WORKLOADS[key]


def predict(cat: Catalog, r: dict[str, str]) -> tuple[float, str]:
    q = r["quantity"]
    if q == "accelerators_from_throughput":
        wl = _workload(r)
        sps = _num(r, "throughput_samples_per_s")
        n = math.floor(sps / wl.samples_per_s_at_threshold + 1e-9)
        implied = sps / (_num(r, "value") * wl.batch / wl.compute_s)
        return float(n), (f"{sps:,.0f} samples/s / {wl.samples_per_s_at_threshold:.2f} per "
                          f"accelerator at AU {wl.au:g}; the submission ran at AU "
                          f"{implied:.3f} (from its rate)")
    if q == "accelerators_from_datasheet":
        wl = _workload(r)
        sys = cat.get("storage_systems", r["system"])
        units = int(_num(r, "system_units")) if r.get("system_units") else 1
        c = st.read_ceiling(units * sys.read_gbps, wl.file_bytes, wl.request_bytes,
                            None if sys.read_iops is None else units * sys.read_iops,
                            None if sys.file_opens_per_s is None else units * sys.file_opens_per_s)
        client = None
        if r.get("clients"):
            client = st.client_network_gbps(int(_num(r, "clients")), _num(r, "client_nic_gbit_s"))
        gbps, bound = st.supplied_gbps(c, client)
        n = st.accelerators_supported(gbps, wl)
        unchecked = f"; no {'/'.join(c.unknown)} rate" if c.unknown else ""
        tier = f"{units} x {sys.id}" if units > 1 else sys.id
        clients = "" if client is None else (
            f"; clients {r['clients']} x {r['client_nic_gbit_s']} Gb/s = {client:g} GB/s")
        return float(n), (f"{tier}: {c.gbps:g} GB/s ({c.bound}-bound{unchecked}){clients}; "
                          f"{gbps:g} GB/s ({bound}) / {wl.gbps_at_threshold:.3f} GB/s per "
                          f"accelerator at AU {wl.au:g}")
    if q == "checkpoint_gib":
        arch = cat.model(r["model"])
        p = float(total_params(arch))
        master = r.get("fp32_master", "") != "no"
        b = rel.checkpoint_bytes(p, "bf16", "adam", fp32_master=master)
        layout = ("14 B (16-bit weights + fp32 master + 2 moments)" if master
                  else "10 B (16-bit weights + 2 fp32 moments, no fp32 master)")
        return b / GIB, f"{p / 1e9:.2f}B params x {layout}"
    raise InputError(f"{FILE} row {r['id']}: unknown quantity {q!r}")


def storage_table(cat: Catalog | None = None) -> TableResult:
    """Predict every row of ``validation/storage.csv``."""
    cat = cat or load_catalog(env={})
    rows = []
    for r in read_csv(FILE):
        value, detail = predict(cat, r)
        rows.append(Row(id=r["id"], quantity=r["quantity"], measured=_num(r, "value"),
                        predicted=value, unit=r["unit"], source=r["source"],
                        set=r["set"] or "dev", detail=detail, group=r["quantity"],
                        tags=(("workload", r["workload"] or "checkpoint"),)))
    return TableResult(name="storage", file=FILE, rows=rows, tolerance=0.10)
