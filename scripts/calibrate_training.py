"""Fit a training stack's few efficiency constants on its development rows, once.

For one stack of catalog/data/stacks.yaml, this varies the constants that are properties of
the GPU and its software, never of a row, and keeps those that minimise the mean absolute
percentage error over the stack's development rows of validation/training.csv:

- gemm_scale: the GEMM efficiency curve scaled as a whole (its shape, efficiency rising
  with GEMM size, stays that of cuBLAS measurements);
- fp8_ratio: FP8 GEMMs' efficiency over 16-bit GEMMs' (the tensor cores' and kernels'
  property: fit it only where measured FP8-vs-BF16 pairs exist, with --only fp8_ratio);
- gemm_shift: the curve shifted along log10(FLOPs), i.e. how large a GEMM must be before it
  saturates the tensor cores (searched only with --only);
- attention: the attention kernel's efficiency (forward; backward at 0.8 of it);
- layer_launch_us, moe_layer_launch_us, moe_expert_launch_us: the host floor of one
  layer's pass (an MoE layer's: a fixed part and a part per expert the GPU holds);
- overlap_slowdown: compute lost per second of hidden communication;
- zero3_busbw: the share of bus bandwidth the framework's ZeRO-3 collectives reach;
- zero3_fetch_ms: the host time a synchronous ZeRO-3 parameter fetch adds per layer and
  pass (searched only with --only).

Only the constants a stack's rows exercise are searched (no FP8 rows: gemm8_scale stays; no
MoE rows: moe_layer_launch_us stays). The search is coordinate descent over fixed grids,
three rounds, deterministic. It prints the values and the YAML lines to paste; held-out rows
are printed too, for information, never fitted. Run:

    python scripts/calibrate_training.py STACK_ID [--only NAME,NAME] [--metric METRIC]
        [--data accelerators.csv]

``--data`` reads another table of ``validation/`` in training.csv's format (the accelerators
table of TPU, Trainium, AMD and Gaudi runs).

``--metric`` fits on the development rows of that metric only (``fp8_speedup``: the FP8
over BF16 pairs, which fix ``fp8_ratio`` whatever the overall efficiency). ``--only`` limits
the search to the named constants: a stack that runs the same kernels on
the same GPU as a calibrated one (DeepSpeed's ZeRO-3 on Selene next to Megatron's A100
stack) keeps that stack's compute constants and fits only what its framework changes.
"""

from __future__ import annotations

import sys
from typing import Any

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import Stack
from clusterwright.errors import ClusterwrightError
from clusterwright.validation.rows import read_csv
from clusterwright.validation.training_table import _train_row

GRIDS: dict[str, tuple[float, ...]] = {
    # Up to 1.4: a TPU's MXUs reach a larger share of peak on big matmuls than cuBLAS on H100
    # (MaxText's 61-67 % MFU with full recompute on v5e is 81-89 % of peak in hardware FLOPs).
    # Down to 0.3: Gaudi 3's Optimum Habana runs sustain about half the prior curve in BF16.
    "gemm_scale": tuple(0.30 + 0.025 * i for i in range(45)),
    # Above 1 only where FP8's datasheet peak equals 16-bit's (Gaudi 3, see stacks.py).
    "fp8_ratio": tuple(0.50 + 0.025 * i for i in range(61)),
    "gemm_shift": (-0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8),
    # FlashAttention-2 reaches ~35 % of H100 peak, FlashAttention-3 ~75 % forward (Shah et
    # al., arXiv 2407.08608): the kernel efficiency stays in that range.
    "attention": (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70),
    "layer_launch_us": (0.0, 100.0, 200.0, 400.0, 600.0, 800.0),
    "moe_layer_launch_us": (0.0, 250.0, 500.0, 1000.0, 1500.0, 2000.0, 3000.0),
    # Per local expert: a cuBLAS launch per GEMM and the Python slicing and casts around it,
    # tens of microseconds (TE issue #1499).
    "moe_expert_launch_us": (0.0, 10.0, 20.0, 40.0, 60.0, 80.0, 120.0, 160.0, 240.0),
    "overlap_slowdown": (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4),
    "zero3_busbw": (0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3, 0.5, 1.0),
    # DeepSpeed's synchronous fetch: a few ms per layer on A100 in 2021 (issue #1174: 420 ms
    # over ZeRO-2's forward for 64 layers), more where the fetch also cuts a lazy graph.
    "zero3_fetch_ms": (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
                       13.0, 14.0, 16.0, 18.0, 20.0),
    # Per-step host work outside the layers: data loader, gradient-norm and loss syncs,
    # logging (seconds lost each step whatever the model).
    "step_overhead_ms": (0.0, 10.0, 20.0, 40.0, 60.0, 80.0),
}


# Constants searched together, on the product of their grids: the two parts of an MoE
# layer's host floor trade off inside one max() (a fixed part and a part per local expert),
# so a search that moves one at a time stays where the fixed part alone binds.
JOINT = {"moe_layer_launch_us": "moe_expert_launch_us"}
PARTNER_OF = {v: k for k, v in JOINT.items()}


def apply(base: Stack, p: dict[str, float]) -> Stack:
    """``base`` with the constants in ``p`` (curves scaled and shifted as a whole)."""

    def curve(pts: Any, scale: float) -> list[tuple[float, float]]:
        return [(x + p.get("gemm_shift", 0.0), min(1.0, y * scale)) for x, y in pts]

    upd: dict[str, Any] = {
        "gemm_efficiency": curve(base.gemm_efficiency, p.get("gemm_scale", 1.0)),
    }
    if "fp8_ratio" in p and base.fp8_gemm_ratio is not None:
        upd["fp8_gemm_ratio"] = p["fp8_ratio"]
    if "attention" in p:
        upd["attention_efficiency"] = p["attention"]
        upd["attention_bwd_efficiency"] = 0.8 * p["attention"]
    if "layer_launch_us" in p:
        upd["layer_launch_s"] = p["layer_launch_us"] * 1e-6
    if "moe_layer_launch_us" in p:
        upd["moe_layer_launch_s"] = p["moe_layer_launch_us"] * 1e-6
    if "moe_expert_launch_us" in p:
        upd["moe_expert_launch_s"] = p["moe_expert_launch_us"] * 1e-6
    if "overlap_slowdown" in p:
        upd["overlap_slowdown"] = p["overlap_slowdown"]
    if "step_overhead_ms" in p:
        upd["step_overhead_s"] = p["step_overhead_ms"] * 1e-3
    feats: dict[str, Any] = {}
    if "zero3_busbw" in p:
        feats["zero3_busbw_fraction"] = p["zero3_busbw"]
    if "zero3_fetch_ms" in p:
        feats["zero3_fetch_s"] = p["zero3_fetch_ms"] * 1e-3
    if feats:
        upd["features"] = base.features.model_copy(update=feats)
    return base.model_copy(update=upd)


def errors(cat: Catalog, rows: list[dict[str, str]]) -> list[float]:
    out = []
    for r in rows:
        try:
            pred = _train_row(cat, r)[0]
        except ClusterwrightError:
            pred = float("inf")
        out.append((pred - float(r["value"])) / float(r["value"]))
    return out


def mape(errs: list[float]) -> float:
    return sum(abs(e) for e in errs) / max(len(errs), 1)


def _names(cat: Catalog, base: Stack, dev: list[dict[str, str]]) -> list[str]:
    """The constants a stack's development rows exercise."""
    names = ["gemm_scale", "attention", "layer_launch_us", "overlap_slowdown",
             "step_overhead_ms"]
    if any(r["metric"] == "fp8_speedup" for r in dev):
        names.insert(1, "fp8_ratio")  # measured FP8-vs-BF16 pairs pin the FP8 kernels
    moe_models = {m.id for m in cat.all("models") if m.is_moe}
    if any(r["model"] in moe_models for r in dev):
        names += ["moe_layer_launch_us", "moe_expert_launch_us"]
    if any(r.get("zero") == "3" for r in dev) and base.features.zero3_busbw_fraction < 1.0:
        names.append("zero3_busbw")
    return names


def _start(base: Stack) -> dict[str, float]:
    return {
        "gemm_scale": 1.0, "gemm_shift": 0.0,
        "fp8_ratio": base.fp8_gemm_ratio or 1.0,
        "attention": base.attention_efficiency,
        "layer_launch_us": base.layer_launch_s * 1e6,
        "moe_layer_launch_us": base.moe_layer_launch_s * 1e6,
        "moe_expert_launch_us": base.moe_expert_launch_s * 1e6,
        "overlap_slowdown": base.overlap_slowdown,
        "zero3_busbw": base.features.zero3_busbw_fraction,
        "zero3_fetch_ms": base.features.zero3_fetch_s * 1e3,
        "step_overhead_ms": base.step_overhead_s * 1e3,
    }


def main(stack_ids: list[str], only: list[str] | None = None, metric: str | None = None,
         shared: list[str] | None = None, data: str = "training.csv"
         ) -> dict[str, dict[str, float]]:
    """Fit ``stack_ids`` together: constants named in ``shared`` take one value for all
    (host-side costs of one software release on two GPUs), the rest one value per stack;
    the objective is the MAPE over all their development rows. Returns the fitted
    constants per stack (the script's grid units)."""
    cat = load_catalog(env={})
    bases = {sid: cat.stack(sid) for sid in stack_ids}
    rows = [r for r in read_csv(data) if r.get("stack") in bases]
    dev = [r for r in rows if r["set"] == "dev" and (metric is None or r["metric"] == metric)]
    held = [r for r in rows if r["set"] != "dev"]
    if not dev:
        sys.exit(f"{', '.join(stack_ids)}: no development rows in validation/{data}")
    shared = shared or []
    if only:
        unknown = [n for n in [*only, *shared] if n not in GRIDS]
        if unknown:
            sys.exit(f"--only/--shared: unknown constants {unknown} (known: {', '.join(GRIDS)})")
    # Coordinates: (stack, name) for per-stack constants, ("*", name) for shared ones.
    coords: list[tuple[str, str]] = []
    for sid, base in bases.items():
        names = only or _names(cat, base, [r for r in dev if r["stack"] == sid])
        coords += [(sid, n) for n in names if n not in shared]
    coords += [("*", n) for n in shared]
    p = {sid: _start(base) for sid, base in bases.items()}
    for n in shared:  # shared constants start from the first stack's value
        for sid in bases:
            p[sid][n] = p[stack_ids[0]][n]

    def score(q: dict[str, dict[str, float]]) -> float:
        for sid, base in bases.items():
            cat.entries["stacks"][sid] = apply(base, q[sid])
        return mape(errors(cat, dev))

    best = score(p)
    print(f"{', '.join(stack_ids)}: {len(dev)} development rows, start MAPE {100 * best:.2f}%")
    searched = set(coords)
    for rnd in range(3):
        for sid, name in coords:
            partner = JOINT.get(name)
            if name in JOINT.values() and (sid, PARTNER_OF[name]) in searched:
                continue  # searched with its partner
            pairs = ([(v, w) for v in GRIDS[name] for w in GRIDS[partner]]
                     if partner and (sid, partner) in searched else
                     [(v, None) for v in GRIDS[name]])
            for v, w in pairs:
                q = {k: dict(d) for k, d in p.items()}
                for target in (bases if sid == "*" else [sid]):
                    q[target][name] = v
                    if partner and w is not None:
                        q[target][partner] = w
                sc = score(q)
                if sc < best - 1e-9:
                    best, p = sc, q
        shown = [(sid if sid != "*" else "shared", name,
                  p[stack_ids[0] if sid == "*" else sid][name]) for sid, name in coords]
        print(f"  round {rnd + 1}: MAPE {100 * best:.2f}%  "
              + "; ".join(f"{who} {name} {v:g}" for who, name, v in shown))
    score(p)
    dev_err = errors(cat, dev)
    held_err = errors(cat, held)

    def show(rs: list[dict[str, str]], es: list[float]) -> None:
        for r, e in zip(rs, es, strict=True):
            print(f"    {r['set'][:4]} {r['id'][:70]:70s} {100 * e:+6.1f}%")

    show(dev, dev_err)
    show(held, held_err)
    print(f"  dev MAPE {100 * mape(dev_err):.2f}%, max {100 * max(map(abs, dev_err)):.1f}%"
          + (f"; held-out MAPE {100 * mape(held_err):.2f}%" if held else ""))
    for sid, base in bases.items():
        st = apply(base, p[sid])
        print(f"  {sid}:")
        print("    gemm_efficiency:", [[round(x, 2), round(y, 3)] for x, y in st.gemm_efficiency])
        if st.fp8_gemm_ratio:
            print("    fp8_gemm_ratio:", round(st.fp8_gemm_ratio, 3))
        print(f"    attention_efficiency: {st.attention_efficiency:g}, attention_bwd_efficiency: "
              f"{st.attention_bwd_efficiency:g}, layer_launch_s: {st.layer_launch_s:g}, "
              f"moe_layer_launch_s: {st.moe_layer_launch_s:g}, moe_expert_launch_s: "
              f"{st.moe_expert_launch_s:g}, overlap_slowdown: "
              f"{st.overlap_slowdown:g}, zero3_busbw_fraction: "
              f"{st.features.zero3_busbw_fraction:g}, step_overhead_s: {st.step_overhead_s:g}")
    return p


if __name__ == "__main__":
    args = sys.argv[1:]
    flags: dict[str, str] = {}
    for flag in ("--only", "--metric", "--shared", "--data"):
        if flag in args:
            i = args.index(flag)
            flags[flag] = args[i + 1]
            args = args[:i] + args[i + 2:]
    if not args:
        sys.exit(__doc__)
    only = flags["--only"].split(",") if "--only" in flags else None
    shared = flags["--shared"].split(",") if "--shared" in flags else None
    main(args, only, flags.get("--metric"), shared, flags.get("--data", "training.csv"))
