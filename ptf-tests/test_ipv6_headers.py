"""IPv6's headers: TCP over IPv6 parsed but left alone by the policies (for now), the extension
headers the parser follows (Hop-by-Hop, Routing, Destination Options, up to IPV6_EXT_HEADERS_MAX of
them, each up to IPV6_EXT_LEN_MAX), those it does not (a Fragment header, AH, ESP, too many, too
long: forwarded untouched and counted), and malformed IPv6 (dropped and counted, as an unreadable
IPv4 header is). Every routed packet is compared byte for byte with what went in, its MACs and hop
limit aside."""

from __future__ import annotations

from scapy.layers.inet import TCP
from scapy.layers.inet6 import (
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    PadN,
    RouterAlert,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from ackwise.features.thinning import set_default_policy
from ackwise.twins.p4names import (
    COUNTER_ACK_THINNING_STATS,
    COUNTER_PARSER_MALFORMED,
    IPV6_EXT_AH,
    IPV6_EXT_ESP,
    IPV6_EXT_HEADERS_MAX,
    IPV6_EXT_LEN_MAX,
    IPV6_NO_NEXT_HEADER,
    MALFORMED_REASONS,
    MalformedReason,
    ThinningStat,
)
from ackwise.twins.policies import PolicyParams
from base_test import AckwiseTest, host_ip, host_mac, pure_ack, routed, switch_mac, tcp_segment


def ipv6_frame(*layers: Packet, payload: bytes = b"", **ipv6_fields: object) -> bytes:
    """An IPv6 packet from host 1 to host 2 through the switch, ``layers`` between the fixed header
    and a TCP segment (ACK with ``payload``)."""
    pkt: Packet = Ether(src=host_mac(1), dst=switch_mac(1)) / IPv6(
        src=host_ip(1, 6), dst=host_ip(2, 6), **ipv6_fields
    )
    for layer in layers:
        pkt = pkt / layer
    pkt = pkt / TCP(sport=40000, dport=5001, seq=1000, ack=7, flags="A") / Raw(load=payload)
    return bytes(Ether(bytes(pkt)))


def dest_opts(hdr_ext_len: int) -> Packet:
    """A Destination Options header of (hdr_ext_len + 1) * 8 bytes: PadN options filling it (one
    holds at most 255 bytes of padding)."""
    pad = (hdr_ext_len + 1) * 8 - 2
    options = []
    while pad:
        n = min(pad, 257) if pad - min(pad, 257) != 1 else pad - 2
        options.append(PadN(optdata=b"\0" * (n - 2)))
        pad -= n
    frame = IPv6ExtHdrDestOpt(options=options)
    assert len(bytes(frame)) == (hdr_ext_len + 1) * 8, len(bytes(frame))
    return frame


def raw_ext(body: bytes = b"\0" * 6) -> Raw:
    """An extension header scapy does not build, as bytes (its first byte, the next header, is
    TCP's: the switch must not read past it anyway)."""
    return Raw(load=bytes([6]) + body)


def with_next_header(frame: bytes, next_header: int) -> bytes:
    """``frame`` with the fixed header's Next Header set to ``next_header``."""
    raw = bytearray(frame)
    raw[14 + 6] = next_header
    return bytes(raw)


class Ipv6HeaderTest(AckwiseTest):
    def malformed(self) -> dict[str, int]:
        """The parser's malformed counter, by reason, cells that are not 0 only."""
        return {
            MalformedReason(r).name: n
            for r in range(MALFORMED_REASONS)
            if (n := self.counter(COUNTER_PARSER_MALFORMED, r))
        }


class ExtensionHeadersFollowedTest(Ipv6HeaderTest):
    """Hop-by-Hop, Routing and Destination Options headers, up to IPV6_EXT_HEADERS_MAX of them and
    the longest IPV6_EXT_LEN_MAX allows, are followed: routed byte for byte, nothing counted."""

    def runTest(self) -> None:
        self.assertEqual(IPV6_EXT_HEADERS_MAX, 4)
        cases = {
            "hop-by-hop": ipv6_frame(IPv6ExtHdrHopByHop(options=[RouterAlert()]), payload=b"a" * 10),
            "four, in RFC 8200's order": ipv6_frame(
                IPv6ExtHdrHopByHop(options=[RouterAlert()]),
                dest_opts(1),
                IPv6ExtHdrRouting(addresses=["fd00:0:0:2::1"], segleft=0),
                dest_opts(0),
            ),
            "the longest followed": ipv6_frame(dest_opts(IPV6_EXT_LEN_MAX)),
            "no next header": with_next_header(ipv6_frame(payload=b"n" * 8), IPV6_NO_NEXT_HEADER),
        }
        for name, frame in cases.items():
            with self.subTest(name):
                self.send(1, frame)
                self.expect_next(routed(frame, 2), 2)
        self.expect_nothing_else()
        self.assertEqual(self.malformed(), {})


class ExtensionHeadersSkippedTest(Ipv6HeaderTest):
    """A Fragment header, AH, ESP, a fifth extension header and one longer than IPV6_EXT_LEN_MAX
    are not followed: each packet is routed byte for byte all the same, and counted."""

    def runTest(self) -> None:
        cases = {
            "fragment": ipv6_frame(IPv6ExtHdrFragment(offset=0, m=1, id=9)),
            "atomic fragment": ipv6_frame(IPv6ExtHdrFragment(offset=0, m=0, id=9)),
            "AH": ipv6_frame(raw_ext(b"\x01" + b"\0" * 14)),
            "ESP": ipv6_frame(raw_ext()),
            "five": ipv6_frame(*(dest_opts(0) for _ in range(IPV6_EXT_HEADERS_MAX + 1))),
            "one too long": ipv6_frame(dest_opts(IPV6_EXT_LEN_MAX + 1)),
        }
        cases["AH"] = with_next_header(cases["AH"], IPV6_EXT_AH)
        cases["ESP"] = with_next_header(cases["ESP"], IPV6_EXT_ESP)
        for name, frame in cases.items():
            with self.subTest(name):
                self.send(1, frame)
                self.expect_next(routed(frame, 2), 2)
        self.expect_nothing_else()
        self.assertEqual(self.malformed(), {MalformedReason.IPV6_EXT_SKIPPED.name: len(cases)})


class MalformedIpv6Test(Ipv6HeaderTest):
    """IPv6 the switch cannot read is dropped and counted: another version behind the IPv6
    EtherType, a fixed header or an extension header cut short by the end of the frame, a payload
    length that ends inside an extension header. The switch forwards the next good packet."""

    def runTest(self) -> None:
        good = ipv6_frame(payload=b"g" * 4)
        version_4 = bytearray(good)
        version_4[14] = 0x40 | version_4[14] & 0x0F
        hbh = ipv6_frame(IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\0" * 20)]))  # 24 bytes
        short_plen = bytearray(hbh)
        short_plen[14 + 4 : 14 + 6] = (16).to_bytes(2, "big")
        cases = {
            "version 4": bytes(version_4),
            "fixed header cut short": good[: 14 + 30],
            "extension header cut short": hbh[: 14 + 40 + 16],
            "payload length inside an extension header": bytes(short_plen),
        }
        for name, frame in cases.items():
            with self.subTest(name):
                self.send(1, frame)
                self.expect_nothing_else()
        self.assertEqual(self.malformed(), {MalformedReason.IPV6_HEADER.name: len(cases)})
        self.send(1, good)
        self.expect(routed(good, 2), 2)


class Ipv6TcpUntouchedByPoliciesTest(Ipv6HeaderTest):
    """Until the flow key covers IPv6, TCP over IPv6 is parsed but left alone by the policies: under
    every_d d=2 every IPv6 data segment and pure ACK leaves byte for byte, none is thinned, and the
    thinning stage counts none of them (its ACKs-seen counter stays 0), while IPv4's ACKs of the
    same shape are seen (the policy is on)."""

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        set_default_policy(self.client, PolicyParams.parse("every_d", ["d=2"]))

    def runTest(self) -> None:
        for k in range(1, 9):
            data = bytes(
                tcp_segment(1, 2, seq=1000 + 100 * (k - 1), ack=5000, payload=b"d" * 100, ip_version=6)
            )
            self.send(1, data)
            self.expect_next(routed(data, 2), 2)
            ack = bytes(pure_ack(ack=1000 + 100 * k, ts=(100 + k, 200 + k), ip_version=6))
            self.send(2, ack)
            self.expect_next(routed(ack, 1), 1)
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SEEN), 0)
        self.assertEqual(self.malformed(), {})
        # The policy is on: IPv4's ACKs of the same shape are seen by the thinning stage.
        for k in range(1, 5):
            self.send(1, tcp_segment(1, 2, seq=1000 + 100 * (k - 1), ack=5000, payload=b"d" * 100))
            self.send(2, pure_ack(ack=1000 + 100 * k, ts=(100 + k, 200 + k)))
        self.collect(1)
        self.collect(2)
        self.assertGreater(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SEEN), 0)
