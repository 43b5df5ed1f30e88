"""An all-to-all too large to route flow by flow, as per-link flow counts.

An all-to-all over n ranks is n(n - 1) connections: 17 billion over 131,072 GPUs. Above
``collectives.AUTO_AGGREGATE_FLOWS`` (or when asked) the simulator does not make them; it
counts, per link, how many cross it, with one aggregation rule:

- **Inside servers and at the NICs, exact.** NVLink, PCIe and NIC-to-leaf links carry a number
  of connections that follows from the rank counts per GPU, server, NVLink domain and rail
  (with PXN: each remote byte relays through the source server's GPU on the destination's
  rail), computed with bincounts.
- **Between leaves, per leaf pair, split evenly.** The connections from one leaf to another
  are counted per (source leaf, destination leaf, plane) and spread evenly over every
  equal-cost path between the two (the spray patterns of ``FabricNet``), and over the planes
  of a NIC. This is what ECMP converges to when many connections share a leaf pair: it drops
  the imbalance of hashing individual flows (a few percent when thousands of flows share
  each uplink; ``tests/sim/test_aggregate.py`` measures it against flow-by-flow ECMP where
  both run). Under spraying it is exact. Adaptive routing is treated like spraying.

The counts are bytes per link per byte each connection carries, the coefficients every other
group has, so the rest of the simulator (max-min sharing, failures, statistics) is unchanged.
"""

from __future__ import annotations

import numpy as np

from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet


def alltoall_loads(net: FabricNet, ranks: np.ndarray, pxn: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(links, connections per link) of an all-to-all over ``ranks`` (module docstring)."""
    n = len(ranks)
    count = np.zeros(net.n_links)
    dom = net.gpu_domain[ranks]
    m_dom = np.bincount(dom, minlength=int(net.gpu_domain[-1]) + 1)
    remote = n - m_dom[dom]  # peers of each rank outside its NVLink domain
    # Peers inside the domain: NVLink up from the sender, down into the receiver.
    local = (m_dom[dom] - 1).astype(float)
    np.add.at(count, net.gpu_up[ranks], local)
    np.add.at(count, net.gpu_down[ranks], local)
    np.add.at(count, net.nic_to_gpu[ranks], remote.astype(float))
    width = net.nic_plane_up.shape[1]
    if not pxn:
        src_gpu, src_n = ranks, remote.astype(float)
        pairs = _leaf_pairs_direct(net, ranks, dom)
    else:
        src_gpu, src_n, pairs = _pxn(net, ranks, dom, m_dom, count)
    np.add.at(count, net.gpu_to_nic[src_gpu], src_n)
    # NIC links, every plane an equal share.
    for p in range(width):
        up = net.nic_plane_up[net.gpu_nic_id[src_gpu], p]
        down = net.nic_plane_down[net.gpu_nic_id[ranks], p]
        if (up < 0).any() or (down < 0).any() or not net.alive[up].all() \
                or not net.alive[down].all():
            raise SimError("an aggregated all-to-all needs every NIC-leaf link of its ranks "
                           "alive; fail switches instead, or simulate fewer ranks")
        np.add.at(count, up, src_n / width)
        np.add.at(count, down, remote / width)
    for la, lb, c in pairs:
        _spray_pairs(net, la, lb, c / width, count)
    links = np.flatnonzero(count > 0)
    return links, count[links]


def _leaf_pairs_direct(net: FabricNet, ranks: np.ndarray, dom: np.ndarray
                       ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Connections per (source leaf, destination leaf) of every plane without PXN: every
    pair of ranks in different domains, from the sender's NIC to the receiver's."""
    out = []
    nic = net.gpu_nic_id[ranks]
    i, j = _same_domain_pairs(dom, dom)  # every rank with every rank of its domain
    for p in range(net.nic_plane_up.shape[1]):
        leaf = net.nic_plane_leaf[nic, p]
        ids, inv = np.unique(leaf, return_inverse=True)
        c = np.bincount(inv, minlength=len(ids)).astype(float)
        total = np.outer(c, c)
        np.subtract.at(total, (inv[i], inv[j]), 1.0)
        la, lb = np.nonzero(total > 0.5)
        out.append((ids[la], ids[lb], total[la, lb]))
    return out


def _pxn(net: FabricNet, ranks: np.ndarray, dom: np.ndarray, m_dom: np.ndarray,
         count: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                     list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """With PXN: the NVLink hops to the relays (added to ``count``), the relay GPUs and the
    connections each sends, and the connections per leaf pair of every plane."""
    gph = net.gpus_per_host
    host = ranks // gph
    rail_of = ranks % gph
    hosts, inv_h, m_host = np.unique(host, return_inverse=True, return_counts=True)
    dom_of_host = net.gpu_domain[hosts * gph]
    n_dom = len(m_dom)
    # Ranks per (domain, local index) and in total per local index ("rail" of the GPU).
    per_r = np.bincount(rail_of, minlength=gph).astype(float)
    per_dr = np.zeros((n_dom, gph))
    np.add.at(per_dr, (dom, rail_of), 1.0)
    rem = per_r[None, :] - per_dr[dom_of_host]  # [host, r]: remote receivers on local index r
    # Sender a relays to the GPU of its server on each destination's index r != its own.
    rem_a = rem[inv_h]
    np.add.at(count, net.gpu_up[ranks], rem_a.sum(axis=1) - rem_a[np.arange(len(ranks)),
                                                                   rail_of])
    relay = (hosts[:, None] * gph + np.arange(gph)[None, :])  # [host, r]
    in_set = np.zeros((len(hosts), gph))
    in_set[inv_h, rail_of] = 1.0
    np.add.at(count, net.gpu_down[relay.ravel()],
              ((m_host[:, None] - in_set) * rem).ravel())
    src_n = (m_host[:, None] * rem).ravel()
    src_gpu = relay.ravel()
    keep = src_n > 0
    src_gpu, src_n = src_gpu[keep], src_n[keep]
    out = []
    for p in range(net.nic_plane_up.shape[1]):
        leaf_rank = net.nic_plane_leaf[net.gpu_nic_id[ranks], p]
        leaf_relay = net.nic_plane_leaf[net.gpu_nic_id[relay], p]  # [host, r]
        ids, inv = np.unique(np.concatenate([leaf_rank, leaf_relay.ravel()]),
                             return_inverse=True)
        lr = inv[:len(ranks)]
        lrel = inv[len(ranks):].reshape(relay.shape)
        k = len(ids)
        total = np.zeros((k, k))
        for r in range(gph):
            # v: senders per leaf of the relays on index r; u: receivers on index r per leaf.
            v = np.bincount(lrel[:, r], weights=m_host.astype(float), minlength=k)
            u = np.bincount(lr[rail_of == r], minlength=k).astype(float)
            total += np.outer(v, u)
        # Minus receivers in the sender's own domain (they are reached over NVLink).
        hi, bi = _same_domain_pairs(dom_of_host, dom)
        np.subtract.at(total, (lrel[hi, rail_of[bi]], lr[bi]), m_host[hi].astype(float))
        la, lb = np.nonzero(total > 0.5)
        out.append((ids[la], ids[lb], total[la, lb]))
    return src_gpu, src_n, out


def _same_domain_pairs(dom_of_host: np.ndarray, dom: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j) index pair with ``dom_of_host[i] == dom[j]``."""
    order = np.argsort(dom, kind="stable")
    ds = dom[order]
    lo = np.searchsorted(ds, dom_of_host, side="left")
    hi = np.searchsorted(ds, dom_of_host, side="right")
    cnt = hi - lo
    h = np.repeat(np.arange(len(dom_of_host)), cnt)
    offs = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return h, order[np.repeat(lo, cnt) + offs]


def _spray_pairs(net: FabricNet, la: np.ndarray, lb: np.ndarray, c: np.ndarray,
                 count: np.ndarray) -> None:
    """Add ``c`` connections from leaf ``la`` to leaf ``lb`` spread evenly over every
    equal-cost path (per pair; factorized into per-leaf halves while every link is up)."""
    m = la != lb
    la, lb, c = la[m], lb[m], c[m]
    if not len(la):
        return
    names = net.sw_names
    if net.alive.all():
        cross = (net.three_tier & (net.sw_pod[la] != net.sw_pod[lb])).astype(np.int64)
        for leaves, half in ((la, net.spray_up), (lb, net.spray_down)):
            key = leaves * 2 + cross
            ids, inv = np.unique(key, return_inverse=True)
            w = np.bincount(inv, weights=c)
            for kv, wt in zip(ids.tolist(), w.tolist(), strict=True):
                pat, frac = half(names[kv // 2], bool(kv % 2))
                np.add.at(count, pat, frac * wt)
        return
    for a, b, wt in zip(la.tolist(), lb.tolist(), c.tolist(), strict=True):
        pat, frac = net.spray(names[a], names[b])
        np.add.at(count, pat, frac * wt)
