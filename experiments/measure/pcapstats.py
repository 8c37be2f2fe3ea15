"""Per-flow, per-direction packet counts from a pcap: data segments, pure ACKs, retransmissions.

A fast reader of classic pcap files (tcpdump -w), parsing just enough of Ethernet, IPv4 or IPv6,
and TCP to classify each segment. Directions are named by sender: "10.0.0.1:40000 > 10.0.0.2:5001",
over IPv6 "fd00::1:40000 > fd00::2:5001" (the port is what follows the last colon).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ackwise.twins.packets import ACK, PSH, TcpSegment, parse_ip_tcp
from ackwise.twins.policies import MSS_BYTES
from ackwise.twins.serial import seq_add, seq_diff, seq_gt, seq_leq

PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": "<",
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",
    b"\xa1\xb2\x3c\x4d": ">",
}
LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113
# Netfilter's NFLOG (tcpdump -i nflog:GROUP): what an iptables rule logged, before any later rule
# (a host agent's NFQUEUE) held or dropped it. Records are a 4-byte header and TLVs; the packet is
# the TLV of type NFULA_PAYLOAD. TLV lengths and types are in the capturing host's byte order.
LINKTYPE_NFLOG = 239
NFULA_PAYLOAD = 9
_ETHERNET_IPV4 = b"\x00" * 12 + b"\x08\x00"  # a header for the frames read_frames makes of NFLOG records
_ETHERNET_IPV6 = b"\x00" * 12 + b"\x86\xdd"
_IP_ETHERTYPES = (b"\x08\x00", b"\x86\xdd")


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

    def add(self, seg: TcpSegment) -> None:
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
    elif linktype == LINKTYPE_NFLOG:
        l2_len = 14  # each record becomes an Ethernet-framed IP packet
    else:
        raise ValueError(f"{path}: link type {linktype} not supported")
    record = struct.Struct(endian + "IIII")
    offset = 24
    while offset + 16 <= len(data):
        ts_sec, ts_frac, incl_len, _ = record.unpack_from(data, offset)
        offset += 16
        frame = data[offset : offset + incl_len]
        offset += incl_len
        if linktype == LINKTYPE_NFLOG:
            packet = nflog_payload(frame)
            if packet is None:
                continue
            frame = (_ETHERNET_IPV6 if packet[:1] and packet[0] >> 4 == 6 else _ETHERNET_IPV4) + packet
        yield ts_sec + ts_frac / (1e9 if nano else 1e6), frame, l2_len


def nflog_payload(record: bytes) -> bytes | None:
    """The packet an NFLOG record carries (its NFULA_PAYLOAD TLV), None without one."""
    offset = 4  # family, version, resource id
    while offset + 4 <= len(record):
        length, kind = struct.unpack_from("=HH", record, offset)
        if length < 4:
            return None
        if kind == NFULA_PAYLOAD:
            return record[offset + 4 : offset + length]
        offset += (length + 3) & ~3  # TLVs are padded to 4 bytes
    return None


def read_segments(path: str | Path) -> Iterator[TcpSegment]:
    for t, frame, l2_len in read_frames(path):
        if frame[l2_len - 2 : l2_len] in _IP_ETHERTYPES:
            seg = parse_ip_tcp(frame[l2_len:], t)
            if seg is not None:
                yield seg


def direction_stats(path: str | Path) -> dict[str, DirectionStats]:
    stats: dict[str, DirectionStats] = {}
    for seg in read_segments(path):
        stats.setdefault(seg.direction, DirectionStats()).add(seg)
    return stats


# Linux starts a connection's receive side in quickack mode for up to this many ACKs
# (TCP_MAX_QUICKACKS in include/net/tcp.h).
LINUX_MAX_QUICKACKS = 16


@dataclass
class LinuxAckReasons:
    """Why a Linux receiver sent each of its pure ACKs, as far as a capture that sees both
    directions shows. Its delayed-ACK rule acknowledges every second full-sized segment; it
    acknowledges a single segment at once only in quickack mode or when the application has read
    everything (tcp_cleanup_rbuf). Quickack mode is entered for the first LINUX_MAX_QUICKACKS
    segments and, for one segment, every time the receive window grows (tcp_grow_window sets
    icsk_ack.quick), which receive-buffer autotuning does throughout a transfer: so the share of
    single-segment ACKs, and with it the ACK ratio, varies from run to run."""

    two_or_more: int = 0  # the delayed-ACK rule's own ACKs: two or more segments acknowledged
    quick_start: int = 0  # one segment, among the connection's first LINUX_MAX_QUICKACKS ACKs
    window_grew: int = 0  # one segment, with a larger window than the ACK before
    after_push: int = 0  # one segment, right after a PSH segment (the reader drained the queue)
    unexplained: int = 0  # one segment (or less), none of the above
    no_advance: int = 0  # the same ACK number again: window updates and duplicates

    @property
    def total(self) -> int:
        return sum(vars(self).values())


def linux_ack_reasons(
    segments: Iterator[TcpSegment] | list[TcpSegment], ack_direction: str, mss_bytes: int = MSS_BYTES
) -> LinuxAckReasons:
    """Classify the pure ACKs sent in ``ack_direction`` ("ip:port > ip:port") against the data
    segments of the opposite direction that preceded each in ``segments`` (in capture order)."""
    reasons = LinuxAckReasons()
    src, _, dst = ack_direction.partition(" > ")
    data_direction = f"{dst} > {src}"
    previous: TcpSegment | None = None  # the last segment sent in ack_direction
    last_data_pushed = False
    acks_seen = 0
    for seg in segments:
        if seg.direction == data_direction and seg.payload_len > 0:
            last_data_pushed = bool(seg.flags & PSH)
            continue
        if seg.direction != ack_direction or not seg.flags & ACK:
            continue
        if seg.is_pure_ack and previous is not None:
            acks_seen += 1
            acked = seq_diff(seg.ack, previous.ack)
            if acked <= 0:
                reasons.no_advance += 1
            elif acked >= 2 * mss_bytes:
                reasons.two_or_more += 1
            elif acks_seen <= LINUX_MAX_QUICKACKS:
                reasons.quick_start += 1
            elif seg.window > previous.window:
                reasons.window_grew += 1
            elif last_data_pushed:
                reasons.after_push += 1
            else:
                reasons.unexplained += 1
        previous = seg  # the SYN-ACK is the first ACK's predecessor
    return reasons
