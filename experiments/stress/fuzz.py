"""Structure-aware fuzzing of the data plane: mutated Ethernet/IPv4/TCP and Ethernet/IPv6/TCP
packets through every program that parses IPv6 (ack_switch under every ACK policy, ap_proxy with a
station served, forward_only), beside valid flows, with a check on every packet.

    python -m ackwise.experiments.stress.fuzz --packets 100000 [--seed 1] [--configs every_d,ap_proxy]
                                       [--ip-versions 4,6] [--json FILE] [--write-docs]
    python -m ackwise.experiments.stress.fuzz --merge a.json,b.json [--json FILE] [--write-docs]

Each configuration's switch gets a pass of ``--packets`` per IP version: flows of that version and
its mutations (the IPv6 header's fields, payload length lies, Next Header values, extension header
chains up to and past IPV6_EXT_HEADERS_MAX, cut short, TCP mutations behind them), and the TCP and
frame mutations both share.

Run as root. It makes a private network namespace, veth pairs and one simple_switch in it (Thrift
port 9390 inside the namespace, so nothing else on the machine is touched), and removes them.

**How a packet is checked.** Every packet carries a tag, its IPv4 identification or its IPv6 flow
label (TAG6 | the identifier), unique within a burst (a few hundred packets); after each burst a
marker on each side, which the switch forwards behind everything else of the burst (one FIFO
egress queue per port), says the burst is over. An input's fate is then read from the outputs with
its tag:

- *forwarded*: on the port it is routed to, byte for byte what a plain router makes of it (MACs
  rewritten, TTL - 1 and the IPv4 header checksum recomputed, or the hop limit - 1) or, not routed
  (neither IPv4 nor IPv6 with a route), unchanged;
- *dropped*: no output with its tag;
- *rewritten*: on that port, other bytes (only a coalesced ACK may: ACK number, window and
  timestamps newer, checksums valid);
- *to agent*, *spoofed* (ap_proxy): a copy on the CPU port, a station ACK consumed there, an ACK
  made for the sender from a data segment.

What each input may come to is decided from its bytes alone, by a model of what the switch must do:
the Ethernet type, IPv4 header (IHL, checksum, TTL, fragments), TCP header and options as
p4src/include/parser.p4 reads them (malformed: data offset below 5, an option length 0 or 1, an
option past the data offset, a packet ending inside a header), and behind the IPv6 EtherType the
IPv6 header and its extension headers as the parser follows or skips them. A packet the switch may
drop is one of: IHL below 5, an IPv4 header cut short, an IPv6 header it cannot read (another
version, cut short, a payload length inside an extension header), a bad IPv4 checksum, TTL 0 or 1,
a routed IPv6 packet's hop limit 0 or 1, and a pure ACK that is well formed, unfragmented and
carries no option the switch does not interpret, under a thinning policy. Anything else must be
forwarded exactly. A violation is an input whose fate is not one it may have, an output with a
checksum that was right on input and is wrong now, an output no input explains, a valid flow's
data segment that did not come out, or a burst whose markers did not (the switch stopped
forwarding). At the end of each pass the growth of
the switch's own counters over it must add up: the inputs dropped equal forwarding.drops +
parser.malformed[IHL, IPv4 header, IPv6 header] + the ACKs thinned and filtered, and
parser.malformed counts exactly the inputs the model calls malformed. The stats counters
(ack_thinning.stats, ack_filter.stats, ap.stats) are reported cell by cell, by name, as many cells
as the program has."""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import CounterValue, named_cells
from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.bmv2.toolchain import REPO_ROOT, compiled_program
from ackwise.experiments.measure.versions import tool_versions
from ackwise.experiments.stress.dataplane import (
    CPU,
    DOWNLINK,
    MARK,
    UPLINK,
    Wire,
    configure,
    frame,
    mac,
    marker,
    over_ipv6,
    rerun_inside_netns,
    sack_option,
    ts_option,
)
from ackwise.netdev import add_veth
from ackwise.twins.p4names import (
    COUNTER_ACK_FILTER_STATS,
    COUNTER_ACK_THINNING_STATS,
    COUNTER_AP_STATS,
    COUNTER_FORWARDING_DROPS,
    COUNTER_PARSER_MALFORMED,
    ETHERTYPE_AGENT_HEARTBEAT,
    ETHERTYPE_IPV6,
    IP_PROTO_TCP,
    IP_PROTO_UDP,
    IPV6_EXT_AH,
    IPV6_EXT_DEST_OPTIONS,
    IPV6_EXT_ESP,
    IPV6_EXT_EXPERIMENTAL_1,
    IPV6_EXT_EXPERIMENTAL_2,
    IPV6_EXT_FRAGMENT,
    IPV6_EXT_HEADERS_MAX,
    IPV6_EXT_HIP,
    IPV6_EXT_HOP_BY_HOP,
    IPV6_EXT_LEN_MAX,
    IPV6_EXT_MOBILITY,
    IPV6_EXT_ROUTING,
    IPV6_EXT_SHIM6,
    REGISTER_AP_WINDOW_UPDATES,
    TCP_OPTIONS_MAX,
    ApStat,
    FilterStat,
    MalformedReason,
    ThinningStat,
)
from ackwise.twins.packets import (
    checksum,
    ipv4_header,
    tcp_header,
)

THRIFT_PORT = 9390
POLICIES = ("off", "every_d", "dynamic_d", "tack", "filter", "acc", "coalesce")
# Every program that parses IPv6 (defines ACKWISE_IPV6) but parser_probe, a PTF fixture that
# rewrites windows: ack_switch under each policy, ap_proxy, forward_only (bench's baseline).
CONFIGS = (*POLICIES, "ap_proxy", "forward_only")
PROGRAMS = {"ap_proxy": "ap_proxy", "forward_only": "forward_only"}  # else ack_switch
# Packets per burst: bmv2 reads its ports with packet sockets whose buffers hold about a hundred
# full frames; a burst larger than that, sent at once, would be dropped by the kernel before the
# switch saw it, and read as the switch's doing.
BURST = 50
SEGMENT_BYTES = 512  # payload of the flows' data segments: small, so that bursts fit bmv2's socket buffers
DOCS_START, DOCS_END = "<!-- fuzz:start -->", "<!-- fuzz:end -->"
REPO = REPO_ROOT


# ---- what the switch must do with a frame: the model ----

KNOWN_OPTIONS = {0, 1, 2, 3, 4, 5, 8}
OPTION_LENGTHS = {2: (4,), 3: (3,), 4: (2,), 5: (10, 18, 26, 34), 8: (10,)}


@dataclass
class Model:
    """What the parser and forwarding of p4src make of a frame (see the module docstring)."""

    ipv4: bool = False
    ipv6: bool = False  # behind the IPv6 EtherType, a fixed header of version 6
    routed: bool = False  # IPv4 with a readable header, IPv6 with a route: routed (else switched on the MAC)
    may_drop: str = ""  # why the switch may drop it ("" : it must not)
    must_drop: bool = False  # RFC 1812 5.2.2: a router discards it
    malformed: str = ""  # the parser's reason, if any
    tcp: bool = False
    pure_ack: bool = False  # ACK, no payload, no SYN/FIN/RST
    thinnable: bool = False  # a policy may drop or rewrite it
    ip_ok: bool = False  # IPv4 header checksum right
    tcp_ok: bool = False  # TCP checksum right (over the IPv4 total length)


# The IPv6 extension headers the parser follows, and those it stops at (counted: ipv6_ext_skipped).
IPV6_EXT_FOLLOWED = {IPV6_EXT_HOP_BY_HOP, IPV6_EXT_ROUTING, IPV6_EXT_DEST_OPTIONS}
IPV6_EXT_NOT_FOLLOWED = {
    IPV6_EXT_FRAGMENT,
    IPV6_EXT_ESP,
    IPV6_EXT_AH,
    IPV6_EXT_MOBILITY,
    IPV6_EXT_HIP,
    IPV6_EXT_SHIM6,
    IPV6_EXT_EXPERIMENTAL_1,
    IPV6_EXT_EXPERIMENTAL_2,
}


def route6(dst: bytes) -> int | None:
    """The port of the IPv6 route (dataplane.install_routes: fd00:0:0:N::/64 out of port N) a
    destination address matches; None: no route (the frame is switched on its MAC)."""
    if dst[:7] == bytes.fromhex("fd000000000000") and dst[7] in (UPLINK, DOWNLINK):
        return dst[7]
    return None


def model_ipv6(ip: bytes, policy: str = "off") -> Model:
    """What the parser and forwarding make of what follows the IPv6 EtherType. A readable header
    whose destination has a route is routed (MACs rewritten, hop limit - 1; dropped when it arrives
    with a hop limit of 1 or 0), any other is switched on its MAC; untouched either way unless a
    policy thins or rewrites it. In the parser's order: each extension header's first 4 bytes
    looked at, one too long skipped, the header extracted; the payload length checked against them
    all at the chain's end."""
    m = Model()
    cut_short = "ipv6_header", "bad ipv6 header", True
    if len(ip) < 40 or ip[0] >> 4 != 6:
        m.malformed, m.may_drop, m.must_drop = cut_short
        return m
    m.ipv6 = True
    m.routed = route6(ip[24:40]) is not None
    if m.routed and ip[7] <= 1:
        m.may_drop, m.must_drop = "hop limit expired", True
    payload_len, next_header, at = int.from_bytes(ip[4:6], "big"), ip[6], 40
    for _ in range(IPV6_EXT_HEADERS_MAX):
        if next_header not in IPV6_EXT_FOLLOWED:
            break
        if len(ip) < at + 4:
            m.malformed, m.may_drop, m.must_drop = cut_short
            return m
        if ip[at + 1] > IPV6_EXT_LEN_MAX:
            m.malformed = "ipv6_ext_skipped"
            return m
        size = (ip[at + 1] + 1) * 8
        if len(ip) < at + size:
            m.malformed, m.may_drop, m.must_drop = cut_short
            return m
        next_header, at = ip[at], at + size
    if at - 40 > payload_len:
        m.malformed, m.may_drop, m.must_drop = cut_short
    elif next_header in IPV6_EXT_NOT_FOLLOWED or (next_header in IPV6_EXT_FOLLOWED and at > 40):
        m.malformed = "ipv6_ext_skipped"  # not followed, or one more than the parser follows
    elif next_header == IP_PROTO_UDP and len(ip) < at + 8:
        m.malformed = "truncated"
    elif next_header == IP_PROTO_TCP:
        # Thinned by ack_switch's policies and proxied by the AP proxy (which serves fd00:0:0:2::/64,
        # dataplane.configure) as over IPv4 (issue 40). IPv6 has no header checksum to be wrong.
        m.ip_ok = True
        tcp = ip[at:]
        m.tcp = len(tcp) >= 20
        m.malformed, unknown = tcp_verdict(tcp)
        upper_len = payload_len - (at - 40)
        if 20 <= upper_len <= len(tcp):
            pseudo = ip[8:40] + struct.pack("!IxxxB", upper_len, IP_PROTO_TCP)
            m.tcp_ok = checksum(bytes(pseudo) + bytes(tcp[:upper_len])) == 0
        if m.malformed:
            return m
        flags, doff = tcp[13], (tcp[12] >> 4) * 4
        m.pure_ack = bool(flags & 0x10) and upper_len - doff == 0 and not flags & 0x07
        m.thinnable = (
            m.pure_ack
            and policy not in ("off", "ap_proxy")
            and not flags & 0x28
            and not unknown
            and not m.may_drop
        )
    return m


def tcp_verdict(tcp: bytes) -> tuple[str, bool]:
    """What the parser makes of a TCP header and its options, over IPv4 or IPv6: its malformed
    reason ("" if none), and whether it carries an option the pipeline does not interpret."""
    if len(tcp) < 20:
        return "truncated", False
    doff = (tcp[12] >> 4) * 4
    if doff < 20:
        return "tcp_data_offset", False
    unknown = False
    i, count = 20, 0
    while i < doff:
        if i >= len(tcp):
            return "truncated", unknown
        kind = tcp[i]
        if kind == 0:
            break  # the rest is padding
        if kind == 1:
            i, count = i + 1, count + 1
            continue
        if i + 1 >= doff:
            return "tcp_option_overrun", unknown
        if i + 1 >= len(tcp):
            return "truncated", unknown
        length = tcp[i + 1]
        if length < 2:
            return "tcp_option_length", unknown
        if i + length > doff:
            return "tcp_option_overrun", unknown
        if i + length > len(tcp):
            return "truncated", unknown
        if kind not in KNOWN_OPTIONS or length not in OPTION_LENGTHS.get(kind, ()):
            unknown = True
        i, count = i + length, count + 1
    if len(tcp) < doff:
        return "truncated", unknown  # the parser reads up to the data offset, padding after an EOL too
    return "", unknown or count > TCP_OPTIONS_MAX


def model(f: bytes, policy: str) -> Model:
    m = Model()
    if len(f) >= 14 and int.from_bytes(f[12:14], "big") == ETHERTYPE_IPV6:
        return model_ipv6(f[14:], policy)
    if len(f) < 14 or f[12:14] != b"\x08\x00":
        return m
    m.ipv4 = True
    ip = f[14:]
    ihl = (ip[0] & 0x0F) * 4 if ip else 0
    if len(ip) >= 1 and ihl < 20:
        m.malformed, m.may_drop, m.must_drop = "ipv4_ihl", "ihl below 5", True
        return m
    total_len = int.from_bytes(ip[2:4], "big") if len(ip) >= 4 else 0
    if len(ip) < 20 or len(ip) < ihl or ip[0] >> 4 != 4 or total_len < ihl:
        m.malformed, m.may_drop, m.must_drop = "ipv4_header", "bad ipv4 header (RFC 1812 5.2.2)", True
        return m
    m.routed = True
    m.ip_ok = checksum(bytes(ip[:ihl])) == 0
    if not m.ip_ok:
        m.may_drop, m.must_drop = "ipv4 checksum", True
    elif ip[8] <= 1:
        m.may_drop, m.must_drop = "ttl expired", True
    frag_offset = int.from_bytes(ip[6:8], "big") & 0x1FFF
    more_fragments = bool(ip[6] & 0x20)
    if frag_offset != 0 or more_fragments or ip[9] != 6:
        return m  # the transport header is read from whole segments only
    tcp = ip[ihl:]
    if len(tcp) < 20:
        m.malformed = "truncated"
        return m
    m.tcp = True
    doff = (tcp[12] >> 4) * 4
    flags = tcp[13]
    payload_len = (total_len - ihl - doff) % 2**16  # as the parser computes it (bit<16>)
    if ihl + 20 <= total_len <= len(ip):
        seg = bytes(tcp[: total_len - ihl])
        pseudo = ip[12:20] + struct.pack("!BBH", 0, 6, len(seg))
        m.tcp_ok = checksum(bytes(pseudo) + seg) == 0
    m.malformed, unknown = tcp_verdict(tcp)
    if m.malformed:
        return m
    m.pure_ack = bool(flags & 0x10) and payload_len == 0 and not flags & 0x07
    # What the safety contract would keep whatever the policy says: flags, unknown options, a
    # fragment of a bigger segment (its payload is in the other fragments).
    m.thinnable = (
        m.pure_ack
        and policy not in ("off", "ap_proxy")
        and not flags & 0x28
        and not unknown
        and m.ip_ok
        and not m.may_drop
    )
    return m


def forwarded(f: bytes, m: Model) -> tuple[int, bytes]:
    """(egress port, bytes) a plain router makes of frame ``f`` that entered on a port."""
    in_port = f[10]  # our frames come from host N's MAC 00:00:00:00:0N:01
    if not m.routed:
        return (DOWNLINK if in_port == UPLINK else UPLINK), f  # the L2 entry for the switch's MAC
    if m.ipv6:
        out = route6(f[14 + 24 : 14 + 40]) or DOWNLINK
        raw = bytearray(f)
        raw[0:6], raw[6:12] = mac(out, True), mac(out, False)
        raw[14 + 7] = (raw[14 + 7] - 1) % 256
        return out, bytes(raw)
    out = UPLINK if f[14 + 16 : 14 + 19] == bytes([10, 0, 1]) else DOWNLINK
    raw = bytearray(f)
    raw[0:6], raw[6:12] = mac(out, True), mac(out, False)
    ihl = (raw[14] & 0x0F) * 4
    raw[14 + 8] = (raw[14 + 8] - 1) % 256
    raw[14 + 10 : 14 + 12] = b"\0\0"
    raw[14 + 10 : 14 + 12] = checksum(bytes(raw[14 : 14 + ihl])).to_bytes(2, "big")
    return out, bytes(raw)


# ---- flows and mutations ----


@dataclass
class Flow:
    """A TCP connection in progress: the sender on port 1, the receiver on port 2."""

    index: int
    seq: int
    ack_seq: int
    ts: int
    sent: int = 0  # segments sent
    acked: int = 0
    ip_version: int = 4  # 6: every segment over IPv6 (dataplane.over_ipv6), tagged in its flow label

    def _frame(self, in_port: int, packet_v4: bytes, ident: int) -> bytes:
        f = frame(in_port, packet_v4)
        return f if self.ip_version == 4 else tagged6(over_ipv6(f), ident)

    @property
    def src(self) -> str:
        return f"10.0.1.{10 + self.index}"

    @property
    def dst(self) -> str:
        return f"10.0.2.{10 + self.index}"

    @property
    def sport(self) -> int:
        return 40000 + self.index

    def data(self, ident: int, mss: int = SEGMENT_BYTES) -> tuple[bytes, int]:
        payload = bytes([(self.sent + i) % 251 for i in range(min(mss, 64))]) * (mss // 64)
        tcp = tcp_header(
            self.src,
            self.dst,
            self.sport,
            5001,
            self.seq + self.sent * len(payload),
            self.ack_seq,
            0x10,
            502,
            ts_option(self.ts + self.sent, 7000),
            payload,
        )
        self.sent += 1
        packet = bytes(ipv4_header(self.src, self.dst, len(tcp), ident) + tcp)
        return self._frame(UPLINK, packet, ident), len(payload)

    def handshake(self, ident: int, step: int) -> bytes:
        """The sender's SYN (step 0), the receiver's SYN-ACK (1), the sender's ACK (2)."""
        if step == 0:
            tcp = tcp_header(
                self.src, self.dst, self.sport, 5001, self.seq - 1, 0, 0x02, 65535, ts_option(self.ts, 0), b""
            )
            return self._frame(UPLINK, bytes(ipv4_header(self.src, self.dst, len(tcp), ident) + tcp), ident)
        if step == 1:
            tcp = tcp_header(
                self.dst,
                self.src,
                5001,
                self.sport,
                self.ack_seq - 1,
                self.seq,
                0x12,
                65535,
                ts_option(7000, self.ts),
                b"",
            )
            return self._frame(DOWNLINK, bytes(ipv4_header(self.dst, self.src, len(tcp), ident) + tcp), ident)
        tcp = tcp_header(
            self.src,
            self.dst,
            self.sport,
            5001,
            self.seq,
            self.ack_seq,
            0x10,
            65535,
            ts_option(self.ts, 7000),
            b"",
        )
        return self._frame(UPLINK, bytes(ipv4_header(self.src, self.dst, len(tcp), ident) + tcp), ident)

    def pure_ack(self, ident: int, rng: random.Random, sack: bool = False) -> bytes:
        self.acked = min(self.sent, self.acked + rng.choice((1, 1, 2)))
        ack = self.seq + self.acked * SEGMENT_BYTES
        opts = ts_option(7000 + self.acked, self.ts + self.acked)
        if sack:
            opts += sack_option([(ack + SEGMENT_BYTES, ack + 2 * SEGMENT_BYTES)])
        tcp = tcp_header(self.dst, self.src, 5001, self.sport, self.ack_seq, ack, 0x10, 65535, opts, b"")
        return self._frame(DOWNLINK, bytes(ipv4_header(self.dst, self.src, len(tcp), ident) + tcp), ident)


# An IPv6 frame's tag: its flow label, this bit set (an IPv4 frame relabelled with the IPv6
# EtherType, the ``ethertype`` mutation, has it clear: its TOS is 0) and the identifier below it.
TAG6 = 0x80000


def tagged6(f: bytes, ident: int) -> bytes:
    """An IPv6 frame with flow label TAG6 | ident (the tag IPv4 frames carry in their identification)."""
    raw = bytearray(f)
    label = TAG6 | ident
    raw[15] = (raw[15] & 0xF0) | label >> 16
    raw[16:18] = (label & 0xFFFF).to_bytes(2, "big")
    return bytes(raw)


def tag_of(f: bytes) -> tuple[int, int] | None:
    """(IP version, identifier) of a frame's tag; None for a frame that carries none."""
    if len(f) >= 20 and f[12:14] == b"\x08\x00":
        return 4, int.from_bytes(f[18:20], "big")
    if len(f) >= 18 and f[12:14] == b"\x86\xdd":
        label = int.from_bytes(f[15:18], "big") & 0xFFFFF
        if label & TAG6:
            return 6, label & 0xFFFF
    return None


def _is_ipv6(f: bytes) -> bool:
    return f[12:14] == b"\x86\xdd"


def _ip_parts(f: bytes) -> tuple[bytearray, bytearray]:
    """(IP header, the rest) of a well-formed frame we built: the IPv4 header with its options, or
    the IPv6 header with the extension headers the parser follows."""
    if _is_ipv6(f):
        next_header, at = f[14 + 6], 14 + 40
        while next_header in IPV6_EXT_FOLLOWED and len(f) >= at + 8:
            next_header, at = f[at], at + (f[at + 1] + 1) * 8
        return bytearray(f[14:at]), bytearray(f[at:])
    ihl = (f[14] & 0x0F) * 4
    return bytearray(f[14 : 14 + ihl]), bytearray(f[14 + ihl :])


def _reassemble(
    f: bytes, ip: bytearray, rest: bytes, fix_len: bool = True, fix_ip: bool = True, fix_tcp: bool = False
) -> bytes:
    """The frame with IP header ``ip`` and ``rest``: its length field (IPv4's total length, IPv6's
    payload length), the IPv4 header checksum and the TCP checksum made right as asked."""
    if _is_ipv6(f):
        if fix_len:
            ip[4:6] = (len(ip) - 40 + len(rest)).to_bytes(2, "big")
        if fix_tcp and len(rest) >= 20:
            r = bytearray(rest)
            r[16:18] = b"\0\0"
            pseudo = bytes(ip[8:40]) + struct.pack("!IxxxB", len(r), IP_PROTO_TCP)
            r[16:18] = checksum(pseudo + bytes(r)).to_bytes(2, "big")
            rest = bytes(r)
        return f[:14] + bytes(ip) + rest
    if fix_len:
        ip[2:4] = (len(ip) + len(rest)).to_bytes(2, "big")
    if fix_tcp and len(rest) >= 20 and ip[9] == 6:
        r = bytearray(rest)
        r[16:18] = b"\0\0"
        pseudo = bytes(ip[12:20]) + struct.pack("!BBH", 0, 6, len(r))
        r[16:18] = checksum(pseudo + bytes(r)).to_bytes(2, "big")
        rest = bytes(r)
    if fix_ip:
        ip[10:12] = b"\0\0"
        ip[10:12] = checksum(bytes(ip)).to_bytes(2, "big")
    return f[:14] + bytes(ip) + rest


def _ext_header(kind: int, rng: random.Random, hdr_ext_len: int | None = None) -> bytearray:
    """One IPv6 extension header of type ``kind`` (its Next Header filled in by ``_with_ext_chain``),
    random contents. A Fragment header is 8 bytes; another one longer than IPV6_EXT_LEN_MAX only its
    first 8 (the switch reads no further: it skips it)."""
    if hdr_ext_len is None:
        hdr_ext_len = rng.choice((0, 0, 1, 2, 3, rng.randrange(IPV6_EXT_LEN_MAX + 1)))
    size = 8 if kind == IPV6_EXT_FRAGMENT or hdr_ext_len > IPV6_EXT_LEN_MAX else (hdr_ext_len + 1) * 8
    header = bytearray(rng.randrange(256) for _ in range(size))
    header[1] = hdr_ext_len
    return header


def _with_ext_chain(
    f: bytes, kinds: list[int], rng: random.Random, lengths: list[int] | None = None
) -> bytes:
    """An IPv6 frame we built (no extension headers) with extension headers of ``kinds`` between
    its fixed header and its TCP segment, its payload length right (the TCP checksum needs no
    change: the upper-layer length and addresses are the same)."""
    ip, rest = bytearray(f[14:54]), f[54:]
    chain = [_ext_header(k, rng, lengths[i] if lengths else None) for i, k in enumerate(kinds)]
    nexts = [*kinds[1:], ip[6]]
    ip[6] = kinds[0]
    for header, next_header in zip(chain, nexts, strict=True):
        header[0] = next_header
    return _reassemble(f, ip + b"".join(chain), rest)


def _tcp_with_options(f: bytes, options: bytes, doff: int | None = None, keep_csum: bool = False) -> bytes:
    ip, rest = _ip_parts(f)
    old_doff = (rest[12] >> 4) * 4
    tcp = bytearray(rest[:20]) + options[:40]  # a data offset holds at most 40 bytes of options
    payload = rest[old_doff:]
    tcp[12] = ((doff if doff is not None else (len(tcp) + 3) // 4) << 4) | (tcp[12] & 0x0F)
    if doff is None:
        tcp += b"\0" * ((-len(tcp)) % 4)
    return _reassemble(f, ip, bytes(tcp) + bytes(payload), fix_tcp=not keep_csum)


def mutate(kind: str, f: bytes, rng: random.Random) -> bytes:
    """``f`` (a valid data segment or pure ACK) mutated the ``kind`` way; its IPv4 id is kept."""
    ip, rest = _ip_parts(f)
    if kind == "ipv4_ihl":
        ip[0] = 0x40 | rng.randrange(16)
        return _reassemble(f, ip, bytes(rest), fix_len=False)
    if kind == "ipv4_options":
        opts = bytes(rng.randrange(256) for _ in range(rng.choice((4, 8, 12, 40))))
        ip = ip[:20] + bytearray(opts)
        ip[0] = 0x40 | (len(ip) // 4)
        return _reassemble(f, ip, bytes(rest))
    if kind == "ipv4_total_length":
        ip[2:4] = rng.choice(
            (0, 1, 19, 20, 39, 40, 41, len(ip) + len(rest) - 1, len(ip) + len(rest) + 1, 65535)
        ).to_bytes(2, "big")
        return _reassemble(f, ip, bytes(rest), fix_len=False)
    if kind == "ipv4_fragment":
        ip[6:8] = rng.choice(
            (0x2000, 0x2000 | rng.randrange(1, 8192), rng.randrange(1, 8192), 0x4000)
        ).to_bytes(2, "big")
        return _reassemble(f, ip, bytes(rest))
    if kind == "ipv4_checksum":
        ip[10:12] = (int.from_bytes(ip[10:12], "big") ^ (1 << rng.randrange(16))).to_bytes(2, "big")
        return f[:14] + bytes(ip) + bytes(rest)
    if kind == "ipv4_ttl":
        ip[8] = rng.choice((0, 1, 2, 255))
        return _reassemble(f, ip, bytes(rest))
    if kind == "ipv4_version":
        ip[0] = (rng.choice((0, 5, 6, 15)) << 4) | (ip[0] & 0x0F)
        return _reassemble(f, ip, bytes(rest))
    if kind == "ipv4_protocol":
        ip[9] = rng.choice((0, 1, 17, 41, 255))
        return _reassemble(f, ip, bytes(rest))
    if kind == "ethertype":
        # Not 802.1Q (0x8100, 0x88a8): Linux takes a VLAN tag off a received frame into metadata
        # that packet sockets do not show, so the tag would vanish on the wire, not in the switch.
        other_ip = b"\x08\x00" if _is_ipv6(f) else b"\x86\xdd"
        return f[:12] + rng.choice((other_ip, b"\x08\x06", b"\x00\x00", b"\xff\xff", b"\x08\x01")) + f[14:]
    if kind.startswith("ipv6_"):
        return mutate_ipv6(kind, f, rng)
    if kind == "tcp_data_offset":
        r = bytearray(rest)
        r[12] = (rng.randrange(16) << 4) | (r[12] & 0x0F)
        return _reassemble(f, ip, bytes(r), fix_tcp=True)
    if kind == "tcp_flags":
        r = bytearray(rest)
        r[13] = rng.randrange(256)
        return _reassemble(f, ip, bytes(r), fix_tcp=True)
    if kind == "tcp_option_kind":
        k = rng.randrange(256)
        length = rng.choice((2, 3, 4, 6, 8, 10, 18))
        body = (
            bytes([k, length]) + bytes(rng.randrange(256) for _ in range(length - 2)) if k > 1 else bytes([k])
        )
        return _tcp_with_options(f, body + ts_option(5, 6))
    if kind == "tcp_option_length":
        k = rng.choice((2, 3, 4, 5, 8, 30))
        return _tcp_with_options(
            f, b"\x01\x01" + bytes([k, rng.choice((0, 1, 2, 3, 9, 11, 40, 255))]) + bytes(10)
        )
    if kind == "tcp_options_truncated":
        opts = ts_option(1, 2) + sack_option([(1, 2), (3, 4)])
        cut = rng.randrange(1, len(opts))
        return _tcp_with_options(f, opts[:cut], doff=5 + (cut + 3) // 4)
    if kind == "tcp_options_many":
        return _tcp_with_options(f, b"\x01" * rng.randrange(8, 40))
    if kind == "sack_blocks":
        base = int.from_bytes(rest[8:12], "big")
        blocks = [
            (base + rng.randrange(-(2**31), 2**31), base + rng.randrange(-(2**31), 2**31))
            for _ in range(rng.randrange(1, 5))
        ]
        if rng.random() < 0.3:
            blocks = [(2**32 - 100, 200)]  # wraps
        return _tcp_with_options(f, ts_option(9, 9) + sack_option(blocks))
    if kind == "timestamps_back":
        return _tcp_with_options(f, ts_option(rng.randrange(0, 100), rng.randrange(0, 100)))
    if kind == "tcp_checksum":
        r = bytearray(rest)
        r[16] ^= 0x40
        return _reassemble(f, ip, bytes(r))
    if kind == "truncate":
        cut = rng.randrange(14, len(f))
        return f[:cut]
    if kind == "extend":
        return f + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if kind == "scapy_fuzz":
        return scapy_fuzz(f, rng)
    raise ValueError(kind)


# What ipv6_ext_tcp mutates behind the extension headers.
TCP_MUTATIONS = (
    "tcp_data_offset",
    "tcp_flags",
    "tcp_option_kind",
    "tcp_option_length",
    "tcp_options_truncated",
    "tcp_options_many",
    "sack_blocks",
    "timestamps_back",
    "tcp_checksum",
)


def mutate_ipv6(kind: str, f: bytes, rng: random.Random) -> bytes:
    """``f`` (a valid IPv6 data segment or pure ACK, no extension headers) mutated the ``kind`` way;
    its flow label (the tag) is kept."""
    ip, rest = bytearray(f[14:54]), bytearray(f[54:])
    followed = sorted(IPV6_EXT_FOLLOWED)
    if kind == "ipv6_version":
        ip[0] = (rng.choice((0, 4, 5, 7, 15)) << 4) | (ip[0] & 0x0F)
        return f[:14] + bytes(ip) + bytes(rest)
    if kind == "ipv6_traffic_class":  # ECN bits too
        tc = rng.randrange(256)
        ip[0], ip[1] = 0x60 | tc >> 4, (tc & 0x0F) << 4 | (ip[1] & 0x0F)
        return f[:14] + bytes(ip) + bytes(rest)
    if kind == "ipv6_payload_length":
        # Lies: short, long, inside the TCP header, 0, the largest, and the TCP header alone (a
        # data segment then says it is a pure ACK: its payload is an Ethernet trailer).
        real, header = len(rest), (rest[12] >> 4) * 4
        ip[4:6] = rng.choice(
            (0, 1, 19, 20, 31, header, header, real - 1, real + 1, real + 8, 65535, rng.randrange(65536))
        ).to_bytes(2, "big")
        return f[:14] + bytes(ip) + bytes(rest)
    if kind == "ipv6_hop_limit":
        ip[7] = rng.choice((0, 1, 2, 255))
        return f[:14] + bytes(ip) + bytes(rest)
    if kind == "ipv6_next_header":  # the TCP header read as what the Next Header says
        ip[6] = rng.choice((*followed, *sorted(IPV6_EXT_NOT_FOLLOWED), 17, 58, 59, 255, rng.randrange(256)))
        return f[:14] + bytes(ip) + bytes(rest)
    if kind == "ipv6_ext_chain":  # followed ones: up to the parser's most, or more
        n = rng.randrange(1, IPV6_EXT_HEADERS_MAX + 3)
        lengths = [rng.choice((0, 1, 2, 3, 7)) for _ in range(n)]
        if rng.random() < 0.15:  # one longer than the parser follows
            lengths[rng.randrange(n)] = rng.randrange(IPV6_EXT_LEN_MAX + 1, 256)
        elif rng.random() < 0.15:  # one as long as it follows
            lengths[rng.randrange(n)] = IPV6_EXT_LEN_MAX
        return _with_ext_chain(f, [rng.choice(followed) for _ in range(n)], rng, lengths)
    if kind == "ipv6_ext_not_followed":  # behind 0..max followed ones
        kinds = [rng.choice(followed) for _ in range(rng.randrange(IPV6_EXT_HEADERS_MAX + 1))]
        return _with_ext_chain(f, [*kinds, rng.choice(sorted(IPV6_EXT_NOT_FOLLOWED))], rng)
    if kind == "ipv6_ext_truncated":  # the frame, or its payload length, ends inside the chain
        n = rng.randrange(1, IPV6_EXT_HEADERS_MAX + 1)
        g = _with_ext_chain(f, [rng.choice(followed) for _ in range(n)], rng)
        chain_bytes = len(g) - len(f)
        if rng.random() < 0.5:
            return g[: 14 + 40 + rng.randrange(chain_bytes)]
        raw = bytearray(g)
        raw[18:20] = rng.randrange(chain_bytes).to_bytes(2, "big")
        return bytes(raw)
    if kind == "ipv6_ext_tcp":  # a TCP mutation behind followed extension headers
        n = rng.randrange(1, IPV6_EXT_HEADERS_MAX + 1)
        g = _with_ext_chain(f, [rng.choice(followed) for _ in range(n)], rng, [rng.choice((0, 1, 3))] * n)
        return mutate(rng.choice(TCP_MUTATIONS), g, rng)
    raise ValueError(kind)


def scapy_fuzz(f: bytes, rng: random.Random) -> bytes:
    """scapy's fuzz(): random values in every field it does not compute, addresses kept routable."""
    from scapy.layers.inet import IP, TCP
    from scapy.packet import fuzz
    from scapy.volatile import RandNum

    RandNum.state = random.Random(rng.random())  # type: ignore[attr-defined]
    random.seed(rng.random())  # scapy draws from the module's generator
    if _is_ipv6(f):
        from scapy.layers.inet6 import IPv6

        label = int.from_bytes(f[15:18], "big") & 0xFFFFF
        src6, dst6 = (socket.inet_ntop(socket.AF_INET6, f[a : a + 16]) for a in (22, 38))
        try:
            raw6 = bytes(IPv6(src=src6, dst=dst6, fl=label) / fuzz(TCP()))
        except Exception:  # as below
            return f
        return f[:14] + raw6
    src = socket.inet_ntoa(f[26:30])
    dst = socket.inet_ntoa(f[30:34])
    ident = int.from_bytes(f[18:20], "big")
    pkt = IP(src=src, dst=dst, id=ident) / fuzz(TCP())
    try:
        raw = bytes(pkt)
    except Exception:  # scapy cannot always build what it drew: the packet unmutated
        return f
    raw = bytearray(raw)
    raw[4:6] = ident.to_bytes(2, "big")
    return f[:14] + bytes(raw)


# Mutations of any TCP segment, over either IP version.
COMMON_MUTATIONS = (
    "ethertype",
    *TCP_MUTATIONS,
    "truncate",
    "extend",
    "scapy_fuzz",
)
MUTATIONS_BY_VERSION = {
    4: (
        "ipv4_ihl",
        "ipv4_options",
        "ipv4_total_length",
        "ipv4_fragment",
        "ipv4_checksum",
        "ipv4_ttl",
        "ipv4_version",
        "ipv4_protocol",
        *COMMON_MUTATIONS,
    ),
    6: (
        "ipv6_version",
        "ipv6_traffic_class",
        "ipv6_payload_length",
        "ipv6_hop_limit",
        "ipv6_next_header",
        "ipv6_ext_chain",
        "ipv6_ext_not_followed",
        "ipv6_ext_truncated",
        "ipv6_ext_tcp",
        *COMMON_MUTATIONS,
    ),
}
MUTATIONS = tuple(dict.fromkeys(k for kinds in MUTATIONS_BY_VERSION.values() for k in kinds))
IP_VERSIONS = tuple(MUTATIONS_BY_VERSION)


# ---- the run ----


@dataclass
class Sent:
    ident: int
    kind: str  # mutation kind, "valid", or "witness"
    frame: bytes
    model: Model
    port: int
    out_port: int
    expected: bytes


@dataclass
class Report:
    config: str
    ip_version: int = 4  # of the flows, and of the mutations
    packets: int = 0
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    violations: list[str] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def violate(self, text: str) -> None:
        if len(self.violations) < 200:
            self.violations.append(text)
        else:
            self.counters["violations_not_listed"] = self.counters.get("violations_not_listed", 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "ip_version": self.ip_version,
            "packets": self.packets,
            "outcomes": {k: dict(v) for k, v in sorted(self.outcomes.items())},
            "violations": self.violations,
            "counters": self.counters,
            "seconds": round(self.seconds, 1),
        }


NUDGE = b"\x02" + bytes(4) + b"\x99" + mac(9, True) + b"\x88\xb6" + bytes(46)  # no L2 entry: dropped


def heartbeat() -> bytes:
    return b"\xff" * 6 + mac(CPU, True) + ETHERTYPE_AGENT_HEARTBEAT.to_bytes(2, "big") + bytes(46)


class Fuzzer:
    def __init__(
        self,
        config: str,
        seed: int,
        client: Any,
        wire: Wire,
        alive: Callable[[], bool],
        diagnose: Callable[[], str] = lambda: "",
        ip_version: int = 4,
    ) -> None:
        self.config, self.client, self.wire, self.alive = config, client, wire, alive
        self.diagnose = diagnose
        self.program = PROGRAMS.get(config, "ack_switch")
        self.policy = config if self.program == "ack_switch" else "off"
        self.ip_version = ip_version
        self.mutations = MUTATIONS_BY_VERSION[ip_version]
        self.rng = random.Random(f"{seed}-{config}" + ("" if ip_version == 4 else f"-ipv{ip_version}"))
        v = ip_version
        self.flows = [
            Flow(
                i,
                self.rng.randrange(2**32),
                self.rng.randrange(2**32),
                self.rng.randrange(2**31),
                ip_version=v,
            )
            for i in range(8)
        ]
        self.witness = Flow(90, self.rng.randrange(2**32), self.rng.randrange(2**32), 1000, ip_version=v)
        self.report = Report(config, ip_version)
        self.opening = [(f, step) for f in [*self.flows, self.witness] for step in (0, 1, 2)]
        self.dropped = 0
        self.nudges = 0
        self.spoofs = 0  # ACKs the AP made for the sender: spoofed, and window updates
        self.malformed = Counter[str]()
        self.baseline: dict[str, list[CounterValue]] = {}
        self.updates_before = 0

    def next_packet(self, ident: int) -> tuple[str, bytes]:
        if self.opening:  # every flow starts with its handshake, as a proxy needs to see
            flow, step = self.opening.pop(0)
            return "handshake", flow.handshake(ident, step)
        r = self.rng.random()
        if r < 0.06:
            return "witness_data", self.witness.data(ident)[0]
        if r < 0.10:
            return "witness_ack", self.witness.pure_ack(ident, self.rng)
        flow = self.rng.choice(self.flows)
        base = (
            flow.data(ident)[0]
            if self.rng.random() < 0.4 or flow.sent == flow.acked
            else flow.pure_ack(ident, self.rng, sack=self.rng.random() < 0.1)
        )
        if r < 0.30:
            return "valid", base
        kind = self.rng.choice(self.mutations)
        return kind, mutate(kind, base, self.rng)

    def run(self, packets: int) -> Report:
        self._baseline()
        started = time.monotonic()
        burst_no = 0
        while self.report.packets < packets:
            burst_no += 1
            n = min(BURST, packets - self.report.packets)
            sent: list[Sent] = []
            if self.config == "ap_proxy":
                self.wire.send(CPU, heartbeat())
            for i in range(n):
                ident = i + 1
                kind, f = self.next_packet(ident)
                m = model(f, self.policy)
                out_port, expected = forwarded(f, m)
                sent.append(Sent(ident, kind, f, m, f[10], out_port, expected))
                self.wire.send(f[10], f)
            for port in (UPLINK, DOWNLINK):
                self.wire.send(port, marker(port, burst_no))
            outputs = self._collect(burst_no)
            if outputs is None:
                state = "switch dead" if not self.alive() else "switch alive, not forwarding"
                self.report.violate(f"burst {burst_no}: the markers did not come out within 10 s ({state})")
                self.report.counters["stall_threads"] = self.diagnose()
                self.report.counters["stall_burst"] = [[s.port, s.kind, s.frame.hex()] for s in sent]
                break
            self._check(sent, outputs)
            self.report.packets += n
        self.report.seconds = time.monotonic() - started
        self._check_counters()
        return self.report

    def _collect(self, burst_no: int) -> list[tuple[int, bytes]] | None:
        got: list[tuple[int, bytes]] = []
        seen = set()
        start = time.monotonic()
        deadline, nudge_at = start + 10, start + 0.3
        while time.monotonic() < deadline:
            if time.monotonic() > nudge_at:
                # bmv2 takes one packet per select() wake-up (BMI, bmi_port.c) from libpcap, which
                # may hold more of a burst in its buffer: those wait for the next packet on the
                # port. A frame the switch drops (no L2 entry) wakes it.
                for port in {UPLINK, DOWNLINK} - seen:
                    self.wire.send(port, NUDGE)
                    self.nudges += 1
                nudge_at = time.monotonic() + 0.3
            for port, data in self.wire.take():
                if MARK in data and data.endswith(burst_no.to_bytes(4, "big")):
                    seen.add(port)
                elif MARK in data:
                    continue  # a late marker of an earlier burst
                else:
                    got.append((port, data))
            if seen == {UPLINK, DOWNLINK}:
                time.sleep(0.01)  # the CPU port's copies travel another egress queue
                got += [(p, d) for p, d in self.wire.take() if MARK not in d]
                return got
            time.sleep(0.002)
        return None

    def _check(self, sent: list[Sent], outputs: list[tuple[int, bytes]]) -> None:
        by_tag: dict[tuple[int, int], list[tuple[int, bytes]]] = defaultdict(list)
        l2_outputs: list[tuple[int, bytes]] = []
        for port, data in outputs:
            tag = tag_of(data)
            if tag is not None:
                by_tag[tag].append((port, data))
            else:
                l2_outputs.append((port, data))
        for s in sent:
            if s.model.malformed:
                self.malformed[s.model.malformed] += 1
            tag = tag_of(s.frame)
            if tag is not None:
                outs = by_tag.pop(tag, [])
            else:
                outs = [o for o in l2_outputs if o[1] == s.expected]
                for o in outs:
                    l2_outputs.remove(o)
            fate = self._fate(s, outs)
            self.report.outcomes[s.kind][fate] += 1
            if fate in ("dropped", "thinned", "dropped (violation)"):
                self.dropped += 1
        for (version, ident), outs in by_tag.items():
            for port, data in outs:
                self.report.violate(
                    f"an output no input explains (IPv{version} tag {ident}, port {port}): {data[:94].hex()}"
                )
        for port, data in l2_outputs:
            self.report.violate(f"a non-IPv4 output no input explains (port {port}): {data[:32].hex()}")

    def _fate(self, s: Sent, outs: list[tuple[int, bytes]]) -> str:
        m = s.model
        exact = [(p, d) for p, d in outs if p == s.out_port and d == s.expected]
        others = [(p, d) for p, d in outs if not (p == s.out_port and d == s.expected)]
        what = f"{s.kind} id {s.ident} ({s.frame[14 : 54 + 40 * (self.ip_version == 6)].hex()})"
        ap = self.config == "ap_proxy"
        copies = [(p, d) for p, d in others if ap and p == CPU and d == s.expected]
        others = [o for o in others if o not in copies]
        spoofs = [(p, d) for p, d in others if ap and s.port == UPLINK and p == UPLINK]
        others = [o for o in others if o not in spoofs]
        for _, d in spoofs:
            sm = model(d, "off")
            if not (sm.ip_ok and sm.tcp_ok and sm.pure_ack):
                self.report.violate(
                    f"a spoofed ACK with a bad checksum or not a pure ACK, for {what}: {d[14:54].hex()}"
                )
            if m.malformed or not m.tcp or m.may_drop:
                self.report.violate(f"an ACK spoofed for a malformed or broken segment: {what}")
        updates = [
            (p, d)
            for p, d in others
            if ap
            and s.port == DOWNLINK
            and p == UPLINK
            and m.pure_ack
            and not m.malformed
            and model(d, "off").pure_ack
        ]
        others = [o for o in others if o not in updates]
        for _, d in updates:  # a consumed station ACK turned into a window update for the sender
            um = model(d, "off")
            if not (um.ip_ok and um.tcp_ok):
                self.report.violate(f"a window update with a bad checksum, from {what}: {d[14:54].hex()}")
        if updates and copies and not exact:
            self.spoofs += len(updates)
            return "to agent+window update"
        if others:
            port, d = others[0]
            om = model(d, "off")
            if (m.ip_ok and not om.ip_ok) or (m.tcp_ok and not om.tcp_ok):
                self.report.violate(
                    f"checksum right on input, wrong on output: {what} -> port {port} {d[14:54].hex()}"
                )
            if (
                port == s.out_port
                and not exact
                and m.thinnable
                and self.policy in ("coalesce", "acc")
                and om.pure_ack
            ):
                return "rewritten"
            self.report.violate(f"modified or misrouted: {what} -> port {port}: {d[14:54].hex()}")
            return "modified"
        if exact and m.must_drop:
            self.report.violate(f"forwarded, and a router must discard it ({m.may_drop}): {what}")
            return "forwarded (violation)"
        if exact:
            if len(exact) > 1:
                self.report.violate(f"duplicated: {what}")
            self.spoofs += len(spoofs)
            return "forwarded" + ("+agent" if copies else "") + ("+spoof" if spoofs else "")
        if copies and ap and s.port == DOWNLINK and m.pure_ack and not m.malformed:
            return "to agent"  # a station ACK consumed: the sender already had that news
        if m.may_drop:
            return "dropped"
        if m.thinnable:
            return "thinned"
        if s.kind.startswith("witness_data"):
            self.report.violate(f"a valid flow's data segment did not come out: {what}")
        else:
            self.report.violate(
                f"dropped, and may not be ({'malformed ' + m.malformed if m.malformed else 'well formed'}"
                f"{', pure ACK' if m.pure_ack else ''}): {what}"
            )
        return "dropped (violation)"

    def _baseline(self) -> None:
        """What the counters (and the AP's window updates) hold before this run: a switch may have
        run another IP version's pass before it."""
        names = [COUNTER_FORWARDING_DROPS, COUNTER_PARSER_MALFORMED]
        names += {
            "ack_switch": [COUNTER_ACK_THINNING_STATS, COUNTER_ACK_FILTER_STATS],
            "ap_proxy": [COUNTER_AP_STATS],
        }.get(self.program, [])
        self.baseline = {name: self.client.counter_read_all(name) for name in names}
        if self.program == "ap_proxy":
            self.updates_before = sum(self.client.register_read_all(REGISTER_AP_WINDOW_UPDATES))

    def _counter(self, name: str) -> list[CounterValue]:
        """Every cell of a counter, less what it held before the run."""
        cells = self.client.counter_read_all(name)
        before = self.baseline.get(name)
        if before is None:
            return cells
        return [
            CounterValue(c.packets - b.packets, c.bytes - b.bytes) for c, b in zip(cells, before, strict=True)
        ]

    def _check_counters(self) -> None:
        c = self.client
        # Every cell the program has (its JSON says how many); indexed by the P4's enums, reported
        # by their names.
        drops = [cell.packets for cell in self._counter(COUNTER_FORWARDING_DROPS)]
        malformed = self._counter(COUNTER_PARSER_MALFORMED)
        switch_malformed = {name: n for name, n in named_cells(malformed, MalformedReason).items() if n}
        dropped_malformed = {
            r: malformed[r].packets
            for r in (MalformedReason.IPV4_IHL, MalformedReason.IPV4_HEADER, MalformedReason.IPV6_HEADER)
        }
        self.report.counters[COUNTER_FORWARDING_DROPS] = drops
        self.report.counters[COUNTER_PARSER_MALFORMED] = switch_malformed
        self.report.counters["model.malformed"] = dict(self.malformed)
        thinned = filtered = 0
        if self.program == "ack_switch":
            stats = self._counter(COUNTER_ACK_THINNING_STATS)
            filter_stats = self._counter(COUNTER_ACK_FILTER_STATS)
            # Thinned at ingress, folded into a waiting ACK (coalesce), dropped at egress (filter).
            thinned = stats[ThinningStat.ACKS_THINNED].packets + stats[ThinningStat.ACKS_ABSORBED].packets
            filtered = filter_stats[FilterStat.FILTERED].packets
            self.report.counters[COUNTER_ACK_THINNING_STATS] = named_cells(stats, ThinningStat)
            self.report.counters[COUNTER_ACK_FILTER_STATS] = named_cells(filter_stats, FilterStat)
        elif self.program == "ap_proxy":
            ap_cells = self._counter(COUNTER_AP_STATS)
            ap_stats = {
                s: ap_cells[s].packets for s in (ApStat.SPOOFED, ApStat.CONSUMED, ApStat.DUP_TO_AGENT)
            }
            self.report.counters[COUNTER_AP_STATS] = named_cells(ap_cells, ApStat)
            updates = sum(c.register_read_all(REGISTER_AP_WINDOW_UPDATES)) - self.updates_before
            to_agent = sum(
                n for v in self.report.outcomes.values() for k, n in v.items() if k.startswith("to agent")
            )
            if self.spoofs != ap_stats[ApStat.SPOOFED] + updates:
                self.report.violate(
                    f"{self.spoofs} ACKs made for senders came out, the AP counts "
                    f"{ap_stats[ApStat.SPOOFED]} spoofed and {updates} window updates"
                )
            if to_agent != ap_stats[ApStat.CONSUMED] + ap_stats[ApStat.DUP_TO_AGENT]:
                self.report.violate(
                    f"{to_agent} station ACKs went to the agent only, the AP counts "
                    f"{ap_stats[ApStat.CONSUMED]} consumed and {ap_stats[ApStat.DUP_TO_AGENT]} duplicates"
                )
        self.report.counters["nudges"] = self.nudges
        switch_dropped = sum(drops) - self.nudges + sum(dropped_malformed.values()) + thinned + filtered
        observed = self.dropped
        self.report.counters["dropped_observed"] = observed
        self.report.counters["dropped_by_switch_counters"] = switch_dropped
        if self.config == "ap_proxy":
            consumed = sum(v.get("to agent", 0) for v in self.report.outcomes.values())
            self.report.counters["consumed_observed"] = consumed
        if switch_dropped != observed:
            self.report.violate(
                f"counters do not add up: {observed} inputs dropped, the switch counts {switch_dropped} "
                f"(forwarding.drops {sum(drops)}, IHL {dropped_malformed[MalformedReason.IPV4_IHL]}, "
                f"IPv4 header {dropped_malformed[MalformedReason.IPV4_HEADER]}, "
                f"IPv6 header {dropped_malformed[MalformedReason.IPV6_HEADER]}, "
                f"thinned {thinned}, filtered {filtered})"
            )
        if switch_malformed != dict(self.malformed):
            self.report.violate(
                f"parser.malformed {switch_malformed} differs from the model's {dict(self.malformed)}"
            )


# ---- the switch, in a namespace of our own ----


def thread_stacks(pid: int) -> str:
    """Where every thread of a stalled switch waits (gdb, when it is installed)."""
    try:
        out = subprocess.run(
            ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 12"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no stacks: {exc}"
    stacks = "\n".join(line for line in out.splitlines() if line.startswith(("Thread", "#")))
    links = subprocess.run(["ip", "-s", "-s", "link"], capture_output=True, text=True).stdout
    return stacks + "\n---- links ----\n" + links


def inside(args: argparse.Namespace) -> int:
    """The run itself, inside the namespace ``main`` made."""
    ifaces = {UPLINK: "fzs1", DOWNLINK: "fzs2", CPU: "fzs3"}
    for port, name in ifaces.items():
        # As the test bed's (every frame handed on as it is), but every frame received in the
        # order sent, whatever its flow: a burst's marker must reach the switch behind the burst.
        add_veth(name, f"fzt{port}", in_order=True)
    wire = Wire({p: f"fzt{p}" for p in ifaces})
    reports = []
    try:
        for config in args.configs:
            program = PROGRAMS.get(config, "ack_switch")
            spec = SwitchSpec(
                program_json=str(compiled_program(program)),
                ports=ifaces,
                thrift_port=THRIFT_PORT,
                cpu_port=CPU if config == "ap_proxy" else None,
                log_file=os.environ.get("ACKWISE_FUZZ_BMV2_LOG"),  # bmv2's event log, to debug a finding
            )
            switch = start_switch(spec)
            try:
                client = switch.client()
                configure(client, config)
                time.sleep(0.2)
                # One switch per configuration, a pass per IP version on it (each pass checks the
                # counters' growth over it).
                for ip_version in args.ip_versions:
                    wire.take()
                    report = Fuzzer(
                        config,
                        args.seed,
                        client,
                        wire,
                        lambda s=switch: bool(s.alive),  # type: ignore[misc]
                        lambda s=switch: thread_stacks(s.pid),  # type: ignore[misc]
                        ip_version,
                    ).run(args.packets)
                    reports.append(report.to_dict())
                    print(summary_line(report.to_dict()), file=sys.stderr, flush=True)
                    for line in counter_lines(report.to_dict()):
                        print(f"  {line}", file=sys.stderr, flush=True)
                client.close()
            finally:
                switch.stop()
    finally:
        wire.close()
    Path(args.json).write_text(
        json.dumps(
            {
                "seed": args.seed,
                "packets_per_config": args.packets,
                "versions": tool_versions(),
                "reports": reports,
            },
            indent=2,
        )
    )
    return 0


def label(r: dict[str, Any]) -> str:
    """A report's configuration and IP version: ``every_d``, ``every_d IPv6``."""
    return r["config"] + (" IPv6" if r.get("ip_version", 4) == 6 else "")


def summary_line(r: dict[str, Any]) -> str:
    fates = Counter[str]()
    for v in r["outcomes"].values():
        fates.update(v)
    return (
        f"{label(r)}: {r['packets']} packets in {r['seconds']} s, "
        + ", ".join(f"{k} {v}" for k, v in sorted(fates.items()))
        + f"; {len(r['violations'])} violations"
    )


# The switch's counters with a name per cell, printed after each configuration's summary line.
NAMED_COUNTERS = (COUNTER_ACK_THINNING_STATS, COUNTER_ACK_FILTER_STATS, COUNTER_AP_STATS)


def counter_lines(r: dict[str, Any]) -> list[str]:
    """One line per named counter the report holds: every cell, by name."""
    return [
        f"{name}: " + ", ".join(f"{cell} {n}" for cell, n in r["counters"][name].items())
        for name in NAMED_COUNTERS
        if name in r["counters"]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=100_000, help="per configuration (default 100000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--configs", default=",".join(CONFIGS), help=f"comma-separated subset of {', '.join(CONFIGS)}"
    )
    parser.add_argument(
        "--ip-versions",
        default="4,6",
        help="the IP versions of the flows and mutations, each a pass of --packets per configuration "
        "(default 4,6)",
    )
    parser.add_argument("--json", help="write the full report here (default: build/fuzz.json)")
    parser.add_argument("--write-docs", action="store_true", help="put the figures into docs/robustness.md")
    parser.add_argument(
        "--merge",
        metavar="JSON,...",
        help="run nothing: join these reports (shards run with --configs or --ip-versions, the same "
        "--seed and --packets) into --json, and --write-docs from them",
    )
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.configs = [c for c in args.configs.split(",") if c]
    unknown = set(args.configs) - set(CONFIGS)
    if unknown:
        parser.error(
            f"--configs: unknown {', '.join(sorted(unknown))}; give a subset of {', '.join(CONFIGS)}"
        )
    try:
        args.ip_versions = [int(v) for v in args.ip_versions.split(",") if v]
    except ValueError:
        args.ip_versions = [0]
    if not args.ip_versions or set(args.ip_versions) - set(IP_VERSIONS):
        parser.error(f"--ip-versions {args.ip_versions}: give 4, 6 or 4,6")
    if args.packets < 1:
        parser.error("--packets: at least 1")
    args.json = args.json or str(REPO / "build" / "fuzz.json")
    if args.merge:
        try:
            doc = merge_reports([json.loads(Path(p).read_text()) for p in args.merge.split(",") if p])
        except (OSError, ValueError) as exc:
            parser.error(f"--merge: {exc}")
        Path(args.json).write_text(json.dumps(doc, indent=2))
        return finish(doc, args)
    if args.inside:
        return inside(args)
    rc = rerun_inside_netns(
        "fuzz",
        "ackwise.experiments.stress.fuzz",
        [
            "--packets",
            str(args.packets),
            "--seed",
            str(args.seed),
            "--configs",
            ",".join(args.configs),
            "--ip-versions",
            ",".join(map(str, args.ip_versions)),
            "--json",
            args.json,
        ],
    )
    if rc != 0:
        return rc
    return finish(json.loads(Path(args.json).read_text()), args)


def merge_reports(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """Shards of one run (the same seed and packets per configuration) as one report; ValueError
    naming what differs, or a configuration and IP version given twice."""
    if not docs:
        raise ValueError("no report given")
    for key in ("seed", "packets_per_config"):
        values = {d[key] for d in docs}
        if len(values) > 1:
            raise ValueError(f"the reports differ in {key} ({sorted(values)}): run every shard with the same")
    reports = [r for d in docs for r in d["reports"]]
    labels = [label(r) for r in reports]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} in more than one report: give each shard once")
    # Shards run at different commits say so: every one's ackwise version, in the shards' order.
    versions = dict(docs[0].get("versions", {}))
    made_by = list(dict.fromkeys(str(d.get("versions", {}).get("ackwise", "?")) for d in docs))
    versions["ackwise"] = ", ".join(made_by)
    return {**docs[0], "versions": versions, "reports": reports}


def finish(doc: dict[str, Any], args: argparse.Namespace) -> int:
    if args.write_docs:
        write_docs(doc)
    bad = sum(len(r["violations"]) for r in doc["reports"])
    print(f"fuzz: {sum(r['packets'] for r in doc['reports'])} packets, {bad} violations; report {args.json}")
    return 1 if bad else 0


def write_docs(doc: dict[str, Any]) -> None:
    path = REPO / "docs" / "robustness.md"
    versions = doc.get("versions", {})
    text = path.read_text()
    rows = [
        "| configuration | IP | packets | forwarded | dropped (allowed) | thinned | rewritten | to agent "
        "| violations | seconds |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    kinds: Counter[tuple[int, str]] = Counter()
    per_kind: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    for r in doc["reports"]:
        fates: Counter[str] = Counter()
        version = r.get("ip_version", 4)
        for kind, v in r["outcomes"].items():
            fates.update(v)
            per_kind[version, kind].update(v)
            kinds[version, kind] += sum(v.values())
        fwd = sum(v for k, v in fates.items() if k.startswith("forwarded"))
        rows.append(
            f"| {r['config']} | IPv{version} | {r['packets']} | {fwd} | {fates['dropped']} | "
            f"{fates['thinned']} | {fates['rewritten']} | {fates['to agent']} | {len(r['violations'])} | "
            f"{r['seconds']} |"
        )
    fate_names = ["forwarded", "dropped", "thinned", "rewritten", "to agent", "other"]
    rows += [
        "",
        "| kind | IP | sent | " + " | ".join(fate_names) + " |",
        "| --- | --- | ---: |" + " ---: |" * len(fate_names),
    ]
    for version, kind in sorted(per_kind):
        v = per_kind[version, kind]
        fwd = sum(n for k, n in v.items() if k.startswith("forwarded"))
        other = sum(v.values()) - fwd - sum(v[k] for k in fate_names[1:5])
        rows.append(
            f"| {kind} | IPv{version} | {kinds[version, kind]} | {fwd} | "
            + " | ".join(str(v[k]) for k in fate_names[1:5])
            + f" | {other} |"
        )
    block = (
        f"{DOCS_START}\nSeed {doc['seed']}, {doc['packets_per_config']} packets per configuration and "
        "IP version "
        f"({time.strftime('%Y-%m-%d')}, `make fuzz`; simple_switch {versions.get('simple_switch', '?')}, "
        f"{versions.get('bmv2_build', '?')}; ackwise {versions.get('ackwise', '?')}).\n\n"
        + "\n".join(rows)
        + f"\n{DOCS_END}"
    )
    start, end = text.index(DOCS_START), text.index(DOCS_END) + len(DOCS_END)
    path.write_text(text[:start] + block + text[end:])


if __name__ == "__main__":
    sys.exit(main())
