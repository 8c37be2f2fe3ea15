"""A TCP segment as Python sees it: the IPv4 and TCP headers and the options the ACK policies use,
read straight from bytes (struct, no scapy: the host agent and the capture parser see every packet).
It reads options as p4src/include/parser.p4 does: SACK (1 to 4 blocks), Timestamps, window scale,
MSS, anything else flagged unknown."""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from ackwise.twins.p4names import (
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    IP_PROTO_TCP,
    IPV6_EXT_DEST_OPTIONS,
    IPV6_EXT_HOP_BY_HOP,
    IPV6_EXT_ROUTING,
)

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80

# The IPv6 extension headers the switch's parser follows (one layout: next header, length, data).
_IPV6_EXT_FOLLOWED = (IPV6_EXT_HOP_BY_HOP, IPV6_EXT_ROUTING, IPV6_EXT_DEST_OPTIONS)

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
    ecn: int  # the IPv4 (IPv6: traffic class) ECN field: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE
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
    return _tcp_segment(
        packet,
        ihl,
        total_len - ihl,
        ".".join(str(b) for b in packet[12:16]),
        ".".join(str(b) for b in packet[16:20]),
        packet[1] & 0x03,
        time,
    )


def parse_ipv6_tcp(packet: bytes, time: float = 0.0) -> TcpSegment | None:
    """An IPv6 packet (no link-layer header) carrying TCP behind the extension headers the switch
    follows (``tcp_offset``), or None for anything else (a Routing header with segments left,
    another upper layer, a packet cut short)."""
    if len(packet) < 40 or packet[0] >> 4 != 6:
        return None
    try:
        at, tcp_len = _ipv6_tcp_offset(packet, 0)
    except (ValueError, IndexError):
        return None
    if tcp_len < 20 or len(packet) < at + 20:
        return None
    return _tcp_segment(
        packet,
        at,
        tcp_len,
        str(ipaddress.IPv6Address(packet[8:24])),
        str(ipaddress.IPv6Address(packet[24:40])),
        packet[1] >> 4 & 0x03,
        time,
    )


def parse_ip_tcp(packet: bytes, time: float = 0.0) -> TcpSegment | None:
    """An IP packet of either version (no link-layer header, as NFQUEUE and NFLOG hand it over)
    carrying TCP, by its version field; None for anything else."""
    if not packet:
        return None
    if packet[0] >> 4 == 6:
        return parse_ipv6_tcp(packet, time)
    return parse_ipv4_tcp(packet, time)


def parse_frame_tcp(frame: bytes, time: float = 0.0) -> TcpSegment | None:
    """An Ethernet frame carrying TCP over IPv4, or over IPv6 (``parse_ipv6_tcp``), or None for
    anything else."""
    if frame[12:14] == b"\x08\x00":
        return parse_ipv4_tcp(frame[14:], time)
    if frame[12:14] != ETHERTYPE_IPV6.to_bytes(2, "big"):
        return None
    return parse_ipv6_tcp(frame[14:], time)


def _tcp_segment(buf: bytes, at: int, tcp_len: int, src: str, dst: str, ecn: int, time: float) -> TcpSegment:
    """The TCP header at ``buf[at:]`` (``tcp_len`` bytes of TCP by the IP header's length), under
    either IP version's addresses and ECN field."""
    sport, dport, seq, ack, off_flags, window = struct.unpack_from("!HHIIHH", buf, at)
    doff = (off_flags >> 12) * 4
    fields: dict[str, object] = {}
    if doff > 20:
        fields = _options(buf[at + 20 : at + min(doff, len(buf) - at)])
    return TcpSegment(
        src=src,
        dst=dst,
        sport=sport,
        dport=dport,
        seq=seq,
        ack=ack,
        flags=off_flags & 0xFF,
        window=window,
        payload_len=max(0, tcp_len - doff),
        ecn=ecn,
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


# ---- building frames (struct, no scapy: the fuzzer and the bench build 100 000 a run) ----

NOP = b"\x01"


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``, padded to an even length."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _addr(ip: str | int) -> bytes:
    return ip.to_bytes(4, "big") if isinstance(ip, int) else bytes(int(x) for x in ip.split("."))


def ipv4_header(
    src: str | int,
    dst: str | int,
    payload_len: int,
    ident: int = 1,
    proto: int = IP_PROTO_TCP,
    ttl: int = 64,
    options: bytes = b"",
    tos: int = 0,
    frag: int = 0,
) -> bytearray:
    """An IPv4 header (with ``options``, a multiple of 4 bytes) and its checksum."""
    ihl = 5 + len(options) // 4
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x40 | ihl,
            tos,
            ihl * 4 + payload_len,
            ident,
            frag,
            ttl,
            proto,
            0,
            _addr(src),
            _addr(dst),
        )
        + options
    )
    hdr[10:12] = checksum(bytes(hdr)).to_bytes(2, "big")
    return hdr


def tcp_header(
    src: str | int,
    dst: str | int,
    sport: int,
    dport: int,
    seq: int,
    ack: int,
    flags: int,
    window: int,
    options: bytes = b"",
    payload: bytes = b"",
) -> bytearray:
    """A TCP header with ``options`` (padded with EOL to a 4-byte boundary), then ``payload``,
    the checksum over the pseudo-header of ``src`` and ``dst`` included."""
    doff = 5 + (len(options) + 3) // 4
    options = options + b"\0" * ((doff - 5) * 4 - len(options))
    hdr = bytearray(
        struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, doff << 4, flags, window, 0, 0)
        + options
    )
    seg = bytes(hdr) + payload
    pseudo = _addr(src) + _addr(dst) + struct.pack("!BBH", 0, IP_PROTO_TCP, len(seg))
    hdr[16:18] = checksum(pseudo + seg).to_bytes(2, "big")
    return hdr + payload


def ethernet(dst_mac: bytes, src_mac: bytes, payload: bytes, ethertype: int = ETHERTYPE_IPV4) -> bytes:
    return dst_mac + src_mac + ethertype.to_bytes(2, "big") + payload


def timestamps_option(val: int, ecr: int) -> bytes:
    """TCP Timestamps (kind 8, length 10), without the NOPs Linux puts before it."""
    return struct.pack("!BBII", 8, 10, val % 2**32, ecr % 2**32)


def sack_option(blocks: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> bytes:
    """TCP SACK (kind 5) with these (left, right) blocks, without NOPs."""
    return bytes([5, 2 + 8 * len(blocks)]) + b"".join(
        struct.pack("!II", a % 2**32, b % 2**32) for a, b in blocks
    )


def tcp_offset(frame: bytes | bytearray) -> tuple[int, int]:
    """Where an Ethernet frame's TCP segment starts, and its length (the pseudo-header's upper-layer
    length): behind the IPv4 header and its options, or behind the IPv6 header and the extension
    headers the switch follows (Hop-by-Hop, Routing, Destination Options; parser.p4)."""
    ip_at = 14
    if int.from_bytes(frame[12:14], "big") == ETHERTYPE_IPV6:
        return _ipv6_tcp_offset(frame, ip_at)
    ihl_bytes = (frame[ip_at] & 0x0F) * 4
    return ip_at + ihl_bytes, int.from_bytes(frame[ip_at + 2 : ip_at + 4], "big") - ihl_bytes


def _ipv6_tcp_offset(buf: bytes | bytearray, ip_at: int) -> tuple[int, int]:
    """``tcp_offset`` for the IPv6 header at ``buf[ip_at:]``."""
    next_header, at = buf[ip_at + 6], ip_at + 40
    tcp_len = int.from_bytes(buf[ip_at + 4 : ip_at + 6], "big")
    while next_header in _IPV6_EXT_FOLLOWED:
        if next_header == IPV6_EXT_ROUTING and buf[at + 3] != 0:
            # RFC 8200 8.1: the pseudo-header then holds the final destination, which is in
            # the Routing header, where each routing type keeps it differently.
            raise ValueError("a Routing header with segments left: the final destination is not read")
        ext_len = (buf[at + 1] + 1) * 8
        next_header, at, tcp_len = buf[at], at + ext_len, tcp_len - ext_len
    if next_header != IP_PROTO_TCP:
        raise ValueError(f"IPv6 Next Header {next_header} where TCP was expected")
    return at, tcp_len


def fix_tcp_checksum(frame: bytearray) -> None:
    """Recompute, in place, the TCP checksum of an Ethernet/IPv4/TCP or Ethernet/IPv6/TCP frame
    (behind extension headers too) from its bytes alone (pseudo-header, header, options, payload),
    independently of any parser's view of the options."""
    ip_at = 14
    tcp_at, tcp_len = tcp_offset(frame)
    frame[tcp_at + 16 : tcp_at + 18] = b"\0\0"
    if int.from_bytes(frame[12:14], "big") == ETHERTYPE_IPV6:
        # RFC 8200 8.1: both addresses, the upper-layer length (32 bits), 3 zero bytes, Next Header.
        pseudo = (
            bytes(frame[ip_at + 8 : ip_at + 40]) + tcp_len.to_bytes(4, "big") + bytes([0, 0, 0, IP_PROTO_TCP])
        )
    else:
        pseudo = (
            bytes(frame[ip_at + 12 : ip_at + 20]) + bytes([0, frame[ip_at + 9]]) + tcp_len.to_bytes(2, "big")
        )
    frame[tcp_at + 16 : tcp_at + 18] = checksum(pseudo + bytes(frame[tcp_at : tcp_at + tcp_len])).to_bytes(
        2, "big"
    )
