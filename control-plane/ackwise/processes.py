"""Stopping the helper processes ackwise starts (agents, emulators) the same way everywhere."""

from __future__ import annotations

import subprocess
from typing import Any


def stop_process(proc: subprocess.Popen[Any], timeout_s: float) -> None:
    """SIGTERM, so it can write its last report; SIGKILL if it has not exited after ``timeout_s``.
    A no-op for a process that already exited (it is reaped)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
