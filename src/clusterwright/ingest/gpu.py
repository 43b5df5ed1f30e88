"""GPUs of each host: ``nvidia-smi topo -m`` and the Fabric section of ``nvidia-smi -q``.

Formats (nvidia-smi(1), driver 550; collected per host as in ``ingest/common.py``):

- ``topo -m``: a tab-separated matrix whose header row names ``GPU0 ... GPUn`` (then NICs
  and ``CPU Affinity``/``NUMA Affinity``/``GPU NUMA ID``); each ``GPUi`` row gives, per
  column, ``X`` (self), ``NV#`` ("Connection traversing a bonded set of # NVLinks") or a PCIe
  path (``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``); a ``Legend:`` and ``NIC Legend:``
  follow. On an HGX H100 every pair shows ``NV18`` (through the NVSwitches); a pair with
  fewer NVLinks, or a PCIe path, has lost NVLinks. Fewer GPU rows than the server has means
  a GPU is missing.
- ``-q``: the ``==============NVSMI LOG==============`` report, one ``GPU <bus id>`` block per
  GPU in index order; its ``Fabric`` section has ``State`` (``Completed`` when the GPU has
  registered with the NVLink fabric manager), ``Status``, ``CliqueId`` and ``ClusterUUID``
  (NVML ``nvmlGpuFabricInfo_t``: "ID of the fabric clique to which this GPU belongs",
  "Uuid of the cluster to which this GPU belongs"). GPUs sharing both are one multi-node
  NVLink domain (a GB200 NVL72 rack by default).
"""

from __future__ import annotations

import re
from pathlib import Path

from clusterwright.ingest.common import IngestError, iter_chunks
from clusterwright.ingest.model import GpuFabric, GpuLinks, Observations

FIELD = "gpu_topo"
_NV = re.compile(r"^NV(\d+)$")
_PCIE = {"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"}
_GPU_BLOCK = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\s*$")
_KV = re.compile(r"^\s+([A-Za-z][A-Za-z0-9 /()_-]*?)\s*:\s*(.*?)\s*$")


def parse_gpu(path: str | Path) -> Observations:
    obs = Observations()
    for c in iter_chunks(path, "nvidia-smi output", FIELD):
        assert c.device is not None
        text = c.text()
        if "NVSMI LOG" in text:
            _query(c.device, c.lines, c.path, obs)
        elif re.search(r"^\s*GPU0(\t|\s{2,}|$)", text, re.MULTILINE):
            _topo(c.device, c.lines, c.path, obs)
        else:
            raise IngestError(c.path, c.first_line, "unknown format: not `nvidia-smi topo -m` "
                              "or `nvidia-smi -q` output", field=FIELD)
    return obs


def _topo(host: str, lines: list[tuple[int, str]], src: str, obs: Observations) -> None:
    header: list[str] | None = None
    rows: dict[int, tuple[int, list[str]]] = {}
    first = lines[0][0] if lines else 1
    for n, t in lines:
        if not t.strip():
            if header is not None and rows:
                break
            continue
        cells = [x.strip() for x in re.split(r"\t+|\s{2,}", t.strip())]
        if header is None:
            if cells and cells[0] == "GPU0":
                header = cells
                first = n
            continue
        if t.strip().startswith("Legend"):
            break
        m = re.match(r"^GPU(\d+)$", cells[0])
        if m:
            rows[int(m.group(1))] = (n, cells[1:])
    if header is None:
        raise IngestError(src, first, "no GPU0 header row (truncated?)", field=FIELD)
    gpus = [i for i, h in enumerate(header) if re.fullmatch(r"GPU\d+", h)]
    ngpu = len(gpus)
    if len(rows) != ngpu:
        missing = sorted(set(range(ngpu)) - set(rows))
        raise IngestError(src, first, f"header names {ngpu} GPUs but rows for "
                          f"{len(rows)} ({', '.join(f'GPU{i}' for i in missing[:4])} "
                          "missing: truncated?)", field=FIELD)
    links: dict[tuple[int, int], int] = {}
    for i, (n, cells) in rows.items():
        if len(cells) < ngpu:
            raise IngestError(src, n, f"GPU{i}: {len(cells)} cells, {ngpu} GPUs in the header "
                              "(truncated?)", field=FIELD)
        for j in range(ngpu):
            v = cells[j]
            if i == j:
                continue
            m = _NV.match(v)
            if m:
                nv = int(m.group(1))
            elif v in _PCIE:
                nv = 0
            else:
                raise IngestError(src, n, f"GPU{i}/GPU{j}: {v!r} is not X, NV# or a PCIe path",
                                  field=FIELD)
            a, b = min(i, j), max(i, j)
            links[(a, b)] = min(nv, links.get((a, b), nv))
    obs.gpu_links.append(GpuLinks(host=host, gpus=ngpu, nvlinks=links, source=src,
                                  line=first))
    obs.report("gpu_topo", src, host, first)


def _query(host: str, lines: list[tuple[int, str]], src: str, obs: Observations) -> None:
    gpu = -1
    in_fabric = False
    fab: dict[str, str] = {}
    start = 0

    def flush() -> None:
        if gpu >= 0 and fab:
            if "ClusterUUID" not in fab or "CliqueId" not in fab:
                raise IngestError(src, start, f"GPU {gpu}: Fabric section without CliqueId "
                                  "and ClusterUUID (truncated?)", field=FIELD)
            obs.gpu_fabric.append(GpuFabric(
                host=host, gpu=gpu, cluster_uuid=fab["ClusterUUID"], clique_id=fab["CliqueId"],
                state=fab.get("State", ""), source=src, line=start))

    seen = False
    for n, t in lines:
        if _GPU_BLOCK.match(t):
            flush()
            gpu += 1
            fab = {}
            in_fabric = False
            seen = True
            continue
        if gpu < 0:
            continue
        indent = len(t) - len(t.lstrip())
        s = t.strip()
        if s == "Fabric" and indent == 4:
            in_fabric = True
            start = n
            continue
        if in_fabric:
            if indent <= 4 and s:
                in_fabric = False
                continue
            m = _KV.match(t)
            if m and indent == 8:
                fab[m.group(1)] = m.group(2)
    flush()
    if not seen:
        raise IngestError(src, lines[0][0] if lines else 1, "`nvidia-smi -q` report without "
                          "GPU blocks (truncated?)", field=FIELD)
    obs.report("gpu_topo", src, host, lines[0][0] if lines else 1)
