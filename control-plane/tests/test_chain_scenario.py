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
