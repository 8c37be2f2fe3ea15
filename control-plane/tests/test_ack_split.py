"""Pure ACKs split by phase and kind off a capture (experiments/measure/ack_split.py)."""

from __future__ import annotations

import pytest

from ackwise.experiments.measure.ack_split import acks_per_window_by_phase, split_acks
from ackwise.twins.packets import ACK, TcpSegment

S, R, MSS = "10.0.0.1", "10.0.0.2", 1448


def data(k: int, t: float) -> TcpSegment:
    return TcpSegment(S, R, 40000, 5001, k * MSS, 1, ACK, 500, MSS, 0, time=t)


def ack(k: int, t: float) -> TcpSegment:
    return TcpSegment(R, S, 5001, 40000, 1, k * MSS, ACK, 500, 0, 0, time=t)


def test_a_loss_splits_into_slow_start_recovery_and_congestion_avoidance() -> None:
    segments = [data(0, 0.0), ack(1, 0.001), data(1, 0.01), data(2, 0.011), ack(3, 0.012)]
    # 3 lost: 4, 5, 6 arrive beyond the hole with a duplicate ACK each
    for i, k in enumerate((4, 5, 6)):
        segments += [data(k, 0.02 + i * 0.001), ack(3, 0.0205 + i * 0.001)]
    segments += [data(3, 0.2), ack(7, 0.2005)]  # the retransmission closes the hole
    segments += [data(7, 0.3), data(8, 0.31), ack(9, 0.311), data(9, 0.6), ack(10, 0.601)]
    split = split_acks(segments, S, R, MSS)
    assert split.holes == 1
    assert split.data == {"slow start": 3, "recovery": 4, "ca": 3}
    assert split.acks["slow start"] == {"advancing": 2, "late": 0, "recovery": 0, "duplicate": 0}
    assert split.acks["recovery"] == {"advancing": 0, "late": 0, "recovery": 1, "duplicate": 3}
    assert split.acks["ca"] == {"advancing": 1, "late": 1, "recovery": 0, "duplicate": 0}
    assert split.busy_fraction(10 * (MSS + 66) * 8 / 0.6) == pytest.approx(1.0)
    per_window = acks_per_window_by_phase(split, mean_cwnd=5.0)
    assert per_window["all"] == pytest.approx(8 / (10 / 5))
    assert per_window["ca_only"] == pytest.approx(2 / (3 / 5))
    assert per_window["without_recovery"] == pytest.approx(4 / (10 / 5))
