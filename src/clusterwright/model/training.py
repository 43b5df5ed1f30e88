"""Training step time: compute, communication as a timeline, the pipeline schedule.

One call evaluates any number of parallel layouts at once (numpy arrays of tp, pp, dp, ...),
or one layout as floats (``model/xp``), with the same formulas. The step follows how
Megatron-LM/Megatron-Core, FSDP and DeepSpeed run it (Narayanan et al., SC21; Korthikanti et
al. 2022; Zhao et al. 2023; Rajbhandari et al. 2020):

- per micro-batch and pipeline stage, each layer's compute (``model/train_compute``);
- tensor parallelism: the collectives around each layer's GEMMs (all-reduce, or all-gather and
  reduce-scatter with sequence parallelism), exposed unless the framework pipelines them with
  the GEMMs (``overlap.chunked_overlap``);
- context parallelism: a ring of K/V exchanges hidden under the block attention computed
  meanwhile (``overlap.ring_steps``), or an all-gather of K/V before attention;
- expert parallelism: dispatch and combine all-to-alls around each MoE layer, exposed, or
  hidden under the paired micro-batch of 1F1B-overlap or DualPipe (``overlap.paired_overlap``);
- the pipeline: m micro-batches plus the schedule's bubble (1F1B/interleaved (p-1)/v, zero
  bubble, DualPipe), the busiest stage setting the pace, point-to-point sends;
- data parallelism: gradient buckets reduced while the last backward runs, the exposed tail
  from ``overlap.bucketed_tail`` (and the distributed optimizer's parameter all-gather under
  the next forward); ZeRO-3/FSDP gathers every layer's weights forward and backward and
  reduce-scatters its gradients per micro-batch, hidden only where the layer's compute covers
  them (``overlap.prefetched_layers``), on a sharding group (hybrid sharding) or with ZeRO++'s
  quantized and node-local collectives;
- every collective costs what NCCL's own model says at its size and rank count
  (``model/collectives``), so latency grows with the group and small messages are slow;
- LoRA fine-tuning (``Job.lora``): the layers' compute as ``model/train_compute`` says
  (no weight gradients for frozen weights); gradients, their reduction, the parameter
  all-gather and the optimizer cover the adapters only (``_JobConstants.train_*``); ZeRO-3
  still gathers the frozen weights (in FP8 when the job computes in FP8).

What each overlap hides is derived, not assumed: ``StepEstimate.comm_s`` holds the total time
of each family of collectives, so hidden = 1 - exposed / total can be printed. The breakdown
sums to the step time exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import ModelArch
from clusterwright.catalog.stacks import Stack
from clusterwright.model import overlap as ov
from clusterwright.model.collectives import (
    allgather_s,
    allreduce_s,
    alltoall_s,
    moe_dispatch_s,
    nodes_spanned,
    p2p_s,
    reducescatter_s,
)
from clusterwright.model.flops import attention_dims
from clusterwright.model.flops import kv_width as kv_width_of
from clusterwright.model.layouts import Layouts, stage_layers
from clusterwright.model.memory import ACT_BYTES, layout_memory
from clusterwright.model.precision import Precision, bytes_per
from clusterwright.model.recompute import FULL
from clusterwright.model.train_compute import LayerTimes, head_times, layer_times
from clusterwright.model.train_job import Job
from clusterwright.model.xp import ArrayOps, Ops, ScalarOps

F = np.ndarray
# Adam step, per local parameter: read fp32 grad, master, m, v (16 B); write master, m, v and
# the 16-bit weight (14 B).
ADAM_BYTES_PER_PARAM = 30.0
# The parts of a step, in the order reports show them; they sum to step_time_s.
BREAKDOWN_FIELDS = (
    "compute_s",
    "tp_comm_s",
    "pp_comm_s",
    "pp_bubble_s",
    "dp_comm_exposed_s",
    "cp_comm_s",
    "ep_comm_s",
    "optimizer_s",
    "straggler_s",
    "link_wait_s",
    "other_s",
)
# Families of collectives whose total time (hidden or not) ``comm_s`` reports.
COMM_FAMILIES = ("tp", "cp", "ep", "pp", "dp")


@dataclass(frozen=True)
class StepEstimate:
    """Per-layout results (arrays, or floats on the scalar path). Times in seconds; the
    breakdown sums to ``step_time_s``."""

    compute_s: Any
    tp_comm_s: Any
    pp_comm_s: Any
    pp_bubble_s: Any
    dp_comm_exposed_s: Any
    cp_comm_s: Any
    ep_comm_s: Any
    optimizer_s: Any
    straggler_s: Any
    link_wait_s: Any  # transfers sharing one link: the step waits for the link's total
    other_s: Any
    step_time_s: Any
    model_flops: Any  # per step, whole job
    hardware_flops: Any  # per step, recompute included
    memory_bytes: Any  # per GPU, worst pipeline stage
    memory_parts: dict[str, Any] = field(default_factory=dict)
    comm_s: dict[str, Any] = field(default_factory=dict)  # total per family, hidden or not

    def breakdown_sum(self) -> Any:
        return sum(getattr(self, k) for k in BREAKDOWN_FIELDS)

    def hidden_share(self, family: str, exposed: Any) -> Any:
        """Share of a family's communication the schedule hid (1 - exposed / total)."""
        total = self.comm_s[family]
        return np.where(np.asarray(total) > 0,
                        1.0 - np.asarray(exposed) / np.maximum(np.asarray(total), 1e-30), 1.0)


def micro_batches(job: Job, lay: Layouts, ops: Ops = ArrayOps) -> Any:
    """Micro-batches per pipeline per step (0 where the batch does not divide)."""
    m = job.global_batch / lay.dp / lay.micro_batch
    r = ops.floor(m + 0.5)
    return ops.where((abs(m - r) < 1e-9) & (m >= 1.0), r, 0.0)


def gemm_efficiency(stack: Stack, flops: ArrayLike) -> F:
    """Achieved fraction of the 16-bit peak for one GEMM of ``flops`` FLOPs."""
    xs = np.array([x for x, _ in stack.gemm_efficiency])
    ys = np.array([y for _, y in stack.gemm_efficiency])
    f = np.maximum(np.asarray(flops, dtype=float), 1.0)
    return np.asarray(np.interp(np.log10(f), xs, ys))


def estimate(job: Job, lay: Layouts, ops: Ops | None = None,
             mem: dict[str, Any] | None = None) -> StepEstimate:
    """Step time, breakdown, FLOPs and per-GPU memory for every layout in ``lay``. One layout
    runs on Python floats (no numpy overhead) and comes back as one-element arrays. ``mem``:
    ``memory(job, lay)`` when the caller has it already (arrays, one entry per layout)."""
    if ops is None and len(lay) == 1 and np.ndim(lay.tp):
        est = _step(job, lay.scalar(0), ScalarOps)
        return _as_arrays(est)
    return _step(job, lay, ops or ArrayOps, mem)


def _as_arrays(est: StepEstimate) -> StepEstimate:
    def arr(v: Any) -> F:
        return np.array([float(v)])

    values: dict[str, Any] = {f.name: arr(getattr(est, f.name)) for f in fields(est)
                              if f.name not in ("memory_parts", "comm_s")}
    return StepEstimate(
        **values,
        memory_parts={k: arr(v) for k, v in est.memory_parts.items()},
        comm_s={k: arr(v) for k, v in est.comm_s.items()},
    )


def _mix(d: Any, e: Any, frac: float) -> Any:
    return d if frac == 0.0 else d * (1.0 - frac) + e * frac


def _remote_domains(a: ModelArch, ops: Ops) -> Callable[[Any], Any] | None:
    """Expected distinct remote domains a token of ``a`` reaches over ``domains`` domains of
    the EP group under group-limited routing (None: uniform routing, the default)."""
    if not a.route_groups or not a.route_groups_per_token:
        return None
    groups, per, k = float(a.route_groups), float(a.route_groups_per_token), float(a.top_k)

    def reach(domains: Any) -> Any:
        # Contiguous groups over contiguous domains. With whole groups per domain, a domain is
        # missed when none of the token's chosen groups lies in it: C(G - G/D, g) / C(G, g).
        per_domain = groups / domains
        miss = ops.full(domains, 1.0)
        for i in range(int(per)):
            miss = miss * ops.maximum(groups - per_domain - i, 0.0) / (groups - i)
        hit_whole = domains * (1.0 - miss)
        # A group spanning several domains: the uniform spread, capped by the groups' span.
        uniform = domains * (1.0 - (1.0 - 1.0 / domains) ** k)
        hit_split = ops.minimum(uniform, per * domains / groups)
        hit = ops.where(per_domain >= 1.0, hit_whole, hit_split)
        # By symmetry each domain, the sender's own included, is hit with probability hit/D.
        return hit * (domains - 1.0) / domains

    return reach


def _when(ops: Ops, cond: Any, value: Callable[[], Any]) -> Any:
    """``value()``, except that one layout (floats) skips work a ``where`` would discard."""
    if ops is ArrayOps or cond:
        return value()
    return 0.0


def _step(job: Job, lay: Layouts, ops: Ops, mem: dict[str, Any] | None = None
          ) -> StepEstimate:
    a, st, net, o, K = job.arch, job.stack, job.net, job.opts, job.constants
    cj = job.compute
    t, p, d, c, e = lay.tp, lay.pp, lay.dp, lay.cp, lay.ep
    b, v, z, rc, sp = lay.micro_batch, lay.interleave, lay.zero, lay.recompute, lay.sp
    m = micro_batches(job, lay, ops)
    m1 = ops.maximum(m, 1.0)
    s = float(job.seq_len)
    h = float(a.hidden)
    T = b * s / c  # tokens per micro-batch on one GPU (CP splits the sequence)
    mf = K.moe_frac
    dense = layer_times(ops, cj, T, t, e, sp, rc, m1, False)
    moe: LayerTimes = layer_times(ops, cj, T, t, e, sp, rc, m1, True) if a.is_moe else dense
    head_f, head_b = head_times(ops, cj, T, t)

    # --- tensor parallelism: collectives around the GEMMs -------------------------------
    act = T * h * ACT_BYTES  # the micro-batch's hidden states on one GPU (whole sequence part)
    sp_on = sp > 0
    ag = allgather_s(act, t, 1.0, net, ops)
    ar = allreduce_s(act, t, 1.0, net, ops)
    # With SP: all-gather before QKV and FC1, reduce-scatter after the projection and FC2;
    # without: an all-reduce after the projection and FC2. MoE layers move their tokens with
    # the dispatcher instead of the MLP pair (expert TP 1).
    c_in = ops.where(sp_on, ag, 0.0)
    c_out = ops.where(sp_on, ag, ar)
    gq, gp, g1, g2 = dense.gemm_tp_f
    mq, mp, _, _ = moe.gemm_tp_f
    tp_dense_f = tp_dense_b = 2.0 * (c_in + c_out)
    tp_moe_f = tp_moe_b = c_in + c_out
    # TE userbuffers pipeline the sequence-parallel all-gather/reduce-scatter with their
    # GEMMs: Megatron allows --tp-comm-overlap only with --sequence-parallel, and the
    # buffers are shared over CUDA IPC, inside one NVLink domain.
    on = sp_on & (t <= net.domain_gpus)
    if o.tp_overlap and (ops is ArrayOps or on):
        tp_dense_f = ops.where(on, ov.chunked_overlap(ops, c_in, gq, t)
                               + ov.chunked_overlap(ops, c_out, gp, t)
                               + ov.chunked_overlap(ops, c_in, g1, t)
                               + ov.chunked_overlap(ops, c_out, g2, t), tp_dense_f)
        tp_dense_b = ops.where(on, ov.chunked_overlap(ops, c_in, 2.0 * gq, t)
                               + ov.chunked_overlap(ops, c_out, 2.0 * gp, t)
                               + ov.chunked_overlap(ops, c_in, 2.0 * g1, t)
                               + ov.chunked_overlap(ops, c_out, 2.0 * g2, t), tp_dense_b)
        tp_moe_f = ops.where(on, ov.chunked_overlap(ops, c_in, mq, t)
                             + ov.chunked_overlap(ops, c_out, mp, t), tp_moe_f)
        tp_moe_b = ops.where(on, ov.chunked_overlap(ops, c_in, 2.0 * mq, t)
                             + ov.chunked_overlap(ops, c_out, 2.0 * mp, t), tp_moe_b)
    tp_total_layer = _mix(4.0 * (c_in + c_out), 2.0 * (c_in + c_out), mf)
    tp_f = _mix(tp_dense_f, tp_moe_f, mf)
    tp_b = _mix(tp_dense_b, tp_moe_b, mf)
    full = rc == FULL
    Ls = stage_layers(float(a.layers), p, v, ops)
    # Megatron's block method recomputes the first N layers of each model chunk only.
    full_frac = ops.where(full, lay.rc_frac, 1.0)
    tp_layer = tp_f + tp_b + ops.where(full, full_frac * tp_f, 0.0)
    tp_total_layer = tp_total_layer * (1.0 + 0.5 * ops.where(full, full_frac, 0.0))

    # --- context parallelism ----------------------------------------------------------------
    if a.is_mla:
        assert a.qk_nope_head_dim and a.qk_rope_head_dim and a.v_head_dim
        kv_width = float(a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim))
    else:
        kv_width = kv_width_of(a)
    kv = T * kv_width / t * ACT_BYTES  # this GPU's K and V of one micro-batch
    attn_f = _mix(dense.attn_f, moe.attn_f, mf)
    attn_b = _mix(dense.attn_b, moe.attn_b, mf)
    cp_cross = t * c > net.domain_gpus
    has_cp = c > 1
    if o.cp_comm == "allgather":
        cp_f_total = allgather_s(kv * c, c, t, net, ops)
        cp_b_total = reducescatter_s(kv * c, c, t, net, ops)
        cp_f, cp_b = cp_f_total, cp_b_total
    elif o.cp_comm == "a2a":
        # Ulysses: all-to-all Q, K, V before attention and the output after, both ways.
        qkv_b = T * (attention_dims(a)[0] + kv_width) / t * ACT_BYTES
        cp_f_total = alltoall_s(qkv_b, c, t, net, ops) + alltoall_s(act / t, c, t, net, ops)
        cp_b_total = cp_f_total
        cp_f, cp_b = cp_f_total, cp_b_total
    else:
        hop_f = p2p_s(kv, cp_cross, net, ops)
        hop_b = p2p_s(2.0 * kv, cp_cross, net, ops)  # K, V and their gradients
        cp_f_total = (c - 1.0) * hop_f
        cp_b_total = (c - 1.0) * hop_b
        cp_f = ov.ring_steps(ops, hop_f, attn_f / c, c - 1.0)
        cp_b = ov.ring_steps(ops, hop_b, attn_b / c, c - 1.0)
    cp_f = ops.where(has_cp, cp_f, 0.0)
    cp_b = ops.where(has_cp, cp_b, 0.0)
    # Recomputing core attention (selective, or the full block's share) repeats its exchange.
    rec_cp = ops.where(full, full_frac, ops.where(ops.floor(rc / 1.0) % 2.0 > 0, 1.0, 0.0))
    cp_layer = cp_f + cp_b + rec_cp * cp_f
    cp_total_layer = ops.where(has_cp, cp_f_total * (1.0 + rec_cp) + cp_b_total, 0.0)

    # --- expert parallelism -------------------------------------------------------------------
    if a.is_moe:
        Tm = T / t
        # Expert TP 1 with Megatron-Core's expert rank order (etp-ep-dp): an EP group is ep
        # consecutive GPUs, folded over the tensor-, context- and data-parallel ranks.
        ep_stride = 1.0
        dedup = o.ep_dispatcher == "deepep"
        reach = _remote_domains(a, ops) if dedup else None
        w_e = float(a.expert_width)  # LatentMoE: tokens travel at the latent width
        d_bytes = w_e * (1.0 if o.dispatch_fp8 else ACT_BYTES)
        disp = moe_dispatch_s(d_bytes, Tm, a.top_k, e, ep_stride, net, ops, dedup, reach)
        comb = moe_dispatch_s(w_e * ACT_BYTES, Tm, a.top_k, e, ep_stride, net, ops, dedup,
                              reach)
        a2a_f = (disp + comb) * o.expert_imbalance * job.ep_comm_factor
        # Backward: the gradients of the combine go out as a dispatch and come back (16-bit).
        a2a_b = 2.0 * comb * o.expert_imbalance * job.ep_comm_factor
        moe_recompute = ops.floor(rc / 8.0) % 2.0 > 0
        a2a_total = a2a_f + a2a_b + ops.where(full | moe_recompute, a2a_f, 0.0)
        if o.ep_overlap == "none":
            ep_exposed = a2a_total
        else:
            # Unpaired micro-batches: warm-up forwards and cool-down backwards of the
            # schedule (one of each without a pipeline); DualPipe feeds both ends at once.
            warm = ops.maximum(1.0, (p - 1.0) / v)
            if o.ep_overlap == "dualpipe":
                warm = ops.maximum(1.0, p / 2.0 - 1.0)
            unpaired = ops.minimum(1.0, warm / m1)
            paired_compute = moe.fwd + moe.bwd + moe.recompute
            ep_exposed = ov.paired_overlap(ops, a2a_total, paired_compute, unpaired)
        ep_exposed = ops.where(e > 1, ep_exposed, 0.0)
        ep_total_layer = ops.where(e > 1, a2a_total, 0.0)
    else:
        ep_exposed = ep_total_layer = 0.0 * T

    # --- one micro-batch on the busiest stage -----------------------------------------------
    n_moe_stage = Ls * mf
    # A layer's pass never takes less than launching its kernels (the stack's host floor).
    lf_d = st.layer_launch_s
    # An MoE layer's floor: its fixed launches and syncs, and a GEMM group per local expert.
    local_experts = float(a.experts) / e if a.is_moe else 0.0 * e
    lf_m = st.layer_launch_s + st.moe_layer_launch_s + st.moe_expert_launch_s * local_experts
    rec = ops.where(full, full_frac, 1.0)
    d_fwd = ops.maximum(dense.fwd, lf_d)
    d_bwd = ops.maximum(dense.bwd + rec * dense.recompute, 2.0 * lf_d)
    m_fwd = ops.maximum(moe.fwd, lf_m)
    m_bwd = ops.maximum(moe.bwd + rec * moe.recompute, 2.0 * lf_m)
    fwd_c = Ls * _mix(d_fwd, m_fwd, mf) + head_f
    bwd_c = Ls * _mix(d_bwd, m_bwd, mf) + head_b
    wgrad = Ls * _mix(dense.wgrad, moe.wgrad, mf)
    tp_mb = Ls * tp_layer
    cp_mb = Ls * cp_layer
    ep_mb = n_moe_stage * ep_exposed

    # p2p between stages: activations forward, gradients backward, v chunks each; with
    # sequence parallelism each TP rank sends its 1/t (scatter-gather).
    p2p_bytes = act / ops.where(sp_on, t, 1.0)
    crosses = t * c * d >= net.domain_gpus
    sends = 2.0 * v * p2p_s(p2p_bytes, crosses, net, ops) * job.pp_comm_factor
    pp_total_mb = ops.where(p > 1, sends, 0.0)
    pp_share = ops.where(o.p2p_overlap, ops.minimum(1.0, (p - 1.0) / (v * m1)), 1.0)
    pp_mb = pp_total_mb * pp_share

    # --- ZeRO-3 / FSDP: every layer's weights gathered, gradients reduce-scattered ----------
    dp_ranks = d * c
    is_z3 = z >= 3
    shard = ops.where(lay.shard > 0, ops.minimum(lay.shard, dp_ranks), dp_ranks)
    w_b = bytes_per(Precision.bf16 if job.precision in (Precision.fp8, Precision.fp4)
                    else job.precision)
    # Frozen LoRA base weights are gathered as stored (FP8 in an FP8 job).
    gather_b = bytes_per(frozen_weight_precision(job)) if job.lora is not None else w_b
    grad_b = bytes_per(job.grad_precision)
    layer_params = K.layer_dense / t + K.layer_expert / e
    layer_trained = K.train_layer_dense / t + K.train_layer_expert / e
    # ZeRO++: qwZ gathers int8 weights; hpZ gathers the backward copy inside the node; qgZ
    # reduces gradients in int4 (Wang et al., ZeRO++, arXiv 2306.10209, section 3).
    node_group = ops.minimum(shard, ops.maximum(1.0, net.domain_gpus / t))
    zpp = 1.0 if o.zeropp else 0.0
    # A framework that gathers tensor by tensor issues k collectives per layer and pass, each
    # moving 1/k of the layer and each paying the ring's latency across the whole group.
    k = float(st.features.zero3_collectives_per_layer)
    piece = layer_params / k / st.features.zero3_busbw_fraction
    piece_g = layer_trained / k / st.features.zero3_busbw_fraction
    ag_f = _when(ops, is_z3, lambda: k * allgather_s(piece * gather_b * (1.0 - 0.5 * zpp), shard,
                                                     t, net, ops))
    ag_b = _when(ops, is_z3, lambda: k * allgather_s(
        piece * gather_b * (1.0 - 0.5 * zpp), ops.where(zpp > 0, node_group, shard), t, net,
        ops))
    rs_b = _when(ops, is_z3, lambda: k * reducescatter_s(piece_g * grad_b * (1.0 - 0.75 * zpp),
                                                         shard, t, net, ops))
    ag_f = ag_f * job.dp_comm_factor
    ag_b = ag_b * job.dp_comm_factor
    rs_b = rs_b * job.dp_comm_factor
    layer_f_wall = (fwd_c - head_f) / ops.maximum(Ls, 1.0) + (tp_f + cp_f)
    layer_b_wall = (bwd_c - head_b) / ops.maximum(Ls, 1.0) + (tp_b + cp_b)
    z3_f = ov.prefetched_layers(ops, layer_f_wall, ag_f, Ls, o.prefetch) - Ls * layer_f_wall
    z3_b = ov.prefetched_layers(ops, layer_b_wall, ag_b + rs_b, Ls, o.prefetch) - Ls * layer_b_wall
    z3_on = is_z3 & (shard > 1)
    z3_mb = ops.where(z3_on, z3_f + z3_b, 0.0)
    # A framework that fetches synchronously also stalls the layer on the host, each pass:
    # time the step loses beside its communication, not communication that overlap hides.
    z3_host_mb = ops.where(z3_on, Ls * st.features.zero3_fetch_s
                           * (2.0 + ops.where(full, full_frac, 0.0)), 0.0)
    z3_total_mb = ops.where(z3_on, Ls * (ag_f + ag_b + rs_b), 0.0)

    per_mb = fwd_c + bwd_c + tp_mb + cp_mb + ep_mb + pp_mb + z3_mb + z3_host_mb

    # --- the pipeline schedule ------------------------------------------------------------------
    pipelined = p > 1
    if o.schedule == "dualpipe":
        # DualPipe (DeepSeek-V3 report, Table 2): (p/2 - 1)(F&B + B - 3W), F&B ~ F + B.
        bubble = ops.maximum(p / 2.0 - 1.0, 0.0) * ops.maximum(per_mb + bwd_c - 3.0 * wgrad, 0.0)
    elif o.schedule == "zb":
        # Zero bubble ZB-H1 (Qi et al., arXiv 2401.10241): (p - 1)(F + B - 2W), per chunk.
        bubble = (p - 1.0) / v * ops.maximum(per_mb - 2.0 * wgrad, fwd_c)
    else:
        bubble = (p - 1.0) / v * per_mb
    bubble = ops.where(pipelined, bubble, 0.0)

    # --- data parallelism: gradient buckets, parameter gathers ------------------------------
    # Trained parameters: every weight, or the LoRA adapters.
    dense_local = K.train_dense / p / t
    expert_local = K.train_expert / p / e  # whole experts (expert TP 1) over ep GPUs
    edp = ops.maximum(t * dp_ranks / e, 1.0)  # GPUs holding the same experts
    local = dense_local + expert_local
    bucket = ops.maximum(o.bucket_params, 1.0e6 * dp_ranks)
    nb = ops.maximum(ops.ceil(local / bucket), 1.0)
    dense_share = dense_local / ops.maximum(local, 1.0)

    def per_bucket(fn: Any, width: float, ranks_d: Any, ranks_e: Any) -> Any:
        # Every bucket holds dense and expert gradients in proportion; each goes to its
        # own group (experts: the smaller expert-data-parallel group).
        per = local / nb * width
        return nb * (fn(per * dense_share, ranks_d, t, net, ops)
                     + fn(per * (1.0 - dense_share), ranks_e, e, net, ops))

    # ZeRO-1/2 reduce-scatter to the shards, unless the run all-reduces and keeps its shard
    sharded_rs = (z >= 1) & (o.grad_reduce != "allreduce")
    grad_ar = _when(ops, ops is ArrayOps or not sharded_rs,
                    lambda: per_bucket(allreduce_s, grad_b, dp_ranks, edp))
    grad_rs = _when(ops, sharded_rs, lambda: per_bucket(reducescatter_s, grad_b, dp_ranks, edp))
    param_ag = _when(ops, (z >= 1) & (z < 3), lambda: per_bucket(allgather_s, w_b, dp_ranks, edp))
    grad_comm = ops.where(sharded_rs, grad_rs, grad_ar) * job.dp_comm_factor
    # Gradients of the last micro-batch become final while stage 0's last backward runs; with
    # interleaving the chunks finish one after another through the cool-down.
    window = bwd_c / v * (1.0 + (v - 1.0) * ops.minimum(p, m1))
    grad_tail = ov.bucketed_tail(ops, grad_comm, nb, window) if o.grad_overlap else grad_comm
    # The distributed optimizer gathers the updated parameters; with overlap the next
    # step's first forward waits only for each bucket it needs. With interleaving that holds
    # for the first model chunk only: Megatron-Core's schedule launches chunk k+1's gather at
    # chunk k's first micro-batch (pipeline_parallel/schedules.py, forward_step_helper's
    # param_sync_func, at the same time on every stage), so each later chunk's gather runs
    # behind the min(p, m) forwards of the chunk before it.
    param_comm = ops.where((z >= 1) & (z < 3), param_ag * job.dp_comm_factor, 0.0)
    if o.param_overlap:
        chunk_ag = param_comm / v
        param_tail = (ov.bucketed_tail(ops, chunk_ag, ops.maximum(nb / v, 1.0), fwd_c / v)
                      + (v - 1.0) * ops.maximum(chunk_ag - ops.minimum(p, m1) * fwd_c / v, 0.0))
    else:
        param_tail = param_comm
    # Hybrid sharding: one all-reduce of the sharded gradients across the replicas per step.
    replicas = dp_ranks / shard
    hsdp_on = z3_on & (replicas > 1)
    hsdp_comm = ops.where(hsdp_on, _when(ops, hsdp_on, lambda: allreduce_s(
        local * grad_b / shard, replicas, t * shard, net, ops)) * job.dp_comm_factor, 0.0)
    hsdp_tail = ov.bucketed_tail(ops, hsdp_comm, nb, window) if o.grad_overlap else hsdp_comm
    dp_tail = ops.where(is_z3, hsdp_tail, grad_tail + param_tail)
    dp_tail = ops.where(dp_ranks > 1, dp_tail, 0.0)
    dp_total = ops.where(dp_ranks > 1,
                       ops.where(is_z3, hsdp_comm, grad_comm + param_comm), 0.0) + m * z3_total_mb

    # --- optimizer, overheads ----------------------------------------------------------------
    params_local = dense_local / ops.where(z >= 1, dp_ranks, 1.0) + expert_local / ops.where(
        z >= 1, edp, 1.0)
    optimizer = params_local * ADAM_BYTES_PER_PARAM / cj.hbm
    if o.offload == "optimizer":
        # ZeRO-Offload's split (Ren et al., arXiv 2101.06840): the fp32 gradient (4 B) goes
        # to the CPU over the coherent link while the updated 16-bit weight (2 B) comes back,
        # and the CPU's Adam reads and writes master, m, v and the gradient in its own memory
        # (28 B); the slower of link and CPU memory sets the time, not overlapped with compute
        # (the one-step-delayed update is off).
        hm = job.gpu.host_memory
        link = hm.link_gbps_per_direction * 1e9 if hm else 1.0
        cpu_bw = hm.memory_bandwidth_gbps * 1e9 if hm else 1.0
        optimizer = params_local * (max(4.0 / link, 28.0 / cpu_bw) + 2.0 / cj.hbm)

    compute = m * (fwd_c + bwd_c)
    tp_comm = m * tp_mb
    cp_comm = m * cp_mb
    ep_comm = m * ep_mb
    pp_comm = m * pp_mb
    dp_exposed = dp_tail + m * z3_mb
    # What overlapping costs: hidden collectives take SMs and memory bandwidth from the
    # compute beside them (the stack's overlap_slowdown per second hidden).
    tp_total = m * Ls * tp_total_layer
    cp_total = m * Ls * cp_total_layer
    ep_total = m * n_moe_stage * ep_total_layer
    pp_total = m * pp_total_mb
    slow = st.overlap_slowdown
    if slow:
        tp_comm = tp_comm + slow * ops.maximum(tp_total - tp_comm, 0.0)
        cp_comm = cp_comm + slow * ops.maximum(cp_total - cp_comm, 0.0)
        ep_comm = ep_comm + slow * ops.maximum(ep_total - ep_comm, 0.0)
        dp_exposed = dp_exposed + slow * ops.maximum(dp_total - dp_exposed, 0.0)
    dp_exposed = dp_exposed + m * z3_host_mb
    other = ops.full(compute, st.step_overhead_s)
    # Synchronous training waits at every collective for the slowest GPU of the job: its
    # compute runs sigma sqrt(2 ln N) slower than the median's (Sinha et al., SC22).
    n_gpus = t * p * d * c
    straggler = (compute + bubble) * job.gpu_speed_cv * ops.sqrt(2.0 * ops.log(ops.maximum(n_gpus,
                                                                                    1.0)))

    step = (compute + tp_comm + pp_comm + bubble + dp_exposed + cp_comm + ep_comm + optimizer
            + straggler + other)
    # Transfers that share a link do not both run at full bandwidth: whatever the schedule
    # hides, a GPU's NVLink and its NIC each carry their families' whole traffic within the
    # step. Families by where their group runs (inside the NVLink domain or across it); a
    # step shorter than a link's total waits for the link.
    cross_tp = t > net.domain_gpus
    cross_dp = nodes_spanned(ops, dp_ranks, t, net) > 1
    cross_ep = nodes_spanned(ops, e, 1.0, net) > 1
    on_net = (ops.where(cross_tp, tp_total, 0.0) + ops.where(cp_cross, cp_total, 0.0)
              + ops.where(cross_ep, ep_total, 0.0) + ops.where(crosses, pp_total, 0.0)
              + ops.where(cross_dp, dp_total, 0.0))
    on_nvlink = (tp_total + cp_total + ep_total + pp_total + dp_total) - on_net
    link_wait = ops.maximum(ops.maximum(on_net, on_nvlink) - step, 0.0)
    step = step + link_wait

    tokens = job.global_batch * s
    model_flops = tokens * K.flops_per_token
    hw_per_token = ops.where(full, K.hw_flops_full,
                           ops.where(ops.floor(rc) % 2.0 > 0, K.hw_flops_selective,
                                   K.flops_per_token))
    if mem is None:
        mem = memory(job, lay, m, ops)
    return StepEstimate(
        compute, tp_comm, pp_comm, bubble, dp_exposed, cp_comm, ep_comm, optimizer, straggler,
        link_wait, other, step, ops.full(step, model_flops), tokens * hw_per_token,
        mem["total"], mem,
        {"tp": tp_total, "cp": cp_total, "ep": ep_total, "pp": pp_total, "dp": dp_total},
    )


def frozen_weight_precision(job: Job) -> Precision:
    """How LoRA's frozen base weights are stored: FP8 in an FP8 job (Transformer Engine FP8
    parameters; an FP4 job keeps FP8 weights too), else the job's 16-bit storage dtype."""
    if job.precision in (Precision.fp8, Precision.fp4):
        return Precision.fp8
    return job.precision


def memory(job: Job, lay: Layouts, m: Any = None, ops: Ops = ArrayOps) -> dict[str, Any]:
    """Per-GPU memory (bytes) of the pipeline rank that needs the most, by part: the one
    training-memory model (``memory.layout_memory``) with the job's dtypes and options."""
    if m is None:
        m = micro_batches(job, lay, ops)
    storage = Precision.bf16 if job.precision in (Precision.fp8, Precision.fp4) else job.precision
    mem = layout_memory(
        job.arch, lay, job.seq_len, m, storage, job.grad_precision, "adam",
        job.opts.flash_attention, job.dropout, job.precision in (Precision.fp8, Precision.fp4),
        job.reserve_bytes, job.opts.prefetch, job.opts.schedule == "dualpipe", ops,
        lora=job.lora, frozen=frozen_weight_precision(job),
    )
    out = {
        "weights": mem.weights,
        "gradients": mem.gradients,
        "optimizer": mem.optimizer,
        "activations": mem.activations,
        "reserve": mem.reserve,
        "total": mem.total,
        "host": 0.0 * mem.total,
    }
    if job.opts.offload == "optimizer":
        # The optimizer's state lives in CPU memory (the offload tier), not in HBM.
        out["host"] = mem.optimizer
        out["optimizer"] = 0.0 * mem.optimizer
        out["total"] = mem.total - mem.optimizer
    return out
