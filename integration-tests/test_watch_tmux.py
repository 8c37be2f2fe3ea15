"""``ackwise watch`` as a person sees it: in a terminal (tmux), on a switch carrying a transfer.
The live table shows the flow with its counters and policy, refreshes in place (one table on the
screen, its numbers moving), and Ctrl-C gives the terminal back with exit status 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ackwise.experiments.measure.traffic import Transfer
from ackwise.features.thinning import set_default_policy
from ackwise.topologies.testbed import Testbed
from ackwise.twins.policies import PolicyParams


class Tmux:
    """A tmux server of its own (-L), so that the test touches no one else's sessions."""

    def __init__(self) -> None:
        self.socket = f"awwatch{os.getpid()}"

    def __call__(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True
        ).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "watch")

    def wait_for(self, pattern: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} not on the screen in {timeout_s:g} s:\n{self.screen()}")


@contextmanager
def tmux_running(command: str) -> Iterator[Tmux]:
    tmux = Tmux()
    # The shell stays after the command so that its exit status can be read off the screen.
    tmux("new-session", "-d", "-s", "watch", "-x", "160", "-y", "40", f"{command}; echo EXIT=$?; sleep 60")
    try:
        yield tmux
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True)


def test_watch_shows_the_live_table_and_leaves_on_ctrl_c() -> None:
    with Testbed.create("dumbbell", n_pairs=1) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        sender_ip, receiver_ip = sender.IP(), receiver.IP()
        s1 = testbed.switch("s1")
        with s1.client() as client:
            set_default_policy(client, PolicyParams.parse("every_d", ["d=2"]))
        # As from a person's shell in a 160-column terminal: rich takes COLUMNS and LINES over the
        # terminal's size, and this test process carries COLUMNS=80 LINES=24 (set by the test bed's
        # libraries), which would squeeze the table to 80 columns.
        ackwise = f"{sys.executable} -m ackwise --thrift-port {s1.thrift_port}"
        command = f"env -u COLUMNS -u LINES {ackwise} watch --interval 0.5"
        with Transfer(sender, receiver, 8_000_000, seed=6).start() as transfer, tmux_running(command) as tmux:
            first = tmux.wait_for(rf"{re.escape(receiver_ip)}", 30)
            time.sleep(1.5)
            second = tmux.screen()
            tmux("send-keys", "-t", "watch", "C-c")
            final = tmux.wait_for(r"EXIT=\d+", 10)
            transfer.wait()
    print(first, second, sep="\n")
    header = f"localhost:{s1.thrift_port}: "
    columns = ("seen", "fwd", "thinned", "RTTmin", "rate", "policy", "kept")
    flow_row = rf"{re.escape(sender_ip)}:\d+ -> {re.escape(receiver_ip)}:5001 .*every_d"
    for screen in (first, second):
        assert screen.count(header) == 1  # one table, redrawn in place, not one per refresh
        assert all(f" {c} " in screen for c in columns), screen
        assert re.search(flow_row, screen), screen
        assert "…" not in screen  # nothing cut short at this width
        assert "backlog (packets)" in screen and "s1-eth1" in screen
    assert first != second  # the numbers moved between refreshes
    assert "EXIT=0" in final
    assert "Traceback" not in final
