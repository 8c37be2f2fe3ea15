"""The comparison end to end on a small matrix: `ackwise experiment run` runs it on real test beds,
a second run resumes it without repeating a run, and `ackwise experiment report` writes a report
whose tables carry the numbers the records hold (read back from the HTML and the Markdown)."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import yaml
from conftest import REPO, VENV_BIN

from ackwise.experiments.report import format_summary
from ackwise.experiments.scenario import SCENARIO_DIR
from ackwise.experiments.stats import mean_ci

SCENARIO = {
    "name": "e2e",
    "title": "End-to-end check: a short transfer on a dumbbell",
    "reproduces": [
        {"source": "this test", "claim": "the pipeline carries the numbers", "check": "read back"}
    ],
    "topology": "dumbbell",
    "params": {"n_pairs": 1, "fwd_delay_ms": 5, "rev_delay_ms": 5, "fwd_rate_mbps": 10, "rev_rate_mbps": 10},
    "axis": {"name": "capacity", "unit": "Mbit/s"},
    "points": [{"x": 10, "label": "10 Mbit/s", "params": {}}],
    "traffic": {"kind": "transfers", "size_bytes": 300_000, "flows": "all", "timeout_s": 60},
    "capture": {"intf": "e1-eth2", "what": "s2's side of the bottleneck"},
    "metrics": ["completion_s", "acks_per_data_segment", "goodput_mbps"],
    "figures": [{"kind": "bars", "metric": "completion_s", "title": "Completion time"}],
    "arms": [{}, {"switch": {"policy": "every_d", "params": {"d": 4}}, "switches": ["s1"]}],
    "repeats": 1,
    "scale": {"factor": 1, "what": "none: a test"},
}


def ackwise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "ackwise"), *args], capture_output=True, text=True, cwd=REPO, timeout=300
    )


def test_run_resume_report(tmp_path: Path) -> None:
    scenario = tmp_path / "e2e.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    out = tmp_path / "results"

    first = ackwise("experiment", "run", str(scenario), "--out", str(out), "--json")
    assert first.returncode == 0, first.stderr[-2000:]
    runs = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
    assert len(runs) == 2 and all(r["status"] == "ok" for r in runs), runs
    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {r["run_id"] for r in records} == {r["run_id"] for r in runs}
    for r in records:
        assert r["scale"]["what"] == "none: a test" and r["link_backend"] in ("linkem", "netem")
        assert r["metrics"]["completion_s"] > 0 and 0 < r["metrics"]["acks_per_data_segment"] < 1.5

    again = ackwise("experiment", "run", str(scenario), "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    assert [line for line in again.stdout.splitlines() if line.startswith("{")] == [], "a run was repeated"
    assert len((out / "runs.jsonl").read_text().splitlines()) == 2

    report = ackwise("experiment", "report", str(out))
    assert report.returncode == 0, report.stderr[-2000:]
    page = html.unescape((out / "report.html").read_text())
    markdown = (out / "report.md").read_text()
    html_rows = re.findall(r"<tr\b.*?</tr>", page, re.S)
    md_rows = [line for line in markdown.splitlines() if line.startswith("|")]
    for r in records:
        label = r["arm"]["label"]
        for metric in SCENARIO["metrics"]:
            cell = format_summary(mean_ci([r["metrics"][metric]]))
            assert any(label in row and cell in row for row in html_rows), (metric, cell, label)
            assert any(label in row and cell in row for row in md_rows), (metric, cell, label)
    assert "none: a test" in page and "none: a test" in markdown
    assert (out / "figures").is_dir() and any((out / "figures").glob("*.png"))
    assert not (SCENARIO_DIR / "e2e.yaml").exists()
