"""The comparison's metrics from crafted segments and samples."""

from __future__ import annotations

import pytest

from ackwise.experiments.measure.metrics import (
    ack_counts,
    ack_rate_series,
    avoidable_pure_acks,
    jain_index,
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


def test_avoidable_pure_acks_need_data_soon_after_acknowledging_as_much() -> None:
    segments = [
        seg(R, H, 0.000, ack=1000),
        seg(R, H, 0.010, payload=100, ack=1000, flags=ACK | PSH),  # carries it: avoidable
        seg(R, H, 0.100, ack=2000),
        seg(R, H, 0.200, payload=100, ack=3000, flags=ACK | PSH),  # too late: 100 ms
        seg(R, H, 0.300, ack=4000),
        seg(R, H, 0.310, payload=100, ack=3500, flags=ACK | PSH),  # acknowledges less
    ]
    assert avoidable_pure_acks(segments, (R, 1), H) == (1, 3)


def test_avoidable_pure_acks_only_count_data_on_the_same_connection() -> None:
    """Regression: ACKs were matched with data by address only, so a separate reverse connection's
    data, numbered in another sequence space, "carried" about half of them."""
    other = TcpSegment(R, H, 6101, 40000, 0, 5000, ACK | PSH, 100, 1000, 0, time=0.010)
    segments = [seg(R, H, 0.000, ack=1000), other, seg(R, H, 0.100, ack=2000)]
    assert avoidable_pure_acks(segments, (R, 1), H) == (0, 2)
    assert avoidable_pure_acks(segments, (R, 6101), H) == (0, 0)


def test_jain_index() -> None:
    assert jain_index([5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([1, 0]) == pytest.approx(0.5)
    assert jain_index([]) is None


def test_queue_delay_is_the_mean_above_the_minimum() -> None:
    assert queue_delay_ms([20.0, 30.0, 40.0, float("nan")]) == pytest.approx(10.0)
    assert queue_delay_ms([20.0]) is None
