"""End-host ACK policies: pure decision logic, events in, decisions out, no I/O.

The agent (hosts/agent.py) sees the receiver's data segments arrive and its kernel's pure ACKs
leave. For each ACK the safety contract does not already keep, it asks the flow's policy whether
to release it now or hold it until a due time. A held ACK is superseded by the next one (which
inherits the earlier due time), so an ACK is never delayed past its due time and never sent after
a newer one. Times are seconds (float), sequence numbers 32-bit serial numbers, lengths bytes.

Policies and their sources:
    every_d      Landstrom et al., A4L4 / A8L8: one ACK per d segments, maximum delay
    dynamic_d    Altman and Jimenez: d = 1, 2, 3, 4 past 2, 5, 9 segments
    acc          RFC 3449 ACC at the receiver: d doubles on CE, -1 per quiet RTT, >= 2 ACKs per window
    smartacking  smartacking (section 3): delay = LastSegmentTime - alpha * RTT; Figure 1's EstimateCwnd
    tack         TACK: f = min(bw / (L * MSS), beta / RTTmin)
    4w           Landstrom et al., 4W: four ACKs per (estimated) send window
    piggyback    Shang and Wills: hold a pure ACK until reverse data carries it, up to hold_ms
                 (release_if_blocked: not while the host's own data waits for its window;
                 release_if_backlogged: not while a full segment of it is unsent;
                 release_in_slow_start: not while the sender is in slow start, by the estimate;
                 release_if_ack_path_queued: not while the path back to the sender queues more
                 than rtt_min, by the timestamps the sender echoes;
                 hold_ms=0: hold nothing, the agent's path alone)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from ackwise.hosts.estimators import (
    ESTIMATORS,
    AckRelease,
    DataArrival,
    WindowEstimator,
    make_estimator,
)
from ackwise.hosts.send_backlog import SendState
from ackwise.twins.policies import MSS_BYTES
from ackwise.twins.serial import seq_diff, seq_gt, seq_lt

__all__ = ["AckRelease", "DataArrival"]

MAX_ACK_DELAY_S = 0.2  # TCP's (and the smartacking paper's) bound on how long an ACK may wait
DEFAULT_RTT_S = 0.1  # until the receiver has a sample


@dataclass(frozen=True)
class Release:
    """Send the ACK now."""


@dataclass(frozen=True)
class Hold:
    """Keep the ACK until ``until`` (unless a newer ACK supersedes it)."""

    until: float


Decision = Release | Hold
RELEASE = Release()


# ---- estimates a receiver can make on its own ----


@dataclass
class RttEstimator:
    """The receiver's RTT from its handshake and from timestamps echoed in the sender's data."""

    srtt_s: float | None = None
    min_s: float | None = None
    last_s: float | None = None  # the latest sample

    def sample(self, rtt_s: float) -> None:
        if rtt_s <= 0:
            return
        self.last_s = rtt_s
        self.srtt_s = rtt_s if self.srtt_s is None else 0.875 * self.srtt_s + 0.125 * rtt_s
        self.min_s = rtt_s if self.min_s is None else min(self.min_s, rtt_s)

    @property
    def srtt(self) -> float:
        return self.srtt_s if self.srtt_s is not None else DEFAULT_RTT_S

    @property
    def rtt_min(self) -> float:
        return self.min_s if self.min_s is not None else DEFAULT_RTT_S


@dataclass
class AckPathQueue:
    """How long the receiver's own packets queue on their way to the sender (the ACK path), from
    the timestamps the sender's data carries: its TSval is the sender's clock when it sent the
    segment, its TSecr our clock when we sent the segment it echoes, so TSval - TSecr is that
    segment's one-way delay, plus the two clocks' constant offset, plus however long the sender
    waited before sending. The first data segment echoing a new TSecr is the one the sender sent
    when that segment of ours arrived (an ACK-clocked sender waits no longer), so only it is
    taken; the smallest difference seen is the path without a queue. Both clocks tick in
    milliseconds (Linux's; RFC 7323 allows other rates, which this does not detect). Checked
    against the uplink queue simulated from a capture on the DSL path (docs/piggyback-guarded)."""

    TICK_S: ClassVar[float] = 0.001
    last_ts_ecr: int | None = None
    base: int | None = None  # the first difference: the others are taken relative to it (serial)
    min_relative: int | None = None
    queue_s: float | None = None  # the latest estimate; None before the first sample

    def sample(self, ts_val: int, ts_ecr: int) -> None:
        if ts_ecr == self.last_ts_ecr:
            return
        self.last_ts_ecr = ts_ecr
        difference = (ts_val - ts_ecr) % 2**32
        if self.base is None:
            self.base = difference
        relative = seq_diff(difference, self.base)
        if self.min_relative is None or relative < self.min_relative:
            self.min_relative = relative
        self.queue_s = (relative - self.min_relative) * self.TICK_S


# ---- the policies ----


@dataclass
class AckPolicy(ABC):
    """What every policy knows about its flow: MSS, the ACKs it released, RTT and window estimates
    (hosts/estimators.py: ``estimator`` picks the window's; every change of it is kept in
    ``estimate_trace`` for the run's record, beside the sender's cwnd)."""

    name: ClassVar[str]
    mss: int = MSS_BYTES
    max_delay_s: float = MAX_ACK_DELAY_S
    estimator: str = "counting"
    rtt: RttEstimator = field(default_factory=RttEstimator)
    cwnd: WindowEstimator = field(init=False)
    first_ack: int | None = None
    last_released_ack: int | None = None
    last_release_t: float | None = None
    highest_received: int | None = None  # end of the highest data received
    gap_end: int | None = None  # end of the highest data received beyond a gap, until filled
    next_tick_t: float | None = None
    estimate_trace: list[tuple[float, int]] = field(default_factory=list)
    # ISAT, the inter-segment arrival time (smartacking 3.2): EWMA, gain 0.25, up to two >= 3x
    # outliers in a row ignored, the first segment of a window (after a gap of more than half an
    # RTT) ignored. Smartacking's delay rule uses it; every policy bounds its holds while a hole
    # is being repaired by it (hold_while_repairing).
    isat_s: float | None = None
    last_arrival_t: float | None = None
    outliers_in_a_row: int = 0

    ISAT_GAIN: ClassVar[float] = 0.25
    OUTLIER_FACTOR: ClassVar[float] = 3.0
    MAX_OUTLIERS_IGNORED: ClassVar[int] = 2
    REPAIR_HOLD_ISATS: ClassVar[float] = 2.0

    TRACE_POINTS: ClassVar[int] = 20_000  # a 1 MB transfer changes it a few hundred times
    # How the agent runs the policy. ``quickack``: the kernel ACKs every segment (the policy sets
    # the rate from there); off, the kernel's delayed ACK produces the ACKs the policy may hold.
    # ``thins``: a newer pure ACK supersedes a held one (dropped, its due time inherited); off,
    # the held one is released first: only reverse data removes an ACK.
    quickack: ClassVar[bool] = True
    thins: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.cwnd = make_estimator(self.estimator, self.rtt, self.mss)

    def on_data(self, ev: DataArrival) -> None:
        if ev.in_order and self.last_arrival_t is not None:
            self._isat_sample(ev.t - self.last_arrival_t)
        if ev.in_order:
            self.last_arrival_t = ev.t
        end = (ev.seq + ev.length) % 2**32
        if self.highest_received is None or seq_gt(end, self.highest_received):
            self.highest_received = end
        if ev.beyond_gap and (self.gap_end is None or seq_gt(end, self.gap_end)):
            self.gap_end = end
        self.cwnd.on_data(ev)
        self._tick(ev.t)
        self._trace(ev.t)

    def _isat_sample(self, gap: float) -> None:
        # The first segment of a window arrives after the gap between windows: not an
        # inter-segment time. A gap of more than half an RTT marks it.
        if gap > self.rtt.srtt / 2:
            return
        if self.isat_s is None:
            self.isat_s = gap
            return
        if gap >= self.OUTLIER_FACTOR * self.isat_s and self.outliers_in_a_row < self.MAX_OUTLIERS_IGNORED:
            self.outliers_in_a_row += 1
            return
        self.outliers_in_a_row = 0
        self.isat_s += self.ISAT_GAIN * (gap - self.isat_s)

    def on_release(self, t: float, ack: int, ts_val: int | None = None, sack: bool = False) -> None:
        if self.first_ack is None:
            self.first_ack = ack
        new = self.last_released_ack is None or seq_gt(ack, self.last_released_ack)
        hole = self.gap_end is not None and seq_lt(ack, self.gap_end)
        if self.gap_end is not None and not hole:
            self.gap_end = None  # the ACK covers everything that came beyond the gap
        self.cwnd.on_release(AckRelease(t, ack, ts_val, hole, new, sack))
        if new:
            self.last_released_ack = ack
        self.last_release_t = t
        self._tick(t)
        self._trace(t)

    def on_third_duplicate_ack(self) -> None:
        self.cwnd.on_third_duplicate_ack()

    def _tick(self, t: float) -> None:
        """The window estimator's once-per-RTT update, run for each RTT that passed."""
        if self.next_tick_t is None:
            self.next_tick_t = t + self.rtt.srtt
            return
        while t >= self.next_tick_t:
            self.cwnd.on_rtt_tick(self.next_tick_t)
            self.next_tick_t += self.rtt.srtt

    def _trace(self, t: float) -> None:
        value = self.cwnd.estimate()
        if (not self.estimate_trace or self.estimate_trace[-1][1] != value) and len(
            self.estimate_trace
        ) < self.TRACE_POINTS:
            self.estimate_trace.append((t, value))

    def acked_since_release(self, ack: int) -> int:
        return 0 if self.last_released_ack is None else seq_diff(ack, self.last_released_ack)

    def hold(self, t: float) -> Hold:
        return Hold(t + self.max_delay_s)

    def repairing(self) -> bool:
        """Whether data has arrived beyond a hole that no released ACK has covered yet: the
        kernel's ACK now is a partial ACK, or fills the last hole."""
        return self.gap_end is not None

    def hold_while_repairing(self, t: float, decision: Decision) -> Decision:
        """A hold of a partial ACK (or of the one filling the last hole) ends within
        REPAIR_HOLD_ISATS inter-segment times: if the next segment comes, its duplicate ACK
        carries the same number and supersedes it, as before; if none comes (NewReno without SACK
        sends nothing new while it repairs a window's holes, one per round trip), the sender
        waits for this ACK to retransmit the next hole. Issue 39: held to the policy's 200 ms,
        4W took 22.9 s for 1 MB at 12 Mbit/s (60 timer releases) against the baseline's 8.2 s.
        Released at once (RFC 5681 4.2's immediate ACK), each partial ACK and the duplicate right
        after it would reach the sender as two ACKs where one did before; the bound keeps the old
        stream in recovery. (4W's extra retransmissions at 1 Mbit/s after that change start in
        slow start, before any hole: not this rule's; docs/host-policies.md.) Without an ISAT
        yet: at once."""
        if not isinstance(decision, Hold) or not self.repairing():
            return decision
        if self.isat_s is None:
            return RELEASE
        return Hold(min(decision.until, t + self.REPAIR_HOLD_ISATS * self.isat_s))

    def may_hold(self, sack: bool, ece: bool) -> bool:
        """Whether the policy would hold this pure ACK at all (beyond the safety contract, which
        decides first): one carrying SACK blocks, or ECE."""
        return True

    def reads_send_state(self) -> bool:
        """Whether ``decide`` needs the host's own send state on the connection (the agent then
        reads it from the kernel and hands it over through ``on_send_state`` first)."""
        return False

    def on_send_state(self, state: SendState | None) -> None:
        """The host's own send state on this connection (hosts/send_backlog.py), read just before
        ``decide``; None if the connection could not be read."""
        return None  # only a policy that reads it keeps it

    @abstractmethod
    def decide(self, t: float, ack: int) -> Decision:
        """For a pure ACK the safety contract lets the policy hold."""


@dataclass
class EveryD(AckPolicy):
    """One ACK per d full-sized segments received (A4L4 with d = 4), none held past max_delay_s."""

    name: ClassVar[str] = "every_d"
    d: int = 2

    def current_d(self, t: float, ack: int) -> int:
        return self.d

    def decide(self, t: float, ack: int) -> Decision:
        if self.last_released_ack is None:
            return RELEASE
        if self.acked_since_release(ack) >= self.current_d(t, ack) * self.mss:
            return RELEASE
        return self.hold(t)


@dataclass
class DynamicD(EveryD):
    """d = 1, 2, 3, 4 as the segments acknowledged since the flow's first ACK cross l1, l2, l3."""

    name: ClassVar[str] = "dynamic_d"
    l1: int = 2
    l2: int = 5
    l3: int = 9

    def current_d(self, t: float, ack: int) -> int:
        segments = 0 if self.first_ack is None else seq_diff(ack, self.first_ack) // self.mss
        return 1 if segments < self.l1 else 2 if segments < self.l2 else 3 if segments < self.l3 else 4


@dataclass
class ReceiverAcc(EveryD):
    """ACC at the receiver: d doubles on a CE-marked data segment, at most once per RTT, and falls
    by one per RTT without; d <= max(1, estimated window / 2) keeps two ACKs per window."""

    name: ClassVar[str] = "acc"
    d: int = 1
    d_cap: int = 64
    signal_pending: bool = False
    changed_t: float | None = None
    signals: int = 0

    def on_data(self, ev: DataArrival) -> None:
        super().on_data(ev)
        if ev.ce:
            self.signal_pending = True

    def current_d(self, t: float, ack: int) -> int:
        rtt = self.rtt.srtt
        rtt_passed = self.changed_t is None or t - self.changed_t >= rtt
        if self.signal_pending:
            self.signal_pending = False
            if rtt_passed:
                self.d *= 2
                self.changed_t = t
                self.signals += 1
        elif rtt_passed and self.d > 1:
            self.d -= 1
            self.changed_t = (self.changed_t or t) + rtt
        self.d = max(1, min(self.d, self.d_cap, max(1, self.cwnd.estimate() // 2)))
        return self.d


@dataclass
class FourW(EveryD):
    """Four ACKs per send window: one per window / 4 segments, to the nearest whole segment
    (Landström's sender marked the segments to ACK at quarter-windows; rounding down instead
    sent 7 ACKs per window of 7 segments, 5 per window of 15). The window is the receiver's
    estimate (hosts/estimators.py)."""

    name: ClassVar[str] = "4w"
    acks_per_window: int = 4

    def current_d(self, t: float, ack: int) -> int:
        # int(x + 0.5): half-up, where round() would round 2.5 to 2
        return max(1, int(self.cwnd.estimate() / self.acks_per_window + 0.5))


@dataclass
class Smartacking(AckPolicy):
    """ACK now while the bottleneck is underused, otherwise delay the ACK until just before the
    sender would run out of window: delay = LastSegmentTime - alpha * RTT, with
    LastSegmentTime = (CwndEst + LastACKed - LastReceived) * ISAT (segments)."""

    name: ClassVar[str] = "smartacking"
    alpha: float = 1.0
    # The RTT the delay rule subtracts (decision_rtt): the receiver's minimum, the path's round
    # trip without the queue; off, one sample per rtt_refresh_s (the paper's keep-alive period).
    rtt_min: bool = True
    rtt_refresh_s: float = 1.0
    refreshed_rtt_s: float | None = None
    refreshed_t: float = 0.0
    extended: bool = False  # the paper's extended-alpha variant (section 4.1)
    # extended smartacking
    beta: float = 1.0
    gamma: int = 0
    alpha_frozen: bool = True  # alpha is not reduced before the third duplicate ACK
    last_cwnd_estimate: int = 0

    def last_segment_time(self) -> float | None:
        if self.isat_s is None or self.highest_received is None or self.last_released_ack is None:
            return None
        expected = self.cwnd.estimate() + (seq_diff(self.last_released_ack, self.highest_received) / self.mss)
        return max(0.0, expected) * self.isat_s

    def decision_rtt(self, t: float) -> float:
        """The RTT the delay rule subtracts. The link stays busy if the ACK reaches the sender,
        and the data it releases reaches the bottleneck, before the segments still to come have
        drained from it: if it leaves while they take at least the path's round trip without
        queueing to arrive (remaining segments x ISAT >= RTTmin). So ``rtt_min`` (the default):
        the receiver's minimum RTT. Off: what the paper's receiver, sending no data of its own,
        measures with a keep-alive once per second (§3.2): one sample, refreshed every
        ``rtt_refresh_s`` (0: the smoothed RTT of every sample). Both include the queue, and on
        a saturated link a window takes exactly that long to arrive (window x ISAT = RTT), so
        the rule delays only by what the queue grew since the sample: on one-flow at 1-2 Mbit/s
        (issue 39, main 33d206f) it sent 0.62-0.70 pure ACKs per segment, the delayed-ACK
        baseline 0.58-0.73."""
        if self.rtt_min and self.rtt.min_s is not None:
            return self.rtt.min_s
        if self.rtt_refresh_s <= 0 or self.rtt.last_s is None:
            return self.rtt.srtt
        if self.refreshed_rtt_s is None or t - self.refreshed_t >= self.rtt_refresh_s:
            self.refreshed_rtt_s, self.refreshed_t = self.rtt.last_s, t
        return self.refreshed_rtt_s

    def decide(self, t: float, ack: int) -> Decision:
        lst = self.last_segment_time()
        budget = self.alpha * self.decision_rtt(t)
        if lst is None or lst < budget:
            return RELEASE
        return Hold(t + min(lst - budget, self.max_delay_s))

    def on_third_duplicate_ack(self) -> None:
        super().on_third_duplicate_ack()
        self.alpha_frozen = False

    def on_release(self, t: float, ack: int, ts_val: int | None = None, sack: bool = False) -> None:
        single = self.last_released_ack is not None and seq_diff(ack, self.last_released_ack) <= self.mss
        super().on_release(t, ack, ts_val, sack)
        if not self.extended:
            return
        estimate = self.cwnd.estimate()
        if not self.alpha_frozen and estimate < self.last_cwnd_estimate:
            self.beta = self.alpha  # the level alpha climbs back to, as ssthresh for cwnd
            self.alpha *= 0.9
        self.last_cwnd_estimate = estimate
        self.gamma += 1 if single else -1
        if self.gamma < 0 and -self.gamma > 4 * max(1, estimate):
            self.gamma = 0
            self.alpha = (
                min(1.0, self.alpha + 0.05) if self.beta > self.alpha else max(0.0, self.alpha - 0.01)
            )


@dataclass
class Tack(AckPolicy):
    """TACK: ACK frequency f = min(bw / (L * MSS), beta / RTTmin), so one ACK per
    max(L * MSS / bw, RTTmin / beta). bw is the receiver's windowed-max delivery rate."""

    name: ClassVar[str] = "tack"
    beta: int = 4
    L: int = 2
    window_bytes: int = 0
    window_start_t: float | None = None
    bw_bytes_per_s: float | None = None

    def on_data(self, ev: DataArrival) -> None:
        super().on_data(ev)
        if self.window_start_t is None:
            self.window_start_t = ev.t
        self.window_bytes += ev.length
        span = ev.t - self.window_start_t
        if span >= self.rtt.rtt_min:  # one delivery-rate sample per RTTmin
            rate = self.window_bytes / span
            self.bw_bytes_per_s = (
                rate if self.bw_bytes_per_s is None else max(rate, 0.9 * self.bw_bytes_per_s)
            )
            self.window_start_t, self.window_bytes = ev.t, 0

    def interval(self) -> float:
        by_time = self.rtt.rtt_min / self.beta
        by_bytes = self.L * self.mss / self.bw_bytes_per_s if self.bw_bytes_per_s else 0.0
        return max(by_time, by_bytes)

    def decide(self, t: float, ack: int) -> Decision:
        if self.last_release_t is None:
            return RELEASE
        due = self.last_release_t + self.interval()
        if t >= due:
            return RELEASE
        return Hold(min(due, t + self.max_delay_s))


@dataclass
class PiggybackHold(AckPolicy):
    """Shang and Wills' piggybacking, done by the receiver's host: hold each pure ACK up to
    ``hold_ms``, so that reverse data the application writes in the meantime carries it (the
    held ACK is then dropped: the data's ACK is at least as new). Nothing else removes an ACK: a
    newer pure ACK releases the held one first (no thinning), and the kernel's own delayed ACK
    produces the ACKs (no quickack). Never held, beyond the safety contract's rules (duplicates,
    DSACK, SACK news, ECE/CWR changes, FIN ...): any ACK with SACK blocks or ECE."""

    name: ClassVar[str] = "piggyback"
    quickack: ClassVar[bool] = False
    thins: ClassVar[bool] = False
    # The client writes back within a millisecond or two of reading; a hold much longer only
    # delays the ACKs that no data follows (all of them when the client writes nothing). 0 holds
    # nothing: every pure ACK still passes through the agent (NFQUEUE, this policy) and leaves at
    # once, the control that separates the agent's own path from the holding.
    hold_ms: float = 10.0
    # Hold only while the host's own data on the connection is not waiting for its congestion
    # window. While it is, the reverse data is network-limited: the next data segment leaves when
    # an ACK from the peer opens the window, not when the application writes, so a held ACK
    # either waits for it (the download's ACK clock slows: 0.80x at N = 700 on the DSL path) or
    # leaves late with no packet saved (N = 1400); docs/piggyback-byte-buffer. Released then, the
    # ACK leaves as the kernel sent it; the hold acts where the reverse data is
    # application-limited (unsent bytes that Nagle's algorithm keeps back are not a reason: their
    # segment leaves with the next ACK from the peer whether or not ours is held). Measured, it
    # does not remove the download's cost there (docs/piggyback-blocked: at N = 1400 it held
    # almost nothing and cost the same), so that reasoning is not the whole cause. Off: hold every
    # pure ACK (the policy as the coherent run at bfaedbc measured it).
    release_if_blocked: bool = False
    # Hold only while the host's own connection has less than a full segment unsent
    # (send_backlog.SendState.backlogged): its reverse data is application-limited. With a
    # backlog the uplink carries a standing queue of it, and a held ACK's carrier is a full data
    # segment: the ACK reaches the peer a data segment's serialization later, and in a buffer that
    # counts packets the slot the pure ACK left goes to more data, a longer queue for every later
    # ACK (docs/piggyback-byte-buffer: 0.80x at N = 700 with 20 packets, 1.11x with the same
    # bytes). release_if_blocked asked the same of one instant (a full window) and missed the
    # instants an ACK had just opened it (103 holds a run at N = 700, docs/piggyback-reading).
    release_if_backlogged: bool = False
    # Hold nothing while the receiver's window estimate says the sender is in slow start (the
    # estimator's own reading of the data, hosts/estimators.py; never the sender's state). A slow
    # start's ACKs set how far its window grows: at N = 1400 the hold's only two holds a run, the
    # connection's first two pure ACKs carried by 1400-byte segments through the 40 kB/s uplink,
    # made CUBIC's HyStart end slow start at cwnd 26 instead of 37 and cost the whole transfer
    # 0.845x (docs/piggyback-reading).
    release_in_slow_start: bool = False
    # Hold only while the ACK path (this host to the sender) queues less than the path's minimum
    # round trip (the receiver's rtt_min), by the timestamps the sender's data echoes
    # (AckPathQueue): no reading of the connection, nothing of the sender's state. With a
    # standing queue there, the pure ACKs the hold removes leave their places in it to the host's
    # own data: on the DSL path at N = 700 the plain hold's uplink queue was 120-192 ms (median
    # past the first second) against 55-105 ms without it, whose pure ACKs made the client's
    # connection lose and cut earlier (docs/piggyback-guarded), and the download's ACKs wait
    # behind it. The client then had less than a segment unsent at most of its pure ACKs
    # (Nagle's algorithm sends a full segment as soon as one is written), so neither a backlog nor
    # a full window shows it. Without the timestamps option, or before the first sample, the
    # queue is unknown and nothing is held.
    release_if_ack_path_queued: bool = False
    ack_path: AckPathQueue = field(default_factory=AckPathQueue)
    send_state: SendState | None = None  # the latest reading (on_send_state)
    released_while_blocked: int = 0  # pure ACKs released at once: the host's data was window-limited
    released_while_backlogged: int = 0  # ... it had a full segment or more unsent
    released_in_slow_start: int = 0  # ... the sender was in slow start, by the estimate
    released_ack_path_queued: int = 0  # ... the ACK path queued more than rtt_min (or unknown)
    released_state_unknown: int = 0  # ... or its connection could not be read (never held blind)

    def may_hold(self, sack: bool, ece: bool) -> bool:
        return not sack and not ece

    def reads_send_state(self) -> bool:
        return self.release_if_blocked or self.release_if_backlogged

    def on_send_state(self, state: SendState | None) -> None:
        self.send_state = state

    def on_data(self, ev: DataArrival) -> None:
        super().on_data(ev)
        if ev.ts_val is not None and ev.ts_ecr is not None:
            self.ack_path.sample(ev.ts_val, ev.ts_ecr)

    def ack_path_queued(self) -> bool:
        queue_s = self.ack_path.queue_s
        return queue_s is None or queue_s > self.rtt.rtt_min

    def decide(self, t: float, ack: int) -> Decision:
        if self.hold_ms == 0:
            return RELEASE
        if self.release_in_slow_start and self.cwnd.in_slow_start():
            self.released_in_slow_start += 1
            return RELEASE
        if self.release_if_ack_path_queued and self.ack_path_queued():
            self.released_ack_path_queued += 1
            return RELEASE
        if self.reads_send_state():
            state = self.send_state
            if state is None:
                self.released_state_unknown += 1
                return RELEASE
            if self.release_if_blocked and state.window_limited:
                self.released_while_blocked += 1
                return RELEASE
            if self.release_if_backlogged and state.backlogged:
                self.released_while_backlogged += 1
                return RELEASE
        return Hold(t + min(self.hold_ms / 1000, self.max_delay_s))


POLICIES: dict[str, type[AckPolicy]] = {
    cls.name: cls for cls in (EveryD, DynamicD, ReceiverAcc, Smartacking, Tack, FourW, PiggybackHold)
}
# The kernel's own behaviour, without the agent.
KERNEL_BASELINES = ("delayed", "quickack")


TUNABLE = (
    "mss",
    "max_delay_s",
    "d",
    "l1",
    "l2",
    "l3",
    "d_cap",
    "alpha",
    "rtt_min",
    "rtt_refresh_s",
    "extended",
    "beta",
    "L",
    "acks_per_window",
    "estimator",
    "hold_ms",
    "release_if_blocked",
    "release_if_backlogged",
    "release_in_slow_start",
    "release_if_ack_path_queued",
)


BOOLEAN_WORDS = dict.fromkeys(("1", "true", "yes", "on"), True) | dict.fromkeys(
    ("0", "false", "no", "off"), False
)


def make_policy(name: str, params: dict[str, str]) -> AckPolicy:
    """``every_d``, ``{"d": "4"}`` -> a policy, with its parameters typed and checked."""
    if name not in POLICIES:
        raise ValueError(
            f"unknown host policy {name!r}; known: {', '.join(POLICIES)} "
            f"(kernel baselines without the agent: {', '.join(KERNEL_BASELINES)})"
        )
    cls = POLICIES[name]
    fields_ = {f.name: f for f in cls.__dataclass_fields__.values() if f.name in TUNABLE}
    values: dict[str, object] = {}
    for key, text in params.items():
        if key not in fields_:
            raise ValueError(f"{name} has no parameter {key!r} (it takes: {', '.join(sorted(fields_))})")
        default = fields_[key].default
        try:
            if isinstance(default, str):
                if text not in ESTIMATORS:
                    raise ValueError(f"{name} {key}={text!r}: give one of {', '.join(ESTIMATORS)}")
                values[key] = text
            elif isinstance(default, bool):
                if text.lower() not in BOOLEAN_WORDS:
                    raise ValueError(f"{name} {key}={text!r}: give one of {', '.join(BOOLEAN_WORDS)}")
                values[key] = BOOLEAN_WORDS[text.lower()]
            elif isinstance(default, int):
                values[key] = int(text)
                if values[key] < 1:  # type: ignore[operator]
                    raise ValueError(f"{name} {key} must be at least 1")
            else:
                values[key] = float(text)
                if not math.isfinite(values[key]) or values[key] < 0:  # type: ignore[arg-type]
                    raise ValueError(f"{name} {key} must be at least 0 (and finite)")
        except ValueError as exc:
            own = "at least" in str(exc) or "give one of" in str(exc)
            raise ValueError(str(exc) if own else f"{name} {key}={text!r}: not a number") from None
    return cls(**values)  # type: ignore[arg-type]
