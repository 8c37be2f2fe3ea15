"""The simple_switch command line the launcher builds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ackwise.bmv2.launcher import SwitchSpec, _is_simple_switch
from ackwise.bmv2.toolchain import SIMPLE_SWITCH_ENV


@pytest.fixture(autouse=True)
def simple_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "simple_switch"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv(SIMPLE_SWITCH_ENV, str(binary))
    return binary


def _option(cmd: list[str], name: str) -> str | None:
    """The value given to option name before the program, None if it is not given."""
    options = cmd[: cmd.index("prog.json")]
    return options[options.index(name) + 1] if name in options else None


def test_without_a_log_file_nothing_is_logged() -> None:
    # bmv2's own default is trace, formatted into a null sink: the switch's largest cost per packet.
    cmd = SwitchSpec(program_json="prog.json", ports={1: "veth1"}).command()
    assert _option(cmd, "--log-level") == "off"
    assert _option(cmd, "--log-file") is None


def test_a_log_file_gets_the_level_asked_for() -> None:
    cmd = SwitchSpec(
        program_json="prog.json", ports={1: "veth1"}, log_file="/tmp/s.log", log_level="trace"
    ).command()
    assert _option(cmd, "--log-file") == "/tmp/s.log"
    assert _option(cmd, "--log-level") == "trace"
    assert cmd.count("--log-level") == 1


def test_target_options_follow_the_program(simple_switch: Path) -> None:
    cmd = SwitchSpec(program_json="prog.json", ports={2: "b", 1: "a"}, cpu_port=64).command()
    assert cmd[0] == str(simple_switch)
    assert cmd[cmd.index("prog.json") :] == ["prog.json", "--", "--enable-swap", "--cpu-port", "64"]
    assert cmd[1:5] == ["-i", "1@a", "-i", "2@b"]


def test_a_wrapper_runs_the_switch_as_its_argument(simple_switch: Path) -> None:
    cmd = SwitchSpec(
        program_json="prog.json", ports={1: "a"}, wrapper=["valgrind", "--tool=callgrind"]
    ).command()
    assert cmd[:3] == ["valgrind", "--tool=callgrind", str(simple_switch)]


def test_a_wrapped_switch_is_recognised_by_its_argument_and_only_when_wrapped(tmp_path: Path) -> None:
    # A process whose first argument is not simple_switch but which has it among its arguments:
    # how valgrind's process looks (/usr/bin/valgrind.bin --tool=callgrind .../simple_switch ...).
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", str(tmp_path / "simple_switch")]
    )
    try:
        # Until the child has exec'd, /proc/PID/cmdline is still the parent's (seen under load).
        deadline = time.monotonic() + 10
        while b"simple_switch" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the child never exec'd"
            time.sleep(0.01)
        assert _is_simple_switch(proc.pid, wrapped=True)
        assert not _is_simple_switch(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert not _is_simple_switch(proc.pid, wrapped=True)
