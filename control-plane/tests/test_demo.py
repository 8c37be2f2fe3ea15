"""``ackwise demo`` shows each run's line as the run ends, also when its output is a pipe."""

from __future__ import annotations

import io
from typing import Any

import pytest
from results_fixtures import make_record

from ackwise.experiments.harness import demo
from ackwise.experiments.harness.schema import RunRecord


class Recorder(io.StringIO):
    """Output that notes, at each flush, how many result lines had been written."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed_lines: list[int] = []

    def isatty(self) -> bool:
        return False  # a pipe: nothing flushes the lines by itself

    def flush(self) -> None:
        self.flushed_lines.append(self.getvalue().count("completion"))
        super().flush()


def test_each_line_is_flushed_when_its_run_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    written_before_run: list[int] = []
    out = Recorder()

    def fake_execute(run: Any, scenario: Any) -> RunRecord:
        written_before_run.append(out.flushed_lines[-1] if out.flushed_lines else 0)
        return make_record(run.point, run.arm, 0)

    monkeypatch.setattr(demo, "execute", fake_execute)
    demo.run_demo(out)
    # Regression: the lines sat in the pipe's buffer until the demo ended, so a reader (the
    # interrupted-demo test, a user's tee) saw the first run's line only after the last run.
    assert written_before_run == [0, 1, 2]
