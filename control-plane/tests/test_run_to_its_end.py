"""processes.run_to_its_end: `make experiments` runs each scenario as a child `ackwise experiment
run`. With subprocess.run, Ctrl-C (or SIGTERM) killed that child 0.25 s later, in the middle of
tearing its test bed down: two simple_switch processes, their veths and a linkem were left (seen
when issue 41's first run was stopped). The child now gets one SIGINT and the time to clean up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# A stand-in for `ackwise experiment run`: on its first SIGINT it cleans up for CLEANUP_S, then
# exits 130; it counts every SIGINT it receives (a second one must not reach it).
CHILD = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path

    state = Path(sys.argv[1])
    received = 0

    def on_sigint(*_):
        global received
        received += 1
        (state / "sigints").write_text(str(received))
        if received == 1:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    (state / "ready").write_text("")
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        time.sleep(float(sys.argv[2]))
        (state / "cleaned").write_text("")
        sys.exit(130)
    """
)

PARENT = textwrap.dedent(
    """
    import sys
    from ackwise.processes import run_to_its_end, run_until_stopped

    child = [sys.executable, sys.argv[1], sys.argv[2], sys.argv[3]]
    sys.exit(run_until_stopped("parent", lambda: run_to_its_end(child)))
    """
)

CLEANUP_S = 1.0


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def parent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """The parent in a process group of its own (a terminal's foreground job), once its child is
    ready; both killed at the end if still there."""
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "parent.py").write_text(PARENT)
    state = tmp_path / "state"
    state.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "parent.py"), str(tmp_path / "child.py"), str(state), str(CLEANUP_S)],
        start_new_session=True,
        # A terminal's foreground job takes Ctrl-C: were the tests started in the background (a
        # CI script's `cmd &`), SIGINT would arrive ignored and the parent would never see it.
        preexec_fn=_sigint_default,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not (state / "ready").exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        yield proc, state
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # The child runs in a session of its own: found by its script's path, not by group.
        subprocess.run(["pkill", "-KILL", "-f", str(tmp_path / "child.py")], check=False)


def test_ctrl_c_at_the_terminal_lets_the_child_clean_up(parent: tuple[subprocess.Popen[str], Path]) -> None:
    proc, state = parent
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does: the foreground group
    assert proc.wait(timeout=20) == 130
    assert (state / "cleaned").exists()
    assert (state / "sigints").read_text() == "1"


def test_sigterm_to_the_parent_alone_reaches_the_child_as_one_sigint(
    parent: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, state = parent
    proc.terminate()
    assert proc.wait(timeout=20) == 130
    assert (state / "cleaned").exists()
    assert (state / "sigints").read_text() == "1"


def test_a_second_ctrl_c_does_not_cut_the_clean_up_short(parent: tuple[subprocess.Popen[str], Path]) -> None:
    proc, state = parent
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(CLEANUP_S / 3)
    assert proc.poll() is None  # still waiting for the child
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=20) == 130
    assert (state / "cleaned").exists()
    assert (state / "sigints").read_text() == "1"
    assert proc.stderr is not None and "waiting for its clean-up" in proc.stderr.read()
