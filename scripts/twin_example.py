"""Write examples/twin/: a blueprint (32 x DGX H100 on InfiniBand, two scalable units of 16) and
what the running cluster would show with 24 known faults, in each tool's own format.

    .venv/bin/python scripts/twin_example.py

The faults the twin must find are in examples/twin/faults.json (tests/cli/test_twin_cmd.py
checks `clusterwright twin diff` finds exactly them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from clusterwright.catalog.registry import load_catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.export.fabric import write_fabric
from clusterwright.spec.fabric import FabricRequest
from clusterwright.twin.blueprint import load_plan
from clusterwright.twin.synth import synthesize

ROOT = Path(__file__).resolve().parents[1] / "examples" / "twin"


def main() -> None:
    cat = load_catalog(env={})
    shutil.rmtree(ROOT / "blueprint", ignore_errors=True)
    shutil.rmtree(ROOT / "as-built", ignore_errors=True)
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=32, switch="qm9700", su_hosts=16),
                      cat)
    write_fabric(fab, ROOT / "blueprint")
    syn = synthesize(load_plan(ROOT / "blueprint", cat), ROOT / "as-built", faults=24, seed=21)
    faults = {"injected": syn.injected, "expected_findings": sorted(syn.truth)}
    (ROOT / "faults.json").write_text(json.dumps(faults, indent=1) + "\n")
    print(f"{len(syn.injected)} faults, {len(syn.truth)} expected findings; inputs: "
          + ", ".join(f"{k}={[p.name for p in v]}" for k, v in sorted(syn.inputs.items())))


if __name__ == "__main__":
    main()
