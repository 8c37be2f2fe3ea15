"""The host-side traffic tools' one JSON line (experiments/measure/tool_result.py): the result,
or the error that stopped the tool, with the exit status traffic.py relies on."""

from __future__ import annotations

import json

import pytest

from ackwise.experiments.measure.tool_result import print_result


def test_a_result_is_printed_and_its_verdict_is_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert print_result(lambda: {"byte_exact": True}) == 0
    assert json.loads(capsys.readouterr().out) == {"byte_exact": True}
    assert print_result(lambda: {"byte_exact": False}, succeeded=lambda r: bool(r["byte_exact"])) == 1
    assert json.loads(capsys.readouterr().out) == {"byte_exact": False}


def test_an_expected_error_is_a_json_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    def refused() -> dict[str, object]:
        raise ConnectionRefusedError("connection refused")

    assert print_result(refused) == 1
    assert json.loads(capsys.readouterr().out) == {"error": "ConnectionRefusedError: connection refused"}


def test_an_unexpected_error_is_not_swallowed() -> None:
    def broken() -> dict[str, object]:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        print_result(broken, errors=(OSError,))
