"""ackwise experiment estimate: per-run times from records, matched at the finest level there
is, gaps between runs without pauses, and the confirmation pass counted at each place's slowest
arm."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from results_fixtures import ARMS, POINTS, build_store, make_record

from ackwise.experiments.harness import estimate
from ackwise.experiments.harness.runner import PlannedRun
from ackwise.experiments.harness.schema import Arm, PolicySpec, RunRecord

T0 = datetime(2026, 11, 27, 12, 0, 0)


def timed(records_and_durations: list[tuple[RunRecord, float]], gap_s: float = 2.0) -> list[RunRecord]:
    """Records run one after another, ``gap_s`` apart (end to start)."""
    t = T0
    out = []
    for r, d in records_and_durations:
        r.started_at = t.strftime("%Y-%m-%dT%H:%M:%S+0000")
        r.duration_s = d
        out.append(r)
        t += timedelta(seconds=d + gap_s)
    return out


def planned(point: int, arm: Arm) -> PlannedRun:
    return PlannedRun("asym-dumbbell", POINTS[point], arm, 0, 1, "id", {})


def test_per_run_time_is_the_median_of_its_point_and_arm_plus_the_gap() -> None:
    records = timed([(make_record(POINTS[0], ARMS[1], rep), d) for rep, d in enumerate([10.0, 30.0, 12.0])])
    t = estimate.timings(records, "dir")
    assert t.between_s == pytest.approx(2.0)
    assert t.run_s(POINTS[0].label, ARMS[1]) == (pytest.approx(14.0), "point and arm")


def test_a_pause_between_runs_is_not_counted_as_a_gap() -> None:
    records = timed([(make_record(POINTS[0], ARMS[0], rep), 10.0) for rep in range(3)], gap_s=1.0)
    records[2].started_at = (T0 + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    t = estimate.timings(records, "dir")
    assert t.between_samples == 1 and t.between_s == pytest.approx(1.0)


def test_unmatched_runs_fall_back_to_arm_then_place_then_scenario() -> None:
    records = timed(
        [(make_record(POINTS[0], ARMS[1], 0), 20.0), (make_record(POINTS[0], ARMS[0], 0), 4.0)], 0.0
    )
    t = estimate.timings(records, "dir")
    assert t.run_s(POINTS[1].label, ARMS[1]) == (pytest.approx(20.0), "arm")
    other_host = Arm(host=PolicySpec("tack"))
    assert t.run_s(POINTS[1].label, other_host) == (pytest.approx(20.0), "place")
    assert t.run_s(POINTS[1].label, ARMS[3]) == (pytest.approx(12.0), "scenario")
    screen = estimate.screening([planned(0, ARMS[1]), planned(1, ARMS[1]), planned(1, ARMS[3])], t)
    assert screen.runs == 3 and screen.seconds == pytest.approx(52.0)
    assert screen.matched == {"point and arm": 1, "arm": 1, "scenario": 1}


def test_confirmation_counts_the_baseline_and_each_places_slowest_arm() -> None:
    slow_host = Arm(host=PolicySpec("tack"))
    records = timed(
        [
            (make_record(POINTS[0], ARMS[0], 0), 10.0),
            (make_record(POINTS[0], ARMS[1], 0), 20.0),
            (make_record(POINTS[0], slow_host, 0), 50.0),
            (make_record(POINTS[0], ARMS[2], 0), 5.0),
        ],
        0.0,
    )
    t = estimate.timings(records, "dir")
    screen = [planned(0, a) for a in (ARMS[0], ARMS[1], slow_host, ARMS[2])]
    confirm = estimate.confirmation(screen, t, blocks=10)
    # Per block: baseline 10 + host at its slowest 50 + switch 5; 10 blocks.
    assert confirm.runs == 30 and confirm.seconds == pytest.approx(650.0)


def test_confirmation_counts_the_scenarios_baseline_arm_and_its_named_arms() -> None:
    """A baseline_arm (the chain's standard TCP) is timed as itself, not as nothing on, and is not
    one of its place's arms; confirm_arms replaces the slowest arm of each place."""
    records = timed(
        [
            (make_record(POINTS[0], ARMS[0], 0), 10.0),
            (make_record(POINTS[0], ARMS[1], 0), 70.0),  # the baseline arm, the slowest host arm
            (make_record(POINTS[0], Arm(host=PolicySpec("tack")), 0), 20.0),
            (make_record(POINTS[0], ARMS[2], 0), 5.0),
        ],
        0.0,
    )
    t = estimate.timings(records, "dir")
    tack = Arm(host=PolicySpec("tack"))
    screen = [planned(0, a) for a in (ARMS[0], ARMS[1], tack, ARMS[2])]
    confirm = estimate.confirmation(screen, t, blocks=10, baseline=ARMS[1])
    # Per block: the baseline arm 70 + the other host arm 20 + switch 5 (nothing on is not confirmed).
    assert confirm.runs == 30 and confirm.seconds == pytest.approx(950.0)
    named = estimate.confirmation(screen, t, blocks=10, baseline=ARMS[0], named=[ARMS[1], tack, ARMS[2]])
    assert named.runs == 40 and named.seconds == pytest.approx(1050.0)  # 10 + 70 + 20 + 5


def test_no_timed_runs_name_the_fix() -> None:
    with pytest.raises(estimate.EstimateError, match="--quick first"):
        estimate.timings([], "results/x")


def test_a_scenario_never_run_is_timed_from_its_declared_hint_and_says_so() -> None:
    t = estimate.declared(25.0, "wlan-comparison.yaml")
    assert t.run_s(POINTS[0].label, ARMS[1]) == (pytest.approx(25.0), estimate.DECLARED)
    screen = estimate.screening([planned(0, ARMS[0]), planned(1, ARMS[1])], t)
    assert screen.seconds == pytest.approx(50.0) and screen.matched == {estimate.DECLARED: 2}


def test_a_declared_hint_must_be_positive() -> None:
    with pytest.raises(estimate.EstimateError, match="duration_hint_s"):
        estimate.declared(0.0, "x.yaml")


@pytest.mark.parametrize("same_yaml", [True, False])
def test_the_cli_says_when_it_timed_from_runs_of_an_earlier_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], same_yaml: bool
) -> None:
    from ackwise.cli import app as cli
    from ackwise.experiments.harness.scenario import load

    scenario = load("two-two")
    store = build_store(tmp_path)
    for repeat in range(2):
        r = make_record(POINTS[0], ARMS[0], 10 + repeat, scenario="two-two")
        r.provenance = {"scenario_sha256": scenario.source_sha256 if same_yaml else "0" * 64}
        store.append(r)
    assert cli.main(["experiment", "estimate", "two-two", "--timings", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("earlier version of its YAML" in out) is not same_yaml
    assert "2 runs" in out


def test_estimate_times_from_any_results_directory_preferring_the_current_yaml(tmp_path: Path) -> None:
    """A scenario's runs may be in any results directory (results/NAME, docs/NAME-accept): the
    one with runs of the current YAML wins over one with more runs of an earlier YAML; other
    scenarios' runs are not counted. Before, only results/NAME(-quick) and docs/results/NAME were
    read, so chain-window and chain-short-flows, published under docs/, were timed from guesses."""
    from ackwise.cli.experiment import _timing_records
    from ackwise.experiments.harness.scenario import load

    scenario = load("two-two")
    old, new, other = tmp_path / "old", tmp_path / "docs-accept", tmp_path / "other"
    for d, n, sha, name in (
        (old, 3, "0" * 64, "two-two"),
        (new, 2, scenario.source_sha256, "two-two"),
        (other, 4, scenario.source_sha256, "one-flow"),
    ):
        store = build_store(d)
        for repeat in range(n):
            r = make_record(POINTS[0], ARMS[0], 10 + repeat, scenario=name)
            r.provenance = {"scenario_sha256": sha}
            store.append(r)
    source, records, current = _timing_records(scenario, [old, new, other])
    assert (source, len(records), current) == (new, 2, True)
    source, records, current = _timing_records(scenario, [old, other])
    assert (source, len(records), current) == (old, 3, False)
    assert _timing_records(scenario, [other]) == (None, [], False)
