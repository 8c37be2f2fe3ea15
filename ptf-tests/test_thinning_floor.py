"""thinning_floor, make bench's yardstick (p4src/thinning_floor.p4): which ACKs it keeps and which
it thins, byte for byte, so that the bench measures a program that does what it says."""

from __future__ import annotations

from ackwise.experiments.stress.bench import set_floor_policy
from ackwise.twins.p4names import COUNTER_ACK_THINNING_STATS, ThinningStat
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow
from test_ack_thinning import ThinningTest


class FloorTest(ThinningTest):
    program = "thinning_floor"
    ipv6 = False  # IPv4 only: it stays the program issue 35's bounds were measured against
    d = 4

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        set_floor_policy(self.client, PolicyParams.parse("every_d", [f"d={self.d}", f"mss={TcpFlow().mss}"]))

    def counts(self) -> tuple[int, int]:
        """(passed, thinned) from the stats counter."""
        assert self.client is not None
        return (
            self.client.counter_read(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_PASSED).packets,
            self.client.counter_read(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_THINNED).packets,
        )


class FloorEveryDTest(FloorTest):
    """d = 4: the same ACKs as ack_switch's every_d (test_ack_thinning.EveryDTest) leave."""

    def runTest(self) -> None:
        flow = TcpFlow()
        self.send_data(flow, range(16))
        acks = [flow.ack(k) for k in range(1, 17)]
        # ack(1): the first; ack(5), ack(9), ack(13): 4 segments since the last forwarded;
        # ack(16): acknowledges all data the switch saw.
        self.run_acks(flow, acks, [0, 4, 8, 12, 15])
        self.assertEqual(self.counts(), (5, 11))


class FloorCoreRulesTest(FloorTest):
    """d = 100, so only the core rules keep an ACK: each kept one below is kept for one reason."""

    d = 100

    def runTest(self) -> None:
        flow = TcpFlow()
        self.send_data(flow, range(20))
        acks = [
            flow.ack(1),  # 0 kept: the first
            flow.ack(2),  # 1
            flow.ack(2),  # 2 kept: a duplicate
            flow.ack(3),  # 3
            flow.ack(4, sack=[(5, 6)]),  # 4 kept: a SACK block
            flow.ack(5),  # 5
            flow.ack(6, flags="AE"),  # 6 kept: ECE set
            flow.ack(7, flags="AE"),  # 7
            flow.ack(8),  # 8 kept: ECE cleared
            flow.ack(9, flags="AP"),  # 9 kept: PSH
            flow.ack(10),  # 10
            flow.ack(11, window=600),  # 11 kept: another window
            flow.ack(12, window=600),  # 12
            flow.ack(20, window=600),  # 13 kept: all data the switch saw
        ]
        self.run_acks(flow, acks, [0, 2, 4, 6, 8, 9, 11, 13])
        self.assertEqual(self.counts(), (8, 6))


class FloorOffTest(FloorTest):
    """No policy entry: every segment passes, and no record or count is kept."""

    def install_entries(self) -> None:
        self.install_routes()

    def runTest(self) -> None:
        flow = TcpFlow()
        self.send_data(flow, range(8))
        acks = [flow.ack(k) for k in range(1, 9)]
        self.run_acks(flow, acks, list(range(8)))
        self.assertEqual(self.counts(), (0, 0))
