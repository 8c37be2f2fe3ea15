"""Plain run records for the analysis scripts (experiments/measure/run_records.py)."""

from __future__ import annotations

import json
from pathlib import Path

from ackwise.experiments.measure.run_records import ok_run_records


def test_each_run_at_its_newest_line_and_only_ok_runs(tmp_path: Path) -> None:
    lines = [
        {"run_id": "a", "status": "failed", "n": 1},
        {"run_id": "b", "status": "ok", "n": 2},
        {"run_id": "a", "status": "ok", "n": 3},  # a retried run replaces its failed line
        {"run_id": "c", "status": "failed", "n": 4},
    ]
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert [r["n"] for r in ok_run_records(tmp_path)] == [3, 2]
