"""``ackwise controller run`` on real bmv2 switches in Mininet: the dumbbell with the switches'
own egress queues as its bottlenecks (s1 towards s2 for the data, s2 towards s1 for the ACKs),
so that the switches' queue models measure how busy each is.

- A flow paced at a fifth of the bottleneck keeps every segment acknowledged (the bottleneck is
  underused: smartacking's rule), where the growth test alone would call it saturated; the same
  flow, once it fills the bottleneck, gets TACK and its ACKs thinned.
- ACKs crossing a slow reverse queue: the controller on s2 sees the backlog and writes coalesce,
  which folds the ACKs in that queue (acc's d stays 1 there: next to the receiver the switch sees
  a flight of a segment or two, which bounds d).
- The controller killed mid-transfer: nothing lost, its rules stay on the switch.

The controller is the real CLI in its own process; its JSON lines are the decisions checked.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from ackwise.experiments.measure.traffic import PacedStream, TcpSampler, Transfer
from ackwise.features.thinning import FlowRecord, HalfFlow, list_flow_policies, read_flows, set_default_policy
from ackwise.topologies.testbed import Testbed
from ackwise.twins.policies import PolicyParams

FWD_PPS = 826  # 10 Mbit/s of 1514-byte frames
SWITCH_DUMBBELL = {
    "bottleneck": "switch",
    "fwd_queue_pps": FWD_PPS,
    "rev_queue_pps": FWD_PPS,
    "queue_depth_pkts": 64,
    "fwd_delay_ms": 10,
    "rev_delay_ms": 10,
}
TRACKING = PolicyParams.parse("every_d", ["d=1"])  # a flow under `off` has no record to watch


class ControllerProcess:
    """``python -m ackwise controller run`` on one switch; its log lines collected as they come."""

    def __init__(self, thrift_port: int, config: dict[str, Any], tmp: Path) -> None:
        path = tmp / f"controller-{thrift_port}.yaml"
        path.write_text(yaml.safe_dump(config))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ackwise",
                "controller",
                "run",
                "--switch",
                f"localhost:{thrift_port}",
                "--config",
                str(path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def wait_for(
        self, what: str, holds: Callable[[dict[str, Any]], bool], timeout_s: float
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if holds(line):
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
        raise AssertionError(f"no controller line with {what} in {timeout_s:g} s: {self.lines} {err}")

    def decisions(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["event"] in ("set", "change", "reapply")]

    def stop(self, sig: int = signal.SIGINT) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)


@contextmanager
def controller(
    testbed: Testbed, switch: str, config: dict[str, Any], tmp: Path
) -> Iterator[ControllerProcess]:
    proc = ControllerProcess(testbed.switch(switch).thrift_port, config, tmp)
    try:
        proc.wait_for("start", lambda line: line["event"] == "start", 20)
        yield proc
    finally:
        proc.stop()


def managing(receiver_ip: str, **thresholds: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"rules": [{"name": "receivers", "match": {"src": f"{receiver_ip}/32"}}]}
    if thresholds:
        doc["defaults"] = {"thresholds": thresholds}
    return doc


def ack_side(records: list[FlowRecord], receiver_ip: str) -> HalfFlow:
    """The half-flow of ``receiver_ip``: the ACKs it sends."""
    return next(h for f in records for h in f.halves if h.sender.startswith(f"{receiver_ip}:"))


def test_an_underused_bottleneck_keeps_every_segment_acked_until_the_flow_saturates_it(
    tmp_path: Path,
) -> None:
    """One connection: 6 s at 2 Mbit/s (a fifth of the 10 Mbit/s bottleneck, and steady, which the
    growth test alone would call saturated), then 6 MB as fast as it goes. While paced: no rule
    written (the tracking rule's every_d d=1 stays) and not one ACK thinned. Once it fills the
    bottleneck: TACK, and ACKs thinned."""
    with Testbed.create("dumbbell", n_pairs=1, **SWITCH_DUMBBELL) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        with testbed.switch("s1").client() as client:
            set_default_policy(client, TRACKING)
        with controller(testbed, "s1", managing(receiver.IP()), tmp_path) as ctl:
            stream = PacedStream(sender, receiver, 2_000_000, 1448, 6.0, bulk_bytes=6_000_000).start()
            try:
                time.sleep(3.0)  # well into the paced part: reading the records can take 2 s under load
                with testbed.switch("s1").client() as client:
                    paced = ack_side(read_flows(client), receiver.IP())
                paced_read_at = time.time()
                saturated = ctl.wait_for(
                    "a saturated decision", lambda line: line.get("kind") == "saturated", 30
                )
                result = stream.wait()
            finally:
                stream.stop()
            with testbed.switch("s1").client() as client:
                after = ack_side(read_flows(client), receiver.IP())
    # The decisions made before the records were read, by the controller's own clock, from its
    # whole log: it prints a line after writing the rule, so a list taken when the records were
    # read could miss the rule whose effect they show.
    paced_decisions = [line for line in ctl.decisions() if line["t"] <= paced_read_at]
    print(
        f"paced 2 Mbit/s: {paced.acks_seen} ACKs seen, {paced.acks_thinned} thinned (read "
        f"{result['paced_until'] - paced_read_at:.2f} s before the paced part ended); then "
        f"{saturated['reason']}; in all {after.acks_thinned} of {after.acks_seen} thinned"
    )
    assert result["bytes"] == result["writes"] * 1448 + 6_000_000
    assert paced_read_at < result["paced_until"], "the records were read after the paced part ended"
    assert paced_decisions == [], paced_decisions
    assert paced.acks_seen > 300 and paced.acks_thinned == 0
    assert saturated["new"].startswith("tack"), saturated
    assert after.acks_thinned > 0


def test_a_congested_ack_path_gets_fewer_acks(tmp_path: Path) -> None:
    """The ACKs leave s2 towards s1 by a queue served at 60 packets/s, fewer than the ~430 ACKs/s a
    10 Mbit/s flow's receiver sends: the queue fills, the controller on s2 sees the backlog and
    writes coalesce, and from then on ACKs are folded into the one waiting in that queue."""
    params = dict(SWITCH_DUMBBELL, rev_queue_pps=60)
    with Testbed.create("dumbbell", n_pairs=1, **params) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        with testbed.switch("s2").client() as client:
            set_default_policy(client, TRACKING)
        with controller(testbed, "s2", managing(receiver.IP()), tmp_path) as ctl:
            with Transfer(sender, receiver, 2_000_000, seed=4).start() as transfer:
                congested = ctl.wait_for(
                    "a congested decision", lambda line: line.get("kind") == "congested", 40
                )
                with testbed.switch("s2").client() as client:
                    before = ack_side(read_flows(client), receiver.IP())
                result = transfer.wait()
            with testbed.switch("s2").client() as client:
                after = ack_side(read_flows(client), receiver.IP())
    assert result.byte_exact
    assert congested["new"].startswith("coalesce"), congested
    assert "backlog" in congested["reason"], congested
    seen, absorbed = after.acks_seen - before.acks_seen, after.acks_absorbed - before.acks_absorbed
    print(f"slow ACK path: {congested['reason']}; then {absorbed} of {seen} ACKs absorbed")
    assert absorbed > seen // 4


def test_killing_the_controller_mid_transfer_loses_nothing(tmp_path: Path) -> None:
    """The controller writes a rule and is killed with SIGKILL mid-transfer: its rule stays on the
    switch and the transfer completes byte-exact without an RTO.

    The default here is every_d d=2, not d=1: a new flow's first decision (every_d d=1) then
    differs from it and is written at the controller's first look at the flow. Under d=1 nothing
    is written until the flow is saturated, and a retransmission (this dumbbell's 64-packet forward
    queue overflows in slow start) puts the flow on a hold-off of 2 s or more with the safe
    policy, d=1 again: beside a busy core the 6 MB transfer sometimes ended before any rule was
    written (2 of 29 runs)."""
    with Testbed.create("dumbbell", n_pairs=1, **SWITCH_DUMBBELL) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        with testbed.switch("s1").client() as client:
            set_default_policy(client, PolicyParams.parse("every_d", ["d=2"]))
        sampler = TcpSampler(sender, receiver.IP()).start()
        with controller(testbed, "s1", managing(receiver.IP()), tmp_path) as ctl:
            with Transfer(sender, receiver, 6_000_000, seed=5).start() as transfer:
                written = ctl.wait_for("a rule written", lambda line: line["event"] in ("set", "change"), 30)
                ctl.stop(signal.SIGKILL)  # no clean exit: nothing removed, nothing flushed
                with testbed.switch("s1").client() as client:
                    left = list_flow_policies(client)
                result = transfer.wait()
        tcp = sampler.stop()
    assert result.byte_exact
    assert tcp["rto_timeouts"] == 0, tcp
    assert [str(r.match) for r in left] == [written["acks"]], (left, written)
