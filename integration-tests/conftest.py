"""Integration tests run real simple_switch processes in private network namespaces, as root."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import leftovers
import pytest

from ackwise.bmv2.toolchain import missing_tools
from ackwise.experiments.measure.pcapstats import DirectionStats
from ackwise.netdev import add_netns, netns_pids, remove_netns
from ackwise.topologies.testbed import Testbed
from ackwise.twins.policies import MSS_BYTES

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin"


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = missing_tools()
    if missing:
        raise pytest.UsageError(f"integration tests need {' and '.join(missing)}: install bmv2 and p4c")
    if os.geteuid() != 0:
        raise pytest.UsageError("integration tests create network namespaces: run them as root")


class Netns:
    """A network namespace with its loopback up, removed with everything running in it."""

    def __init__(self, name: str) -> None:
        self.name = name
        add_netns(name)

    def run(
        self, *cmd: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.name, *cmd],
            capture_output=True,
            text=True,
            env=env,
            check=check,
            cwd=REPO,
            timeout=timeout,
        )

    def pids(self) -> list[int]:
        return netns_pids(self.name)

    def remove(self) -> None:
        remove_netns(self.name)


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (a CI time limit, ``timeout make test``, make passing on its own SIGTERM) and SIGHUP
    stop the run the way Ctrl-C does: pytest then tears down the running test, whose test bed,
    agents and files go with it, instead of dying with them still running."""

    # Marks every process this run starts, so that the leftover guard leaves other runs' alone.
    os.environ.setdefault(leftovers.RUN_MARKER, f"{os.getpid()}-{time.time_ns()}")

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    # What a test starts and then detaches (Mininet's host shells, everything in a host) stays
    # this process's descendant, so the guard below can tell it from anyone else's processes.
    leftovers.become_subreaper()


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """Whatever a test starts is gone when it ends, pass or fail: test beds still running are
    stopped, then any process, interface, namespace or /tmp/ackwise* entry that appeared during
    the test is removed, so the next test starts clean. The test that left them still fails."""
    before = leftovers.Snapshot.take()
    yield
    problems = [f"test bed {name} still running" for name in Testbed.stop_all()]
    left = leftovers.since(before)
    leftovers.remove(left)
    leftovers.reap_orphans()  # this process is their subreaper: no zombie outlives its test
    problems += left.describe()
    assert not problems, f"left behind (now removed): {'; '.join(problems)}"


@pytest.fixture
def netns(request: pytest.FixtureRequest) -> Iterator[Netns]:
    ns = Netns(f"awit{os.getpid() % 10000}{request.node.name[:6]}")
    try:
        yield ns
    finally:
        ns.remove()


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the ackwise CLI: the venv on PATH, a private state directory."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    env["ACKWISE_STATE_DIR"] = str(tmp_path / "state")
    assert shutil.which("ackwise", path=env["PATH"]), "ackwise not installed in the venv: run make deps"
    return env


def loss_free_buffer_pkts(size_bytes: int) -> int:
    """A bottleneck buffer deeper than the whole transfer: no queue on the path can overflow,
    whatever the congestion control does. The link's default (100 packets) holds only for a
    sender that paces and keeps its queue short: these tests were written against BBR senders
    that had been asked for CUBIC (docs/testbed.md, "Congestion control"), and CUBIC's slow start
    overflows 100 packets within a 2 MB transfer (measured: 5 of 5 policies retransmitted)."""
    return -(-size_bytes // MSS_BYTES) + 100


def assert_each_byte_once(directions: dict[str, DirectionStats], sender_ip: str, size: int) -> None:
    """A loss-free transfer (see loss_free_buffer_pkts): the capture saw the sender's ``size``
    bytes, none of them twice.

    Not a segment count: Linux may send a short segment mid-stream (at a window edge that is not
    a multiple of the MSS), so ceil(size / MSS) segments is not guaranteed; one CI run saw one more.
    """
    sent = [s for d, s in directions.items() if d.startswith(f"{sender_ip}:")]
    assert sum(s.data_bytes for s in sent) == size
    assert sum(s.retransmissions for s in sent) == 0
