"""A results directory's run records as plain JSON objects, for the analysis scripts beside the
harness (ack_split_report, estimate_compare) that read fields the typed records do not model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def ok_run_records(results: Path) -> list[dict[str, Any]]:
    """The ok runs of ``results/runs.jsonl``, each at its newest line (a run recorded again, as a
    retried one is, replaces its earlier line), in the file's order."""
    newest: dict[str, dict[str, Any]] = {}
    for line in (results / "runs.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            newest[record["run_id"]] = record
    return [r for r in newest.values() if r["status"] == "ok"]
