"""Per-flow, per-direction packet counts from a pcap: data segments, pure ACKs, retransmissions.

A fast reader of classic pcap files (tcpdump -w), parsing just enough of Ethernet, IPv4 and TCP
to classify each segment. Directions are named by sender: "10.0.0.1:40000 > 10.0.0.2:5001".
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ackwise.serial import seq_add, seq_gt, seq_leq

PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": "<",
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",
    b"\xa1\xb2\x3c\x4d": ">",
}
LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10


@dataclass(frozen=True)
class Segment:
    time: float
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    payload_len: int
    ecn: int

    @property
    def direction(self) -> str:
        return f"{self.src}:{self.sport} > {self.dst}:{self.dport}"

    @property
    def is_pure_ack(self) -> bool:
        return self.payload_len == 0 and self.flags & ACK != 0 and self.flags & (SYN | FIN | RST) == 0


@dataclass
class DirectionStats:
    data_segments: int = 0
    data_bytes: int = 0
    pure_acks: int = 0
    other: int = 0  # SYN, FIN, RST without payload
    retransmissions: int = 0
    ce_marked: int = 0
    first_time: float | None = None
    last_time: float | None = None
    _highest_end: int | None = field(default=None, repr=False)

    def add(self, seg: Segment) -> None:
        self.first_time = seg.time if self.first_time is None else self.first_time
        self.last_time = seg.time
        if seg.ecn == 3:
            self.ce_marked += 1
        if seg.payload_len > 0:
            self.data_segments += 1
            self.data_bytes += seg.payload_len
            end = seq_add(seg.seq, seg.payload_len)
            if self._highest_end is not None and seq_leq(end, self._highest_end):
                self.retransmissions += 1
            if self._highest_end is None or seq_gt(end, self._highest_end):
                self._highest_end = end
        elif seg.is_pure_ack:
            self.pure_acks += 1
        else:
            self.other += 1

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


def read_frames(path: str | Path) -> Iterator[tuple[float, bytes, int]]:
    """(time, frame, link-layer header length) for every record of a pcap file."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        return
    endian = PCAP_MAGIC.get(data[:4])
    if endian is None:
        raise ValueError(f"{path}: not a pcap file (pcapng is not supported: use tcpdump -w)")
    nano = data[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype == LINKTYPE_ETHERNET:
        l2_len = 14
    elif linktype == LINKTYPE_LINUX_SLL:
        l2_len = 16
    else:
        raise ValueError(f"{path}: link type {linktype} not supported")
    record = struct.Struct(endian + "IIII")
    offset = 24
    while offset + 16 <= len(data):
        ts_sec, ts_frac, incl_len, _ = record.unpack_from(data, offset)
        offset += 16
        yield ts_sec + ts_frac / (1e9 if nano else 1e6), data[offset : offset + incl_len], l2_len
        offset += incl_len


def read_segments(path: str | Path) -> Iterator[Segment]:
    for t, frame, l2_len in read_frames(path):
        seg = _parse(frame, l2_len, t)
        if seg is not None:
            yield seg


def _parse(frame: bytes, l2_len: int, t: float) -> Segment | None:
    if len(frame) < l2_len + 20 or frame[l2_len - 2 : l2_len] != b"\x08\x00":
        return None
    ip = l2_len
    ihl = (frame[ip] & 0x0F) * 4
    if frame[ip] >> 4 != 4 or ihl < 20 or frame[ip + 9] != 6:
        return None
    total_len = struct.unpack_from("!H", frame, ip + 2)[0]
    tcp = ip + ihl
    if len(frame) < tcp + 20:
        return None
    sport, dport, seq, ack, off_flags, window = struct.unpack_from("!HHIIHH", frame, tcp)
    doff = (off_flags >> 12) * 4
    return Segment(
        time=t,
        src=".".join(str(b) for b in frame[ip + 12 : ip + 16]),
        dst=".".join(str(b) for b in frame[ip + 16 : ip + 20]),
        sport=sport,
        dport=dport,
        seq=seq,
        ack=ack,
        flags=off_flags & 0xFF,
        window=window,
        payload_len=max(0, total_len - ihl - doff),
        ecn=frame[ip + 1] & 0x03,
    )


def direction_stats(path: str | Path) -> dict[str, DirectionStats]:
    stats: dict[str, DirectionStats] = {}
    for seg in read_segments(path):
        stats.setdefault(seg.direction, DirectionStats()).add(seg)
    return stats
