"""Regressions for what the data-plane fuzzer (experiments/stress/fuzz.py) found, one test each.

1. The first fragment of a fragmented segment (more fragments set, offset 0) whose own total length
   leaves no room for payload was read as a pure ACK and thinned: the segment's data, in the other
   fragments, could then never be reassembled. TCP is now read only from unfragmented packets.
3. A coalesced ACK whose frame had bytes after the IPv4 packet (an Ethernet trailer that is not
   zeros) left with a wrong TCP checksum: bmv2 computed it over its whole payload, trailer
   included. The rewritten ACK is now cut at the IPv4 total length and its checksum covers the
   header and options only.
2. An IPv4 header with version other than 4, a total length below its own header length, or
   options cut short by the end of the packet was routed on its first 20 bytes, its checksum
   verified over those alone. RFC 1812 5.2.2 asks a router to discard it; it is now dropped and
   counted as malformed (MALFORMED_IPV4_HEADER).
"""

from __future__ import annotations

from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from ackwise.features.thinning import set_default_policy
from ackwise.twins.p4names import COUNTER_PARSER_MALFORMED, MalformedReason
from ackwise.twins.policies import PolicyParams
from base_test import AckwiseTest, TcpFlow, routed, tcp_segment
from test_ack_coalesce import CoalesceTest, rewritten


def as_first_fragment(frame: bytes) -> bytes:
    """``frame`` with more-fragments set: the first fragment of a bigger segment."""
    pkt = Ether(frame)
    pkt[IP].flags = "MF"
    del pkt[IP].chksum
    return bytes(pkt)


class FirstFragmentNotThinnedTest(AckwiseTest):
    """every_d d=8 thins the plain ACKs of a flow; the same ACK headers as first fragments (more
    fragments set) all leave, byte for byte as routed."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_default_policy(self.client, PolicyParams.parse("every_d", ["d=8"]))

    def runTest(self) -> None:
        flow = TcpFlow()
        for k in range(12):
            self.send(1, flow.data(k))
            self.expect_next(routed(flow.data(k), 2), 2)
        # Plain ACKs of one segment each: thinned after the first (the control).
        for k in (1, 2, 3):
            self.send(2, flow.ack(k))
        self.expect_next(routed(flow.ack(1), 1), 1)
        self.assertIsNone(self.next_packet(1, timeout=0.3), "every_d thinned nothing: no control")
        # The same as first fragments: each one leaves.
        for k in (4, 5, 6, 7):
            fragment = as_first_fragment(flow.ack(k))
            self.send(2, fragment)
            self.expect_next(routed(fragment, 1), 1)
        self.expect_nothing_else()


class BadIpv4HeaderDroppedTest(AckwiseTest):
    """Version 6 in an IPv4 frame, a total length below the header length, and an IHL of 15 in a
    packet that ends after 40 header bytes: each dropped and counted as MALFORMED_IPV4_HEADER; a
    sound packet after them is routed."""

    def runTest(self) -> None:
        good = bytes(tcp_segment(payload=b"x" * 20))

        def with_ip(change: dict[str, object], cut: int | None = None) -> bytes:
            pkt = Ether(good)
            for name, value in change.items():
                setattr(pkt[IP], name, value)
            del pkt[IP].chksum
            raw = bytes(pkt)
            if cut is not None:  # keep the checksum right over what is left of the header
                raw = raw[:cut]
            return raw

        ihl15 = bytearray(good[: 14 + 40])
        ihl15[14] = 0x4F  # 60 header bytes announced, 40 present
        ihl15[16:18] = (40).to_bytes(2, "big")
        cases = [
            with_ip({"version": 6}),
            with_ip({"len": 19}),
            with_ip({"ihl": 6, "len": 22}),
            bytes(ihl15),
        ]
        before = self.counter(COUNTER_PARSER_MALFORMED, MalformedReason.IPV4_HEADER)
        for frame in cases:
            self.send(1, frame)
        self.send(1, good)
        self.expect_next(routed(good, 2), 2)
        self.expect_nothing_else()
        self.assertEqual(
            self.counter(COUNTER_PARSER_MALFORMED, MalformedReason.IPV4_HEADER) - before, len(cases)
        )


class CoalescedAckWithTrailerTest(CoalesceTest):
    """ack(2) waits behind ack(1); ack(3) and ack(4) fold into it. ack(2) came with six bytes after
    its IPv4 packet: it leaves as ack(4) without them, with a right checksum."""

    def runTest(self) -> None:
        flow = TcpFlow()
        self.send_data(flow, range(6))
        self.first_ack_out(flow)
        trailer = b"\xde\xad\xbe\xef\x01\x02"
        waiting = flow.ack(2)
        self.send(flow.ack_port, waiting + trailer)
        newest = flow.ack(4, window=900)
        for pkt in (flow.ack(3), newest):
            self.send(flow.ack_port, pkt)
        self.check_out(flow, [rewritten(waiting, newest)])
