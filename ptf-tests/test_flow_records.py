"""Flow records: serial-number wrap, hash collisions, reclamation, RTTmin from data->ACK pairs."""

from __future__ import annotations

import time

from ackwise.features.thinning import read_flows, set_reclaim_idle_ms
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import COUNTER_ACK_THINNING_STATS, ThinningStat
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow, routed
from test_ack_thinning import ThinningTest


def colliding_flow(flow: TcpFlow) -> TcpFlow:
    """Another flow between the same hosts whose record lands in the same slot."""
    slot = FlowKey.of(f"10.0.{flow.data_port}.1", f"10.0.{flow.ack_port}.1", flow.sport, flow.dport)[0].slot
    for sport in range(flow.sport + 1, 65536):
        key, _ = FlowKey.of(f"10.0.{flow.data_port}.1", f"10.0.{flow.ack_port}.1", sport, flow.dport)
        if key.slot == slot:
            return TcpFlow(flow.data_port, flow.ack_port, sport, flow.dport)
    raise AssertionError("no colliding port found")


EVERY_4 = PolicyParams.parse("every_d", ["d=4"])


class SerialWrapTest(ThinningTest):
    """Sequence numbers and timestamps wrapping around 2**32 change nothing."""

    policy = EVERY_4

    def runTest(self) -> None:
        flow = TcpFlow(isn=2**32 - 5 * 1448 - 7, ts_base=2**32 - 8)
        self.assertLess(flow.seq(16), flow.seq(0))
        self.send_data(flow, range(16))
        self.run_acks(flow, [flow.ack(k) for k in range(1, 17)], [0, 4, 8, 12, 15])


class HashCollisionTest(ThinningTest):
    """A flow whose slot holds another live flow passes untouched, is counted, and does not
    disturb the owner's thinning."""

    policy = EVERY_4

    def runTest(self) -> None:
        assert self.client is not None
        owner = TcpFlow()
        other = colliding_flow(owner)
        self.send_data(owner, range(12))
        self.run_acks(owner, [owner.ack(k) for k in range(1, 6)], [0, 4])
        self.send_data(other, range(8))
        self.run_acks(other, [other.ack(k) for k in range(1, 9)], list(range(8)))  # untouched
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.COLLISIONS), 16)
        self.run_acks(owner, [owner.ack(k) for k in range(6, 13)], [3, 6])  # ack(9), then ack(12) (all data)
        flows = read_flows(self.client)
        self.assertEqual(
            [str(f.key) for f in flows], [str(FlowKey.of("10.0.1.1", "10.0.2.1", owner.sport, 5001)[0])]
        )


class ReclaimIdleTest(ThinningTest):
    """A record idle longer than the reclaim time is taken over by a colliding flow."""

    policy = EVERY_4

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_reclaim_idle_ms(self.client, 100)

    def runTest(self) -> None:
        owner = TcpFlow()
        other = colliding_flow(owner)
        self.send_data(owner, range(8))
        self.run_acks(owner, [owner.ack(k) for k in range(1, 4)], [0])
        time.sleep(0.25)
        self.send_data(other, range(8))
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.RECLAIMED), 1)
        self.run_acks(other, [other.ack(k) for k in range(1, 9)], [0, 4, 7])  # thinned on its own record
        self.run_acks(owner, [owner.ack(k) for k in range(4, 7)], [0, 1, 2])  # now the one left untouched


class ReclaimClosedTest(ThinningTest):
    """A record closed by FIN or RST is taken over at once."""

    policy = EVERY_4

    def runTest(self) -> None:
        for closing in ("FA", "RA"):
            with self.subTest(closing):
                owner = TcpFlow(sport=40000 if closing == "FA" else 42000)
                other = colliding_flow(owner)
                self.send_data(owner, range(4))
                fin = owner.data(4, flags=closing, payload_len=0)
                self.send(owner.data_port, fin)
                self.expect_next(routed(fin, owner.ack_port), owner.ack_port)
                before = self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.RECLAIMED)
                self.send_data(other, range(8))
                self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.RECLAIMED), before + 1)
                self.run_acks(other, [other.ack(k) for k in range(1, 9)], [0, 4, 7])


class RttMinTest(ThinningTest):
    """RTTmin from data->ACK pairs: a windowed minimum, and no sample across a retransmission."""

    policy = PolicyParams.parse("tack", [])

    def rtt_min(self, flow: TcpFlow) -> int:
        return self.flow_record(flow)["data_side"].rtt_min_us

    def pair(self, flow: TcpFlow, k: int, wait_s: float, retransmit: bool = False) -> None:
        self.send_data(flow, [k, k] if retransmit else [k])
        time.sleep(wait_s)
        ack = flow.ack(k + 1)
        self.send(flow.ack_port, ack)
        self.expect_next(routed(ack, flow.data_port), flow.data_port)  # each acknowledges all data

    def runTest(self) -> None:
        flow = TcpFlow()
        self.pair(flow, 0, 0.03, retransmit=True)
        self.assertEqual(self.rtt_min(flow), 0, "a retransmitted segment gave an RTT sample")
        self.pair(flow, 1, 0.03)
        first = self.rtt_min(flow)
        self.assertTrue(30_000 <= first <= 45_000, f"RTTmin {first} us after a 30 ms pair")
        self.pair(flow, 2, 0.01)
        second = self.rtt_min(flow)
        self.assertTrue(10_000 <= second <= 20_000, f"RTTmin {second} us after a 10 ms pair")
        self.pair(flow, 3, 0.05)
        self.assertEqual(self.rtt_min(flow), second, "a longer sample replaced the minimum")
