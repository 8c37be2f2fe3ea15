"""Faults in the middle of a transfer, on the Mininet dumbbell; each has a documented outcome
(docs/robustness.md, Faults), and the leftover guard checks that nothing stays behind.

- The switch that thins the ACKs (s1) dies (SIGKILL) and is started again, then its configuration
  file is applied again: the transfer completes byte-exact (TCP retransmits what the outage lost).
- The controller (``ackwise controller run``) dies (SIGKILL): the switch keeps forwarding with the
  rules it holds, the transfer completes byte-exact, and a controller started later adopts them.

(The host agent and the AP's repair agent killed mid-transfer: test_host_policies.py and
test_ap_cli.py.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from conftest import REPO

from ackwise.bmv2.launcher import start_switch
from ackwise.experiments.measure.traffic import Transfer
from ackwise.features.apply import apply_config, load_config
from ackwise.features.thinning import list_policies, read_flows
from ackwise.topologies.testbed import Testbed
from ackwise.twins.p4names import TABLE_FORWARDING_L2_EXACT

SIZE = 4_000_000


def wait_for(transfer: Transfer, done_bytes: int, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while transfer.progress() < done_bytes:
        assert time.monotonic() < deadline, f"the transfer did not reach {done_bytes} bytes in {limit_s} s"
        time.sleep(0.05)


def saved_configuration(testbed: Testbed, path: Path) -> Path:
    """s1's configuration as an operator keeps it: its L2 entries (the test bed's) and a policy."""
    with testbed.switch("s1").client() as client:
        entries = client.table_entries(TABLE_FORWARDING_L2_EXACT)
    doc = {
        "tables": [
            {
                "table": TABLE_FORWARDING_L2_EXACT,
                "action": e.action,
                "key": [str(m) for m in e.key],
                "params": e.params,
            }
            for e in entries
        ],
        "policies": [{"match": "default", "policy": "every_d", "params": {"d": 4}}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_switch_killed_mid_transfer_comes_back_with_its_file(tmp_path: Path) -> None:
    with Testbed.create("dumbbell", fwd_delay_ms=5, rev_delay_ms=5) as testbed:
        s1 = testbed.switch("s1")
        config = load_config(saved_configuration(testbed, tmp_path / "s1.yaml"))
        with s1.client() as client:
            apply_config(client, config)
        with Transfer(testbed.host("h1"), testbed.host("r1"), SIZE, timeout_s=120).start() as transfer:
            wait_for(transfer, SIZE // 4)

            assert s1.running is not None
            spec, old_pid = s1.running.spec, s1.running.pid
            os.kill(old_pid, signal.SIGKILL)
            while s1.running.alive:
                time.sleep(0.02)
            s1.running.stop()  # removes what the dead one left (its notification socket)
            s1.running = start_switch(spec)
            testbed.pids["s1 simple_switch"] = s1.running.pid
            with s1.client() as client:
                assert client.table_entries(TABLE_FORWARDING_L2_EXACT) == []  # a new switch knows nothing
                apply_config(client, config)
                result = transfer.wait()
                flows = read_flows(client)
                _, default = list_policies(client)
    assert result.byte_exact
    assert default.policy.value == "every_d" and default.d == 4
    # The restarted switch tracks the flow afresh, from what it saw after the restart.
    assert len(flows) == 1 and flows[0].halves[1].acks_seen > 0


CONTROLLER_CONFIG = {
    "interval_ms": 100,
    "rules": [{"name": "dumbbell", "match": {"src": "10.0.0.0/16", "dst": "10.0.0.0/16"}}],
}


def test_controller_killed_mid_transfer(tmp_path: Path) -> None:
    config = tmp_path / "controller.yaml"
    config.write_text(yaml.safe_dump(CONTROLLER_CONFIG))
    with Testbed.create("dumbbell", fwd_delay_ms=5, rev_delay_ms=5) as testbed:
        s1 = testbed.switch("s1")
        with s1.client() as client:
            apply_config(
                client, {"policies": [{"match": "src=10.0.0.0/16", "policy": "every_d", "params": {"d": 1}}]}
            )
        controller = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ackwise",
                "controller",
                "run",
                "--config",
                str(config),
                "--switch",
                f"localhost:{s1.thrift_port}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        try:
            with Transfer(testbed.host("h1"), testbed.host("r1"), SIZE, timeout_s=120).start() as transfer:
                wait_for(transfer, SIZE // 2)
                controller.kill()
                controller.wait(timeout=10)
                result = transfer.wait()
        finally:
            if controller.poll() is None:
                controller.kill()
                controller.wait()
        out = controller.stdout.read() if controller.stdout else ""
        with s1.client() as client:
            rules, _ = list_policies(client)
    assert result.byte_exact
    assert controller.returncode == -signal.SIGKILL
    assert '"event": "start"' in out
    # What it wrote stays on the switch (the operator's rule too): a controller started later adopts them.
    assert len(rules) >= 1
