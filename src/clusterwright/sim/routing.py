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
    """Where each route (sub-flow) of a group goes.

    ``whole``: links each route uses in full, one row per route (-1 pads). ``parts``: links a
    route uses for a fraction of its bytes (one row per plane share), in route then plane
    order, with the route index and fraction. ``spray_*``: spray legs (route, source leaf,
    destination leaf as switch ids, fraction). ``cut``: routes with no live path.
    """

    whole: np.ndarray
    parts: np.ndarray
    part_route: np.ndarray
    part_frac: np.ndarray
    spray_route: np.ndarray
    spray_la: np.ndarray
    spray_lb: np.ndarray
    spray_frac: np.ndarray
    cut: np.ndarray

    def __len__(self) -> int:
        return len(self.whole)

    def touching(self, dead: np.ndarray) -> np.ndarray:
        """Routes that use a dead link or spray (sprays re-split over what is left)."""
        pad = np.append(dead, False)
        hit: np.ndarray = pad[self.whole].any(axis=1)
        if len(self.parts):
            hit[self.part_route[pad[self.parts].any(axis=1)]] = True
        hit[self.spray_route] = True
        return hit

    @staticmethod
    def splice(old: Routes, new: Routes, idx: np.ndarray) -> Routes:
        """``old`` with routes ``idx`` replaced by ``new`` (routed for exactly those)."""
        width = max(old.whole.shape[1], new.whole.shape[1])
        whole = _widen(old.whole, width)
        whole[idx] = _widen(new.whole, width)
        keep_p = ~np.isin(old.part_route, idx)
        keep_s = ~np.isin(old.spray_route, idx)
        pw = max(old.parts.shape[1], new.parts.shape[1])
        parts = np.concatenate([_widen(old.parts[keep_p], pw), _widen(new.parts, pw)])
        p_route = np.concatenate([old.part_route[keep_p], idx[new.part_route]])
        p_frac = np.concatenate([old.part_frac[keep_p], new.part_frac])
        po = np.argsort(p_route, kind="stable")
        s_route = np.concatenate([old.spray_route[keep_s], idx[new.spray_route]])
        so = np.argsort(s_route, kind="stable")
        cut = old.cut.copy()
        cut[idx] = new.cut
        return Routes(
            whole, parts[po], p_route[po], p_frac[po], s_route[so],
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


def _lookup(keys: np.ndarray, start: np.ndarray, cnt: np.ndarray,
            q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, count) of every query key in a sorted bucket table (count 0 if absent)."""
    if not len(keys):
        return np.zeros(len(q), np.int64), np.zeros(len(q), np.int64)
    i = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
    found = keys[i] == q
    return np.where(found, start[i], 0), np.where(found, cnt[i], 0)


def _hop_full(net: FabricNet, here: np.ndarray, lb: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Next link from each switch towards its destination leaf, every link alive (-1: none)."""
    out = np.full(len(here), -1, dtype=np.int64)
    role = net.sw_role[here]
    n_sw = len(net.sw_names)
    leaf = role == 0
    if leaf.any():
        s = here[leaf]
        cnt = net.up_cnt[s]
        out[leaf] = np.where(cnt > 0, net.up_tab[s, _pick(cnt, h[leaf])], -1)
    spine = role == 1
    if spine.any():
        s, d, hh = here[spine], lb[spine], h[spine]
        down = _bucket_pick(net.sl_keys, net.sl_start, net.sl_cnt, net.sl_links,
                            s * n_sw + d, hh)
        ucnt = net.up_cnt[s]
        cross = (down < 0) & net.three_tier & (net.sw_pod[s] != net.sw_pod[d]) & (ucnt > 0)
        up = net.up_tab[s, _pick(ucnt, hh)]
        out[spine] = np.where(down >= 0, down, np.where(cross, up, -1))
    core = role == 2
    if core.any():
        s, d = here[core], lb[core]
        out[core] = _bucket_pick(net.cp_keys, net.cp_start, net.cp_cnt, net.cp_links,
                                 s * net.n_pods + net.sw_pod[d], h[core])
    return out


def _bucket_pick(keys: np.ndarray, start: np.ndarray, cnt: np.ndarray, values: np.ndarray,
                 q: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The ``h mod n``-th of the ``n`` values of each query's bucket (-1 if it has none)."""
    st, c = _lookup(keys, start, cnt, q)
    out = np.full(len(q), -1, dtype=np.int64)
    hit = c > 0
    out[hit] = values[st[hit] + _pick(c[hit], h[hit])]
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
          assigned: np.ndarray | None = None) -> Routes:
    """Routes of the sub-flows ``which`` (default: all ``len(flows) * subs``) of ``flows``
    under ``routing`` (module docstring). ``assigned`` is adaptive routing's flows per link,
    updated as each leg is placed."""
    r = np.arange(len(flows) * subs, dtype=np.int64) if which is None else which
    f, s = r // subs, r % subs
    src, dst, via, nv = flows.src[f], flows.dst[f], flows.via[f], flows.nvls[f]
    n = len(r)
    has_via = (via >= 0) & ~nv
    s0 = np.where(has_via, via, src)
    relay = has_via & (via != src)
    local = ~nv & (net.gpu_domain[s0] == net.gpu_domain[dst])
    hop2 = local & (s0 != dst)
    netw = ~nv & ~local
    cols = [np.where(relay, net.gpu_up[src], -1), np.where(relay, net.gpu_down[np.maximum(via, 0)],
                                                           -1),
            np.where(hop2, net.gpu_up[s0], -1), np.where(hop2, net.gpu_down[dst], -1),
            np.where(nv, net.gpu_up[src], -1), np.where(nv, net.gpu_down[src], -1)]
    cut = np.zeros(n, dtype=bool)
    empty = np.zeros(0, dtype=np.int64)
    parts = np.zeros((0, 2), dtype=np.int64)
    p_route, p_frac = empty, np.zeros(0)
    sp = (empty, empty, empty, np.zeros(0))
    ni = np.flatnonzero(netw)
    if len(ni):
        key = route_keys(flows.key[f[ni]], s[ni], generation)
        nic_a, nic_b = net.gpu_nic_id[s0[ni]], net.gpu_nic_id[dst[ni]]
        up_a, dn_b = net.nic_plane_up[nic_a], net.nic_plane_down[nic_b]
        alive = np.append(net.alive, False)
        present = up_a >= 0
        complete = np.all(~present | (dn_b >= 0), axis=1)
        valid = present & (dn_b >= 0) & alive[up_a] & alive[dn_b] & complete[:, None]
        p = valid.sum(axis=1)
        cut[ni[p == 0]] = True
        split = (p > 1) & plane_spray
        # One plane, hashed, where the connection is not split over them.
        k = _pick(p, tier_hash(key, salts[7]))
        rank = np.cumsum(valid, axis=1) - 1
        chosen = valid & (rank == k[:, None]) & ~split[:, None] & (p > 0)[:, None]
        use = np.where(split[:, None], valid, chosen)
        leg, col = np.nonzero(use)  # row-major: route, then plane order
        frac = np.where(split[leg], 1.0 / np.maximum(p[leg], 1), 1.0)
        route_of = ni[leg]
        up = up_a[leg, col]
        down = dn_b[leg, col]
        la = net.nic_plane_leaf[nic_a[leg], col]
        lb = net.nic_plane_leaf[nic_b[leg], col]
        nic_cols = (np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
        ok = ni[p > 0]
        nic_cols[0][ok] = net.gpu_to_nic[s0[ok]]
        nic_cols[1][ok] = net.nic_to_gpu[dst[ok]]
        cols += list(nic_cols)
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
            seg = np.concatenate([up[:, None], path, down[:, None]], axis=1)
            seg = _compact(seg)
            whole_leg = frac == 1.0
            w = np.full((n, seg.shape[1]), -1, dtype=np.int64)
            w[route_of[whole_leg]] = seg[whole_leg]
            cols += list(w.T)
            parts = seg[~whole_leg]
            p_route, p_frac = route_of[~whole_leg], frac[~whole_leg]
    whole = np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.int64)
    # Routes with no live path carry nothing (the caller raises).
    whole[cut] = -1
    keep = ~cut[p_route]
    sk = ~cut[sp[0]]
    # Route indices are local to ``which`` (``Routes.splice`` maps them back).
    return Routes(whole, parts[keep], p_route[keep], p_frac[keep], sp[0][sk], sp[1][sk],
                  sp[2][sk], sp[3][sk], cut)


def _compact(seg: np.ndarray) -> np.ndarray:
    """Move each row's links left over its -1 gaps (a leg inside one leaf has no transit)."""
    valid = seg >= 0
    if valid.all():
        return seg
    order = np.argsort(~valid, axis=1, kind="stable")
    out = np.take_along_axis(seg, order, axis=1)
    width = int(valid.sum(axis=1).max(initial=0))
    return out[:, :max(width, 1)]


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
    whole = routes.whole[routes.whole >= 0]
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
    links = np.flatnonzero(np.bincount(all_ids, minlength=net.n_links))
    return links, coef[links]


def _first_seen(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys in order of first appearance, index of each element's key in it)."""
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[inv]
