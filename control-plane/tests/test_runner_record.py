"""runner.execute builds each run's record before the test bed starts; a fault there is no failed
run but a crash of the whole matrix (the merge of issue 39 called Point.to_dict, which it had
removed: every `ackwise experiment run` and `ackwise demo` stopped with an AttributeError, and only
the integration tests saw it)."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from ackwise.experiments.harness import runner
from ackwise.experiments.harness.runner import ExperimentError, execute, plan
from ackwise.experiments.harness.scenario import load


def test_a_run_that_fails_in_the_test_bed_is_a_record_naming_its_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken_testbed(*_args: object, **_kwargs: object) -> None:
        raise ExperimentError("no test bed in a unit test")

    monkeypatch.setattr(runner, "_run_in_testbed", broken_testbed)
    scenario = load("two-two")
    run = plan(scenario)[0]
    record = execute(run, scenario)
    assert record.point == asdict(run.point)
    assert record.arm == run.arm.to_dict()
    assert record.status == "failed" and record.reason == "ExperimentError: no test bed in a unit test"
