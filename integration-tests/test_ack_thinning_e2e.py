"""ACK thinning end to end: a bulk transfer through a switch running each policy completes
byte-exact without an RTO, and every_d with d = 8 leaves at most 15 % pure ACKs per data segment.

The policy runs on s1, the switch on the sender's side of the dumbbell: there the switch sees the
flight still unacknowledged beyond it, so the safety contract's end-of-burst rule seldom binds
(docs/ack-thinning.md, "Where the switch sits").
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import assert_each_byte_once, loss_free_buffer_pkts

from ackwise.experiments.measure.traffic import Capture, TcpSampler, run_transfers
from ackwise.features.thinning import read_flows, set_default_policy
from ackwise.topologies.testbed import Testbed
from ackwise.twins.p4names import COUNTER_ACK_FILTER_STATS, FilterStat
from ackwise.twins.policies import PolicyParams

SIZE = 2_000_000


def transfer_through(
    testbed: Testbed,
    switch: str,
    policy: PolicyParams,
    toward: str,
    *,
    loss_free: bool,
    evidence_dir: Path | None = None,
) -> dict[str, float]:
    """Run SIZE bytes h1 -> r1 with ``policy`` on ``switch``; count data and pure ACKs on the
    switch's port towards ``toward``. ``loss_free``: no queue on the path can overflow, so the
    capture must see every byte exactly once. ``evidence_dir``: where the capture is kept if the
    sender had an RTO, so that a rare one can be read afterwards (its path is in the result)."""
    sender, receiver = testbed.host("h1"), testbed.host("r1")
    sw = testbed.switch(switch)
    with sw.client() as client:
        set_default_policy(client, policy)
    capture = Capture(sw.data_ports()[sw.port_to(toward)])
    sampler = TcpSampler(sender, receiver.IP()).start()
    (result,) = run_transfers([(sender, receiver)], SIZE)
    tcp = sampler.stop()
    try:
        directions = capture.stop(keep_pcap=True)
        if evidence_dir is not None and tcp["rto_timeouts"]:
            kept = evidence_dir / f"{switch}-{policy.policy.value}-rto.pcap"
            shutil.copyfile(capture.path, kept)
            print(f"the sender had an RTO: capture at {switch} towards {toward} kept in {kept}")
    finally:
        capture.discard()
    if loss_free:
        assert_each_byte_once(directions, sender.IP(), SIZE)
    data = sum(s.data_segments for d, s in directions.items() if d.startswith(f"{sender.IP()}:"))
    acks = sum(s.pure_acks for d, s in directions.items() if d.startswith(f"{receiver.IP()}:"))
    with sw.client() as client:
        flows = read_flows(client)
        filtered = client.counter_read(COUNTER_ACK_FILTER_STATS, FilterStat.FILTERED).packets
    thinned = sum(h.acks_thinned for f in flows for h in f.halves)
    print(
        f"{switch} {policy.describe()}: {SIZE / 1e6:.0f} MB in {result.completion_s:.2f} s, "
        f"{acks} pure ACKs / {data} data segments = {acks / data:.1%}, thinned {thinned}, "
        f"RTOs {tcp['rto_timeouts']}, retransmissions {tcp['retransmitted_segments']}"
    )
    assert result.byte_exact
    return {"data": data, "acks": acks, "rto": tcp["rto_timeouts"], "filtered": filtered, "thinned": thinned}


@pytest.mark.parametrize("spec", ["off", "every_d d=8", "dynamic_d", "tack", "filter"])
def test_bulk_transfer_through_each_policy(spec: str) -> None:
    policy = PolicyParams.parse(spec.split()[0], spec.split()[1:])
    with Testbed.create(
        "dumbbell",
        fwd_rate_mbps=10,
        rev_rate_mbps=10,
        fwd_delay_ms=10,
        rev_delay_ms=10,
        fwd_buffer_pkts=loss_free_buffer_pkts(SIZE),
    ) as testbed:
        seen = transfer_through(testbed, "s1", policy, toward="h1", loss_free=True)
    assert seen["rto"] == 0
    if spec == "every_d d=8":
        assert seen["acks"] <= 0.15 * seen["data"]
    if spec == "off":
        assert seen["thinned"] == 0


def test_filter_thins_a_standing_ack_queue(tmp_path: Path) -> None:
    """With s2's egress towards s1 served at 250 packets/s, ACKs queue there; the filter drops
    those superseded inside the queue, and the transfer still completes byte-exact."""
    with Testbed.create(
        "dumbbell",
        bottleneck="switch",
        fwd_queue_pps=800,
        rev_queue_pps=250,
        queue_depth_pkts=64,
        fwd_delay_ms=10,
        rev_delay_ms=10,
    ) as testbed:
        # 64 packets of queue at 800 packets/s: the sender's slow start overflows it, so a
        # retransmission here is the queue's doing, not the filter's.
        seen = transfer_through(
            testbed,
            "s2",
            PolicyParams.parse("filter", []),
            toward="e1",
            loss_free=False,
            evidence_dir=tmp_path,
        )
    assert seen["filtered"] > 0
    assert seen["rto"] == 0
