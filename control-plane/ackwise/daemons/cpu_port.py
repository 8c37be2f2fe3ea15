"""What the agents on a switch's CPU port share: a raw socket on the agent's end of the CPU port's
veth pair (a large receive buffer: a burst the kernel drops here is lost for good), the heartbeat
the switch listens for, the receive loop, and counters written atomically to a stats file."""

from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import time
from pathlib import Path
from typing import Any

from ackwise.twins.p4names import AP_AGENT_TIMEOUT_US, ETHERTYPE_AGENT_HEARTBEAT, HOLDBACK_AGENT_TIMEOUT_US

SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SOL_PACKET, PACKET_STATISTICS = 263, 6  # linux/if_packet.h
ETH_P_ALL = 0x0003
SOCKET_BUFFER_BYTES = 8 * 1024 * 1024
ETHERNET_HEADER_BYTES = 14
# The switch stops handing an agent anything once it has not heard a heartbeat for its agent
# timeout: five heartbeats in that time, so that one or two lost do not matter. Counters once a second.
HEARTBEAT_INTERVAL_S = min(HOLDBACK_AGENT_TIMEOUT_US, AP_AGENT_TIMEOUT_US) / 1e6 / 5
REPORT_INTERVAL_S = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every CPU-port agent takes."""
    parser.add_argument("--iface", required=True, help="the agent's end of the CPU port's veth pair")
    parser.add_argument("--thrift-port", type=int, default=9090)


class CpuPortAgent:
    """The socket side of an agent. A subclass handles each frame from the switch (``handle``)
    and reports its counters (``report``); ``counters`` must hold ``socket_drops``."""

    def __init__(self, iface: str, stats_path: Path | None, buffer_bytes: int = SOCKET_BUFFER_BYTES) -> None:
        self.iface, self.stats_path = iface, stats_path
        self.counters: dict[str, int] = {"socket_drops": 0}
        self.stop_requested = False
        # The first heartbeat and report at once: `ackwise ap status` right after start-up finds one.
        self.next_beat_s = self.next_report_s = 0.0
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((iface, 0))
        self.sock.setblocking(False)
        # FORCE: past rmem_max, as root; without root the kernel's maximum.
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, buffer_bytes)
        except PermissionError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer_bytes)
        self.mac = Path(f"/sys/class/net/{iface}/address").read_text().strip()
        # Broadcast, from the agent, with the heartbeat's EtherType, padded to Ethernet's minimum.
        self.heartbeat_frame = (
            b"\xff" * 6
            + bytes.fromhex(self.mac.replace(":", ""))
            + struct.pack("!H", ETHERTYPE_AGENT_HEARTBEAT)
        ).ljust(60, b"\0")

    def handle(self, frame: bytes, now: float) -> None:
        raise NotImplementedError

    def report(self) -> dict[str, Any]:
        raise NotImplementedError

    def heartbeat(self) -> None:
        self.sock.send(self.heartbeat_frame)

    def housekeeping(self, now: float) -> float:
        """The heartbeat and the counters, each when it is due; returns when the next heartbeat is."""
        if now >= self.next_beat_s:
            self.heartbeat()
            self.next_beat_s = now + HEARTBEAT_INTERVAL_S
        if now >= self.next_report_s:
            self.write_stats()
            self.next_report_s = now + REPORT_INTERVAL_S
        return self.next_beat_s

    def receive(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for frames, then hand every waiting one to ``handle`` (not the
        agent's own: a packet socket also sees what it sends)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], max(0.0, timeout_s))
        except InterruptedError:
            return
        if not readable:
            return
        while True:
            try:
                frame, addr = self.sock.recvfrom(65536)
            except BlockingIOError:
                return
            if addr[2] == socket.PACKET_OUTGOING:
                continue  # our own heartbeats and packet-outs
            self.handle(frame, time.monotonic())

    def count_socket_drops(self) -> None:
        """Frames the kernel dropped because the agent fell behind (reading resets the count)."""
        stats = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        self.counters["socket_drops"] += struct.unpack("II", stats)[1]

    def write_stats(self) -> None:
        self.count_socket_drops()
        if self.stats_path is None:
            return
        tmp = self.stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.report(), indent=2))
        tmp.replace(self.stats_path)
