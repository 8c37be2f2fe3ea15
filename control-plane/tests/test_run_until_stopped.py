"""run_until_stopped: SIGTERM and SIGHUP end a command the way Ctrl-C does, cleanup included."""

from __future__ import annotations

import os
import signal
import time

import pytest

from ackwise.processes import run_until_stopped


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_runs_the_cleanup_and_ends_with_130(sig: int, capsys: pytest.CaptureFixture[str]) -> None:
    cleaned: list[bool] = []

    def main() -> int:
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)  # the signal interrupts this
            return 0
        finally:
            cleaned.append(True)

    assert run_until_stopped("tool", main) == 130
    assert cleaned == [True]
    assert capsys.readouterr().err == f"tool: stopped (signal {sig})\n"


def test_the_handlers_are_restored_and_a_normal_end_passes_through() -> None:
    before = signal.getsignal(signal.SIGTERM)
    assert run_until_stopped("tool", lambda: 3) == 3
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_is_stopped_too(capsys: pytest.CaptureFixture[str]) -> None:
    def main() -> int:
        raise KeyboardInterrupt

    assert run_until_stopped("tool", main) == 130
    assert capsys.readouterr().err == "tool: stopped (Ctrl-C)\n"
