"""Parsing of vtysh JSON, against output recorded from FRR 8.4.4 in a 4-leaf 2-spine lab."""

from __future__ import annotations

import json
from pathlib import Path

from clusterwright.lab.frr import (
    bgp_peers,
    config_rejections,
    count_established,
    fib_nexthops,
    parse_json_stream,
    rejected_by_all,
)

DATA = Path(__file__).parent / "data"


def test_summary_peers_and_states_from_recorded_spine() -> None:
    # spine-2 with a wrong neighbor address for leaf 1: three Established, one Active.
    summary = json.loads((DATA / "show_bgp_summary_spine.json").read_text())
    peers = bgp_peers(summary)
    assert len(peers) == 4
    assert count_established(peers) == 3
    down = [p for p in peers if p.state != "Established"]
    assert [(p.neighbor, p.state, p.description) for p in down] == [
        ("10.99.0.1", "Active", "leaf-su1-r1 swp2")
    ]


def test_peer_in_two_address_families_counts_once() -> None:
    peer = {"state": "Established"}
    summary = {"ipv4Unicast": {"peers": {"swp1": peer}}, "l2VpnEvpn": {"peers": {"swp1": peer}}}
    assert count_established(bgp_peers(summary)) == 1


def test_summary_without_bgp_instance_has_no_peers() -> None:
    assert bgp_peers({}) == []
    assert bgp_peers(None) == []


def test_route_nexthops_from_recorded_multi_command_output() -> None:
    # `-c 'show ip route 10.128.0.0/26 json' -c 'show ip route 10.128.0.128/26 json'`
    docs = parse_json_stream((DATA / "show_ip_route_two.json").read_text())
    assert len(docs) == 2
    assert fib_nexthops(docs[0], "10.128.0.0/26") == 0  # absent: printed as {}
    assert fib_nexthops(docs[1], "10.128.0.128/26") == 2
    # Only the exact prefix counts.
    assert fib_nexthops(docs[1], "10.128.0.0/26") == 0


def test_unselected_route_and_non_fib_nexthops_do_not_count() -> None:
    route = {
        "10.1.0.0/26": [
            {"selected": False, "nexthops": [{"fib": True}]},
            {"selected": True, "nexthops": [{"fib": True}, {"active": True}]},
        ]
    }
    assert fib_nexthops(route, "10.1.0.0/26") == 1


def test_json_stream_stops_at_daemon_error_text() -> None:
    text = '{"a": 1}\n{"b": 2}\n% bgpd is not running\n{"c": 3}'
    assert parse_json_stream(text) == [{"a": 1}, {"b": 2}]
    assert parse_json_stream("") == []


def test_config_lines_rejected_by_both_daemons_are_found_in_recorded_logs() -> None:
    # Logs of zebra and bgpd reading one frr.conf with a typo (line 9), an undefined
    # peer-group (23), a bogus keyword (24) and a bfdd block (31-32).
    zebra = (DATA / "zebra_bad_lines.log").read_text()
    bgpd = (DATA / "bgpd_bad_lines.log").read_text()
    assert config_rejections(bgpd)[8] == "ip address 10.0.0.1/32"  # zebra's line: normal
    assert rejected_by_all([zebra, bgpd]) == [
        (9, "ip adress 10.0.0.5/32"),
        (23, "neighbor 10.9.9.9 peer-group NOPE"),
        (24, "bgp bestpath as-path multipath-relax bogus"),
        (31, "bfd"),
        (32, "peer 10.64.0.0"),
    ]
    assert rejected_by_all([]) == []
