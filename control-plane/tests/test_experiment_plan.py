"""Scenarios load and validate; the matrix is planned deterministically from the seed, with the
same traffic for every arm of a point and repeat, and resumable run ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackwise.experiments.harness.runner import (
    ExperimentError,
    host_policy_params,
    plan,
    select_arms,
    switch_policy_params,
)
from ackwise.experiments.harness.scenario import SCENARIO_DIR, ScenarioError, all_scenarios, load
from ackwise.experiments.harness.schema import METRICS, Arm, PolicySpec
from ackwise.topologies.timescale import TimeScale

REQUIRED = {
    "asymmetric",
    "one-flow",
    "two-two",
    "different-rtt",
    "tcp-udp-onoff",
    "parking-lot",
    "wlan",
    "chain",
    "short-flows",
    "reverse-data",
}


def test_every_required_scenario_exists_and_loads() -> None:
    scenarios = {s.name: s for s in all_scenarios()}
    assert set(scenarios) >= REQUIRED
    for s in scenarios.values():
        assert Arm() in s.arms, s.name
        assert s.reproduces and s.scale["what"], s.name
        assert all(m in METRICS for m in s.metrics), s.name


def test_plan_is_deterministic_and_shuffled_by_the_seed() -> None:
    s = load("asymmetric")
    a, b, c = plan(s, seed=1), plan(s, seed=1), plan(s, seed=2)
    assert [r.run_id for r in a] == [r.run_id for r in b]
    assert [r.run_id for r in a] != [r.run_id for r in c]
    assert len(a) == len(s.points) * len(s.arms) * s.repeats
    assert len({r.run_id for r in a}) == len(a)


def test_every_arm_of_a_point_and_repeat_gets_the_same_traffic_seed() -> None:
    runs = plan(load("asymmetric"), seed=7)
    seeds: dict[tuple[str, int], set[int]] = {}
    for r in runs:
        seeds.setdefault((r.point.label, r.repeat), set()).add(r.seed)
    assert all(len(v) == 1 for v in seeds.values())
    assert len({next(iter(v)) for v in seeds.values()}) == len(seeds)


def test_a_blocks_arms_run_back_to_back() -> None:
    s = load("asymmetric")
    runs = plan(s, seed=3)
    n_arms = len(s.arms)
    chunks = [runs[i : i + n_arms] for i in range(0, len(runs), n_arms)]
    for chunk in chunks:
        assert len({(r.point.label, r.repeat) for r in chunk}) == 1
        assert len({r.arm.label() for r in chunk}) == n_arms
    # and the arms' order inside blocks is shuffled, not always the scenario's
    assert len({tuple(r.arm.label() for r in chunk) for chunk in chunks}) > 1


def test_shards_are_deterministic_disjoint_complete_and_whole_blocks() -> None:
    s = load("asymmetric")
    whole = plan(s, seed=5, repeats=4)
    shards = [plan(s, seed=5, repeats=4, shard=(k, 3)) for k in (1, 2, 3)]
    assert [r.run_id for r in plan(s, seed=5, repeats=4, shard=(2, 3))] == [r.run_id for r in shards[1]]
    ids = [{r.run_id for r in part} for part in shards]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert ids[0] | ids[1] | ids[2] == {r.run_id for r in whole}
    blocks = [{(r.point.label, r.repeat) for r in part} for part in shards]
    assert not (blocks[0] & blocks[1] or blocks[0] & blocks[2] or blocks[1] & blocks[2])
    assert all(len(part) % len(s.arms) == 0 for part in shards)
    with pytest.raises(ExperimentError, match="1 <= K <= N"):
        plan(s, shard=(4, 3))


def test_quick_keeps_the_baseline_and_the_named_arms() -> None:
    s = load("asymmetric")
    runs = plan(s, quick=True)
    labels = {r.arm.label() for r in runs}
    assert labels == {"baseline (nothing on)", *s.quick["arms"]}
    assert {r.point.label for r in runs} == set(s.quick["points"])
    assert {r.repeat for r in runs} == {0}


def test_where_and_policies_filter_but_keep_the_baseline() -> None:
    s = load("asymmetric")
    assert {a.where for a in select_arms(s, {"host"}, None)} == {"none", "host"}
    switch_only = select_arms(s, {"switch"}, {"coalesce"})
    assert Arm() in switch_only
    assert all(a == Arm() or (a.switch and a.switch.name == "coalesce" and not a.host) for a in switch_only)


def test_a_bad_scenario_names_the_file_and_the_fix(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "asymmetric.yaml").read_text()
    bad = tmp_path / "asymmetric.yaml"
    bad.write_text(
        text.replace("completion_s, acks_per_data_segment", "completion_seconds, acks_per_data_segment")
    )
    with pytest.raises(ScenarioError, match=r"asymmetric\.yaml: unknown metric 'completion_seconds'"):
        load(bad)
    bad.write_text(text.replace("  factor: 1\n", "  factor: fast\n", 1))
    with pytest.raises(ScenarioError, match=r"scale\.factor must be a number or 'per point', not 'fast'"):
        load(bad)
    bad.write_text(text.replace("  - {}\n", "", 1))
    with pytest.raises(ScenarioError, match="baseline arm"):
        load(bad)
    with pytest.raises(ScenarioError, match=r"no scenario 'nosuch'; known: .*asymmetric"):
        load("nosuch")


def test_host_agents_manage_every_port_a_short_flow_may_take() -> None:
    """Regression: the agents managed only 5001 and 5002, so 28 of the 30 short flows ran with the
    kernel's quickack (set for the agent) instead of the policy under test."""
    from ackwise.experiments.harness.runner import SHORT_FLOWS_BASE_PORT, _receivers_ports

    scenario = load("short-flows")
    flows = [("h1", "r1", 5001), ("h2", "r2", 5002)]
    n_transfers = len(flows) * int(scenario.traffic["n_flows"])
    taken = set(
        range(SHORT_FLOWS_BASE_PORT, SHORT_FLOWS_BASE_PORT + n_transfers)
    )  # one port each, in start order
    ports = _receivers_ports(flows, scenario.traffic)
    assert set(ports) == {"r1", "r2"}
    for receiver in ports:
        assert set(ports[receiver]) >= taken, receiver


def test_bulk_transfers_agents_manage_their_own_ports() -> None:
    from ackwise.experiments.harness.runner import _receivers_ports

    flows = [("h1", "r1", 5001), ("h2", "r2", 5002), ("h3", "r1", 5003)]
    assert _receivers_ports(flows, {"kind": "transfers"}) == {"r1": [5001, 5003], "r2": [5002]}


def test_our_policy_timers_scale_with_the_test_bed_defaults_included() -> None:
    """At k = 3 a receiver's or switch's timers must last 3 times as long on the test bed, also
    those the arm leaves at their default: the host agent's maximum ACK delay (0.2 s) and the
    switch's idle_ms (1000) and hold_ms (200), which the data plane would otherwise run in real
    time. rtt_min_us = 0 means 'measured' and stays 0; kernel baselines take no parameters."""
    k3, k1 = TimeScale(3.0), TimeScale(1.0)
    assert host_policy_params(PolicySpec("tack"), k3) == {"max_delay_s": "0.6"}
    assert host_policy_params(PolicySpec("every_d", {"d": "4"}), k3) == {"d": "4", "max_delay_s": "0.6"}
    assert host_policy_params(PolicySpec("tack"), k1) == {}
    assert host_policy_params(PolicySpec("delayed"), k3) == {}
    assert switch_policy_params(PolicySpec("tack"), k3) == {"idle_ms": "3000", "hold_ms": "600"}
    assert switch_policy_params(PolicySpec("tack", {"rtt_min_us": "0", "hold_ms": "10"}), k3) == {
        "rtt_min_us": "0",
        "hold_ms": "30",
        "idle_ms": "3000",
    }
    assert switch_policy_params(PolicySpec("filter"), k3) == {"idle_ms": "3000"}
    assert switch_policy_params(PolicySpec("tack", {"L": "4"}), k1) == {"L": "4"}


def test_a_host_policys_own_times_scale_with_their_defaults() -> None:
    """Regression (issue 37): smartacking's rtt_refresh_s (1 s, its keep-alive period) was not a
    time the runner scaled, and the piggyback hold's hold_ms (10) was scaled only when the arm
    named it: at k = 3 both ran 3 times shorter, in the emulated network's time, than asked."""
    k3 = TimeScale(3.0)
    smart = host_policy_params(PolicySpec("smartacking"), k3)
    assert smart["rtt_refresh_s"] == "3" and smart["max_delay_s"] == "0.6"
    assert (
        host_policy_params(PolicySpec("smartacking", {"rtt_refresh_s": "0.5"}), k3)["rtt_refresh_s"] == "1.5"
    )
    assert host_policy_params(PolicySpec("piggyback"), k3)["hold_ms"] == "30"
    assert host_policy_params(PolicySpec("smartacking"), TimeScale(1.0)) == {}


def test_the_runs_time_scale_is_the_topologys_as_built() -> None:
    """A WLAN point that names no scale runs at the topology's default: our timers must follow the
    topology, not a default of their own (building the Mininet topology starts nothing)."""
    from ackwise.topologies.testbed import Testbed  # lazy: loads Mininet

    assert Testbed.create("wlan", preset="802.11n").time_scale == 4.0  # Wlan's default scale
    assert Testbed.create("wlan", preset="802.11n", scale=3.0).time_scale == 3.0
    assert Testbed.create("dumbbell").time_scale == 1.0


def test_a_point_sets_its_own_transfer_size_and_nothing_else(tmp_path: Path) -> None:
    """A point's ``_traffic`` overrides size_bytes and timeout_s of the scenario's traffic (the
    same bytes are seconds on 802.11b and a few round trips on 802.11ac), and the piggyback
    traffic's mode and write_bytes; any other '_' key, or another traffic key, is refused: the
    topology would never see it and the run would silently differ from what the YAML says."""
    s = load("wlan-comparison")
    n1 = s.point("802.11n, 1 sta, 80 ms")
    assert s.point_traffic(n1)["size_bytes"] == 40_000_000
    assert s.point_traffic(n1)["kind"] == s.traffic["kind"]
    assert s.traffic["size_bytes"] == 10_000_000  # the scenario's own is left as it was
    assert plan(s)[0].config["traffic"] == s.point_traffic(plan(s)[0].point)
    text = (SCENARIO_DIR / "wlan-comparison.yaml").read_text()
    good = "_traffic: {size_bytes: 40000000}"
    for bad in ("_traffic: {kind: short-flows}", "_trafic: {size_bytes: 40000000}", "_traffic: 40000000"):
        path = tmp_path / "wlan-comparison.yaml"
        path.write_text(text.replace(good, bad, 1))
        with pytest.raises(
            ScenarioError, match=r"points\[0\]: a parameter starting with '_' must be _traffic"
        ):
            load(path)


def test_shang_wills_points_set_the_piggyback_mode_and_bytes_written_back(tmp_path: Path) -> None:
    """Shang and Wills' N sweep, 2Con and 1Con are points that change the traffic (params._traffic);
    a point key the loader does not know (as ``traffic:`` beside params, the form before issue 39's
    merge with main) is refused, not ignored: the runs would all have been N = 0."""
    s = load("shang-wills-dsl")
    assert s.point_traffic(s.point("N=300")) == s.traffic | {"mode": "piggyback", "write_bytes": 300}
    assert s.point_traffic(s.point("2Con"))["mode"] == "2con"
    assert len({r.run_id for r in plan(s)}) == len(plan(s))  # each point its own runs
    text = (SCENARIO_DIR / "shang-wills-dsl.yaml").read_text()
    good = 'label: "N=0", params: {_traffic: {mode: piggyback, write_bytes: 0}}'
    assert good in text
    path = tmp_path / "shang-wills-dsl.yaml"
    path.write_text(text.replace(good, 'label: "N=0", traffic: {mode: piggyback, write_bytes: 0}', 1))
    with pytest.raises(ScenarioError, match=r"points\[0\] has traffic: a point has x, label and params"):
        load(path)
