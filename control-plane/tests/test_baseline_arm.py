"""A scenario's baseline_arm: the seed's own baseline (Altman and Jimenez: standard TCP, an ACK per
segment), against which the report's effects and verdict, the confirmation pass and the relative
figures compare every arm; nothing on is then one arm more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from results_fixtures import HOST_ARM, build_store

from ackwise.experiments.harness.comparison import arm_results, excluded_runs
from ackwise.experiments.harness.report import build_report
from ackwise.experiments.harness.runner import plan, plan_confirmation
from ackwise.experiments.harness.scenario import SCENARIO_DIR, ScenarioError, load
from ackwise.experiments.harness.schema import Arm, PolicySpec

QUICKACK = Arm(host=PolicySpec("quickack"))


def test_the_chain_scenarios_compare_with_standard_tcp() -> None:
    for name in ("chain", "chain-window", "chain-short-flows"):
        scenario = load(name)
        assert scenario.baseline_arm == "host quickack"
        assert scenario.baseline() == QUICKACK
        assert scenario.to_dict()["baseline_arm"] == "host quickack"  # what a results directory keeps
    one_flow = load("one-flow")
    assert one_flow.baseline_arm == "" and one_flow.baseline() == Arm()


def test_a_baseline_arm_that_is_not_an_arm_names_the_fix(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "chain-short-flows.yaml").read_text()
    bad = tmp_path / "chain-short-flows.yaml"
    bad.write_text(text.replace("baseline_arm: {host: quickack}", "baseline_arm: {host: tack}"))
    fix = "baseline_arm 'host tack' is not one of the arms: add it to arms"
    with pytest.raises(ScenarioError, match=fix):
        load(bad)


def test_filters_and_the_quick_matrix_keep_the_baseline_arm() -> None:
    scenario = load("chain-window")
    only_switch = {r.arm for r in plan(scenario, where={"switch"})}
    assert QUICKACK in only_switch and Arm() in only_switch
    only_d = {r.arm for r in plan(scenario, policies={"every_d"})}
    assert QUICKACK in only_d


def test_the_confirmation_pass_runs_the_baseline_arm() -> None:
    scenario = load("chain-short-flows")
    dynamic = next(a for a in scenario.arms if a.host is not None and a.host.name == "dynamic_d")
    runs = plan_confirmation(scenario, {"default": [dynamic]}, blocks=2, first_repeat=15)
    assert {r.arm for r in runs} == {QUICKACK, dynamic}  # not nothing on: it is not the baseline


def _with_baseline_arm(directory: Path, label: str) -> None:
    manifest = directory / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["scenario"]["baseline_arm"] = label
    manifest.write_text(json.dumps(doc))


def test_effects_and_the_verdict_are_against_the_baseline_arm(tmp_path: Path) -> None:
    store = build_store(tmp_path / "asym")
    records = store.records()
    label = HOST_ARM.label()
    effects = arm_results(records, "completion_s", excluded_runs(records), baseline_label=label)
    by_arm = {(e.point, e.label): e for e in effects}
    assert by_arm[("256 kbit/s", label)].effect is None  # the baseline itself
    nothing_on = by_arm[("256 kbit/s", "baseline (nothing on)")].effect
    assert nothing_on is not None and nothing_on.estimate is not None
    # At 256 kbit/s nothing on took 5.0, 5.2, 5.4 s and every_d 4.9, 5.1, 5.6: over every_d's blocks
    expected = ((5.0 / 4.9) * (5.2 / 5.1) * (5.4 / 5.6)) ** (1 / 3)
    assert nothing_on.estimate == pytest.approx(expected)

    _with_baseline_arm(store.directory, label)
    verdict = build_report(type(store).load(store.directory), draw_figures=False).sections[0].verdict
    assert verdict.baseline_arm == label
    row = next(r for r in verdict.rows if r.point == "256 kbit/s")
    assert row.baseline.startswith(f"{label}: 5.2")
    # The baseline arm is not its own place's best: the host place has no other arm here.
    assert row.cells[verdict.categories.index("host")].arm is None
