"""Fluid simulation of congestion control, queues, ECN marking and PFC on a set of flows.

What is modelled (the max-min simulator, ``sim/network.py``, assumes ideal congestion
control and no queues; this one does not):

- **Queues.** Every link a flow crosses has an egress queue, served FIFO as a fluid: what
  leaves a link in a time step is its capacity shared in proportion to what each flow has
  buffered there. Links are served in a topological order each step (``dt``, 4 us by
  default), so what leaves a link reaches the next one in the same step; queues build
  where arrivals exceed capacity and drain downstream. A hop may be split over parallel
  links (spraying, plane shares) by weight.
- **ECN.** Each switch egress marks departing packets with RED on its instantaneous queue
  (Kmin, Kmax, Pmax), as the HPCC simulator's switches do (marking at dequeue). Pause
  gaps: a switch's egress is one FIFO, so while PFC holds a link paused, the flows on it
  put nothing in the queues it feeds, and one queueing delay later none of their bytes
  leave there: a flow gets no marks for the share of its departures that would have come
  through a link paused ``queue / capacity`` steps earlier (``_gap_fraction``). Served in
  proportion to the bytes queued, the fluid would go on marking them, every paused flow
  would keep getting CNPs, and under sustained PFC the queue would drain where ns-3's stays
  at the buffer's equilibrium.
- **Congestion control** per flow (``FluidConfig.cc``):

  - ``dcqcn``: NVIDIA ConnectX's DCQCN reaction point, one automaton per flow (the HPCC ns-3
    implementation, ``rdma-hw.cc``): a CNP reaches the sender half a round trip after a marked
    packet leaves the switch (drawn per flow and step from its marked departures, seeded);
    the first CNP sets alpha to 1; every ``decrease_interval`` a flow that got a CNP cuts
    its rate by alpha/2 (setting the target rate to the current rate unless no increase
    event happened since the last cut, CLAMP_TARGET_RATE off); alpha decays by (1 - g) every
    ``alpha_interval`` and gains g when a CNP came in it; the rate timer (``T`` after a cut)
    drives fast recovery (rate halfway to target), then additive (R_AI) and hyper (R_HAI)
    increase of the target. The synchronised cuts and timer-paced recovery of many
    senders, which leave the bottleneck idle for long stretches, come out of this.
  - ``dcqcn-fluid``: the mean-field fluid model of Zhu et al. (CoNEXT 2016,
    ``model/congestion.py``): smooth, deterministic; it has the right fixed point but no
    synchronisation, so it underestimates incast completion times.
  - ``timely``: TIMELY's rate-gradient law on the RTT (base plus queueing delay along the
    path), mean-field (``model/congestion.py``).
  - ``none``: line rate; only PFC stops the senders.

- **PFC.** A switch accounts the bytes in its egress queues by the ingress link they came in
  on; above the ingress' XOFF threshold it pauses that link (its transmitter stops: every
  flow on it, going anywhere, is held: head-of-line blocking), and resumes it below XON.
  Pauses propagate upstream as queues fill (congestion spreading), up to the sending NICs.
  Thresholds are static per link (``FluidLinks.xoff``/``xon``) or dynamic, as a shared-buffer
  switch computes them (``SharedBuffer``: the free shared buffer / 2^shift, as the HPCC
  simulator's switch MMU does). A ``stuck`` link (a receiver that keeps pausing: a PFC
  storm) never transmits.

Approximations (stated so results can be checked): fluid queues, not packets (no
serialization granularity; randomness only in which steps a flow's CNPs arrive); no
propagation delay on the way (it is in the round trip); the feedback delay is the base round
trip (queueing delay enters TIMELY's RTT only); flows in a group send at the pace of the
slowest (a pipelined collective), as in ``sim/network.py``. Without PFC the queues are not
bounded by the buffer (nothing is dropped): ``FluidResult.queue_max_bytes`` against the
buffer says where a lossy fabric would drop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from clusterwright.model.congestion import Dcqcn, Timely, dcqcn_derivatives, timely_derivatives

CCS: tuple[str, ...] = ("dcqcn", "dcqcn-fluid", "timely", "none")
# Steps of one run: a 128-sender incast of 1 MB each at 100 Gb/s needs about 11,000 of 1 us.
MAX_STEPS = 1_000_000
# Flow-link entries times steps of one run: the work, about 20 ns each on one core.
MAX_WORK = 4_000_000_000
# When a CNP reaches the sender, in round trips after its marked packet left the switch: a
# mark at the last hop (the incast bottleneck) travels one hop on and the whole way back.
CNP_LAG = 0.75
# Steps without a byte moving after which a run with nothing left to start stops.
STALL_STEPS = 1000
SAMPLES = 400  # rate samples of a run (for convergence), at most
SAMPLE_S = 10e-6  # and at least this far apart


@dataclass
class FluidLinks:
    """Links of a fluid problem (bytes/s, bytes). ``switch``: the switch a link delivers
    into, whose buffer its ingress bytes are accounted in (-1: a host)."""

    cap: np.ndarray
    kmin: np.ndarray  # ECN, bytes (inf: this egress does not mark)
    kmax: np.ndarray
    pmax: np.ndarray
    switch: np.ndarray
    names: list[str]
    xoff: np.ndarray = field(default_factory=lambda: np.zeros(0))  # static PFC, bytes
    xon: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stuck: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __post_init__(self) -> None:
        n = len(self.cap)
        if not len(self.xoff):
            self.xoff = np.full(n, np.inf)
            self.xon = np.full(n, np.inf)
        if not len(self.stuck):
            self.stuck = np.zeros(n, dtype=bool)


@dataclass(frozen=True)
class SharedBuffer:
    """Dynamic PFC thresholds of shared-buffer switches (HPCC ns-3 ``SwitchMmu``): an ingress
    is paused once its bytes past ``reserve`` reach (buffer - headroom - reserves - shared
    used) / 2^shift, resumed ``resume_offset`` below it."""

    buffer_bytes: np.ndarray  # per switch
    headroom_bytes: np.ndarray  # per switch: the sum over its ports
    ports: np.ndarray  # per switch: ports with a reserve
    shift: float = 3.0
    reserve_bytes: float = 4 * 1024
    resume_offset: float = 3 * 1024


@dataclass
class FluidFlows:
    """Flows as link entries. Entry ``e``: flow ``entry_flow[e]`` crosses link
    ``entry_link[e]`` at hop ``entry_hop[e]`` (0 first) with ``entry_weight[e]`` of its bytes
    (the weights of one hop add to 1). Flows of a ``group`` start together, at the group's
    ``group_start`` once every group in its ``group_after`` is done; a group is done
    ``group_latency`` after its last byte lands (a collective's per-step latencies)."""

    entry_flow: np.ndarray
    entry_link: np.ndarray
    entry_hop: np.ndarray
    entry_weight: np.ndarray
    size: np.ndarray  # bytes per flow
    group: np.ndarray
    line_rate: np.ndarray  # bytes/s, the sending NIC
    rtt: np.ndarray  # base round trip, s
    group_start: np.ndarray = field(default_factory=lambda: np.zeros(1))
    group_after: list[list[int]] = field(default_factory=list)
    group_latency: np.ndarray = field(default_factory=lambda: np.zeros(1))

    def __post_init__(self) -> None:
        n_g = int(self.group.max()) + 1 if len(self.group) else 0
        if len(self.group_start) != n_g:
            self.group_start = np.zeros(n_g)
        if len(self.group_after) != n_g:
            self.group_after = [[] for _ in range(n_g)]
        if len(self.group_latency) != n_g:
            self.group_latency = np.zeros(n_g)

    def __len__(self) -> int:
        return len(self.size)

    @classmethod
    def from_paths(cls, paths: list[list[int]], size: np.ndarray | float, line_rate: float,
                   rtt: float, group: np.ndarray | None = None) -> FluidFlows:
        """Single-link hops: ``paths[f]`` the links of flow f in order; one group each
        unless ``group`` says otherwise, every group starting at 0."""
        n = len(paths)
        ef = np.asarray([f for f, p in enumerate(paths) for _ in p], dtype=np.int64)
        el = np.asarray([lk for p in paths for lk in p], dtype=np.int64)
        eh = np.asarray([h for p in paths for h in range(len(p))], dtype=np.int64)
        grp = np.arange(n, dtype=np.int64) if group is None else np.asarray(group, np.int64)
        n_g = int(grp.max()) + 1 if n else 0
        return cls(ef, el, eh, np.ones(len(ef)), np.broadcast_to(
            np.asarray(size, dtype=float), (n,)).copy(), grp, np.full(n, float(line_rate)),
            np.full(n, float(rtt)), np.zeros(n_g), [[] for _ in range(n_g)], np.zeros(n_g))


@dataclass(frozen=True)
class FluidConfig:
    """How to run: congestion control, its parameters, PFC, step, seed."""

    cc: str = "dcqcn"
    dcqcn: Dcqcn = field(default_factory=Dcqcn)
    timely: Timely = field(default_factory=Timely)
    packet_bytes: float = 1000.0
    # The step: DCQCN's decrease interval (alpha's 1-us intervals are drawn within it);
    # 1 us gives incast completions and queues within ~3 % of it.
    dt: float = 4e-6
    pfc: bool = True
    shared: SharedBuffer | None = None
    until_s: float | None = None
    seed: int = 0
    # How long the run should take (e.g. the max-min simulator's time) for the work check;
    # None: every byte through the fastest link, one after another.
    expect_s: float | None = None


@dataclass(frozen=True)
class FluidResult:
    """Outcome of a fluid run; queue statistics over [0, end_s]."""

    end_s: float  # the last group done (its latency counted)
    fct_s: np.ndarray  # per flow: last byte delivered minus its start
    start_s: np.ndarray  # per flow
    queue_mean_bytes: np.ndarray  # per link
    queue_max_bytes: np.ndarray
    pause_s: np.ndarray  # per link: time paused
    marked_fraction: float  # of bytes sent, the share a switch on the way marks
    cnps: int  # CNPs the senders acted on (dcqcn)
    rate_spread: np.ndarray  # per sample: max |rate / fair share - 1| over sending flows
    sample_times: np.ndarray
    steps: int
    dt: float

    def jain_fairness(self, size: np.ndarray) -> float:
        """Jain's index of the flows' throughputs (bytes / flow completion time)."""
        thr = np.asarray(size, dtype=float) / np.maximum(self.fct_s, 1e-30)
        thr = thr[np.isfinite(thr)]
        return float(thr.sum() ** 2 / (len(thr) * (thr * thr).sum())) if len(thr) else 1.0

    def convergence_s(self, tol: float = 0.2) -> float | None:
        """First sample time after which every sending flow's rate stays within ``tol`` of
        its max-min fair share until the end; None if that never holds."""
        ok = self.rate_spread <= tol
        if not len(ok) or not ok[-1]:
            return None
        bad = np.flatnonzero(~ok)
        return float(self.sample_times[bad[-1] + 1 if len(bad) else 0])


def _stages(el: np.ndarray, hop: np.ndarray, prev_hop: np.ndarray, first: np.ndarray,
            flow_of: np.ndarray, ew: np.ndarray, n_l: int, n_h: int, n_f: int
            ) -> list[tuple[np.ndarray, ...]]:
    """Entries by the stage of their link, a topological order of the links (every flow
    crosses links in increasing stage): (entries, their links, the hops they belong to,
    each entry's index among those hops, where its bytes come from in the step's feed (the
    flow's sending for a first hop, else the previous hop's output), its weight)."""
    stage = np.zeros(n_l, dtype=np.int64)
    nf = np.flatnonzero(~first)
    for _ in range(4 * 16):
        hs = np.zeros(n_h, dtype=np.int64)
        np.maximum.at(hs, hop, stage[el])
        new = np.zeros(n_l, dtype=np.int64)
        np.maximum.at(new, el[nf], hs[prev_hop[nf]] + 1)
        if np.array_equal(new, stage):
            break
        stage = new
    else:
        raise ValueError("the flows' paths loop (no order of the links has every path "
                         "going forward)")
    out: list[tuple[np.ndarray, ...]] = []
    st = stage[el]
    for s_ in np.unique(st).tolist():
        idx = np.flatnonzero(st == s_)
        hops_s, local = np.unique(hop[idx], return_inverse=True)
        src = np.where(first[idx], flow_of[idx], n_f + prev_hop[idx])
        out.append((idx, el[idx], hops_s, local, src, ew[idx]))
    return out


def _pfc_floor(links: FluidLinks, sb: SharedBuffer | None, ingress: np.ndarray) -> float:
    """Bytes queued in the whole network below which no ingress can reach its pause
    threshold (the PFC check is skipped under it)."""
    if sb is None:
        return float(links.xoff[ingress].min()) if len(ingress) else np.inf
    base = sb.buffer_bytes - sb.headroom_bytes - sb.ports * sb.reserve_bytes
    k = 2.0 ** -sb.shift
    return float((sb.reserve_bytes + base.min(initial=np.inf) * k) / (1 + k))


def fair_shares(links: FluidLinks, flows: FluidFlows, active: np.ndarray) -> np.ndarray:
    """Max-min fair rate of every active flow (progressive filling over the links; a flow's
    load on a link is its entry weight), bytes/s; inactive flows get 0."""
    n_f, n_l = len(flows), len(links.cap)
    rate = np.zeros(n_f)
    frozen = ~active.copy()
    cap = links.cap.astype(float).copy()
    ef, el, ew = flows.entry_flow, flows.entry_link, flows.entry_weight
    limit = flows.line_rate.astype(float)
    for _ in range(n_f + 1):
        live = ~frozen[ef]
        if not live.any():
            break
        load = np.bincount(el[live], weights=ew[live], minlength=n_l)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(load > 0, cap / load, np.inf)
        inc_f = np.full(n_f, np.inf)
        np.minimum.at(inc_f, ef[live], share[el[live]])
        inc_f = np.minimum(inc_f, limit - rate)
        inc = float(inc_f[~frozen].min())
        rate[~frozen] += inc
        cap -= load * inc
        tight = np.zeros(n_f, dtype=bool)
        tight[ef[live & (cap[el] <= 1e-9 * links.cap[el])]] = True
        tight |= rate >= limit * (1 - 1e-12)
        frozen |= tight
    return rate


def pause_history_steps(links: FluidLinks, sb: SharedBuffer | None, cdt: float) -> int:
    """Steps of pause history the pause gaps keep: the most bytes an egress can hold (a
    shared buffer, or every static XOFF threshold together) in steps of ``cdt`` bytes (the
    slowest marking egress's capacity a step), and a margin."""
    if sb is not None:
        bound = float(sb.buffer_bytes.max(initial=0.0))
    else:
        bound = float(np.sum(np.where(np.isfinite(links.xoff), links.xoff, 0.0)))
    return int(bound / max(cdt, 1e-300)) + 3


def simulate_fluid(links: FluidLinks, flows: FluidFlows, cfg: FluidConfig | None = None
                   ) -> FluidResult:
    """Run the flows to completion (or ``cfg.until_s``) on the links (module docstring)."""
    cfg = cfg or FluidConfig()
    if cfg.cc not in CCS:
        raise ValueError(f"cc: unknown {cfg.cc!r} (one of {', '.join(CCS)})")
    st = _State(links, flows, cfg)
    while not st.finished():
        st.step()
    return st.result()


class _State:
    """The arrays of one fluid run and its time step (``simulate_fluid``)."""

    def __init__(self, links: FluidLinks, flows: FluidFlows, cfg: FluidConfig) -> None:
        self.L, self.F, self.cfg = links, flows, cfg
        n_f, n_l = len(flows), len(links.cap)
        self.n_f, self.n_l = n_f, n_l
        dt = cfg.dt
        ef, el, eh, ew = (flows.entry_flow, flows.entry_link, flows.entry_hop,
                          flows.entry_weight)
        order = np.lexsort((el, eh, ef))
        ef, el, eh, ew = ef[order], el[order], eh[order], ew[order]
        # Hops: one id per (flow, hop); entries of one hop are parallel links.
        new_hop = np.r_[True, (ef[1:] != ef[:-1]) | (eh[1:] != eh[:-1])] if len(ef) else \
            np.zeros(0, dtype=bool)
        hop_id = np.cumsum(new_hop) - 1
        n_h = int(hop_id[-1]) + 1 if len(hop_id) else 0
        hop_flow = ef[new_hop]
        first_hop = np.r_[True, hop_flow[1:] != hop_flow[:-1]] if n_h else new_hop[:0]
        last_hop = np.r_[hop_flow[1:] != hop_flow[:-1], True] if n_h else new_hop[:0]
        self.ef, self.el, self.ew, self.hop = ef, el, ew, hop_id
        self.first = first_hop[hop_id]
        self.prev_hop = np.where(self.first, 0, np.maximum(hop_id - 1, 0))
        self.f_idx = np.flatnonzero(self.first)
        self.n_h = n_h
        self.last_hop_of = np.full(n_f, -1, dtype=np.int64)
        self.last_hop_of[hop_flow[last_hop]] = np.flatnonzero(last_hop)
        self.has_last = np.flatnonzero(self.last_hop_of >= 0)
        self.last_hops = self.last_hop_of[self.has_last]
        self.has_next = ~last_hop[hop_id]
        self.nx_idx = np.flatnonzero(self.has_next)
        self.stages = _stages(el, hop_id, self.prev_hop, self.first, ef, ew, n_l, n_h, n_f)
        self.first_link = np.zeros(n_f, dtype=np.int64)
        self.first_link[ef[self.f_idx]] = el[self.f_idx]
        self.q = np.zeros(len(ef))
        self.dep = np.zeros(len(ef))
        self.feed = np.zeros(n_f + n_h)
        self.out_hop = self.feed[n_f:]
        self.zeros_f = np.zeros(n_f)
        self.cap_dt = links.cap * cfg.dt
        self.cap_dt_floor = self.cap_dt + 1e-300
        self.goal = flows.size * (1 - 1e-9)
        self.n_done = 0
        self.idle = 0
        mk = np.isfinite(links.kmin)
        self.marking = np.flatnonzero(mk)
        self.mark_e = np.flatnonzero(mk[el])
        local = np.full(n_l, -1, dtype=np.int64)
        local[self.marking] = np.arange(len(self.marking))
        self.mark_local = local[el[self.mark_e]]
        m = self.marking
        self.kmin_m, self.kmax_m, self.pmax_m = links.kmin[m], links.kmax[m], links.pmax[m]
        self.slope_m = self.pmax_m / np.maximum(self.kmax_m - self.kmin_m, 1e-9)
        self.sent = np.zeros(n_f)
        self.delivered = np.zeros(n_f)
        self.done_at = np.full(n_f, np.nan)
        self.size = flows.size.astype(float)
        self.line = flows.line_rate.astype(float)
        self.paused = links.stuck.copy()
        self.any_paused = bool(self.paused.any())
        self.q_sum = np.zeros(n_l)
        self.q_max = np.zeros(n_l)
        self.pause_t = np.zeros(n_l)
        self.sent_b = self.marked_b = 0.0
        self.cnps = 0
        self.t = 0.0
        self.n = 0
        # Groups: starts resolved as their predecessors finish.
        n_g = len(flows.group_start)
        self.g_ready = np.where([len(a) == 0 for a in flows.group_after] if n_g else [],
                                flows.group_start, np.inf) if n_g else np.zeros(0)
        self.g_wait = np.asarray([len(a) for a in flows.group_after], dtype=np.int64)
        self.g_dependents: list[list[int]] = [[] for _ in range(n_g)]
        for g, after in enumerate(flows.group_after):
            for a in after:
                self.g_dependents[a].append(g)
        self.g_left = np.bincount(flows.group, minlength=n_g)
        self.g_done = np.full(n_g, np.nan)
        self.next_ready = -np.inf
        self.ready = np.zeros(n_f, dtype=bool)
        self.ready_f = np.zeros(n_f)
        self.paced = self._paced()
        # Feedback history: one round trip (marks: half of one) late.
        self.lag = np.maximum(1, np.round(flows.rtt / dt).astype(np.int64))
        self.cnp_lag = np.maximum(1, np.round(CNP_LAG * flows.rtt / dt).astype(np.int64))
        self.hist_n = int(self.lag.max(initial=1)) + 2
        self.hist_mark = np.zeros((self.hist_n, n_f))  # log P(no mark) of departures
        self.hist_p = np.zeros((self.hist_n, n_f))
        self.hist_x = np.zeros((self.hist_n, n_f))
        self.cols = np.arange(n_f)
        self.rng = np.random.default_rng(cfg.seed)
        self.cc = _CcState(cfg, self.line, flows.rtt, self.hist_n)
        total = float(self.size.sum())
        ideal = cfg.expect_s if cfg.expect_s is not None else \
            total / float(links.cap.max(initial=1.0)) + float(flows.rtt.max(initial=0.0))
        self.sample_every = max(1, round(SAMPLE_S / dt), int(ideal / dt / SAMPLES))
        self.spread: list[float] = []
        self.sample_t: list[float] = []
        self.fair = np.zeros(n_f)
        self.fair_for: tuple[int, float, int] | None = None
        self.n_sending = 0
        self.ingress = np.flatnonzero(links.switch >= 0)
        self.pfc_floor = _pfc_floor(links, cfg.shared, self.ingress)
        self._init_pause_gaps()
        work = len(ef) * max(1.0, 2 * ideal / dt)
        if work > MAX_WORK:
            raise ValueError(
                f"the fluid run would take about {work / 5e7:,.0f} s ({len(ef):,} flow-link "
                f"entries x {ideal / dt:,.0f} steps of {dt * 1e6:g} us); fewer flows or bytes")

    def _init_pause_gaps(self) -> None:
        """Pause gaps (``_gap_fraction``): for each marked entry, the entries of its flow's
        previous hop (the links that feed it: their link and share), and a ring of the links
        paused at each step, as long as a marking link's queue can be in steps."""
        cfg, L = self.cfg, self.L
        self.gap_on = bool(cfg.pfc and cfg.cc == "dcqcn" and len(self.mark_e))
        self.gap_n = 1
        self.last_pause_n = -(10**9)
        if not self.gap_on:
            return
        me = self.mark_e
        hop_start = np.searchsorted(self.hop, np.arange(self.n_h + 1))
        rows, lks, ws = [], [], []
        for i, e in enumerate(me.tolist()):
            if self.first[e]:
                continue
            h = int(self.prev_hop[e])
            for j in range(int(hop_start[h]), int(hop_start[h + 1])):
                rows.append(i)
                lks.append(int(self.el[j]))
                ws.append(float(self.ew[j]))
        self.gap_row = np.asarray(rows, dtype=np.int64)
        self.gap_link = np.asarray(lks, dtype=np.int64)
        self.gap_w = np.asarray(ws)
        self.gap_n = pause_history_steps(L, cfg.shared, float(self.cap_dt[self.marking].min()))
        self.paused_at: list[np.ndarray | None] = [None] * self.gap_n
        self.gap_mask = np.zeros(self.n_l, dtype=bool)

    def _gap_fraction(self, queue: np.ndarray) -> np.ndarray:
        """Per marked entry, the share of its departures this step that have a gap: bytes
        that would have arrived, ``queue / capacity`` steps ago (first in, first out),
        through a link PFC held paused then. Served in proportion to the bytes queued, the
        fluid would go on marking a paused flow's queued bytes; on a switch's FIFO none of
        them leave one queueing delay later, so no mark and no CNP reaches the flow (the
        HPCC simulator's receiver returns a CNP only for a marked packet it gets)."""
        me = self.mark_e
        frac = np.zeros(len(me))
        if not len(self.gap_row):
            return frac
        m = self.marking
        k_e = (queue[m] / self.cap_dt[m]).astype(np.int64)[self.mark_local]
        k_g = k_e[self.gap_row]
        mask = self.gap_mask
        for k in np.unique(k_g).tolist():
            if k >= self.gap_n or self.n < k:
                continue
            idx = self.paused_at[(self.n - k) % self.gap_n]
            if idx is None:
                continue
            mask[idx] = True
            sel = (k_g == k) & mask[self.gap_link]
            mask[idx] = False
            if sel.any():
                frac += np.bincount(self.gap_row[sel], weights=self.gap_w[sel],
                                    minlength=len(me))
        return np.minimum(frac, 1.0)

    # ------------------------------------------------------------------ stepping
    def finished(self) -> bool:
        if self.cfg.until_s is not None and self.t >= self.cfg.until_s:
            return True
        if self.n_f == 0 or not np.isnan(self.done_at).any():
            return True
        if self.idle > STALL_STEPS and self.next_ready == np.inf:
            return True  # nothing moves and nothing will start: stalled (a PFC storm)
        if self.n >= MAX_STEPS:
            raise ValueError(f"the fluid run needs more than {MAX_STEPS:,} steps of "
                             f"{self.cfg.dt * 1e6:g} us; fewer bytes or a coarser step")
        return False

    def step(self) -> None:
        cfg, dt = self.cfg, self.cfg.dt
        if self.t + 1e-15 >= self.next_ready:
            self._update_ready()
        rate = self.cc.rate if cfg.cc != "none" else self.line
        x = np.minimum(rate, (self.size - self.sent) * (1 / dt)) * self.ready_f
        if self.any_paused:
            x[self.paused[self.first_link]] = 0.0
        if self.gap_on:
            self.paused_at[self.n % self.gap_n] = (np.flatnonzero(self.paused)
                                                  if self.any_paused else None)
            if self.any_paused:
                self.last_pause_n = self.n
        if self.paced:
            pace = np.full(len(self.g_ready), np.inf)
            np.minimum.at(pace, self.F.group, np.where(x > 0, x, np.inf))
            x = np.minimum(x, pace[self.F.group])
        # Network: the links in stage order, each serving its capacity in FIFO shares of
        # what the flows hold there; what leaves a link reaches the next in the same step.
        feed = self.feed
        feed[:self.n_f] = x * dt
        out_hop = self.out_hop
        out_hop[:] = 0.0
        if self.any_paused:
            serve = np.where(self.paused, 0.0, self.cap_dt)
            floor = serve + 1e-300
        else:
            serve, floor = self.cap_dt, self.cap_dt_floor
        q, dep = self.q, self.dep
        held = np.zeros(self.n_l)
        for idx, links_s, hops_s, local, src, w in self.stages:
            buf = q[idx] + feed[src] * w
            h = np.bincount(links_s, weights=buf, minlength=self.n_l)
            held += h
            outb = buf * (serve / np.maximum(h, floor))[links_s]
            q[idx] = buf - outb
            dep[idx] = outb
            out_hop[hops_s] += np.bincount(local, weights=outb, minlength=len(hops_s))
        xdt = feed[:self.n_f]
        self.sent += xdt
        self.idle = 0 if out_hop.any() or xdt.any() else self.idle + 1
        self.delivered += out_hop[self.last_hop_of]
        done = int(np.count_nonzero(self.delivered >= self.goal))
        if done > self.n_done:
            self._finish(np.flatnonzero((self.delivered >= self.goal)
                                        & np.isnan(self.done_at)))
            self.n_done = done
            if self.paced:
                self.paced = self._paced()
        queue = held - np.minimum(held, serve)
        self.q_sum += queue
        np.maximum(self.q_max, queue, out=self.q_max)
        # ECN at dequeue: log P(no mark) of each flow's departing packets this step.
        me = self.mark_e
        mark_log: np.ndarray = self.zeros_f
        p_path: np.ndarray = self.zeros_f
        if len(me):
            m = self.marking
            p = np.minimum(np.maximum(queue[m] - self.kmin_m, 0.0) * self.slope_m, self.pmax_m)
            p[queue[m] > self.kmax_m] = 1.0
            pe = p[self.mark_local]
            d_me = dep[me]
            if self.gap_on and self.n - self.last_pause_n < self.gap_n:
                d_me = d_me * (1.0 - self._gap_fraction(queue))
            # Marked packets of a flow in a step: Poisson with mean (its departures x p);
            # log P(none) = -that mean.
            mark_log = np.bincount(self.ef[me], weights=d_me * pe * (-1 / cfg.packet_bytes),
                                   minlength=self.n_f)
            lk = np.log1p(-np.minimum(pe, 1 - 1e-12))
            # Bytes sent now that some switch on the way marks (1 - prod(1 - p) per flow).
            p_path = -np.expm1(np.bincount(self.ef[me], weights=lk * self.ew[me],
                                           minlength=self.n_f))
            self.marked_b += float(x @ p_path) * dt
        self.sent_b += float(xdt.sum())
        if cfg.pfc and (self.any_paused or float(queue.sum()) > self.pfc_floor):
            self._pfc()
        if self.any_paused:
            self.pause_t += self.paused * dt
        slot = self.n % self.hist_n
        if cfg.cc == "dcqcn":
            self.hist_mark[slot] = mark_log
        elif cfg.cc == "dcqcn-fluid":
            self.hist_p[slot] = p_path if len(me) else self.zeros_f
            self.hist_x[slot] = x
        self._react(queue, slot)
        if self.n % self.sample_every == 0:
            self._sample(x)
        self.t += dt
        self.n += 1

    def _paced(self) -> bool:
        """Whether some group still has two or more flows sending (pacing matters)."""
        left = self.sent < self.size
        if self.n_f == 0 or not left.any():
            return False
        return len(np.unique(self.F.group[left])) < int(left.sum())

    def _update_ready(self) -> None:
        ready = self.g_ready[self.F.group] <= self.t + 1e-15
        self.ready = ready
        self.ready_f = ready.astype(float)
        later = self.g_ready[self.g_ready > self.t + 1e-15]
        self.next_ready = float(later.min()) if len(later) else np.inf

    def _finish(self, idx: np.ndarray) -> None:
        """Flows ``idx`` delivered their last byte this step; a group whose flows all have
        is done ``group_latency`` later, and groups waiting on it may start."""
        now = self.t + self.cfg.dt
        self.done_at[idx] = now
        grp = self.F.group[idx]
        np.subtract.at(self.g_left, grp, 1)
        for g in np.unique(grp[self.g_left[grp] == 0]).tolist():
            self.g_done[g] = now + float(self.F.group_latency[g])
            for d in self.g_dependents[g]:
                self.g_wait[d] -= 1
                if self.g_wait[d] == 0:
                    after = self.F.group_after[d]
                    self.g_ready[d] = max(float(self.F.group_start[d]),
                                          max(float(self.g_done[a]) for a in after))
                    self.next_ready = min(self.next_ready, float(self.g_ready[d]))

    def _pfc(self) -> None:
        """Pause or resume every switch ingress from the bytes it has queued."""
        L = self.L
        hop_q = np.bincount(self.hop, weights=self.q, minlength=self.n_h)
        nx = self.nx_idx
        ing = np.bincount(self.el[nx], weights=self.ew[nx] * hop_q[self.hop[nx] + 1],
                          minlength=self.n_l)
        sb = self.cfg.shared
        if sb is None:
            paused = np.where(self.paused, ing > L.xon, ing > L.xoff)
        else:
            paused = self.paused.copy()
            i = self.ingress
            over = np.maximum(ing[i] - sb.reserve_bytes, 0.0)
            sw = L.switch[i]
            used = np.bincount(sw, weights=over, minlength=len(sb.buffer_bytes))
            free = sb.buffer_bytes - sb.headroom_bytes - sb.ports * sb.reserve_bytes - used
            thresh = np.maximum(free[sw], 0.0) / 2.0 ** sb.shift
            paused[i] = np.where(self.paused[i],
                                 ~((over == 0) | (over + sb.resume_offset <= thresh)),
                                 over >= thresh)
        self.paused = paused | L.stuck
        self.any_paused = bool(self.paused.any())

    def _react(self, queue: np.ndarray, slot: int) -> None:
        cfg, cc, ready = self.cfg, self.cc, self.ready
        if cfg.cc == "dcqcn":
            back = (self.n - self.cnp_lag) % self.hist_n
            self.cnps += cc.dcqcn_step(self.hist_mark[back, self.cols], self.rng)
        elif cfg.cc == "dcqcn-fluid":
            back = (self.n - self.lag) % self.hist_n
            cc.dcqcn_fluid_step(self.hist_p[back, self.cols], self.hist_x[back, self.cols],
                                ready)
        elif cfg.cc == "timely":
            back = (self.n - self.lag) % self.hist_n
            qdelay = np.bincount(self.ef, weights=queue[self.el] / self.L.cap[self.el]
                                 * self.ew, minlength=self.n_f)
            cc.timely_step(qdelay, slot, back, ready)

    def _sample(self, x: np.ndarray) -> None:
        active = self.ready & (self.sent < self.size)
        self.n_sending = int(np.count_nonzero(active))
        if not active.any():
            return
        if self.fair_for != (self.n_done, self.next_ready, self.n_sending):
            self.fair = fair_shares(self.L, self.F, active)
            self.fair_for = (self.n_done, self.next_ready, self.n_sending)
        a = active & (self.fair > 0)
        rate = self.cc.rate if self.cfg.cc != "none" else self.line
        self.spread.append(float(np.abs(np.minimum(rate[a], self.line[a]) / self.fair[a]
                                        - 1).max()) if a.any() else 0.0)
        self.sample_t.append(self.t)

    def result(self) -> FluidResult:
        done = self.done_at
        end = float(np.nanmax(self.g_done)) if self.n_f and not np.isnan(self.g_done).any() \
            else self.t
        span = max(self.n, 1)
        start = self.g_ready[self.F.group] if self.n_f else np.zeros(0)
        return FluidResult(
            end_s=end, fct_s=done - start, start_s=start, queue_mean_bytes=self.q_sum / span,
            queue_max_bytes=self.q_max, pause_s=self.pause_t,
            marked_fraction=self.marked_b / self.sent_b if self.sent_b > 0 else 0.0,
            cnps=self.cnps, rate_spread=np.asarray(self.spread),
            sample_times=np.asarray(self.sample_t), steps=self.n, dt=self.cfg.dt)


class _CcState:
    """Per-flow congestion-control state and its update each step."""

    def __init__(self, cfg: FluidConfig, line: np.ndarray, rtt: np.ndarray,
                 hist_n: int) -> None:
        self.cfg = cfg
        self.line = line
        n = len(line)
        self.rate = line.copy()
        self.target = line.copy()
        self.alpha = np.ones(n)
        d, dt = cfg.dcqcn, cfg.dt
        self.k_alpha = max(1, round(dt / d.alpha_interval_s))
        self.dec_steps = max(1, round(d.decrease_interval_s / dt))
        self.timer_steps = max(1, round(d.increase_timer_s / dt))
        self.seen = np.zeros(n, dtype=bool)
        self.dec_flag = np.zeros(n, dtype=bool)
        self.next_dec = np.zeros(n, dtype=np.int64)
        self.next_timer = np.full(n, np.iinfo(np.int64).max)
        self.min_dec = self.min_timer = int(np.iinfo(np.int64).max)
        self.decay = (1 - d.g) ** self.k_alpha
        self.gain = 1 - (1 - d.g) ** np.arange(self.k_alpha + 1)
        self.stage = np.zeros(n, dtype=np.int64)
        self.n = 0
        self.g = np.zeros(n)
        self.hist_rtt = np.tile(rtt, (hist_n, 1))
        self.rtt = rtt

    def dcqcn_step(self, mark_log: np.ndarray, rng: np.random.Generator) -> int:
        """One step of every flow's reaction point (module docstring); ``mark_log``: log
        P(no CNP) this step, from marks one CNP delay ago. Returns the alpha intervals with
        a CNP."""
        d = self.cfg.dcqcn
        self.n += 1
        n = self.n
        # Which of the step's k alpha intervals had a CNP: one uniform per interval and flow
        # (k x n per step, always drawn, so that ``sim/fluid_star.py`` can draw the same
        # stream in blocks); u < P(a CNP in the interval) = 1 - exp(log P(none) / k).
        u = rng.random((self.k_alpha, len(mark_log)))
        nflag = np.count_nonzero(u < -np.expm1(mark_log * (1.0 / self.k_alpha)), axis=0)
        got = nflag > 0
        n_got = int(np.count_nonzero(got))
        # Alpha: (1 - g) each alpha interval, + g in one with a CNP; the flagged intervals
        # taken as the last of the step. CNPs of the first interval after a flow's first
        # CNP do not count (rdma-hw.cc resets the flag), hence ``seen`` before this step.
        self.alpha = np.where(self.seen, self.decay * self.alpha + self.gain[nflag],
                              self.alpha)
        if n_got:
            first = got & ~self.seen
            if first.any():
                self.alpha[first] = 1.0
                self.seen |= first
                self.next_dec[first] = n + self.dec_steps
                self.min_dec = min(self.min_dec, n + self.dec_steps)
            self.dec_flag |= got
        if n >= self.min_dec:
            due = self.seen & (self.next_dec <= n)
            cut = due & self.dec_flag
            c = np.flatnonzero(cut)
            if len(c):
                keep = self.stage[c] == 0
                if not d.clamp_target:
                    self.target[c] = np.where(keep, self.target[c], self.rate[c])
                else:
                    self.target[c] = self.rate[c]
                self.rate[c] = np.maximum(d.min_rate, self.rate[c] * (1 - self.alpha[c] / 2))
                self.stage[c] = 0
                self.next_timer[c] = n + self.timer_steps
                self.min_timer = min(self.min_timer, n + self.timer_steps)
            self.dec_flag &= ~due
            self.next_dec[due] += self.dec_steps
            self.min_dec = int(self.next_dec[self.seen].min())
        if n >= self.min_timer:
            i = np.flatnonzero(self.next_timer <= n)
            st = self.stage[i]
            step = np.where(st < d.fast_recovery, 0.0,
                            np.where(st == d.fast_recovery, d.rate_ai, d.rate_hai))
            self.target[i] = np.minimum(self.target[i] + step, self.line[i])
            self.rate[i] = (self.rate[i] + self.target[i]) / 2
            self.stage[i] += 1
            self.next_timer[i] += self.timer_steps
            self.min_timer = int(self.next_timer.min())
        return n_got

    def dcqcn_fluid_step(self, p: np.ndarray, x_seen: np.ndarray, ready: np.ndarray) -> None:
        d, dt = self.cfg.dcqcn, self.cfg.dt
        drc, drt, dal = dcqcn_derivatives(self.rate, self.target, self.alpha, p, x_seen, d,
                                          self.cfg.packet_bytes)
        self.rate = np.where(ready, np.clip(self.rate + drc * dt, d.min_rate, self.line),
                             self.rate)
        self.target = np.where(ready, np.clip(self.target + drt * dt, d.min_rate,
                                              self.line), self.target)
        self.alpha = np.where(ready, np.clip(self.alpha + dal * dt, 0.0, 1.0), self.alpha)

    def timely_step(self, qdelay: np.ndarray, slot: int, back: np.ndarray,
                    ready: np.ndarray) -> None:
        tm, dt = self.cfg.timely, self.cfg.dt
        cols = np.arange(len(qdelay))
        self.hist_rtt[slot] = self.rtt + qdelay
        now = self.hist_rtt[back, cols]
        before = self.hist_rtt[(back - 1) % len(self.hist_rtt), cols]
        dr, dg = timely_derivatives(self.rate, self.g, now, (now - before) / dt, tm)
        self.rate = np.where(ready, np.clip(self.rate + dr * dt, tm.min_rate, self.line),
                             self.rate)
        self.g = np.where(ready, self.g + dg * dt, self.g)


