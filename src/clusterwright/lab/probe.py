"""A minimal ICMP echo ("ping") that needs only Python and root.

Run inside a host namespace as `ip netns exec NS python -m clusterwright.lab.probe ADDR`.
The lab ships its own so it does not depend on iputils-ping, which slim images and the FRR
packages do not pull in. Exit status 0 means a reply came back, like ping's.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import time

_ECHO_REQUEST = 8
_ECHO_REPLY = 0


def checksum(data: bytes) -> int:
    """RFC 1071 Internet checksum (ones' complement sum of 16-bit words)."""
    if len(data) % 2:
        data += b"\0"
    words: tuple[int, ...] = struct.unpack(f"!{len(data) // 2}H", data)
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def echo_request(ident: int, seq: int, payload: bytes = b"clusterwright-lab") -> bytes:
    """An ICMP echo request packet (RFC 792) with a valid checksum."""
    header = struct.pack("!BBHHH", _ECHO_REQUEST, 0, 0, ident, seq)
    csum = checksum(header + payload)
    return struct.pack("!BBHHH", _ECHO_REQUEST, 0, csum, ident, seq) + payload


def is_echo_reply(packet: bytes, ident: int) -> bool:
    """True if `packet` (IPv4 header + ICMP) is an echo reply carrying our identifier."""
    if len(packet) < 20:
        return False
    ihl_bytes = (packet[0] & 0x0F) * 4
    icmp = packet[ihl_bytes : ihl_bytes + 8]
    if len(icmp) < 8:
        return False
    fields: tuple[int, ...] = struct.unpack("!BBHHH", icmp)
    return fields[0] == _ECHO_REPLY and fields[3] == ident


def ping(address: str, count: int = 2, timeout_s: float = 1.0) -> bool:
    """Send up to `count` echo requests to `address`; True at the first matching reply.

    Waits `timeout_s` seconds for each reply. Needs CAP_NET_RAW (root).
    """
    ident = os.getpid() & 0xFFFF
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as sock:
        for seq in range(1, count + 1):
            sock.sendto(echo_request(ident, seq), (address, 0))
            deadline = time.monotonic() + timeout_s
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                try:
                    packet, (src, _port) = sock.recvfrom(65535)
                except TimeoutError:
                    break
                # A raw socket sees every ICMP packet in the namespace; keep only ours.
                if src == address and is_echo_reply(packet, ident):
                    return True
    return False


def main(argv: list[str] | None = None) -> int:
    """CLI entry: exit 0 if `address` answered, 1 if not."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("address")
    parser.add_argument("-c", "--count", type=int, default=2)
    parser.add_argument("-W", "--timeout", type=float, default=1.0, help="seconds per reply")
    args = parser.parse_args(argv)
    return 0 if ping(args.address, args.count, args.timeout) else 1


if __name__ == "__main__":
    raise SystemExit(main())
