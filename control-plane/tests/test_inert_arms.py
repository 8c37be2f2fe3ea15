"""A switch arm whose switches thinned next to nothing is inert: its runs are the baseline's. It is
shown but not ranked, so a place's verdict and the confirmation pass rest on an arm that acted.
The bfaedbc run's two-two, different-rtt, parking-lot and tcp-udp-onoff screenings each chose
switch coalesce, on ports that never queue, as their best switch arm (docs/results.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from results_fixtures import BASELINE_ARM, POINTS, SWITCH_ARM, make_record, manifest

from ackwise.experiments.harness.comparison import (
    INERT_THINNED_FRACTION,
    arm_results,
    best_per_category,
    inert_reason,
)
from ackwise.experiments.harness.report import write_report
from ackwise.experiments.harness.schema import Arm, PolicySpec, RunRecord
from ackwise.experiments.harness.store import ResultStore

TACK_ARM = Arm(switch=PolicySpec("tack"), switches=("s1",))
POINT = POINTS[0]


def switch_series(seen: int, thinned: int, switches: int = 1) -> list[dict[str, Any]]:
    """The runner's switch_policies series: each switch saw ``seen`` and thinned ``thinned``."""
    return [
        {
            "switch": f"s{i + 1}",
            "flows": 1,
            "acks_seen": seen,
            "acks_forwarded": seen - thinned,
            "acks_thinned": thinned,
            "acks_absorbed": thinned,
        }
        for i in range(switches)
    ]


def run(arm: Arm, repeat: int, completion_s: float, seen: int | None = None, thinned: int = 0) -> RunRecord:
    record = make_record(POINT, arm, repeat, completion_s=completion_s)
    if seen is not None:
        record.series["switch_policies"] = switch_series(seen, thinned)
    return record


def test_a_switch_that_thinned_nothing_is_inert() -> None:
    runs = [run(SWITCH_ARM, rep, 5.0, seen=400, thinned=0) for rep in range(3)]
    assert inert_reason(runs) == "its switches thinned 0 of the 1200 pure ACKs they saw (0 %, 3 runs)"


def test_the_share_is_over_every_switch_and_run_and_the_bound_is_inclusive() -> None:
    at_bound = int(INERT_THINNED_FRACTION * 1000)
    runs = [run(SWITCH_ARM, 0, 5.0, seen=500, thinned=at_bound), run(SWITCH_ARM, 1, 5.0, seen=500, thinned=0)]
    assert inert_reason(runs) is not None
    runs[1].series["switch_policies"] = switch_series(500, 1)
    assert inert_reason(runs) is None  # 11 of 1000: it acted


def test_a_switch_that_saw_no_ack_is_inert() -> None:
    runs = [run(SWITCH_ARM, 0, 5.0, seen=0)]
    assert inert_reason(runs) == "its switches saw no pure ACK (1 run)"


def test_records_that_do_not_say_what_the_switches_did_are_not_judged() -> None:
    # an arm without a switch policy, or a record from before the series: no claim either way
    assert inert_reason([run(SWITCH_ARM, 0, 5.0)]) is None
    assert inert_reason([run(SWITCH_ARM, 0, 5.0, seen=400), run(SWITCH_ARM, 1, 5.0)]) is None
    failed = make_record(POINT, SWITCH_ARM, 2, status="failed", reason="x")
    assert inert_reason([run(SWITCH_ARM, 0, 5.0, seen=400), failed]) is not None


def blocks() -> list[RunRecord]:
    """Three blocks: the inert coalesce arm happens to be fastest (noise), tack acted and is slower."""
    records = []
    for rep, (base, inert, acted) in enumerate([(10.0, 9.0, 9.8), (10.5, 9.4, 10.2), (11.0, 9.9, 10.9)]):
        records += [
            run(BASELINE_ARM, rep, base),
            run(SWITCH_ARM, rep, inert, seen=400, thinned=2),
            run(TACK_ARM, rep, acted, seen=400, thinned=300),
        ]
    return records


def test_the_best_switch_arm_is_one_that_acted() -> None:
    results = arm_results(blocks(), "completion_s", {})
    inert = next(r for r in results if r.label == SWITCH_ARM.label())
    assert inert.effect is not None and inert.effect.estimate is not None and inert.effect.estimate < 0.91
    assert inert.inert is not None
    best = best_per_category(results, "lower")
    assert best[(POINT.label, "switch")].label == TACK_ARM.label()


def test_only_inert_arms_leave_the_place_without_a_verdict() -> None:
    records = [r for r in blocks() if r.arm["label"] != TACK_ARM.label()]
    assert (POINT.label, "switch") not in best_per_category(arm_results(records, "completion_s", {}), "lower")


def test_the_report_names_the_inert_arm_and_ranks_the_other(tmp_path: Path) -> None:
    store = ResultStore.open(
        tmp_path / "inert", manifest(repeats=3, arms=[BASELINE_ARM, SWITCH_ARM, TACK_ARM])
    )
    for record in blocks():
        store.append(record)
    markdown = write_report(store.directory).markdown.read_text(encoding="utf-8")
    note = next(line for line in markdown.splitlines() if line.startswith("Not ranked, inert"))
    assert f"{SWITCH_ARM.label()} at {POINT.label} (its switches thinned 6 of the 1200 pure ACKs" in note
    assert TACK_ARM.label() not in note
    lines = markdown.splitlines()
    table = lines.index(next(line for line in lines if line.startswith("| completion_s at |")))
    row = next(line for line in lines[table:] if line.startswith(f"| {POINT.label} |"))
    assert f"**{TACK_ARM.label()}**" in row and SWITCH_ARM.label() not in row
