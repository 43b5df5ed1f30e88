"""What a running cluster exposes, read into plain records (``ingest.model``).

One parser per tool, each citing the documentation of its format and naming the file and
line of anything it cannot read (``IngestError``, exit code 2 at the faces):

| input | tool output | parser |
|---|---|---|
| ``lldp`` | ``lldpctl -f json`` / ``-f json0`` (lldpd 1.0.x) | ``ingest.lldp`` |
| ``ibnet`` | ``ibnetdiscover`` topology text | ``ingest.ibnet`` |
| ``slurm`` | ``topology.conf``/``.yaml``, ``scontrol show node``, ``sinfo`` | ``ingest.slurm`` |
| ``k8s`` | ``kubectl get nodes -o json`` | ``ingest.kube`` |
| ``gpu_topo`` | ``nvidia-smi topo -m``, ``nvidia-smi -q`` | ``ingest.gpu`` |
| ``metrics`` | Prometheus text: DCGM, node and SNMP exporter counters | ``ingest.prom`` |
| ``bgp`` | FRR ``show bgp summary json`` | ``ingest.bgp`` |
| ``steps`` | per-rank step times, straggler reports, Megatron-LM lines | ``ingest.steps`` |

This package sits at the faces' level (DESIGN.md): it imports the spec layer's bounded
reader and the hostlist helper, never the twin that compares what it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from clusterwright.ingest.bgp import parse_bgp
from clusterwright.ingest.common import IngestError, gc_paused
from clusterwright.ingest.gpu import parse_gpu
from clusterwright.ingest.ibnet import parse_ibnet
from clusterwright.ingest.kube import parse_kube
from clusterwright.ingest.lldp import parse_lldp
from clusterwright.ingest.model import Observations
from clusterwright.ingest.prom import parse_prom
from clusterwright.ingest.slurm import parse_slurm
from clusterwright.ingest.steps import parse_steps

PARSERS: dict[str, Callable[[str | Path], Observations]] = {
    "lldp": parse_lldp,
    "ibnet": parse_ibnet,
    "slurm": parse_slurm,
    "k8s": parse_kube,
    "gpu_topo": parse_gpu,
    "metrics": parse_prom,
    "bgp": parse_bgp,
    "steps": parse_steps,
}


def read_inputs(inputs: dict[str, list[Path]]) -> Observations:
    """Parse every given file of every input kind into one ``Observations``."""
    obs = Observations()
    with gc_paused():
        for kind, paths in inputs.items():
            if kind not in PARSERS:
                raise IngestError(kind, None, f"unknown input kind {kind!r} (one of "
                                  f"{', '.join(PARSERS)})")
            for p in paths:
                obs.extend(PARSERS[kind](p))
    return obs


__all__ = ["PARSERS", "IngestError", "Observations", "read_inputs"]
