"""TCP options: every kind passes byte for byte, and the parser reads the values the pipeline uses.

The values are checked on parser_probe, a fixture program with the same parser that copies what it
parsed into registers; byte-exact forwarding is checked on ack_switch itself.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ackwise.twins.p4names import IP_PROTO_TCP, IPV6_EXT_DEST_OPTIONS, REGISTER_PROBE_PARSED, ProbeCell
from ackwise.twins.packets import fix_tcp_checksum, sack_option, tcp_offset, timestamps_option
from base_test import AckwiseTest, routed, tcp_segment

NOP, EOL = b"\x01", b"\x00"


def sack(*blocks: tuple[int, int]) -> bytes:
    return sack_option(blocks)


@dataclass
class Layout:
    name: str
    options: bytes
    flags: str = "A"
    payload: bytes = b""
    expect: dict[int, int] = field(default_factory=dict)


SACK3 = ((0xFFFFFF00, 0x00000100), (3000, 4000), (5000, 6000))
LAYOUTS = [
    Layout(
        "SYN: MSS SACKOK TS NOP WS",
        struct.pack("!BBH", 2, 4, 1460)
        + b"\x04\x02"
        + timestamps_option(0x11223344, 0)
        + NOP
        + b"\x03\x03\x07",
        flags="S",
        expect={
            ProbeCell.MSS_PRESENT: 1,
            ProbeCell.MSS: 1460,
            ProbeCell.SACK_PERMITTED: 1,
            ProbeCell.TS_PRESENT: 1,
            ProbeCell.TS_VAL: 0x11223344,
            ProbeCell.TS_ECR: 0,
            ProbeCell.WS_PRESENT: 1,
            ProbeCell.WS_SHIFT: 7,
            ProbeCell.OPTION_COUNT: 5,
            ProbeCell.UNKNOWN_PRESENT: 0,
        },
    ),
    Layout(
        "ACK: NOP NOP TS",
        NOP + NOP + timestamps_option(100, 200),
        expect={
            ProbeCell.TS_PRESENT: 1,
            ProbeCell.TS_VAL: 100,
            ProbeCell.TS_ECR: 200,
            ProbeCell.OPTION_COUNT: 3,
            ProbeCell.SACK_BLOCKS: 0,
            ProbeCell.MSS_PRESENT: 0,
            ProbeCell.WS_PRESENT: 0,
            ProbeCell.UNKNOWN_PRESENT: 0,
        },
    ),
    Layout(
        "ACK: NOP NOP TS NOP NOP SACK(1)",
        NOP + NOP + timestamps_option(7, 8) + NOP + NOP + sack((10000, 11448)),
        expect={
            ProbeCell.TS_VAL: 7,
            ProbeCell.TS_ECR: 8,
            ProbeCell.SACK_BLOCKS: 1,
            ProbeCell.SACK_LEFT_0: 10000,
            ProbeCell.SACK_LEFT_0 + 1: 11448,
            ProbeCell.OPTION_COUNT: 6,
        },
    ),
    Layout(
        "ACK: NOP NOP TS NOP NOP SACK(3)",
        NOP + NOP + timestamps_option(9, 10) + NOP + NOP + sack(*SACK3),
        expect={
            ProbeCell.SACK_BLOCKS: 3,
            ProbeCell.SACK_LEFT_0: SACK3[0][0],
            ProbeCell.SACK_LEFT_0 + 1: SACK3[0][1],
            ProbeCell.SACK_LEFT_0 + 2: 3000,
            ProbeCell.SACK_LEFT_0 + 3: 4000,
            ProbeCell.SACK_LEFT_0 + 4: 5000,
            ProbeCell.SACK_LEFT_0 + 5: 6000,
            ProbeCell.OPTION_COUNT: 6,
        },
    ),
    Layout(
        "ACK: NOP NOP TS NOP NOP SACK(2)",
        NOP + NOP + timestamps_option(11, 12) + NOP + NOP + sack((20000, 21448), (30000, 31448)),
        expect={
            ProbeCell.TS_VAL: 11,
            ProbeCell.TS_ECR: 12,
            ProbeCell.SACK_BLOCKS: 2,
            ProbeCell.SACK_LEFT_0: 20000,
            ProbeCell.SACK_LEFT_0 + 1: 21448,
            ProbeCell.SACK_LEFT_0 + 2: 30000,
            ProbeCell.SACK_LEFT_0 + 3: 31448,
            ProbeCell.OPTION_COUNT: 6,
        },
    ),
    Layout(
        "ACK: NOP NOP TS NOP NOP SACK(1) EOL and padding (13 words, not the one-step SACK(2) layout)",
        NOP + NOP + timestamps_option(13, 14) + NOP + NOP + sack((40000, 41448)) + EOL + bytes(7),
        expect={
            ProbeCell.TS_VAL: 13,
            ProbeCell.SACK_BLOCKS: 1,
            ProbeCell.SACK_LEFT_0: 40000,
            ProbeCell.SACK_LEFT_0 + 1: 41448,
            ProbeCell.OPTION_COUNT: 6,
            ProbeCell.UNKNOWN_PRESENT: 0,
        },
    ),
    Layout(
        "ACK: NOP NOP SACK(4)",
        NOP + NOP + sack((1, 2), (3, 4), (5, 6), (7, 8)),
        expect={
            ProbeCell.SACK_BLOCKS: 4,
            ProbeCell.SACK_LEFT_0 + 6: 7,
            ProbeCell.SACK_LEFT_0 + 7: 8,
            ProbeCell.TS_PRESENT: 0,
            ProbeCell.OPTION_COUNT: 3,
        },
    ),
    Layout(
        "unknown kind 30, length 12",
        bytes([30, 12]) + bytes(range(10)),
        expect={ProbeCell.UNKNOWN_PRESENT: 1, ProbeCell.OPTION_COUNT: 1, ProbeCell.TS_PRESENT: 0},
    ),
    Layout(
        "MD5 signature (kind 19) NOP NOP",
        bytes([19, 18]) + bytes(16) + NOP + NOP,
        expect={ProbeCell.UNKNOWN_PRESENT: 1, ProbeCell.OPTION_COUNT: 3},
    ),
    Layout(
        "known kind with odd length: WS of length 4",
        b"\x03\x04\x07\x00",
        expect={ProbeCell.WS_PRESENT: 0, ProbeCell.UNKNOWN_PRESENT: 1, ProbeCell.OPTION_COUNT: 1},
    ),
    Layout(
        "NOP NOP TS EOL and padding",
        NOP + NOP + timestamps_option(1, 2) + EOL + b"\x00\x00\x00",
        expect={
            ProbeCell.TS_PRESENT: 1,
            ProbeCell.TS_VAL: 1,
            ProbeCell.OPTION_COUNT: 3,
            ProbeCell.UNKNOWN_PRESENT: 0,
        },
    ),
    Layout(
        "40 NOPs: deeper than the parser goes",
        NOP * 40,
        expect={ProbeCell.UNKNOWN_PRESENT: 1, ProbeCell.OPTION_COUNT: 10},
    ),
    Layout(
        "data segment with NOP NOP TS and payload",
        NOP + NOP + timestamps_option(55, 66),
        flags="PA",
        payload=bytes(range(256)) * 4 + b"odd",
        expect={
            ProbeCell.TS_VAL: 55,
            ProbeCell.TS_ECR: 66,
            ProbeCell.PAYLOAD_LEN: 1027,
            ProbeCell.OPTION_COUNT: 3,
        },
    ),
]


def segment(layout: Layout, seq: int = 1000, ip_version: int = 4, ipv6_ext: bytes = b"") -> bytes:
    """The layout's segment from host 1 to host 2; over IPv6, ``ipv6_ext`` (extension headers
    whose last Next Header is TCP's) between the IPv6 header and TCP."""
    raw = bytes(
        tcp_segment(
            1,
            2,
            seq=seq,
            ack=777,
            flags=layout.flags,
            raw_options=layout.options,
            payload=layout.payload,
            ip_version=ip_version,
        )
    )
    if not ipv6_ext:
        return raw
    head = bytearray(raw[: 14 + 40])
    head[14 + 4 : 14 + 6] = (int.from_bytes(head[14 + 4 : 14 + 6], "big") + len(ipv6_ext)).to_bytes(2, "big")
    head[14 + 6] = IPV6_EXT_DEST_OPTIONS
    return bytes(head) + ipv6_ext + raw[14 + 40 :]


# Two Destination Options headers (8 and 16 bytes of PadN), the last one followed by TCP.
IPV6_EXT = bytes([IPV6_EXT_DEST_OPTIONS, 0, 1, 4, 0, 0, 0, 0]) + bytes([IP_PROTO_TCP, 1, 1, 12]) + bytes(12)


class OptionsPassThroughTest(AckwiseTest):
    """ack_switch re-emits every option layout exactly as it arrived (checksums included); for
    IPv6 (...6), also behind extension headers."""

    ip_version = 4

    def runTest(self) -> None:
        exts = (b"",) if self.ip_version == 4 else (b"", IPV6_EXT)
        for layout in LAYOUTS:
            for ext in exts:
                with self.subTest(layout.name, ext=len(ext)):
                    pkt = segment(layout, ip_version=self.ip_version, ipv6_ext=ext)
                    self.send(1, pkt)
                    self.expect(routed(pkt, 2), 2)
        self.expect_nothing_else()


class OptionsPassThroughTest6(OptionsPassThroughTest):
    ip_version = 6


class OptionsParsedTest(AckwiseTest):
    """The parser reads MSS, WS, SACK-permitted, SACK blocks and timestamps, flags unknown ones."""

    program = "parser_probe"
    ip_version = 4

    def runTest(self) -> None:
        exts = (b"",) if self.ip_version == 4 else (b"", IPV6_EXT)
        n = 0
        for layout in LAYOUTS:
            for ext in exts:
                with self.subTest(layout.name, ext=len(ext)):
                    pkt = segment(layout, ip_version=self.ip_version, ipv6_ext=ext)
                    self.send(1, pkt)
                    self.expect(routed(pkt, 2), 2)
                    n += 1
                    self.assertEqual(self.register(REGISTER_PROBE_PARSED, ProbeCell.SEGMENTS), n)
                    self.assertEqual(self.register(REGISTER_PROBE_PARSED, ProbeCell.MALFORMED_REASON), 0)
                    for cell, value in layout.expect.items():
                        self.assertEqual(
                            self.register(REGISTER_PROBE_PARSED, cell), value, f"probe cell {cell}"
                        )


class OptionsParsedTest6(OptionsParsedTest):
    """The same over IPv6, and behind two Destination Options headers: the payload length is the
    IPv6 payload length less the extension headers and the TCP header."""

    ip_version = 6


class TcpChecksumRewriteTest(AckwiseTest):
    """A program that rewrites a TCP field gets a TCP checksum recomputed over the pseudo-header,
    the header, every option and the payload (odd and even lengths); for IPv6 (...6), over IPv6's
    pseudo-header, also behind extension headers (their bytes out of the upper-layer length)."""

    program = "parser_probe"
    ip_version = 4

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        self.client.register_write("probe.rewrite_window", 0, 0x1234)

    def runTest(self) -> None:
        exts = (b"",) if self.ip_version == 4 else (b"", IPV6_EXT)
        for layout in (LAYOUTS[0], LAYOUTS[3], LAYOUTS[4], LAYOUTS[10], LAYOUTS[12]):
            for ext in exts:
                with self.subTest(layout.name, ext=len(ext)):
                    pkt = segment(layout, ip_version=self.ip_version, ipv6_ext=ext)
                    self.send(1, pkt)
                    expected = bytearray(routed(pkt, 2))
                    tcp_at, _ = tcp_offset(expected)
                    expected[tcp_at + 14 : tcp_at + 16] = (0x1234).to_bytes(2, "big")
                    fix_tcp_checksum(expected)
                    self.assertNotEqual(
                        expected[tcp_at + 16 : tcp_at + 18], bytes(pkt)[tcp_at + 16 : tcp_at + 18]
                    )
                    self.expect(bytes(expected), 2)
        self.expect_nothing_else()


class TcpChecksumRewriteTest6(TcpChecksumRewriteTest):
    ip_version = 6
