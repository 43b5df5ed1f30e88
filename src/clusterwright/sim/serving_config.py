"""What a simulated serving deployment is: one replica's engine (scheduler limits, KV blocks,
admission, speculative decoding), the replicas behind a router, and an optional split into
prefill and decode pools with the KV transfer between them. ``sim/serving.py`` runs them.

Units: seconds, bytes, tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from clusterwright.sim.serving_trace import ServingError

ROUTERS = ("round_robin", "least_outstanding", "cache_aware")
# Replicas behind one router: every step visits each (1,024 x 100,000 requests: about 6 s).
MAX_REPLICAS = 1_024


class StepModel(Protocol):
    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float:
        """Seconds for one engine iteration that processes ``prefill_tokens`` new prompt tokens
        (all prefill chunks in the batch) and one token for each of ``decode_seqs`` running
        sequences, with attention reading ``kv_tokens`` cached tokens in total.
        ``prefill_pairs``: the chunks' attention (query, key) pairs, sum of p (c + p/2) for a
        chunk of p tokens after c cached ones."""
        ...


@dataclass(frozen=True)
class EngineConfig:
    """One replica's engine (vLLM names). ``speculative`` = (draft tokens k, acceptance rate
    a, draft cost factor): each decode iteration yields 1 + a(1 - a^k)/(1 - a) tokens per
    sequence in expectation (Leviathan et al., "Fast Inference from Transformers via
    Speculative Decoding", ICML 2023, eq. 1) and costs ``factor`` x a plain iteration, or
    (factor None) what the step model's ``speculative_extra_s`` adds to it."""

    kv_blocks: int
    block_size: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    # Prefill priority (SGLang's scheduler without mixed chunks): while prompts are waiting or
    # being prefilled, iterations carry only prefill chunks and the running sequences do not
    # decode; vLLM and TensorRT-LLM decode the running sequences in every iteration.
    prefill_first: bool = False
    enable_prefix_caching: bool = False
    # With prefix caching: whether HBM keeps prefixes for reuse (False only to measure the
    # host tier alone, as vLLM's offloading benchmark does), and the host tier: blocks of
    # CPU memory holding prefixes, and the seconds one block takes to load back to HBM
    gpu_prefix_cache: bool = True
    host_kv_blocks: int = 0
    host_block_load_s: float = 0.0
    # "evict": admit while blocks last and preempt when they run out (vLLM); "reserve": admit
    # only when the blocks of the whole request (prompt + output) can be reserved, so nothing
    # is ever preempted (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler).
    admission: str = "evict"
    speculative: tuple[int, float, float | None] | None = None
    # Latency every streamed token carries beyond the iterations: a fixed part (API server,
    # network) and a number of the request's own iterations (engines that return a step's
    # tokens one step late). It shifts TTFT and end-to-end time, not TPOT.
    token_delay_s: float = 0.0
    token_delay_steps: float = 0.0
    # Batch waiting (TensorRT-LLM ``batch_wait_timeout_iters``, and its
    # ``batch_wait_max_tokens_ratio`` x the token budget): while sequences decode, new prompts
    # wait up to this many iterations or until the iteration would carry this many tokens
    batch_wait_iterations: int = 0
    batch_wait_tokens: int = 0
    # Request polling (SGLang ``--scheduler-recv-interval``): while sequences decode, new
    # prompts reach the scheduler every this many decode iterations, and right after an
    # iteration that ran a prefill (1: every iteration)
    recv_interval: int = 1

    def validate(self, name: str = "engine") -> None:
        if self.admission not in ("evict", "reserve"):
            raise ServingError(f"{name}.admission: {self.admission!r} is not evict or reserve")
        for key in ("kv_blocks", "block_size", "max_num_seqs", "max_num_batched_tokens",
                    "recv_interval"):
            if getattr(self, key) < 1:
                raise ServingError(f"{name}.{key}: {getattr(self, key)} must be >= 1")
        if self.host_kv_blocks < 0:
            raise ServingError(f"{name}.host_kv_blocks: {self.host_kv_blocks} must be >= 0")
        if not (self.host_block_load_s >= 0 and math.isfinite(self.host_block_load_s)):
            raise ServingError(f"{name}.host_block_load_s: {self.host_block_load_s} must be "
                               "a finite number of seconds >= 0")
        for key in ("batch_wait_iterations", "batch_wait_tokens"):
            if getattr(self, key) < 0:
                raise ServingError(f"{name}.{key}: {getattr(self, key)} must be >= 0")
        if self.speculative is not None:
            k, a, f = self.speculative
            if k < 1 or not 0.0 <= a <= 1.0 or (f is not None and not f > 0):
                raise ServingError(
                    f"{name}.speculative: {self.speculative} needs draft tokens >= 1, "
                    "acceptance rate in [0, 1] and a positive cost factor")
        per_seq = 1 + (self.speculative[0] if self.speculative else 0)
        if self.max_num_batched_tokens < self.max_num_seqs * per_seq:
            raise ServingError(
                f"{name}.max_num_batched_tokens: {self.max_num_batched_tokens} is below "
                f"max_num_seqs x {per_seq} = {self.max_num_seqs * per_seq} tokens, so a full "
                "decode batch would not fit the budget; raise it or lower max_num_seqs")

    def tokens_per_step(self) -> float:
        """Expected tokens per sequence per decode iteration (1 without speculation)."""
        if self.speculative is None:
            return 1.0
        k, a, _ = self.speculative
        return 1.0 + (float(k) if a >= 1.0 else a * (1.0 - a**k) / (1.0 - a))


@dataclass(frozen=True)
class Disaggregation:
    """Separate prefill and decode pools. After its prefill, a request's KV cache
    (``kv_bytes_per_token`` x prompt tokens) crosses its prefill replica's link (one transfer
    at a time, FIFO) before the request joins a decode replica."""

    prefill_replicas: int
    decode_replicas: int
    kv_bytes_per_token: float
    link_bytes_per_s: float
    link_latency_s: float = 0.0
    prefill_engine: EngineConfig | None = None  # None = the cluster's engine
    # Step times of the prefill replicas when their layout differs from the decode
    # replicas' (None: the model passed to ``simulate``)
    prefill_model: StepModel | None = None
    # The client's first token comes with the decode replica's first streamed chunk, this
    # many tokens after the prefill's token (``ServingEngine.disagg_first_token``); 0 or 1:
    # with the prefill's token
    first_chunk_tokens: int = 0


@dataclass(frozen=True)
class ClusterConfig:
    engine: EngineConfig
    replicas: int = 1
    router: str = "round_robin"  # or "least_outstanding", "cache_aware"
    disaggregation: Disaggregation | None = None
    # cache_aware (SGLang's router, sgl-model-gateway): a prompt goes to the replica that
    # holds its prefix when that prefix is at least ``cache_threshold`` of the prompt, unless
    # the replicas' outstanding requests differ by more than ``balance_abs`` and the busiest
    # has ``balance_rel`` times the idlest's: then, as for a prompt without a held prefix, to
    # the least loaded. The catalog's assumptions give the router's defaults.
    cache_threshold: float = 0.3
    balance_abs: int = 64
    balance_rel: float = 1.5

    def validate(self) -> None:
        self.engine.validate()
        if self.router not in ROUTERS:
            raise ServingError(f"router: {self.router!r} is not one of {', '.join(ROUTERS)}")
        if not (0.0 <= self.cache_threshold <= 1.0 and self.balance_abs >= 0
                and self.balance_rel >= 1.0):
            raise ServingError("router: cache_threshold must be within 0-1, balance_abs >= 0 "
                               "and balance_rel >= 1", field="router")
        if self.replicas < 1:
            raise ServingError(f"replicas: {self.replicas} must be >= 1")
        if self.replicas > MAX_REPLICAS:
            raise ServingError(f"replicas: {self.replicas:,} simulated replicas; at most "
                               f"{MAX_REPLICAS:,} (each adds work to every step)",
                               field="replicas")
        d = self.disaggregation
        if d is not None:
            if d.prefill_replicas < 1 or d.decode_replicas < 1:
                raise ServingError("disaggregation: needs >= 1 prefill and >= 1 decode replica")
            if not d.link_bytes_per_s > 0 or d.kv_bytes_per_token < 0 or d.link_latency_s < 0:
                raise ServingError(
                    "disaggregation: link_bytes_per_s must be > 0, kv_bytes_per_token and "
                    "link_latency_s >= 0")
            if d.first_chunk_tokens < 0:
                raise ServingError("disaggregation.first_chunk_tokens: "
                                   f"{d.first_chunk_tokens} must be >= 0")
            if d.prefill_engine is not None:
                d.prefill_engine.validate("disaggregation.prefill_engine")
