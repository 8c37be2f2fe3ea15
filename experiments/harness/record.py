"""One JSON record per run: the full configuration, the tool versions, the results."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ackwise.bmv2.toolchain import REPO_ROOT
from ackwise.experiments.measure.versions import tool_versions

RESULTS_DIR = REPO_ROOT / "results"


def make_record(kind: str, config: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": kind,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": tool_versions(),
        "config": config,
        "results": results,
    }


def save_record(record: dict[str, Any], directory: Path = RESULTS_DIR) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{time.strftime('%Y%m%d-%H%M%S')}-{record['kind']}.json"
    n = 1
    while path.exists():
        path = directory / f"{time.strftime('%Y%m%d-%H%M%S')}-{record['kind']}-{n}.json"
        n += 1
    path.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    return path
