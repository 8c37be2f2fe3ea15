"""Flow records: serial-number wrap, hash collisions, reclamation, RTTmin from data->ACK pairs; over
IPv4 and (the subclasses named ...6) IPv6, and IPv4 and IPv6 flows sharing the slots: a record is
only ever its own flow's (issue 40: the IPv6 key keeps what the IPv4 key guarantees)."""

from __future__ import annotations

import time

from ackwise.features.thinning import read_flows, set_reclaim_idle_ms
from ackwise.twins.p4names import COUNTER_ACK_THINNING_STATS, ThinningStat
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow, host_ip, routed
from test_ack_thinning import ThinningTest


def colliding_flow(flow: TcpFlow, ip_version: int | None = None) -> TcpFlow:
    """Another flow between the same hosts (over ``ip_version``, the flow's own by default) whose
    record lands in the same slot."""
    version = ip_version or flow.ip_version
    slot = flow.key()[0].slot
    for sport in range(flow.sport + 1, 65536):
        other = TcpFlow(flow.data_port, flow.ack_port, sport, flow.dport, ip_version=version)
        if other.key()[0].slot == slot:
            return other
    raise AssertionError("no colliding port found")


def same_ports_other_address(flow: TcpFlow) -> TcpFlow:
    """An IPv6 flow with the same ports whose data sender is another address of the same /64, and
    whose record lands in the same slot: only the addresses tell the two keys apart."""
    slot = flow.key()[0].slot
    prefix = host_ip(flow.data_port, 6).removesuffix("::1")
    for host in range(2, 1 << 20):
        other = TcpFlow(
            flow.data_port, flow.ack_port, flow.sport, flow.dport, ip_version=6, data_ip=f"{prefix}::{host:x}"
        )
        if other.key()[0].slot == slot:
            return other
    raise AssertionError("no colliding address found")


EVERY_4 = PolicyParams.parse("every_d", ["d=4"])


class SerialWrapTest(ThinningTest):
    """Sequence numbers and timestamps wrapping around 2**32 change nothing."""

    policy = EVERY_4

    def runTest(self) -> None:
        flow = self.new_flow(isn=2**32 - 5 * 1448 - 7, ts_base=2**32 - 8)
        self.assertLess(flow.seq(16), flow.seq(0))
        self.send_data(flow, range(16))
        self.run_acks(flow, [flow.ack(k) for k in range(1, 17)], [0, 4, 8, 12, 15])


class HashCollisionTest(ThinningTest):
    """A flow whose slot holds another live flow passes untouched, is counted, and does not
    disturb the owner's thinning."""

    policy = EVERY_4

    def runTest(self) -> None:
        assert self.client is not None
        owner = self.new_flow()
        other = colliding_flow(owner)
        self.send_data(owner, range(12))
        self.run_acks(owner, [owner.ack(k) for k in range(1, 6)], [0, 4])
        self.send_data(other, range(8))
        self.run_acks(other, [other.ack(k) for k in range(1, 9)], list(range(8)))  # untouched
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.COLLISIONS), 16)
        self.run_acks(owner, [owner.ack(k) for k in range(6, 13)], [3, 6])  # ack(9), then ack(12) (all data)
        flows = read_flows(self.client)
        self.assertEqual([str(f.key) for f in flows], [str(owner.key()[0])])


class ReclaimIdleTest(ThinningTest):
    """A record idle longer than the reclaim time is taken over by a colliding flow."""

    policy = EVERY_4

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_reclaim_idle_ms(self.client, 100)

    def runTest(self) -> None:
        owner = self.new_flow()
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
                owner = self.new_flow(sport=40000 if closing == "FA" else 42000)
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
        flow = self.new_flow()
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


# ---- the same over IPv6 ----


class SerialWrapTest6(SerialWrapTest):
    ip_version = 6


class HashCollisionTest6(HashCollisionTest):
    ip_version = 6


class ReclaimIdleTest6(ReclaimIdleTest):
    ip_version = 6


class ReclaimClosedTest6(ReclaimClosedTest):
    ip_version = 6


class RttMinTest6(RttMinTest):
    ip_version = 6


# ---- IPv6 keys against each other and against IPv4's ----


class CollisionTest(ThinningTest):
    """``owner`` takes its slot; every ACK of ``other``, whose slot is the same, passes untouched
    and is counted as a collision; the owner's thinning goes on as if alone, and the only record
    is the owner's."""

    policy = EVERY_4

    def check(self, owner: TcpFlow, other: TcpFlow) -> None:
        assert self.client is not None
        self.assertEqual(owner.key()[0].slot, other.key()[0].slot)
        self.assertNotEqual(owner.key()[0], other.key()[0])
        before = self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.COLLISIONS)
        self.send_data(owner, range(12))
        self.run_acks(owner, [owner.ack(k) for k in range(1, 6)], [0, 4])
        self.send_data(other, range(8))
        self.run_acks(other, [other.ack(k) for k in range(1, 9)], list(range(8)))  # untouched
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.COLLISIONS), before + 16)
        self.run_acks(owner, [owner.ack(k) for k in range(6, 13)], [3, 6])
        self.assertEqual([str(f.key) for f in read_flows(self.client)], [str(owner.key()[0])])


class Ipv6SamePortsOtherAddressTest(CollisionTest):
    """Two IPv6 flows with the same ports in one slot: the record's 96-bit key is the same for
    both (FLOW_KEY_IPV6 and the ports); the addresses in ack_thinning.key6 tell them apart."""

    def runTest(self) -> None:
        owner = TcpFlow(ip_version=6)
        self.check(owner, same_ports_other_address(owner))


class Ipv4OwnerIpv6OtherTest(CollisionTest):
    """An IPv6 flow in an IPv4 flow's slot is a collision (and not the IPv4 flow's)."""

    def runTest(self) -> None:
        owner = TcpFlow()
        self.check(owner, colliding_flow(owner, ip_version=6))


class Ipv6OwnerIpv4OtherTest(CollisionTest):
    """An IPv4 flow in an IPv6 flow's slot is a collision (and not the IPv6 flow's)."""

    def runTest(self) -> None:
        owner = TcpFlow(ip_version=6)
        self.check(owner, colliding_flow(owner, ip_version=4))
