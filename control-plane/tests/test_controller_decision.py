"""The controller's pure decision on synthetic flow traces: which policy, with which parameters,
at which step, and why."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import pytest

from ackwise.controller.decision import (
    COALESCE,
    AckStream,
    Decision,
    DecisionConfig,
    FlowSample,
    FlowState,
    Kind,
    Limits,
    Phase,
    Thresholds,
    decide,
    sample_from,
    tack_d,
)
from ackwise.controller.loop import exact_stream
from ackwise.features.thinning import FlowRecord, HalfFlow
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.policies import MSS_BYTES, Policy

DT_S = 0.125  # a binary fraction: times add up exactly, so dwell and hold-off edges are exact
RTT_US = 40_000
STEADY = 86  # segments per interval: 86 x 1448 B / 0.125 s = 996 kB/s, about 8 Mbit/s


@dataclass
class Trace:
    """Cumulative counters of one ACK stream, advanced one interval at a time."""

    t_s: float = 0.0
    data_end: int = 2**32 - 10 * MSS_BYTES  # wraps during the trace
    data_segments: int = 0
    retransmissions: int = 0
    dup_acks: int = 0
    acks_seen: int = 0
    ecn_marks: int = 0
    acks_absorbed: int = 0
    rtt_min_us: int = RTT_US
    samples: list[FlowSample] = field(default_factory=list)

    def step(
        self,
        segments: int,
        *,
        retx: int = 0,
        dups: int = 0,
        backlog: int | None = None,
        marks: int = 0,
        busy: float | None = None,
        absorbed: int = 0,
        dt_s: float = DT_S,
    ) -> FlowSample:
        self.t_s += dt_s
        self.data_end = (self.data_end + segments * MSS_BYTES) % 2**32
        self.data_segments += segments + retx
        self.retransmissions += retx
        self.dup_acks += dups
        self.acks_seen += segments // 2 + dups
        self.ecn_marks += marks
        self.acks_absorbed += absorbed
        sample = FlowSample(
            t_s=self.t_s,
            data_end=self.data_end,
            data_segments=self.data_segments,
            retransmissions=self.retransmissions,
            rtt_min_us=self.rtt_min_us,
            acks_seen=self.acks_seen,
            dup_acks=self.dup_acks,
            acks_absorbed=self.acks_absorbed,
            queue_backlog_pkts=backlog,
            ecn_marks=self.ecn_marks,
            bottleneck_busy=busy,
        )
        self.samples.append(sample)
        return sample


def run(
    samples: list[FlowSample], config: DecisionConfig | None = None, state: FlowState | None = None
) -> tuple[FlowState, list[tuple[float, Decision]]]:
    """Feed the samples; the decisions written, with their times."""
    config = config or DecisionConfig()
    state = state or FlowState()
    written = []
    for sample in samples:
        state, decision = decide(state, sample, config)
        if decision is not None:
            written.append((sample.t_s, decision))
    return state, written


def saturated_trace(intervals_at_steady: int = 6) -> Trace:
    """A flow that doubles for 4 intervals, then holds STEADY segments per interval."""
    trace = Trace()
    for segments in (10, 20, 40, 80):
        trace.step(segments)
    for _ in range(intervals_at_steady):
        trace.step(STEADY)
    return trace


def described(written: list[tuple[float, Decision]]) -> list[tuple[float, str, str]]:
    return [(t, d.kind.value, d.params.describe()) for t, d in written]


# ---- the bottleneck's own measure (a port with a rate on this switch) ----


def test_a_steady_flow_on_an_underused_bottleneck_keeps_every_segment_acknowledged() -> None:
    """An application-limited flow: a steady 20 segments per interval, which the growth test alone
    takes for saturation (TACK), while its bottleneck port is busy 30 % of the time: every_d d=1
    all along, and the reason says why."""
    steady_only = Trace()
    for _ in range(12):
        steady_only.step(20)
    _, written = run(steady_only.samples)
    assert [d.kind for _, d in written] == [Kind.NEW, Kind.SATURATED]  # without the measure

    trace = Trace()
    for _ in range(12):
        trace.step(20, busy=0.3)
    state, written = run(trace.samples)
    assert described(written) == [(DT_S, "new", "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200")]
    assert state.decision is not None and state.decision.params.d == 1
    probe = Trace(**{k: v for k, v in vars(trace).items() if k != "samples"})
    _, decision = decide(replace(state, decision=None), probe.step(20, busy=0.3), DecisionConfig())
    assert decision is not None and decision.kind is Kind.UNDERUSED
    assert decision.reason == "bottleneck underused: its port busy 30 % of 125 ms < 80 %: ACK every segment"


def test_the_same_flow_on_a_full_bottleneck_is_thinned_at_once() -> None:
    """Still growing by more than x1.25 per interval, so the growth test would say ramp-up; its
    port busy 97 % from the third interval: saturated, TACK once the first decision has stood its
    dwell time (0.5 s after it)."""
    trace = Trace()
    for segments in (10, 20, 40, 80, 160, 320):
        trace.step(segments, busy=0.97 if segments >= 40 else 0.5)
    _, written = run(trace.samples)
    assert [(t, d.kind.value, d.params.policy.value) for t, d in written] == [
        (DT_S, "new", "every_d"),
        (DT_S + 0.5, "saturated", "tack"),
    ]


def test_between_the_thresholds_the_growth_test_decides() -> None:
    """Busy 90 %: neither underused nor full: saturation by growth, as without the measure."""
    with_busy, without = Trace(), Trace()
    for segments in (10, 20, 40, 80, *[STEADY] * 6):
        with_busy.step(segments, busy=0.9)
        without.step(segments)
    assert described(run(with_busy.samples)[1]) == described(run(without.samples)[1])


# ---- ramp-up ----


def test_ramp_up_keeps_every_segment_acknowledged() -> None:
    """Doubling per interval (slow start at an RTT of one interval): every_d d=1 from the first
    sample, and nothing rewritten while the rate keeps growing."""
    trace = Trace()
    config = DecisionConfig()
    state = FlowState()
    phases = []
    written = []
    for segments in (5, 10, 20, 40, 80, 160, 320):
        state, decision = decide(state, trace.step(segments), config)
        phases.append(state.phase)
        if decision is not None:
            written.append(decision)
    assert [d.kind for d in written] == [Kind.NEW]
    assert written[0].params.policy is Policy.EVERY_D and written[0].params.d == 1
    assert phases == [Phase.RAMP_UP] * 7
    assert state.decision is not None and state.decision.params.d == 1
    # the reason of a ramp-up decision names the growth
    growing = replace(state, decision=None)
    _, decision = decide(growing, trace.step(640), config)
    assert decision is not None and decision.reason == "ramp-up: delivery rate +100 % per interval"


def test_rate_across_the_sequence_wrap() -> None:
    """data_end starts 10 segments below 2**32: deltas across the wrap still count forward."""
    trace = Trace()
    state, _ = run([trace.step(8), trace.step(12)])
    assert state.rate_bytes_per_s == pytest.approx(12 * MSS_BYTES / DT_S)


def test_rate_from_segments_when_data_end_is_not_exposed() -> None:
    samples = [replace(s, data_end=0) for s in saturated_trace(0).samples]
    state, _ = run(samples)
    assert state.last_rate_bytes_per_s == pytest.approx(80 * MSS_BYTES / DT_S)


# ---- saturation: TACK ----


def test_saturation_gives_tack_with_the_expected_frequency() -> None:
    """Steady at 996 kB/s with RTTmin 40 ms: bdp = 27.5 segments; f = min(bw/(L*MSS),
    beta/RTTmin) = min(344, 100) = 100 ACKs/s; d = bdp / beta = 6.9 <= max_d 16: tack L=2 beta=4."""
    trace = saturated_trace()
    state, written = run(trace.samples)
    assert described(written) == [
        (0.125, "new", "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200"),
        # steady from 0.625 (growth 86/80 = 1.075 < 1.10), the third steady interval at 0.875
        (0.875, "saturated", "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200"),
    ]
    reason = written[1][1].reason
    assert reason == "saturated: f = min(bw/(L*MSS), beta/RTTmin) = min(344, 100) = 100 ACKs/s: d = 6.9"
    assert state.phase is Phase.SATURATED


def test_saturation_bounds_d_by_raising_beta() -> None:
    """A larger bdp: RTTmin 200 ms makes bdp 138 segments, d = 34 > max_d 16. beta is raised so
    that d stays within max_d with a margin's headroom: ceil(138 x 1.25 / 16) = 11."""
    trace = saturated_trace()
    samples = [replace(s, rtt_min_us=200_000) for s in trace.samples]
    _, written = run(samples)
    params = written[-1][1].params
    assert (params.policy, params.L, params.beta) == (Policy.TACK, 2, 11)
    rate = STEADY * MSS_BYTES / DT_S
    assert tack_d(rate, 200_000, params.L, params.beta, MSS_BYTES) <= 16
    assert "beta raised to 11 for max_d 16" in written[-1][1].reason


def test_saturation_without_tack_allowed_uses_every_d_with_tacks_d() -> None:
    config = DecisionConfig(Limits(policies=frozenset({Policy.EVERY_D, Policy.ACC})))
    _, written = run(saturated_trace().samples, config)
    assert written[-1][1].params.describe() == "every_d mss=1448 d=7 idle_ms=1000 hold_ms=200"  # round(6.9)


def test_saturation_without_rtt_min_counts_bytes_only() -> None:
    samples = [replace(s, rtt_min_us=0) for s in saturated_trace().samples]
    _, written = run(samples)
    assert written[-1][1].params.L == 2
    assert "RTTmin not measured yet" in written[-1][1].reason


# ---- the ACK path: coalesce, ACC ----


def test_congested_ack_path_switches_to_coalesce_after_the_dwell_time() -> None:
    """Backlog 12 > 8 on the ACKs' port from 1.375 s: the congested queue is this switch's own, so
    coalesce (fold the ACKs in it), written at once, as the tack decision (0.875 s) is 0.5 s old."""
    trace = saturated_trace()
    for _ in range(5):
        trace.step(STEADY, backlog=12)
    state, written = run(trace.samples)
    assert described(written)[-1] == (1.375, "congested", "coalesce mss=1448 idle_ms=1000")
    assert written[-1][1].reason == "ack path congested: backlog 12 > 8 packets: coalesce"
    assert state.congested


def test_congested_ack_path_without_coalesce_gets_acc() -> None:
    config = DecisionConfig(Limits(policies=frozenset({Policy.EVERY_D, Policy.TACK, Policy.ACC})))
    trace = saturated_trace()
    for _ in range(5):
        trace.step(STEADY, backlog=12)
    _, written = run(trace.samples, config)
    assert described(written)[-1] == (
        1.375,
        "congested",
        "acc mss=1448 d_cap=16 signals=ce,ece,queue rtt_min_us=0 idle_ms=1000 hold_ms=200",
    )
    assert written[-1][1].reason == "ack path congested: backlog 12 > 8 packets: acc d_cap=16"


def test_congestion_clears_after_quiet_intervals_only() -> None:
    """Between the thresholds (6: neither above 8 nor at most 4) the flow stays congested; three
    intervals at or below 4 clear it, and TACK comes back."""
    trace = saturated_trace()
    for backlog in (12, 12, 12, 12, 6, 6, 3, 3, 6, 3, 3, 3):
        trace.step(STEADY, backlog=backlog)
    _, written = run(trace.samples)
    kinds = [(t, d.kind.value) for t, d in written]
    # quiet at 2.125, 2.25; 6 at 2.375 starts the count over; quiet 2.5, 2.625, 2.75: clear
    assert kinds == [(0.125, "new"), (0.875, "saturated"), (1.375, "congested"), (2.75, "saturated")]


def test_congestion_holds_while_coalescing_still_folds_acks() -> None:
    """Coalesce keeps the queue short: the backlog falls to 1 at once, but while ACKs are still
    folded (20 per interval) the path stays congested; three intervals with none folded clear it."""
    trace = saturated_trace()
    for _ in range(5):
        trace.step(STEADY, backlog=12)
    for _ in range(10):
        trace.step(STEADY, backlog=1, absorbed=20)
    state, written = run(trace.samples)
    assert [d.kind.value for _, d in written] == ["new", "saturated", "congested"]
    assert state.congested
    for _ in range(3):
        trace.step(STEADY, backlog=1, absorbed=0)
    _, written = run(trace.samples)
    assert [d.kind.value for _, d in written] == ["new", "saturated", "congested", "saturated"]


def test_ecn_marks_on_the_ack_port_count_as_congestion() -> None:
    trace = saturated_trace(intervals_at_steady=8)
    trace.step(STEADY, marks=5)
    _, written = run(trace.samples)
    assert written[-1][1].kind is Kind.CONGESTED
    assert written[-1][1].reason.startswith("ack path congested: 5 ECN marks in 125 ms")


def test_congestion_with_every_d_only_stretches_d_per_dwell() -> None:
    """Without acc or coalesce, d doubles (ACC's multiplicative increase) at most once per dwell
    time, up to max_d."""
    config = DecisionConfig(Limits(max_d=64, policies=frozenset({Policy.EVERY_D})))
    trace = saturated_trace()
    for _ in range(16):
        trace.step(STEADY, backlog=20)
    _, written = run(trace.samples, config)
    ds = [(t, d.params.d) for t, d in written if d.kind is Kind.CONGESTED]
    # 2 x 56 = 112 is clamped to 64, within 25 % of 56: the margin keeps 56
    assert ds == [(1.375, 14), (1.875, 28), (2.375, 56)]


@pytest.mark.skipif(COALESCE is None, reason="this ackwise has no coalesce policy yet")
def test_congestion_with_coalesce_but_not_acc() -> None:  # pragma: no cover - depends on the policy set
    assert COALESCE is not None
    config = DecisionConfig(Limits(policies=frozenset({Policy.EVERY_D, COALESCE})))
    trace = saturated_trace()
    for _ in range(5):
        trace.step(STEADY, backlog=12)
    _, written = run(trace.samples, config)
    assert written[-1][1].params.policy is COALESCE


# ---- misbehaviour: the safe policy ----


def test_retransmissions_give_the_safe_policy_at_once_then_hold_off_then_back() -> None:
    """Three retransmissions in one interval: every_d d=2 immediately (no dwell), held 2 s while the
    flow looks fine again, then TACK again."""
    trace = saturated_trace()
    trace.step(STEADY, retx=3)  # t = 1.375
    for _ in range(20):
        trace.step(STEADY)
    _, written = run(trace.samples)
    assert described(written)[2:] == [
        (1.375, "misbehaving", "every_d mss=1448 d=2 idle_ms=1000 hold_ms=200"),
        (3.375, "saturated", "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200"),
    ]
    assert written[2][1].reason == "misbehaving: 3 retransmissions in 125 ms: every_d d=2 for 2 s"


def test_safe_policy_ignores_the_dwell_time() -> None:
    trace = saturated_trace(intervals_at_steady=3)  # tack written at 0.875, the last sample
    trace.step(STEADY, dups=6)  # 0.125 s later
    _, written = run(trace.samples)
    assert written[-1][0] == 1.0
    assert written[-1][1].reason == "misbehaving: 6 duplicate ACKs in 125 ms: every_d d=2 for 2 s"


def test_a_stall_with_a_retransmission_is_misbehaviour() -> None:
    trace = saturated_trace()
    trace.step(0, retx=1)
    _, written = run(trace.samples)
    assert written[-1][1].kind is Kind.MISBEHAVING
    assert "retransmission with no new data in 125 ms (a timeout?)" in written[-1][1].reason


def test_one_retransmission_while_data_flows_is_ordinary_tcp() -> None:
    trace = saturated_trace()
    trace.step(STEADY, retx=1)
    trace.step(STEADY, dups=3)
    _, written = run(trace.samples)
    assert [d.kind for _, d in written] == [Kind.NEW, Kind.SATURATED]


def test_the_safe_policy_never_thins_more_than_the_flow_had() -> None:
    """Loss while ramping up (d = 1): nothing to write, but the hold-off keeps TACK away for 2 s."""
    trace = Trace()
    for segments in (10, 20, 40):
        trace.step(segments)
    trace.step(80, retx=4)  # t = 0.5
    for _ in range(20):
        trace.step(STEADY)
    state, written = run(trace.samples)
    assert [(t, d.kind.value) for t, d in written] == [(0.125, "new"), (2.5, "saturated")]
    assert state.strikes == 1


def test_repeat_offenders_are_held_off_twice_as_long() -> None:
    trace = saturated_trace()
    trace.step(STEADY, retx=3)  # 1.375: held 2 s, until 3.375
    for _ in range(20):
        trace.step(STEADY)  # back to tack at 3.375
    trace.step(STEADY, retx=3)  # 4.0: within 16 s of the hold ending: 4 s
    for _ in range(40):
        trace.step(STEADY)
    state, written = run(trace.samples)
    misbehaving = [(t, d.reason) for t, d in written if d.kind is Kind.MISBEHAVING]
    assert misbehaving[1] == (4.0, "misbehaving: 3 retransmissions in 125 ms: every_d d=2 for 4 s")
    assert written[-1][0] == 8.0 and written[-1][1].kind is Kind.SATURATED
    assert state.strikes == 2


def test_misbehaviour_during_the_hold_off_extends_it() -> None:
    trace = saturated_trace()
    trace.step(STEADY, retx=3)  # 1.375, until 3.375
    for _ in range(7):
        trace.step(STEADY)
    trace.step(STEADY, retx=5)  # 2.375: extended to 4.375, no new write
    for _ in range(20):
        trace.step(STEADY)
    _, written = run(trace.samples)
    assert [(t, d.kind.value) for t, d in written][2:] == [(1.375, "misbehaving"), (4.375, "saturated")]


# ---- hysteresis ----


def test_no_flapping_around_the_backlog_threshold() -> None:
    """A backlog alternating just above and below 8 enters congestion once and never clears (7
    is not quiet: it is above the clear threshold 4); 9 and 3 alternating never has three quiet
    intervals in a row."""
    for pattern in ((9, 7), (9, 3)):
        trace = saturated_trace()
        for i in range(30):
            trace.step(STEADY, backlog=pattern[i % 2])
        _, written = run(trace.samples)
        assert [d.kind for _, d in written] == [Kind.NEW, Kind.SATURATED, Kind.CONGESTED], pattern


def test_no_flapping_around_the_growth_threshold() -> None:
    """Saturated, the rate wobbling +20 % / -17 %: below the ramp-up threshold (x1.25), the flow stays
    saturated, and beta is not rewritten for the wobble."""
    trace = saturated_trace()
    for i in range(30):
        trace.step(STEADY if i % 2 else round(STEADY * 1.2))
    _, written = run(trace.samples)
    assert [d.kind for _, d in written] == [Kind.NEW, Kind.SATURATED]


def test_growth_between_the_thresholds_does_not_count_as_steady() -> None:
    """+15 % per interval is neither ramp-up (x1.25) nor steady (< x1.10): no saturation."""
    trace = Trace()
    segments = 20.0
    for _ in range(12):
        trace.step(round(segments))
        segments *= 1.15
    state, written = run(trace.samples)
    assert state.phase is Phase.RAMP_UP
    assert [d.kind for _, d in written] == [Kind.NEW]


def test_parameters_move_only_by_the_margin() -> None:
    """tack's beta as the rate drifts (RTTmin 200 ms, so beta is bound by max_d): a drift that
    keeps beta within 25 % of the written one is not written; a larger one is."""
    trace = saturated_trace()
    for segments in (90, 94, 98, 102, 106, 110, 114, 118, 122, 126, 130, 134, 138, 142):
        for _ in range(4):
            trace.step(segments)
    samples = [replace(s, rtt_min_us=200_000) for s in trace.samples]
    _, written = run(samples)
    betas = [d.params.beta for _, d in written if d.kind is Kind.SATURATED]
    assert betas[0] == 11
    assert all(abs(b - a) >= max(1, 0.25 * a) for a, b in itertools.pairwise(betas))
    assert 2 <= len(betas) < 5  # 14 drifts of +4 segments: 3 writes
    # and between writes, the written beta never let d pass max_d at the smoothed rate
    state = FlowState()
    for sample in samples:
        state, _ = decide(state, sample, DecisionConfig())
        written_params = state.decision.params if state.decision else None
        if state.phase is Phase.SATURATED and written_params and written_params.policy is Policy.TACK:
            rate = state.rate_bytes_per_s or 0.0
            assert tack_d(rate, 200_000, written_params.L, written_params.beta, MSS_BYTES) <= 16


def test_dwell_time_delays_a_change() -> None:
    """A flow steady from its second interval would be saturated at 0.5 s, but the new-flow
    decision was written at 0.125: the next change waits until 0.625."""
    trace = Trace()
    for _ in range(8):
        trace.step(STEADY)
    _, written = run(trace.samples)
    assert [(t, d.kind.value) for t, d in written] == [(0.125, "new"), (0.625, "saturated")]


# ---- idle, low rate, restarts ----


def test_idle_then_restart_acknowledges_every_segment() -> None:
    trace = saturated_trace()
    for _ in range(9):
        trace.step(0)  # no new data after 1.25: idle 1 s at 2.25
    trace.step(10)
    trace.step(20)
    state, written = run(trace.samples)
    assert [(t, d.kind.value, d.params.d) for t, d in written][2:] == [(2.25, "idle", 1)]
    assert state.phase is Phase.RAMP_UP


def test_a_slow_flow_is_never_thinned() -> None:
    trace = Trace()
    for _ in range(30):
        trace.step(2)
    state, written = run(trace.samples)
    assert [d.kind for _, d in written] == [Kind.NEW]
    assert state.phase is Phase.RAMP_UP
    _, decision = decide(replace(state, decision=None), trace.step(2), DecisionConfig())
    assert decision is not None
    assert decision.reason == "low rate: 2.0 segments in 125 ms < 4: ACK every segment"


def test_counters_going_back_start_the_flow_over() -> None:
    """A switch restart (or a recreated record) zeroes the counters: the flow is measured afresh
    and gets the new-flow policy, after the dwell time."""
    trace = saturated_trace()
    state, _ = run(trace.samples)
    restarted = Trace(t_s=trace.t_s, data_end=5000)
    state, written = run([restarted.step(3), restarted.step(3), restarted.step(3)], state=state)
    assert [(t, d.kind.value, d.params.d) for t, d in written] == [(1.375, "new", 1)]


def test_min_d_applies_to_ramp_up_too() -> None:
    config = DecisionConfig(Limits(min_d=2))
    _, written = run([Trace().step(10)], config)
    decision = written[0][1]
    assert decision.params.d == 2
    assert decision.reason.endswith("(min_d 2)")


def test_stale_samples_change_nothing() -> None:
    trace = Trace()
    first = trace.step(10)
    state, _ = decide(FlowState(), first, DecisionConfig())
    same, decision = decide(state, first, DecisionConfig())
    assert same is state and decision is None


# ---- expected parameters at each step ----

STEPS = [
    # (segments, retransmissions, backlog) -> (phase after, written policy or None)
    ((10, 0, None), ("ramp_up", "every_d d=1")),
    ((20, 0, None), ("ramp_up", None)),
    ((40, 0, None), ("ramp_up", None)),
    ((80, 0, None), ("ramp_up", None)),
    ((86, 0, None), ("ramp_up", None)),
    ((86, 0, None), ("ramp_up", None)),
    ((86, 0, None), ("saturated", "tack L=2 beta=4")),
    ((86, 0, 2), ("saturated", None)),
    ((86, 0, 12), ("saturated", None)),  # congested, but within the dwell time of 0.875
    ((86, 0, 12), ("saturated", None)),
    ((86, 0, 12), ("saturated", "coalesce")),  # 1.375: 0.5 s after
    ((86, 3, 12), ("saturated", "every_d d=2")),  # misbehaviour beats congestion
    ((86, 0, 0), ("saturated", None)),  # hold-off
]


def test_expected_parameters_at_each_step() -> None:
    trace = Trace()
    state = FlowState()
    config = DecisionConfig()
    for (segments, retx, backlog), (phase, policy) in STEPS:
        state, decision = decide(state, trace.step(segments, retx=retx, backlog=backlog), config)
        got = None
        if decision is not None:
            p = decision.params
            got = {
                Policy.EVERY_D: f"every_d d={p.d}",
                Policy.TACK: f"tack L={p.L} beta={p.beta}",
                Policy.ACC: f"acc d_cap={p.d_cap}",
                COALESCE: "coalesce",
            }[p.policy]
        assert (state.phase.value, got) == (phase, policy), f"at {trace.t_s} s"


# ---- the sample adapter and the stream ----


@dataclass
class NewerHalf(HalfFlow):
    """A half-flow with the fields the switch is about to expose."""

    data_end: int = 0
    retransmissions: int = 0
    dup_acks: int = 0
    acks_absorbed: int = 0


def test_sample_from_takes_data_from_one_half_and_acks_from_the_other() -> None:
    key, direction = FlowKey.of("10.0.1.1", "10.0.2.1", 40000, 5001)  # data 10.0.1.1 -> 10.0.2.1
    data = NewerHalf(key.endpoint(direction), data_segments=100, rtt_min_us=20_000, data_end=77)
    data.retransmissions = 2
    acks = NewerHalf(key.endpoint(1 - direction), acks_seen=50, acks_forwarded=10, acks_thinned=40, acc_d=4)
    acks.dup_acks, acks.acks_absorbed, acks.last_keep_reason = 3, 5, "dup_ack"
    halves: list[HalfFlow] = [data, acks] if direction == 0 else [acks, data]
    record = FlowRecord(key.slot, key, 0, False, halves)
    sample = sample_from(record, data, 1.5, 7, ecn_marks=9)
    assert sample == FlowSample(
        t_s=1.5,
        data_end=77,
        data_segments=100,
        retransmissions=2,
        rtt_min_us=20_000,
        acks_seen=50,
        acks_forwarded=10,
        acks_thinned=40,
        acks_absorbed=5,
        dup_acks=3,
        acc_d=4,
        last_keep_reason="dup_ack",
        queue_backlog_pkts=7,
        ecn_marks=9,
        closed=False,
    )
    # today's HalfFlow, without the new fields: they read as 0
    plain = FlowRecord(key.slot, key, 0, True, [HalfFlow("a", data_segments=3), HalfFlow("b")])
    old = sample_from(plain, plain.halves[0], 2.0, None)
    assert (old.data_end, old.retransmissions, old.dup_acks, old.acks_absorbed) == (0, 0, 0, 0)
    assert old.closed and old.data_segments == 3


def test_ack_stream_of_a_flow_key() -> None:
    key, direction = FlowKey.of("10.0.2.1", "10.0.1.1", 5001, 40000)  # data from 10.0.2.1
    stream = AckStream.of(key, direction)
    assert stream == AckStream.parse("10.0.1.1", 40000, "10.0.2.1", 5001)
    assert str(stream) == "10.0.2.1:5001 -> 10.0.1.1:40000"
    assert str(stream.match()) == "src=10.0.1.1/32 dst=10.0.2.1/32 sport=40000 dport=5001"
    assert stream.match().priority == 1  # exact: outranks every prefix rule
    assert AckStream.of(key, 1 - direction) == AckStream.parse("10.0.2.1", 5001, "10.0.1.1", 40000)


def test_ack_stream_of_an_ipv6_flow_key() -> None:
    key, direction = FlowKey.of("2001:db8:2::1", "2001:db8:1::1", 5001, 40000)  # data from ...:2::1
    stream = AckStream.of(key, direction)
    assert stream == AckStream.parse("2001:db8:1::1", 40000, "2001:db8:2::1", 5001)
    assert stream.version == 6
    assert str(stream) == "[2001:db8:2::1]:5001 -> [2001:db8:1::1]:40000"
    match = stream.match()
    assert str(match) == "src=2001:db8:1::1/128 dst=2001:db8:2::1/128 sport=40000 dport=5001"
    assert match.exact and match.priority == 1
    assert exact_stream(match) == stream
    # the same numbers in IPv4 are another stream
    assert AckStream(stream.src_addr, 40000, stream.dst_addr, 5001) != stream
    with pytest.raises(ValueError, match="one IP version"):
        AckStream.parse("10.0.0.1", 1, "2001:db8::1", 2)


def test_default_thresholds_are_consistent() -> None:
    th = Thresholds()
    assert th.steady_growth < th.ramp_up_growth
    assert th.congestion_clear_pkts < th.congestion_backlog_pkts
    assert (th.tack_l, th.tack_beta) == (2, 4)  # TACK's Eq. 4 defaults
