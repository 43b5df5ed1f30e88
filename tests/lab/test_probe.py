from __future__ import annotations

import struct

from clusterwright.lab.probe import checksum, echo_request, is_echo_reply


def test_echo_request_checksum_verifies_to_zero() -> None:
    # RFC 1071: summing a packet including its checksum gives 0 after complement.
    packet = echo_request(ident=0x1234, seq=1)
    assert checksum(packet) == 0
    assert packet[0] == 8


def test_odd_length_checksum_pads_with_zero() -> None:
    assert checksum(b"\x01") == checksum(b"\x01\x00")


def test_echo_reply_is_matched_by_identifier() -> None:
    ip_header = bytes([0x45]) + bytes(19)
    reply = struct.pack("!BBHHH", 0, 0, 0, 0x1234, 1)
    assert is_echo_reply(ip_header + reply, 0x1234)
    assert not is_echo_reply(ip_header + reply, 0x4321)
    request = struct.pack("!BBHHH", 8, 0, 0, 0x1234, 1)
    assert not is_echo_reply(ip_header + request, 0x1234)
    assert not is_echo_reply(ip_header[:10], 0x1234)
