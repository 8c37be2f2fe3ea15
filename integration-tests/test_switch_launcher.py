"""The launcher waits out bmv2's start-up and removes what a failed start made. Regression: bmv2
answers "Unknown service: simple_switch" for a moment after its Thrift server is up; the launcher
raised on it, without stopping the simple_switch it had spawned (process and notification socket
left behind)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import leftovers
import pytest
from conftest import REPO

import ackwise.bmv2.launcher
from ackwise.bmv2.client import SwitchClient, SwitchError, SwitchOperationError
from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.netdev import add_veth

PORT = 9094
NOT_YET = (
    "reading the clock failed on localhost:9094: TMultiplexedProcessor: Unknown service: "
    "simple_switch. Did you forget to call registerProcessor()?"
)


def simple_switch_pids() -> set[int]:
    return leftovers.running("simple_switch")


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SwitchSpec]:
    monkeypatch.setenv("ACKWISE_STATE_DIR", str(tmp_path / "state"))
    # The switch runs in the root namespace, so its port is a root-namespace veth.
    add_veth("awl-p1", "awl-h1", mtu=None, ipv6=True, offloads=True)
    try:
        yield SwitchSpec(
            program_json=str(REPO / "build" / "forward_only.json"), ports={1: "awl-p1"}, thrift_port=PORT
        )
    finally:
        subprocess.run(["ip", "link", "del", "awl-p1"], stderr=subprocess.DEVNULL)


def assert_nothing_left(spec: SwitchSpec, before: set[int], state: Path) -> None:
    for _ in range(40):
        if simple_switch_pids() <= before:
            break
        time.sleep(0.05)
    assert simple_switch_pids() <= before, "the switch of the failed start is still running"
    assert not Path(spec.notifications_path).exists()
    assert not state.exists(), "the state directory, emptied, stays behind"


def test_not_ready_is_waited_out_and_a_real_error_stops_the_switch(
    spec: SwitchSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    class StartingSwitchClient(SwitchClient):
        """The real client, with bmv2's start-up answer first and then an error that is not it."""

        def info(self) -> Any:
            calls.append("info")
            if len(calls) == 1:
                raise SwitchOperationError(NOT_YET)
            raise SwitchOperationError("reading the clock failed on localhost:9094: Invalid something")

    monkeypatch.setattr(ackwise.bmv2.launcher, "SwitchClient", StartingSwitchClient)
    before = simple_switch_pids()
    with pytest.raises(SwitchOperationError, match="Invalid something"):
        start_switch(spec)
    assert len(calls) == 2, "the start-up answer was not retried"
    assert_nothing_left(spec, before, tmp_path / "state")


def test_a_start_that_times_out_leaves_nothing_and_the_port_is_free(spec: SwitchSpec, tmp_path: Path) -> None:
    before = simple_switch_pids()
    with pytest.raises(SwitchError, match=f"did not answer on Thrift port {PORT}"):
        start_switch(spec, timeout_s=0)  # gives up before bmv2 can answer
    assert_nothing_left(spec, before, tmp_path / "state")
    running = start_switch(spec)
    assert running.alive
    running.stop()
    assert_nothing_left(spec, before, tmp_path / "state")
