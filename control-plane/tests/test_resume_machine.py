"""A results directory resumed on another machine: `ackwise experiment run` stops before its first
run when this machine's tools would record versions its runs do not share (a report refuses to
pool them), and `make experiments` (harness/all.py) goes on to the next scenario when one
scenario's records cannot be reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from results_fixtures import planned_run_record

from ackwise.experiments.harness.comparison import SHARED_VERSIONS, machine_differences
from ackwise.experiments.harness.schema import RunRecord

THEIRS = {
    "simple_switch": "1.15.5-unknown",
    "bmv2_build": "fast (-O3, no logging macros, no event logger)",
    "p4c": "Version 1.2.4.8 (SHA:  BUILD: Release)",
    "kernel": "6.18.44-fc-v657",
    "mininet": "2.3.0",
    "iperf3": "iperf 3.12 (cJSON 1.7.15)",
    "python": "3.11.2",
    "machine": "2 cores, 24 GiB",
}


def fake_record(run: Any, versions: dict[str, str]) -> RunRecord:
    return planned_run_record(run, versions)


class _Run:
    """The little of a planned run that fake_record reads."""

    def __init__(self) -> None:
        self.run_id, self.scenario, self.repeat, self.seed = "r1", "s", 0, 1
        self.point = type("P", (), {"label": "p", "x": 1, "params": {}})()
        self.arm = type("A", (), {"to_dict": staticmethod(lambda: {"label": "baseline"})})()


def test_the_same_tools_are_no_difference() -> None:
    assert machine_differences([fake_record(_Run(), THEIRS)], dict(THEIRS)) == []
    assert machine_differences([], {"kernel": "anything"}) == []


def test_another_kernel_is_named_with_both_versions() -> None:
    here = {**THEIRS, "kernel": "6.18.44-fc-v669"}
    assert machine_differences([fake_record(_Run(), THEIRS)], here) == [
        "versions.kernel: '6.18.44-fc-v657' in its runs (run r1), '6.18.44-fc-v669' here"
    ]


def test_only_the_versions_a_report_pools_on_count() -> None:
    # Python and the machine line are recorded but a report pools across them (SHARED_VERSIONS).
    assert "python" not in SHARED_VERSIONS and "machine" not in SHARED_VERSIONS
    here = {**THEIRS, "python": "3.11.9", "machine": "4 cores, 8 GiB"}
    assert machine_differences([fake_record(_Run(), THEIRS)], here) == []


def test_a_version_this_machine_lacks_is_a_difference() -> None:
    here = {k: v for k, v in THEIRS.items() if k != "p4c"}
    assert machine_differences([fake_record(_Run(), THEIRS)], here) == [
        "versions.p4c: 'Version 1.2.4.8 (SHA:  BUILD: Release)' in its runs (run r1), 'not recorded' here"
    ]


def test_a_resume_on_another_kernel_stops_before_its_first_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first part ran one of two-two's runs; the second, on a machine with another kernel, runs
    none and exits 2 naming the fix; with --allow-mixed-provenance it goes on."""
    from ackwise import cli
    from ackwise.experiments.harness import runner

    machine = {"versions": dict(THEIRS)}
    executed: list[str] = []

    def fake_execute(run: runner.PlannedRun, scenario: object, **_: object) -> RunRecord:
        executed.append(run.run_id)
        return fake_record(run, machine["versions"])

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(
        "ackwise.experiments.measure.versions.tool_versions", lambda: dict(machine["versions"])
    )
    out = tmp_path / "two-two"
    argv = ["experiment", "run", "two-two", "--out", str(out), "--repeats", "1", "--where", "host"]
    # The first part, as if it had stopped after one run: the whole matrix, all records but the
    # first dropped.
    assert cli.main(argv) == 0
    total = len(executed)
    assert total >= 2
    lines = (out / "runs.jsonl").read_text().splitlines()
    (out / "runs.jsonl").write_text(lines[0] + "\n")
    machine["versions"] = {**THEIRS, "kernel": "6.18.44-fc-v669"}
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert len(executed) == total  # nothing ran
    assert "versions.kernel: '6.18.44-fc-v657' in its runs" in err and "'6.18.44-fc-v669' here" in err
    assert "--allow-mixed-provenance" in err
    assert cli.main([*argv, "--allow-mixed-provenance"]) == 0
    assert len(executed) == total + total - 1


def test_make_experiments_goes_on_after_a_scenario_it_cannot_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ReportError in one scenario's report (runs of two kernels) is that scenario's failure: the
    scenarios after it still run, and the exit status says something was not run to the end."""
    from ackwise.experiments.harness import all as all_
    from ackwise.experiments.harness.report import ReportError

    ran: list[str] = []
    reported: list[str] = []

    def fake_run(cmd: list[str]) -> int:
        ran.append(cmd[5])
        return 0

    def fake_report(directory: Path) -> None:
        if directory.name == "one-flow":
            raise ReportError(f"{directory}/confirm: its runs were made under different conditions")
        reported.append(directory.name)

    monkeypatch.setattr(all_, "run_to_its_end", fake_run)
    monkeypatch.setattr(all_, "write_report", fake_report)
    monkeypatch.setattr(all_, "headline", lambda directories, command: "table")
    status = all_.main(["--only", "one-flow,parking-lot", "--results", str(tmp_path)])
    assert status == 1
    assert ran == ["one-flow", "parking-lot"]
    assert reported == ["parking-lot"]
    err = capsys.readouterr().err
    assert "one-flow: no report: " in err and "not run to the end: one-flow" in err
