"""One receiving flow as the agent sees it: the data coming in, the kernel's ACKs going out.

Computes the safety contract's facts (ackwise.twins.safety, the same definition as the switch's) for each
pure ACK, asks the flow's policy about the others, and holds at most one ACK: a newer ACK
supersedes a held one (which is dropped, its due time inherited), so an ACK is never sent after a
newer one and never later than its due time. A policy that does not thin (``thins`` false: the
piggyback hold) has the held ACK released first instead, so that only a segment the host sends
with data (or a FIN) carrying an ACK at least as new removes one. Packets are opaque handles
with accept() and drop().

At the receiver every ACK acknowledges all data received so far, so the contract's end-of-burst
rule (acks_all_data) cannot be the switch's; it is met by the hold timer instead: no held ACK
outlives its due time unless a newer ACK carrying its news has been released. The loss-repair rule
(recovery) is met by the policy's bound on holds while a hole is repaired
(AckPolicy.hold_while_repairing): the receiver sees the holes the switch can only infer from
retransmissions, and a duplicate ACK that follows a partial ACK carries its number.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ackwise.hosts.policies import AckPolicy, DataArrival, Hold
from ackwise.hosts.send_backlog import SendState
from ackwise.twins.packets import ACK, CWR, ECE, FIN, PSH, RST, SYN, URG, TcpSegment
from ackwise.twins.safety import AckFacts, KeepReason, keep_reason
from ackwise.twins.serial import seq_geq, seq_gt, seq_leq, seq_lt


class PacketHandle(Protocol):
    def accept(self) -> None: ...

    def drop(self) -> None: ...


@dataclass
class Held:
    pkt: PacketHandle
    seg: TcpSegment
    due: float
    since: float  # when it was held


@dataclass
class FlowStats:
    data_segments: int = 0
    acks_seen: int = 0
    released_kept: dict[str, int] = field(default_factory=dict)  # by safety reason
    released_by_policy: int = 0
    released_on_timer: int = 0
    superseded: int = 0  # held ACKs dropped for a newer ACK that left
    piggybacked: int = 0  # held ACKs dropped because data the host sent carried their ACK
    released_early: int = 0  # held ACKs sent before their time for a newer one (non-thinning policies)
    refused_by_policy: int = 0  # pure ACKs the policy would not hold (SACK, ECE for piggyback)
    held: int = 0  # pure ACKs held at all
    max_hold_s: float = 0.0  # the longest any ACK was held before it left or was dropped
    other_segments: int = 0


class ReceiverFlow:
    def __init__(
        self,
        policy: AckPolicy,
        idle_s: float = 1.0,
        send_state: Callable[[], SendState | None] | None = None,
    ) -> None:
        """``send_state`` reads the host's own send state on this connection (the agent's
        hosts/send_backlog.py); a policy that decides on it needs it."""
        if policy.reads_send_state() and send_state is None:
            raise ValueError(f"{policy.name} decides on the connection's send state: give a reader")
        self.policy = policy
        self.send_state = send_state if policy.reads_send_state() else None
        self.idle_s = idle_s
        self.stats = FlowStats()
        self.held: Held | None = None
        self.rcv_nxt: int | None = None
        self.last_activity: float | None = None
        # the previous ACK, for the contract's facts
        self.ack_last: int | None = None
        self.window_last = 0
        self.ece_cwr_last = 0
        self.ws_shift = 0
        self.sack_first: tuple[int, int] | None = None
        self.sack_high: int | None = None
        self.ts_val_max: int | None = None
        self.ts_ecr_max: int | None = None
        self.dup_acks_in_a_row = 0
        # RTT at the receiver: SYN-ACK -> handshake ACK, released TSval -> echoed TSecr
        self.synack_t: float | None = None
        self.released_ts: OrderedDict[int, float] = OrderedDict()

    # ---- incoming ----

    def on_incoming(self, seg: TcpSegment, t: float) -> None:
        self.last_activity = t
        if self.synack_t is not None and seg.flags & SYN == 0 and seg.flags & ACK:
            self.policy.rtt.sample(t - self.synack_t)
            self.synack_t = None
        if seg.ts_ecr is not None and seg.ts_ecr in self.released_ts:
            self.policy.rtt.sample(t - self.released_ts[seg.ts_ecr])
            while self.released_ts and next(iter(self.released_ts)) != seg.ts_ecr:
                self.released_ts.popitem(last=False)
            self.released_ts.popitem(last=False)
        if seg.payload_len == 0:
            return
        self.stats.data_segments += 1
        end = (seg.seq + seg.payload_len) % 2**32
        # In order: the segment brings the next expected byte (a retransmission filling a hole
        # does; a segment beyond a hole does not).
        in_order = self.rcv_nxt is None or (seq_leq(seg.seq, self.rcv_nxt) and seq_gt(end, self.rcv_nxt))
        beyond_gap = self.rcv_nxt is not None and seq_gt(seg.seq, self.rcv_nxt)
        if in_order:
            self.rcv_nxt = end
        self.policy.on_data(
            DataArrival(
                t,
                seg.seq,
                seg.payload_len,
                ce=seg.ecn == 3,
                in_order=in_order,
                beyond_gap=beyond_gap,
                ts_ecr=seg.ts_ecr,
                ts_val=seg.ts_val,
                # the sender has reduced its window in answer to our ECE (RFC 3168)
                cwr=bool(seg.flags & CWR),
            )
        )

    # ---- outgoing ----

    def on_outgoing(self, seg: TcpSegment, pkt: PacketHandle, t: float) -> None:
        if seg.flags & ACK and self.rcv_nxt is not None and seq_gt(seg.ack, self.rcv_nxt):
            # The kernel's cumulative ACK is its next expected byte: once a retransmission fills a
            # hole, it jumps over the data queued beyond it, which the agent's own view cannot do.
            self.rcv_nxt = seg.ack
        if seg.flags & SYN:
            self.synack_t = t
            if seg.ws_shift is not None:
                self.ws_shift = seg.ws_shift
        if not seg.is_pure_ack:  # data, SYN, FIN, RST: never held
            self.stats.other_segments += 1
            self._supersede(seg, t)
            pkt.accept()
            self._remember(seg)
            return
        self.stats.acks_seen += 1
        reason = keep_reason(self.facts(seg, t))
        if reason is not KeepReason.NONE:
            self.stats.released_kept[reason.name.lower()] = (
                self.stats.released_kept.get(reason.name.lower(), 0) + 1
            )
            self._release_now(seg, pkt, t)
        elif not self.policy.may_hold(bool(seg.sack), bool(seg.flags & ECE)):
            self.stats.refused_by_policy += 1
            self._release_now(seg, pkt, t)
        else:
            if self.send_state is not None:
                self.policy.on_send_state(self.send_state())
            # While a hole is repaired, a hold ends within two inter-segment times (policies.py)
            decision = self.policy.hold_while_repairing(t, self.policy.decide(t, seg.ack))
            if isinstance(decision, Hold):
                due = decision.until
                if self.held is not None:
                    if self.policy.thins:
                        due = min(due, self.held.due)
                        self._drop_held(t)
                    else:
                        self._release_held_early(t)
                self.held = Held(pkt, seg, due, t)
                self.stats.held += 1
            else:
                self.stats.released_by_policy += 1
                self._release_now(seg, pkt, t)
        self._remember(seg)

    def facts(self, seg: TcpSegment, t: float) -> AckFacts:
        valid = self.ack_last is not None
        ece_cwr = seg.flags & (ECE | CWR)
        mss = self.policy.mss
        sack_first = seg.sack[0] if seg.sack else None
        dsack = bool(seg.sack) and (
            seq_lt(seg.sack[0][0], seg.ack)
            or (
                len(seg.sack) >= 2
                and seq_geq(seg.sack[0][0], seg.sack[1][0])
                and seq_leq(seg.sack[0][1], seg.sack[1][1])
            )
        )
        return AckFacts(
            flags_keep=seg.flags & (SYN | FIN | RST | URG | PSH) != 0,
            has_payload=seg.payload_len > 0,
            first_ack=not valid,
            window_update=valid and seg.ack == self.ack_last and seg.window != self.window_last,
            dup_ack=valid and not seq_gt(seg.ack, self.ack_last),  # type: ignore[arg-type]
            dsack=dsack,
            sack_news=sack_first is not None
            and (
                sack_first != self.sack_first
                or self.sack_high is None
                or seq_gt(sack_first[1], self.sack_high)
            ),
            ece_cwr_change=valid and ece_cwr != self.ece_cwr_last,
            window_reopen=valid
            and (self.window_last << self.ws_shift) < mss <= (seg.window << self.ws_shift),
            unknown_option=seg.unknown_option,
            ts_reordered=seg.ts_val is not None
            and self.ts_val_max is not None
            and (
                seq_lt(seg.ts_val, self.ts_val_max)
                or (
                    seg.ts_ecr is not None
                    and self.ts_ecr_max is not None
                    and seq_lt(seg.ts_ecr, self.ts_ecr_max)
                )
            ),
            idle=self.last_activity is not None and t - self.last_activity > self.idle_s and valid,
            recovery=False,  # met by hold_while_repairing at the receiver (module docstring)
            acks_all_data=False,  # met by the hold timer at the receiver (module docstring)
        )

    def _remember(self, seg: TcpSegment) -> None:
        if seg.flags & ACK == 0:
            return
        if self.ack_last is not None and not seq_gt(seg.ack, self.ack_last) and seg.is_pure_ack:
            self.dup_acks_in_a_row += 1
            if self.dup_acks_in_a_row == 3:
                self.policy.on_third_duplicate_ack()
        else:
            self.dup_acks_in_a_row = 0
        if self.ack_last is None or seq_gt(seg.ack, self.ack_last):
            self.ack_last = seg.ack
        self.window_last = seg.window
        self.ece_cwr_last = seg.flags & (ECE | CWR)
        if seg.sack:
            self.sack_first = seg.sack[0]
            if self.sack_high is None or seq_gt(seg.sack[0][1], self.sack_high):
                self.sack_high = seg.sack[0][1]
        else:
            self.sack_first = None
        if seg.ts_val is not None:
            if self.ts_val_max is None or seq_gt(seg.ts_val, self.ts_val_max):
                self.ts_val_max = seg.ts_val
            if seg.ts_ecr is not None and (self.ts_ecr_max is None or seq_gt(seg.ts_ecr, self.ts_ecr_max)):
                self.ts_ecr_max = seg.ts_ecr

    # ---- holding and releasing ----

    def _supersede(self, seg: TcpSegment, t: float) -> None:
        """A segment carrying an ACK at least as new as the held one makes it redundant: data
        the host sends carries it (piggybacking), as does a FIN or RST."""
        if self.held is not None and seg.flags & ACK and seq_geq(seg.ack, self.held.seg.ack):
            self._drop_held(t, piggybacked=seg.payload_len > 0)

    def _drop_held(self, t: float, piggybacked: bool = False) -> None:
        assert self.held is not None
        self.held.pkt.drop()
        self.stats.max_hold_s = max(self.stats.max_hold_s, t - self.held.since)
        self.held = None
        if piggybacked:
            self.stats.piggybacked += 1
        else:
            self.stats.superseded += 1

    def _release_held_early(self, t: float) -> None:
        """Send the held ACK now (a newer one is coming after it, for a policy that does not
        thin): it leaves before the newer one, as the kernel sent them."""
        assert self.held is not None
        held, self.held = self.held, None
        held.pkt.accept()
        self.stats.max_hold_s = max(self.stats.max_hold_s, t - held.since)
        self.stats.released_early += 1
        self._released(held.seg, t)

    def _release_now(self, seg: TcpSegment, pkt: PacketHandle, t: float) -> None:
        if self.held is not None:
            if self.policy.thins:
                self._drop_held(t)  # older than this one: never sent after it
            else:
                self._release_held_early(t)  # the older one first, then this one
        pkt.accept()
        self._released(seg, t)

    def _released(self, seg: TcpSegment, t: float) -> None:
        self.policy.on_release(t, seg.ack, seg.ts_val, bool(seg.sack))
        if seg.ts_val is not None and seg.ts_val not in self.released_ts:
            self.released_ts[seg.ts_val] = t
            while len(self.released_ts) > 64:
                self.released_ts.popitem(last=False)

    def next_due(self) -> float | None:
        return self.held.due if self.held is not None else None

    def on_timer(self, t: float) -> None:
        if self.held is not None and self.held.due <= t:
            held, self.held = self.held, None
            held.pkt.accept()
            self.stats.released_on_timer += 1
            self.stats.max_hold_s = max(self.stats.max_hold_s, t - held.since)
            self._released(held.seg, t)

    def flush(self) -> None:
        """Release whatever is held (the agent is stopping): nothing is lost."""
        if self.held is not None:
            self.held.pkt.accept()
            self.held = None
