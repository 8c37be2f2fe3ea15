"""IPv6's headers: the extension headers the parser follows (Hop-by-Hop, Routing, Destination
Options, up to IPV6_EXT_HEADERS_MAX of them, each up to IPV6_EXT_LEN_MAX), those it does not (a
Fragment header, AH, ESP, too many, too long: forwarded untouched and counted), TCP behind them
thinned or (behind one not followed) left alone, and malformed IPv6 (dropped and counted, as an
unreadable IPv4 header is). Every routed packet is compared byte for byte with what went in, its MACs and hop
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
    IPV6_EXT_DEST_OPTIONS,
    IPV6_EXT_ESP,
    IPV6_EXT_FRAGMENT,
    IPV6_EXT_HEADERS_MAX,
    IPV6_EXT_HOP_BY_HOP,
    IPV6_EXT_LEN_MAX,
    IPV6_EXT_ROUTING,
    IPV6_NO_NEXT_HEADER,
    MALFORMED_REASONS,
    MalformedReason,
    ThinningStat,
)
from ackwise.twins.policies import PolicyParams
from base_test import AckwiseTest, TcpFlow, host_ip, host_mac, routed, switch_mac


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
        self.assertEqual(IPV6_EXT_HEADERS_MAX, 2)
        cases = {
            "hop-by-hop": ipv6_frame(IPv6ExtHdrHopByHop(options=[RouterAlert()]), payload=b"a" * 10),
            "two, in RFC 8200's order": ipv6_frame(
                IPv6ExtHdrHopByHop(options=[RouterAlert()]),
                IPv6ExtHdrRouting(addresses=["fd00:0:0:2::1"], segleft=0),
            ),
            "routing, then destination options": ipv6_frame(
                IPv6ExtHdrRouting(addresses=["fd00:0:0:2::1"], segleft=0),
                dest_opts(1),
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
    """A Fragment header, AH, ESP, one extension header more than IPV6_EXT_HEADERS_MAX (RFC 8200's
    four in its order among them) and one longer than IPV6_EXT_LEN_MAX are not followed: each
    packet is routed byte for byte all the same, and counted."""

    def runTest(self) -> None:
        cases = {
            "fragment": ipv6_frame(IPv6ExtHdrFragment(offset=0, m=1, id=9)),
            "atomic fragment": ipv6_frame(IPv6ExtHdrFragment(offset=0, m=0, id=9)),
            "AH": ipv6_frame(raw_ext(b"\x01" + b"\0" * 14)),
            "ESP": ipv6_frame(raw_ext()),
            "one too many": ipv6_frame(*(dest_opts(0) for _ in range(IPV6_EXT_HEADERS_MAX + 1))),
            "four, in RFC 8200's order": ipv6_frame(
                IPv6ExtHdrHopByHop(options=[RouterAlert()]),
                dest_opts(1),
                IPv6ExtHdrRouting(addresses=["fd00:0:0:2::1"], segleft=0),
                dest_opts(0),
            ),
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


def with_extension_headers(frame: bytes, *layers: Packet) -> bytes:
    """``frame`` (Ethernet, IPv6, TCP) with ``layers`` between the fixed header and TCP: each
    layer's Next Header chained to the next one's, the last one's TCP's, and the payload length
    grown to match. The TCP segment, its checksum too, is unchanged (the upper-layer length of the
    pseudo-header does not change)."""
    if not layers:
        return frame
    kinds = {
        IPv6ExtHdrHopByHop: IPV6_EXT_HOP_BY_HOP,
        IPv6ExtHdrDestOpt: IPV6_EXT_DEST_OPTIONS,
        IPv6ExtHdrRouting: IPV6_EXT_ROUTING,
        IPv6ExtHdrFragment: IPV6_EXT_FRAGMENT,
    }
    chain = [kinds[type(layer)] for layer in layers] + [6]
    ext = b"".join(bytes([chain[i + 1]]) + bytes(layer)[1:] for i, layer in enumerate(layers))
    raw = bytearray(frame[: 14 + 40] + ext + frame[14 + 40 :])
    raw[14 + 4 : 14 + 6] = (int.from_bytes(frame[14 + 4 : 14 + 6], "big") + len(ext)).to_bytes(2, "big")
    raw[14 + 6] = chain[0]
    return bytes(raw)


class Ipv6TcpBehindExtensionHeadersTest(Ipv6HeaderTest):
    """TCP behind the extension headers the parser follows is thinned as without them (every_d
    d=2: the first ACK, every second, the one that acknowledges all data), every packet that leaves
    byte for byte what came in; TCP behind a Fragment header (an atomic fragment) is not read, so
    every ACK of such a flow leaves, and the thinning stage sees none of them."""

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        set_default_policy(self.client, PolicyParams.parse("every_d", ["d=2"]))

    def run_flow(self, flow: TcpFlow, layers: tuple[Packet, ...], forwarded: list[int]) -> None:
        for k in range(8):
            data = with_extension_headers(flow.data(k), *layers)
            self.send(flow.data_port, data)
            self.expect_next(routed(data, flow.ack_port), flow.ack_port)
        acks = [with_extension_headers(flow.ack(k), *layers) for k in range(1, 9)]
        for ack in acks:
            self.send(flow.ack_port, ack)
        self.assertEqual(self.collect(flow.data_port), [routed(acks[i], flow.data_port) for i in forwarded])

    def runTest(self) -> None:
        followed = (IPv6ExtHdrHopByHop(options=[RouterAlert()]), dest_opts(2))
        self.run_flow(TcpFlow(ip_version=6), followed, [0, 2, 4, 6, 7])
        seen = self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SEEN)
        self.assertEqual(seen, 8)
        fragment = (IPv6ExtHdrFragment(offset=0, m=0, id=9),)
        self.run_flow(TcpFlow(ip_version=6, sport=40001), fragment, list(range(8)))
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SEEN), seen)
        self.assertEqual(self.malformed(), {MalformedReason.IPV6_EXT_SKIPPED.name: 16})
        self.expect_nothing_else()
