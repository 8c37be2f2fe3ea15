"""Statistics over repeated runs: means with Student-t confidence intervals, Jain's fairness index,
values relative to a baseline, percentiles, and records grouped by scenario, point and arm.

Missing values (``None``, and NaN) are left out everywhere: ``n`` counts the values used. Where a
quantity is undefined (the mean of nothing, the interval of one value) it is ``None``, never a
made-up number, so that tables print it as missing instead of as a result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as scipy_stats
from scipy.optimize import brentq

from ackwise.experiments.harness.schema import METRICS, RunRecord

DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    """The mean of ``n`` values and its two-sided Student-t confidence interval.

    ``n == 0``: every field but ``n`` is None. ``n == 1``: ``mean`` is the value; ``stdev``,
    ``half_width``, ``ci_low`` and ``ci_high`` are None (one run says nothing about the spread).
    """

    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    half_width: float | None
    stdev: float | None  # sample standard deviation (n - 1 in the denominator)
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def has_interval(self) -> bool:
        return self.half_width is not None

    def overlaps(self, other: Summary) -> bool | None:
        """Whether the two confidence intervals overlap; None when either has no interval."""
        if self.ci_low is None or self.ci_high is None or other.ci_low is None or other.ci_high is None:
            return None
        return self.ci_low <= other.ci_high and other.ci_low <= self.ci_high


def present(values: Iterable[float | int | None]) -> list[float]:
    """The values that are there: None and NaN dropped."""
    return [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def mean_ci(values: Iterable[float | int | None], confidence: float = DEFAULT_CONFIDENCE) -> Summary:
    """Mean and Student-t confidence interval of the values present (see :class:`Summary`)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), not {confidence}")
    xs = present(values)
    n = len(xs)
    if n == 0:
        return Summary(0, None, None, None, None, None, confidence)
    mean = math.fsum(xs) / n
    if n == 1:
        return Summary(1, mean, None, None, None, None, confidence)
    # Equal values have no spread; numpy's float arithmetic could still give 1e-17 and a bogus interval.
    stdev = 0.0 if min(xs) == max(xs) else float(np.std(xs, ddof=1))
    t = float(scipy_stats.t.ppf((1 + confidence) / 2, df=n - 1))
    half_width = t * stdev / math.sqrt(n)
    return Summary(n, mean, mean - half_width, mean + half_width, half_width, stdev, confidence)


def jain_index(values: Iterable[float | int | None]) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²) of the values present, in [1/n, 1].

    None for no values. 1.0 when every value is 0: all flows got the same (nothing), which is what
    the index measures; the goodput itself shows that it was nothing.
    """
    xs = present(values)
    if not xs:
        return None
    if any(x < 0 for x in xs):
        raise ValueError(f"Jain's index is defined for non-negative allocations; got {min(xs)}")
    squares = math.fsum(x * x for x in xs)
    if squares == 0:
        return 1.0
    return math.fsum(xs) ** 2 / (len(xs) * squares)


def relative(values: Iterable[float | int | None], baseline_mean: float | None) -> list[float | None]:
    """Each value divided by the baseline's mean (None stays None)."""
    if baseline_mean is None or baseline_mean == 0 or math.isnan(baseline_mean):
        raise ValueError(
            f"cannot divide by a baseline mean of {baseline_mean}: the baseline arm needs at least one "
            "non-zero value at this point"
        )
    return [None if v is None else float(v) / baseline_mean for v in values]


def percentile(values: Iterable[float | int | None], q: float) -> float | None:
    """The q-th percentile (0..100, linear interpolation) of the values present; None for none."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be between 0 and 100, not {q}")
    xs = present(values)
    return float(np.percentile(xs, q)) if xs else None


def change_percent(value: float | None, baseline: float | None) -> float | None:
    """(value - baseline) / baseline in percent; None when either is missing or the baseline is 0."""
    if value is None or baseline is None or baseline == 0:
        return None
    return (value - baseline) / abs(baseline) * 100


def better_of(metric: str, a: float, b: float) -> bool:
    """Whether ``a`` is strictly better than ``b`` for this metric (METRICS[metric].better)."""
    direction = METRICS[metric].better
    if direction == "lower":
        return a < b
    if direction == "higher":
        return a > b
    raise ValueError(f"metric {metric!r} has no better direction in schema.METRICS; it cannot rank arms")


@dataclass
class Group:
    """The runs of one (scenario, point, arm): the ok ones summarised per metric, the failed counted."""

    scenario: str
    point: dict[str, Any]
    arm: dict[str, Any]
    ok: list[RunRecord] = field(default_factory=list)
    failed: list[RunRecord] = field(default_factory=list)
    metrics: dict[str, Summary] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.point_label, self.arm_label)

    @property
    def point_label(self) -> str:
        return str(self.point.get("label"))

    @property
    def arm_label(self) -> str:
        return str(self.arm.get("label"))

    @property
    def where(self) -> str:
        return str(self.arm.get("where"))

    @property
    def x(self) -> Any:
        return self.point.get("x")

    @property
    def n_failed(self) -> int:
        return len(self.failed)

    def values(self, metric: str) -> list[float | int | None]:
        """The metric of every ok run, in repeat order (None where a run did not measure it)."""
        return [r.metrics.get(metric) for r in self.ok]


def group_records(
    records: Iterable[RunRecord],
    metrics: Sequence[str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[Group]:
    """Records grouped by (scenario, point label, arm label), in order of first appearance.

    Each group's ``metrics`` has a :class:`Summary` over its ok runs for each metric in
    ``metrics`` (default: every METRICS key any record has); failed runs are only counted. Ok runs
    are sorted by repeat, so "the first ok repeat" is ``group.ok[0]``.
    """
    groups: dict[tuple[str, str, str], Group] = {}
    for r in records:
        key = (r.scenario, str(r.point.get("label")), str(r.arm.get("label")))
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(r.scenario, r.point, r.arm)
        (group.ok if r.status == "ok" else group.failed).append(r)
    if metrics is None:
        seen = {m for g in groups.values() for r in g.ok for m in r.metrics}
        metrics = [m for m in METRICS if m in seen]
    for group in groups.values():
        group.ok.sort(key=lambda r: r.repeat)
        group.failed.sort(key=lambda r: r.repeat)
        group.metrics = {m: mean_ci(group.values(m), confidence) for m in metrics}
    return list(groups.values())


# ---- paired comparisons (blocks: every arm of a point once, same seeds) ----

DEFAULT_POWER = 0.8
# An arm is "split" when its runs fall into two groups: sorted, the largest gap between neighbours
# is more than SPLIT_GAP_FACTOR times the larger range inside either group, and more than
# SPLIT_MIN_GAP of the median (so that 1.000 / 1.000 / 1.001 is not two groups). Needs 3 runs.
SPLIT_GAP_FACTOR = 3.0
SPLIT_MIN_GAP = 0.05
SPLIT_MIN_RUNS = 3


@dataclass(frozen=True)
class PairedEffect:
    """An arm against the baseline over ``n`` blocks: each block's effect is the arm's value over
    the baseline's in that block (a ratio), or, where a value is 0 or negative, their difference.

    Ratios: paired t on the logs of the per-block ratios; ``estimate`` is their geometric mean,
    the interval its exp. Differences: paired t on the differences. ``detectable`` is the smallest
    true effect (as a ratio above 1, or a difference above 0) a two-sided paired t-test at
    1 - confidence would find with probability ``power`` for this n and spread: what "no
    difference detected" can rule out. None where n < 2 (nothing to say about the spread)."""

    n: int
    scale: str  # "ratio" or "difference"
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    detectable: float | None
    confidence: float = DEFAULT_CONFIDENCE
    power: float = DEFAULT_POWER

    @property
    def neutral(self) -> float:
        return 1.0 if self.scale == "ratio" else 0.0

    def direction(self) -> int:
        """+1 when the interval lies above neutral, -1 below, 0 when it holds it (or is missing)."""
        if self.ci_low is None or self.ci_high is None:
            return 0
        if self.ci_low > self.neutral:
            return 1
        if self.ci_high < self.neutral:
            return -1
        return 0

    def verdict(self, better: str) -> str:
        """better / worse / no difference detected / too few blocks, for a metric where ``better``
        is "lower" or "higher"."""
        if self.n < 2 or self.ci_low is None:
            return "too few blocks"
        sign = self.direction()
        if sign == 0:
            return "no difference detected"
        if better not in ("lower", "higher"):
            raise ValueError(f"better must be 'lower' or 'higher', not {better!r}")
        return "better" if (sign > 0) == (better == "higher") else "worse"


def detectable_shift(
    n: int, sd: float, confidence: float = DEFAULT_CONFIDENCE, power: float = DEFAULT_POWER
) -> float:
    """The smallest mean shift δ (in the units of ``sd``'s values) a two-sided one-sample t-test
    of n values with standard deviation ``sd`` detects with probability ``power`` at level
    1 - confidence (noncentral t, solved for δ). 0 when sd is 0; inf when n < 2."""
    if n < 2:
        return math.inf
    if sd == 0:
        return 0.0
    df = n - 1
    t_crit = float(scipy_stats.t.ppf((1 + confidence) / 2, df))

    def power_at(delta: float) -> float:
        # scipy's noncentral t gives NaN far out in a tail: there the tail is 0 (the far side) or
        # everything (the near side, once the noncentrality is well past the critical value).
        nc = delta * math.sqrt(n) / sd
        upper = float(scipy_stats.nct.sf(t_crit, df, nc))
        if math.isnan(upper):
            upper = 1.0 if nc > t_crit else 0.0
        lower = float(scipy_stats.nct.cdf(-t_crit, df, nc))
        return upper + (0.0 if math.isnan(lower) else lower)

    # Bracket from the normal approximation (z_{1-a/2} + z_power) sd / sqrt(n), which the t-test
    # needs a little more than; noncentral t turns to NaN for noncentralities far beyond it.
    approx = (scipy_stats.norm.ppf((1 + confidence) / 2) + scipy_stats.norm.ppf(power)) * sd / math.sqrt(n)
    high = 2 * approx
    while power_at(high) < power:
        high *= 2
    return float(brentq(lambda d: power_at(d) - power, 0.0, high, xtol=sd * 1e-9))


def paired_effect(
    arm: Sequence[float],
    baseline: Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
    power: float = DEFAULT_POWER,
) -> PairedEffect:
    """The arm's effect over the baseline from values paired by block (arm[i] with baseline[i])."""
    if len(arm) != len(baseline):
        raise ValueError(f"paired values need one baseline per arm value: {len(arm)} vs {len(baseline)}")
    pairs = [(float(a), float(b)) for a, b in zip(arm, baseline, strict=True)]
    n = len(pairs)
    as_ratio = all(a > 0 and b > 0 for a, b in pairs)
    scale = "ratio" if as_ratio else "difference"
    if n == 0:
        return PairedEffect(0, scale, None, None, None, None, confidence, power)
    diffs = [math.log(a / b) for a, b in pairs] if as_ratio else [a - b for a, b in pairs]
    back = math.exp if as_ratio else (lambda x: x)
    mean = math.fsum(diffs) / n
    if n == 1:
        return PairedEffect(1, scale, back(mean), None, None, None, confidence, power)
    sd = 0.0 if min(diffs) == max(diffs) else float(np.std(diffs, ddof=1))
    t = float(scipy_stats.t.ppf((1 + confidence) / 2, df=n - 1))
    half = t * sd / math.sqrt(n)
    shift = detectable_shift(n, sd, confidence, power)
    return PairedEffect(
        n, scale, back(mean), back(mean - half), back(mean + half), back(shift), confidence, power
    )


def split_groups(values: Iterable[float | int | None]) -> tuple[list[float], list[float]] | None:
    """The two groups an arm's runs form (lower, upper), or None when they do not form two (the
    rule beside SPLIT_GAP_FACTOR)."""
    xs = sorted(present(values))
    if len(xs) < SPLIT_MIN_RUNS:
        return None
    gaps = [(xs[i] - xs[i - 1], i) for i in range(1, len(xs))]
    gap, cut = max(gaps)
    lower, upper = xs[:cut], xs[cut:]
    spread = max(lower[-1] - lower[0], upper[-1] - upper[0])
    median = float(np.median(xs))
    if gap <= SPLIT_GAP_FACTOR * spread or gap <= SPLIT_MIN_GAP * abs(median):
        return None
    return lower, upper
