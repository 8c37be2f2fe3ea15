"""The filter policy: an ACK is dropped at egress only when a newer ACK of its flow that
supersedes it entered the queue behind it."""

from __future__ import annotations

from ackwise.features.queues import set_queue_depth, set_queue_rate
from ackwise.twins.p4names import COUNTER_ACK_FILTER_STATS, FilterStat
from ackwise.twins.policies import PolicyParams
from test_ack_thinning import ThinningTest

FILTER = PolicyParams.parse("filter", [])


class SlowQueueFilterTest(ThinningTest):
    """The filter policy, with the ACKs' egress queue (port 1) served at 5 packets/s so that they
    queue."""

    policy = FILTER

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_rate(self.client, 1, 5)


class QueuedFilterTest(SlowQueueFilterTest):
    """Ten ACKs into a queue served at 5 packets/s: the first (already leaving) and the newest
    come out; the eight in between are superseded."""

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(12))
        self.run_acks(flow, [flow.ack(k) for k in range(1, 11)], [0, 9], quiet_s=2.5)
        self.assertEqual(self.counter(COUNTER_ACK_FILTER_STATS, FilterStat.FILTERED), 8)


class FilterKeepsNewsTest(SlowQueueFilterTest):
    """In the queue, a duplicate ACK and an ECE change are kept, and nothing is dropped across
    an ECE/CWR change."""

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(12))
        acks = [
            flow.ack(1),
            flow.ack(2),
            flow.ack(2, ts=(flow.ts_base + 502, flow.ts_base + 2)),
            flow.ack(3, flags="AE"),
            flow.ack(4, flags="AE"),
            flow.ack(5, flags="AE"),
        ]
        # ack(1) first; ack(2): the newest queued ACK carries ECE, it does not; the dup ack(2)
        # and ack(3) (ECE appears) are news; ack(4) is superseded by ack(5).
        self.run_acks(flow, acks, [0, 1, 2, 3, 5], quiet_s=2.0)


class NoQueueNoFilterTest(ThinningTest):
    """Without a standing queue nothing is superseded: every ACK goes through."""

    policy = FILTER

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(10))
        acks = [flow.ack(k) for k in range(1, 11)]
        self.run_acks(flow, acks, list(range(10)), gaps_s={i: 0.02 for i in range(1, 10)})


class FilterTailDropTest(SlowQueueFilterTest):
    """Regression: with a 4-packet queue, the newest ACKs are tail-dropped after the filter recorded
    them (by the program at the end of ingress, since it keeps modelled queues to their depth;
    before, by bmv2 at enqueue); the filter then must not drop the queued older ones, or the
    information is lost (it cost an RTO on the Asymmetric dumbbell). ack(1) leaves at once and the
    four queued behind it come out."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_depth(self.client, 1, 4)

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(12))
        # ack(1) leaves at once, the queue holds four: ack(2) to ack(5); ack(6) to ack(10) are
        # tail-dropped.
        self.run_acks(flow, [flow.ack(k) for k in range(1, 11)], [0, 1, 2, 3, 4], quiet_s=2.5)
        self.assertEqual(self.counter(COUNTER_ACK_FILTER_STATS, FilterStat.FILTERED), 0)
        # ack(2) to ack(5), each behind a dropped one
        self.assertEqual(self.counter(COUNTER_ACK_FILTER_STATS, FilterStat.KEPT_QUEUE_FULL), 4)


# ---- the same over IPv6 ----


class QueuedFilterTest6(QueuedFilterTest):
    ip_version = 6


class FilterKeepsNewsTest6(FilterKeepsNewsTest):
    ip_version = 6


class NoQueueNoFilterTest6(NoQueueNoFilterTest):
    ip_version = 6


class FilterTailDropTest6(FilterTailDropTest):
    ip_version = 6
