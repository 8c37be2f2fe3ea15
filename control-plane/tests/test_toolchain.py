"""Which simple_switch ackwise runs: the one on PATH, or the one ACKWISE_SIMPLE_SWITCH names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ackwise.bmv2.toolchain import SIMPLE_SWITCH, SIMPLE_SWITCH_ENV, ToolchainError, find_tool


def test_the_environment_names_another_simple_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "simple_switch"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setenv(SIMPLE_SWITCH_ENV, str(other))
    assert find_tool(SIMPLE_SWITCH) == str(other)


def test_a_wrong_path_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMPLE_SWITCH_ENV, str(tmp_path / "nothing"))
    with pytest.raises(ToolchainError, match=SIMPLE_SWITCH_ENV):
        find_tool(SIMPLE_SWITCH)


def test_without_it_the_one_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SIMPLE_SWITCH_ENV, raising=False)
    if shutil.which(SIMPLE_SWITCH) is None:
        with pytest.raises(ToolchainError):
            find_tool(SIMPLE_SWITCH)
    else:
        assert find_tool(SIMPLE_SWITCH) == shutil.which(SIMPLE_SWITCH)
