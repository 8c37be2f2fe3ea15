"""--start-before: when a part of a long run stops starting runs (experiments/harness/deadline.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from ackwise.experiments.harness.deadline import DeadlineError, parse_start_before

UTC = dt.UTC
NOW = dt.datetime(2026, 11, 27, 14, 30, tzinfo=UTC)


def test_a_time_of_day_later_today_is_today() -> None:
    assert parse_start_before("17:10", NOW) == dt.datetime(2026, 11, 27, 17, 10, tzinfo=UTC)


def test_a_time_of_day_already_past_is_tomorrow() -> None:
    # A part started at 14:30 with --start-before 09:00 runs through the night, not zero runs.
    assert parse_start_before("09:00", NOW) == dt.datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    assert parse_start_before("14:30", NOW) == dt.datetime(2026, 11, 28, 14, 30, tzinfo=UTC)


def test_an_iso_date_and_time_is_taken_as_given() -> None:
    assert parse_start_before("2026-11-28T02:00", NOW) == dt.datetime(2026, 11, 28, 2, 0, tzinfo=UTC)
    plus_one = dt.timezone(dt.timedelta(hours=1))
    expected = dt.datetime(2026, 11, 27, 18, 0, tzinfo=plus_one)
    assert parse_start_before("2026-11-27T18:00+01:00", NOW) == expected


@pytest.mark.parametrize("text", ["soon", "25:00", "17h10", ""])
def test_not_a_time_names_the_forms(text: str) -> None:
    with pytest.raises(DeadlineError, match="HH:MM"):
        parse_start_before(text, NOW)


def test_a_run_stopped_by_start_before_resumes_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ackwise experiment run --start-before`: runs start until the time, then it exits with
    EXIT_STOPPED naming what is left, and the same command picks up the rest (no test bed: the
    runner's execute is replaced by one that records what it was asked to run)."""
    from results_fixtures import planned_run_record

    from ackwise import cli
    from ackwise.experiments.harness import runner
    from ackwise.experiments.harness.deadline import EXIT_STOPPED
    from ackwise.experiments.harness.schema import RunRecord

    executed: list[str] = []
    clock = {"now": NOW}

    def fake_execute(run: runner.PlannedRun, scenario: object, **_: object) -> RunRecord:
        executed.append(run.run_id)
        clock["now"] += dt.timedelta(minutes=1)  # each run takes a minute
        return planned_run_record(run, started_at=clock["now"].isoformat())

    class FakeDatetime(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> FakeDatetime:  # type: ignore[override]
            return clock["now"]  # type: ignore[return-value]

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr("ackwise.cli.experiment.dt.datetime", FakeDatetime)
    # The fake runs record no tool versions, and neither does this machine: a resume may go on.
    monkeypatch.setattr("ackwise.experiments.measure.versions.tool_versions", dict)
    out = tmp_path / "two-two"
    argv = ["experiment", "run", "two-two", "--out", str(out), "--start-before", "14:33:30"]
    assert cli.main(argv) == EXIT_STOPPED
    assert len(executed) == 4  # started at 14:30, 14:31, 14:32, 14:33; not at 14:34
    assert "runs still to do; run the same command again to resume" in capsys.readouterr().err
    clock["now"] = NOW  # the next part, the same command: the four done are not run again
    assert cli.main(argv) == EXIT_STOPPED
    assert len(executed) == 8 and len(set(executed)) == 8
