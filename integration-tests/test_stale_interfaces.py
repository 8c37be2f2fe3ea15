"""Regression: a test bed killed mid-run (here: the machine restored with its veths but without its
processes) left e1-eth2 behind, and every later test bed failed with "RTNETLINK answers: File
exists". Leftovers nobody uses are removed; ones a live process uses stop the start with its pid."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ackwise.netdev import add_veth
from ackwise.topologies.stale import intf_users
from ackwise.topologies.testbed import Testbed, TestbedError

PARAMS = {"n_pairs": 1, "fwd_delay_ms": 1, "rev_delay_ms": 1}


def exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


@pytest.fixture
def leftover_veth() -> Iterator[tuple[str, str]]:
    """A veth pair named as the dumbbell's first link emulator's second port, and a peer."""
    pair = ("e1-eth2", "awstale0")
    for name in pair:
        assert not exists(name), f"{name} exists before the test: remove it with 'ip link del {name}'"
    add_veth(pair[0], pair[1], mtu=None, ipv6=True, offloads=True)
    try:
        yield pair
    finally:
        for name in pair:
            if exists(name):
                subprocess.run(["ip", "link", "del", name], stderr=subprocess.DEVNULL)


def test_unused_leftover_is_removed_and_the_test_bed_starts(
    leftover_veth: tuple[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    name, peer = leftover_veth
    with Testbed.create("dumbbell", **PARAMS) as testbed:
        assert not exists(peer), "the leftover pair was not the one removed"
        assert exists(name), "the test bed's own e1-eth2 is missing"
        assert testbed.pingall() == 0.0
    assert f"removed interfaces an earlier test bed left behind: {name}" in capfd.readouterr().err
    assert testbed.leftovers() == []
    assert not exists(name)


def wait_until_seen_using(pid: int, name: str, timeout_s: float = 10.0) -> None:
    """A process that has only just started may not be seen yet: its command line can still be
    empty, or the interpreter's, for a moment after Popen() returns (seen on a fresh machine: the
    test bed then found no user, removed the interface and started). Wait until the stale check
    itself names ``pid`` as the user of ``name``."""
    deadline = time.monotonic() + timeout_s
    while f"(pid {pid})" not in intf_users([name]).get(name, ""):
        assert time.monotonic() < deadline, f"pid {pid} never showed up as a user of {name}"
        time.sleep(0.05)


def test_leftover_in_use_stops_the_start_and_names_the_process(leftover_veth: tuple[str, str]) -> None:
    name, peer = leftover_veth
    # A stand-in for a live agent or switch of another test bed: its command line names the port.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)", name],
        stdout=subprocess.PIPE,
        text=True,
    )
    testbed = Testbed.create("dumbbell", **PARAMS)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        wait_until_seen_using(holder.pid, name)
        with pytest.raises(TestbedError) as raised:
            testbed.start()
        message = str(raised.value)
        assert f"{name} (used by " in message and f"(pid {holder.pid})" in message
        assert "ackwise topo down" in message
        assert exists(name) and exists(peer), "an interface in use was removed"
        assert testbed.net is None and testbed.leftovers() == []
    finally:
        testbed.stop()  # if it started after all, it must not outlive the test
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
