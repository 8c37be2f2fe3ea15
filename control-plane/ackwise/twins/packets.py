"""A TCP segment as Python sees it: the IPv4 and TCP headers and the options the ACK policies use,
read straight from bytes (struct, no scapy: the host agent and the capture parser see every packet).
It reads options as p4src/include/parser.p4 does: SACK (1 to 4 blocks), Timestamps, window scale,
MSS, anything else flagged unknown."""

from __future__ import annotations

import struct
from dataclasses import dataclass

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80

_OPT_EOL, _OPT_NOP, _OPT_MSS, _OPT_WS, _OPT_SACK_PERMITTED, _OPT_SACK, _OPT_TS = 0, 1, 2, 3, 4, 5, 8


@dataclass(frozen=True)
class TcpSegment:
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    payload_len: int
    ecn: int  # the IPv4 ECN field: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE
    ts_val: int | None = None
    ts_ecr: int | None = None
    sack: tuple[tuple[int, int], ...] = ()
    ws_shift: int | None = None
    mss: int | None = None
    unknown_option: bool = False
    time: float = 0.0

    @property
    def is_pure_ack(self) -> bool:
        return self.payload_len == 0 and self.flags & ACK != 0 and self.flags & (SYN | FIN | RST) == 0

    @property
    def direction(self) -> str:
        return f"{self.src}:{self.sport} > {self.dst}:{self.dport}"


def parse_ipv4_tcp(packet: bytes, time: float = 0.0) -> TcpSegment | None:
    """An IPv4 packet (no link-layer header) carrying TCP, or None for anything else."""
    if len(packet) < 20 or packet[0] >> 4 != 4 or packet[9] != 6:
        return None
    ihl = (packet[0] & 0x0F) * 4
    if ihl < 20 or len(packet) < ihl + 20:
        return None
    total_len = struct.unpack_from("!H", packet, 2)[0]
    sport, dport, seq, ack, off_flags, window = struct.unpack_from("!HHIIHH", packet, ihl)
    doff = (off_flags >> 12) * 4
    fields: dict[str, object] = {}
    if doff > 20:
        fields = _options(packet[ihl + 20 : ihl + min(doff, len(packet) - ihl)])
    return TcpSegment(
        src=".".join(str(b) for b in packet[12:16]),
        dst=".".join(str(b) for b in packet[16:20]),
        sport=sport,
        dport=dport,
        seq=seq,
        ack=ack,
        flags=off_flags & 0xFF,
        window=window,
        payload_len=max(0, total_len - ihl - doff),
        ecn=packet[1] & 0x03,
        time=time,
        **fields,  # type: ignore[arg-type]
    )


def _options(opts: bytes) -> dict[str, object]:
    out: dict[str, object] = {}
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == _OPT_EOL:
            break
        if kind == _OPT_NOP:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2 or i + opts[i + 1] > len(opts):
            out["unknown_option"] = True  # malformed: treat as news
            break
        length = opts[i + 1]
        body = opts[i + 2 : i + length]
        if kind == _OPT_TS and length == 10:
            out["ts_val"], out["ts_ecr"] = struct.unpack("!II", body)
        elif kind == _OPT_SACK and length in (10, 18, 26, 34):
            edges = struct.unpack(f"!{(length - 2) // 4}I", body)
            out["sack"] = tuple(zip(edges[0::2], edges[1::2], strict=True))
        elif kind == _OPT_WS and length == 3:
            out["ws_shift"] = body[0]
        elif kind == _OPT_MSS and length == 4:
            out["mss"] = struct.unpack("!H", body)[0]
        elif kind == _OPT_SACK_PERMITTED and length == 2:
            pass
        else:
            out["unknown_option"] = True
        i += length
    return out
