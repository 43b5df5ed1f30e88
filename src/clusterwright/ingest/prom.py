"""GPU and port metrics in the Prometheus text exposition format.

Format (Prometheus "Exposition formats", text format 0.0.4): UTF-8 lines; ``#`` starts a
comment, ``# HELP name text`` and ``# TYPE name counter|gauge|histogram|summary|untyped``
describe a metric; a sample is ``name{label="value",...} value [timestamp]`` with label
values escaping ``\\``, ``"`` and newline, and values that may be ``NaN``, ``+Inf``,
``-Inf``. Blank lines are ignored.

The metrics read, each under the twin's name for what it measures (``METRICS``):

- NVIDIA DCGM exporter (default-counters.csv and the profiling set; labels ``gpu``,
  ``UUID``, ``device``, ``modelName``, ``Hostname``): SM clock, temperature, power, GPU
  utilization, tensor-pipe activity, XID errors, clock-throttle reasons, thermal and power
  violation time, PCIe replays.
- Port counters from the Prometheus node exporter's ``infiniband`` collector
  (``node_infiniband_*{device="mlx5_0",port="1"}``: rate, state, symbol errors, link
  downed, link error recovery, receive errors), its ``netclass``/``netdev`` collectors
  (``node_network_speed_bytes``, ``node_network_up``, receive/transmit errors), its
  ``ethtool`` collector for PFC pause frames and ECN marks (``node_ethtool_{rx,tx}_prioN_pause``,
  mlx5's ``np_ecn_marked_roce_packets``), and the SNMP exporter's IF-MIB (``ifHighSpeed``
  in Mb/s, ``ifOperStatus``, ``ifInErrors``, ``ifOutErrors``, labelled ``ifName``).

The device a sample belongs to is its ``Hostname``, ``hostname``, ``node`` or ``instance``
label (a port and a DNS domain removed), else the device the file or section is named
after (a direct scrape of one host has no such label). The port or GPU is its ``gpu``,
``ifName``, ``interface`` or ``device`` label (with ``port`` appended for InfiniBand when
it is not 1).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from clusterwright.ingest.common import IngestError, iter_chunks, short_name
from clusterwright.ingest.model import Observations, Sample

FIELD = "metrics"

# raw metric name -> (twin metric, scale to the twin's unit)
METRICS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_SM_CLOCK": ("gpu_sm_clock_mhz", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("gpu_temp_c", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("gpu_power_w", 1.0),
    "DCGM_FI_DEV_GPU_UTIL": ("gpu_util_pct", 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("gpu_tensor_active", 1.0),
    "DCGM_FI_PROF_SM_ACTIVE": ("gpu_sm_active", 1.0),
    "DCGM_FI_DEV_XID_ERRORS": ("gpu_xid", 1.0),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("gpu_throttle_reasons", 1.0),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("gpu_throttle_reasons", 1.0),
    "DCGM_FI_DEV_THERMAL_VIOLATION": ("gpu_thermal_violation_ns", 1.0),
    "DCGM_FI_DEV_POWER_VIOLATION": ("gpu_power_violation_ns", 1.0),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("gpu_pcie_replays", 1.0),
    "node_infiniband_rate_bytes_per_second": ("port_speed_gbps", 8e-9),
    "node_network_speed_bytes": ("port_speed_gbps", 8e-9),
    "ifHighSpeed": ("port_speed_gbps", 1e-3),
    "node_infiniband_state_id": ("port_ib_state", 1.0),  # 4 = ACTIVE
    "node_network_up": ("port_up", 1.0),
    "ifOperStatus": ("port_oper_status", 1.0),  # 1 = up (IF-MIB)
    "node_infiniband_symbol_error_total": ("port_errors", 1.0),
    "node_infiniband_link_downed_total": ("port_link_downed", 1.0),
    "node_infiniband_link_error_recovery_total": ("port_errors", 1.0),
    "node_infiniband_port_receive_errors_total": ("port_errors", 1.0),
    "node_network_receive_errs_total": ("port_errors", 1.0),
    "node_network_transmit_errs_total": ("port_errors", 1.0),
    "node_network_carrier_changes_total": ("port_link_downed", 1.0),
    "ifInErrors": ("port_errors", 1.0),
    "ifOutErrors": ("port_errors", 1.0),
    "node_ethtool_np_ecn_marked_roce_packets": ("port_ecn_marked", 1.0),
}
_PAUSE = re.compile(r"^node_ethtool_(?:rx|tx)_prio\d_pause(?:_total)?$")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_DEVICE_LABELS = ("Hostname", "hostname", "node", "instance", "exported_instance")
_ITEM_LABELS = ("gpu", "ifName", "interface", "device", "ifDescr")


def _labels(block: str, src: str, n: int) -> dict[str, str]:
    body = block[1:-1]
    out: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if m is None:
            if body[pos:].strip() == "":
                break
            raise IngestError(src, n, f"malformed label set {block[:80]!r}", field=FIELD)
        out[m.group(1)] = (m.group(2).replace("\\n", "\n").replace('\\"', '"')
                           .replace("\\\\", "\\"))
        pos = m.end()
    return out


def _value(text: str, src: str, n: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise IngestError(src, n, f"sample value {text[:40]!r} is not a number",
                          field=FIELD) from None


def parse_prom(path: str | Path) -> Observations:
    obs = Observations()
    for c in iter_chunks(path, "metrics file", FIELD):
        default = c.device
        samples = 0
        ignored: set[str] = set()
        for n, raw in c.lines:
            line = raw.strip()
            if not line:
                continue
            if line[0] == "#":
                parts = line.split(None, 3)
                if len(parts) >= 2 and parts[1] == "TYPE" and (
                        len(parts) < 4 or parts[3] not in ("counter", "gauge", "histogram",
                                                          "summary", "untyped")):
                    raise IngestError(c.path, n, f"bad TYPE line {line[:80]!r}", field=FIELD)
                continue
            m = _SAMPLE.match(line)
            if m is None:
                raise IngestError(c.path, n, f"not a Prometheus sample line: {line[:80]!r} "
                                  "(truncated, or not the text exposition format)",
                                  field=FIELD)
            samples += 1
            name = m.group(1)
            if name in METRICS:
                metric, scale = METRICS[name]
            elif _PAUSE.match(name):
                metric, scale = "port_pfc_pause", 1.0
            else:
                ignored.add(name)
                continue
            labels = _labels(m.group(2), c.path, n) if m.group(2) else {}
            value = _value(m.group(3), c.path, n)
            if math.isnan(value):
                continue
            dev = next((labels[k] for k in _DEVICE_LABELS if labels.get(k)), default or "")
            dev = short_name(dev.rsplit(":", 1)[0] if dev.count(":") == 1 else dev)
            item = next((labels[k] for k in _ITEM_LABELS if k in labels), "")
            if name.startswith("node_infiniband") and labels.get("port", "1") != "1":
                item = f"{item}/{labels['port']}"
            obs.samples.append(Sample(metric=metric, device=dev, item=item,
                                      value=value * scale, source=c.path, line=n,
                                      raw_name=name))
            obs.report("metrics", c.path, dev, n)
        if samples == 0:
            raise IngestError(c.path, c.first_line, "no samples: not Prometheus text "
                              "exposition output, or empty", field=FIELD)
        if ignored:
            obs.notes.append(f"{c.path}: {len(ignored)} metric name(s) not used by the twin "
                             f"(e.g. {sorted(ignored)[0]})")
    return obs
