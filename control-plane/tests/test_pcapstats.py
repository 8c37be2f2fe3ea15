import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from ackwise.experiments.measure.pcapstats import (
    LINUX_MAX_QUICKACKS,
    LinuxAckReasons,
    direction_stats,
    linux_ack_reasons,
    nflog_payload,
    read_segments,
)
from ackwise.twins.packets import ACK, FIN, PSH, SYN, TcpSegment

DATA = "10.0.0.1:40000 > 10.0.0.2:5001"
ACKS = "10.0.0.2:5001 > 10.0.0.1:40000"


def seg(
    src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: str, payload: int = 0, tos: int = 0
) -> Ether:
    pkt = (
        Ether() / IP(src=src, dst=dst, tos=tos) / TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags)
    )
    return pkt / Raw(load=b"x" * payload) if payload else pkt


def test_counts_data_acks_retransmissions_across_the_wrap(tmp_path: Path) -> None:
    start = 0xFFFFF000  # the data wraps the sequence space
    pkts = [
        seg("10.0.0.1", "10.0.0.2", 40000, 5001, start - 1, 0, "S"),
        seg("10.0.0.2", "10.0.0.1", 5001, 40000, 7, start, "SA"),
    ]
    for i in range(4):
        pkts.append(
            seg(
                "10.0.0.1",
                "10.0.0.2",
                40000,
                5001,
                (start + i * 1448) % 2**32,
                8,
                "A",
                1448,
                tos=3 * (i == 2),
            )
        )
    pkts.append(
        seg("10.0.0.1", "10.0.0.2", 40000, 5001, (start + 1448) % 2**32, 8, "A", 1448)
    )  # retransmission
    for i in (2, 4):
        pkts.append(seg("10.0.0.2", "10.0.0.1", 5001, 40000, 8, (start + i * 1448) % 2**32, "A"))
    pkts.append(seg("10.0.0.2", "10.0.0.1", 5001, 40000, 8, (start + 4 * 1448) % 2**32, "FA"))
    wrpcap(str(tmp_path / "t.pcap"), pkts)

    stats = direction_stats(tmp_path / "t.pcap")
    assert stats[DATA].data_segments == 5
    assert stats[DATA].data_bytes == 5 * 1448
    assert stats[DATA].retransmissions == 1
    assert stats[DATA].ce_marked == 1
    assert stats[DATA].other == 1  # the SYN
    assert stats[ACKS].pure_acks == 2
    assert stats[ACKS].other == 2  # SYN-ACK and FIN


def tcp(src: str, seq: int, ack: int, flags: int, window: int = 100, payload: int = 0) -> TcpSegment:
    sport, dport = (40000, 5001) if src == "10.0.0.1" else (5001, 40000)
    dst = "10.0.0.2" if src == "10.0.0.1" else "10.0.0.1"
    return TcpSegment(src, dst, sport, dport, seq, ack, flags, window, payload, 0)


def test_linux_ack_reasons_names_why_each_ack_was_sent() -> None:
    isn = 0xFFFFFF00  # the receiver's ACK numbers wrap
    mss = 1448
    segs = [tcp("10.0.0.2", 7, (isn + 1) % 2**32, SYN | ACK, window=43440)]  # the SYN-ACK
    next_seq = isn + 1

    def data(n: int, push: bool = False) -> None:
        nonlocal next_seq
        for i in range(n):
            flags = ACK | (PSH if push and i == n - 1 else 0)
            segs.append(tcp("10.0.0.1", next_seq % 2**32, 8, flags, payload=mss))
            next_seq += mss

    def ack(window: int = 100) -> None:
        segs.append(tcp("10.0.0.2", 8, next_seq % 2**32, ACK, window=window))

    for _ in range(LINUX_MAX_QUICKACKS):  # quickack mode at the start: one ACK per segment
        data(1)
        ack()
    data(2)
    ack()  # two_or_more
    data(3)
    ack()  # two_or_more
    data(1)
    ack(window=120)  # window_grew
    data(1, push=True)
    ack(window=120)  # after_push
    data(1)
    ack(window=120)  # unexplained: one segment, no reason visible
    ack(window=140)  # no_advance: a window update
    segs.append(tcp("10.0.0.2", 8, next_seq % 2**32, FIN | ACK))  # not a pure ACK: not counted

    reasons = linux_ack_reasons(segs, "10.0.0.2:5001 > 10.0.0.1:40000", mss)
    assert reasons == LinuxAckReasons(
        two_or_more=2,
        quick_start=LINUX_MAX_QUICKACKS,
        window_grew=1,
        after_push=1,
        unexplained=1,
        no_advance=1,
    )
    assert reasons.total == LINUX_MAX_QUICKACKS + 6


def test_linux_ack_reasons_every_segment_acked_is_unexplained_after_the_start() -> None:
    """What a quickack receiver looks like: after the start, single-segment ACKs with no reason."""
    segs = [tcp("10.0.0.2", 7, 1, SYN | ACK)]
    for i in range(100):
        segs.append(tcp("10.0.0.1", 1 + i * 1448, 8, ACK, payload=1448))
        segs.append(tcp("10.0.0.2", 8, 1 + (i + 1) * 1448, ACK))
    reasons = linux_ack_reasons(segs, "10.0.0.2:5001 > 10.0.0.1:40000")
    assert reasons.quick_start == LINUX_MAX_QUICKACKS
    assert reasons.unexplained == 100 - LINUX_MAX_QUICKACKS


def test_nflog_records_read_as_the_packets_they_logged(tmp_path: Path) -> None:
    """tcpdump -i nflog:N writes link type 239: a header and TLVs, the packet in NFULA_PAYLOAD
    (type 9), other TLVs (here a 6-byte prefix, padded to 8) before it."""
    packet = bytes(
        IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=5001, dport=40000, seq=8, ack=99, flags="A")
    )
    prefix = b"nflog\x00"
    record = b"\x02\x00\x00\x07"  # AF_INET, version 0, group 7
    record += struct.pack("=HH", 4 + len(prefix), 10) + prefix + b"\x00\x00"
    record += struct.pack("=HH", 4 + len(packet), 9) + packet
    pcap = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 239)
    pcap += struct.pack("<IIII", 10, 500_000, len(record), len(record)) + record
    (tmp_path / "n.pcap").write_bytes(pcap)
    (seg_,) = list(read_segments(tmp_path / "n.pcap"))
    assert (seg_.src, seg_.sport, seg_.ack, seg_.time) == ("10.0.0.2", 5001, 99, 10.5)
    assert nflog_payload(b"\x02\x00\x00\x07") is None
