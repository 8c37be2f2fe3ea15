"""The AP proxy's repair agent, on the switch's CPU port.

    python -m ackwise.daemons.ap_agent --iface ap-cpua --thrift-port 9090 [--global-cap-bytes N]

It keeps a copy of every data segment the switch acknowledged on a station's behalf until the
station's own ACK covers it, and when the station's duplicate ACKs show a wireless loss it resends
the missing segment through the switch (a packet-out on the CPU port), at most once per RTT per
segment, and the holes between SACK blocks when the station sends them. It sends the switch a
heartbeat every 100 ms; without one for 500 ms the switch stops spoofing (ap.agent_alive_at_us).

Memory is bounded by the switch's per-flow budget and by --global-cap-bytes: past the cap, or on an
internal error with a flow, it tells the switch to leave fast mode for that flow (a hold-off), and
keeps what it already holds. If the agent dies, the switch falls back to plain forwarding for new
data; data it had already acknowledged to the sender and that the air then loses cannot be
repaired by anyone (docs/ap-proxy.md).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import SwitchClient, SwitchError
from ackwise.daemons import cpu_port
from ackwise.daemons.cpu_port import CpuPortAgent
from ackwise.features.ap import agent_stats_path, leave_fast_mode, list_stations
from ackwise.processes import run_daemon
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.packets import ACK, RST, SYN, TcpSegment, parse_frame_tcp
from ackwise.twins.serial import seq_diff, seq_geq, seq_gt, seq_leq

# Without SACK, the classic three duplicates say the segment at the ACK number is lost.
DUP_ACKS_WITHOUT_SACK = 3
DEFAULT_RTT_S = 0.02  # AP <-> station round trip until measured
MIN_REPAIR_INTERVAL_S = 0.01
MAX_REPAIR_INTERVAL_S = 1.0  # a segment resent again and again backs off to this
# A SYN or SYN-ACK of the sender's that the station has not answered is resent after this, then
# after twice as long, up to HANDSHAKE_REPAIRS_MAX times: well before the sender's own 1 s timer.
# The station answers a duplicate SYN or SYN-ACK again, so this also recovers a lost answer.
HANDSHAKE_REPAIR_S = 0.25
HANDSHAKE_REPAIRS_MAX = 3
# RFC 6675's IsLost: a hole with this many SACKed segments above it is lost, not just queued.
SACKED_ABOVE_FOR_LOSS = 3
STATIONS_REFRESH_S = 2.0
FORGET_AFTER_S = 10.0
# A sender may burst a whole budget at wire speed; a copy the kernel drops here is a byte
# acknowledged to the sender that nobody holds.
SOCKET_BUFFER_BYTES = 32 * 1024 * 1024

log = logging.getLogger("ackwise.daemons.ap_agent")


@dataclass
class Segment:
    seq: int
    end: int
    frame: bytes
    stored_at: float
    repaired_at: float | None = None
    repairs: int = 0
    sacked: bool = False  # the station reported it in a SACK block: it has it


@dataclass
class ProxiedFlow:
    key: FlowKey
    segments: OrderedDict[int, Segment] = field(default_factory=OrderedDict)  # by seq, in arrival order
    station_ack: int | None = None
    dup_acks: int = 0
    buffered_bytes: int = 0
    repairs: int = 0
    rtt_s: float = DEFAULT_RTT_S
    left_fast_mode: int = 0
    last_progress: float = 0.0  # when the station's ACK last advanced (or the first copy arrived)
    copied_end: int | None = None  # end of the highest copy seen
    handshake: Segment | None = None  # the sender's SYN or SYN-ACK, until the station answers it

    def store(self, seg: Segment) -> None:
        if seg.seq in self.segments:
            return
        self.segments[seg.seq] = seg
        self.buffered_bytes += seg.end - seg.seq if seg.end >= seg.seq else seg.end + 2**32 - seg.seq

    def acknowledged(self, ack: int, now: float) -> None:
        """The station's ACK covers everything below ack: free it; sample the AP-station RTT
        (smoothed: it includes the queue in front of the air, which a repair waits in too)."""
        for seq in [s for s, seg in self.segments.items() if seq_leq(seg.end, ack)]:
            seg = self.segments.pop(seq)
            self.buffered_bytes -= seq_diff(seg.end, seg.seq)
            if seg.repairs == 0:
                sample = now - seg.stored_at
                self.rtt_s = sample if self.rtt_s == DEFAULT_RTT_S else 0.875 * self.rtt_s + 0.125 * sample

    def note_sack(self, sack: tuple[tuple[int, int], ...]) -> None:
        """Keep a scoreboard: a receiver reports only its most recent blocks, so a segment once
        SACKed stays SACKed (until the cumulative ACK frees it)."""
        for seg in self.segments.values():
            if not seg.sacked and any(
                seq_geq(seg.seq, left) and seq_leq(seg.end, right) for left, right in sack
            ):
                seg.sacked = True

    def to_repair(self, ack: int, now: float, timer: bool = False) -> list[Segment]:
        """Holes the station is missing: not SACKed, with enough SACKed segments above them to
        be lost rather than still queued for the air (on the timer, the first hole regardless);
        none resent within its back-off (one RTT after the first repair, doubling after each)."""
        ordered = sorted(self.segments.values(), key=lambda seg: seq_diff(seg.seq, ack))
        wanted = []
        sacked_above = 0
        for seg in reversed(ordered):
            if seg.sacked:
                sacked_above += 1
            elif seq_geq(seg.seq, ack) and sacked_above >= SACKED_ABOVE_FOR_LOSS:
                wanted.append(seg)
        if timer and ack in self.segments and not self.segments[ack].sacked:
            wanted.append(self.segments[ack])
        fresh = {id(s): s for s in wanted if s.repaired_at is None or now - s.repaired_at >= self.backoff(s)}
        return list(fresh.values())

    def backoff(self, seg: Segment) -> float:
        rtt = max(self.rtt_s, MIN_REPAIR_INTERVAL_S)
        return min(rtt * 2 ** max(0, seg.repairs - 1), MAX_REPAIR_INTERVAL_S)

    def copy(self, seg: TcpSegment, frame: bytes, now: float) -> bool:
        """A copy of a data segment on its way to the station. False when copies before it went
        missing: the switch copies in-order data without gaps, so bytes between the last copy and
        this one, not acknowledged by the station, were copied but never reached the agent."""
        end = (seg.seq + seg.payload_len) % 2**32
        covered = [x for x in (self.copied_end, self.station_ack) if x is not None]
        gap = bool(covered) and all(seq_gt(seg.seq, x) for x in covered)
        if self.copied_end is None or seq_gt(end, self.copied_end):
            self.copied_end = end
        if not self.segments:
            self.last_progress = now
        self.store(Segment(seg.seq, end, frame, now))
        return not gap

    def sender_handshake(self, seg: TcpSegment, frame: bytes, now: float) -> None:
        """A copy of the sender's SYN or SYN-ACK: a new connection on this key. Held until the
        station's ACK of it arrives."""
        self.segments.clear()
        self.buffered_bytes, self.station_ack, self.dup_acks, self.copied_end = 0, None, 0, None
        self.last_progress = now
        self.handshake = Segment(seg.seq, (seg.seq + 1) % 2**32, frame, now)

    def handshake_due(self, now: float) -> Segment | None:
        """The held SYN or SYN-ACK, when it is time to resend it."""
        held = self.handshake
        if held is None or held.repairs >= HANDSHAKE_REPAIRS_MAX:
            return None
        since = now - (held.repaired_at if held.repaired_at is not None else held.stored_at)
        return held if since >= HANDSHAKE_REPAIR_S * 2**held.repairs else None

    def station_packet(self, seg: TcpSegment, now: float) -> list[Segment]:
        """The station's own ACK (consumed at the AP, or on its way to the sender): free what it
        covers, keep the SACK scoreboard, and say which held segments to resend."""
        if not seg.flags & ACK:
            return []  # the station's SYN: no ACK number yet
        if self.handshake is not None and seg.ack == self.handshake.end:
            self.handshake = None
        # A duplicate: the same ACK number again. (Not RFC 5681's: a Linux receiver grows its
        # window while it queues out-of-order data.) A DSACK, a block below the ACK number,
        # reports a segment received twice, not a loss.
        dsack = bool(seg.sack) and seq_gt(seg.ack, seg.sack[0][0])
        duplicate = self.station_ack is not None and seg.ack == self.station_ack and not dsack
        if self.station_ack is None or seq_gt(seg.ack, self.station_ack):
            self.station_ack = seg.ack
            self.dup_acks = 0
            self.last_progress = now
            self.acknowledged(seg.ack, now)
        elif duplicate and seg.is_pure_ack:
            self.dup_acks += 1
        if seg.sack:
            self.note_sack(seg.sack)
        if not duplicate or not seg.is_pure_ack:
            return []
        if seg.sack:
            return self.to_repair(seg.ack, now)
        if self.dup_acks >= DUP_ACKS_WITHOUT_SACK and seg.ack in self.segments:
            return self.to_repair(seg.ack, now, timer=True)
        return []


StationNet = ipaddress.IPv4Network | ipaddress.IPv6Network


def is_station(addr: str, nets: list[StationNet]) -> bool:
    """Whether ``addr`` (either IP version) is in one of the station prefixes served (a prefix
    of the other version never holds it)."""
    ip = ipaddress.ip_address(addr)
    return any(ip in net for net in nets)


class RepairAgent(CpuPortAgent):
    def __init__(
        self, iface: str, thrift_port: int, global_cap_bytes: int, holdoff_ms: int, stats_path: Path
    ) -> None:
        super().__init__(iface, stats_path, SOCKET_BUFFER_BYTES)
        self.thrift_port = thrift_port
        self.global_cap_bytes, self.holdoff_ms = global_cap_bytes, holdoff_ms
        self.flows: dict[FlowKey, ProxiedFlow] = {}
        self.client = SwitchClient("localhost", thrift_port).connect()
        self.station_nets: list[StationNet] = []
        self.refresh_stations()
        self.counters = {
            "data_copies": 0,
            "station_acks": 0,
            "repairs_sent": 0,
            "over_cap": 0,
            "errors": 0,
            "missed_copies": 0,
            "socket_drops": 0,
        }

    # ---- the switch ----

    def leave_fast_mode(self, flow: ProxiedFlow, why: str) -> None:
        try:
            leave_fast_mode(self.client, flow.key, self.holdoff_ms)
            flow.left_fast_mode += 1
            log.warning("flow %s leaves fast mode: %s", flow.key, why)
        except SwitchError as exc:
            log.error("could not take flow %s out of fast mode: %s", flow.key, exc)

    # ---- packets from the CPU port ----

    def handle(self, frame: bytes, now: float) -> None:
        """A frame from the CPU port: TCP over IPv4 or IPv6 (behind the extension headers the
        switch follows); anything else is not the proxy's."""
        seg = parse_frame_tcp(frame, now) if len(frame) >= 14 else None
        if seg is None:
            return
        from_station, to_station = self.is_station(seg.src), self.is_station(seg.dst)
        if from_station == to_station:
            return  # not a proxied flow (the switch copies only sender -> station flows)
        key, _ = FlowKey.of(seg.src, seg.dst, seg.sport, seg.dport)
        if from_station and seg.flags & RST:
            self.flows.pop(key, None)
            return
        flow = self.flows.setdefault(key, ProxiedFlow(key))
        try:
            if to_station:
                if seg.flags & SYN:
                    flow.sender_handshake(seg, frame, now)
                elif seg.payload_len > 0:
                    self.counters["data_copies"] += 1
                    if not flow.copy(seg, frame, now):
                        self.counters["missed_copies"] += 1
                        self.leave_fast_mode(flow, "copies went missing before the agent read them")
                    if sum(f.buffered_bytes for f in self.flows.values()) > self.global_cap_bytes:
                        self.counters["over_cap"] += 1
                        self.leave_fast_mode(flow, "global buffer cap reached")
            else:
                self.counters["station_acks"] += 1
                self.repair(flow, flow.station_packet(seg, now), now)
        except (OSError, ValueError, KeyError) as exc:
            self.counters["errors"] += 1
            self.leave_fast_mode(flow, f"internal error: {exc}")

    def is_station(self, addr: str) -> bool:
        return is_station(addr, self.station_nets)

    def refresh_stations(self) -> None:
        """The station prefixes the switch serves (ap.stations, ap.stations6): they tell a copy
        of the sender's data from the station's own packets."""
        try:
            self.station_nets = [ipaddress.ip_network(e["station"]) for e in list_stations(self.client)]
        except SwitchError as exc:
            log.error("could not read ap.stations: %s", exc)

    def repair(self, flow: ProxiedFlow, segments: list[Segment], now: float, why: str = "loss") -> None:
        for lost in segments:
            self.sock.send(lost.frame)
            lost.repaired_at, lost.repairs = now, lost.repairs + 1
            log.debug(
                "%.3f %s: %s repair %d of seq %d (station ack %s, rtt %.0f ms)",
                now,
                flow.key,
                why,
                lost.repairs,
                lost.seq,
                flow.station_ack,
                flow.rtt_s * 1000,
            )
            flow.repairs += 1
            self.counters["repairs_sent"] += 1

    def repair_stalled(self, now: float) -> None:
        """The AP's retransmission timer: when the station's ACK has not moved for two RTTs with a
        held segment at it, resend that segment. Without it a flow whose sender is out of window
        (the budget) gets no more duplicate ACKs to trigger a repair, and would wait forever."""
        for key, flow in list(self.flows.items()):
            if now - flow.last_progress > FORGET_AFTER_S:
                if flow.segments:
                    log.warning(
                        "flow %s: no progress for %.0f s, forgetting %d buffered bytes",
                        key,
                        FORGET_AFTER_S,
                        flow.buffered_bytes,
                    )
                del self.flows[key]
                continue
            held = flow.handshake_due(now)
            if held is not None:
                self.repair(flow, [held], now, why="handshake")
            if flow.station_ack is None or flow.station_ack not in flow.segments:
                continue
            if now - flow.last_progress >= max(2 * flow.rtt_s, 0.05):
                self.repair(flow, flow.to_repair(flow.station_ack, now, timer=True), now, why="timer")

    def run(self) -> None:
        next_refresh = time.monotonic() + STATIONS_REFRESH_S
        print("ready", flush=True)
        while not self.stop_requested:
            now = time.monotonic()
            next_beat = self.housekeeping(now)
            if now >= next_refresh:
                self.refresh_stations()
                next_refresh = now + STATIONS_REFRESH_S
            self.repair_stalled(now)
            self.receive(min(0.01, next_beat - now))
        self.write_stats()

    def report(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "iface": self.iface,
            "global_cap_bytes": self.global_cap_bytes,
            "counters": self.counters,
            "buffered_bytes": sum(f.buffered_bytes for f in self.flows.values()),
            "flows": {
                str(k): {
                    "buffered_bytes": f.buffered_bytes,
                    "segments": len(f.segments),
                    "station_ack": f.station_ack,
                    "repairs": f.repairs,
                    "rtt_ms": round(f.rtt_s * 1000, 2),
                    "left_fast_mode": f.left_fast_mode,
                }
                for k, f in self.flows.items()
            },
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    cpu_port.add_arguments(parser)
    parser.add_argument("--global-cap-bytes", type=int, default=64 * 1024 * 1024)
    parser.add_argument(
        "--holdoff-ms", type=int, default=2000, help="how long a flow in trouble stays out of fast mode"
    )
    parser.add_argument(
        "--stats",
        type=Path,
        help="write counters here every second and on exit (default: where `ackwise ap` looks, "
        f"{agent_stats_path(9090).parent}/ackwise-ap-agent-THRIFT_PORT.json)",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("ACKWISE_AP_AGENT_LOG", "info"),
        choices=["debug", "info", "warning"],
        help="debug logs every repair (default: $ACKWISE_AP_AGENT_LOG, else info)",
    )
    args = parser.parse_args(argv)
    if args.stats is None:
        args.stats = agent_stats_path(args.thrift_port)
    logging.basicConfig(level=args.log_level.upper(), format="ap_agent: %(message)s")
    return run_daemon(
        "ap_agent",
        lambda: RepairAgent(args.iface, args.thrift_port, args.global_cap_bytes, args.holdoff_ms, args.stats),
        (OSError, SwitchError),
    )


if __name__ == "__main__":
    sys.exit(main())
