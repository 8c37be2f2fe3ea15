"""The comparison's metrics from crafted segments and samples."""

from __future__ import annotations

import pytest

from ackwise.experiments.measure.metrics import (
    CwndSample,
    ack_counts,
    ack_rate_series,
    acks_per_window,
    estimate_error,
    in_congestion_avoidance,
    jain_index,
    packets_each_way,
    queue_delay_ms,
)
from ackwise.twins.packets import ACK, PSH, TcpSegment

H, R = "10.0.0.1", "10.0.0.2"


def seg(src: str, dst: str, t: float, payload: int = 0, ack: int = 0, flags: int = ACK) -> TcpSegment:
    return TcpSegment(src, dst, 1, 2, 0, ack, flags, 100, payload, 0, time=t)


def test_ack_counts_only_count_the_flows_directions() -> None:
    segments = [seg(H, R, 0, 1448), seg(H, R, 0.1, 1448), seg(R, H, 0.2), seg(R, H, 0.3, 100), seg(H, R, 0.4)]
    counts = ack_counts(segments, {H}, {R})
    assert (counts.data_segments, counts.pure_acks) == (2, 1)
    assert counts.acks_per_data_segment == 0.5


def test_ack_rate_series_bins_the_pure_acks() -> None:
    segments = [seg(R, H, t) for t in (10.0, 10.1, 10.2, 10.6, 11.7)]
    times, rates = ack_rate_series(segments, R, H, bin_s=0.5)
    assert times == [0.0, 0.5, 1.0, 1.5]
    assert rates == [6.0, 2.0, 0.0, 2.0]


def test_packets_each_way_count_every_segment_of_both_directions() -> None:
    segments = [
        seg(H, R, 0.0, payload=1448),
        seg(R, H, 0.001, ack=1000),
        seg(R, H, 0.002, payload=100, ack=1000, flags=ACK | PSH),  # reverse data counts too
        seg(H, R, 0.003, payload=1448),
        seg("10.0.0.9", R, 0.004, payload=1448),  # another host: not these two's
    ]
    assert packets_each_way(segments, H, R) == (2, 2)


def test_estimate_error_over_congestion_avoidance_only() -> None:
    estimate = [(0.0, 10.0), (1.0, 20.0), (2.0, 30.0)]
    cwnd: list[CwndSample] = [
        (0.5, 40, None, 40),  # slow start: no ssthresh yet, not counted
        (1.5, 25, 20, 25),  # estimate 20: -20 %
        (2.5, 30, 20, None),  # estimate 30: 0 (in flight not known: counted)
        (2.6, 10, 20, 10),  # recovery (cwnd below ssthresh): not counted
        (2.65, 20, 20, 60),  # recovery without SACK (cwnd at ssthresh, 60 in flight): not counted
        (2.7, 25, 20, 24),  # 30 against 25: +20 %
    ]
    error = estimate_error(estimate, cwnd)
    assert error is not None and error.samples == 3
    assert error.median_abs == pytest.approx(0.2) and error.median == pytest.approx(0.0)
    assert estimate_error(estimate, [(0.5, 40, None, 40)]) is None
    assert estimate_error([(5.0, 1.0)], [(1.0, 10, 5, 10)]) is None  # no estimate yet at the sample


def test_acks_per_window_uses_the_mean_cwnd_in_congestion_avoidance() -> None:
    cwnd: list[CwndSample] = [(0.0, 100, None, 100), (1.0, 20, 20, 20), (2.0, 30, 20, 30), (3.0, 10, 20, 9)]
    assert acks_per_window(100, 500, cwnd) == pytest.approx(100 / (500 / 25))
    assert acks_per_window(100, 500, [(0.0, 100, None, 100)]) is None
    assert acks_per_window(100, 0, cwnd) is None


def test_a_recovery_without_sack_is_not_congestion_avoidance() -> None:
    """Issue 39, one-flow at 12 Mbit/s (reno without SACK, main 33d206f): after slow start's
    overshoot Linux held cwnd = ssthresh = 107 for 14 s while it repaired one hole per round
    trip, 290-360 segments unacknowledged; the old rule (cwnd >= ssthresh) took all of it for
    congestion avoidance and the mean cwnd of a sender that never was in it."""
    recovery = [(1.0 + 0.1 * i, 107, 107, 350 - i) for i in range(140)]
    assert not any(in_congestion_avoidance(s) for s in recovery)
    assert acks_per_window(500, 692, recovery) is None
    assert in_congestion_avoidance((20.0, 57, 53, 57))


def test_jain_index() -> None:
    assert jain_index([5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([1, 0]) == pytest.approx(0.5)
    assert jain_index([]) is None


def test_queue_delay_is_the_mean_above_the_minimum() -> None:
    assert queue_delay_ms([20.0, 30.0, 40.0, float("nan")]) == pytest.approx(10.0)
    assert queue_delay_ms([20.0]) is None
