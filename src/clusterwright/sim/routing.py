"""Routing every connection of a group at once: the links of each (sub)flow as arrays.

The algorithm is the one ``FabricNet`` documents (valley-free, equal-cost next hops per tier),
applied to all flows together:

- A connection is split into queue pairs (sub-flows, ``subs`` of them); each has the route key
  ``mix64(key * 1,000,003 + sub + generation * 0x9E3779B1)`` (the generation counts failures,
  so a flow a failure moves is hashed afresh).
- Its NIC-to-leaf links per plane come from ``FabricNet``'s NIC tables: every live plane with
  ``plane_spray`` (NCCL spreads channels over a NIC's ports), else one hashed with tier 7.
- ECMP: at every tier the next hop is the ``hash(key, tier) mod n``-th of the ``n`` equal-cost
  links, gathered from the switch's uplink table, the (spine, leaf) parallel links or the
  (core, pod) links. With every link alive and a designer-built fat tree every candidate
  reaches every leaf, so the tables are used as they are; after a failure the candidates of
  each distinct (switch, destination leaf) pair come from ``FabricNet._next_hops`` (the
  reachability-filtered lists), and the hash picks among those.
- Adaptive routing is greedy by definition (each flow sees the load the earlier ones left), so
  it walks the legs one by one through ``FabricNet.least_loaded_path``.
- Spraying records (source leaf, destination leaf, fraction) and leaves the per-link split to
  the cached spray patterns.

A group's per-link coefficients are summed with ``np.bincount`` in the order the per-flow
simulator summed them (links used by a plane's share first, spray patterns, links used whole,
then unfactorized spray patterns), so every coefficient is the same float, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet
from clusterwright.sim.flows import Flows, mix64_array, u64

_ROUTE_MUL = np.uint64(1_000_003)
_GENERATION = 0x9E3779B1
MAX_HOPS = 8  # a fat tree of depth 3 needs 4 switch-to-switch hops; more is a routing loop


@dataclass
class Routes:
    """Where each route (sub-flow) of a group goes; route indices are local to the routes
    asked for.

    ``whole_route``/``whole_link``: the links each route uses in full, as (route, link) pairs.
    ``parts``: links a route uses for a fraction of its bytes (one row per plane share, -1
    pads), in route then plane order, with the route index and fraction. ``spray_*``: spray
    legs (route, source leaf, destination leaf as switch ids, fraction). ``cut``: routes with
    no live path (they carry no links).
    """

    whole_route: np.ndarray
    whole_link: np.ndarray
    parts: np.ndarray
    part_route: np.ndarray
    part_frac: np.ndarray
    spray_route: np.ndarray
    spray_la: np.ndarray
    spray_lb: np.ndarray
    spray_frac: np.ndarray
    cut: np.ndarray

    def __len__(self) -> int:
        return len(self.cut)

    def touching(self, dead: np.ndarray) -> np.ndarray:
        """Routes that use a dead link or spray (sprays re-split over what is left)."""
        hit = np.zeros(len(self), dtype=bool)
        hit[self.whole_route[dead[self.whole_link]]] = True
        if len(self.parts):
            pad = np.append(dead, False)
            hit[self.part_route[pad[self.parts].any(axis=1)]] = True
        hit[self.spray_route] = True
        return hit

    def whole_of(self, i: int) -> np.ndarray:
        """The links route ``i`` uses in full."""
        out: np.ndarray = self.whole_link[self.whole_route == i]
        return out

    @staticmethod
    def splice(old: Routes, new: Routes, idx: np.ndarray) -> Routes:
        """``old`` with routes ``idx`` replaced by ``new`` (routed for exactly those)."""
        keep_w = ~np.isin(old.whole_route, idx)
        keep_p = ~np.isin(old.part_route, idx)
        keep_s = ~np.isin(old.spray_route, idx)
        pw = max(old.parts.shape[1], new.parts.shape[1])
        parts = np.concatenate([_widen(old.parts[keep_p], pw), _widen(new.parts, pw)])
        p_route = np.concatenate([old.part_route[keep_p], idx[new.part_route]])
        po = np.argsort(p_route, kind="stable")
        s_route = np.concatenate([old.spray_route[keep_s], idx[new.spray_route]])
        so = np.argsort(s_route, kind="stable")
        cut = old.cut.copy()
        cut[idx] = new.cut
        return Routes(
            np.concatenate([old.whole_route[keep_w], idx[new.whole_route]]),
            np.concatenate([old.whole_link[keep_w], new.whole_link]),
            parts[po], p_route[po],
            np.concatenate([old.part_frac[keep_p], new.part_frac])[po], s_route[so],
            np.concatenate([old.spray_la[keep_s], new.spray_la])[so],
            np.concatenate([old.spray_lb[keep_s], new.spray_lb])[so],
            np.concatenate([old.spray_frac[keep_s], new.spray_frac])[so], cut)


def _widen(a: np.ndarray, width: int) -> np.ndarray:
    if a.shape[1] >= width:
        return a.copy()
    out = np.full((a.shape[0], width), -1, dtype=np.int64)
    out[:, :a.shape[1]] = a
    return out


def route_keys(key: np.ndarray, sub: np.ndarray, generation: int) -> np.ndarray:
    """``mix64(key * 1,000,003 + sub + generation * 0x9E3779B1)`` modulo 2^64."""
    with np.errstate(over="ignore"):
        x = key * _ROUTE_MUL + sub.astype(np.uint64) + u64(generation * _GENERATION)
    return mix64_array(x)


def tier_hash(key: np.ndarray, salt: int) -> np.ndarray:
    """The ECMP hash of a route key at one tier (``mix64(key ^ salt)``)."""
    return mix64_array(key ^ u64(salt))


def _pick(cnt: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``h mod cnt`` as an index (0 where there is nothing to pick)."""
    safe = np.maximum(cnt, 1).astype(np.uint64)
    out: np.ndarray = (h % safe).astype(np.int64)
    return out


def _hop_full(net: FabricNet, here: np.ndarray, lb: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Next link from each switch towards its destination leaf, every link alive (-1: none)."""
    out = np.full(len(here), -1, dtype=np.int64)
    role = net.sw_role[here]
    leaf = role == 0
    if leaf.all():
        cnt = net.up_cnt[here]
        return np.where(cnt > 0, net.up_tab[here, _pick(cnt, h)], -1)
    if leaf.any():
        s = here[leaf]
        cnt = net.up_cnt[s]
        out[leaf] = np.where(cnt > 0, net.up_tab[s, _pick(cnt, h[leaf])], -1)
    spine = np.flatnonzero(role == 1)
    if len(spine):
        s, d, hh = here[spine], lb[spine], h[spine]
        rs, rd = net.sw_row[s], net.sw_row[d]
        cnt = net.sl_dense_cnt[rs, rd]
        down = cnt > 0
        i = np.flatnonzero(down)
        out[spine[i]] = net.sl_links[net.sl_dense_start[rs[i], rd[i]] + _pick(cnt[i], hh[i])]
        j = np.flatnonzero(~down)
        if len(j) and net.three_tier:
            sj = s[j]
            ucnt = net.up_cnt[sj]
            cross = (net.sw_pod[sj] != net.sw_pod[d[j]]) & (ucnt > 0)
            k = j[cross]
            out[spine[k]] = net.up_tab[s[k], _pick(ucnt[cross], hh[k])]
    core = np.flatnonzero(role == 2)
    if len(core):
        rs, pod = net.sw_row[here[core]], net.sw_pod[lb[core]]
        cnt = net.cp_dense_cnt[rs, pod]
        i = np.flatnonzero(cnt > 0)
        out[core[i]] = net.cp_links[net.cp_dense_start[rs[i], pod[i]]
                                    + _pick(cnt[i], h[core[i]])]
    return out


def _hop_filtered(net: FabricNet, here: np.ndarray, lb: np.ndarray,
                  h: np.ndarray) -> np.ndarray:
    """Next link after failures: the hash picks among ``_next_hops`` of each distinct
    (switch, destination leaf) pair."""
    n_sw = len(net.sw_names)
    pairs, inv = np.unique(here * n_sw + lb, return_inverse=True)
    lists = [net._next_hops(net.sw_names[int(p) // n_sw], net.sw_names[int(p) % n_sw])
             for p in pairs]
    cnt = np.asarray([len(x) for x in lists], dtype=np.int64)
    tab = np.full((len(lists), max(1, int(cnt.max(initial=0)))), -1, dtype=np.int64)
    for i, x in enumerate(lists):
        tab[i, :len(x)] = x
    c = cnt[inv]
    return np.where(c > 0, tab[inv, _pick(c, h)], -1)


def transit(net: FabricNet, la: np.ndarray, lb: np.ndarray, key: np.ndarray,
            salts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """ECMP switch-to-switch links from each source leaf to its destination leaf:
    (paths, one row per leg padded with -1; cut, legs with no live path). ``salts[t]`` is the
    hash salt of tier ``t``."""
    n = len(la)
    paths = np.full((n, 2 if not net.three_tier else 4), -1, dtype=np.int64)
    cut = np.zeros(n, dtype=bool)
    here = la.copy()
    active = here != lb
    full = net.full and bool(net.alive.all())
    tier = 0
    while True:
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        if tier >= MAX_HOPS:  # pragma: no cover - the fabric is a tree of depth 3
            raise AssertionError("routing loop")
        h = tier_hash(key[idx], salts[tier])
        hop = (_hop_full if full else _hop_filtered)(net, here[idx], lb[idx], h)
        bad = hop < 0
        cut[idx[bad]] = True
        active[idx[bad]] = False
        ok, hop = idx[~bad], hop[~bad]
        if tier >= paths.shape[1]:
            paths = _widen(paths, tier + 1)
        paths[ok, tier] = hop
        here[ok] = net.link_sw[hop]
        active[ok] = here[ok] != lb[ok]
        tier += 1
    return paths, cut


def route(net: FabricNet, flows: Flows, subs: int, routing: str, salts: list[int],
          plane_spray: bool, generation: int = 0, which: np.ndarray | None = None,
          assigned: np.ndarray | None = None, rows: bool = True) -> Routes:
    """Routes of the sub-flows ``which`` (default: all ``len(flows) * subs``) of ``flows``
    under ``routing`` (module docstring). ``assigned`` is adaptive routing's flows per link,
    updated as each leg is placed. Without ``rows`` the whole links are not tied to their
    routes (``whole_route`` is empty): enough for coefficients, not for re-routing."""
    r = np.arange(len(flows) * subs, dtype=np.int64) if which is None else which
    f = r // subs if subs > 1 else r
    if which is None and subs == 1:  # every flow once: the arrays as they are
        src, dst, via, nv = flows.src, flows.dst, flows.via, flows.nvls
    else:
        src, dst, via, nv = flows.src[f], flows.dst[f], flows.via[f], flows.nvls[f]
    n = len(r)
    w_rows: list[np.ndarray] = []
    w_links: list[np.ndarray] = []

    def whole(at: np.ndarray, links: np.ndarray) -> None:
        if rows:
            w_rows.append(at)
        w_links.append(links)

    any_nv = bool(nv.any())
    if any_nv:
        i = np.flatnonzero(nv)
        whole(i, net.gpu_up[src[i]])
        whole(i, net.gpu_down[src[i]])
    has_via = via >= 0
    if any_nv:
        has_via &= ~nv
    s0 = np.where(has_via, via, src)
    i = np.flatnonzero(has_via & (via != src))
    whole(i, net.gpu_up[src[i]])
    whole(i, net.gpu_down[via[i]])
    local = net.gpu_domain[s0] == net.gpu_domain[dst]
    if any_nv:
        local &= ~nv
    i = np.flatnonzero(local & (s0 != dst))
    whole(i, net.gpu_up[s0[i]])
    whole(i, net.gpu_down[dst[i]])
    cut = np.zeros(n, dtype=bool)
    empty = np.zeros(0, dtype=np.int64)
    parts = np.zeros((0, 2), dtype=np.int64)
    p_route, p_frac = empty, np.zeros(0)
    sp = (empty, empty, empty, np.zeros(0))
    ni = np.flatnonzero(~(local | nv) if any_nv else ~local)
    if len(ni):
        sub = r[ni] % subs if subs > 1 else np.zeros(len(ni), dtype=np.int64)
        key = route_keys(flows.key[f[ni]], sub, generation)
        nic_a, nic_b = net.gpu_nic_id[s0[ni]], net.gpu_nic_id[dst[ni]]
        leg, col, frac, p = _planes(net, nic_a, nic_b, key, salts, plane_spray)
        cut[ni[p == 0]] = True
        ok = ni[p > 0]
        whole(ok, net.gpu_to_nic[s0[ok]])
        whole(ok, net.nic_to_gpu[dst[ok]])
        route_of = ni[leg]
        if net.nic_plane_up.shape[1] == 1:  # one plane: 1-D gathers
            a, b = nic_a[leg], nic_b[leg]
            up, down = net.nic_plane_up[:, 0][a], net.nic_plane_down[:, 0][b]
            la, lb = net.nic_plane_leaf[:, 0][a], net.nic_plane_leaf[:, 0][b]
        else:
            up = net.nic_plane_up[nic_a[leg], col]
            down = net.nic_plane_down[nic_b[leg], col]
            la = net.nic_plane_leaf[nic_a[leg], col]
            lb = net.nic_plane_leaf[nic_b[leg], col]
        if routing == "spray":
            parts = np.stack([up, down], axis=1)
            p_route, p_frac = route_of, frac
            m = la != lb
            sp = (route_of[m], la[m], lb[m], frac[m])
        else:
            if routing == "ecmp":
                path, leg_cut = transit(net, la, lb, key[leg], salts)
            else:
                path, leg_cut = _adaptive(net, la, lb, key[leg], assigned, subs)
            cut[route_of[leg_cut]] = True
            one = frac == 1.0
            if one.all():
                whole(route_of, up)
                whole(route_of, down)
                for t in range(path.shape[1]):
                    m = path[:, t] >= 0
                    whole(route_of[m], path[m, t])
            else:
                wi = np.flatnonzero(one)
                whole(route_of[wi], up[wi])
                whole(route_of[wi], down[wi])
                for t in range(path.shape[1]):
                    m = wi[path[wi, t] >= 0]
                    whole(route_of[m], path[m, t])
                pi = np.flatnonzero(~one)
                parts = np.concatenate([up[pi, None], path[pi], down[pi, None]], axis=1)
                p_route, p_frac = route_of[pi], frac[pi]
    wr = np.concatenate(w_rows) if w_rows else empty
    wl = np.concatenate(w_links) if w_links else empty
    if cut.any():  # routes with no live path carry nothing (the caller raises)
        if rows:
            keep = ~cut[wr]
            wr, wl = wr[keep], wl[keep]
        pk, sk = ~cut[p_route], ~cut[sp[0]]
        parts, p_route, p_frac = parts[pk], p_route[pk], p_frac[pk]
        sp = (sp[0][sk], sp[1][sk], sp[2][sk], sp[3][sk])
    return Routes(wr, wl, parts, p_route, p_frac, sp[0], sp[1], sp[2], sp[3], cut)


def _planes(net: FabricNet, nic_a: np.ndarray, nic_b: np.ndarray, key: np.ndarray,
            salts: list[int], plane_spray: bool
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The planes each network route uses: (leg's route row, plane column, fraction of the
    route's bytes, live planes per route). Every live plane when ``plane_spray`` splits the
    connection over them, else one, the ``hash(key, 7) mod n``-th of the ``n`` live ones."""
    up_a, dn_b = net.nic_plane_up[nic_a], net.nic_plane_down[nic_b]
    alive = np.append(net.alive, False)
    present = up_a >= 0
    valid = present & (dn_b >= 0) & alive[up_a] & alive[dn_b]
    if up_a.shape[1] == 1:  # one plane: every live route uses it whole
        p = valid[:, 0].astype(np.int64)
        leg = np.flatnonzero(valid[:, 0])
        return leg, np.zeros(len(leg), dtype=np.int64), np.ones(len(leg)), p
    complete = np.all(~present | (dn_b >= 0), axis=1)
    valid &= complete[:, None]
    p = valid.sum(axis=1)
    split = (p > 1) & plane_spray
    k = _pick(p, tier_hash(key, salts[7]))
    rank = np.cumsum(valid, axis=1) - 1
    chosen = valid & (rank == k[:, None]) & ~split[:, None]
    use = np.where(split[:, None], valid, chosen)
    leg, col = np.nonzero(use)  # row-major: route, then plane order
    frac = np.where(split[leg], 1.0 / np.maximum(p[leg], 1), 1.0)
    return leg, col, frac, p


def _adaptive(net: FabricNet, la: np.ndarray, lb: np.ndarray, key: np.ndarray,
              assigned: np.ndarray | None, subs: int) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive routing, one leg at a time in order: the least-loaded whole path, then its
    links count one more (sub-)flow."""
    if assigned is None:
        raise ValueError("adaptive routing needs the per-link flow counts")
    names = net.sw_names
    paths = np.full((len(la), 4 if net.three_tier else 2), -1, dtype=np.int64)
    cut = np.zeros(len(la), dtype=bool)
    for i, (a, b, k) in enumerate(zip(la.tolist(), lb.tolist(), key.tolist(), strict=True)):
        if a == b:
            continue
        try:
            path = net.least_loaded_path(names[a], names[b], assigned, k)
        except SimError:
            cut[i] = True
            continue
        assigned[path] += 1.0 / subs
        paths[i, :len(path)] = path
    return paths, cut


def coefficients(net: FabricNet, routes: Routes, subs: int) -> tuple[np.ndarray, np.ndarray]:
    """(links, bytes per link per byte of each flow) of a group's routes, summed in the order
    the per-flow simulator used (module docstring)."""
    ids: list[np.ndarray] = []
    ws: list[np.ndarray] = []
    if len(routes.parts):
        m = routes.parts >= 0
        ids.append(routes.parts[m])
        ws.append(np.broadcast_to((routes.part_frac / subs)[:, None], m.shape)[m])
    spray_w: dict[tuple[int, int], float] = {}
    if len(routes.spray_route):
        names = net.sw_names
        w = routes.spray_frac / subs
        if net.alive.all():
            cross = (net.three_tier & (net.sw_pod[routes.spray_la]
                                       != net.sw_pod[routes.spray_lb])).astype(np.int64)
            for side, leaves in ((0, routes.spray_la), (1, routes.spray_lb)):
                key = leaves * 2 + cross
                order, inv = _first_seen(key)
                total = np.bincount(inv, weights=w)
                for j, kv in enumerate(order.tolist()):
                    leaf, is_cross = names[kv // 2], bool(kv % 2)
                    pat, frac = (net.spray_up if side == 0 else net.spray_down)(leaf, is_cross)
                    ids.append(pat)
                    ws.append(frac * total[j])
        else:
            key = routes.spray_la * len(names) + routes.spray_lb
            order, inv = _first_seen(key)
            total = np.bincount(inv, weights=w)
            for j, kv in enumerate(order.tolist()):
                spray_w[(kv // len(names), kv % len(names))] = float(total[j])
    whole = routes.whole_link
    if not ids and not spray_w and subs & (subs - 1) == 0:
        # Whole links only, each adding 1/subs, a power of two: the sum is exact in any
        # order, so integer counts scaled give the same floats as adding one by one.
        if not len(whole):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        count = np.bincount(whole, minlength=net.n_links)
        links = np.flatnonzero(count)
        return links, count[links] * (1.0 / subs)
    if len(whole):
        ids.append(whole)
        ws.append(np.full(len(whole), 1.0 / subs))
    for (a, b), wt in spray_w.items():
        pat, frac = net.spray(net.sw_names[a], net.sw_names[b])
        ids.append(pat)
        ws.append(frac * wt)
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    all_ids = np.concatenate(ids)
    coef = np.bincount(all_ids, weights=np.concatenate(ws), minlength=net.n_links)
    links = np.flatnonzero(coef > 0)  # every term is positive: used iff positive
    return links, coef[links]


def _first_seen(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys in order of first appearance, index of each element's key in it)."""
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[inv]
