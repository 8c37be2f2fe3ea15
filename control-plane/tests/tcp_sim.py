"""A small closed-loop model of one Linux-like TCP flow, for the window estimators' tests.

The sender counts acknowledged segments as Linux does (slow start: cwnd += segments acked, up to
ssthresh; congestion avoidance: +1 per cwnd segments acked) and echoes the TSval of the newest
ACK it got. Its segments cross a drop-tail bottleneck of ``rate_pps`` and ``buffer_pkts``, then
``delay_s`` to the receiver, whose kernel ACKs every segment (quickack); a ReceiverFlow with the
policy under test releases, holds or drops those ACKs, which take ``delay_s`` back. Loss
recovery is NewReno's in outline (three duplicate ACKs: ssthresh = cwnd * beta, retransmit the
hole, cwnd = ssthresh when it is repaired). No pacing, no timers but the ACK policy's.

It records the sender's cwnd (and ssthresh) every ``sample_s``, as ss does on the test bed, so a
test compares the receiver's estimate with the truth the way the runner does.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any

from ackwise.hosts.policies import AckPolicy
from ackwise.hosts.receiver import ReceiverFlow
from ackwise.twins.packets import ACK, TcpSegment

MSS = 1448
ISN = 1000
SENDER, RECEIVER = "10.0.0.1", "10.0.0.2"


class _Pkt:
    def __init__(self, sim: Sim, seg: TcpSegment) -> None:
        self.sim, self.seg = sim, seg

    def accept(self) -> None:
        self.sim.ack_sent(self.seg)

    def drop(self) -> None:
        self.sim.acks_dropped += 1


class _Handshake:
    def accept(self) -> None:
        pass

    def drop(self) -> None:
        pass


@dataclass
class Sim:
    policy: AckPolicy
    rate_pps: float = 200.0  # the bottleneck, in full-sized segments per second
    buffer_pkts: int = 1000
    delay_s: float = 0.025  # one way, each direction
    initcwnd: int = 10
    ssthresh: float = float("inf")  # set: the sender leaves slow start there (as after HyStart)
    beta: float = 0.5
    total_segments: int = 2000
    sample_s: float = 0.1
    # state
    now: float = 0.0
    cwnd: float = 0.0
    snd_una: int = 0  # in segments
    snd_nxt: int = 0
    ca_count: float = 0.0
    ts_recent: int = 0
    dupacks: int = 0
    recover: int | None = None  # snd_nxt when recovery began
    queue_free_at: float = 0.0
    queue: int = 0
    received: set[int] = field(default_factory=set)
    rcv_nxt: int = 0
    acks_sent: int = 0
    acks_dropped: int = 0
    data_sent: int = 0
    drops: int = 0
    cwnd_samples: list[tuple[float, int, int | None, int | None]] = field(default_factory=list)
    events: list[tuple[float, int, str, Any]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.flow = ReceiverFlow(self.policy)
        self.cwnd = float(self.initcwnd)

    # ---- events ----

    def at(self, t: float, kind: str, payload: Any = None) -> None:
        heapq.heappush(self.events, (t, next(self._order), kind, payload))

    def run(self, until_s: float = 120.0) -> Sim:
        # The connection's first ACK (the handshake's, to the sender's SYN-ACK in the model): the
        # window of the first flight is measured from it. It goes nowhere.
        # It reaches the sender after delay_s, which sends its first flight then.
        self.flow.on_outgoing(self._ack_segment(0), _Handshake(), 0.0)
        self.at(self.delay_s, "start")
        self.at(0.0, "sample")
        while self.events and self.snd_una < self.total_segments:
            t, _, kind, payload = heapq.heappop(self.events)
            if t > until_s:
                raise AssertionError(f"the simulated transfer did not finish in {until_s} s")
            self.now = t
            getattr(self, f"_on_{kind}")(payload)
            due = self.flow.next_due()
            if due is not None:
                self.at(due, "timer")
        return self

    def _on_sample(self, _: Any) -> None:
        ssthresh = None if self.ssthresh == float("inf") else int(self.ssthresh)
        self.cwnd_samples.append((self.now, int(self.cwnd), ssthresh, self.snd_nxt - self.snd_una))
        self.at(self.now + self.sample_s, "sample")

    def _on_start(self, _: Any) -> None:
        self.send()

    def _on_timer(self, _: Any) -> None:
        self.flow.on_timer(self.now)

    # ---- the sender ----

    def send(self) -> None:
        while self.snd_nxt - self.snd_una < int(self.cwnd) and self.snd_nxt < self.total_segments:
            self._transmit(self.snd_nxt)
            self.snd_nxt += 1

    def _transmit(self, k: int) -> None:
        self.data_sent += 1
        start = max(self.now, self.queue_free_at)
        if start - self.now > self.buffer_pkts / self.rate_pps:
            self.drops += 1  # drop-tail: the queue holds buffer_pkts
            return
        self.queue_free_at = start + 1 / self.rate_pps
        self.at(self.queue_free_at + self.delay_s, "data", (k, self.ts_recent, self.now))

    def _on_ack(self, seg: TcpSegment) -> None:
        acked = (seg.ack - ISN) // MSS
        self.ts_recent = max(self.ts_recent, seg.ts_val or 0)
        if acked > self.snd_una:
            newly = acked - self.snd_una
            self.snd_una, self.dupacks = acked, 0
            if self.recover is not None:
                if acked >= self.recover:
                    self.recover, self.cwnd = None, self.ssthresh  # recovery over
                else:
                    self._transmit(self.snd_una)  # NewReno: the next hole at once
            elif self.cwnd < self.ssthresh:
                self.cwnd = min(self.cwnd + newly, max(self.ssthresh, self.cwnd))
            else:
                self.ca_count += newly
                while self.ca_count >= self.cwnd:
                    self.ca_count -= self.cwnd
                    self.cwnd += 1
        elif acked == self.snd_una and self.snd_nxt > self.snd_una:
            self.dupacks += 1
            if self.dupacks == 3 and self.recover is None:
                self.recover = self.snd_nxt
                self.ssthresh = max(2.0, int(self.cwnd * self.beta))
                self.cwnd = self.ssthresh
                self._transmit(self.snd_una)
        self.send()

    # ---- the receiver ----

    def _ack_segment(self, ack_k: int) -> TcpSegment:
        return TcpSegment(
            RECEIVER,
            SENDER,
            5001,
            40000,
            1,
            ISN + ack_k * MSS,
            ACK,
            65535,
            0,
            0,
            ts_val=int(self.now * 1000),
            ts_ecr=0,
        )

    def _on_data(self, payload: tuple[int, int, float]) -> None:
        k, ts_ecr, _ = payload
        seg = TcpSegment(SENDER, RECEIVER, 40000, 5001, ISN + k * MSS, 1, ACK, 65535, MSS, 0, 1, ts_ecr)
        self.flow.on_incoming(seg, self.now)
        self.received.add(k)
        while self.rcv_nxt in self.received:
            self.rcv_nxt += 1
        ack = self._ack_segment(self.rcv_nxt)
        self.flow.on_outgoing(ack, _Pkt(self, ack), self.now)

    def ack_sent(self, seg: TcpSegment) -> None:
        self.acks_sent += 1
        self.at(self.now + self.delay_s, "ack", seg)
