"""The results directory: manifest, append-only runs.jsonl, resume, mismatch, torn lines."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
from results_fixtures import (
    AP_ARM,
    ARMS,
    BASELINE_ARM,
    CODE,
    COMMAND,
    HOST_ARM,
    POINTS,
    SCENARIO,
    make_record,
    manifest,
)

from ackwise.experiments.harness.schema import PER_POINT, RunRecord
from ackwise.experiments.harness.store import (
    CorruptStore,
    InvalidRecord,
    ResultStore,
    StoreError,
    StoreMismatch,
    TornLineWarning,
    validate_record,
)


def test_open_creates_the_directory_and_its_manifest(tmp_path: Path) -> None:
    out = tmp_path / "results" / "asym"
    store = ResultStore.open(out, manifest())
    stored = json.loads((out / "manifest.json").read_text())
    assert stored["schema"] == 1
    assert stored["scenario"] == SCENARIO
    assert stored["code_version"] == CODE and stored["code_versions"] == [CODE]
    assert stored["command"] == COMMAND
    assert [p["label"] for p in stored["matrix"]["points"]] == [p.label for p in POINTS]
    assert [a["label"] for a in stored["matrix"]["arms"]] == [a.label() for a in ARMS]
    assert stored["matrix"]["repeats"] == 3 and stored["matrix"]["quick"] is False
    assert "created_at" in stored
    assert store.records() == [] and store.completed() == set()
    assert not list(out.glob(".manifest.json.*")), "the temporary manifest file was left behind"


def test_records_round_trip_and_resume_skips_done_runs(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path, manifest())
    first = make_record(POINTS[0], BASELINE_ARM, 0, completion_s=10.0, with_series=True)
    second = make_record(POINTS[0], HOST_ARM, 0, completion_s=8.0)
    store.append(first)
    store.append(second)
    created_at = store.manifest["created_at"]

    again = ResultStore.open(tmp_path, manifest())  # the same command again: a resume
    assert again.records() == [first, second]
    assert again.completed() == {first.run_id, second.run_id}
    assert again.manifest["created_at"] == created_at


def test_a_larger_matrix_extends_the_manifest(tmp_path: Path) -> None:
    ResultStore.open(tmp_path, manifest(repeats=3, arms=[BASELINE_ARM, HOST_ARM]))
    store = ResultStore.open(tmp_path, manifest(repeats=5, arms=[BASELINE_ARM, AP_ARM]))
    matrix = store.manifest["matrix"]
    assert matrix["repeats"] == 5
    assert [a["label"] for a in matrix["arms"]] == [BASELINE_ARM.label(), HOST_ARM.label(), AP_ARM.label()]
    assert "mixed" not in store.manifest


def test_other_code_is_refused_with_the_fix_named(tmp_path: Path) -> None:
    ResultStore.open(tmp_path, manifest(code_version="abc1234"))
    with pytest.raises(StoreMismatch) as err:
        ResultStore.open(tmp_path, manifest(code_version="def5678-dirty"))
    message = str(err.value)
    assert str(tmp_path) in message
    assert "abc1234" in message and "def5678-dirty" in message
    assert "--out" in message and "--allow-mixing" in message


def test_another_scenario_definition_is_refused_naming_the_difference(tmp_path: Path) -> None:
    ResultStore.open(tmp_path, manifest())
    changed = manifest()
    changed["scenario"] = {**SCENARIO, "traffic": {"kind": "transfer", "size_bytes": 2_000_000}}
    with pytest.raises(StoreMismatch, match=r"traffic\.size_bytes: 1000000 -> 2000000"):
        ResultStore.open(tmp_path, changed)


def test_allow_mixing_adds_and_records_the_other_code(tmp_path: Path) -> None:
    ResultStore.open(tmp_path, manifest(code_version="abc1234"))
    store = ResultStore.open(tmp_path, manifest(code_version="def5678"), allow_mixing=True)
    stored = store.manifest
    assert stored["code_version"] == "abc1234"
    assert stored["code_versions"] == ["abc1234", "def5678"]
    assert len(stored["mixed"]) == 1 and "def5678" in stored["mixed"][0]["differences"][0]
    # Once allowed, that code version may add runs again without --allow-mixing.
    ResultStore.open(tmp_path, manifest(code_version="def5678"))


def test_a_torn_last_line_is_ignored_then_repaired(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path, manifest())
    kept = [make_record(POINTS[0], arm, 0, completion_s=5.0) for arm in ARMS[:2]]
    for r in kept:
        store.append(r)
    torn = make_record(POINTS[0], ARMS[2], 0, completion_s=5.0).to_json()
    with open(store.runs_path, "a") as f:  # what Ctrl-C in the middle of a write leaves
        f.write(torn[: len(torn) // 2])

    with pytest.warns(TornLineWarning, match="line 3"):
        assert store.records() == kept

    later = make_record(POINTS[0], ARMS[3], 0, completion_s=5.0)
    store.append(later)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # repaired: no warning any more
        assert store.records() == [*kept, later]
    lines = store.runs_path.read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == [r.run_id for r in [*kept, later]]


def test_a_complete_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path, manifest())
    first = make_record(POINTS[0], ARMS[0], 0)
    store.runs_path.write_text(first.to_json())  # the newline never made it to the disk
    assert store.records() == [first]
    second = make_record(POINTS[0], ARMS[1], 0)
    store.append(second)
    assert store.records() == [first, second]


def test_a_corrupt_line_before_the_last_names_its_line_number(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path, manifest())
    store.append(make_record(POINTS[0], ARMS[0], 0))
    with open(store.runs_path, "a") as f:
        f.write("{not json\n")
    store.append(make_record(POINTS[0], ARMS[1], 0))
    with pytest.raises(CorruptStore, match="line 2"):
        store.records()


def bad(record: RunRecord, **changes: object) -> dict:
    d = json.loads(record.to_json())
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"status": "maybe"}, "'status'"),
        ({"status": "failed", "reason": None}, "why the run failed"),
        ({"metrics": {"completion_time": 3.0}}, "not in schema.METRICS"),
        ({"metrics": {"completion_s": "3.0"}}, "finite number"),
        ({"schema": 99}, "'schema'"),
        ({"repeat": "0"}, "'repeat'"),
        ({"scale": {"factor": 0.1}}, "'scale'"),
        ({"scale": {"factor": "fast", "what": "x"}}, "'scale'"),
        ({"started_at": "yesterday"}, "ISO 8601"),
        ({"arm": {**HOST_ARM.to_dict(), "where": "switch"}}, "'arm.where'"),
    ],
)
def test_validate_record_names_each_problem(changes: dict, problem: str) -> None:
    record = make_record(POINTS[0], HOST_ARM, 0)
    assert validate_record(json.loads(record.to_json())) == []
    problems = validate_record(bad(record, **changes))
    assert any(problem in p for p in problems), problems


def test_a_scenario_with_k_per_point_makes_valid_records() -> None:
    """Regression: the WLAN scenarios state scale.factor 'per point' (each 802.11 standard at its
    own k); the loader took it and the store then refused every run's record."""
    record = make_record(POINTS[0], HOST_ARM, 0)
    assert validate_record(bad(record, scale={"factor": PER_POINT, "what": "k per standard"})) == []


def test_validate_record_lists_missing_keys() -> None:
    d = json.loads(make_record(POINTS[0], HOST_ARM, 0).to_json())
    del d["seed"], d["scale"]
    assert "missing keys: seed, scale" in validate_record(d)


def test_append_refuses_an_invalid_record_and_writes_nothing(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path, manifest())
    nan_metric = make_record(POINTS[0], HOST_ARM, 0)
    nan_metric.metrics["goodput_mbps"] = float("nan")
    failed_without_reason = replace(make_record(POINTS[0], HOST_ARM, 1), status="failed", reason="")
    for record in (nan_metric, failed_without_reason):
        with pytest.raises(InvalidRecord, match=record.run_id):
            store.append(record)
    assert not store.runs_path.exists() or store.runs_path.read_text() == ""


def test_a_failed_run_is_skipped_unless_retried_and_the_retry_supersedes_it(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path, manifest())
    failed = make_record(POINTS[1], HOST_ARM, 2, status="failed", reason="switch did not start")
    store.append(failed)
    assert store.completed() == {failed.run_id}
    assert store.completed(retry_failed=True) == set()
    assert store.failed() == {failed.run_id}

    retried = make_record(POINTS[1], HOST_ARM, 2, completion_s=4.2)
    assert retried.run_id == failed.run_id
    store.append(retried)
    assert store.records() == [retried]
    assert store.all_records() == [failed, retried]
    assert store.completed(retry_failed=True) == {retried.run_id}
    assert store.failed() == set()


def test_runs_without_a_manifest_are_not_taken_over(tmp_path: Path) -> None:
    (tmp_path / "runs.jsonl").write_text("")
    with pytest.raises(StoreError, match="new --out"):
        ResultStore.open(tmp_path, manifest())
    with pytest.raises(StoreError, match="not an ackwise results directory"):
        ResultStore.load(tmp_path / "elsewhere")


def test_an_unusable_manifest_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    given = manifest()
    del given["code_version"]
    with pytest.raises(ValueError, match="missing 'code_version'"):
        ResultStore.open(tmp_path / "out", given)
    assert not (tmp_path / "out").exists()
