"""The ``auto`` decision: which ACK policy a flow should have now, from what one switch counts.

``decide(state, sample, config)`` is pure: the flow's state and one sample in, the next state and a
``Decision`` out, the Decision only when the policy to write changes ("write only what changed").
No clock, no switch, no I/O: the controller loop (``loop.py``) reads the samples and writes what
comes out, so every rule below can be tested on recorded or synthetic traces.

What is decided
---------------
One *ACK stream*: the pure ACKs a data receiver R sends about the data of a sender S, on one
switch. A sample combines the flow's two half-flow records: S's (the data: ``data_end``,
``data_segments``, ``retransmissions``, RTTmin from S's data to R's ACKs) and R's (the ACKs: seen,
forwarded, thinned, absorbed, duplicate ACKs, ``acc_d``, the last keep reason). The rule written
for it matches R's ACKs, ``src`` = R, as ``ackwise policy set`` does.

The rules, in order: the first that holds decides
-------------------------------------------------
1. **Misbehaving -> safe policy, at once.** In one interval: at least ``misbehaviour_retransmissions``
   retransmissions, or at least ``misbehaviour_dup_acks`` duplicate ACKs, or any retransmission
   with no new data (a stalled flow: a retransmission timeout, most likely). The safe policy is
   ``every_d`` with ``d = safe_d`` (2: the delayed ACK RFC 5681 §4.2 allows any receiver), never
   more thinning than the flow already had. It is written without waiting for the dwell time and
   held ``hold_off_s``; misbehaviour during the hold-off extends it; a new episode within
   ``hold_off_max_s`` of the last hold-off ending doubles it, up to ``hold_off_max_s``.
2. **Holding off** -> keep the safe policy until the hold-off ends.
3. **ACK path congested -> fewer ACKs into that queue** (RFC 3449 §5.2). The egress queue the ACKs
   leave by holds more than ``congestion_backlog_pkts`` packets, or its port marked at least
   ``congestion_ecn_marks`` packets CE in the interval: the congested queue is this switch's own.
   Then ``coalesce`` (§5.2.2: the waiting ACK in that very queue takes the newer ones in), else
   ``acc`` (§5.2.1, d_cap = ``max_d``: the switch doubles d per congestion signal itself; bounded
   by the flight the switch sees, which next to the receiver is a segment or two: docs/acc.md),
   else ``every_d`` with d doubled per decision, whichever the rule allows first. It clears once
   the backlog stayed at or below ``congestion_clear_pkts`` with no marks and, under coalesce, no
   ACK folded, for ``congestion_clear_intervals``.
4. **Idle or too slow to measure -> ACK every segment.** No new data for ``idle_s``: TCP restarts
   from its restart window after an idle period (RFC 5681 §4.1), a ramp-up to come. Fewer than
   ``min_segments_per_interval`` segments: the rate estimate is too coarse, and there is little to
   save.
5. **Bottleneck underused, or ramping up -> ACK every segment** (smartacking: while the bottleneck
   is underused, an ACK for each delivered segment lets the sender take the capacity promptly).
   Where the data leaves the switch by a port with a rate (the switch's queue model books every
   packet it sends there), the share of the interval that port was busy decides: below
   ``underused_busy`` (0.8) the bottleneck is underused, whatever the flow's rate does; at or above
   ``saturated_busy`` (0.95) it is saturated (rule 6). In between, and where the port has no rate
   (the bottleneck is elsewhere), the flow's own growth decides. ``every_d`` d = 1 (never
   ``off``: an ``off`` flow is not tracked, and the controller would lose sight of it). A flow
   enters ramp-up new, after idle, or when its rate grows by ``ramp_up_growth`` (x1.25) in one
   interval; it leaves when the rate grew less than ``steady_growth`` (x1.10) for
   ``steady_intervals`` (3) intervals in a row.
6. **Saturated -> TACK** (Li et al., TACK, IEEE/ACM ToN 2021, Eq. 4): f = min(bw / (L x MSS),
   beta / RTTmin) ACKs per second, bw the smoothed rate, RTTmin the switch's measurement. One ACK per
   d = (bw / MSS) / f = max(L, bdp / beta) segments. ``tack`` with the rule's L and beta; when d would
   exceed ``max_d``, beta is raised so that it does not (at most 255; beyond that ``every_d`` d =
   ``max_d``). Without ``tack`` allowed: ``every_d`` with that d. RTTmin stays 0 in the rule (the
   switch keeps measuring it), so the rule need not be rewritten as RTTmin moves.

Every d is clamped to the rule's [``min_d``, ``max_d``].

Hysteresis, so that decisions do not flap
-----------------------------------------
- Enter and leave thresholds differ: ramp-up at x1.25 growth, steady below x1.10 for 3 intervals;
  congestion above 8 packets, clear at 4 or less for 3 intervals.
- A decision stays at least ``dwell_s`` (0.5 s) before another replaces it (the safe policy
  excepted: safety does not wait).
- For the same reason and policy, a parameter (d, beta, d_cap) changes only when the new value
  differs from the written one by at least ``param_margin`` (25 %) of it, and at least 1; except
  when the written tack's beta lets d pass ``max_d`` at the current rate (a bound is a bound).
  A raised beta leaves a margin's headroom, so that small rises of the rate need no rewrite.

The first sample of a flow (or one after its counters went back: a switch restart, a recreated
record) writes ``every_d`` d = 1 ("new flow"). Rates come from ``data_end`` deltas (serial
arithmetic, correct across the 32-bit wrap); while the switch does not expose ``data_end`` (0),
from new data segments x MSS. The smoothed rate TACK uses restarts from the current rate when a
flow becomes saturated, since an average over the ramp-up lags far behind.
"""

from __future__ import annotations

import functools
import ipaddress
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ackwise.twins.flowkey import FlowKey, format_endpoint
from ackwise.twins.p4names import (
    ACC_D_CAP_MAX,
    ACTION_ACK_THINNING_POLICY_EVERY_D,
    ACTION_ACK_THINNING_POLICY_TACK,
    ACTION_PARAMS_BITS,
)
from ackwise.twins.policies import MSS_BYTES, Policy, PolicyMatch, PolicyParams
from ackwise.twins.serial import seq_diff

if TYPE_CHECKING:
    from ackwise.features.thinning import FlowRecord, HalfFlow

# The largest tack beta and every_d d the switch's actions take (their parameters' widths).
BETA_MAX = (1 << dict(ACTION_PARAMS_BITS[ACTION_ACK_THINNING_POLICY_TACK])["beta"]) - 1
D_MAX = (1 << dict(ACTION_PARAMS_BITS[ACTION_ACK_THINNING_POLICY_EVERY_D])["d"]) - 1


def policy_named(name: str) -> Policy | None:
    """The Policy of that name, or None if this ackwise has no such policy (``coalesce`` is newer)."""
    return Policy._value2member_map_.get(name)  # type: ignore[return-value]


COALESCE = policy_named("coalesce")
# The policies the controller knows how to choose between; every_d is the one it cannot do without.
CONTROLLER_POLICIES: tuple[Policy, ...] = tuple(
    p for p in (Policy.EVERY_D, Policy.TACK, Policy.ACC, COALESCE) if p is not None
)


# ---- what is decided about ----


@dataclass(frozen=True, order=True, slots=True)
class AckStream:
    """The pure ACKs a data receiver (``src``) sends about one sender's (``dst``) data: what a
    controller rule matches, in the direction of ``ackwise policy set``. Addresses are kept as
    integers (of IP version ``version``): streams are dictionary keys thousands of times per
    interval."""

    src_addr: int  # the data receiver, sending the ACKs
    sport: int
    dst_addr: int  # the data sender, receiving them
    dport: int
    version: int = 4  # 4 or 6: the same numbers are another stream in the other version

    @classmethod
    def of(cls, key: FlowKey, data_direction: int) -> AckStream:
        """The ACKs about the data that half-flow ``data_direction`` of ``key`` sends."""
        if data_direction == 0:  # the lower endpoint sends the data, the higher the ACKs
            return cls(key.addr_hi, key.port_hi, key.addr_lo, key.port_lo, key.version)
        return cls(key.addr_lo, key.port_lo, key.addr_hi, key.port_hi, key.version)

    @classmethod
    def parse(cls, src: str, sport: int, dst: str, dport: int) -> AckStream:
        """The ACKs from ``src:sport`` (the data receiver) to ``dst:dport``, IPv4 or IPv6."""
        s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
        if s.version != d.version:
            raise ValueError(f"{src} and {dst}: one stream's addresses are of one IP version")
        return cls(int(s), sport, int(d), dport, s.version)

    @property
    def src(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        return _address(self.src_addr, self.version)

    @property
    def dst(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        return _address(self.dst_addr, self.version)

    def match(self) -> PolicyMatch:
        """The exact rule for these ACKs: full-length prefixes (/32, /128) both ways and both ports."""
        return PolicyMatch(
            ipaddress.ip_network(self.src), ipaddress.ip_network(self.dst), self.sport, self.dport
        )

    @property
    def data_sender(self) -> str:
        return format_endpoint(self.dst_addr, self.dport, self.version)

    @property
    def data_receiver(self) -> str:
        return format_endpoint(self.src_addr, self.sport, self.version)

    def __str__(self) -> str:
        return f"{self.data_sender} -> {self.data_receiver}"


def _address(value: int, version: int) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.IPv4Address(value) if version == 4 else ipaddress.IPv6Address(value)


@dataclass(frozen=True, slots=True)
class FlowSample:
    """One ACK stream as the switch counts it at time ``t_s``. Counters are cumulative, as the
    registers hold them; the decision works on their deltas."""

    t_s: float
    # the data sender's half-flow
    data_end: int = 0  # highest sequence number + length sent (32-bit serial); 0: not exposed
    data_segments: int = 0
    retransmissions: int = 0  # data segments not beyond data_end
    rtt_min_us: int = 0  # switch -> receiver -> switch; 0: no measurement yet
    # the data receiver's half-flow: its ACKs
    acks_seen: int = 0
    acks_forwarded: int = 0
    acks_thinned: int = 0
    acks_absorbed: int = 0  # coalesce: folded into a waiting ACK
    dup_acks: int = 0  # ACKs kept as duplicate ACKs
    acc_d: int = 0  # acc: the switch's current d (0: not under acc)
    last_keep_reason: str = "none"
    # the port the ACKs leave by
    queue_backlog_pkts: int | None = None  # None: unknown
    ecn_marks: int | None = None  # cumulative CE marks on that port; None: unknown
    # the port the data leaves by: the share of the last interval it was busy (packets it sent x
    # service time / interval); None: unknown (no rate on that port)
    bottleneck_busy: float | None = None
    closed: bool = False


def sample_from(
    record: FlowRecord,
    half: HalfFlow,
    now_s: float,
    queue_backlog_pkts: int | None,
    ecn_marks: int | None = None,
    bottleneck_busy: float | None = None,
) -> FlowSample:
    """The sample of the ACKs about ``half``'s data: ``half`` is the data sender's half-flow of
    ``record``, the other half is the receiver's, whose ACKs these are."""
    data = half
    acks = record.halves[1 - record.halves.index(half)]
    return FlowSample(
        t_s=now_s,
        data_end=data.data_end,
        data_segments=data.data_segments,
        retransmissions=data.retransmissions,
        rtt_min_us=data.rtt_min_us,
        acks_seen=acks.acks_seen,
        acks_forwarded=acks.acks_forwarded,
        acks_thinned=acks.acks_thinned,
        acks_absorbed=acks.acks_absorbed,
        dup_acks=acks.dup_acks,
        acc_d=acks.acc_d,
        last_keep_reason=acks.last_keep_reason,
        queue_backlog_pkts=queue_backlog_pkts,
        ecn_marks=ecn_marks,
        bottleneck_busy=bottleneck_busy,
        closed=record.closed,
    )


# ---- configuration of the decision ----


@dataclass(frozen=True)
class Limits:
    """What the controller may write for the flows of one rule."""

    min_d: int = 1
    max_d: int = 16  # bounds the burst one ACK releases at a sender that does not pace
    policies: frozenset[Policy] = frozenset(CONTROLLER_POLICIES)


@dataclass(frozen=True)
class Thresholds:
    """The numbers the rules test against; the defaults and why are in config.py and the module
    docstring."""

    ramp_up_growth: float = 1.25  # rate x this in one interval: ramping up
    steady_growth: float = 1.10  # rate grew less than this ...
    steady_intervals: int = 3  # ... this many intervals in a row: saturated
    min_segments_per_interval: int = 4  # fewer: too slow to measure, ACK every segment
    idle_s: float = 1.0  # no new data this long: idle
    underused_busy: float = 0.8  # the data's port busy less than this share: underused
    saturated_busy: float = 0.95  # ... at least this share: saturated
    rate_gain: float = 0.25  # EWMA gain of the smoothed rate (RFC 6298 uses 1/8 for SRTT)
    congestion_backlog_pkts: int = 8  # ACK queue above this: congested
    congestion_clear_pkts: int = 4  # ... at or below this (and no marks) ...
    congestion_clear_intervals: int = 3  # ... this many intervals: clear
    congestion_ecn_marks: int = 1  # CE marks per interval on the ACKs' port: congested; 0: ignore
    misbehaviour_retransmissions: int = 3  # per interval
    misbehaviour_dup_acks: int = 6  # per interval: two fast-retransmit triggers (3 each)
    safe_d: int = 2
    hold_off_s: float = 2.0
    hold_off_max_s: float = 16.0
    dwell_s: float = 0.5
    param_margin: float = 0.25
    tack_l: int = 2  # TACK's defaults (Eq. 4): L = 2, beta = 4
    tack_beta: int = 4
    mss_bytes: int = MSS_BYTES


@dataclass(frozen=True)
class DecisionConfig:
    limits: Limits = field(default_factory=Limits)
    thresholds: Thresholds = field(default_factory=Thresholds)


# ---- state and decisions ----


class Phase(StrEnum):
    RAMP_UP = "ramp_up"
    SATURATED = "saturated"
    IDLE = "idle"


class Kind(StrEnum):
    """Why a decision was taken: the machine-readable half of its reason."""

    NEW = "new"
    RAMP_UP = "ramp_up"
    UNDERUSED = "underused"
    LOW_RATE = "low_rate"
    IDLE = "idle"
    SATURATED = "saturated"
    CONGESTED = "congested"
    MISBEHAVING = "misbehaving"


@dataclass(frozen=True, slots=True)
class Decision:
    params: PolicyParams
    kind: Kind
    reason: str  # e.g. "ramp-up: delivery rate +40 % per interval"

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.params.describe(), "kind": self.kind.value, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class FlowState:
    """What the controller keeps about one ACK stream between intervals."""

    prev: FlowSample | None = None
    rate_bytes_per_s: float | None = None  # smoothed
    last_rate_bytes_per_s: float | None = None  # the previous interval's, for growth; None: too low
    phase: Phase = Phase.RAMP_UP
    steady_intervals: int = 0
    last_progress_s: float | None = None  # when data_end last moved
    congested: bool = False
    congestion_reason: str = ""
    clear_intervals: int = 0
    hold_until_s: float | None = None
    hold_s: float = 0.0
    strikes: int = 0
    decision: Decision | None = None  # the current one (written, or to be written)
    changed_at_s: float | None = None


def counter_delta(new: int, old: int) -> int | None:
    """new - old of a 32-bit counter, across its wrap; None when it went back (a reset)."""
    d = seq_diff(new, old)
    return d if d >= 0 else None


# Policy parameters are immutable and few: build each once (validation is not free at 4000 flows).
@functools.lru_cache(maxsize=4096)
def _policy(policy: Policy, mss: int, d: int = 2, L: int = 2, beta: int = 4, d_cap: int = 64) -> PolicyParams:
    return PolicyParams(policy, mss=mss, d=d, L=L, beta=beta, d_cap=d_cap)


def _clamp(d: int, limits: Limits) -> int:
    return max(limits.min_d, min(limits.max_d, d))


def _every_d(d: int, config: DecisionConfig) -> PolicyParams:
    return _policy(Policy.EVERY_D, config.thresholds.mss_bytes, _clamp(d, config.limits))


def tack_d(rate_bytes_per_s: float, rtt_min_us: int, tack_l: int, beta: int, mss_bytes: int) -> float:
    """Segments per ACK under TACK: (bw / MSS) / f with f = min(bw / (L x MSS), beta / RTTmin),
    i.e. max(L, bdp / beta); L alone while RTTmin is unknown."""
    if rtt_min_us <= 0:
        return float(tack_l)
    bdp_segments = rate_bytes_per_s * rtt_min_us / 1e6 / mss_bytes
    return max(float(tack_l), bdp_segments / beta)


Target = tuple[PolicyParams, Kind, Callable[[], str]]  # the reason is only formatted when written


def _tack(rate: float, sample: FlowSample, config: DecisionConfig) -> Target:
    th, lim = config.thresholds, config.limits
    mss = th.mss_bytes
    tack_l = _clamp(th.tack_l, lim)
    beta = th.tack_beta
    rtt_us = sample.rtt_min_us
    d = tack_d(rate, rtt_us, tack_l, beta, mss)
    raised = d > lim.max_d and Policy.TACK in lim.policies
    if raised:
        # Headroom of one parameter margin: the rate may grow that much before the written beta
        # lets d pass max_d again, so that beta is not rewritten at every small rise.
        bdp_segments = rate * rtt_us / 1e6 / mss
        beta = min(BETA_MAX, math.ceil(bdp_segments * (1 + th.param_margin) / lim.max_d))
        d = tack_d(rate, rtt_us, tack_l, beta, mss)

    def reason() -> str:
        f_bytes = rate / (tack_l * mss)
        if rtt_us > 0:
            f_rtt = beta / (rtt_us / 1e6)
            formula = f"min({f_bytes:.0f}, {f_rtt:.0f}) = {min(f_bytes, f_rtt):.0f}"
        else:
            formula = f"{f_bytes:.0f} (RTTmin not measured yet)"
        note = f", beta raised to {beta} for max_d {lim.max_d}" if raised else ""
        return f"saturated: f = min(bw/(L*MSS), beta/RTTmin) = {formula} ACKs/s: d = {d:.1f}{note}"

    if Policy.TACK in lim.policies and d <= lim.max_d:
        return _policy(Policy.TACK, mss, L=tack_l, beta=beta), Kind.SATURATED, reason
    return _every_d(round(d), config), Kind.SATURATED, reason


def _current_d(decision: Decision | None, fallback: int) -> int:
    if decision is not None and decision.params.policy is Policy.EVERY_D:
        return decision.params.d
    return fallback


def _congested(state: FlowState, why: str, config: DecisionConfig) -> Target:
    lim = config.limits
    mss = config.thresholds.mss_bytes
    # The queue is this switch's: fold the ACKs in it. acc's d is bounded by the flight the switch
    # sees, a segment or two next to the receiver (measured: d stayed 1 at the receiver's switch).
    if COALESCE is not None and COALESCE in lim.policies:
        return _policy(COALESCE, mss), Kind.CONGESTED, lambda: f"ack path congested: {why}: coalesce"
    if Policy.ACC in lim.policies:
        params = _policy(Policy.ACC, mss, d_cap=min(lim.max_d, ACC_D_CAP_MAX))
        return params, Kind.CONGESTED, lambda: f"ack path congested: {why}: acc d_cap={params.d_cap}"
    # ACC's multiplicative stretch, at most once per dwell time (the gate holds it that long)
    d = _clamp(2 * _current_d(state.decision, 1), lim)
    return (
        _every_d(d, config),
        Kind.CONGESTED,
        lambda: f"ack path congested: {why}: every_d d stretched to {d}",
    )


def _safe(state: FlowState, config: DecisionConfig) -> PolicyParams:
    # Never thin more than the flow already was: a flow at d = 1 stays at 1.
    th = config.thresholds
    return _every_d(min(th.safe_d, _current_d(state.decision, th.safe_d)), config)


def _params_close(old: PolicyParams, new: PolicyParams, margin: float) -> bool:
    """Same policy, every numeric parameter within the margin of the written one."""
    if old.policy is not new.policy:
        return False
    for name in ("d", "L", "beta", "d_cap"):
        a, b = getattr(old, name), getattr(new, name)
        if a != b and abs(b - a) >= max(1.0, margin * a):
            return False
    return True


def _with(state: FlowState, **changes: Any) -> FlowState:
    """A copy with changes; dataclasses.replace is several times slower on a hot path."""
    values = {name: getattr(state, name) for name in FlowState.__slots__}  # type: ignore[attr-defined]
    values.update(changes)
    return FlowState(**values)


def _gate(
    state: FlowState, target: Target, now_s: float, config: DecisionConfig, breach: bool = False
) -> tuple[FlowState, Decision | None]:
    """Write only what changed, and not too often: the dwell time and the parameter margin. A
    ``breach`` (the written parameters let d pass max_d) is written despite the margin."""
    params, kind, reason = target
    th, min_d = config.thresholds, config.limits.min_d
    current = state.decision
    if current is not None:
        if current.params == params:
            return state, None
        if kind is not Kind.MISBEHAVING:
            if state.changed_at_s is not None and now_s - state.changed_at_s < th.dwell_s:
                return state, None
            close = _params_close(current.params, params, th.param_margin)
            if current.kind is kind and close and not breach:
                return state, None
    why = reason()
    if min_d > 1 and params.policy is Policy.EVERY_D and params.d == min_d and kind is not Kind.SATURATED:
        why += f" (min_d {min_d})"  # "ACK every segment" was meant; the limits allow no less than min_d
    decision = Decision(params, kind, why)
    return _with(state, decision=decision, changed_at_s=now_s), decision


@dataclass(frozen=True, slots=True)
class Interval:
    """What happened between the flow's last sample and this one (measured, not yet judged)."""

    now_s: float
    dt_s: float
    new_bytes: int
    retransmissions: int
    dup_acks: int
    marks: int | None  # ECN marks on the ACKs' port; None where the switch has no counter
    rate: float  # bytes/s over the interval
    segments: float  # new data, in MSS
    low: bool  # fewer segments than a rate can be told from

    @property
    def interval_ms(self) -> int:
        return round(self.dt_s * 1000)


@dataclass(frozen=True, slots=True)
class Situation:
    """Everything the rules judge: the interval, the flow's state before and after it, and what
    the measurement stages concluded (phase, congestion, misbehaviour, hold-off)."""

    before: FlowState
    after: FlowState
    sample: FlowSample
    interval: Interval
    config: DecisionConfig
    growth: float | None  # the rate over the last interval's, where both are measurable
    idle_for_s: float
    underused: bool  # the bottleneck port's own measure says so
    misbehaving: str  # why, or ""
    holding: bool  # a hold-off was running before this interval


HOLD = "hold"  # a rule's answer for "keep what is written, decide nothing"
Rule = Callable[[Situation], "Target | str | None"]


def _measure(state: FlowState, sample: FlowSample, th: Thresholds) -> Interval | None:
    """The interval since the last sample; None on the first sample, or when a counter went back
    (a switch restart, a recreated record)."""
    prev = state.prev
    if prev is None:
        return None
    segments_delta = counter_delta(sample.data_segments, prev.data_segments)
    retx = counter_delta(sample.retransmissions, prev.retransmissions)
    dups = counter_delta(sample.dup_acks, prev.dup_acks)
    acks = counter_delta(sample.acks_seen, prev.acks_seen)
    if segments_delta is None or retx is None or dups is None or acks is None:
        return None
    if prev.data_end and sample.data_end:
        new_bytes = counter_delta(sample.data_end, prev.data_end)  # never back in one flow
        if new_bytes is None:
            return None
    else:  # data_end not exposed: count new segments as full-sized
        new_bytes = max(0, segments_delta - retx) * th.mss_bytes
    marks = None
    if sample.ecn_marks is not None and prev.ecn_marks is not None:
        marks = max(0, sample.ecn_marks - prev.ecn_marks)  # a counter reset reads as no marks
    dt_s = sample.t_s - prev.t_s
    segments = new_bytes / th.mss_bytes
    return Interval(
        sample.t_s, dt_s, new_bytes, retx, dups, marks, new_bytes / dt_s, segments,
        segments < th.min_segments_per_interval,
    )  # fmt: skip


def _first_sample(
    state: FlowState, sample: FlowSample, config: DecisionConfig
) -> tuple[FlowState, Decision | None]:
    """Measure afresh; keep the decision written and the hold-off (a switch restart forgets
    nothing about misbehaviour). A flow seen anew gets every segment ACKed until its rate is known."""
    fresh = FlowState(
        prev=sample,
        last_progress_s=sample.t_s,
        hold_until_s=state.hold_until_s,
        hold_s=state.hold_s,
        strikes=state.strikes,
        decision=state.decision,
        changed_at_s=state.changed_at_s,
    )
    if fresh.hold_until_s is not None and sample.t_s < fresh.hold_until_s:
        return fresh, None
    target: Target = (
        _every_d(1, config),
        Kind.NEW,
        lambda: "new flow: ACK every segment until its rate is known",
    )
    return _gate(fresh, target, sample.t_s, config)


def _phase(
    state: FlowState, iv: Interval, sample: FlowSample, th: Thresholds
) -> tuple[Phase, int, float, bool]:
    """(phase, steady intervals, smoothed rate, underused) after this interval: rules 4-6's input."""
    smoothed = (
        iv.rate
        if state.rate_bytes_per_s is None
        else state.rate_bytes_per_s + th.rate_gain * (iv.rate - state.rate_bytes_per_s)
    )
    growth = _growth(state, iv)
    phase, steady = state.phase, state.steady_intervals
    if iv.new_bytes == 0:
        if iv.now_s - (state.last_progress_s or iv.now_s) >= th.idle_s:
            phase, steady = Phase.IDLE, 0
    elif phase is Phase.IDLE or iv.low:
        phase, steady = Phase.RAMP_UP, 0
    elif growth is None:
        steady = 0
    elif growth >= th.ramp_up_growth:
        phase, steady = Phase.RAMP_UP, 0
    elif phase is Phase.RAMP_UP:
        steady = steady + 1 if growth < th.steady_growth else 0
        if steady >= th.steady_intervals:
            # The average lags far behind a rate that just stopped growing: restart it from now.
            phase, smoothed = Phase.SATURATED, iv.rate
    # The bottleneck's own measure, where the switch has one, overrides the growth test.
    busy = sample.bottleneck_busy
    measurable = busy is not None and iv.new_bytes > 0 and not iv.low
    underused = measurable and busy < th.underused_busy  # type: ignore[operator]
    if underused:
        phase, steady = Phase.RAMP_UP, 0
    elif measurable and busy >= th.saturated_busy:  # type: ignore[operator]
        if phase is not Phase.SATURATED:
            phase, smoothed = Phase.SATURATED, iv.rate
        steady = 0
    return phase, steady, smoothed, underused


def _growth(state: FlowState, iv: Interval) -> float | None:
    return iv.rate / state.last_rate_bytes_per_s if state.last_rate_bytes_per_s and not iv.low else None


def _ack_path(state: FlowState, iv: Interval, sample: FlowSample, th: Thresholds) -> tuple[bool, str, int]:
    """(congested, why, clear intervals): rule 3's input, with its hysteresis."""
    assert state.prev is not None
    backlog = sample.queue_backlog_pkts
    congested, reason, clear = state.congested, state.congestion_reason, state.clear_intervals
    marked = th.congestion_ecn_marks > 0 and (iv.marks or 0) >= th.congestion_ecn_marks
    if backlog is not None and backlog > th.congestion_backlog_pkts:
        return True, f"backlog {backlog} > {th.congestion_backlog_pkts} packets", 0
    if marked:
        return True, f"{iv.marks} ECN marks in {iv.interval_ms} ms", 0
    if congested:
        # Coalescing keeps the queue short by folding ACKs into the one waiting there: while it
        # still folds some, the ACKs still come faster than the queue drains, and a short queue
        # is the remedy's doing, not the end of the congestion (measured: without this, the
        # decision flapped between coalesce and every_d d=1 every second on the Asymmetric link).
        absorbing = state.prev.acks_absorbed != sample.acks_absorbed
        quiet = (backlog is None or backlog <= th.congestion_clear_pkts) and not iv.marks and not absorbing
        clear = clear + 1 if quiet else 0
        if clear >= th.congestion_clear_intervals:
            congested, reason, clear = False, "", 0
    return congested, reason, clear


def _misbehaviour(iv: Interval, th: Thresholds) -> str:
    """Why the flow misbehaves in this interval (rule 1), or ""."""
    if iv.retransmissions >= th.misbehaviour_retransmissions:
        return f"{iv.retransmissions} retransmissions in {iv.interval_ms} ms"
    if iv.dup_acks >= th.misbehaviour_dup_acks:
        return f"{iv.dup_acks} duplicate ACKs in {iv.interval_ms} ms"
    if iv.retransmissions > 0 and iv.new_bytes == 0:
        return f"retransmission with no new data in {iv.interval_ms} ms (a timeout?)"
    return ""


def _hold_off(
    state: FlowState, misbehaving: str, now: float, th: Thresholds
) -> tuple[float | None, float, int]:
    """(hold until, hold length, strikes): a new episode starts a hold-off, misbehaviour during
    one extends it, a new one soon after the last doubles it."""
    hold_until, hold_s, strikes = state.hold_until_s, state.hold_s, state.strikes
    if not misbehaving:
        return hold_until, hold_s, strikes
    if hold_until is not None and now < hold_until:
        return max(hold_until, now + hold_s), hold_s, strikes
    recent = hold_until is not None and now - hold_until < th.hold_off_max_s
    strikes = strikes + 1 if recent else 1
    hold_s = min(th.hold_off_s * 2 ** (strikes - 1), th.hold_off_max_s)
    return now + hold_s, hold_s, strikes


# ---- the rules (module docstring), first that answers decides ----


def _rule_misbehaving(s: Situation) -> Target | None:
    if not s.misbehaving or s.holding:
        return None
    safe, why, held = _safe(s.before, s.config), s.misbehaving, s.after.hold_s
    return safe, Kind.MISBEHAVING, lambda: f"misbehaving: {why}: every_d d={safe.d} for {held:g} s"


def _rule_holding_off(s: Situation) -> str | None:
    until = s.after.hold_until_s
    return HOLD if until is not None and s.interval.now_s < until else None  # the safe policy stays


def _rule_congested(s: Situation) -> Target | None:
    return _congested(s.before, s.after.congestion_reason, s.config) if s.after.congested else None


def _rule_idle(s: Situation) -> Target | None:
    if s.after.phase is not Phase.IDLE:
        return None
    idle = s.idle_for_s
    return (
        _every_d(1, s.config),
        Kind.IDLE,
        lambda: f"idle: no new data for {idle:.1f} s: ACK every segment when it restarts",
    )


def _rule_low_rate(s: Situation) -> Target | None:
    iv, th = s.interval, s.config.thresholds
    if not (iv.low and iv.new_bytes > 0):
        return None
    return (
        _every_d(1, s.config),
        Kind.LOW_RATE,
        lambda: (
            f"low rate: {iv.segments:.1f} segments in {iv.interval_ms} ms < "
            f"{th.min_segments_per_interval}: ACK every segment"
        ),
    )


def _rule_underused(s: Situation) -> Target | None:
    if not s.underused:
        return None
    busy, th, ms = s.sample.bottleneck_busy, s.config.thresholds, s.interval.interval_ms
    assert busy is not None
    return (
        _every_d(1, s.config),
        Kind.UNDERUSED,
        lambda: (
            f"bottleneck underused: its port busy {100 * busy:.0f} % of {ms} ms "
            f"< {100 * th.underused_busy:.0f} %: ACK every segment"
        ),
    )


def _rule_ramp_up(s: Situation) -> Target | None:
    if s.after.phase is not Phase.RAMP_UP:
        return None
    th, growth, steady = s.config.thresholds, s.growth, s.after.steady_intervals
    if growth is not None and growth >= th.ramp_up_growth:
        return (
            _every_d(1, s.config),
            Kind.RAMP_UP,
            lambda: f"ramp-up: delivery rate {100 * (growth - 1):+.0f} % per interval",
        )
    return (
        _every_d(1, s.config),
        Kind.RAMP_UP,
        lambda: f"ramp-up: rate not steady yet ({steady} of {th.steady_intervals} steady intervals)",
    )


def _rule_saturated(s: Situation) -> Target:
    assert s.after.rate_bytes_per_s is not None
    return _tack(s.after.rate_bytes_per_s, s.sample, s.config)


RULES: tuple[tuple[str, Rule], ...] = (
    ("misbehaving", _rule_misbehaving),
    ("holding off", _rule_holding_off),
    ("ack path congested", _rule_congested),
    ("idle", _rule_idle),
    ("low rate", _rule_low_rate),
    ("bottleneck underused", _rule_underused),
    ("ramp-up", _rule_ramp_up),
    ("saturated", _rule_saturated),
)


def _tack_breach(s: Situation) -> bool:
    """The written tack's beta lets d pass max_d at the current rate: written despite the margin."""
    written = s.before.decision.params if s.before.decision else None
    if written is None or written.policy is not Policy.TACK or s.after.rate_bytes_per_s is None:
        return False
    th = s.config.thresholds
    d_now = tack_d(s.after.rate_bytes_per_s, s.sample.rtt_min_us, written.L, written.beta, th.mss_bytes)
    return d_now > s.config.limits.max_d


def decide(state: FlowState, sample: FlowSample, config: DecisionConfig) -> tuple[FlowState, Decision | None]:
    """The next state of the flow, and the decision to write if the policy changes."""
    th = config.thresholds
    if state.prev is not None and sample.t_s <= state.prev.t_s:
        return state, None  # not newer than the last sample: nothing happened in between
    iv = _measure(state, sample, th)
    if iv is None:
        return _first_sample(state, sample, config)
    phase, steady, smoothed, underused = _phase(state, iv, sample, th)
    congested, congestion_reason, clear = _ack_path(state, iv, sample, th)
    misbehaving = _misbehaviour(iv, th)
    holding = state.hold_until_s is not None and iv.now_s < state.hold_until_s
    hold_until, hold_s, strikes = _hold_off(state, misbehaving, iv.now_s, th)
    last_progress = iv.now_s if iv.new_bytes > 0 else (state.last_progress_s or iv.now_s)
    after = FlowState(
        prev=sample,
        rate_bytes_per_s=smoothed,
        last_rate_bytes_per_s=None if iv.low else iv.rate,
        phase=phase,
        steady_intervals=steady,
        last_progress_s=last_progress,
        congested=congested,
        congestion_reason=congestion_reason,
        clear_intervals=clear,
        hold_until_s=hold_until,
        hold_s=hold_s,
        strikes=strikes,
        decision=state.decision,
        changed_at_s=state.changed_at_s,
    )
    situation = Situation(
        state,
        after,
        sample,
        iv,
        config,
        _growth(state, iv),
        iv.now_s - last_progress,
        underused,
        misbehaving,
        holding,
    )
    for _, rule in RULES:
        target = rule(situation)
        if target == HOLD:
            return after, None
        if target is not None:
            breach = rule is _rule_saturated and _tack_breach(situation)
            return _gate(after, target, iv.now_s, config, breach)  # type: ignore[arg-type]
    raise AssertionError("the last rule always answers")
