"""TCP over IPv6 through every ACK policy (issue 40): one dual-stack dumbbell (ip_version=6),
started once, and one short transfer over IPv6 per policy, byte-exact and loss-free. The switch
policies run on s1 (the sender's side, as test_ack_thinning_e2e's); the host policies run in the
NFQUEUE agent on r1, its rules in ip6tables. Every transfer is seen on s1's port towards h1 as
IPv6 only, and the policy is seen to act on it: the switch's flow record of the connection is an
IPv6 one, the thinning policies thinned its ACKs there, and the host agent read the connection's
segments and kept its rules in ip6tables while it ran."""

from __future__ import annotations

import ipaddress

from conftest import assert_each_byte_once, loss_free_buffer_pkts

from ackwise.experiments.measure.pcapstats import DirectionStats
from ackwise.experiments.measure.traffic import Capture, TcpSampler, run_transfers
from ackwise.features.thinning import read_flows, set_default_policy
from ackwise.hosts.mininet_agent import HostAgent
from ackwise.topologies.testbed import Testbed
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.policies import PolicyParams

SIZE = 300_000
PORT = 5001
SWITCH_CASES = ["off", "every_d d=8", "dynamic_d", "tack", "filter", "coalesce", "acc"]
THINNING = ("every_d", "dynamic_d", "tack")  # these thin a loss-free transfer's ACKs at s1
HOST_CASES = {"every_d": {"d": "4"}, "dynamic_d": {}, "acc": {}, "smartacking": {}, "tack": {}, "4w": {}}


def _transfer(testbed: Testbed) -> tuple[dict[str, DirectionStats], dict[str, int]]:
    """SIZE bytes h1 -> r1 over IPv6, seen on s1's port towards h1."""
    sender, receiver = testbed.host("h1"), testbed.host("r1")
    s1 = testbed.switch("s1")
    capture = Capture(s1.data_ports()[s1.port_to("h1")])
    sampler = TcpSampler(sender, receiver.traffic_ip()).start()
    (result,) = run_transfers([(sender, receiver)], SIZE)
    tcp = sampler.stop()
    try:
        directions = capture.stop()
    finally:
        capture.discard()
    assert result.byte_exact
    assert tcp["rto_timeouts"] == 0
    assert all(ipaddress.ip_address(d.split(" > ")[0].rpartition(":")[0]).version == 6 for d in directions), (
        f"TCP over IPv4 on the path: {list(directions)}"
    )
    assert_each_byte_once(directions, sender.traffic_ip(), SIZE)
    return directions, {"completion_ms": round(result.completion_s * 1000)}


def _counts(directions: dict[str, DirectionStats], sender_ip: str, receiver_ip: str) -> tuple[int, int, int]:
    """Data segments, pure ACKs and the sender's port of the transfer's connection."""
    (data_direction,) = [
        d for d, s in directions.items() if d.startswith(f"{sender_ip}:") and s.data_segments
    ]
    sport = int(data_direction.split(" > ")[0].rpartition(":")[2])
    acks = directions[f"{receiver_ip}:{PORT} > {sender_ip}:{sport}"].pure_acks
    return directions[data_direction].data_segments, acks, sport


def test_byte_exact_ipv6_transfer_through_each_policy() -> None:
    with Testbed.create(
        "dumbbell", ip_version=6, fwd_delay_ms=5, rev_delay_ms=5, fwd_buffer_pkts=loss_free_buffer_pkts(SIZE)
    ) as testbed:
        sender, receiver = testbed.host("h1"), testbed.host("r1")
        sender_ip, receiver_ip = sender.traffic_ip(), receiver.traffic_ip()
        assert ipaddress.ip_address(receiver_ip).version == 6
        assert testbed.provenance()["ip_version"] == 6
        s1 = testbed.switch("s1")
        for spec in SWITCH_CASES:
            policy = PolicyParams.parse(spec.split()[0], spec.split()[1:])
            with s1.client() as client:
                set_default_policy(client, policy)
            directions, seen = _transfer(testbed)
            data, acks, sport = _counts(directions, sender_ip, receiver_ip)
            key, _ = FlowKey.of(sender_ip, receiver_ip, sport, PORT)
            with s1.client() as client:
                records = [f for f in read_flows(client) if f.key == key]  # off keeps none
            thinned = sum(h.acks_thinned for f in records for h in f.halves)
            print(f"switch {spec}: {acks} pure ACKs / {data} data segments, thinned {thinned}, {seen}")
            assert len(records) == (spec != "off"), f"{spec}: flow records of the IPv6 connection {records}"
            if policy.policy.value in THINNING:
                assert thinned > 0, f"{spec} thinned no IPv6 ACK"
        with s1.client() as client:
            set_default_policy(client, PolicyParams.parse("off", []))
        for policy_name, params in HOST_CASES.items():
            agent = HostAgent(receiver, policy_name, params, (PORT,)).start()
            try:
                rules = receiver.cmd("ip6tables -S")
                directions, seen = _transfer(testbed)
            finally:
                report = agent.stop()
            data, acks, sport = _counts(directions, sender_ip, receiver_ip)
            flow = report["agent"]["flows"][f"{sender_ip}:{sport} > :{PORT}"]
            print(
                f"host {policy_name}: {acks} pure ACKs / {data} data segments, "
                f"agent read {flow['data_segments']} data segments, {seen}"
            )
            assert f"--sport {PORT} -j NFQUEUE" in rules and f"--dport {PORT} -j NFQUEUE" in rules
            assert not report["agent_died"]
            assert flow["data_segments"] == data and flow["acks_seen"] > 0
            if policy_name == "every_d":
                assert acks <= 0.35 * data, "every_d d=4 left more than 35 % pure ACKs over IPv6"
        assert "NFQUEUE" not in receiver.cmd("ip6tables -S") + receiver.cmd("iptables -S")
