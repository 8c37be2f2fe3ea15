"""How long a scenario's screening and confirmation passes take on this machine, estimated from
the records of earlier runs of it (``ackwise experiment estimate``): per run, the median
``duration_s`` of earlier runs (the whole run: test bed set-up, traffic, tear-down) plus the
median gap between runs (the runner's own work: planning, writing the record), times the runs
each pass plans.

Pure: records and planned runs in, seconds out. The gap is from one run's end to the next run's
start in the same results directory; a gap longer than ``PAUSE_S`` is a pause (a resumed matrix,
another job on the lock), not the runner's, and is left out.

The confirmation pass runs, per point, the baseline and the best arm of each place, chosen on the
screening runs; before they have run, which arm wins is unknown, so each place is counted at its
slowest arm: an upper bound.

A scenario that has never run has no records to time from; ``declared`` then times it from the
run length its YAML declares (``duration_hint_s``), and says so: a guess to plan with, not a
measurement."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ackwise.experiments.harness.comparison import category
from ackwise.experiments.harness.runner import PlannedRun
from ackwise.experiments.harness.schema import BASELINE, Arm, RunRecord

PAUSE_S = 300.0
DECLARED = "declared"  # the level of a run timed from the scenario's duration_hint_s


class EstimateError(ValueError):
    pass


@dataclass(frozen=True)
class Timings:
    """Median seconds per run (``duration_s``), at each level of detail the records allow."""

    source: str
    runs: int
    between_s: float  # median gap between one run's end and the next one's start (0 without two in a row)
    between_samples: int
    by_point_arm: dict[tuple[str, str], float]  # (point label, arm label) -> median traffic seconds
    by_arm: dict[str, float]
    by_place: dict[str, float]
    overall: float

    def run_s(self, point: str, arm: Arm) -> tuple[float, str]:
        """Estimated wall seconds of one run, and the level it was matched at."""
        label = arm.label()
        for key, table, level in (
            ((point, label), self.by_point_arm, "point and arm"),
            (label, self.by_arm, "arm"),
            (category(arm.where), self.by_place, "place"),
        ):
            if key in table:
                return table[key] + self.between_s, level  # type: ignore[index]
        return self.overall + self.between_s, "scenario" if self.runs else DECLARED


def _median(values: Iterable[float]) -> float:
    return float(statistics.median(values))


def timings(records: Sequence[RunRecord], source: str) -> Timings:
    """Timings from one results directory's records (its screening and confirmation runs)."""
    done = [r for r in records if r.duration_s > 0]
    if not done:
        raise EstimateError(f"{source}: no timed runs to estimate from: run the scenario with --quick first")
    ordered = sorted(done, key=lambda r: r.started_at)
    gaps = []
    for a, b in itertools.pairwise(ordered):
        gap = (datetime.fromisoformat(b.started_at) - datetime.fromisoformat(a.started_at)).total_seconds()
        gap -= a.duration_s
        # started_at has whole seconds: a gap may come out up to a second below zero.
        if -1.0 <= gap <= PAUSE_S:
            gaps.append(gap)
    groups: dict[str, dict[object, list[float]]] = {"point_arm": {}, "arm": {}, "place": {}}
    for r in done:
        arm = Arm.from_dict(r.arm)
        point = str(r.point.get("label"))
        groups["point_arm"].setdefault((point, arm.label()), []).append(r.duration_s)
        groups["arm"].setdefault(arm.label(), []).append(r.duration_s)
        groups["place"].setdefault(category(arm.where), []).append(r.duration_s)
    med = {name: {k: _median(v) for k, v in g.items()} for name, g in groups.items()}
    return Timings(
        source=source,
        runs=len(done),
        between_s=max(0.0, _median(gaps)) if gaps else 0.0,
        between_samples=len(gaps),
        by_point_arm=med["point_arm"],  # type: ignore[arg-type]
        by_arm=med["arm"],  # type: ignore[arg-type]
        by_place=med["place"],  # type: ignore[arg-type]
        overall=_median(r.duration_s for r in done),
    )


def declared(hint_s: float, source: str) -> Timings:
    """Timings for a scenario with no runs yet: every run takes the ``duration_hint_s`` its YAML
    declares (matched at level ``DECLARED``), nothing between runs."""
    if hint_s <= 0:
        raise EstimateError(f"{source}: duration_hint_s must be positive to estimate from, not {hint_s}")
    return Timings(
        source=source,
        runs=0,
        between_s=0.0,
        between_samples=0,
        by_point_arm={},
        by_arm={},
        by_place={},
        overall=hint_s,
    )


@dataclass(frozen=True)
class PassEstimate:
    runs: int
    seconds: float
    matched: dict[str, int]  # level -> runs estimated at that level


def screening(planned: Sequence[PlannedRun], t: Timings) -> PassEstimate:
    seconds = 0.0
    matched: dict[str, int] = {}
    for run in planned:
        s, level = t.run_s(run.point.label, run.arm)
        seconds += s
        matched[level] = matched.get(level, 0) + 1
    return PassEstimate(len(planned), seconds, matched)


def confirmation(
    planned: Sequence[PlannedRun],
    t: Timings,
    blocks: int,
    baseline: Arm | None = None,
    named: Sequence[Arm] = (),
) -> PassEstimate:
    """The confirmation pass after ``planned`` screening runs: per point, ``blocks`` blocks of the
    scenario's ``baseline`` (nothing on by default) and the ``named`` arms (its confirm_arms), else
    one arm per place, each place at its slowest arm (upper bound)."""
    baseline = baseline if baseline is not None else Arm()
    points: dict[str, dict[str, list[Arm]]] = {}
    for run in planned:
        if run.arm != baseline:
            points.setdefault(run.point.label, {}).setdefault(category(run.arm.where), []).append(run.arm)
    seconds = 0.0
    runs = 0
    matched: dict[str, int] = {}
    for point, places in points.items():
        confirmed = list(named) or [
            max(arms, key=lambda a: t.run_s(point, a)[0])
            for place, arms in places.items()
            if place != BASELINE
        ]
        for arm in [baseline, *(a for a in confirmed if a != baseline)]:
            s, level = t.run_s(point, arm)
            seconds += s * blocks
            runs += blocks
            matched[level] = matched.get(level, 0) + blocks
    return PassEstimate(runs, seconds, matched)
