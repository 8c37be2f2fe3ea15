"""End-host ACK policies on synthetic event traces, and one recorded on the test bed."""

import gzip
import json
from collections import deque
from pathlib import Path

import pytest

from ackwise.hosts.policies import (
    RELEASE,
    AckPathQueue,
    DataArrival,
    DynamicD,
    EveryD,
    FourW,
    Hold,
    ReceiverAcc,
    Smartacking,
    Tack,
    make_policy,
)
from ackwise.hosts.send_backlog import SendState

# The host's own send state as the agent reads it (unsent bytes, in flight, cwnd, MSS)
FREE = SendState(0, 3, 10, 1448)  # application-limited: everything written has left
NAGLE = SendState(300, 3, 10, 1448)  # a small write Nagle's algorithm keeps back
WINDOW_FULL = SendState(20_000, 10, 10, 1448)  # a backlog, the window full at the instant read
BACKLOG_OPEN_WINDOW = SendState(20_000, 8, 10, 1448)  # a backlog, an ACK has just opened the window

MSS = 1448
ISN = 1000
TRACES = Path(__file__).parent / "data" / "receiver-traces"


def seq(k: int) -> int:
    return ISN + k * MSS


def feed(policy, t: float, k: int, ce: bool = False):
    """Segment k arrives at t; the kernel ACKs it at once (quickack): the policy decides."""
    policy.on_data(DataArrival(t, seq(k), MSS, ce=ce))
    return policy.decide(t, seq(k + 1))


def release_if(policy, t: float, k: int, decision) -> None:
    if decision == RELEASE:
        policy.on_release(t, seq(k + 1))


def test_every_d_counts_segments_and_holds_at_most_max_delay() -> None:
    p = EveryD(d=4)
    released = []
    for k in range(12):
        t = k * 0.001
        decision = feed(p, t, k)
        if k == 0:
            assert decision == RELEASE  # the first ACK
        release_if(p, t, k, decision)
        if decision == RELEASE:
            released.append(k)
        else:
            assert decision == Hold(t + 0.2)  # the timer: 200 ms at most
    assert released == [0, 4, 8]


def test_dynamic_d_grows_past_the_thresholds() -> None:
    p = DynamicD()
    released = []
    for k in range(25):
        decision = feed(p, k * 0.001, k)
        release_if(p, k * 0.001, k, decision)
        if decision == RELEASE:
            released.append(k)
    # d = 1 below 2 segments acknowledged, 2 below 5, 3 below 9, then 4
    assert released == [0, 1, 3, 6, 10, 14, 18, 22]  # as the switch's dynamic_d (DynamicDTest)


def test_receiver_acc_doubles_at_most_once_per_rtt_and_decays() -> None:
    # Figure 1's estimate: these synthetic segments carry no timestamps, and with an ACK per
    # segment it grows one per ACK, as a sender does (test_window_estimators.py compares them).
    p = ReceiverAcc(d_cap=64, estimator="figure1")
    p.rtt.sample(0.05)
    t = 0.0
    for k in range(40):  # grow the window estimate: released ACKs in the initial slow start
        t = k * 0.001
        release_if(p, t, k, feed(p, t, k))
    assert p.cwnd.estimate() > 20
    feed(p, 0.041, 40, ce=True)
    assert (p.d, p.signals) == (2, 1)
    feed(p, 0.042, 41, ce=True)  # within the RTT: absorbed
    assert (p.d, p.signals) == (2, 1)
    feed(p, 0.1, 42, ce=True)
    assert (p.d, p.signals) == (4, 2)
    feed(p, 0.16, 43)  # one quiet RTT
    assert p.d == 3
    feed(p, 0.161, 44)
    assert p.d == 3
    feed(p, 0.30, 45)  # two more
    feed(p, 0.301, 46)
    assert p.d == 1


def test_receiver_acc_keeps_two_acks_per_window() -> None:
    p = ReceiverAcc(d_cap=64, estimator="figure1")
    p.rtt.sample(0.01)
    release_if(p, 0.0, 0, feed(p, 0.0, 0))  # window estimate: 2
    for i, k in enumerate(range(1, 6)):
        feed(p, 0.02 * (i + 1), k, ce=True)
    assert p.d == max(1, p.cwnd.estimate() // 2) == 1


@pytest.mark.parametrize(
    ("bw_bytes_per_s", "rtt_min_s", "expected_interval_s"),
    [
        (1.25e6, 0.040, 0.010),  # 10 Mbit/s: RTTmin / beta wins (10 ms > 2.3 ms)
        (1.25e7, 0.008, 0.002),  # 100 Mbit/s, 8 ms: RTTmin / beta, 2 ms
        (1.0e5, 0.040, 2 * MSS / 1.0e5),  # 800 kbit/s: L * MSS / bw wins (29 ms > 10 ms)
        (5.0e4, 0.010, 2 * MSS / 5.0e4),  # 400 kbit/s: 58 ms
    ],
)
def test_tack_frequency_is_the_min_of_both(
    bw_bytes_per_s: float, rtt_min_s: float, expected_interval_s: float
) -> None:
    p = Tack()
    p.rtt.sample(rtt_min_s)
    p.bw_bytes_per_s = bw_bytes_per_s
    assert p.interval() == pytest.approx(expected_interval_s)
    p.on_release(1.0, seq(1))
    assert p.decide(1.0 + expected_interval_s * 0.5, seq(2)) == Hold(
        min(1.0 + expected_interval_s, 1.0 + 0.5 * expected_interval_s + 0.2)
    )
    assert p.decide(1.0 + expected_interval_s * 1.01, seq(3)) == RELEASE


def test_tack_measures_the_delivery_rate() -> None:
    p = Tack()
    p.rtt.sample(0.02)
    for k in range(100):  # one segment per ms: 1.448 MB/s
        p.on_data(DataArrival(k * 0.001, seq(k), MSS))
    assert p.bw_bytes_per_s == pytest.approx(MSS / 0.001, rel=0.1)


def test_smartacking_acks_every_segment_with_idle_gaps_and_thins_when_uniform() -> None:
    """The delay rule, given a window estimate larger than what one RTT of uniform arrivals
    holds (Figure 1's, counting one per released ACK, here): hold. In closed loop with the
    measured estimate, test_window_estimators.py shows the reduced mode it reaches."""
    p = Smartacking(estimator="figure1")
    p.rtt.sample(0.1)
    t, k = 0.0, 0
    decisions_slow_start = []
    for burst in (2, 4, 8, 16):  # slow start: a burst per RTT, idle in between
        for _ in range(burst):
            decision = feed(p, t, k)
            decisions_slow_start.append(decision)
            release_if(p, t, k, decision)
            t += 0.001
            k += 1
        t += 0.1
    assert all(d == RELEASE for d in decisions_slow_start)
    decisions_uniform = []
    for _ in range(400):  # the bottleneck saturated: one segment per ms, no gaps
        decision = feed(p, t, k)
        decisions_uniform.append(decision)
        release_if(p, t, k, decision)
        t += 0.001
        k += 1
    held = sum(isinstance(d, Hold) for d in decisions_uniform[100:])
    assert held > 250, f"only {held} of 300 ACKs held once arrivals were uniform"
    assert p.isat_s == pytest.approx(0.001, rel=0.05)


def test_smartacking_isat_ignores_outliers_and_window_gaps() -> None:
    p = Smartacking()
    p.rtt.sample(0.1)
    for k, t in enumerate([0.0, 0.001, 0.002, 0.003, 0.011, 0.012, 0.013]):
        p.on_data(DataArrival(t, seq(k), MSS))
    assert p.isat_s == pytest.approx(0.001)  # the 8 ms gap (>= 3x) is an outlier
    for k, t in enumerate([0.2, 0.201, 0.202], start=7):  # a window later: the 187 ms gap is skipped
        p.on_data(DataArrival(t, seq(k), MSS))
    assert p.isat_s == pytest.approx(0.001)


@pytest.mark.parametrize(("window", "d"), [(40, 10), (15, 4), (7, 2), (9, 2), (10, 3), (2, 1), (1, 1)])
def test_four_acks_per_window(window: int, d: int) -> None:
    """One ACK per window / 4 segments, to the nearest segment (half up), at least one."""
    p = FourW(estimator="figure1")
    p.cwnd.starting_cwnd = window  # type: ignore[attr-defined]
    assert p.current_d(0.0, seq(1)) == d


def test_make_policy_checks_parameters() -> None:
    assert make_policy("every_d", {"d": "8"}).d == 8
    assert make_policy("smartacking", {"extended": "yes", "alpha": "0.8"}).alpha == 0.8
    with pytest.raises(ValueError, match="unknown host policy"):
        make_policy("sometimes", {})
    with pytest.raises(ValueError, match="no parameter 'beta'"):
        make_policy("every_d", {"beta": "4"})
    with pytest.raises(ValueError, match="at least 1"):
        make_policy("every_d", {"d": "0"})
    assert make_policy("4w", {"estimator": "figure1"}).cwnd.name == "figure1"
    assert make_policy("4w", {}).cwnd.name == "counting"
    with pytest.raises(ValueError, match="give one of counting, figure1"):
        make_policy("4w", {"estimator": "oracle"})
    assert make_policy("piggyback", {"hold_ms": "20"}).hold_ms == 20.0  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="hold_ms must be at least 0"):
        make_policy("piggyback", {"hold_ms": "-5"})
    with pytest.raises(ValueError, match="hold_ms must be at least 0"):
        make_policy("piggyback", {"hold_ms": "nan"})
    assert make_policy("piggyback", {"release_if_blocked": "on"}).reads_send_state()
    assert not make_policy("piggyback", {"release_if_blocked": "0"}).reads_send_state()
    assert not make_policy("piggyback", {}).reads_send_state()  # the policy the coherent run measured
    # a word that is neither (once read as off, silently): refused
    with pytest.raises(ValueError, match="release_if_blocked='sometimes': give one of 1, true"):
        make_policy("piggyback", {"release_if_blocked": "sometimes"})
    with pytest.raises(ValueError, match="extended='maybe'"):
        make_policy("smartacking", {"extended": "maybe"})


def test_the_piggyback_hold_releases_at_once_while_the_hosts_data_waits_for_its_window() -> None:
    """release_if_blocked: the hold acts only where the reverse data is application-limited
    (docs/piggyback-byte-buffer); an unknown reading never holds."""
    p = make_policy("piggyback", {"hold_ms": "10", "release_if_blocked": "1"})
    p.on_send_state(FREE)
    assert p.decide(1.0, 5000) == Hold(1.010)
    p.on_send_state(BACKLOG_OPEN_WINDOW)  # a backlog is not what this rule asks
    assert p.decide(1.05, 5500) == Hold(1.060)
    p.on_send_state(WINDOW_FULL)
    assert p.decide(1.1, 6000) == RELEASE
    p.on_send_state(None)
    assert p.decide(1.2, 7000) == RELEASE
    assert (p.released_while_blocked, p.released_state_unknown) == (1, 1)  # type: ignore[attr-defined]
    off = make_policy("piggyback", {"hold_ms": "10"})
    off.on_send_state(WINDOW_FULL)  # not asked for, and not heeded
    assert off.decide(1.0, 5000) == Hold(1.010)


def test_the_piggyback_hold_with_hold_ms_0_releases_every_ack_whatever_the_send_state() -> None:
    """The agent-only control: the hold's whole path, nothing held."""
    for params in (
        {"hold_ms": "0"},
        {"hold_ms": "0", "release_if_blocked": "1"},
        {"hold_ms": "0", "release_if_backlogged": "1", "release_in_slow_start": "1"},
    ):
        p = make_policy("piggyback", params)
        for state in (FREE, WINDOW_FULL, BACKLOG_OPEN_WINDOW, None):
            p.on_send_state(state)
            assert p.decide(1.0, 5000) == RELEASE
    assert make_policy("piggyback", {"hold_ms": "0.5"}).decide(1.0, 5000) == Hold(1.0005)


def test_window_limited_needs_unsent_bytes_and_a_full_window() -> None:
    """Unsent bytes with room in the window are Nagle's (a small write waiting for an ACK), not
    the network's: the hold still acts there."""
    assert SendState(1400, in_flight_segments=10, cwnd_segments=10, snd_mss_bytes=1448).window_limited
    assert SendState(1400, in_flight_segments=12, cwnd_segments=10, snd_mss_bytes=1448).window_limited
    assert not SendState(100, in_flight_segments=1, cwnd_segments=10, snd_mss_bytes=1448).window_limited
    assert not SendState(0, in_flight_segments=10, cwnd_segments=10, snd_mss_bytes=1448).window_limited


def test_backlogged_needs_a_full_segment_unsent_whatever_the_window() -> None:
    """Less than a segment unsent is what Nagle's algorithm keeps back (the 100-byte writer had
    some at every pure ACK): not a backlog. A segment or more is, with the window open at the
    instant read (an ACK from the peer has just opened it) or full."""
    assert SendState(1448, in_flight_segments=3, cwnd_segments=10, snd_mss_bytes=1448).backlogged
    assert SendState(60_000, in_flight_segments=10, cwnd_segments=10, snd_mss_bytes=1448).backlogged
    assert not SendState(1447, in_flight_segments=10, cwnd_segments=10, snd_mss_bytes=1448).backlogged
    assert not SendState(0, in_flight_segments=0, cwnd_segments=10, snd_mss_bytes=1448).backlogged


def test_release_if_backlogged_holds_only_while_the_reverse_data_is_application_limited() -> None:
    p = make_policy("piggyback", {"hold_ms": "10", "release_if_backlogged": "1"})
    assert p.reads_send_state()
    p.on_send_state(FREE)
    assert p.decide(1.0, 5000) == Hold(1.010)
    p.on_send_state(NAGLE)
    assert p.decide(1.02, 5200) == Hold(1.030)
    p.on_send_state(BACKLOG_OPEN_WINDOW)  # the instant release_if_blocked missed
    assert p.decide(1.05, 5500) == RELEASE
    p.on_send_state(WINDOW_FULL)
    assert p.decide(1.1, 6000) == RELEASE
    p.on_send_state(None)
    assert p.decide(1.2, 7000) == RELEASE
    assert (p.released_while_backlogged, p.released_state_unknown) == (2, 1)  # type: ignore[attr-defined]
    assert p.released_while_blocked == 0  # type: ignore[attr-defined]


def test_release_in_slow_start_follows_the_receivers_own_estimate() -> None:
    """No reading of the connection: the window estimator's phase, from the data that arrived.
    A fresh estimator is in the initial slow start; a window that stops doubling per round trip
    is not (hosts/estimators.py)."""
    p = make_policy("piggyback", {"hold_ms": "10", "release_in_slow_start": "1"})
    assert not p.reads_send_state()
    assert p.cwnd.in_slow_start()
    assert p.decide(0.1, 5000) == RELEASE
    p.cwnd.slow_start = False  # type: ignore[attr-defined]
    assert p.decide(0.25, 6000) == Hold(0.26)
    assert p.released_in_slow_start == 1  # type: ignore[attr-defined]
    # the estimator the smartacking paper published has its own phase
    fig1 = make_policy("piggyback", {"release_in_slow_start": "1", "estimator": "figure1"})
    assert fig1.decide(0.1, 5000) == RELEASE
    fig1.cwnd.past_ssthresh = True  # type: ignore[attr-defined]
    assert fig1.decide(0.25, 6000) == Hold(0.26)


def test_smartacking_subtracts_the_minimum_rtt() -> None:
    """The link stays busy if the ACK leaves while the segments still to come take the path's
    round trip without the queue to arrive: the rule subtracts the receiver's minimum RTT, not a
    sample of the queue (issue 39: with the sample, 0.62-0.70 pure ACKs per segment on one-flow
    at 1-2 Mbit/s, not below delayed ACK's 0.58-0.73)."""
    p = Smartacking()
    p.rtt.sample(0.1)
    p.rtt.sample(0.3)  # the queue grew
    assert p.decision_rtt(0.0) == 0.1 and p.decision_rtt(5.0) == 0.1
    # a window of 30 segments 10 ms apart (ISAT) arriving behind a 200 ms queue, the first in:
    # the ACK waits until 100 ms before the last of it; with the sample (0.3 s) it went at once
    p.isat_s, p.highest_received, p.last_released_ack = 0.01, 1000 + 1448, 1000
    p.cwnd.estimate = lambda: 30  # type: ignore[method-assign]
    decision = p.decide(1.0, 1000 + 1448)
    assert isinstance(decision, Hold) and decision.until == pytest.approx(1.0 + 0.29 - 0.1)
    q = Smartacking(rtt_min=False)
    q.rtt.sample(0.1)
    q.rtt.sample(0.3)
    q.isat_s, q.highest_received, q.last_released_ack = 0.01, 1000 + 1448, 1000
    q.cwnd.estimate = lambda: 30  # type: ignore[method-assign]
    assert q.decide(1.0, 1000 + 1448) == RELEASE


def test_smartacking_takes_one_rtt_sample_per_second_as_the_papers_keep_alive() -> None:
    """The paper's receiver, with no data of its own, learns the RTT from a keep-alive once per
    second (rtt_min off): the delay rule uses one sample, refreshed every rtt_refresh_s; 0: the
    smoothed RTT."""
    p = Smartacking(rtt_min=False)
    p.rtt.sample(0.1)
    assert p.decision_rtt(0.0) == 0.1
    p.rtt.sample(0.3)  # the queue grew
    assert p.decision_rtt(0.5) == 0.1
    assert p.decision_rtt(1.0) == 0.3
    q = Smartacking(rtt_min=False, rtt_refresh_s=0)
    q.rtt.sample(0.1)
    q.rtt.sample(0.3)
    assert q.decision_rtt(0.5) == pytest.approx(q.rtt.srtt)


def test_the_ack_path_queue_is_the_echoed_delay_above_its_minimum() -> None:
    """TSval - TSecr of the first data segment echoing each new TSecr, minus the smallest seen,
    in the 1 ms ticks of both ends; a segment echoing the same TSecr again was sent later for
    another reason (it says nothing of our segment's trip) and is not taken."""
    q = AckPathQueue()
    assert q.queue_s is None
    offset = 2**32 - 40  # the two clocks' offset: the difference wraps around
    q.sample((1000 + offset + 30) % 2**32, 1000)  # our segment took 30 ms (and its queue)
    assert q.queue_s == 0.0
    q.sample((1010 + offset + 20) % 2**32, 1010)  # 20 ms: the smallest so far
    assert q.queue_s == 0.0
    q.sample((1020 + offset + 220) % 2**32, 1020)  # 200 ms above it
    assert q.queue_s is not None and abs(q.queue_s - 0.200) < 1e-9
    q.sample((1020 + offset + 900) % 2**32, 1020)  # the same TSecr again: not a sample
    assert abs(q.queue_s - 0.200) < 1e-9
    q.sample((1030 + offset + 25) % 2**32, 1030)
    assert abs(q.queue_s - 0.005) < 1e-9


def test_release_if_ack_path_queued_holds_only_while_the_path_back_queues_less_than_rtt_min() -> None:
    p = make_policy("piggyback", {"hold_ms": "10", "release_if_ack_path_queued": "1"})
    assert not p.reads_send_state()  # the timestamps only: no reading of the connection
    p.rtt.sample(0.027)
    assert p.decide(0.0, 1000) == RELEASE  # no sample yet: unknown, nothing held blind

    def arrive(t: float, k: int, one_way_ms: int) -> None:
        ecr = 5000 + k
        p.on_data(DataArrival(t, seq(k), MSS, ts_ecr=ecr, ts_val=ecr + 7 + one_way_ms))

    arrive(0.1, 1, 14)
    arrive(0.2, 2, 30)  # 16 ms of queue: below the 27 ms round trip
    assert p.decide(0.2, seq(3)) == Hold(pytest.approx(0.21))
    arrive(0.3, 3, 60)  # 46 ms: above it
    assert p.decide(0.3, seq(4)) == RELEASE
    arrive(0.4, 4, 40)  # 26 ms
    assert p.decide(0.4, seq(5)) == Hold(pytest.approx(0.41))
    assert p.released_ack_path_queued == 2  # type: ignore[attr-defined]
    # without the timestamps option there is no sample, and nothing is ever held
    q = make_policy("piggyback", {"release_if_ack_path_queued": "1"})
    q.on_data(DataArrival(0.1, seq(1), MSS))
    assert q.decide(0.1, seq(2)) == RELEASE


def test_the_ack_path_queue_follows_the_dsl_uplinks_queue_on_a_recorded_trace() -> None:
    """A run on Shang and Wills' DSL path at N = 700 (receiver-traces/dsl-n700-ack-path.json.gz:
    the client's segments before the uplink's queue, the server's data as it arrived). The truth:
    the uplink as a drop-tail FIFO of 20 packets served at 320 kbit/s, fed with the recorded
    segments, gives each segment of the client's its queueing delay; the estimate, taken when the
    server's data echoes that segment's TSval, is compared with it (both above their minimum)."""
    with gzip.open(TRACES / "dsl-n700-ack-path.json.gz", "rt") as f:
        trace = json.load(f)
    rate_bytes_per_s = trace["meta"]["uplink_rate_bps"] / 8
    busy_until, in_queue, delay_by_tsval = 0.0, deque[float](), {}
    for t, ts_val, size in trace["up"]:
        while in_queue and in_queue[0] <= t:
            in_queue.popleft()
        if len(in_queue) >= trace["meta"]["uplink_buffer_pkts"]:
            continue  # dropped at the queue's tail
        busy_until = max(t, busy_until) + size / rate_bytes_per_s
        in_queue.append(busy_until)
        delay_by_tsval.setdefault(ts_val, busy_until - t)
    q = AckPathQueue()
    pairs = []
    for _, ts_val, ts_ecr in trace["down"]:
        new = ts_ecr != q.last_ts_ecr
        q.sample(ts_val, ts_ecr)
        if new and ts_ecr in delay_by_tsval:
            pairs.append((q.queue_s, delay_by_tsval[ts_ecr]))
    floor = min(true for _, true in pairs)
    errors = sorted(abs(estimate - (true - floor)) for estimate, true in pairs)
    assert len(pairs) > 200
    assert max(true - floor for _, true in pairs) > 0.6  # the queue stood at 20 packets for seconds
    assert errors[len(errors) // 2] < 0.002  # measured: 0.5 ms
    assert errors[9 * len(errors) // 10] < 0.005  # measured: 1.1 ms
