"""ECN marking at the egress queue threshold, and the ACC delay factor: doubling on congestion
signals at most once per RTT, falling by one per quiet RTT, bounded by the flight, and one ACK
forwarded per d segments acknowledged. Over IPv4 and (the subclasses named ...6) IPv6, whose ECN
field is its traffic class's low two bits."""

from __future__ import annotations

import time

from scapy.utils import checksum

from ackwise.features import ecn
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow, routed, tcp_segment
from test_ack_thinning import ThinningTest


def with_ce(frame: bytes) -> bytes:
    """``frame`` with its IPv4 ECN field set to CE and the header checksum recomputed, or its IPv6
    ECN field (bits 2-3 of the second byte: the traffic class's low two) set to CE."""
    raw = bytearray(frame)
    if raw[12:14] == b"\x86\xdd":
        raw[15] |= 0x30
        return bytes(raw)
    raw[15] |= 0x03
    raw[24:26] = b"\0\0"
    ihl = (raw[14] & 0x0F) * 4
    raw[24:26] = checksum(bytes(raw[14 : 14 + ihl])).to_bytes(2, "big")
    return bytes(raw)


class EcnTestBase(ThinningTest):
    """Port 2's egress queue served at 4 packets/s, so a burst builds a known queue."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        self.client.set_queue_rate(2, 4)
        self.configure_ecn()

    def configure_ecn(self) -> None:
        raise NotImplementedError

    def burst(self, ecns: list[int]) -> tuple[list[bytes], list[bytes]]:
        """Send the burst and collect what leaves port 2. The first packet goes alone and is
        received before the others are sent, so it has left the queue (depth 0 for the second)
        however late the egress thread runs; the others then queue behind each other."""
        pkts = [
            bytes(
                tcp_segment(
                    1, 2, seq=1000 + i * 100, payload=b"p" * 100, ecn=e, ip_id=i, ip_version=self.ip_version
                )
            )
            for i, e in enumerate(ecns)
        ]
        self.send(1, pkts[0])
        first = self.next_packet(2, 2.0)
        assert first is not None, "the burst's first packet did not come out"
        for pkt in pkts[1:]:
            self.send(1, pkt)
        return pkts, [first, *self.collect(2, quiet_s=0.5)]


class EcnThresholdTest(EcnTestBase):
    """K = 3: ECT(0) and ECT(1) packets enqueued behind more than 3 packets leave with CE and a
    valid checksum; Not-ECT never, CE stays CE; the port's mark counter counts them."""

    def configure_ecn(self) -> None:
        assert self.client is not None
        ecn.set_threshold(self.client, 2, 3)

    def runTest(self) -> None:
        # The first packet leaves at once; the n-th after it waits behind n - 1 others.
        ecns = [2, 2, 2, 2, 2, 2, 0, 1, 3, 2]
        pkts, got = self.burst(ecns)
        depth = [0, *range(len(pkts) - 1)]
        expected = []
        for pkt, e, q in zip(pkts, ecns, depth, strict=True):
            out = routed(pkt, 2)
            expected.append(with_ce(out) if q > 3 and e in (1, 2) else out)
        self.assertEqual(got, expected)
        assert self.client is not None
        self.assertEqual(
            ecn.marks(self.client, 2),
            sum(1 for e, q in zip(ecns, depth, strict=True) if q > 3 and e in (1, 2)),
        )


class EcnRedTest(EcnTestBase):
    """RED-like between k_min = 2 and k_max = 5 with p_max = 0: nothing marked between the
    thresholds, everything ECT above k_max."""

    def configure_ecn(self) -> None:
        assert self.client is not None
        ecn.set_red(self.client, 2, 2, 5, 0)

    def runTest(self) -> None:
        pkts, got = self.burst([2] * 9)
        depth = [0, *range(len(pkts) - 1)]
        self.assertEqual(
            got, [with_ce(routed(p, 2)) if q > 5 else routed(p, 2) for p, q in zip(pkts, depth, strict=True)]
        )


class AccTestBase(ThinningTest):
    flow = TcpFlow()

    def acc_state(self) -> tuple[int, int, int]:
        """(d, d_max, signals) of the flow's ACKs."""
        assert self.client is not None
        key, direction = self.flow.key()
        h = key.half(direction)
        return (
            self.client.register_read("acc.d", h),
            self.client.register_read("acc.d_max", h),
            self.client.register_read("acc.signals", h),
        )

    def ack(self, k: int, settle_s: float = 0.01, **kwargs: object) -> None:
        self.send(self.flow.ack_port, self.flow.ack(k, **kwargs))
        time.sleep(settle_s)

    def ce_data(self, k: int) -> None:
        pkt = self.flow.data(k, ecn=3)
        self.send(self.flow.data_port, pkt)
        self.expect_next(routed(pkt, self.flow.ack_port), self.flow.ack_port)


class AccDoublingTest(AccTestBase):
    """CE on the flow's data doubles d, at most once per RTTmin (50 ms here); each quiet RTTmin
    takes one off."""

    policy = PolicyParams.parse("acc", ["rtt_min_us=50000", "signals=ce"])

    def runTest(self) -> None:
        self.send_data(self.flow, range(40))
        self.ack(1)
        self.assertEqual(self.acc_state()[0], 1)
        self.ce_data(40)
        self.ack(2)
        self.assertEqual(self.acc_state()[0::2], (2, 1))
        self.ce_data(41)
        self.ack(3)  # a second signal within the RTT: no change
        self.assertEqual(self.acc_state()[0::2], (2, 1))
        time.sleep(0.06)
        self.ce_data(42)
        self.ack(4)
        self.assertEqual(self.acc_state()[0::2], (4, 2))
        time.sleep(0.06)
        self.ack(5)  # one quiet RTT
        self.assertEqual(self.acc_state()[0], 3)
        self.ack(6)  # not yet another
        self.assertEqual(self.acc_state()[0], 3)
        time.sleep(0.12)
        self.ack(7)  # two more quiet RTTs: one step per ACK
        self.ack(8)
        self.assertEqual(self.acc_state()[0], 1)
        self.collect(self.flow.data_port)


class AccFlightBoundTest(AccTestBase):
    """d never exceeds half the flight in segments, nor the control plane's cap."""

    policy = PolicyParams.parse("acc", ["rtt_min_us=1", "signals=ece", "d_cap=8"])

    def runTest(self) -> None:
        self.send_data(self.flow, range(40))
        for k in range(1, 8):  # ECE on every ACK: a signal each time (RTTmin 1 us)
            self.ack(k, flags="AE")
        d, d_max, signals = self.acc_state()
        self.assertEqual((d, d_max), (8, 8))  # the cap: the flight (33 segments) would allow 16
        self.assertGreaterEqual(signals, 3)
        self.ack(35, flags="AE")  # 5 segments left in flight: d_max = 2
        self.assertEqual(self.acc_state()[:2], (2, 2))
        self.ack(39, flags="AE")  # 1 segment: d_max = max(1, 0) = 1
        self.assertEqual(self.acc_state()[:2], (1, 1))
        self.collect(self.flow.data_port)


class AccForwardingTest(AccTestBase):
    """With d at 4, one ACK per 4 segments acknowledged leaves; the safety contract still keeps a
    duplicate ACK and the last ACK."""

    policy = PolicyParams.parse("acc", ["rtt_min_us=400000", "signals=ce"])

    def runTest(self) -> None:
        flow = self.flow
        self.send_data(flow, range(30))
        acks = [flow.ack(1), flow.ack(2), flow.ack(3)]
        self.send(flow.ack_port, acks[0])
        self.ce_data(30)
        self.send(flow.ack_port, acks[1])  # d = 2
        time.sleep(0.45)
        self.ce_data(31)
        self.send(flow.ack_port, acks[2])  # d = 4, within the RTT from here on
        stream = [flow.ack(k) for k in range(4, 13)]
        stream.insert(5, flow.ack(8, ts=(flow.ts(508), flow.ts(8))))  # a duplicate of ack(8)
        stream.append(flow.ack(32))  # everything
        # Counting from ack(1), the last forwarded: ack(5) is 4 segments on; the duplicate ack(8)
        # is kept; ack(12) is 4 segments after it; ack(32) acknowledges all data.
        self.expect_next(routed(acks[0], flow.data_port), flow.data_port)  # the first ACK
        self.run_acks(flow, stream, [1, 5, 9, 10])
        # Two signals doubled d; after ack(32) nothing is in flight, so the flight bound is 1.
        self.assertEqual(self.acc_state(), (1, 1, 2))
        self.assertEqual(self.flow_record(flow)["ack_side"].acks_forwarded, 5)


class AccQueueSignalTest(AccTestBase):
    """The flow's ACKs entering a queue deeper than the port's K are a signal. v1model tells the
    depth at egress, so it is raised as the ACK leaves the queue and acts on the next ACK."""

    policy = PolicyParams.parse("acc", ["rtt_min_us=1", "signals=queue"])

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        self.client.set_queue_rate(1, 50)  # the ACK path
        ecn.set_threshold(self.client, 1, 2)

    def runTest(self) -> None:
        self.send_data(self.flow, range(40))
        for k in range(1, 8):
            self.ack(k, settle_s=0.002)
        self.assertEqual(len(self.collect(self.flow.data_port, quiet_s=0.5)), 7)  # d = 1: all forwarded
        self.assertEqual(self.acc_state()[0::2], (1, 0))
        self.ack(8)  # the signals raised at dequeue act now
        d, _, signals = self.acc_state()
        self.assertEqual((d, signals), (2, 1))
        self.collect(self.flow.data_port)


class AccFirstSignalTest(AccTestBase):
    """Regression: the switch's clock starts at 0, so "last changed at 0" must mean "never
    changed": the first signal doubles d even within one RTTmin (10 s here) of switch start."""

    policy = PolicyParams.parse("acc", ["rtt_min_us=10000000", "signals=ce"])

    def runTest(self) -> None:
        self.send_data(self.flow, range(20))
        self.ack(1)
        self.ce_data(20)
        self.ack(2)
        self.assertEqual(self.acc_state()[0::2], (2, 1))
        self.collect(self.flow.data_port)


# ---- the same over IPv6 ----


class EcnThresholdTest6(EcnThresholdTest):
    ip_version = 6


class EcnRedTest6(EcnRedTest):
    ip_version = 6


class AccDoublingTest6(AccDoublingTest):
    ip_version = 6
    flow = TcpFlow(ip_version=6)


class AccFlightBoundTest6(AccFlightBoundTest):
    ip_version = 6
    flow = TcpFlow(ip_version=6)


class AccForwardingTest6(AccForwardingTest):
    ip_version = 6
    flow = TcpFlow(ip_version=6)


class AccQueueSignalTest6(AccQueueSignalTest):
    ip_version = 6
    flow = TcpFlow(ip_version=6)


class AccFirstSignalTest6(AccFirstSignalTest):
    ip_version = 6
    flow = TcpFlow(ip_version=6)
