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
from collections.abc import Mapping
from pathlib import Path

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.model import reliability as rel
from clusterwright.model import storage as st
from clusterwright.model.params import total_params
from clusterwright.validation.rows import (
    CsvRow,
    NotCoveredError,
    Row,
    TableResult,
    bad,
    choice,
    in_row_unit,
    number,
    optional_integer,
    predict_each,
    read_csv,
    text,
)

FILE = "storage.csv"
GIB = 2.0**30


# Quantity -> the unit it is predicted in (a checkpoint may be in another byte unit).
QUANTITIES = {"accelerators_from_throughput": "accelerators",
              "accelerators_from_datasheet": "accelerators", "checkpoint_gib": "GiB"}


def _num(r: Mapping[str, str], col: str) -> float:
    return number(r, col, positive=True)


def _workload(r: Mapping[str, str]) -> st.DataWorkload:
    key = (text(r, "workload"), text(r, "accelerator"))
    if key not in st.MLPERF_WORKLOADS:
        known = ", ".join(f"{w}/{a}" for w, a in st.MLPERF_WORKLOADS)
        raise NotCoveredError(f"no MLPerf Storage workload {key[0]!r} on {key[1]!r} in the "
                              f"storage model (it has {known})")
    return st.MLPERF_WORKLOADS[key]


def predict(cat: Catalog, r: Mapping[str, str]) -> tuple[float, str]:
    return in_row_unit(cat, r, QUANTITIES, _predict)


def _predict(cat: Catalog, r: Mapping[str, str], q: str) -> tuple[float, str]:
    if q == "accelerators_from_throughput":
        wl = _workload(r)
        sps = _num(r, "throughput_samples_per_s")
        n = math.floor(sps / wl.samples_per_s_at_threshold + 1e-9)
        implied = sps / (_num(r, "value") * wl.batch / wl.compute_s)
        return float(n), (f"{sps:,.0f} samples/s / {wl.samples_per_s_at_threshold:.2f} per "
                          f"accelerator at AU {wl.au:g}; the submission ran at AU "
                          f"{implied:.3f} (from its rate)")
    if q == "accelerators_from_datasheet":
        units = optional_integer(r, "system_units", low=1) or 1
        clients_n = optional_integer(r, "clients", low=1)
        if clients_n is not None and not (r.get("client_nic_gbit_s") or "").strip():
            raise bad(r, "client_nic_gbit_s", "is required with clients")
        wl = _workload(r)
        sys = cat.get("storage_systems", text(r, "system"))
        c = st.read_ceiling(units * sys.read_gbps, wl.file_bytes, wl.request_bytes,
                            None if sys.read_iops is None else units * sys.read_iops,
                            None if sys.file_opens_per_s is None else units * sys.file_opens_per_s)
        client = None
        if clients_n is not None:
            client = st.client_network_gbps(clients_n, _num(r, "client_nic_gbit_s"))
        gbps, bound = st.supplied_gbps(c, client)
        n = st.accelerators_supported(gbps, wl)
        unchecked = f"; no {'/'.join(c.unknown)} rate" if c.unknown else ""
        tier = f"{units} x {sys.id}" if units > 1 else sys.id
        clients = "" if client is None else (
            f"; clients {r['clients']} x {r['client_nic_gbit_s']} Gb/s = {client:g} GB/s")
        return float(n), (f"{tier}: {c.gbps:g} GB/s ({c.bound}-bound{unchecked}){clients}; "
                          f"{gbps:g} GB/s ({bound}) / {wl.gbps_at_threshold:.3f} GB/s per "
                          f"accelerator at AU {wl.au:g}")
    # checkpoint_gib
    master = choice(r, "fp32_master", ("yes", "no"), default="yes") != "no"
    arch = cat.model(text(r, "model"))
    p = float(total_params(arch))
    b = rel.checkpoint_bytes(p, "bf16", "adam", fp32_master=master)
    layout = ("14 B (16-bit weights + fp32 master + 2 moments)" if master
              else "10 B (16-bit weights + 2 fp32 moments, no fp32 master)")
    return b / GIB, f"{p / 1e9:.2f}B params x {layout}"


def storage_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/storage.csv`` (``path``: another file in its format).
    A row the model cannot predict (a storage system or model the catalog lacks, a workload
    or accelerator the storage model does not encode) is not covered, with the reason."""
    cat = cat or load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        value, detail = predict(cat, r)
        return [Row(id=r["id"], quantity=r["quantity"], measured=_num(r, "value"),
                    predicted=value, unit=r["unit"], source=r["source"], set=set_,
                    detail=detail, group=r["quantity"],
                    tags=(("workload", r["workload"] or "checkpoint"),))]

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="storage", file=str(path), rows=rows, tolerance=0.10,
                       not_covered=not_covered)
