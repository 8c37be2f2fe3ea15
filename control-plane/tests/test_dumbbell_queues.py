"""The dumbbell's switch queues: with the link as bottleneck, the link's buffer is the only one."""

from __future__ import annotations

import pytest

from ackwise.topologies.catalog import TOPOLOGIES, QueueSetting, check_params
from ackwise.topologies.links import LinkEmulationError, LinkParams
from ackwise.twins.p4names import BMV2_DEFAULT_QUEUE_DEPTH_PKTS


def test_a_link_bottleneck_has_no_smaller_switch_queue_in_front_of_it() -> None:
    """s1's egress queue toward the link once kept bmv2's default 64 packets: a sender's burst
    answering one ACK of 100-170 segments (smartacking) lost up to 35 of them inside s1 while
    the link's buffer, deeper than the transfer, took everything (test_host_policies[smartacking]
    failed 'loss-free: nothing retransmitted'). Each switch's queue toward the link now holds at
    least the link's buffer; unlimited rate, so it delays nothing."""
    topo = TOPOLOGIES["dumbbell"](fwd_buffer_pkts=1482, rev_buffer_pkts=20)
    assert QueueSetting("s1", "e1", 0, 1482) in topo.meta.queues
    assert QueueSetting("s2", "e1", 0, BMV2_DEFAULT_QUEUE_DEPTH_PKTS) in topo.meta.queues
    shaped = TOPOLOGIES["dumbbell"](rev_shape_pps=800, queue_depth_pkts=30)
    assert QueueSetting("s2", "e1", 800, 30) in shaped.meta.queues  # the shaped queue as asked
    assert len(shaped.meta.queues) == 2
    switch = TOPOLOGIES["dumbbell"](bottleneck="switch", fwd_queue_pps=826, rev_queue_pps=57)
    assert {q.rate_pps for q in switch.meta.queues} == {826, 57}


def test_a_dumbbell_takes_the_hosts_mtu() -> None:
    """Landström's 1000-byte segments (landstrom-4w): ``mtu_bytes`` 1052 reaches every host and
    the MSS the run's host policies are told; by default the interfaces keep their own MTU."""
    check_params("dumbbell", {"mtu_bytes": 1052})
    topo = TOPOLOGIES["dumbbell"](n_pairs=2, mtu_bytes=1052)
    assert topo.mss_bytes == 1000
    assert {topo.nodeInfo(h)["mtu"] for h in ("h1", "r1", "h2", "r2")} == {1052}
    plain = TOPOLOGIES["dumbbell"]()
    assert plain.mss_bytes == 1448 and plain.nodeInfo("h1")["mtu"] is None


def test_a_link_queue_can_also_be_limited_in_bytes() -> None:
    """``rev_buffer_bytes``: the link's reverse queue counted in bytes as well as packets (a pure
    ACK then takes 66 bytes of it, not a slot); linkem gets it, netem cannot, and a switch
    bottleneck has no link queue to limit."""
    check_params("dumbbell", {"rev_buffer_bytes": 30_280})
    topo = TOPOLOGIES["dumbbell"](rev_buffer_pkts=1000, rev_buffer_bytes=30_280)
    forward, reverse = topo.nodeInfo("e1")["forward"], topo.nodeInfo("e1")["reverse"]
    assert (forward.limit_bytes, reverse.limit_bytes, reverse.limit_pkts) == (0, 30_280, 1000)
    assert reverse.linkem_args().endswith("limit_pkts=1000 limit_bytes=30280")
    with pytest.raises(LinkEmulationError, match="linkem backend"):
        reverse.netem_args()
    assert LinkParams(limit_pkts=20).netem_args()[:4] == ["delay", "0.0ms", "limit", "20"]
    with pytest.raises(ValueError, match="bottleneck 'link'"):
        TOPOLOGIES["dumbbell"](bottleneck="switch", fwd_queue_pps=826, rev_queue_pps=57, rev_buffer_bytes=1)
    with pytest.raises(ValueError, match="byte limit >= 0"):
        LinkParams(limit_bytes=-1)
