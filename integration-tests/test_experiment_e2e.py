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

from ackwise.experiments.harness.report import format_summary
from ackwise.experiments.harness.scenario import SCENARIO_DIR
from ackwise.experiments.harness.stats import mean_ci

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
    # What s1's every_d did, read from its flow records: it thinned, and every pure ACK it saw was
    # forwarded or thinned (every_d leaves none to the egress filter); the baseline sets no policy.
    by_place = {r["arm"]["where"]: r for r in records}
    assert "switch_policies" not in by_place["none"]["series"]
    (s1,) = by_place["switch"]["series"]["switch_policies"]
    assert s1["switch"] == "s1" and s1["flows"] >= 1 and s1["acks_absorbed"] == 0, s1
    assert 0 < s1["acks_thinned"] < s1["acks_seen"] == s1["acks_forwarded"] + s1["acks_thinned"], s1

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


def test_two_shards_merged_are_the_unsharded_matrix(tmp_path: Path) -> None:
    """Shards 1/2 and 2/2, run one after another and merged by `report`, hold the same runs (ids,
    configurations, seeds) as the matrix run unsharded; every record carries its provenance, and
    the merged report shows it and writes its tables as CSV."""
    scenario = tmp_path / "e2e.yaml"
    scenario.write_text(yaml.safe_dump({**SCENARIO, "repeats": 2}))
    shards = [tmp_path / f"shard-{k}" for k in (1, 2)]
    for k, out in enumerate(shards, start=1):
        done = ackwise("experiment", "run", str(scenario), "--out", str(out), "--shard", f"{k}/2", "--json")
        assert done.returncode == 0, done.stderr[-2000:]
    whole = tmp_path / "whole"
    done = ackwise("experiment", "run", str(scenario), "--out", str(whole), "--json")
    assert done.returncode == 0, done.stderr[-2000:]

    merged = tmp_path / "merged"
    report = ackwise("experiment", "report", *map(str, shards), "--merged-out", str(merged))
    assert report.returncode == 0, report.stderr[-2000:]

    def identities(directory: Path) -> set[tuple[str, str, str, int, int, str]]:
        rows = [json.loads(line) for line in (directory / "runs.jsonl").read_text().splitlines()]
        assert all(r["status"] == "ok" for r in rows), [r["reason"] for r in rows]
        return {
            (
                r["run_id"],
                r["point"]["label"],
                r["arm"]["label"],
                r["repeat"],
                r["seed"],
                json.dumps(r["config"]),
            )
            for r in rows
        }

    per_shard = [identities(out) for out in shards]
    assert per_shard[0] and per_shard[1] and not per_shard[0] & per_shard[1]
    assert identities(merged) == per_shard[0] | per_shard[1] == identities(whole)
    assert len(identities(whole)) == 4  # 2 blocks x 2 arms

    records = [json.loads(line) for line in (merged / "runs.jsonl").read_text().splitlines()]
    for r in records:
        p = r["provenance"]
        assert {"h1", "r1"} <= set(p["hosts"]) and p["hosts"]["h1"]["tcp_sack"] in ("0", "1")
        assert all(b["kind"] in ("fast", "logging", "unknown") for b in p["bmv2_builds"].values())
        assert p["scenario_sha256"] and p["scale"]["factor"] == 1
    page = html.unescape((merged / "report.html").read_text())
    assert 'id="run-provenance"' in page and "bmv2 build of the switches" in page
    assert (merged / "tables" / "effects.csv").is_file() and (merged / "tables" / "results.csv").is_file()
    # a shard given twice is refused, in one line
    again = ackwise(
        "experiment", "report", str(shards[0]), str(shards[0]), "--merged-out", str(tmp_path / "x")
    )
    assert again.returncode == 2 and "given twice" in again.stderr
