"""A hand-built 2-tier leaf/spine LabSpec with configs in the generated-config conventions.

Addressing: leaf i (1-based) has loopback 10.0.0.i, ASN 4200000000+i and host block
10.128.0.(64(i-1))/26; spine j has loopback 10.0.1.j and the shared spine ASN. Cable
leaf i swp j <-> spine j swp i is /31 number k = (i-1)*spines + (j-1): spine side
10.64.0.(2k), leaf side 10.64.0.(2k+1). Host on leaf i sits on the first /31 of the block,
the leaf on the even address.

Follows the conventions of the generated configs, except that the prefix-list and route-map
come before `router bgp` (see leaf_config).
"""

from __future__ import annotations

import ipaddress

from clusterwright.lab import LabHost, LabLink, LabSpec, LabSwitch, RouteCheck

SPINE_ASN = 4200100000
HOST_PORT = "swp33"


def leaf_name(i: int) -> str:
    return f"leaf-su1-r{i}"


def spine_name(j: int) -> str:
    return f"spine-{j}"


def host_name(i: int) -> str:
    return f"node-{i:03d}"


def host_block(i: int) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"10.128.0.{64 * (i - 1)}/26")


def cable(i: int, j: int, spines: int) -> tuple[str, str]:
    """(spine-side address, leaf-side address) of the leaf i <-> spine j /31."""
    k = (i - 1) * spines + (j - 1)
    return f"10.64.0.{2 * k}", f"10.64.0.{2 * k + 1}"


def leaf_config(i: int, spines: int) -> str:
    block = host_block(i)
    leaf_ip, host_ip = block.network_address, block.network_address + 1
    lines = [
        "frr version 8.4",
        "frr defaults datacenter",
        f"hostname {leaf_name(i)}",
        "no ipv6 forwarding",
        "service integrated-vtysh-config",
        "!",
        "interface lo",
        f" ip address 10.0.0.{i}/32",
        "!",
    ]
    for j in range(1, spines + 1):
        _, leaf_side = cable(i, j, spines)
        lines += [
            f"interface swp{j}",
            f" description {spine_name(j)} swp{i}",
            f" ip address {leaf_side}/31",
            "!",
        ]
    lines += [
        f"interface {HOST_PORT}",
        f" description host {host_name(i)} nic0 ({host_ip})",
        f" ip address {leaf_ip}/31",
        "!",
        # Policy before `router bgp`, unlike `show running-config` order: when the route-map
        # is defined after `redistribute ... route-map`, bgpd applies it only when
        # `bgp route-map delay-timer` (default 5 s) fires, adding 5 s to convergence.
        f"ip prefix-list HOST_LINKS seq 10 permit {block} le 32",
        "route-map HOST_LINKS permit 10",
        " match ip address prefix-list HOST_LINKS",
        "!",
        f"router bgp {4200000000 + i}",
        f" bgp router-id 10.0.0.{i}",
        " bgp bestpath as-path multipath-relax",
        " no bgp ebgp-requires-policy",
        " timers bgp 1 3",
        " neighbor SPINE peer-group",
        " neighbor SPINE remote-as external",
        " neighbor SPINE advertisement-interval 0",
    ]
    for j in range(1, spines + 1):
        spine_side, _ = cable(i, j, spines)
        lines += [
            f" neighbor {spine_side} peer-group SPINE",
            f" neighbor {spine_side} description {spine_name(j)} swp{i}",
        ]
    lines += [
        " !",
        " address-family ipv4 unicast",
        f"  network 10.0.0.{i}/32",
        f"  aggregate-address {block} summary-only",
        "  redistribute connected route-map HOST_LINKS",
        "  maximum-paths 64",
        " exit-address-family",
        "!",
    ]
    return "\n".join(lines) + "\n"


def spine_config(j: int, leaves: int, spines: int, wrong_neighbor_of_leaf: int = 0) -> str:
    """Spine j's config; `wrong_neighbor_of_leaf` (1-based) points this spine's neighbor
    statement for that leaf at a nonexistent address, to make one session fail."""
    lines = [
        "frr version 8.4",
        "frr defaults datacenter",
        f"hostname {spine_name(j)}",
        "no ipv6 forwarding",
        "service integrated-vtysh-config",
        "!",
        "interface lo",
        f" ip address 10.0.1.{j}/32",
        "!",
    ]
    for i in range(1, leaves + 1):
        spine_side, _ = cable(i, j, spines)
        lines += [
            f"interface swp{i}",
            f" description {leaf_name(i)} swp{j}",
            f" ip address {spine_side}/31",
            "!",
        ]
    lines += [
        f"router bgp {SPINE_ASN}",
        f" bgp router-id 10.0.1.{j}",
        " bgp bestpath as-path multipath-relax",
        " no bgp ebgp-requires-policy",
        " timers bgp 1 3",
        " neighbor LEAF peer-group",
        " neighbor LEAF remote-as external",
        " neighbor LEAF advertisement-interval 0",
    ]
    for i in range(1, leaves + 1):
        _, leaf_side = cable(i, j, spines)
        if i == wrong_neighbor_of_leaf:
            leaf_side = "10.99.0.1"
        lines += [
            f" neighbor {leaf_side} peer-group LEAF",
            f" neighbor {leaf_side} description {leaf_name(i)} swp{j}",
        ]
    lines += [
        " !",
        " address-family ipv4 unicast",
        f"  network 10.0.1.{j}/32",
        "  maximum-paths 64",
        " exit-address-family",
        "!",
    ]
    return "\n".join(lines) + "\n"


def leaf_spine_spec(
    leaves: int = 4, spines: int = 2, broken_session: tuple[int, int] | None = None
) -> LabSpec:
    """`leaves` x `spines` Clos, one host per leaf; every host pings every other host.

    `broken_session=(i, j)` gives spine j a wrong neighbor address for leaf i.
    """
    broken_leaf, broken_spine = broken_session or (0, 0)
    switches = [LabSwitch(leaf_name(i), leaf_config(i, spines)) for i in range(1, leaves + 1)]
    switches += [
        LabSwitch(
            spine_name(j),
            spine_config(j, leaves, spines, broken_leaf if j == broken_spine else 0),
        )
        for j in range(1, spines + 1)
    ]
    links = [
        LabLink(leaf_name(i), f"swp{j}", spine_name(j), f"swp{i}")
        for i in range(1, leaves + 1)
        for j in range(1, spines + 1)
    ]
    hosts = []
    for i in range(1, leaves + 1):
        block = host_block(i)
        hosts.append(
            LabHost(
                host_name(i),
                "eth0",
                f"{block.network_address + 1}/31",
                str(block.network_address),
            )
        )
        links.append(LabLink(leaf_name(i), HOST_PORT, host_name(i), "eth0"))
    route_checks = [
        RouteCheck(leaf_name(i), str(host_block(other)), spines)
        for i in range(1, leaves + 1)
        for other in range(1, leaves + 1)
        if other != i
    ]
    pings = [
        (host_name(i), str(host_block(other).network_address + 1))
        for i in range(1, leaves + 1)
        for other in range(1, leaves + 1)
        if other != i
    ]
    return LabSpec(
        switches=switches,
        hosts=hosts,
        links=links,
        sessions_expected=leaves * spines,
        route_checks=route_checks,
        pings=pings,
    )
