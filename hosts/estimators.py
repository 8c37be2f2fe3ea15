"""The sender's congestion window as the receiver can estimate it: pure logic, no I/O.

A receiver-only ACK policy (smartacking's delay, 4W's four ACKs per window, ACC's bound) needs the
sender's window and may not ask the sender for it: it infers it from what it sees, the data
segments arriving and the ACKs it releases. Windows are in segments of ``mss`` bytes.

- ``figure1``: the smartacking paper's EstimateCwnd (its Figure 1), for NewReno senders that grow
  cwnd by one segment per non-duplicate ACK. Kept as published, as the "before" of the estimates
  in docs/host-policies.md. On Linux senders it is a fixed schedule: in the initial slow start it
  counts the receiver's own ACKs, which with few ACKs stays far below the sender's window (4W
  recorded 75 ACKs for every loss-free 1 MB transfer while CUBIC's cwnd reached 193).
- ``counting`` (the default): for senders that grow cwnd by the segments an ACK acknowledges
  (Linux: tcp_slow_start() and tcp_cong_avoid_ai() count acked packets, whatever the ACK
  frequency). It measures the window instead of modelling the ACK count: a data segment's TSecr
  echoes the TSval of the newest ACK the sender had when it sent the segment, so the receiver
  knows which of its ACKs clocked which data, and the data sent after an ACK reached up to the
  sender's window beyond that ACK's cumulative number (the flight, snd_nxt - snd_una, which a
  window-limited sender fills). Between measurements it models Linux's growth: in slow start,
  one segment per segment acknowledged; in congestion avoidance, one per window. Slow start ends
  when the measured window stops doubling per round trip (a loss, or CUBIC's HyStart). During
  loss recovery (a hole at the receiver) the estimate is ``beta`` times the window before it,
  until the flight after recovery is measured. Without timestamps on the connection it counts
  the segments that arrive per round trip instead (the paper's own measure), which undercounts
  by the share of the round trip spent queueing.

Neither estimator reads the sender: only segments on the receiver's own wire.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from ackwise.twins.policies import MSS_BYTES
from ackwise.twins.serial import seq_diff, seq_gt, seq_lt


class RttSource(Protocol):
    @property
    def srtt(self) -> float: ...


@dataclass(frozen=True)
class DataArrival:
    t: float
    seq: int
    length: int
    ce: bool = False
    in_order: bool = True  # starts at the receiver's next expected byte
    beyond_gap: bool = False  # starts beyond the next expected byte: a hole below it
    ts_ecr: int | None = None  # the timestamp the sender echoed (None: no timestamps option)
    ts_val: int | None = None  # the sender's own timestamp
    cwr: bool = False  # the sender says it reduced its window (answering ECE)


@dataclass(frozen=True)
class AckRelease:
    """An ACK the receiver let go to the sender."""

    t: float
    ack: int
    ts_val: int | None = None
    # Data had arrived beyond a gap that this ACK does not fill: a loss is being repaired. (Not
    # merely data newer than the ACK: the kernel's ACK for one segment often leaves after the
    # next segment has arrived.)
    hole: bool = False
    new: bool = True  # acknowledges more than the ACK released before it
    sack: bool = False  # carries SACK blocks


class WindowEstimator(ABC):
    name: ClassVar[str]

    @abstractmethod
    def estimate(self) -> int:
        """The sender's window now, in segments (at least 1)."""

    def on_data(self, ev: DataArrival) -> None:  # noqa: B027 - optional hook
        """A data segment arrived."""

    def on_release(self, ev: AckRelease) -> None:  # noqa: B027 - optional hook
        """The receiver released an ACK."""

    def on_third_duplicate_ack(self) -> None:  # noqa: B027 - optional hook
        """The receiver released its third duplicate ACK in a row."""

    def on_rtt_tick(self, t: float) -> None:  # noqa: B027 - optional hook
        """One smoothed RTT has passed since the last tick."""

    @abstractmethod
    def in_slow_start(self) -> bool:
        """Whether the sender's window grows by slow start now, as far as the receiver can tell
        (the initial one, or one after a cut or a timeout)."""

    def state(self) -> dict[str, object]:
        """What the run's record keeps of the estimator's state."""
        return {"estimator": self.name}


# ---- Figure 1, as published ----


@dataclass
class Figure1Estimator(WindowEstimator):
    """The sender's congestion window in segments, estimated at the receiver for NewReno: the
    EstimateCwnd procedure of the smartacking paper's Figure 1, with its per-RTT update."""

    name: ClassVar[str] = "figure1"
    starting_cwnd: int = 1  # > -1 while in the initial slow start
    past_ssthresh: bool = False
    cwnd_est: float = 0.0
    ssthresh_est: int = 2
    segments_this: int = 0
    segments_last: int = 0
    acks_this: int = 0
    acks_last: int = 0
    cwnd_if_slow_start: int = 0
    seen_loss_this_interval: bool = False
    seen_loss_recently: bool = False

    def estimate(self) -> int:
        if self.starting_cwnd > -1:
            return self.starting_cwnd
        if self.past_ssthresh:
            return int(self.cwnd_est)
        total = self.segments_last + self.acks_last + self.acks_this
        if total > self.ssthresh_est:
            return max(self.ssthresh_est, self.segments_last) + 2
        return total

    def on_data(self, ev: DataArrival) -> None:
        if ev.cwr:
            self.sender_window_reduced()
        if ev.in_order:
            self.in_order_segment()

    def on_release(self, ev: AckRelease) -> None:
        if ev.new:
            self.non_duplicate_ack_sent()

    def on_third_duplicate_ack(self) -> None:
        self.third_duplicate_ack_sent()

    def on_rtt_tick(self, t: float) -> None:
        self.once_per_rtt()

    def non_duplicate_ack_sent(self) -> None:
        self.acks_this += 1
        if self.starting_cwnd > -1:
            self.starting_cwnd += 1
        if self.cwnd_est > 0:
            self.cwnd_est += 1.0 / self.cwnd_est

    def third_duplicate_ack_sent(self) -> None:
        self.starting_cwnd = -1
        self.seen_loss_this_interval = True

    def sender_window_reduced(self) -> None:
        """The sender set CWR: it has answered ECE as it answers a loss (RFC 3168), so the
        estimate takes the same post-congestion path as after the third duplicate ACK. Figure 1
        knows only loss, because the paper's senders did not use ECN."""
        self.third_duplicate_ack_sent()

    def in_order_segment(self) -> None:
        self.segments_this += 1

    def once_per_rtt(self) -> None:
        if (
            not self.past_ssthresh
            and self.cwnd_if_slow_start > self.segments_this + 2
            and self.acks_last > 2
            and not self.seen_loss_recently
        ):
            self.past_ssthresh = True  # switching to congestion avoidance
            self.cwnd_est = self.segments_this + 1
        if self.segments_this == 0 and self.segments_last == 0:
            self.seen_loss_this_interval = True
        if self.seen_loss_this_interval and not self.seen_loss_recently:
            self.ssthresh_est = max(self.estimate() // 2, 2)
            self.starting_cwnd = -1
            self.past_ssthresh = False
        if self.segments_this > 1:
            self.seen_loss_recently = self.seen_loss_this_interval
        self.seen_loss_this_interval = False
        self.cwnd_if_slow_start = self.segments_last + self.acks_last + self.acks_this
        self.segments_last, self.acks_last = self.segments_this, self.acks_this
        self.segments_this = self.acks_this = 0

    def in_slow_start(self) -> bool:
        # the initial slow start, and the climb back to ssthresh_est after a loss
        return not self.past_ssthresh

    def state(self) -> dict[str, object]:
        if self.starting_cwnd > -1:
            phase = "initial slow start"
        else:
            phase = "ca" if self.past_ssthresh else "post-loss"
        return {"estimator": self.name, "phase": phase}


# ---- segment counting, measured ----


@dataclass
class _Clocked:
    """The data one released ACK (or several with the same TSval) clocked out of the sender."""

    ts: int | None
    ack: int  # the sender's snd_una once it had that ACK
    first_t: float  # when the first segment it clocked arrived
    max_end: int  # the highest sequence end it clocked
    fixed: float | None = None  # without timestamps: the window counted over one RTT

    def window(self, mss: int) -> float:
        if self.fixed is not None:
            return self.fixed
        return max(0.0, seq_diff(self.max_end, self.ack) / mss)


@dataclass
class _ClockEntry:
    ack: int
    hole: bool


# How far a window must grow per round trip to count as slow start (which doubles it) and not
# congestion avoidance (one segment per round trip); the middle, so that a measurement an
# interval off either way still tells them apart.
SLOW_START_GROWTH = 1.5
MIN_WINDOW = 2.0  # segments: what a sender keeps after a loss (Linux: ssthresh >= 2)
BETA_RANGE = (0.4, 0.9)  # what a window cut can have kept: reno 0.5, cubic 0.7


@dataclass
class CountingEstimator(WindowEstimator):
    """See the module docstring: the window measured from ACK clocking, Linux's segment-counting
    growth between measurements."""

    name: ClassVar[str] = "counting"
    rtt: RttSource
    mss: int = MSS_BYTES
    beta: float = 0.5  # the window kept after a loss (reno, NewReno: 0.5; cubic: 0.7), learnt
    slow_start: bool = True
    recovery: bool = False
    timestamps: bool | None = None  # learnt from the first data segment
    start_seq: int | None = None
    last_ack: int | None = None
    highest: int | None = None  # the highest data received
    now: float = 0.0
    # the last window cut (a loss, or CWR answering our ECE)
    before_loss: float = 0.0  # the estimate when the loss showed
    loss_ack: int = 0  # the cumulative ACK when the hole appeared: the sender's snd_una then
    loss_t: float = 0.0
    loss_rtt: float = 0.0  # the smoothed RTT then
    loss_tsval: int | None = None  # the TSval of the ACK that showed the hole
    loss_window: float = 0.0  # the window the sender had when it learnt of the loss, measured
    recover_seq: int | None = None  # the highest data sent before the sender learnt of the loss
    post_loss_pending: bool = False  # the window after the cut not compared with before yet
    ce_since_cut: bool = False  # a CE mark arrived (so our ECE is out) since the last cut
    placeholder: float | None = None  # the window after a cut, until one is measured
    placeholder_ack: int = 0  # the ACK the placeholder's window is measured from
    clock: OrderedDict[int, _ClockEntry] = field(default_factory=OrderedDict)
    groups: deque[_Clocked] = field(default_factory=lambda: deque(maxlen=512))
    tick_max: float = 0.0  # the largest window measured since the last RTT tick
    previous_tick_max: float = 0.0
    segments_this_tick: int = 0
    losses: int = 0

    CLOCK_ENTRIES: ClassVar[int] = 512

    # ---- the estimate ----

    def _acked_since(self, ack: int) -> float:
        if self.last_ack is None:
            return 0.0
        return max(0.0, seq_diff(self.last_ack, ack) / self.mss)

    def _predicted(self, group: _Clocked) -> float:
        """The group's window grown by what the ACKs released after it acknowledged: one
        segment per segment in slow start, one per window in congestion avoidance."""
        window = group.window(self.mss)
        acked = self._acked_since(group.ack)
        return window + (acked if self.slow_start else acked / max(window, 1.0))

    def _window_at_loss(self) -> float:
        """What the sender's window was when it learnt of the loss: the flight measured from the
        data it had sent by then (which arrives over the next round trip), or the estimate when
        the hole showed if that is larger: the data at the tail of an overshooting window is
        the data a full drop-tail queue loses, so the receiver never sees the window's edge."""
        return max(self.loss_window, self.before_loss)

    def estimate(self) -> int:
        if self.recovery:
            return max(1, round(max(MIN_WINDOW, self.beta * self._window_at_loss())))
        recent = [g for g in self.groups if g.first_t >= self.now - self.rtt.srtt]
        if not recent and self.groups:
            recent = [self.groups[-1]]
        if recent:
            value = max(self._predicted(g) for g in recent)
        elif self.placeholder is not None:
            value = self.placeholder + self._acked_since(self.placeholder_ack) / max(self.placeholder, 1.0)
        else:
            value = MIN_WINDOW
        return max(1, round(value))

    # ---- events ----

    def on_data(self, ev: DataArrival) -> None:
        self.now = max(self.now, ev.t)
        end = (ev.seq + ev.length) % 2**32
        if self.start_seq is None:
            self.start_seq = ev.seq
            self.timestamps = ev.ts_ecr is not None
            if ev.ts_ecr is not None and self.last_ack is None:
                # The first flight, sent before any ACK of ours: its TSecr echoes our SYN-ACK, and
                # its window starts at the first byte of data.
                self.clock[ev.ts_ecr] = _ClockEntry(ev.seq, False)
        if self.highest is None or seq_gt(end, self.highest):
            self.highest = end
        if ev.ce:
            self.ce_since_cut = True
        if ev.cwr and self.ce_since_cut and not self.recovery:
            # The sender answered our ECE (RFC 3168). Linux also sets CWR on the first segment
            # after a loss cut: that one is the loss's, already counted, and no CE preceded it.
            self._window_cut(ev.t)
        if ev.in_order:
            self.segments_this_tick += 1
        if self.recovery and self._sent_before_loss_known(ev):
            # Sent before the sender had our first duplicate ACK: the window it had then
            # reaches this far beyond the hole (it cuts that window, not our estimate of it).
            self.loss_window = max(self.loss_window, seq_diff(end, self.loss_ack) / self.mss)
            if self.recover_seq is None or seq_gt(end, self.recover_seq):
                self.recover_seq = end
            return
        if not self.timestamps or ev.ts_ecr is None:
            return
        entry = self.clock.get(ev.ts_ecr)
        if entry is None:
            return  # clocked by an ACK from before a cut, or one this receiver no longer remembers
        if entry.hole:
            # Clocked by an ACK sent while repairing a hole: snd_una is not the window's edge,
            # and the flight then is not the window (NewReno without SACK keeps cwnd at ssthresh
            # with little in flight; PRR steers the flight towards it; and Linux stops updating
            # the TSecr it echoes until the hole is repaired, so TSecr no longer tells which
            # ACK clocked a segment).
            return
        last = self.groups[-1] if self.groups else None
        if last is not None and last.ts == ev.ts_ecr and last.fixed is None:
            last.ack = entry.ack  # a later ACK with the same TSval moved snd_una on
            if seq_gt(end, last.max_end):
                last.max_end = end
            group = last
        else:
            group = _Clocked(ev.ts_ecr, entry.ack, ev.t, end)
            self.groups.append(group)
            self.placeholder = None
        self.tick_max = max(self.tick_max, group.window(self.mss))

    def _sent_before_loss_known(self, ev: DataArrival) -> bool:
        """Whether the sender sent this segment before it got the ACK that showed the hole: its
        TSecr is older than that ACK's TSval (and it came within two round trips: a retransmission
        much later may echo an old one); without timestamps, it came within a round trip. A
        full queue delays the window's tail well beyond the smoothed RTT, hence two."""
        if ev.ts_ecr is not None and self.loss_tsval is not None:
            return ev.t <= self.loss_t + 2 * self.loss_rtt and seq_lt(ev.ts_ecr, self.loss_tsval)
        return ev.t <= self.loss_t + self.loss_rtt

    def on_release(self, ev: AckRelease) -> None:
        self.now = max(self.now, ev.t)
        if ev.hole and not self.recovery:
            if self.recover_seq is not None and seq_gt(self.recover_seq, ev.ack):
                # Another hole in the window already cut (NewReno repairs one per round trip):
                # the sender does not cut again (RFC 6582), so neither does the estimate.
                self.recovery = True
            else:
                self._window_cut(ev.t, loss=True, ack=ev.ack)
                self.loss_tsval = ev.ts_val
        elif not ev.hole and self.recovery:
            self.recovery = False  # the hole is filled: the flight this ACK clocks is measured again
            self.placeholder = max(MIN_WINDOW, self.beta * self._window_at_loss())
            self.placeholder_ack = ev.ack
        if self.last_ack is None or seq_gt(ev.ack, self.last_ack):
            self.last_ack = ev.ack
        if ev.ts_val is not None:
            entry = self.clock.get(ev.ts_val)
            if entry is None:
                self.clock[ev.ts_val] = _ClockEntry(ev.ack, ev.hole)
                while len(self.clock) > self.CLOCK_ENTRIES:
                    self.clock.popitem(last=False)
            else:
                entry.ack, entry.hole = ev.ack, ev.hole

    def _window_cut(self, t: float, loss: bool = False, ack: int | None = None) -> None:
        """A loss (a hole) or the sender's CWR: the window is cut to beta of what it was, and the
        measurements before it no longer describe the sender."""
        self.before_loss = float(self.estimate())
        self.placeholder = max(MIN_WINDOW, self.beta * self.before_loss)
        self.placeholder_ack = self.last_ack if self.last_ack is not None else 0
        self.loss_ack = ack if ack is not None else self.placeholder_ack
        self.loss_t = t
        self.loss_rtt = self.rtt.srtt
        self.loss_window = 0.0
        self.loss_tsval = None
        self.recover_seq = None
        self.post_loss_pending = True
        self.ce_since_cut = False
        self.groups.clear()
        self.clock.clear()
        self.slow_start = False
        self.recovery = loss
        self.losses += 1
        self.tick_max = self.previous_tick_max = 0.0

    def on_rtt_tick(self, t: float) -> None:
        self.now = max(self.now, t)
        if not self.timestamps and self.start_seq is not None and not self.recovery:
            # No TSecr to tell which ACK clocked which data: the segments of one round trip.
            count = float(self.segments_this_tick)
            if count:
                ack = self.last_ack if self.last_ack is not None else self.start_seq
                self.groups.append(_Clocked(None, ack, t, ack, fixed=count))
                self.tick_max = count
        if self.tick_max and self.post_loss_pending and not self.recovery:
            self._learn_beta(self.tick_max)
        if self.tick_max and self.previous_tick_max >= MIN_WINDOW:
            growth = self.tick_max / self.previous_tick_max
            if self.slow_start and growth < SLOW_START_GROWTH:
                self.slow_start = False  # no longer doubling: HyStart, or limited by the path
            elif not self.slow_start and growth >= SLOW_START_GROWTH + 0.25:
                self.slow_start = True  # doubling again: a restart after a timeout
        if self.tick_max:
            self.previous_tick_max = self.tick_max
        self.tick_max = 0.0
        self.segments_this_tick = 0

    def _learn_beta(self, window_after: float) -> None:
        """What the sender kept of its window at the last cut: 0.5 for reno, 0.7 for cubic. A
        timeout (cwnd 1, then slow start) falls below the range and teaches nothing."""
        if not self.post_loss_pending:
            return
        self.post_loss_pending = False
        at_loss = self._window_at_loss()
        ratio = window_after / at_loss if at_loss else 0.0
        if BETA_RANGE[0] <= ratio <= BETA_RANGE[1]:
            self.beta += 0.5 * (ratio - self.beta)

    def in_slow_start(self) -> bool:
        return self.slow_start and not self.recovery

    def state(self) -> dict[str, object]:
        phase = "recovery" if self.recovery else "slow start" if self.slow_start else "ca"
        return {
            "estimator": self.name,
            "phase": phase,
            "timestamps": self.timestamps,
            "losses": self.losses,
            "beta": round(self.beta, 3),
        }


ESTIMATORS = ("counting", "figure1")


def make_estimator(name: str, rtt: RttSource, mss: int = MSS_BYTES) -> WindowEstimator:
    if name == "counting":
        return CountingEstimator(rtt=rtt, mss=mss)
    if name == "figure1":
        return Figure1Estimator()
    raise ValueError(f"estimator={name}: give one of {', '.join(ESTIMATORS)}")
