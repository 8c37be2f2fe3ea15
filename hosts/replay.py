"""Replay what a receiver saw through its window estimator, offline: pure, no I/O.

A receiver trace is the segments on the receiving host's interface in time order: the data
arriving and the ACKs that left (after any agent: what the sender got). Feeding them through a
ReceiverFlow whose policy releases everything reproduces, event for event, what a window
estimator running in the agent would have estimated on that flow, open loop (the ACKs are the
recorded ones, whatever policy chose them). Beside the sender's cwnd, recorded by ``ss`` on the
sending host, it tells how close the estimate is (experiments/measure/metrics.estimate_error);
the unit tests run every estimator over traces recorded on the test bed
(control-plane/tests/data/receiver-traces/).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from ackwise.hosts.policies import RELEASE, AckPolicy, Decision
from ackwise.hosts.receiver import ReceiverFlow
from ackwise.twins.packets import TcpSegment


@dataclass
class Observe(AckPolicy):
    """Releases every ACK: the estimators run, nothing is held."""

    name: ClassVar[str] = "observe"

    def decide(self, t: float, ack: int) -> Decision:
        return RELEASE


class _Sent:
    def accept(self) -> None:
        pass

    def drop(self) -> None:  # never called: Observe holds nothing
        raise AssertionError("a replayed ACK was dropped")


def replay(
    segments: Iterable[TcpSegment], receiver: str, estimator: str = "counting"
) -> tuple[list[tuple[float, int]], dict[str, object]]:
    """The estimate's trace (time, segments) and the estimator's final state, for the one
    connection in ``segments`` whose receiver has address ``receiver``."""
    flow = ReceiverFlow(Observe(estimator=estimator))
    for seg in sorted(segments, key=lambda s: s.time):
        if seg.dst == receiver:
            flow.on_incoming(seg, seg.time)
        elif seg.src == receiver:
            flow.on_outgoing(seg, _Sent(), seg.time)
    return flow.policy.estimate_trace, flow.policy.cwnd.state()
