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

from .schema import METRICS, RunRecord

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
