"""The chain scenario is Altman and Jiménez's (issue 38): their chain lengths in nodes, their MAC
and geometry, their baseline (an ACK per segment) and their arms, each one the test bed can build."""

from __future__ import annotations

from ackwise.experiments.harness.runner import plan
from ackwise.experiments.harness.scenario import load
from ackwise.hosts.policies import KERNEL_BASELINES, make_policy
from ackwise.topologies.catalog import check_params
from ackwise.topologies.wireless import CHAIN_PRESET


def test_the_papers_chain_lengths_in_nodes_on_its_geometry() -> None:
    s = load("chain")
    assert s.topology == "chain"
    assert s.params["preset"] == CHAIN_PRESET and s.params["geometry"] == "line"
    assert {p.x: p.params["hops"] for p in s.points} == {3: 2, 9: 8}  # hops = nodes - 1
    for point in s.points:
        check_params("chain", s.params | point.params)


def test_the_papers_arms_with_its_100_ms_interval() -> None:
    s = load("chain")
    host = {a.host.name: a.host.params for a in s.arms if a.host}
    d_values = {a.host.params["d"] for a in s.arms if a.host and a.host.name == "every_d"}
    assert "quickack" in host  # the paper's standard TCP: delayed ACK off
    assert d_values == {"2", "3", "4"}
    assert host["dynamic_d"] == {"l1": "2", "l2": "5", "l3": "9", "max_delay_s": "0.1"}
    for arm in s.arms:
        if arm.host and arm.host.name not in KERNEL_BASELINES:
            assert make_policy(arm.host.name, dict(arm.host.params)).max_delay_s == 0.1
    relays = [a for a in s.arms if a.switch]
    assert [(a.switch.name, a.switch.params, a.switches) for a in relays] == [
        ("every_d", {"d": "3"}, ("all",))
    ]


def test_quick_runs_one_short_chain_with_the_named_arms() -> None:
    s = load("chain")
    runs = plan(s, quick=True)
    assert {r.point.label for r in runs} == {"3 nodes"}
    assert {r.arm.label() for r in runs} == {"baseline (nothing on)", *s.quick["arms"]}


def test_window_sweep_is_fig_2_on_nine_nodes_with_the_papers_packets() -> None:
    s = load("chain-window")
    assert s.params["hops"] == 8 and s.params["mtu_bytes"] == 1040 and s.params["cc"] == "reno"
    assert s.params["preset"] == CHAIN_PRESET and s.params["geometry"] == "line"
    assert {p.x: p.params["max_window_pkts"] for p in s.points} == {3: 3, 10: 10, 2000: 2000}
    for point in s.points:
        check_params("chain", s.params | point.params)
    assert s.metrics[0] == "throughput_pkts_per_s"  # the paper's unit
    chain_arms = {a.label() for a in load("chain").arms}
    assert {a.label() for a in s.arms} == chain_arms  # the same arms as the chain scenario


def test_policies_count_the_chains_segments() -> None:
    """At 1040-byte packets a segment is 988 bytes; a policy left at 1448 would count a d = 2
    as three segments. The runner gives every policy that counts segments the topology's MSS."""
    from ackwise.experiments.harness.runner import host_policy_params, switch_policy_params
    from ackwise.experiments.harness.schema import PolicySpec
    from ackwise.topologies.timescale import TimeScale

    k = TimeScale(1.0)
    d2 = PolicySpec("every_d", {"d": "2", "max_delay_s": "0.1"})
    assert host_policy_params(d2, k, 988)["mss"] == "988"
    assert make_policy("every_d", host_policy_params(d2, k, 988)).mss == 988
    assert "mss" not in host_policy_params(d2, k)  # 1500-byte MTU: the policy's own default
    named = PolicySpec("every_d", {"d": "2", "mss": "1000"})
    assert host_policy_params(named, k, 988)["mss"] == "1000"  # what the arm says wins
    assert switch_policy_params(PolicySpec("every_d", {"d": "3"}), k, 988)["mss"] == "988"
    assert "mss" not in switch_policy_params(PolicySpec("off"), k, 988)  # off takes none
