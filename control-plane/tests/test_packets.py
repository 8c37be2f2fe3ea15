"""The Python TCP view reads what the P4 parser reads."""

from scapy.layers.inet import IP, TCP
from scapy.packet import Raw

from ackwise.twins.packets import ACK, parse_ipv4_tcp


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
