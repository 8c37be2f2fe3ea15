"""Means with Student-t intervals, Jain's index, relative values, percentiles, grouping; the expected
numbers are worked out by hand (t quantiles from a printed table)."""

from __future__ import annotations

import math

import pytest
from results_fixtures import ARMS, BASELINE_ARM, HOST_ARM, POINTS, make_record

from ackwise.experiments.harness.stats import (
    Summary,
    better_of,
    change_percent,
    group_records,
    jain_index,
    mean_ci,
    percentile,
    relative,
)

T_975 = {1: 12.7062, 2: 4.3027, 3: 3.1824}  # two-sided 95 %: t(0.975, df)


def test_mean_ci_of_one_to_four() -> None:
    s = mean_ci([1, 2, 3, 4])
    stdev = math.sqrt(((1.5**2) * 2 + (0.5**2) * 2) / 3)  # 1.2910
    assert s.n == 4 and s.mean == 2.5
    assert s.stdev == pytest.approx(stdev, rel=1e-9)
    assert s.half_width == pytest.approx(T_975[3] * stdev / 2, rel=1e-4)  # 3.182 * 1.291 / 2 = 2.054
    assert s.half_width == pytest.approx(2.054, abs=1e-3)
    assert (s.ci_low, s.ci_high) == pytest.approx((2.5 - 2.0543, 2.5 + 2.0543), abs=1e-3)


def test_a_higher_confidence_widens_the_interval() -> None:
    narrow, wide = mean_ci([1, 2, 3, 4], 0.90), mean_ci([1, 2, 3, 4], 0.99)
    assert narrow.half_width is not None and wide.half_width is not None
    assert narrow.half_width == pytest.approx(2.3534 * 1.290994 / 2, rel=1e-4)  # t(0.95, 3)
    assert wide.half_width == pytest.approx(5.8409 * 1.290994 / 2, rel=1e-4)  # t(0.995, 3)
    with pytest.raises(ValueError, match="between 0 and 1"):
        mean_ci([1, 2], 95)


def test_one_value_has_a_mean_and_no_interval() -> None:
    assert mean_ci([7.0]) == Summary(1, 7.0, None, None, None, None)


def test_missing_values_are_left_out() -> None:
    s = mean_ci([1, None, 3, float("nan")])
    assert s.n == 2 and s.mean == 2.0
    assert s.half_width == pytest.approx(T_975[1] * math.sqrt(2) / math.sqrt(2), rel=1e-4)
    assert mean_ci([]) == Summary(0, None, None, None, None, None)
    assert mean_ci([None, None]).n == 0


def test_equal_values_have_a_zero_width_interval() -> None:
    s = mean_ci([0.05, 0.05, 0.05])
    assert (s.mean, s.stdev, s.half_width) == (pytest.approx(0.05), 0.0, 0.0)


def test_overlap_of_intervals() -> None:
    a, b, c = mean_ci([1, 2, 3]), mean_ci([2.5, 3.5, 4.5]), mean_ci([10, 10.1, 10.2])
    assert a.overlaps(b) is True and b.overlaps(a) is True
    assert a.overlaps(c) is False
    assert a.overlaps(mean_ci([2])) is None  # no interval, no judgement


def test_jain_index() -> None:
    assert jain_index([3, 3, 3]) == 1.0
    assert jain_index([1, 0]) == 0.5
    assert jain_index([1, 2, 3]) == pytest.approx(36 / (3 * 14))
    assert jain_index([0, 0]) == 1.0  # all equal, at nothing
    assert jain_index([]) is None
    assert jain_index([None, 4.0]) == 1.0
    with pytest.raises(ValueError, match="non-negative"):
        jain_index([1, -1])


def test_relative_and_change() -> None:
    assert relative([2.0, 4.0, None], 2.0) == [1.0, 2.0, None]
    with pytest.raises(ValueError, match="baseline arm needs"):
        relative([1.0], 0.0)
    assert change_percent(6.0, 8.0) == -25.0
    assert change_percent(6.0, None) is None


def test_percentile() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([1, None, 3], 100) == 3.0
    assert percentile([], 95) is None
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_better_of_follows_the_metric_direction() -> None:
    assert better_of("completion_s", 1.0, 2.0) is True
    assert better_of("goodput_mbps", 1.0, 2.0) is False
    with pytest.raises(ValueError, match="no better direction"):
        better_of("pure_acks", 1.0, 2.0)


def test_group_records_summarises_ok_runs_and_counts_failed() -> None:
    records = [
        make_record(POINTS[0], HOST_ARM, 2, completion_s=9.0),
        make_record(POINTS[0], HOST_ARM, 0, completion_s=7.0),
        make_record(POINTS[0], HOST_ARM, 1, status="failed", reason="agent died"),
        make_record(POINTS[0], BASELINE_ARM, 0, completion_s=10.0),
        make_record(POINTS[1], HOST_ARM, 0, completion_s=3.0),
        make_record(POINTS[0], ARMS[2], 0, completion_s=5.0, scenario="other"),
    ]
    groups = {g.key: g for g in group_records(records, ["completion_s"])}
    assert set(groups) == {
        ("asym-dumbbell", "64 kbit/s", HOST_ARM.label()),
        ("asym-dumbbell", "64 kbit/s", BASELINE_ARM.label()),
        ("asym-dumbbell", "256 kbit/s", HOST_ARM.label()),
        ("other", "64 kbit/s", ARMS[2].label()),
    }
    host = groups[("asym-dumbbell", "64 kbit/s", HOST_ARM.label())]
    assert [r.repeat for r in host.ok] == [0, 2]
    assert host.n_failed == 1 and host.failed[0].reason == "agent died"
    assert host.where == "host" and host.x == 64
    summary = host.metrics["completion_s"]
    assert (summary.n, summary.mean) == (2, 8.0)
    assert summary.half_width == pytest.approx(T_975[1] * math.sqrt(2) / math.sqrt(2), rel=1e-4)


def test_group_records_defaults_to_the_metrics_present() -> None:
    groups = group_records([make_record(POINTS[0], HOST_ARM, 0, completion_s=2.0)])
    assert list(groups[0].metrics) == ["completion_s", "goodput_mbps", "acks_per_data_segment"]
    assert groups[0].metrics["goodput_mbps"].mean == 4.0
