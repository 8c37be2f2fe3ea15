"""The program's model of its rate-limited egress queues (queue_model.p4), as the control plane
reads it (ackwise.features.queues.queue_backlog_pkts, what the controller uses for a flow's bottleneck)."""

from __future__ import annotations

import time

from ackwise.features.queues import port_loads, queue_backlog_pkts, set_queue_depth, set_queue_rate
from base_test import routed, tcp_segment
from test_ack_thinning import ThinningTest

RATE_PPS = 2  # one departure every 500 ms: reading the backlog takes far less


class QueueBacklogTest(ThinningTest):
    """Six segments sent at once to port 2, served at 2 packets/s: the first leaves at once and five
    wait; 1.2 s later three are still booked to leave; once all have left, none. A port without a
    rate has no backlog to report (None); every segment comes out unchanged and in order, and the
    queue counted the six it sent."""

    def wait_booked(self, packets: int, sent_at: float) -> None:
        """Until the switch's ingress has taken ``packets`` to port 2 (PTF hands them to the
        switch over a few tens of milliseconds); well within a service time of the first."""
        assert self.client is not None
        while port_loads(self.client)[2][1] < packets:
            self.assertLess(time.monotonic() - sent_at, 0.4, "the burst did not reach the queue in time")
            time.sleep(0.01)

    def runTest(self) -> None:
        assert self.client is not None
        set_queue_rate(self.client, 2, RATE_PPS)
        self.assertIsNone(queue_backlog_pkts(self.client, 1))
        self.assertEqual(queue_backlog_pkts(self.client, 2), 0)
        time.sleep(0.6)  # more than a service time since anything left port 2
        pkts = [bytes(tcp_segment(1, 2, seq=1000 + i * 100, payload=b"q" * 100, ip_id=i)) for i in range(6)]
        sent_at = time.monotonic()
        for pkt in pkts:
            self.send(1, pkt)
        first = self.next_packet(2, 2.0)
        self.wait_booked(6, sent_at)
        self.assertEqual(queue_backlog_pkts(self.client, 2), 5)
        time.sleep(max(0.0, sent_at + 1.2 - time.monotonic()))
        self.assertEqual(queue_backlog_pkts(self.client, 2), 3)
        rest = self.collect(2, quiet_s=0.8)
        self.assertEqual([first, *rest], [routed(p, 2) for p in pkts])
        self.assertEqual(queue_backlog_pkts(self.client, 2), 0)
        self.assertEqual(port_loads(self.client), {2: (500_000, 6)})


class QueueDepthKeptByTheProgramTest(ThinningTest):
    """Port 2 holds 2 packets, served at 2 packets/s. Five segments sent at once: the first leaves
    at once, two wait, and the program drops the last two at ingress (queue.dropped_pkts), as
    bmv2's tail drop would: bmv2's own limit has room beyond the depth (ackwise.features.queues), so a
    packet the program lets through is never dropped where its model cannot see it."""

    def runTest(self) -> None:
        assert self.client is not None
        set_queue_rate(self.client, 2, RATE_PPS)
        set_queue_depth(self.client, 2, 2)
        time.sleep(0.6)  # more than a service time since anything left port 2
        pkts = [bytes(tcp_segment(1, 2, seq=1000 + i * 100, payload=b"d" * 100, ip_id=i)) for i in range(5)]
        for pkt in pkts:
            self.send(1, pkt)
        got = self.collect(2, quiet_s=1.4)
        self.assertEqual(got, [routed(p, 2) for p in pkts[:3]], "the first three, unchanged and in order")
        self.assertEqual(self.register("queue.dropped_pkts", 2), 2, "dropped by the program, not by bmv2")
        self.assertEqual(port_loads(self.client)[2][1], 3, "the model booked the three it let through")
