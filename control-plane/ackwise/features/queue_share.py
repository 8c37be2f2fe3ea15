"""The queue share's second queue, in the hold-back agent (p4src/include/ack_share.p4): per flow,
in order, the pure ACKs of a coalescing flow beyond its two in a slow queue, each sent back to the
switch when it said the flow has room. Pure decision logic, unit-tested; the agent's socket loop
is ackwise/holdback_agent.py, the header and kinds of what the switch sends are in
ackwise/holdback.py."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ackwise.features.holdback import FlowId
from ackwise.twins.p4names import COALESCE_SAID_US, AgentKind
from ackwise.twins.packets import ACK, CWR, ECE, TcpSegment
from ackwise.twins.serial import seq_geq, seq_leq, seq_lt

# How long the agent waits for the switch's answer about an ACK it sent back before it sends that
# ACK again (the answer or the ACK was lost: the agent's socket dropped it). bmv2 answers within
# milliseconds when it keeps up.
SHARE_ANSWER_TIMEOUT_S = 0.25

# For this long after the switch took a flow's ACK back, the agent counts on it having said its SACK
# blocks (the switch's own bound): the ACK the agent holds next may drop one of them.
SHARE_SAID_S = COALESCE_SAID_US / 1e6


@dataclass
class ShareQueues:
    """The queue share's second queue: per flow, the ACKs the switch handed over, in order.

    An ACK that says everything the flow's newest held ACK says (``says_all_of``, the twin of the
    switch's fold rule) replaces it: the agent's queue holds what the switch's queue would have
    held, and the newest state of the flow goes back first, not behind every ACK its receiver sent.

    One ACK per flow is out at a time: the oldest goes back to the switch when the switch said the
    flow has room (the wait that came with it), and the switch answers: taken (it goes; the next
    may follow after the wait given) or bounced (too early: wait, then send it again). An answer
    that does not come within ``SHARE_ANSWER_TIMEOUT_S`` sends the ACK again; the switch orders
    nothing by it, so an ACK whose answer alone was lost reaches the sender twice (a duplicate of
    an old ACK, which TCP ignores) rather than never."""

    # Per flow: (the frame, its segment, when the switch handed over the ACK it replaced or was).
    frames: dict[FlowId, deque[tuple[bytes, TcpSegment, float]]] = field(default_factory=dict)
    due: dict[FlowId, float] = field(default_factory=dict)  # when the flow's oldest goes back
    out: dict[FlowId, float] = field(default_factory=dict)  # sent back; the answer is awaited until
    taken: dict[FlowId, tuple[TcpSegment, float]] = field(default_factory=dict)  # the last taken, when
    counters: dict[str, int] = field(
        default_factory=lambda: {
            "share_kept": 0,
            "share_replaced": 0,
            "share_sent": 0,
            "share_taken": 0,
            "share_bounced": 0,
            "share_resent": 0,
            "share_stray_answers": 0,
            "share_held_us_total": 0,  # over the ACKs taken back: since the switch handed them over
            "share_held_us_max": 0,
        }
    )

    def keep(self, flow: FlowId, frame: bytes, seg: TcpSegment, wait_s: float, now: float) -> None:
        """An ACK the switch handed over; ``wait_s``: until the flow has room (for its first)."""
        self.counters["share_kept"] += 1
        queue = self.frames.get(flow)
        if queue is None:
            self.frames[flow] = deque([(frame, seg, now)])
            self.due[flow] = now + wait_s
            return
        newest_is_out = len(queue) == 1 and flow in self.out
        if not newest_is_out and says_all_of(seg, queue[-1][1], self._ahead(flow, queue, now)):
            self.counters["share_replaced"] += 1
            queue[-1] = (frame, seg, queue[-1][2])
        else:
            queue.append((frame, seg, now))

    def _ahead(
        self, flow: FlowId, queue: deque[tuple[bytes, TcpSegment, float]], now: float
    ) -> TcpSegment | None:
        """The ACK that reaches the switch before the flow's newest held one."""
        if len(queue) >= 2:
            return queue[-2][1]
        taken = self.taken.get(flow)
        return taken[0] if taken is not None and now - taken[1] < SHARE_SAID_S else None

    def answer(self, flow: FlowId, kind: int, wait_s: float, now: float) -> None:
        """The switch's answer about the flow's ACK that is out."""
        if flow not in self.out:
            self.counters["share_stray_answers"] += 1  # its ACK was sent again meanwhile, or we restarted
            return
        del self.out[flow]
        queue = self.frames[flow]
        if kind == AgentKind.SHARE_TAKEN:
            self.counters["share_taken"] += 1
            _, seg, kept_at = queue.popleft()
            self.taken[flow] = (seg, now)
            held_us = int((now - kept_at) * 1e6)
            self.counters["share_held_us_total"] += held_us
            self.counters["share_held_us_max"] = max(self.counters["share_held_us_max"], held_us)
        else:
            self.counters["share_bounced"] += 1
        if queue:
            self.due[flow] = now + wait_s
        else:
            del self.frames[flow]

    def ready(self, now: float) -> list[bytes]:
        """The frames to send back now: each due flow's oldest (again, if its answer is overdue)."""
        sends = []
        for flow, deadline in list(self.out.items()):
            if deadline <= now:
                self.counters["share_resent"] += 1
                sends.append(self.frames[flow][0][0])
                self.out[flow] = now + SHARE_ANSWER_TIMEOUT_S
        for flow, due in list(self.due.items()):
            if due <= now:
                del self.due[flow]
                sends.append(self.frames[flow][0][0])
                self.out[flow] = now + SHARE_ANSWER_TIMEOUT_S
        self.counters["share_sent"] += len(sends)
        for flow, (_, at) in list(self.taken.items()):
            if now - at >= SHARE_SAID_S:
                del self.taken[flow]
        return sends

    def drain(self) -> list[bytes]:
        """Everything held, in each flow's order (the agent is stopping)."""
        frames = [frame for queue in self.frames.values() for frame, _, _ in queue]
        self.frames.clear()
        self.due.clear()
        self.out.clear()
        return frames

    def next_due(self) -> float | None:
        return min([*self.due.values(), *self.out.values()], default=None)

    def holding(self) -> int:
        return sum(len(queue) for queue in self.frames.values())


def is_dsack(seg: TcpSegment) -> bool:
    """The first SACK block reports a duplicate (RFC 2883): below the ACK number, or inside the second."""
    if not seg.sack:
        return False
    left, right = seg.sack[0]
    if seq_lt(left, seg.ack):
        return True
    return len(seg.sack) > 1 and seq_leq(seg.sack[1][0], left) and seq_leq(right, seg.sack[1][1])


def _inside(block: tuple[int, int], blocks: tuple[tuple[int, int], ...]) -> bool:
    return any(seq_leq(left, block[0]) and seq_leq(block[1], right) for left, right in blocks)


def says_all_of(newer: TcpSegment, held: TcpSegment, ahead: TcpSegment | None) -> bool:
    """Whether ``newer`` may replace ``held``, the ACK the agent holds just before it: it says
    everything ``held`` says, with ``ahead`` (the ACK that reaches the switch before ``held``)
    saying any block ``newer`` no longer reports. The agent's twin of the switch's fold rule
    (AckCoalesce in p4src/include/ack_coalesce.p4), conservative where the agent knows less: it
    does not know the window scale, so the window may only grow, and news the contract always keeps
    (flags, ECE/CWR, ECN, a duplicate ACK without SACK, DSACK, unknown options, Timestamps that
    appear or go) is never replaced."""
    if newer.flags != held.flags or newer.flags & ~(ACK | ECE | CWR) or newer.ecn != held.ecn:
        return False
    if newer.unknown_option or held.unknown_option or is_dsack(newer) or is_dsack(held):
        return False
    if (newer.ts_val is None) != (held.ts_val is None):
        return False
    if newer.ts_val is not None and held.ts_val is not None:
        if not (seq_geq(newer.ts_val, held.ts_val) and seq_geq(newer.ts_ecr or 0, held.ts_ecr or 0)):
            return False
    if not seq_geq(newer.ack, held.ack) or newer.window < held.window:
        return False
    if newer.ack == held.ack and newer.window == held.window and not newer.sack:
        return False  # a duplicate ACK without SACK: a sender without SACK counts them
    said_ahead = ahead.sack if ahead is not None and seq_leq(ahead.ack, newer.ack) else ()
    return all(
        seq_leq(block[1], newer.ack) or _inside(block, newer.sack) or _inside(block, said_ahead)
        for block in held.sack
    )
