"""One serving replica of the request-level simulator: its waiting queue, running requests,
paged KV blocks, prefix cache and iteration events (the scheduler ``sim/serving.py`` describes:
vLLM V1's order, the decode-step and token counters that make a decode iteration O(1), and
fast-forwarded blocks of identical decode iterations).

Units: seconds, tokens, KV blocks.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque
from typing import Protocol

import numpy as np
import numpy.typing as npt

from clusterwright.sim.engine import Engine, Event
from clusterwright.sim.serving_config import Disaggregation, EngineConfig, StepModel
from clusterwright.sim.serving_trace import ServingError


class ReplicaHost(Protocol):
    """What a replica reads from and reports to the simulation that runs it."""

    eng: Engine
    model: StepModel
    pd: Disaggregation | None
    fast_forward: bool
    first_s: npt.NDArray[np.float64]
    preemptions: int
    prompt_tokens: int
    hit_tokens: int
    host_hit_tokens: int

    def handoff(self, rep: Replica, r: Req) -> None: ...

    def first_token(self, i: int, now: float) -> None: ...

    def finish(self, r: Req) -> None: ...

    def record_steps(self, k: int, mean_dt: float, n: int) -> None: ...

    def sample(self, now: float) -> None: ...


class Req:
    """One request as the replica serving it holds it (slots: every iteration touches it)."""

    __slots__ = ("committed", "computed", "entry", "g", "hit", "i", "input", "key", "loaded",
                 "output", "pid", "remote", "share", "shared", "target", "ver")

    def __init__(self, i: int, inp: int, out: int, pid: int, share: int) -> None:
        self.i = i  # arrival index: the preemption order
        self.input = inp
        self.output = out
        self.pid = pid
        self.share = share  # prompt tokens shareable under pid
        self.g = 0  # output tokens produced (offset from the replica's G while decoding)
        self.target = inp  # tokens the next prefill must have computed (prompt + outputs)
        self.computed = 0
        self.key = 0  # context length minus the replica's G, while decoding
        self.shared = 0  # blocks referenced from the prefix cache (not owned)
        self.hit = 0
        self.loaded = 0  # blocks of the hit loaded from the host tier (owned, not shared)
        self.entry: list[int] | None = None  # [blocks, refs] of the prefix-cache entry used
        self.ver = 0
        self.remote = False  # KV arrives from a prefill replica: no prefill here
        self.committed = 0  # blocks reserved for the whole request (admission "reserve")


class Replica:
    """One engine: waiting queue, running requests, KV blocks, prefix cache, step events."""

    def __init__(self, sim: ReplicaHost, cfg: EngineConfig, role: str) -> None:
        self.sim = sim
        self.eng = sim.eng
        self.cfg = cfg
        self.reserve = cfg.admission == "reserve"
        self.committed = 0  # blocks reserved by admitted requests (admission "reserve")
        self.role = role  # "both", "prefill" or "decode"
        self.bs = cfg.block_size
        self.nblocks = cfg.kv_blocks
        self.max_seqs = cfg.max_num_seqs
        self.budget = cfg.max_num_batched_tokens
        self.chunked = cfg.chunked_prefill
        self.prefill_first = cfg.prefill_first
        self.caching = cfg.enable_prefix_caching
        self.gpu_cache = cfg.gpu_prefix_cache
        # The host tier (vLLM's OffloadingConnector, SGLang's HiCache, TensorRT-LLM's host
        # cache): a prefix's blocks are written through to CPU memory once computed (the copy
        # is asynchronous and not on any request's path), kept least recently used first out,
        # and loaded back over the host link when HBM no longer holds them
        self.host_cap = cfg.host_kv_blocks if cfg.enable_prefix_caching else 0
        self.host: OrderedDict[int, int] = OrderedDict()  # prefix id -> blocks held
        self.host_used = 0
        self.block_load_s = cfg.host_block_load_s
        self.y = cfg.tokens_per_step()
        self.spec_k = cfg.speculative[0] if cfg.speculative else 0
        # A factor on a decode iteration, or None: the step model's own speculative cost
        self.factor = cfg.speculative[2] if cfg.speculative else 1.0
        pm = sim.pd.prefill_model if sim.pd is not None and role == "prefill" else None
        model = pm or sim.model
        self.step_s = model.step_s
        self.spec_extra = getattr(model, "speculative_extra_s", None)
        if self.factor is None and self.spec_extra is None:
            raise ServingError(f"{role}.speculative: no cost factor, and the step model "
                               "cannot cost the drafts itself")
        self.waiting: deque[Req] = deque()
        self.prefilling: list[Req] = []
        self.decode: dict[int, Req] = {}
        self.heap: list[tuple[int, int, int, Req]] = []  # (G at finish, i, ver, req)
        self.count = [0] * self.bs  # decoding requests by (context - G) mod block_size
        self.kvrel = 0  # sum over decoding requests of (context - G)
        self.S = 0
        self.G = 0
        self.used = 0  # blocks owned by requests
        self.cache: OrderedDict[int, list[int]] = OrderedDict()  # prefix id -> [blocks, refs]
        self.cache_blocks = 0
        self.evictable = 0  # cached blocks no running request references
        self.busy = False
        self.ev: Event | None = None
        self.ff: tuple[float, int, float, float, int] | None = None  # t0, k, step0, slope, N
        self.outstanding = 0
        self.link_free_s = 0.0
        self.pending = 0  # tokens of decode growth already allocated in this iteration
        self.bw_iters = cfg.batch_wait_iterations
        self.bw_tokens = cfg.batch_wait_tokens
        self.bw_count = 0  # iterations new prompts have been held (batch waiting)
        # Request polling (SGLang's SchedulerRecvSkipper): arrivals wait in ``inbox`` until
        # the scheduler polls; ``recv_count`` is its counter (1 a decode iteration, past the
        # interval after one that ran a prefill)
        self.recv = cfg.recv_interval
        self.inbox: deque[Req] = deque()
        self.recv_count = 0

    # ---- blocks -------------------------------------------------------------------------
    def g_of(self, s: int) -> int:
        """Token counter after ``s`` decode iterations (floor of s x tokens per step)."""
        return s if self.y == 1.0 else int(s * self.y + 1e-9)

    def demand(self, dg: int) -> int:
        """New blocks the decoding requests need to gain ``dg`` tokens each from now."""
        n = len(self.decode)
        q, rem = divmod(dg, self.bs)
        d = q * n
        g, bs, c = self.G, self.bs, self.count
        for j in range(rem):
            d += c[-(g + j) % bs]
        return d

    def max_advance(self, avail: int) -> int:
        """Largest token gain every decoding request can make within ``avail`` blocks."""
        n = len(self.decode)
        q = avail // n
        left = avail - q * n
        dg = q * self.bs
        g, bs, c = self.G, self.bs, self.count
        while True:
            need = c[-(g + dg) % bs]
            if need > left:
                return dg
            left -= need
            dg += 1

    def free(self) -> int:
        return self.nblocks - self.used - self.cache_blocks

    def alloc(self, x: int) -> bool:
        if x <= self.nblocks - self.used - self.cache_blocks:
            self.used += x
            return True
        if x > self.nblocks - self.used - self.cache_blocks + self.evictable:
            return False
        for pid in list(self.cache):  # evict least recently used unreferenced prefixes
            ent = self.cache[pid]
            if ent[1] == 0:
                del self.cache[pid]
                self.cache_blocks -= ent[0]
                self.evictable -= ent[0]
                if x <= self.nblocks - self.used - self.cache_blocks:
                    break
        self.used += x
        return True

    def release(self, r: Req, ctx: int) -> None:
        """Free ``r``'s own blocks (``ctx`` tokens held) and its prefix-cache reference."""
        bs = self.bs
        if r.committed:
            self.committed -= r.committed
            r.committed = 0
        self.used -= -(-ctx // bs) - r.shared
        self.drop_entry(r)

    def drop_entry(self, r: Req) -> None:
        """Give up ``r``'s prefix-cache reference (unreferenced entries become evictable)."""
        ent = r.entry
        if ent is not None:
            ent[1] -= 1
            if ent[1] == 0:
                self.evictable += ent[0]
        r.entry = None
        r.shared = 0

    def prefix_hit(self, r: Req) -> None:
        """On admission of a fresh prefill: reuse cached full blocks of ``r``'s prefix, from
        HBM (shared) or, beyond what HBM holds, loaded from the host tier (``r.loaded``
        blocks, which ``r`` owns)."""
        most = min(r.share // self.bs, (r.target - 1) // self.bs)
        if most <= 0:
            return
        ent = self.cache.get(r.pid) if self.gpu_cache else None
        hbm = min(ent[0], most) if ent is not None else 0
        host = min(self.host.get(r.pid, 0), most) if self.host_cap else 0
        if host > hbm:
            self.host.move_to_end(r.pid)
            r.loaded = host - hbm
        if ent is not None and hbm > 0:
            self.cache.move_to_end(r.pid)
            if ent[1] == 0:
                self.evictable -= ent[0]
            ent[1] += 1
            r.entry = ent
            r.shared = hbm
        hit = max(hbm, host)
        r.computed = hit * self.bs
        r.hit = hit * self.bs

    def undo_hit(self, r: Req) -> None:
        self.drop_entry(r)
        r.computed = 0
        r.hit = 0
        r.loaded = 0

    def store_host(self, pid: int, blocks: int) -> None:
        """Write ``blocks`` leading blocks of prefix ``pid`` through to the host tier,
        evicting its least recently used prefixes to make room."""
        blocks = min(blocks, self.host_cap)
        old = self.host.pop(pid, 0)
        self.host_used -= old
        blocks = max(blocks, old)
        while self.host and self.host_used + blocks > self.host_cap:
            _, b = self.host.popitem(last=False)
            self.host_used -= b
        self.host[pid] = blocks
        self.host_used += blocks

    def register_prefix(self, r: Req) -> None:
        """After ``r``'s prefill: its full shared-prefix blocks become a cache entry (and go
        to the host tier)."""
        s = min(r.share, r.input) // self.bs
        if self.host_cap and s > 0:
            self.store_host(r.pid, s)
        if not self.gpu_cache:
            return
        ent = self.cache.get(r.pid)
        if ent is None:
            if s <= 0:
                return
            ent = [s, 1]
            self.cache[r.pid] = ent
            self.cache_blocks += s
            self.used -= s
            r.entry, r.shared = ent, s
        elif ent is r.entry and s > ent[0]:
            grow = s - ent[0]
            ent[0] = s
            self.cache_blocks += grow
            self.used -= grow
            r.shared = s

    # ---- decode set ---------------------------------------------------------------------
    def join(self, r: Req, ctx: int) -> None:
        """``r`` (``ctx`` tokens cached, ``r.g`` produced) starts decoding."""
        G = self.G
        r.key = ctx - G
        self.count[r.key % self.bs] += 1
        self.kvrel += r.key
        r.g -= G  # offset: produced = g + G
        self.decode[r.i] = r
        r.ver += 1
        heapq.heappush(self.heap, (r.output - r.g, r.i, r.ver, r))

    def leave(self, r: Req) -> None:
        self.count[r.key % self.bs] -= 1
        self.kvrel -= r.key
        del self.decode[r.i]
        r.g += self.G
        r.ver += 1

    def preempt_one(self) -> Req | None:
        """Preempt the most recently arrived running request (recompute later)."""
        best: Req | None = None
        for r in self.decode.values():
            if best is None or r.i > best.i:
                best = r
        for r in self.prefilling:
            if best is None or r.i > best.i:
                best = r
        if best is None:
            return None
        if best.i in self.decode:
            ctx = best.key + self.G + self.pending
            self.leave(best)
        else:
            ctx = best.computed + best.key  # key: the chunk allocated in this iteration
            self.prefilling.remove(best)
        self.release(best, ctx)
        best.target = best.input + best.g
        best.computed = 0
        best.hit = 0
        best.remote = False
        self.waiting.appendleft(best)
        self.sim.preemptions += 1
        return best

    # ---- events -------------------------------------------------------------------------
    def enqueue(self, r: Req) -> None:
        if self.recv > 1 and self.busy and not r.remote:
            # The scheduler takes it at its next poll: cut a running block there
            self.inbox.append(r)
            if self.ff is not None:
                self.cut_at_poll(self.eng.now)
            return
        was_empty = not self.waiting
        self.waiting.append(r)
        if not self.busy:
            self.busy = True
            self.eng.at(self.eng.now, self.schedule)
        elif was_empty and self.ff is not None:
            self.truncate(self.eng.now)

    def passed_polls(self) -> None:
        """At an iteration boundary, before the requests that finish there: the polls the
        iterations reached with nothing to take reset the counter (the finished requests'
        next prompts arrive after the boundary's poll)."""
        if self.recv > 1 and not self.inbox and self.recv_count >= self.recv:
            self.recv_count %= self.recv

    def poll(self) -> None:
        """At an iteration boundary: move the inbox to the waiting queue when the polling
        counter has reached the interval (SGLang resets it at every poll, empty or not)."""
        self.passed_polls()
        if self.inbox and self.recv_count >= self.recv:
            self.take_inbox()

    def take_inbox(self) -> None:
        self.recv_count = 0
        self.waiting.extend(self.inbox)
        self.inbox.clear()

    def cut_at_poll(self, now: float) -> None:
        """Cut the running fast-forward block at the first poll at or after ``now``."""
        assert self.ff is not None
        t0, k = self.ff[0], self.ff[1]
        j = self.recv - self.recv_count
        while j < k and self.block_span(j) < now - t0:
            j += self.recv
        self.cut_block(j)

    def truncate(self, now: float) -> None:
        """Cut the running fast-forward block at the first step boundary at or after now."""
        assert self.ff is not None and self.ev is not None
        t0, k, s0, d, _ = self.ff
        e = now - t0
        span = self.block_span
        if abs(d) < 1e-15 * s0:
            j = math.ceil(e / s0)
        else:  # root of d/2 j^2 + (s0 - d/2) j = e
            b = s0 - d / 2
            disc = b * b + 2 * d * e
            j = math.ceil((-b + math.sqrt(disc)) / d) if disc >= 0 else k
        j = max(1, min(k, j))
        while j > 1 and span(j - 1) >= e:
            j -= 1
        while j < k and span(j) < e:
            j += 1
        self.cut_block(j)

    def block_span(self, j: int) -> float:
        """Seconds of the running block's first ``j`` steps (step times s0, s0 + d, ...)."""
        assert self.ff is not None
        _, _, s0, d, _ = self.ff
        return j * s0 + d * j * (j - 1) / 2

    def cut_block(self, j: int) -> None:
        """End the running fast-forward block after its first ``j`` steps (j < its length)."""
        assert self.ff is not None and self.ev is not None
        t0, k, s0, d, n = self.ff
        if j < k:
            self.ev.cancel()
            self.ff = (t0, j, s0, d, n)
            self.ev = self.eng.at(t0 + self.block_span(j), self.ff_end)

    def can_admit(self, r: Req) -> bool:
        """Could the waiting head be admitted now (optimistic; False = surely not until a
        request finishes, since decoding only uses blocks up)."""
        if len(self.decode) + len(self.prefilling) >= self.max_seqs:
            return False
        if self.reserve and r.computed == 0 and not r.remote and (
                self.committed + -(-(r.input + r.output) // self.bs) > self.nblocks):
            # The whole request's blocks cannot be reserved until an admitted one finishes
            # (the scheduler's test below): decoding may fast-forward meanwhile.
            return False
        avail = self.free() + self.evictable
        bs = self.bs
        if r.remote:
            return -(-(r.target) // bs) <= avail
        budget = self.budget - len(self.decode) * (1 + self.spec_k)
        if budget <= 0:
            return False
        hit = held = 0
        if self.caching and r.computed == 0:
            ent = self.cache.get(r.pid) if self.gpu_cache else None
            if ent is not None:
                hit = min(ent[0], r.share // bs, (r.target - 1) // bs)
                if hit > 0 and ent[1] == 0:
                    # Admission references the entry (``prefix_hit``): its blocks stop being
                    # evictable, so they cannot also make room for the rest of the prompt
                    held = ent[0]
        rem = r.target - r.computed - hit * bs
        if not self.chunked and rem > budget:
            return False
        done = r.computed + hit * bs
        if self.prefill_first:
            return self.remainder_fits(r.target, done, held)
        chunk = min(rem, budget)
        return -(-(done + chunk) // bs) - -(-done // bs) <= avail - held

    def remainder_fits(self, target: int, done: int, extra: int = 0) -> bool:
        """Whether a prompt's blocks from ``done`` to ``target`` tokens (and ``extra`` more)
        fit in the blocks left once the prompts being prefilled have taken theirs. A
        prefill-first engine admits a prompt only then (SGLang's PrefillAdder budgets a
        request's whole input against the memory left, ``rem_total_tokens``): its decodes
        pause while prompts prefill, so a prompt admitted a chunk at a time could wait forever
        for blocks the paused decodes hold."""
        bs = self.bs
        pledged = sum(-(-p.target // bs) - -(-(p.computed + p.key) // bs)
                      for p in self.prefilling)
        rest = -(-target // bs) - -(-done // bs) + extra
        return rest <= self.free() + self.evictable - pledged

    def schedule(self) -> None:
        """Start the next iteration (or fast-forwarded block), or go idle."""
        sim = self.sim
        bs = self.bs
        waiting = self.waiting
        decode = self.decode
        # Requests whose KV came from a prefill replica join the decode batch directly.
        while waiting and waiting[0].remote and len(decode) + len(self.prefilling) < self.max_seqs:
            r = waiting[0]
            if not self.alloc(-(-r.target // bs)):
                break
            waiting.popleft()
            self.join(r, r.target)
            if sim.first_s[r.i] != sim.first_s[r.i]:  # NaN: admitted from a prefill replica
                sim.first_token(r.i, self.eng.now)
        self.poll()
        n = len(decode)
        if (sim.fast_forward and n and not self.prefilling
                and (not waiting or not self.can_admit(waiting[0]))):
            k = self.plan_block()
            if self.inbox:
                k = min(k, self.recv - self.recv_count)  # end the block at the poll
            if k > 1:
                self.start_block(k)
                return
        # One iteration. Running decodes first: one token (or a speculative group) each; with
        # prefill priority, none while a prompt is waiting to be (or being) prefilled.
        prefill_only = self.prefill_first and bool(
            self.prefilling or (waiting and not waiting[0].remote and self.can_admit(waiting[0])))
        if prefill_only:
            n = 0
        self.pending = 0
        dg = self.g_of(self.S + 1) - self.G
        d = self.demand(dg) if n else 0
        while n and d > self.free() + self.evictable:
            self.preempt_one()
            n = len(decode)
            d = self.demand(dg) if n else 0
        if n:
            self.alloc(d)
            self.pending = dg
        budget = self.budget - n * (1 + self.spec_k)
        kv = self.kvrel + n * self.G if n else 0
        ptoks = 0
        pairs = 0.0
        # Running prefills (chunks continue), in admission order.
        for r in list(self.prefilling):
            if r not in self.prefilling:  # preempted below by an earlier one
                continue
            chunk = min(r.target - r.computed, budget) if budget > 0 else 0
            if chunk <= 0:
                r.key = 0
                continue
            need = -(-(r.computed + chunk) // bs) - -(-r.computed // bs)
            while not self.alloc(need):
                victim = self.preempt_one()
                if victim is r or victim is None:
                    chunk = 0
                    break
            if r.i in decode or r not in self.prefilling:
                continue
            r.key = chunk  # the chunk scheduled in this iteration
            budget -= chunk
            ptoks += chunk
            pairs += chunk * (r.computed + chunk / 2.0)
            kv += r.computed + chunk
        n = 0 if prefill_only else len(decode)
        hold = bool(self.bw_iters and self.bw_tokens > 0 and n and waiting
                    and not waiting[0].remote) and self.held(n, budget)
        # Waiting requests, FCFS, while budget, seats and blocks last. Blocks loaded from the
        # host tier cost this iteration their transfer: the loads and the GPU's work add up
        # (a request whose prompt the host tier holds is admitted with its load)
        load_s = 0.0
        while (not hold and waiting and budget > 0
               and len(decode) + len(self.prefilling) < self.max_seqs):
            r = waiting[0]
            if r.remote:
                break
            fresh = r.computed == 0
            if fresh and self.caching:
                self.prefix_hit(r)
            rem = r.target - r.computed
            if (not self.chunked and rem > budget) or (
                    self.prefill_first and not self.remainder_fits(r.target, r.computed,
                                                                   r.loaded)):
                if fresh:
                    self.undo_hit(r)
                break
            chunk = min(rem, budget)
            full = -(-(r.input + r.output) // bs) if self.reserve and fresh else 0
            if full and self.committed + full > self.nblocks:
                if fresh:
                    self.undo_hit(r)
                break
            need = -(-(r.computed + chunk) // bs) - -(-r.computed // bs) + r.loaded
            if not self.alloc(need):
                if fresh:
                    self.undo_hit(r)
                break
            if full:
                self.committed += full
                r.committed = full
            waiting.popleft()
            if fresh:
                sim.prompt_tokens += r.target
                sim.hit_tokens += r.hit
                if r.loaded:
                    sim.host_hit_tokens += r.loaded * bs
                    load_s += r.loaded * self.block_load_s
                    r.loaded = 0
            self.prefilling.append(r)
            r.key = chunk
            budget -= chunk
            ptoks += chunk
            pairs += chunk * (r.computed + chunk / 2.0)
            kv += r.computed + chunk
        if not ptoks and not n:
            if self.inbox:  # idle: the scheduler loop polls at once
                self.take_inbox()
                self.eng.at(self.eng.now, self.schedule)
                return
            self.busy = False
            self.ev = None
            return
        # A prefill in this iteration makes the next boundary a poll
        self.recv_count = self.recv if ptoks else self.recv_count + 1
        dt = self.speculate(self.step_s(ptoks, n, kv, pairs), n, kv) + load_s
        self.ev = self.eng.at(self.eng.now + dt, self.step_end, n, dt)

    def speculate(self, dt: float, n: int, kv: float) -> float:
        """An iteration of ``dt`` seconds with ``n`` decoding sequences, speculative
        decoding's cost on them included (a factor, or the step model's own cost)."""
        if not n or not self.spec_k:
            return dt
        if self.factor is None:
            assert self.spec_extra is not None
            return dt + float(self.spec_extra(n, kv, self.spec_k))
        return dt * self.factor

    def held(self, n: int, budget: int) -> bool:
        """Batch waiting (TensorRT-LLM's ``_waiting_requests``): whether this iteration holds
        the waiting prompts back. It holds while fewer than ``batch_wait_iterations``
        iterations have held them and the iteration's tokens (``n`` decodes and the prompts'
        tokens the budget would take) stay below ``batch_wait_tokens``."""
        tokens = n * (1 + self.spec_k)
        room = max(budget, 0)
        for r in self.waiting:
            if r.remote or tokens >= self.bw_tokens or room <= 0:
                break
            take = min(r.target - r.computed, room)
            tokens += take
            room -= take
        if self.bw_count < self.bw_iters and tokens < self.bw_tokens:
            self.bw_count += 1
            return True
        self.bw_count = 0
        return False

    def plan_block(self) -> int:
        """Decode iterations that can run as one event (0 or 1: not worth it)."""
        heap = self.heap
        while heap and (heap[0][3].ver != heap[0][2] or heap[0][1] not in self.decode):
            heapq.heappop(heap)
        gmin = heap[0][0]
        need = gmin - self.G  # tokens until the first request finishes
        S = self.S
        if self.y == 1.0:
            kfin = need
        else:
            kfin = max(1, math.ceil((self.g_of(S) + need) / self.y - 1e-9) - S)
            while self.g_of(S + kfin) - self.G < need:
                kfin += 1
            while kfin > 1 and self.g_of(S + kfin - 1) - self.G >= need:
                kfin -= 1
        dmax = self.max_advance(self.free() + self.evictable)
        if self.y == 1.0:
            kkv = dmax
        else:
            kkv = int((self.G + dmax) / self.y) - S
            while kkv > 0 and self.g_of(S + kkv) - self.G > dmax:
                kkv -= 1
        return min(kfin, kkv)

    def start_block(self, k: int) -> None:
        n = len(self.decode)
        kv0, kv1 = self.kvrel + n * self.G, self.kvrel + n * self.g_of(self.S + k - 1)
        s0 = self.speculate(self.step_s(0, n, kv0), n, kv0)
        s1 = self.speculate(self.step_s(0, n, kv1), n, kv1)
        d = (s1 - s0) / (k - 1)
        now = self.eng.now
        self.ff = (now, k, s0, d, n)
        self.ev = self.eng.at(now + k * s0 + d * k * (k - 1) / 2, self.ff_end)

    def ff_end(self) -> None:
        assert self.ff is not None
        _, k, s0, d, n = self.ff
        self.ff = None
        g1 = self.g_of(self.S + k)
        self.alloc(self.demand(g1 - self.G))
        self.S += k
        self.G = g1
        self.recv_count += k
        self.passed_polls()
        self.sim.record_steps(k, s0 + d * (k - 1) / 2, n)
        self.finish_due()
        self.sim.sample(self.eng.now)
        self.schedule()

    def step_end(self, n: int, dt: float) -> None:
        sim = self.sim
        if n or not self.prefill_first:
            # The running sequences decoded (a prefill-only iteration moves none of them).
            self.S += 1
            self.G = self.g_of(self.S)
        self.pending = 0
        self.passed_polls()
        sim.record_steps(1, dt, n)
        if self.prefilling:
            done: list[Req] = []
            for r in self.prefilling:
                r.computed += r.key
                r.key = 0
                if r.computed >= r.target:
                    done.append(r)
            for r in done:
                self.prefilling.remove(r)
                self.prefill_done(r)
        self.finish_due()
        sim.sample(self.eng.now)
        self.schedule()

    def prefill_done(self, r: Req) -> None:
        sim = self.sim
        now = self.eng.now
        r.g += 1
        if self.caching and r.pid >= 0:
            self.register_prefix(r)
        if self.role == "prefill":
            sim.handoff(self, r)
            return
        if sim.first_s[r.i] != sim.first_s[r.i]:  # NaN: first token of this request
            sim.first_token(r.i, now)
        if r.g >= r.output:
            self.release(r, r.target)
            self.outstanding -= 1
            sim.finish(r)
        else:
            self.join(r, r.target)

    def finish_due(self) -> None:
        heap = self.heap
        G = self.G
        decode = self.decode
        while heap and heap[0][0] <= G:
            _, i, ver, r = heapq.heappop(heap)
            if r.ver != ver or i not in decode:
                continue
            ctx = r.key + G
            self.leave(r)
            self.release(r, ctx)
            self.outstanding -= 1
            self.sim.finish(r)
