"""Run by test_cleanup.py through make, then stopped from outside (SIGTERM to make, or Ctrl-C):
a test bed with a transfer running, held until the signal comes. Not collected on its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ackwise.experiments.measure.traffic import Transfer
from ackwise.hosts.mininet_agent import HostAgent
from ackwise.topologies.testbed import Testbed


def test_hold_a_busy_test_bed() -> None:
    with Testbed.create("dumbbell", n_pairs=1, fwd_delay_ms=5, rev_delay_ms=5) as testbed:
        sender, receiver = testbed.host("h1"), testbed.host("r1")
        agent = HostAgent(receiver, "every_d", {"d": "4"}).start()
        transfer = Transfer(sender, receiver, 50_000_000, timeout_s=600).start()  # outlives the test
        try:
            while transfer.progress() < 100_000:
                time.sleep(0.05)
            Path(os.environ["ACKWISE_SELFTEST_MARKER"]).write_text("up")
            time.sleep(300)
        finally:
            transfer.kill()
            agent.stop()
