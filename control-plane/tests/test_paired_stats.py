"""Paired comparisons over blocks, the effect a design could detect, and split arms: checked on
data sets whose answers are known."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ackwise.experiments.harness.stats import detectable_shift, paired_effect, split_groups


def test_a_constant_ratio_is_exact_and_better_or_worse_by_the_metric() -> None:
    baseline = [10.0, 20.0, 5.0, 8.0]
    effect = paired_effect([b * 1.1 for b in baseline], baseline)
    assert effect.scale == "ratio" and effect.n == 4
    assert effect.estimate == pytest.approx(1.1)
    assert (effect.ci_low, effect.ci_high) == (pytest.approx(1.1), pytest.approx(1.1))
    assert effect.verdict("higher") == "better" and effect.verdict("lower") == "worse"
    assert effect.detectable == pytest.approx(1.0)  # no spread: any effect is seen


def test_the_interval_is_paired_t_on_the_logs() -> None:
    logs = [0.1, 0.2, 0.0, 0.1, 0.1]  # mean 0.1, sd sqrt(0.005), t(0.975, 4) = 2.7764
    baseline = [3.0, 7.0, 1.0, 2.0, 9.0]
    effect = paired_effect([b * math.exp(d) for b, d in zip(baseline, logs, strict=True)], baseline)
    half = 2.7764451 * math.sqrt(0.005) / math.sqrt(5)
    assert effect.estimate == pytest.approx(math.exp(0.1))
    assert effect.ci_low == pytest.approx(math.exp(0.1 - half), rel=1e-6)
    assert effect.ci_high == pytest.approx(math.exp(0.1 + half), rel=1e-6)
    assert effect.verdict("lower") == "worse"


def test_the_baselines_level_does_not_matter_only_the_pairing() -> None:
    """Blocks at very different levels (a slow and a fast repeat) with the same ratio inside each:
    unpaired intervals would overlap; the paired one is tight."""
    baseline = [1.0, 10.0, 100.0]
    effect = paired_effect([0.9, 9.0, 90.0], baseline)
    assert effect.verdict("lower") == "better"
    assert effect.ci_high == pytest.approx(0.9)


def test_no_difference_states_what_could_have_been_detected() -> None:
    rng = random.Random(7)
    baseline = [rng.uniform(5, 6) for _ in range(10)]
    arm = [b * math.exp(rng.gauss(0, 0.05)) for b in baseline]
    effect = paired_effect(arm, baseline)
    logs = [math.log(a / b) for a, b in zip(arm, baseline, strict=True)]
    assert effect.verdict("lower") == "no difference detected"
    assert effect.detectable == pytest.approx(math.exp(detectable_shift(10, float(np.std(logs, ddof=1)))))
    assert effect.detectable > effect.ci_high / effect.estimate  # a real effect of that size would be outside


def test_zeros_make_it_a_difference() -> None:
    effect = paired_effect([0, 1, 0, 2], [3, 4, 2, 5])
    assert effect.scale == "difference"
    assert effect.estimate == pytest.approx(-2.75)
    assert effect.verdict("lower") == "better"


def test_one_block_says_nothing_and_unequal_lengths_are_refused() -> None:
    assert paired_effect([2.0], [1.0]).verdict("lower") == "too few blocks"
    assert paired_effect([], []).n == 0
    with pytest.raises(ValueError, match="one baseline per arm value"):
        paired_effect([1.0, 2.0], [1.0])


def test_the_detectable_shift_has_the_power_asked_for() -> None:
    """At the shift it returns, a simulated paired t-test rejects about 80 % of the time."""
    from scipy import stats

    n, sd = 10, 1.0
    delta = detectable_shift(n, sd)
    rng = np.random.default_rng(3)
    samples = rng.normal(delta, sd, size=(20000, n))
    t = samples.mean(axis=1) / (samples.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = np.mean(np.abs(t) > stats.t.ppf(0.975, n - 1))
    assert rejected == pytest.approx(0.80, abs=0.015)
    # for large n it approaches (z_0.975 + z_0.8) sd / sqrt(n)
    assert detectable_shift(2000, 1.0) == pytest.approx((1.959964 + 0.841621) / math.sqrt(2000), rel=0.002)
    assert detectable_shift(10, 0.0) == 0.0 and detectable_shift(1, 1.0) == math.inf


@pytest.mark.parametrize(
    "runs",
    [
        [1.32, 1.81, 1.81],  # asymmetric tack+coalesce at 30 kbit/s (the audit's examples)
        [0.50, 0.96, 0.96],  # one-flow smartacking at 2 Mbit/s
        [2.52, 1.82, 2.52],  # chain switch dynamic_d, 2 hops
        [10.0, 10.2, 10.1, 14.0, 14.1],
    ],
)
def test_two_groups_are_flagged(runs: list[float]) -> None:
    groups = split_groups(runs)
    assert groups is not None
    lower, upper = groups
    assert max(lower) < min(upper) and len(lower) + len(upper) == len(runs)


@pytest.mark.parametrize(
    "runs",
    [
        [1.0, 1.0, 1.001],  # a gap, but a tiny one
        [1.0, 2.0, 3.0, 4.0, 5.0],  # evenly spread: no gap stands out
        [5.0, 9.0],  # two runs cannot show two groups
        [7.0, None, 7.5, 7.2],
    ],
)
def test_one_group_is_not_flagged(runs: list[float | None]) -> None:
    assert split_groups(runs) is None
