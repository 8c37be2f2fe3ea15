"""The confirmation pass's length per scenario (`confirm_blocks`), and no pass for a scenario of
the baseline alone: `make experiments CONFIRM=1` ran every scenario's `--confirm`, and
shang-wills-calif (the paper's measurement, nothing compared) failed it with "no arm ... to
confirm", so issue 41's run would have left it unpublished, and the estimate counted 120 runs
for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ackwise.experiments.harness.runner import plan_confirmation
from ackwise.experiments.harness.scenario import CONFIRM_BLOCKS, SCENARIO_DIR, ScenarioError, load


def test_a_scenario_of_the_baseline_alone_compares_nothing() -> None:
    calif = load("shang-wills-calif")
    assert [a.label() for a in calif.arms] == ["baseline (nothing on)"]
    assert not calif.compares()
    assert load("shang-wills-dsl").compares()
    assert load("chain").compares()  # nothing on is one arm more against its baseline_arm


def test_confirm_blocks_defaults_and_is_read_from_the_yaml() -> None:
    assert load("two-two").confirm_blocks == CONFIRM_BLOCKS
    one_flow = load("one-flow")
    assert one_flow.confirm_blocks == 6
    assert one_flow.to_dict()["confirm_blocks"] == 6  # what a results directory keeps
    tack = next(a for a in one_flow.arms if a.label() == "host tack")
    runs = plan_confirmation(one_flow, {"2 Mbit/s": [tack]}, first_repeat=2)
    assert sorted({r.repeat for r in runs}) == [2, 3, 4, 5, 6, 7]
    assert len(plan_confirmation(one_flow, {"2 Mbit/s": [tack]}, blocks=3, first_repeat=2)) == 6


def test_confirm_blocks_below_two_names_the_fix(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "one-flow.yaml").read_text()
    bad = tmp_path / "one-flow.yaml"
    bad.write_text(text.replace("confirm_blocks: 6", "confirm_blocks: 1"))
    with pytest.raises(ScenarioError, match="confirm_blocks 1: give at least 2"):
        load(bad)


def test_confirm_on_a_scenario_of_the_baseline_alone_runs_nothing_and_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ackwise.cli import app as cli

    out = tmp_path / "calif"
    status = cli.main(["experiment", "run", "shang-wills-calif", "--confirm", "--out", str(out)])
    assert status == 0
    assert "no confirmation pass: it compares no arm with its baseline" in capsys.readouterr().out
    assert not out.exists()  # no runs, no directory


def test_the_estimate_counts_no_confirmation_for_it_and_each_scenarios_blocks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ackwise.cli import app as cli

    assert cli.main(["experiment", "estimate", "shang-wills-calif", "one-flow", "--json"]) == 0
    rows = {row["scenario"]: row for row in json.loads(capsys.readouterr().out)["scenarios"]}
    assert rows["shang-wills-calif"]["confirmation_runs"] == 0
    assert rows["shang-wills-calif"]["confirmation_s"] == 0
    # one-flow: 4 points x 6 blocks x (the baseline and each place's arm: host, switch)
    assert rows["one-flow"]["confirmation_blocks"] == 6
    assert rows["one-flow"]["confirmation_runs"] == 4 * 6 * 3
