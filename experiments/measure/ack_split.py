"""Where a flow's pure ACKs come from, read off a capture: pure functions, no I/O.

Issue 39 asks why 4W sent 10 pure ACKs per send window at 4 Mbit/s where it aims at 4. A
capture of both directions (the dumbbell's e1-eth2: data after the bottleneck, ACKs after the
receiver) tells each pure ACK's kind and the phase of the transfer it belongs to:

- kinds: ``duplicate`` (its cumulative ACK does not advance: the receiver has data beyond a
  hole, and the safety contract releases every duplicate at once), ``recovery`` (advances, but a
  hole remains below data already received: NewReno's partial ACKs, and the one that closes the
  last hole), ``advancing`` (everything else: the ACKs an ACK policy chooses), of which
  ``late`` are those sent ``late_s`` or more after the one before them (a hold timer's release,
  or the end of an idle time);
- phases: ``slow start`` until the first hole (the initial slow start; a run with timeouts also
  restarts slow start, which this split does not separate), ``recovery`` while a hole is open at
  the receiver (from the first segment that arrives beyond it until an ACK covers all the data
  that had arrived beyond it), ``ca`` otherwise. Data segments are split the same way, so that
  each phase's ACKs per segment can be read.

The split is by what the receiver saw, not by the sender's state: it needs no alignment of
clocks with ``ss``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ackwise.twins.packets import TcpSegment
from ackwise.twins.serial import seq_diff, seq_geq, seq_gt

PHASES = ("slow start", "ca", "recovery")
KINDS = ("advancing", "late", "recovery", "duplicate")
FRAME_OVERHEAD_BYTES = 66  # Ethernet 14, IPv4 20, TCP 20 + 12 of timestamps
LATE_S = 0.15  # a hold timer's release comes 200 ms after the first ACK it held


@dataclass
class AckSplit:
    """Pure ACKs by phase and kind, data segments by phase, and the segments each advancing ACK
    (outside recovery) covered."""

    acks: dict[str, dict[str, int]] = field(
        default_factory=lambda: {p: dict.fromkeys(KINDS, 0) for p in PHASES}
    )
    data: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    covered_segments: list[float] = field(default_factory=list)
    holes: int = 0  # times a hole opened at the receiver (loss events, as the receiver sees them)
    data_wire_bytes: int = 0  # the data segments' frames (payload + 66 bytes of headers)
    first_data_t: float | None = None
    last_data_t: float | None = None

    def busy_fraction(self, rate_bps: float) -> float | None:
        """How much of the time from the first data segment to the last the bottleneck of
        ``rate_bps`` spent sending the flow's data (retransmissions included)."""
        if self.first_data_t is None or self.last_data_t is None or self.last_data_t <= self.first_data_t:
            return None
        return self.data_wire_bytes * 8 / rate_bps / (self.last_data_t - self.first_data_t)

    @property
    def pure_acks(self) -> int:
        return sum(sum(k.values()) for k in self.acks.values())

    def to_dict(self) -> dict[str, object]:
        return {
            "acks": self.acks,
            "data": self.data,
            "holes": self.holes,
            "pure_acks": self.pure_acks,
            "data_wire_bytes": self.data_wire_bytes,
            "data_span_s": None
            if self.first_data_t is None or self.last_data_t is None
            else round(self.last_data_t - self.first_data_t, 4),
        }


def split_acks(
    segments: Iterable[TcpSegment], sender: str, receiver: str, mss: int, late_s: float = LATE_S
) -> AckSplit:
    """``segments`` in capture order; ``sender``, ``receiver``: the flow's addresses (one flow)."""
    out = AckSplit()
    rcv_nxt: int | None = None  # the receiver's next expected byte, from the data it got
    beyond: dict[int, int] = {}  # data received beyond a hole: start -> end
    recover_hi: int | None = None  # the end of the data received beyond the hole being repaired
    seen_loss = False
    last_ack: int | None = None
    last_ack_t: float | None = None
    for seg in segments:
        if seg.src == sender and seg.dst == receiver and seg.payload_len > 0:
            end = (seg.seq + seg.payload_len) % 2**32
            out.data_wire_bytes += seg.payload_len + FRAME_OVERHEAD_BYTES
            if out.first_data_t is None:
                out.first_data_t = seg.time
            out.last_data_t = seg.time
            if rcv_nxt is None:
                rcv_nxt = seg.seq
            if seq_gt(seg.seq, rcv_nxt):
                if recover_hi is None:
                    out.holes += 1
                seen_loss = True
                beyond[seg.seq] = end
                if recover_hi is None or seq_gt(end, recover_hi):
                    recover_hi = end
            elif seq_gt(end, rcv_nxt):
                rcv_nxt = end
                while rcv_nxt in beyond:  # the hole is filled: the data beyond it follows
                    rcv_nxt = beyond.pop(rcv_nxt)
                for start in [s for s in beyond if not seq_gt(beyond[s], rcv_nxt)]:
                    del beyond[start]
            phase = "recovery" if recover_hi is not None else "ca" if seen_loss else "slow start"
            out.data[phase] += 1
        elif seg.src == receiver and seg.dst == sender and seg.is_pure_ack:
            advancing = last_ack is None or seq_gt(seg.ack, last_ack)
            if recover_hi is not None:
                phase = "recovery"
                kind = "recovery" if advancing else "duplicate"
                if seq_geq(seg.ack, recover_hi):
                    recover_hi = None  # this ACK covers everything that came beyond the hole
            else:
                phase = "ca" if seen_loss else "slow start"
                if not advancing:
                    kind = "duplicate"
                elif last_ack_t is not None and seg.time - last_ack_t >= late_s:
                    kind = "late"
                else:
                    kind = "advancing"
                if advancing and last_ack is not None:
                    out.covered_segments.append(seq_diff(seg.ack, last_ack) / mss)
            out.acks[phase][kind] += 1
            if advancing:
                last_ack = seg.ack
            last_ack_t = seg.time
    return out


def acks_per_window_by_phase(split: AckSplit, mean_cwnd: float) -> dict[str, float | None]:
    """Pure ACKs per window of data (the acceptance metric's form: ACKs / (segments / mean cwnd))
    for the whole transfer, for congestion avoidance alone (its ACKs and segments), and for the
    whole transfer without duplicates and recovery's ACKs (the ACKs a policy chooses)."""
    data = sum(split.data.values())

    def per_window(acks: int, segments: int) -> float | None:
        return acks / (segments / mean_cwnd) if segments and mean_cwnd else None

    chosen = sum(split.acks[p]["advancing"] + split.acks[p]["late"] for p in ("slow start", "ca"))
    ca = split.acks["ca"]
    return {
        "all": per_window(split.pure_acks, data),
        "ca_only": per_window(ca["advancing"] + ca["late"], split.data["ca"]),
        "without_recovery": per_window(chosen, data),
    }
