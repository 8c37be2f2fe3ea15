"""The Python TCP view reads what the P4 parser reads."""

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, PadN
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ackwise.twins.packets import ACK, fix_tcp_checksum, parse_frame_tcp, parse_ipv4_tcp, tcp_offset


def test_options_and_payload() -> None:
    pkt = bytes(
        IP(src="10.0.0.1", dst="10.0.0.2", tos=3)
        / TCP(
            sport=1,
            dport=2,
            seq=5,
            ack=7,
            flags="A",
            window=100,
            options=[
                ("NOP", None),
                ("NOP", None),
                ("Timestamp", (11, 22)),
                ("NOP", None),
                ("NOP", None),
                ("SAck", (100, 200, 300, 400)),
            ],
        )
        / Raw(load=b"x" * 10)
    )
    seg = parse_ipv4_tcp(pkt)
    assert seg is not None
    assert (seg.src, seg.dport, seg.seq, seg.ack, seg.flags, seg.window, seg.payload_len, seg.ecn) == (
        "10.0.0.1",
        2,
        5,
        7,
        ACK,
        100,
        10,
        3,
    )
    assert (seg.ts_val, seg.ts_ecr, seg.sack, seg.unknown_option) == (11, 22, ((100, 200), (300, 400)), False)
    assert not seg.is_pure_ack


def test_syn_options_unknown_and_malformed() -> None:
    syn = bytes(IP() / TCP(flags="S", options=[("MSS", 1460), ("SAckOK", b""), ("WScale", 7)]))
    seg = parse_ipv4_tcp(syn)
    assert seg is not None and (seg.mss, seg.ws_shift, seg.unknown_option) == (1460, 7, False)
    odd = bytes(IP() / TCP(dataofs=6, flags="A") / Raw(load=bytes([30, 4, 0, 0])))
    assert parse_ipv4_tcp(odd).unknown_option  # type: ignore[union-attr]
    bad = bytes(IP() / TCP(dataofs=6, flags="A") / Raw(load=bytes([8, 0, 0, 0])))
    assert parse_ipv4_tcp(bad).unknown_option  # type: ignore[union-attr]
    assert parse_ipv4_tcp(bytes(IP(proto=17) / Raw(load=b"u" * 8))) is None


def _tcp(payload: bytes) -> TCP:
    return TCP(
        sport=1,
        dport=2,
        seq=5,
        ack=7,
        flags="PA",
        window=9,
        options=[("NOP", None), ("NOP", None), ("Timestamp", (1, 2))],
    ) / Raw(load=payload)


def _checksum_fixed(frame: bytes) -> tuple[bytes, bytes]:
    """(the frame as scapy computed it, the frame with its TCP checksum zeroed then fixed)."""
    tcp_at, _ = tcp_offset(frame)
    spoiled = bytearray(frame)
    spoiled[tcp_at + 16 : tcp_at + 18] = b"\xde\xad"
    fix_tcp_checksum(spoiled)
    return frame, bytes(spoiled)


def test_fix_tcp_checksum_over_ipv4_and_ipv6() -> None:
    """The pseudo-header of either IP version (RFC 793, RFC 8200 8.1), odd and even payloads, and over
    IPv6 behind the extension headers the switch follows: the upper-layer length excludes them and
    Next Header is TCP's, whatever the IPv6 header's says. Scapy's checksums are the reference."""
    for payload in (b"", b"x", b"xy" * 700):
        frames = [
            Ether() / IP(src="10.0.1.1", dst="10.0.2.1") / _tcp(payload),
            Ether() / IPv6(src="fd00:0:0:1::1", dst="fd00:0:0:2::1") / _tcp(payload),
            Ether()
            / IPv6(src="fd00:0:0:1::1", dst="fd00:0:0:2::1")
            / IPv6ExtHdrHopByHop()
            / IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 12)])
            / IPv6ExtHdrRouting(segleft=0)
            / _tcp(payload),
        ]
        for frame in frames:
            expected, fixed = _checksum_fixed(bytes(frame))
            assert fixed == expected, frame.summary()


def test_fix_tcp_checksum_refuses_a_routing_header_with_segments_left() -> None:
    """Its pseudo-header holds the final destination, which fix_tcp_checksum does not read."""
    frame = bytearray(
        bytes(
            Ether()
            / IPv6(src="fd00:0:0:1::1", dst="fd00:0:0:2::1")
            / IPv6ExtHdrRouting(addresses=["fd00:0:0:3::1"], segleft=1)
            / _tcp(b"x")
        )
    )
    with pytest.raises(ValueError, match="segments left"):
        fix_tcp_checksum(frame)


def test_a_frame_is_parsed_over_either_ip_version() -> None:
    """parse_frame_tcp: the same TCP segment over IPv4 and over IPv6 (behind Hop-by-Hop and
    Destination Options) gives the same fields, its addresses aside; IPv6's ECN is in the traffic
    class; anything but TCP is None (the hold-back agent's parser)."""
    tcp = TCP(sport=5001, dport=40000, seq=7, ack=1448, flags="A", window=9, options=[("Timestamp", (5, 6))])
    v4 = bytes(Ether() / IP(src="10.0.2.1", dst="10.0.1.1", tos=3) / tcp / Raw(b"ab"))
    v6 = bytes(
        Ether()
        / IPv6(src="fd00:0:0:2::1", dst="fd00:0:0:1::1", tc=3)
        / IPv6ExtHdrHopByHop()
        / IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 4)])
        / tcp
        / Raw(b"ab")
    )
    a, b = parse_frame_tcp(v4), parse_frame_tcp(v6)
    assert a is not None and b is not None
    assert (b.src, b.dst) == ("fd00:0:0:2::1", "fd00:0:0:1::1")
    fields = ("sport", "dport", "seq", "ack", "flags", "window", "payload_len", "ecn", "ts_val", "ts_ecr")
    assert (
        [getattr(a, f) for f in fields]
        == [getattr(b, f) for f in fields]
        == [5001, 40000, 7, 1448, ACK, 9, 2, 3, 5, 6]
    )
    assert parse_frame_tcp(bytes(Ether() / IPv6(nh=17) / Raw(b"\0" * 8))) is None
