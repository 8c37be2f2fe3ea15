"""The hold-back agent, on an ack_switch's CPU port: the in-network delayed-ACK timer, and the
queue share's second queue.

    python -m ackwise.daemons.holdback_agent --iface s2-cpua --thrift-port 9091 [--stats FILE]

Hold-back: the switch sends it a copy of each ACK it holds back, preceded by the policy's hold time
(p4src/include/ack_holdback.p4). The agent keeps the newest copy per flow and sends it back to the
switch (a packet-out on the CPU port) once the hold time since the first copy has passed; the
switch forwards it unless an ACK of the flow acknowledging at least as much has passed meanwhile.

The queue share (p4src/include/ack_share.p4): the switch hands it the ACKs of a coalescing flow
that already has two in a slow queue, in order; the agent sends each flow's oldest back when the
switch said the flow has room, and the switch answers whether it took it.

It sends the switch a heartbeat every 100 ms; without one for 500 ms the switch hands it nothing.
On startup it sets the switch up (CPU port, mirroring session); on SIGTERM or SIGINT it sends back
every held-back ACK at once, stops its heartbeat, and once the switch has stopped waiting for it,
sends back the queue share's ACKs in order (nothing the receiver said is lost when it stops);
then it writes its counters and exits. Killed outright, what it held is lost: the sender's
retransmission timer recovers.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import SwitchClient, SwitchError
from ackwise.daemons import cpu_port
from ackwise.daemons.cpu_port import CpuPortAgent
from ackwise.features import holdback, queue_share
from ackwise.processes import run_daemon
from ackwise.twins.p4names import AgentKind
from ackwise.twins.packets import parse_frame_tcp

ETHERNET_HEADER = cpu_port.ETHERNET_HEADER_BYTES


class HoldbackAgent(CpuPortAgent):
    def __init__(
        self, iface: str, cpu_port_number: int | None, thrift_port: int, stats_path: Path | None
    ) -> None:
        if cpu_port_number is not None:
            with SwitchClient("localhost", thrift_port).connect() as client:
                holdback.setup(client, cpu_port_number)
        super().__init__(iface, stats_path)
        self.table = holdback.HoldTable()
        self.share = queue_share.ShareQueues()
        self.counters = {"frames_in": 0, "not_held_acks": 0, "socket_drops": 0, "handling_us_total": 0}

    def handle(self, frame: bytes, now: float) -> None:
        started = time.perf_counter_ns()
        self.counters["frames_in"] += 1
        if len(frame) < holdback.HEADER.size + ETHERNET_HEADER:
            self.counters["not_held_acks"] += 1
            return
        hold_ms, kind, arg = holdback.HEADER.unpack_from(frame)
        ack_frame = frame[holdback.HEADER.size :]
        seg = parse_frame_tcp(ack_frame, now) if len(ack_frame) >= ETHERNET_HEADER else None
        # Hold-back holds only ACKs the policy would thin; the queue share hands over every
        # segment without payload the switch counts as a pure ACK, FIN and RST included (one that
        # was dropped here never reached the sender: its FIN was lost until the share's stall bound).
        held_back = kind == AgentKind.HOLD
        if seg is None or not (seg.is_pure_ack if held_back else seg.payload_len == 0):
            self.counters["not_held_acks"] += 1
            return
        flow = (seg.src, seg.dst, seg.sport, seg.dport)
        if held_back:
            self.table.offer(flow, seg.ack, arg, ack_frame, hold_ms / 1000, now)
        elif kind == AgentKind.SHARE_KEEP:
            self.share.keep(flow, ack_frame, seg, arg / 1e6, now)
        else:
            self.share.answer(flow, kind, arg / 1e6, now)
        self.counters["handling_us_total"] += (time.perf_counter_ns() - started) // 1000

    def release(self, now: float) -> None:
        for frame in self.table.due(now):
            self.sock.send(frame)
        for frame in self.share.ready(now):
            self.sock.send(frame)

    def run(self) -> None:
        print("ready", flush=True)
        while not self.stop_requested:
            now = time.monotonic()
            next_beat = self.housekeeping(now)
            self.release(now)
            wake = min(next_beat, self.table.next_due() or next_beat, self.share.next_due() or next_beat)
            self.receive(wake - time.monotonic())
        for frame in self.table.due(float("inf")):  # stopping: nothing held is kept back
            self.sock.send(frame)
        if self.share.holding():
            # The switch sends back what the agent returns while it hears the heartbeat and the
            # flow has no room; once it stops waiting for the agent it takes everything as it comes.
            time.sleep(holdback.AGENT_TIMEOUT_MS / 1000 + 0.1)
            for frame in self.share.drain():
                self.sock.send(frame)
        self.write_stats()

    def report(self) -> dict[str, Any]:
        handled = self.counters["frames_in"] - self.counters["not_held_acks"]
        per_ack = round(self.counters["handling_us_total"] / handled, 2) if handled else None
        return {
            "pid": os.getpid(),
            "iface": self.iface,
            "counters": self.counters | self.table.counters | self.share.counters,
            "holding": len(self.table.held),
            "share_holding": self.share.holding(),
            "handling_us_per_ack": per_ack,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    cpu_port.add_arguments(parser)
    parser.add_argument(
        "--cpu-port", type=int, help="set the switch up: its CPU port number (default: already set up)"
    )
    parser.add_argument("--stats", type=Path, help="write counters here every second and on exit")
    args = parser.parse_args(argv)
    if args.stats is None:
        args.stats = holdback.agent_stats_path(args.thrift_port)
    return run_daemon(
        "holdback_agent",
        lambda: HoldbackAgent(args.iface, args.cpu_port, args.thrift_port, args.stats),
        (OSError, SwitchError),
    )


if __name__ == "__main__":
    sys.exit(main())
