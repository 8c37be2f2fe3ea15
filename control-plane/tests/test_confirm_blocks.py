"""The confirmation pass's length per scenario (`confirm_blocks`), no pass for a scenario of
the baseline alone, and the arms a claim names (`confirm_arms`): `make experiments CONFIRM=1` ran
every scenario's `--confirm`, and
- shang-wills-calif (the paper's measurement, nothing compared) failed it with "no arm ... to
  confirm", so issue 41's run would have left it unpublished, and the estimate counted 120 runs
  for it;
- landstrom-4w and reverse-data, whose main metric (ACKs per window, pure ACKs) is described, not
  judged, stopped it with "the main metric ... has no better direction to pick arms by" (issue
  41's run at da1c16b), while the estimate counted 60 and 30 runs for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from results_fixtures import make_record

from ackwise.experiments.harness.runner import plan_confirmation
from ackwise.experiments.harness.scenario import CONFIRM_BLOCKS, SCENARIO_DIR, ScenarioError, load
from ackwise.experiments.harness.store import ResultStore, matrix_dict, new_manifest

LANDSTROM_CLAIM = [
    "host 4w max_delay_s=0.1",
    "host 4w acks_per_window=2 max_delay_s=0.1",
    "host every_d d=4 max_delay_s=0.1",
]


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


def test_a_main_metric_without_a_direction_needs_the_arms_named(tmp_path: Path) -> None:
    """Landstrom-4w as it was at da1c16b: no confirm_arms, so its pass could pick nothing."""
    text = (SCENARIO_DIR / "landstrom-4w.yaml").read_text()
    assert "confirm_arms:" in text
    bad = tmp_path / "landstrom-4w.yaml"
    bad.write_text("\n".join(line for line in text.splitlines() if not line.startswith("confirm_arms:")))
    with pytest.raises(ScenarioError, match=r"acks_per_window has no better direction.*confirm_arms"):
        load(bad)
    assert load("landstrom-4w").confirm_arms == tuple(LANDSTROM_CLAIM)
    assert [a.label() for a in load("reverse-data").confirmed_arms()] == ["host piggyback hold_ms=40"]
    # a metric with a direction first: the best of each place, as before
    assert load("one-flow").confirmed_arms() == ()


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ('["host 4w"]', "confirm_arms 'host 4w' is not an arm"),
        ('["baseline (nothing on)"]', "is the baseline, which every block runs"),
        ('["host quickack", "host quickack"]', "names an arm twice"),
        ('"host quickack"', "a list of arm labels"),
    ],
)
def test_confirm_arms_names_arms_of_the_scenario(tmp_path: Path, labels: str, message: str) -> None:
    text = (SCENARIO_DIR / "landstrom-4w.yaml").read_text()
    bad = tmp_path / "landstrom-4w.yaml"
    bad.write_text(
        "\n".join(
            f"confirm_arms: {labels}" if line.startswith("confirm_arms:") else line
            for line in text.splitlines()
        )
    )
    with pytest.raises(ScenarioError, match=message):
        load(bad)


def test_the_confirmation_pass_runs_the_named_arms_at_every_screened_point(tmp_path: Path) -> None:
    """Whichever arm did best: the claim is about 4W, 2W and A4L4 against delayed ACK."""
    from ackwise.cli.experiment import _confirmation

    scenario = load("landstrom-4w")
    screened = scenario.points[:2]
    matrix = matrix_dict(screened, scenario.arms, repeats=1, seed=1, quick=False)
    store = ResultStore.open(tmp_path, new_manifest(scenario.to_dict(), matrix, "abc1234", "test"))
    for point in screened:
        for arm in scenario.arms:
            store.append(make_record(point, arm, 0, scenario=scenario.name))
    runs, confirm_matrix, out = _confirmation(scenario, tmp_path, blocks=2, seed=1)
    assert confirm_matrix["chosen_on"] == "confirm_arms"
    assert confirm_matrix["chosen"] == {p.label: LANDSTROM_CLAIM for p in screened}
    assert out == tmp_path / "confirm"
    # 2 points x 2 blocks x (delayed ACK and the three named arms), repeats after the screening's
    assert len(runs) == 2 * 2 * 4
    assert {r.repeat for r in runs} == {1, 2}
    for point in screened:
        arms = {r.arm.label() for r in runs if r.point == point}
        assert arms == {"baseline (nothing on)", *LANDSTROM_CLAIM}


def test_the_estimate_counts_the_named_arms(capsys: pytest.CaptureFixture[str]) -> None:
    from ackwise.cli import app as cli

    assert cli.main(["experiment", "estimate", "landstrom-4w", "reverse-data", "--json"]) == 0
    rows = {row["scenario"]: row for row in json.loads(capsys.readouterr().out)["scenarios"]}
    assert rows["landstrom-4w"]["confirmation_runs"] == 3 * 10 * 4  # 3 buffers x 10 blocks x 4 arms
    assert rows["reverse-data"]["confirmation_runs"] == 1 * 10 * 2
