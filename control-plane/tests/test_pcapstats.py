from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from ackwise.experiments.pcapstats import direction_stats

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
