"""What the data-plane stress tools (bench, hold-back bench, step costs, fuzz, scale) share: one
switch between two hosts, the ports and addresses they use, frames built with ackwise.twins.packets,
routes, raw sockets on the test ends of the veths, and a process's CPU time.

Ports: 1 the data senders (10.0.1.x, fd00:0:0:1::x), 2 the receivers (10.0.2.x, fd00:0:0:2::x; the
station side for ap_proxy), 3 a CPU port. Switch MACs 00:00:00:00:0N:fe, hosts 00:00:00:00:0N:01
(as ptf-tests)."""

from __future__ import annotations

import os
import select
import socket
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ackwise.features.ap import StationParams, configure_ap
from ackwise.features.thinning import set_default_policy
from ackwise.netdev import run_in_new_netns
from ackwise.twins import packets
from ackwise.twins.p4names import (
    ACTION_FORWARDING_L2_FORWARD,
    ACTION_FORWARDING_ROUTE,
    ETHERTYPE_IPV6,
    IP_PROTO_TCP,
    KEY_DST_ADDR,
    TABLE_FORWARDING_IPV4_LPM,
    TABLE_FORWARDING_IPV6_LPM,
    TABLE_FORWARDING_L2_EXACT,
)
from ackwise.twins.packets import (
    ETHERTYPE_IPV4,
    NOP,
    ethernet,
    fix_tcp_checksum,
    ipv4_header,
    tcp_header,
    timestamps_option,
)
from ackwise.twins.policies import PolicyParams

UPLINK, DOWNLINK, CPU = 1, 2, 3
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4  # linux/if_packet.h: a frame this socket's host sent
TCP_ACK = 0x10


def mac(port: int, host: bool) -> bytes:
    return bytes([0, 0, 0, 0, port, 0x01 if host else 0xFE])


def frame(in_port: int, ip_and_rest: bytes, ethertype: int = ETHERTYPE_IPV4) -> bytes:
    """A frame from the host on ``in_port`` to the switch."""
    return ethernet(mac(in_port, False), mac(in_port, True), ip_and_rest, ethertype)


def ts_option(val: int, ecr: int) -> bytes:
    """Linux's layout: NOP NOP Timestamps."""
    return NOP * 2 + timestamps_option(val, ecr)


def sack_option(blocks: list[tuple[int, int]]) -> bytes:
    """Linux's layout: NOP NOP SACK."""
    return NOP * 2 + packets.sack_option(blocks)


def segment(
    in_port: int, src: int, dst: int, sport: int, dport: int, seq: int, ack: int, payload_bytes: int
) -> bytes:
    """A segment with ACK set and NOP NOP Timestamps (TSval = seq, TSecr = ack), window 1000."""
    tcp = tcp_header(
        src, dst, sport, dport, seq, ack, TCP_ACK, 1000, ts_option(seq, ack), bytes(payload_bytes)
    )
    return frame(in_port, bytes(ipv4_header(src, dst, len(tcp))) + bytes(tcp))


def over_ipv6(frame_v4: bytes) -> bytes:
    """The same frame over IPv6: the IPv4 header (without options) replaced by an IPv6 one from
    fd00:0:0:C::D for 10.0.C.D (traffic class from the TOS byte, hop limit from the TTL), the TCP
    segment the same but for its checksum (over IPv6's pseudo-header)."""
    ip = frame_v4[14:34]
    tcp = frame_v4[34:]

    def address(v4: bytes) -> bytes:
        return bytes.fromhex(f"fd00 0000 0000 00{v4[2]:02x} 0000 0000 0000 00{v4[3]:02x}")

    fixed = struct.pack("!IHBB", 6 << 28 | ip[1] << 20, len(tcp), IP_PROTO_TCP, ip[8])
    out = bytearray(
        frame_v4[:12]
        + ETHERTYPE_IPV6.to_bytes(2, "big")
        + fixed
        + address(ip[12:16])
        + address(ip[16:20])
        + tcp
    )
    fix_tcp_checksum(out)
    return bytes(out)


def install_routes(client: Any, l2_across: bool = False, ipv6: bool = False) -> None:
    """A route to each host's /24 (with ``ipv6``, and its /64) out of its port, rewriting the MACs;
    with ``l2_across``, frames without a route (not IP, or IP to another address) are switched on
    their destination, the switch's MAC, to the other host (the fuzzer's model expects that)."""
    for port in (UPLINK, DOWNLINK):
        routes = [(TABLE_FORWARDING_IPV4_LPM, f"10.0.{port}.0/24")]
        if ipv6:
            routes.append((TABLE_FORWARDING_IPV6_LPM, f"fd00:0:0:{port}::/64"))
        for table, prefix in routes:
            client.table_add(
                table,
                ACTION_FORWARDING_ROUTE,
                {KEY_DST_ADDR: prefix},
                {"port": port, "src_mac": f"00:00:00:00:0{port}:fe", "dst_mac": f"00:00:00:00:0{port}:01"},
            )
    if l2_across:
        for switch_mac, port in (("00:00:00:00:01:fe", DOWNLINK), ("00:00:00:00:02:fe", UPLINK)):
            client.table_add(
                TABLE_FORWARDING_L2_EXACT,
                ACTION_FORWARDING_L2_FORWARD,
                {KEY_DST_ADDR: switch_mac},
                {"port": port},
            )


def cpu_s(pid: int) -> float:
    """CPU time of every thread of a process so far, in seconds, to the nanosecond (schedstat)."""
    return (
        sum(int((task / "schedstat").read_text().split()[0]) for task in Path(f"/proc/{pid}/task").iterdir())
        / 1e9
    )


class Wire:
    """Raw sockets on the test ends of the veths; a thread collects what the switch sends."""

    def __init__(self, ifaces: dict[int, str]) -> None:
        self.socks: dict[int, socket.socket] = {}
        for port, name in ifaces.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((name, 0))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            self.socks[port] = s
        self.received: list[tuple[int, bytes]] = []
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        by_fd = {s.fileno(): p for p, s in self.socks.items()}
        while not self.stop:
            ready, _, _ = select.select(list(self.socks.values()), [], [], 0.05)
            for s in ready:
                data, addr = s.recvfrom(65535)
                if addr[2] == PACKET_OUTGOING:
                    continue
                with self.lock:
                    self.received.append((by_fd[s.fileno()], data))

    def send(self, port: int, data: bytes) -> None:
        self.socks[port].send(data)

    def take(self) -> list[tuple[int, bytes]]:
        with self.lock:
            out, self.received = self.received, []
        return out

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        for s in self.socks.values():
            s.close()


MARK = b"AKFUZZ-MARK"


def marker(port: int, burst: int) -> bytes:
    """A UDP datagram that closes a burst: once it comes out, the switch is done with the burst."""
    src, dst = ("10.0.1.2", "10.0.2.2") if port == UPLINK else ("10.0.2.2", "10.0.1.2")
    udp = struct.pack("!HHHH", 9, 9, 8 + len(MARK) + 4, 0) + MARK + burst.to_bytes(4, "big")
    return frame(port, bytes(ipv4_header(src, dst, len(udp), 0, proto=17)) + udp)


def configure(client: Any, config: str) -> None:
    """Routes for IPv4 and IPv6 (and L2 across) for one stress configuration: an ACK policy of
    ack_switch by name (default parameters), ``ap_proxy`` serving 10.0.2.0/24 and fd00:0:0:2::/64
    behind DOWNLINK (ap.stations and ap.stations6), or ``forward_only`` (routes only)."""
    install_routes(client, l2_across=True, ipv6=True)
    if config == "forward_only":
        return
    if config == "ap_proxy":
        params = StationParams(
            budget_bytes=64 * 1024, fast_after_segments=2, stall_timeout_ms=60_000, holdoff_ms=0
        )
        configure_ap(
            client, [UPLINK], [DOWNLINK], CPU, [("10.0.2.0/24", params), ("fd00:0:0:2::/64", params)]
        )
    else:
        set_default_policy(client, PolicyParams.parse(config, []))


def rerun_inside_netns(tool: str, module: str, options: Sequence[str]) -> int:
    """Run ``python -m module --inside OPTIONS`` in a fresh network namespace (its veths and
    switches then cannot touch the machine's), removed afterwards with whatever is left in it.
    Exit 2 with the fix when not root."""
    if os.geteuid() != 0:
        print(f"{tool}: run as root (it makes a network namespace and veths)", file=sys.stderr)
        return 2
    return run_in_new_netns(f"ak{tool}{os.getpid()}", [sys.executable, "-m", module, "--inside", *options])
