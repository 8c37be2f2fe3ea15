"""Provenance kept apart, shards merged only when they are one matrix, and two result sets
compared: refusals and answers worked out from the records."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
from results_fixtures import ARMS, POINTS, make_record, manifest

from ackwise.experiments.harness.comparison import compare_sets, provenance_differences, provenance_rows
from ackwise.experiments.harness.report import ReportError, build_report
from ackwise.experiments.harness.runner import ExperimentError, plan, plan_confirmation
from ackwise.experiments.harness.scenario import load
from ackwise.experiments.harness.schema import Arm, RunRecord
from ackwise.experiments.harness.store import ResultStore, StoreMismatch, merge_shards

HOST_SETTINGS = {
    "tcp_congestion_control": "cubic",
    "tcp_ecn": "1",
    "tcp_sack": "1",
    "tcp_timestamps": "1",
    "initcwnd": "kernel default",
    "initrwnd": "kernel default",
    "offloads": {"h1-eth0": {"tcp-segmentation-offload": "off", "generic-receive-offload": "off"}},
}
FAST_BUILD = {"kind": "fast", "logging_macros": False, "event_logger": False, "optimisation": "-O3"}


def provenance(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "hosts": {"h1": copy.deepcopy(HOST_SETTINGS), "r1": copy.deepcopy(HOST_SETTINGS)},
        "bmv2_builds": {"s1": {**FAST_BUILD, "executable": "/opt/x/bin/simple_switch"}},
        "link_model": "linkem 1",
        "scenario_sha256": "ab" * 32,
        "scale": {"factor": 0.1},
    }
    for path, value in changes.items():
        node = doc
        keys = path.split("__")
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return doc


def record(point: int, arm: int, repeat: int, value: float, **changes: Any) -> RunRecord:
    r = make_record(POINTS[point], ARMS[arm], repeat, completion_s=value)
    r.provenance = provenance(**changes)
    return r


def test_the_same_conditions_pool() -> None:
    records = [record(0, a, rep, 5.0) for a in range(2) for rep in range(3)]
    assert provenance_differences(records) == []
    rows = dict(provenance_rows(records))
    assert rows["bmv2 build of the switches"] == "fast (-O3, no logging macros, no event logger)"
    assert rows["h1: TCP"].startswith("cubic, ECN 1, SACK 1, timestamps 1, initcwnd kernel default")
    assert rows["link model"] == "linkem 1"


def test_a_build_or_a_sender_that_differs_is_named() -> None:
    records = [record(0, 0, 0, 5.0), record(0, 0, 1, 5.0, bmv2_builds__s1__logging_macros=True)]
    (difference,) = provenance_differences(records)
    assert "bmv2_builds" in difference and records[1].run_id in difference
    records = [record(0, 1, 0, 5.0), record(0, 1, 1, 5.0, hosts__h1__tcp_congestion_control="bbr")]
    (difference,) = provenance_differences(records)
    assert difference.startswith(f"point {POINTS[0].label}, arm {ARMS[1].label()}")
    assert '"cubic" -> "bbr"' in difference
    # A sender setting may differ between arms (a scenario may set each arm's sender): not a mix.
    assert provenance_differences([record(0, 0, 0, 5.0), record(0, 1, 0, 5.0, hosts__h1__tcp_sack="0")]) == []


def test_points_with_their_own_hosts_pool() -> None:
    """Regression (issue 37): a WLAN scenario's points with 1 and 3 stations have hosts sta2 and
    sta3 at one point only; the check compared each arm's runs across points, and the report
    refused to pool wlan-comparison's records ('hosts.sta2 removed') unless told to mix."""
    three = {"hosts__sta2": copy.deepcopy(HOST_SETTINGS), "hosts__sta3": copy.deepcopy(HOST_SETTINGS)}
    records = [
        record(p, a, rep, 5.0, **(three if p == 1 else {}))
        for p in range(2)
        for a in range(2)
        for rep in range(2)
    ]
    assert provenance_differences(records) == []
    # within one point, a station that comes and goes is still a difference
    mixed = [record(1, 0, 0, 5.0, **three), record(1, 0, 1, 5.0)]
    (first, second) = provenance_differences(mixed)
    assert first.startswith(f"point {POINTS[1].label}, arm {ARMS[0].label()}")
    assert "hosts.sta2 removed" in first and "hosts.sta3 removed" in second


def test_the_report_refuses_mixed_provenance_unless_told(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path / "mixed", manifest())
    for rep in range(2):
        for a in range(2):
            store.append(record(0, a, rep, 5.0 + rep, link_model="linkem 1" if rep == 0 else "linkem 2"))
    with pytest.raises(ReportError, match=r"link_model.*--allow-mixed-provenance"):
        build_report(store, draw_figures=False)
    report = build_report(store, draw_figures=False, allow_mixed_provenance=True)
    assert any("provenance differs" in w and "linkem 2" in w for w in report.warnings)
    assert dict(report.run_provenance)["link model"] == "linkem 1 (2 runs); linkem 2 (2 runs)"


def shard_manifest(k: int, n: int) -> dict[str, Any]:
    m = manifest()
    m["matrix"]["shard"] = [k, n]
    return m


def test_shards_merge_into_one_matrix(tmp_path: Path) -> None:
    dirs = []
    for k in (1, 2):
        store = ResultStore.open(tmp_path / f"s{k}", shard_manifest(k, 2))
        for a in range(len(ARMS)):
            store.append(record(k - 1, a, 0, 5.0 + a))
        dirs.append(store.directory)
    merged = merge_shards(dirs, tmp_path / "merged")
    assert len(merged.records()) == 2 * len(ARMS)
    assert merged.manifest["matrix"]["merged_shards"] == ["1/2", "2/2"]
    assert "shard" not in merged.manifest["matrix"]
    # merging the same shards again rebuilds the merge, not appends to it
    assert len(merge_shards(dirs, tmp_path / "merged").records()) == 2 * len(ARMS)


def test_shard_merges_are_refused_when_they_are_not_one_matrix(tmp_path: Path) -> None:
    a = ResultStore.open(tmp_path / "a", shard_manifest(1, 2))
    a.append(record(0, 0, 0, 5.0))
    twice = ResultStore.open(tmp_path / "twice", shard_manifest(1, 2))
    twice.append(record(1, 0, 0, 5.0))
    with pytest.raises(StoreMismatch, match="a shard is given twice"):
        merge_shards([a.directory, twice.directory], tmp_path / "m1")
    overlap = ResultStore.open(tmp_path / "overlap", shard_manifest(2, 2))
    overlap.append(record(0, 0, 0, 5.0))  # the same run as in shard 1
    with pytest.raises(StoreMismatch, match="is in both"):
        merge_shards([a.directory, overlap.directory], tmp_path / "m2")
    other_split = ResultStore.open(tmp_path / "other", shard_manifest(2, 3))
    with pytest.raises(StoreMismatch, match="different splits"):
        merge_shards([a.directory, other_split.directory], tmp_path / "m3")
    seeded = shard_manifest(2, 2)
    seeded["matrix"]["seed"] = 7
    other_seed = ResultStore.open(tmp_path / "seed", seeded)
    with pytest.raises(StoreMismatch, match="matrix seed 7"):
        merge_shards([a.directory, other_seed.directory], tmp_path / "m4")
    whole = ResultStore.open(tmp_path / "whole", manifest())
    with pytest.raises(StoreMismatch, match="not a shard"):
        merge_shards([a.directory, whole.directory], tmp_path / "m5")


def test_compare_pairs_blocks_with_the_same_seeds() -> None:
    first = [make_record(POINTS[0], ARMS[0], rep, completion_s=v) for rep, v in enumerate([10.0, 20.0, 30.0])]
    second = [make_record(POINTS[0], ARMS[0], rep, completion_s=v) for rep, v in enumerate([9.0, 18.0, 27.0])]
    (c,) = compare_sets(first, second, "completion_s")
    assert c.paired and c.ratio == pytest.approx(0.9) and c.ci_high == pytest.approx(0.9)
    assert c.verdict == "better"


def test_compare_without_common_seeds_is_welch_on_logs() -> None:
    first = [make_record(POINTS[0], ARMS[0], rep, completion_s=v) for rep, v in enumerate([10.0, 11.0, 12.0])]
    second = [
        make_record(POINTS[0], ARMS[0], rep + 5, completion_s=v) for rep, v in enumerate([10.5, 11.5, 12.5])
    ]
    (c,) = compare_sets(first, second, "completion_s")
    la, lb = [math.log(v) for v in (10.0, 11.0, 12.0)], [math.log(v) for v in (10.5, 11.5, 12.5)]
    assert not c.paired and c.ratio == pytest.approx(math.exp(sum(lb) / 3 - sum(la) / 3))
    assert c.ci_low < 1 < c.ci_high and c.verdict == "no difference detected"  # type: ignore[operator]


def test_the_confirmation_pass_runs_fresh_blocks_of_the_chosen_arms() -> None:
    scenario = load("asymmetric")
    point = scenario.points[0].label
    chosen = [a for a in scenario.arms if a.host is not None][:1] + [a for a in scenario.arms if a.switch][:1]
    runs = plan_confirmation(scenario, {point: chosen}, blocks=10, first_repeat=3, seed=1)
    assert len(runs) == 10 * 3
    assert {r.arm for r in runs} == {Arm(), *chosen}
    assert {r.repeat for r in runs} == set(range(3, 13))
    screening = {r.seed for r in plan(scenario, seed=1)}
    assert not {r.seed for r in runs} & screening  # fresh traffic, not the draws the arms were picked on
    with pytest.raises(ExperimentError, match="at least 2"):
        plan_confirmation(scenario, {point: chosen}, blocks=1)
