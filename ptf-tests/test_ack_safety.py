"""The safety contract: every rule keeps the ACK it protects, under a policy (every_d, d = 100)
that would otherwise thin every ACK after the first. Each scenario runs on its own flow, over IPv4
and (SafetyContractTest6) over IPv6. The keep reason is read at the half-flow the Python twin's
FlowKey computes: the P4 key and hash agree with it (issue 40's sync test)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ackwise.features.thinning import read_half_field
from ackwise.twins.p4names import KeepReason
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow, routed
from test_ack_thinning import ThinningTest


@dataclass
class Step:
    pkt: bytes
    kept: KeepReason | None  # None: thinned (a data segment: always forwarded, no reason)
    pause_s: float = 0.0
    data: bool = False  # a data segment from the data sender (retransmissions start a repair)


class SafetyContractTest(ThinningTest):
    policy = PolicyParams.parse("every_d", ["d=100", "idle_ms=100"])

    def keep_reason(self, flow: TcpFlow) -> KeepReason:
        assert self.client is not None
        key, direction = flow.key()
        return KeepReason(read_half_field(self.client, "last_keep_reason", key.half(direction)))

    def run_steps(self, name: str, flow: TcpFlow, steps: list[Step]) -> None:
        with self.subTest(name):
            self.send_data(flow, range(20))
            for i, step in enumerate(steps):
                time.sleep(step.pause_s)
                if step.data:
                    self.send(flow.data_port, step.pkt)
                    self.expect_next(routed(step.pkt, flow.ack_port), flow.ack_port)
                    continue
                self.send(flow.ack_port, step.pkt)
                if step.kept is not None:
                    # The next packet out must be this one: a thinned ACK before it would show here.
                    self.expect_next(routed(step.pkt, flow.data_port), flow.data_port)
                    self.assertEqual(self.keep_reason(flow), step.kept, f"step {i}")
            self.assertEqual(self.collect(flow.data_port), [], "thinned ACKs came out")

    def runTest(self) -> None:
        flows = iter(self.new_flow(sport=41000 + n) for n in range(100))
        for name, steps in SCENARIOS:
            f = next(flows)
            self.run_steps(name, f, steps(f))
        f = next(flows)
        self.run_steps("ACK carrying data", f, [Step(f.ack(1), KeepReason.FIRST_ACK), Step(f.ack(2), None)])
        # A segment with payload from the ACKing side is data, never a thinning candidate.
        reverse = self.new_flow(
            data_port=2, ack_port=1, sport=f.dport, dport=f.sport, isn=f.irs, irs=f.seq(3)
        )
        for k in range(3):
            pkt = reverse.data(k)
            self.send(2, pkt)
            self.expect_next(routed(pkt, 1), 1)


class SafetyContractTest6(SafetyContractTest):
    ip_version = 6


# ---- the scenarios: one flow each, every step's ACK and whether (and why) it is kept ----


def _first_then_thinned(f: TcpFlow) -> list[Step]:
    return [Step(f.ack(1), KeepReason.FIRST_ACK), Step(f.ack(2), None)]


def _flags(flag: str) -> Callable[[TcpFlow], list[Step]]:
    def steps(f: TcpFlow) -> list[Step]:
        return [*_first_then_thinned(f), Step(f.ack(3, flags=flag), KeepReason.FLAGS)]

    return steps


def _duplicate_ack(f: TcpFlow) -> list[Step]:
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(3), None),
        Step(f.ack(3, ts=(f.ts_base + 503, f.ts_base + 3)), KeepReason.DUP_ACK),
        Step(f.ack(4), None),
    ]


def _window_update(f: TcpFlow) -> list[Step]:
    return [*_first_then_thinned(f), Step(f.ack(2, window=900), KeepReason.WINDOW_UPDATE)]


def _sack_news(f: TcpFlow) -> list[Step]:
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(2, sack=[(5, 6)]), KeepReason.SACK_NEWS),  # a block never reported
        Step(f.ack(3, sack=[(5, 6)]), None),  # the same block: no news
        Step(f.ack(4, sack=[(7, 8), (5, 6)]), KeepReason.SACK_NEWS),  # a new first block
        Step(f.ack(9), None),
    ]


def _dsack(f: TcpFlow) -> list[Step]:
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(4), None),
        Step(f.ack(5, sack=[(2, 3)]), KeepReason.DSACK),
    ]


def _ece_cwr_change(f: TcpFlow) -> list[Step]:
    return [
        *_first_then_thinned(f),
        Step(f.ack(3, flags="AE"), KeepReason.ECE_CWR_CHANGE),
        Step(f.ack(4, flags="AE"), None),
        Step(f.ack(5), KeepReason.ECE_CWR_CHANGE),
    ]


def _window_reopened(f: TcpFlow) -> list[Step]:
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(2, window=1000), None),  # below one MSS
        Step(f.ack(3, window=1000), None),
        Step(f.ack(4, window=30000), KeepReason.WINDOW_REOPEN),
        Step(f.ack(5, window=20000), None),  # an ordinary window change
    ]


def _window_reopened_scale_clamped(f: TcpFlow) -> list[Step]:
    """The ACK side's SYN-ACK says window scale 200: the switch takes 14 (RFC 7323 2.3), so a
    window of 1 after 0 is 16 KiB and reopens it. Kept 200 (the record had 8 bits for it), the
    shift gave 0 and the reopening ACK was thinned."""
    syn_options = (
        b"\x01\x01"
        + bytes([8, 10])
        + (f.ts_base + 500).to_bytes(4, "big")
        + (f.ts_base).to_bytes(4, "big")
        + b"\x01"
        + bytes([3, 3, 200])
    )
    return [
        Step(f.ack(0, flags="SA", raw_options=syn_options), KeepReason.FLAGS),
        Step(f.ack(2, window=0), None),
        Step(f.ack(3, window=1), KeepReason.WINDOW_REOPEN),
        Step(f.ack(4, window=2), None),
    ]


def _unknown_option(f: TcpFlow) -> list[Step]:
    unknown = (
        b"\x01\x01"
        + bytes([8, 10])
        + (f.ts_base + 503).to_bytes(4, "big")
        + (f.ts_base + 3).to_bytes(4, "big")
        + bytes([30, 4, 0, 0])
    )
    return [*_first_then_thinned(f), Step(f.ack(3, raw_options=unknown), KeepReason.UNKNOWN_OPTION)]


def _timestamps_older(f: TcpFlow) -> list[Step]:
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(3), None),
        Step(f.ack(4, ts=(f.ts_base + 502, f.ts_base + 4)), KeepReason.TS_REORDERED),
    ]


def _idle(f: TcpFlow) -> list[Step]:
    return [*_first_then_thinned(f), Step(f.ack(3), KeepReason.IDLE, pause_s=0.2), Step(f.ack(4), None)]


def _acknowledges_all_data(f: TcpFlow) -> list[Step]:
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(19), None),
        Step(f.ack(20), KeepReason.ACKS_ALL_DATA),
    ]


def _loss_recovery(f: TcpFlow) -> list[Step]:
    """Data 0-19 was sent (run_steps). A retransmission begins a repair whose recovery point is
    the highest data sent then; every ACK below it is kept (NewReno's partial ACKs), another
    retransmission during the repair does not move it, the first ACK past it is thinned again, and
    a retransmission after that begins a new repair. On the contract without the rule, the partial
    ACKs were thinned and a sender without SACK waited for its retransmission timer."""
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.ack(3), None),
        Step(f.data(5), None, data=True),  # a retransmission: the point is seq(20)
        Step(f.ack(6), KeepReason.RECOVERY),
        Step(f.ack(8), KeepReason.RECOVERY),
        *(Step(f.data(k), None, data=True) for k in (20, 21, 22)),  # new data: data_end seq(23)
        Step(f.data(9), None, data=True),  # retransmitted while repairing: the point stays
        Step(f.ack(19), KeepReason.RECOVERY),
        Step(f.ack(21), None),  # past the point, not all data: the repair is over
        Step(f.data(21), None, data=True),  # a new repair: the point is seq(23)
        Step(f.ack(22), KeepReason.RECOVERY),
        Step(f.ack(23), KeepReason.ACKS_ALL_DATA),
    ]


# The most segments a serial comparison spans: an ACK this far past a recovery point is below it.
_HALF_SEQ_SPACE_SEGMENTS = 2**31 // 1448 + 1


def _recovery_ends_with_the_probe(f: TcpFlow) -> list[Step]:
    """The repair's mark is cleared when the ACK that answers the RTT probe (started with new
    data after the retransmission) reaches past the point: 2^31 bytes later, an ACK serially
    below the old point is the policy's, not the repair's. Without the clearing it was kept as
    RECOVERY for the next 2 GiB."""
    far = 23 + _HALF_SEQ_SPACE_SEGMENTS + 10
    half_way = 23 + _HALF_SEQ_SPACE_SEGMENTS // 2
    return [
        Step(f.ack(1), KeepReason.FIRST_ACK),
        Step(f.data(5), None, data=True),  # a repair with the point seq(20)
        Step(f.ack(19), KeepReason.RECOVERY),
        Step(f.data(20), None, data=True),  # new data: the probe starts (ends at seq(21))
        Step(f.ack(21), KeepReason.ACKS_ALL_DATA),  # answers it: the repair's mark is cleared
        Step(f.data(half_way), None, data=True),
        Step(f.ack(half_way + 1), KeepReason.ACKS_ALL_DATA),
        Step(f.data(far), None, data=True),
        Step(f.data(far + 1), None, data=True),
        Step(f.ack(far + 1), KeepReason.POLICY),  # 2^31 bytes past seq(20), serially below it
    ]


SCENARIOS: tuple[tuple[str, Callable[[TcpFlow], list[Step]]], ...] = (
    ("first ACK, then thinned", _first_then_thinned),
    *((f"flags {flag}", _flags(flag)) for flag in ("AP", "AU", "AF", "AR")),
    ("duplicate ACK", _duplicate_ack),
    ("window update", _window_update),
    ("SACK news", _sack_news),
    ("DSACK", _dsack),
    ("ECE/CWR change", _ece_cwr_change),
    ("window reopened", _window_reopened),
    ("window reopened, scale above 14", _window_reopened_scale_clamped),
    ("unknown option", _unknown_option),
    ("timestamps older than seen", _timestamps_older),
    ("first ACK after idle", _idle),
    ("acknowledges all data", _acknowledges_all_data),
    ("loss recovery", _loss_recovery),
    ("loss recovery ends with the RTT probe", _recovery_ends_with_the_probe),
)
