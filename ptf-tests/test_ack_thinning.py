"""ACK policies against crafted ACK streams: exactly which ACKs leave the switch, byte for byte.
Each test runs over IPv4 and, in its subclass named ...6, over IPv6 (the same segments)."""

from __future__ import annotations

import time
from typing import Any

from scapy.layers.inet import TCP
from scapy.layers.l2 import Ether

from ackwise.features.thinning import (
    delete_flow_policy,
    list_flow_policies,
    modify_flow_policy,
    read_flows,
    set_default_policy,
    set_flow_policy,
    set_policy,
)
from ackwise.twins.policies import PolicyMatch, PolicyParams
from base_test import AckwiseTest, TcpFlow, host_ip, host_prefix, routed


class ThinningTest(AckwiseTest):
    """Routes installed; helpers to run a flow's data through and check which ACKs come back."""

    policy: PolicyParams | None = None
    ip_version = 4  # the IP version of the flows self.new_flow() makes

    def new_flow(self, **kwargs: Any) -> TcpFlow:
        """A TcpFlow over the test's IP version."""
        return TcpFlow(ip_version=self.ip_version, **kwargs)

    def install_entries(self) -> None:
        self.install_routes()
        if self.policy is not None:
            assert self.client is not None
            set_default_policy(self.client, self.policy)

    def send_data(self, flow: TcpFlow, ks: range | list[int]) -> None:
        for k in ks:
            pkt = flow.data(k)
            self.send(flow.data_port, pkt)
            self.expect_next(routed(pkt, flow.ack_port), flow.ack_port)

    def run_acks(
        self,
        flow: TcpFlow,
        acks: list[bytes],
        forwarded: list[int],
        quiet_s: float = 0.3,
        gaps_s: dict[int, float] | None = None,
    ) -> None:
        """Send ``acks`` (sleeping gaps_s[i] before the i-th) and check that exactly the ACKs at
        the indices ``forwarded`` came out, in order and unmodified above IPv4."""
        for i, pkt in enumerate(acks):
            if gaps_s and i in gaps_s:
                time.sleep(gaps_s[i])
            self.send(flow.ack_port, pkt)
        got = self.collect(flow.data_port, quiet_s)
        expected = [routed(acks[i], flow.data_port) for i in forwarded]
        got_idx = [next((i for i, a in enumerate(acks) if routed(a, flow.data_port) == g), -1) for g in got]
        self.assertEqual(got, expected, f"forwarded ACK indices {got_idx}, expected {forwarded}")

    def flow_record(self, flow: TcpFlow) -> dict:
        assert self.client is not None
        key, _ = flow.key()
        for record in read_flows(self.client):
            if record.key == key:
                by_sender = {h.sender: h for h in record.halves}
                return {
                    "ack_side": by_sender[flow.ack_sender()],
                    "data_side": by_sender[flow.data_sender()],
                    "record": record,
                }
        self.fail(f"no flow record for {key}")


class EveryDTest(ThinningTest):
    """every_d, d = 4: one ACK per 4 segments acknowledged, plus the first and the last."""

    policy = PolicyParams.parse("every_d", ["d=4"])

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(16))
        acks = [flow.ack(k) for k in range(1, 17)]
        # ack(1): first ACK; ack(5), ack(9), ack(13): 4 segments since the last forwarded;
        # ack(16): acknowledges all data the switch saw.
        self.run_acks(flow, acks, [0, 4, 8, 12, 15])
        rec = self.flow_record(flow)
        self.assertEqual(
            (rec["ack_side"].acks_seen, rec["ack_side"].acks_forwarded, rec["ack_side"].acks_thinned),
            (16, 5, 11),
        )
        self.assertEqual(rec["data_side"].data_segments, 16)
        self.assertEqual(rec["ack_side"].last_keep_reason, "acks_all_data")


class EveryDTimestampsTest(ThinningTest):
    """No dropped ACK carries timestamps newer than the next forwarded ACK's."""

    policy = PolicyParams.parse("every_d", ["d=3"])

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(12))
        acks = [flow.ack(k) for k in range(1, 13)]
        for pkt in acks:
            self.send(flow.ack_port, pkt)
        got = self.collect(flow.data_port)
        forwarded_ts = [Ether(p)[TCP].options for p in got]
        forwarded_idx = [i for i, a in enumerate(acks) if routed(a, flow.data_port) in got]
        self.assertEqual(forwarded_idx, [0, 3, 6, 9, 11])
        for i, pkt in enumerate(acks):
            if i in forwarded_idx:
                continue
            next_fwd = min(j for j in forwarded_idx if j > i)
            dropped_ts = dict(Ether(pkt)[TCP].options)["Timestamp"]
            kept_ts = dict(Ether(acks[next_fwd])[TCP].options)["Timestamp"]
            self.assertLessEqual(dropped_ts[0], kept_ts[0])
            self.assertLessEqual(dropped_ts[1], kept_ts[1])
        self.assertEqual(len(forwarded_ts), 5)


class DynamicDTest(ThinningTest):
    """dynamic_d, thresholds 2, 5, 9: d = 1, 2, 3, 4 as the acknowledged segments cross them."""

    policy = PolicyParams.parse("dynamic_d", [])

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(20))
        acks = [flow.ack(k) for k in range(1, 21)]
        # Acknowledged so far (from the first ACK) -> d: 1 -> 1, 2..4 -> 2, 5..8 -> 3, 9.. -> 4.
        self.run_acks(flow, acks, [0, 1, 3, 6, 10, 14, 18, 19])


class TackTest(ThinningTest):
    """tack, L = 2, beta = 4, RTTmin 40 ms from the control plane: an ACK needs 2 new segments
    and 10 ms since the last forwarded one."""

    policy = PolicyParams.parse("tack", ["rtt_min_us=40000"])

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(12))
        acks = [flow.ack(k) for k in (1, 3, 5, 7, 8, 9, 12)]
        # ack(1) first; ack(3) too soon; ack(5) 20 ms later; ack(7) too soon; ack(8) 20 ms later
        # with 3 new segments; ack(9) only 1 new segment; ack(12) acknowledges everything.
        self.run_acks(flow, acks, [0, 2, 4, 6], gaps_s={2: 0.02, 4: 0.02, 5: 0.02})


class TackMeasuredRttTest(ThinningTest):
    """tack with the switch's own RTTmin: data acknowledged 30 ms or more after it passed gives
    RTTmin/beta of at least 7.5 ms; ACKs closer together than that are thinned."""

    policy = PolicyParams.parse("tack", [])

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(10))  # the first segment starts the RTT probe
        time.sleep(0.03)
        acks = [flow.ack(k) for k in (1, 3, 5, 7, 9, 10)]
        # ack(1): first, and the RTT sample; ack(3) right away: too soon; ack(5) 40 ms later;
        # ack(7) too soon; ack(9) 40 ms later; ack(10) acknowledges everything.
        self.run_acks(flow, acks, [0, 2, 4, 5], gaps_s={2: 0.04, 4: 0.04})
        rtt = self.flow_record(flow)["data_side"].rtt_min_us
        self.assertTrue(30_000 <= rtt <= 100_000, f"RTTmin {rtt} us")


class PolicyTableTest(ThinningTest):
    """A rule's match selects the flows it thins; the most specific rule wins; others use the default."""

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        v = self.ip_version
        set_policy(
            self.client,
            PolicyMatch.parse([f"src={host_prefix(2, v)}"]),
            PolicyParams.parse("every_d", ["d=8"]),
        )
        set_policy(
            self.client,
            PolicyMatch.parse([f"src={host_ip(2, v)}", "sport=5002"]),
            PolicyParams.parse("off", []),
        )

    def runTest(self) -> None:
        thinned, exempt, other = (
            self.new_flow(dport=5001),
            self.new_flow(sport=40001, dport=5002),
            self.new_flow(ack_port=3, sport=40002),
        )
        for flow in (thinned, exempt, other):
            self.send_data(flow, range(10))
        acks = [thinned.ack(k) for k in range(1, 11)]
        self.run_acks(thinned, acks, [0, 8, 9])  # first, 8 segments later, the last
        for flow in (exempt, other):  # off: every ACK goes through
            self.run_acks(flow, [flow.ack(k) for k in range(1, 11)], list(range(10)))


class FlowPolicyTest(ThinningTest):
    """A per-flow rule (the controller's: ack_thinning.flow_policy, flow_policy6 for IPv6 flows)
    outranks the rules for its flow's ACKs alone; modified in place, it applies at once; deleted,
    the flow falls back to the rules. Another flow of the same prefix keeps the rules' policy."""

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        set_policy(
            self.client,
            PolicyMatch.parse([f"src={host_prefix(2, self.ip_version)}"]),
            PolicyParams.parse("every_d", ["d=8", "idle_ms=0"]),
        )

    def runTest(self) -> None:
        # idle_ms=0 throughout: the pauses between the steps keep no ACK as the first after silence.
        assert self.client is not None
        ruled, other = self.new_flow(sport=40001), self.new_flow(sport=40002)
        match = PolicyMatch.parse(
            [f"src={ruled.ack_ip}", f"dst={ruled.data_ip}", f"sport={ruled.dport}", f"dport={ruled.sport}"]
        )
        handle = set_flow_policy(self.client, match, PolicyParams.parse("every_d", ["d=2", "idle_ms=0"]))
        rules = list_flow_policies(self.client)
        self.assertEqual([(r.handle, r.version, r.match) for r in rules], [(handle, self.ip_version, match)])
        for flow in (ruled, other):
            self.send_data(flow, range(10))
        self.run_acks(ruled, [ruled.ack(k) for k in range(1, 11)], [0, 2, 4, 6, 8, 9])  # d=2
        self.run_acks(other, [other.ack(k) for k in range(1, 11)], [0, 8, 9])  # the rule's d=8
        modify_flow_policy(
            self.client, handle, PolicyParams.parse("every_d", ["d=4", "idle_ms=0"]), self.ip_version
        )
        self.send_data(ruled, range(10, 20))
        self.run_acks(ruled, [ruled.ack(k) for k in range(11, 21)], [3, 7, 9])  # 14, 18, all data
        delete_flow_policy(self.client, handle, self.ip_version)
        self.assertEqual(list_flow_policies(self.client), [])
        self.send_data(ruled, range(20, 30))
        self.run_acks(ruled, [ruled.ack(k) for k in range(21, 31)], [7, 9])  # d=8 again: 28, all data


# ---- the same over IPv6 ----


class EveryDTest6(EveryDTest):
    ip_version = 6


class EveryDTimestampsTest6(EveryDTimestampsTest):
    ip_version = 6


class DynamicDTest6(DynamicDTest):
    ip_version = 6


class TackTest6(TackTest):
    ip_version = 6


class TackMeasuredRttTest6(TackMeasuredRttTest):
    ip_version = 6


class FlowPolicyTest6(FlowPolicyTest):
    """An IPv6 flow's per-flow rule goes into flow_policy6, where the switch looks it up."""

    ip_version = 6


class PolicyTableTest6(PolicyTableTest):
    """IPv6 rules (policy6) select IPv6 flows as IPv4 rules select IPv4 ones."""

    ip_version = 6
