"""Coalescing on the Asymmetric dumbbell: 10 Mbit/s forward, 10 kbit/s reverse (s2's egress queue
towards s1 at 19 packets/s of 66-byte ACKs) with 50 ms reverse delay. Every transfer completes
byte-exact with no retransmission timeout, with coalesce on s2 (where the ACK queue is) and on s1
(where there is none: nothing to fold into), and with two flows sharing the reverse queue. The
hold-back agent runs on the coalescing switch, so on s2 each flow has its share of the reverse
queue (two ACKs; the rest wait in the agent, p4src/include/ack_share.p4): without it, one flow's
recovery ACKs held the shared queue past the other's RTO in about 4 runs of 10 with CUBIC senders.
Completion times are printed for the record; the comparison with the other policies, and its
numbers, come from `ackwise experiment run asymmetric` (docs/results.md)."""

from __future__ import annotations

import pytest

from ackwise import ecn
from ackwise.experiments.traffic import TcpSampler, run_transfers
from ackwise.policies import PolicyParams
from ackwise.thinning import read_flows, set_default_policy
from ackwise.topologies.testbed import Testbed

ASYMMETRIC = {
    "bottleneck": "switch",
    "fwd_queue_pps": 826,
    "rev_queue_pps": 19,
    "queue_depth_pkts": 64,
    "fwd_delay_ms": 10,
    "rev_delay_ms": 50,
}
COALESCE = PolicyParams.parse("coalesce", [])


@pytest.mark.parametrize(
    ("switch", "size", "pairs"),
    [("s2", 1_000_000, 1), ("s2", 2_000_000, 1), ("s1", 1_000_000, 1), ("s2", 1_000_000, 2)],
)
def test_coalesce_on_the_asymmetric_dumbbell(switch: str, size: int, pairs: int) -> None:
    with Testbed.create("dumbbell", n_pairs=pairs, holdback=switch, **ASYMMETRIC) as testbed:
        s2 = testbed.switch("s2")
        with s2.client() as client:
            ecn.set_threshold(client, s2.port_to("e1"), 4)
        with testbed.switch(switch).client() as client:
            set_default_policy(client, COALESCE)
        flows = [(testbed.host(s), testbed.host(r)) for s, r in testbed.flows]
        samplers = [TcpSampler(s, r.IP()).start() for s, r in flows]
        results = run_transfers(flows, size, timeout_s=600)
        tcp = [sampler.stop() for sampler in samplers]
        with testbed.switch(switch).client() as client:
            records = read_flows(client)
    agent = testbed.holdback_report(switch).get("counters", {})
    assert agent, f"the hold-back agent on {switch} wrote no report: did it run?"
    for (sender, _), result, stats in zip(flows, results, tcp, strict=True):
        assert result.byte_exact
        assert stats["rto_timeouts"] == 0, f"{sender.name}: {stats['rto_timeouts']} RTOs"
    absorbed = sum(h.acks_absorbed for f in records for h in f.halves)
    rewritten = sum(h.acks_rewritten for f in records for h in f.halves)
    print(
        f"coalesce on {switch}, {pairs} flow(s) of {size / 1e6:.0f} MB: completion "
        f"{', '.join(f'{r.completion_s:.1f} s' for r in results)}; absorbed {absorbed}, rewritten "
        f"{rewritten}; queue share: the agent kept {agent.get('share_kept')}, "
        f"bounced {agent.get('share_bounced')}"
    )
    if switch == "s2":
        assert absorbed > 0 and rewritten > 0, "the ACK queue at s2 took nothing in"
    else:
        assert absorbed == 0, "s1 has no ACK queue to coalesce into"
