"""Whatever a test starts is gone when it ends, and a test run stopped from outside leaves nothing.

Regressions: a test that expected an exception which did not come left its test bed running, the
fixture then deleted an interface under its linkem, and the next four tests failed on the
interfaces it left ("interfaces this topology needs already exist"). And a `make test` stopped
with SIGTERM (as a CI time limit or `timeout make test` stops it) died without tearing down its
running test: switches, emulators and agents carried on and collided with the next run.

Each case runs a small pytest or PTF file from integration-tests/selftest/ in a subprocess and
compares the machine before and after it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import leftovers
import pytest
from conftest import REPO

from ackwise.experiments.stress.bench import bench_interfaces

SELFTEST = Path(__file__).resolve().parent / "selftest"


def assert_clean_since(before: leftovers.Snapshot, what: str) -> None:
    left = leftovers.since(before)
    leftovers.remove(left)
    assert not left, f"{what} left behind: {'; '.join(left.describe())}"


def test_a_failing_test_takes_its_test_bed_with_it_and_the_next_test_runs(tmp_path: Path) -> None:
    before = leftovers.Snapshot.take()
    results = tmp_path / "leaky.xml"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(SELFTEST / "leaky_testbeds.py"),
            f"--junitxml={results}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    report = (out.stdout + out.stderr)[-3000:]
    assert "2 failed, 1 passed, 2 errors" in out.stdout, report
    # Read per test from the JUnit file, not by counting lines of the terminal report: how much
    # of each reason pytest's summary repeats depends on the terminal's width (CI's is wider).
    outcomes: dict[str, list[tuple[str, str]]] = {}
    for case in ElementTree.parse(results).iter("testcase"):
        outcomes.setdefault(case.get("name", ""), []).extend(
            (child.tag, child.get("message", "")) for child in case if child.tag in ("failure", "error")
        )
    left_running = (
        'failed on teardown with "AssertionError: left behind (now removed): test bed dumbbell still running'
    )
    for name, reason in (
        ("test_fails_with_its_test_bed_running", "AssertionError: failing on purpose"),
        ("test_expected_exception_does_not_come", "Failed: DID NOT RAISE TestbedError"),
    ):
        kinds = outcomes[name]
        assert [kind for kind, _ in kinds] == ["failure", "error"], (name, kinds, report)
        assert kinds[0][1].startswith(reason), (name, kinds, report)
        assert kinds[1][1].startswith(left_running), (name, kinds, report)
    assert outcomes["test_next_test_finds_a_clean_machine"] == [], report
    assert_clean_since(before, "the leaky tests")


def test_orphans_are_reaped_between_tests() -> None:
    """Regression: pytest, the subreaper of everything a test starts, never waited for the orphans
    it inherited; each stayed a zombie named like the process it was (12 simple_switch on CI), and
    a later check for running switches saw them."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SELFTEST / "orphans.py")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert "2 passed" in out.stdout, (out.stdout + out.stderr)[-3000:]


def start_make(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """make with these arguments in a session of its own, as a terminal's job: Ctrl-C reaches its
    whole process group."""
    return subprocess.Popen(
        ["make", "--no-print-directory", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=leftovers.terminal_job_signals,
    )


def wait_for(up: Callable[[], bool], proc: subprocess.Popen[str], timeout_s: float) -> None:
    """Until up() holds; a failure if proc ends first or timeout_s passes."""
    deadline = time.monotonic() + timeout_s
    while not up():
        if proc.poll() is not None:
            out, _ = proc.communicate()
            pytest.fail(f"{proc.args} ended before it was up: {out[-3000:]}")
        assert time.monotonic() < deadline, f"{proc.args} not up within {timeout_s} s"
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["SIGTERM to make", "Ctrl-C"])
@pytest.mark.parametrize("target", ["integration", "ptf"])
def test_make_stopped_from_outside_leaves_nothing(tmp_path: Path, target: str, how: str) -> None:
    marker = tmp_path / "up"
    if target == "integration":
        args = [f"INTEGRATION_TESTS={SELFTEST / 'hold_testbed.py'}"]
    else:
        args = [f"PTF_ARGS=--test-dir {SELFTEST / 'ptf'}", "TESTS=hold_switch"]
    before = leftovers.Snapshot.take()
    # A stop that hangs says where: pytest dumps every thread's stack after 60 s in one test (the
    # held test is stopped within seconds of the marker).
    env = dict(os.environ, ACKWISE_SELFTEST_MARKER=str(marker), PYTEST_ADDOPTS="-o faulthandler_timeout=60")
    make = start_make([target, *args], env)
    try:
        wait_for(marker.exists, make, timeout_s=120)
        if how == "Ctrl-C":
            os.killpg(make.pid, signal.SIGINT)
        else:
            make.send_signal(signal.SIGTERM)
        make.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(make.pid, signal.SIGKILL)
        out, _ = make.communicate()
        pytest.fail(f"make {target} still running 90 s after {how}; its output:\n{out[-6000:]}")
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.communicate()
    assert make.returncode != 0, f"make {target} ended with 0 after {how}"
    time.sleep(1)  # let whatever make left exit on its own before looking
    assert_clean_since(before, f"make {target} stopped by {how}")


def test_a_child_to_be_interrupted_gets_sigint_back_when_this_run_ignores_it() -> None:
    """Regression: run from a script's background job (SIGINT ignored, inherited across exec), the
    Ctrl-C tests' make and demo ignored the SIGINT they were sent, ran on, and failed."""
    probe = [
        sys.executable,
        "-c",
        "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)",
    ]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        plain = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
        as_job = subprocess.run(
            probe, capture_output=True, text=True, check=True, preexec_fn=leftovers.terminal_job_signals
        ).stdout.strip()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (plain, as_job) == ("False", "True")


def test_traffic_helpers_clean_up_when_the_test_fails_before_they_end() -> None:
    """Regression: a test whose wait for a controller decision failed while a Transfer ran left the
    transfer's progress file behind (/tmp/ackwise-transfer-progress-*: only wait() removed it), and
    a Capture discarded without stop() (the experiment runner's cleanup on a failed run) left its
    tcpdump running. Both are stopped and removed when the block ends, passing or failing."""
    from ackwise.experiments.measure.traffic import Capture, Transfer
    from ackwise.topologies.testbed import Testbed

    with Testbed.create("dumbbell", n_pairs=1, fwd_delay_ms=2, rev_delay_ms=2) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        before = leftovers.Snapshot.take()
        capture = Capture("e1-eth2")
        with pytest.raises(RuntimeError, match="the test failed here"):
            with Transfer(sender, receiver, 50_000_000).start() as transfer:
                progress = transfer._progress
                processes = [transfer._send, transfer._recv]
                while transfer.progress() == 0:
                    time.sleep(0.05)
                raise RuntimeError("the test failed here")
        capture.discard()
        assert progress is not None and not progress.exists()
        assert all(p is not None and p.poll() is not None for p in processes)
        assert capture.proc.poll() is not None
        assert_clean_since(before, "a failed transfer and a discarded capture")


def test_bench_stopped_with_sigterm_leaves_nothing() -> None:
    """Regression: `make bench` stopped with SIGTERM left its veth pairs behind (found 2026-11-26)."""
    before = leftovers.Snapshot.take()
    bench = subprocess.Popen(
        [sys.executable, "-m", "ackwise.experiments.stress.bench", "--steps-only"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    veths = {name for pair in bench_interfaces(bench.pid).values() for name in pair}
    try:
        # Stopped while one of its switches runs on its veths: counting a program's steps.
        deadline = time.monotonic() + 60
        while not any("simple_switch" in cmd for cmd in leftovers.processes().values()):
            if bench.poll() is not None:
                pytest.fail(f"bench ended before it was stopped: {bench.communicate()[0][-2000:]}")
            assert time.monotonic() < deadline, "bench started no switch within 60 s"
            time.sleep(0.1)
        assert veths <= {p.name for p in Path("/sys/class/net").iterdir()}, "the bench's veths are not up"
        bench.send_signal(signal.SIGTERM)
        out, _ = bench.communicate(timeout=30)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.communicate()
        left = veths & {p.name for p in Path("/sys/class/net").iterdir()}
        for name in left:
            subprocess.run(["ip", "link", "del", name], stderr=subprocess.DEVNULL)
    assert not left, f"the bench left its veths: {sorted(left)}"
    assert bench.returncode == 130, out[-2000:]
    assert "bench: stopped (signal 15)" in out
    assert_clean_since(before, "bench stopped by SIGTERM")


def test_ptf_stopped_during_a_holdback_test_leaves_nothing() -> None:
    """A real PTF test that starts a process and writes a file of its own (the hold-back agent and
    its stats), stopped by SIGTERM to make while the agent runs: ptf is killed, so the test's
    tearDown never runs, and what the test made must go all the same."""
    before = leftovers.Snapshot.take()
    make = start_make(["ptf", "TESTS=test_ack_holdback.HoldbackOneInFourTest"])
    try:
        agent = ["pgrep", "-f", "-s", str(make.pid), "ackwise.daemons.holdback_agent"]

        def agent_up() -> bool:
            return subprocess.run(agent, stdout=subprocess.DEVNULL).returncode == 0

        wait_for(agent_up, make, timeout_s=120)
        make.send_signal(signal.SIGTERM)
        make.communicate(timeout=90)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.communicate()
    assert make.returncode != 0, "make ptf ended with 0 after SIGTERM"
    time.sleep(1)  # let whatever make left exit on its own before looking
    assert_clean_since(before, "make ptf stopped by SIGTERM during a hold-back test")
