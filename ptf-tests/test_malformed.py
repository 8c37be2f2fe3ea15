"""Malformed headers never wedge the parser: the packet is counted under its reason and forwarded
unmodified above IPv4, and the switch keeps forwarding afterwards. An unreadable IPv4 header
(IHL below 5) is dropped, as RFC 1812 asks of a router."""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ackwise.twins.p4names import COUNTER_PARSER_MALFORMED, MalformedReason
from base_test import AckwiseTest, host_ip, host_mac, routed, switch_mac, tcp_segment

TS = struct.pack("!BBII", 8, 10, 100, 200)


def truncated_tcp_header() -> bytes:
    """IPv4 says TCP, but the frame ends 10 bytes into the TCP header. IPv4 options keep the
    frame at 60 bytes, so the comparison covers every byte."""
    pkt = (
        Ether(src=host_mac(1), dst=switch_mac(1))
        / IP(src=host_ip(1), dst=host_ip(2), proto=6, options=[b"\x01" * 16])
        / Raw(load=bytes(TCP(sport=40000, dport=5001, seq=1))[:10])
    )
    return bytes(pkt)


CASES: list[tuple[str, bytes, MalformedReason]] = [
    (
        "option length 0",
        bytes(tcp_segment(raw_options=b"\x01\x01\x08\x00" + bytes(8))),
        MalformedReason.TCP_OPTION_LENGTH,
    ),
    (
        "option length 1",
        bytes(tcp_segment(raw_options=b"\x1e\x01\x00\x00")),
        MalformedReason.TCP_OPTION_LENGTH,
    ),
    (
        "option runs past the header",
        bytes(tcp_segment(raw_options=b"\x01\x01\x1e\x0a", payload=b"p" * 20)),
        MalformedReason.TCP_OPTION_OVERRUN,
    ),
    (
        "kind in the last option byte",
        bytes(tcp_segment(raw_options=b"\x01\x01\x01\x08")),
        MalformedReason.TCP_OPTION_OVERRUN,
    ),
    ("data offset 4", bytes(tcp_segment(dataofs=4, payload=b"q" * 12)), MalformedReason.TCP_DATA_OFFSET),
    ("data offset 0", bytes(tcp_segment(dataofs=0, payload=b"q" * 12)), MalformedReason.TCP_DATA_OFFSET),
    (
        "options cut short by the end of the packet",
        bytes(tcp_segment(raw_options=b"\x01\x01" + TS, dataofs=15)),
        MalformedReason.TRUNCATED,
    ),
    ("TCP header cut short", truncated_tcp_header(), MalformedReason.TRUNCATED),
]


class MalformedForwardedTest(AckwiseTest):
    """Each malformed segment leaves unmodified above IPv4 and is counted under its reason."""

    def runTest(self) -> None:
        for name, pkt, reason in CASES:
            with self.subTest(name):
                before = self.counter(COUNTER_PARSER_MALFORMED, reason)
                self.send(1, pkt)
                self.expect(routed(pkt, 2), 2)
                self.assertEqual(self.counter(COUNTER_PARSER_MALFORMED, reason), before + 1)
                # ...and an ordinary segment right behind it still goes through.
                good = tcp_segment(raw_options=b"\x01\x01" + TS, payload=b"ok")
                self.send(1, good)
                self.expect(routed(good, 2), 2)
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_PARSER_MALFORMED, MalformedReason.NONE), 0)


class MalformedReasonProbeTest(AckwiseTest):
    """The parser's verdict, read back from parser_probe, names the reason for each TCP case."""

    program = "parser_probe"

    def runTest(self) -> None:
        for name, pkt, reason in CASES[:-1]:  # the last one has no TCP header to probe
            with self.subTest(name):
                self.send(1, pkt)
                self.expect(routed(pkt, 2), 2)
                self.assertEqual(self.register("probe.parsed", 18), reason)


class Ipv4IhlShortTest(AckwiseTest):
    """IHL below 5: dropped and counted; the next packet is forwarded."""

    def runTest(self) -> None:
        raw = bytearray(bytes(tcp_segment()))
        raw[14] = 0x44
        self.send(1, bytes(raw))
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_PARSER_MALFORMED, MalformedReason.IPV4_IHL), 1)
        good = tcp_segment()
        self.send(1, good)
        self.expect(routed(good, 2), 2)
