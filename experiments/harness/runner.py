"""``ackwise experiment run``: a scenario's matrix, run by run, each in a fresh test bed.

The matrix is point x arm x repeat, run as blocks: a block is one point and repeat, every arm once
with the same traffic (same transfer seeds; the link emulator runs without random loss), its arms
back to back in an order shuffled by the seed, the blocks in a shuffled order too. Each arm is
compared with the baseline of its own block (stats.paired_effect), so slow drift of the machine
moves both sides of every comparison. A run's
record goes to the results directory as soon as the run ends; a run that fails (bytes not exact,
timeout, a process of the test bed died, anything raised) is recorded as failed with its reason.
A resumed matrix skips what the directory already holds for the same configuration and code.

``plan()`` is pure; ``execute()`` is the shell around the test bed.
"""

from __future__ import annotations

import math
import random
import shutil
import subprocess
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ackwise.bmv2.toolchain import REPO_ROOT
from ackwise.controller.config import parse_config
from ackwise.controller.loop import Controller, SwitchEndpoint
from ackwise.experiments.harness.scenario import UDP_ANSWERS, Scenario
from ackwise.experiments.harness.schema import Arm, FlowResult, Point, PolicySpec, RunRecord, run_id
from ackwise.experiments.measure import resources, udp_answers
from ackwise.experiments.measure import traffic as tr
from ackwise.experiments.measure.metrics import (
    CwndSample,
    TransferSpan,
    ack_counts,
    ack_rate_series,
    acks_per_window,
    delivered_bytes_series,
    estimate_error,
    jain_index,
    medium_metrics,
    packets_each_way,
    percentile,
    shared_medium,
    steady_goodput_bps,
    transmitters,
    window_clamp_check,
    wlan_metrics,
)
from ackwise.experiments.measure.metrics import queue_delay_ms as queue_delay
from ackwise.experiments.measure.pcapstats import read_segments
from ackwise.experiments.measure.versions import tool_versions
from ackwise.features import ecn
from ackwise.features.ap import read_stats
from ackwise.features.thinning import read_flows, set_default_policy
from ackwise.hosts.mininet_agent import HostAgent
from ackwise.hosts.policies import MAX_ACK_DELAY_S
from ackwise.hosts.policies import POLICIES as HOST_POLICIES
from ackwise.topologies.tcp_settings import TcpSettings, check_connection_options
from ackwise.topologies.timescale import POLICY_TIME_PARAMS, TimeScale
from ackwise.twins.policies import MSS_BYTES, POLICY_PARAMS, Policy, PolicyError, PolicyParams

if TYPE_CHECKING:  # the type only: importing it loads Mininet
    from ackwise.topologies.testbed import Testbed

RUN_TIMEOUT_S = 600
UDP_TACK_RTT_MIN_S = 0.080  # udp-answers: TACK's RTTmin where the traffic names none (Fig. 13's path)
SHORT_FLOWS_BASE_PORT = 5001  # short flows take ports from here up, one each (run_transfer_streams)
SWITCH_POLICY_NAMES = frozenset(p.value for p in Policy)  # not auto: the controller's thresholds


class ExperimentError(RuntimeError):
    pass


@dataclass(frozen=True)
class PlannedRun:
    scenario: str
    point: Point
    arm: Arm
    repeat: int
    seed: int  # the traffic's seed: the same for every arm of a point and repeat
    run_id: str
    config: dict[str, Any]  # topology name and parameters as run, traffic, capture

    def label(self) -> str:
        return f"{self.point.label} | {self.arm.label()} | repeat {self.repeat + 1}"


def code_version() -> str:
    out = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--abbrev=10"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "unknown (not a git checkout)"


def select_arms(scenario: Scenario, where: set[str] | None, policies: set[str] | None) -> list[Arm]:
    """The arms ``--where`` and ``--policies`` keep; the baseline always stays (the comparison needs
    it), and so does the scenario's baseline_arm. ``where`` names places (host, switch, ap): an arm
    stays when all its places are named."""
    arms = []
    for arm in scenario.arms:
        if arm in (Arm(), scenario.baseline()):
            arms.append(arm)
            continue
        if where is not None and not set(arm.where.split("+")) <= where:
            continue
        names = {p.name for p in (arm.host, arm.switch) if p} | ({"ap"} if arm.ap else set())
        if policies is not None and not names & policies:
            continue
        arms.append(arm)
    return arms


def plan(
    scenario: Scenario,
    *,
    where: set[str] | None = None,
    policies: set[str] | None = None,
    repeats: int | None = None,
    seed: int = 1,
    quick: bool = False,
    shard: tuple[int, int] | None = None,
) -> list[PlannedRun]:
    """The runs of a scenario's matrix, in the order to run them. ``shard`` (K, N): only the Kth
    of N disjoint parts, whole blocks each (``ackwise experiment run --shard K/N``)."""
    points = list(scenario.points)
    arms = select_arms(scenario, where, policies)
    n_repeats = repeats if repeats is not None else scenario.repeats
    if quick:
        if scenario.quick.get("points"):
            points = [scenario.point(label) for label in scenario.quick["points"]]
        if scenario.quick.get("arms"):
            keep = set(scenario.quick["arms"])
            arms = [a for a in arms if a in (Arm(), scenario.baseline()) or a.label() in keep]
        n_repeats = repeats if repeats is not None else int(scenario.quick.get("repeats", 1))
    if n_repeats < 1:
        raise ExperimentError("--repeats must be at least 1")
    if shard is not None:
        k, n = shard
        if not 1 <= k <= n:
            raise ExperimentError(f"--shard {k}/{n}: give K/N with 1 <= K <= N")
    # Blocks: one per point and repeat, every arm once with the same traffic seed. Whole blocks
    # run together (arms shuffled inside), blocks in a shuffled order: an arm's effect is measured
    # against the baseline of its own block, under the same conditions of the machine.
    blocks: list[list[PlannedRun]] = []
    for p_index, point in enumerate(points):
        for repeat in range(n_repeats):
            run_seed = seed * 1000 + p_index * 100 + repeat
            block = []
            for arm in arms:
                config = run_config(scenario, point, arm, run_seed)
                rid = run_id(scenario.name, point, arm, repeat, run_seed, config)
                block.append(PlannedRun(scenario.name, point, arm, repeat, run_seed, rid, config))
            blocks.append(block)
    if shard is not None:  # every Nth block of the canonical order: disjoint, complete, stable
        blocks = [b for i, b in enumerate(blocks) if i % shard[1] == shard[0] - 1]
    rng = random.Random(seed)
    rng.shuffle(blocks)
    for block in blocks:
        rng.shuffle(block)
    return [run for block in blocks for run in block]


def plan_confirmation(
    scenario: Scenario,
    chosen: dict[str, list[Arm]],
    *,
    blocks: int | None = None,
    first_repeat: int = 0,
    seed: int = 1,
) -> list[PlannedRun]:
    """The confirmation pass: at each point of ``chosen``, the scenario's baseline (its
    ``baseline_arm``, else nothing on) and the arms chosen there
    (the best of each place on the screening runs), ``blocks`` blocks numbered from
    ``first_repeat`` up, so that their traffic seeds are not the screening's (a winner picked on
    some draws is confirmed on fresh ones); ``blocks`` defaults to the scenario's
    confirm_blocks. Blocks and arms in a seeded order, as plan()."""
    if blocks is None:
        blocks = scenario.confirm_blocks
    if blocks < 2:
        raise ExperimentError("--confirm-blocks must be at least 2 (a paired interval needs two blocks)")
    if first_repeat + blocks > 100:
        raise ExperimentError("confirmation blocks would reach repeat 100 and reuse another point's seeds")
    index = {p.label: i for i, p in enumerate(scenario.points)}
    planned: list[list[PlannedRun]] = []
    for label, arms in chosen.items():
        point = scenario.point(label)
        for repeat in range(first_repeat, first_repeat + blocks):
            run_seed = seed * 1000 + index[label] * 100 + repeat
            block = []
            baseline = scenario.baseline()
            for arm in [baseline, *(a for a in arms if a != baseline)]:
                config = run_config(scenario, point, arm, run_seed)
                rid = run_id(scenario.name, point, arm, repeat, run_seed, config)
                block.append(PlannedRun(scenario.name, point, arm, repeat, run_seed, rid, config))
            planned.append(block)
    rng = random.Random(seed)
    rng.shuffle(planned)
    for block in planned:
        rng.shuffle(block)
    return [run for block in planned for run in block]


def run_config(scenario: Scenario, point: Point, arm: Arm, seed: int) -> dict[str, Any]:
    params = dict(scenario.params) | dict(point.params) | scenario.arm_topology_params(arm)
    return {
        "topology": scenario.topology,
        "topology_params": params,
        "traffic": scenario.point_traffic(point),
        "capture": scenario.capture,
        "switch_ecn": list(scenario.switch_ecn),
        "seed": seed,
    }


# ---- one run ----


def _receivers_ports(flows: list[tuple[str, str, int]], traffic: dict[str, Any]) -> dict[str, list[int]]:
    """The ports each receiver's host agent must manage: every port a transfer to it may use.

    Short flows take one port each, from 5001 up, in the order they start across all senders
    (``run_transfer_streams``), so any receiver may get any of them: each gets the whole range.
    (Regression: the agent once managed only 5001 and 5002, and the kernel's quickack, set for
    the agent, ACKed every segment of the other 58 short flows.)"""
    ports: dict[str, list[int]] = {}
    if traffic["kind"] == "short-flows":
        every = list(
            range(SHORT_FLOWS_BASE_PORT, SHORT_FLOWS_BASE_PORT + len(flows) * int(traffic["n_flows"]))
        )
        return {receiver: every for _, receiver, _ in flows}
    for _, receiver, port in flows:
        ports.setdefault(receiver, []).append(port)
    return ports


def requested_tcp(params: dict[str, Any]) -> TcpSettings:
    """The hosts' TCP a run's topology parameters ask for (the defaults where they are silent)."""
    return TcpSettings(**{k: params[k] for k in TcpSettings.__dataclass_fields__ if k in params})


def _topology_params(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config["topology_params"].items() if not k.startswith("_")}


def with_topology_mss(params: dict[str, Any], mss: int) -> dict[str, Any]:
    """A policy's parameters with the topology's MSS where it is not the hosts' usual one (an MTU
    below 1500: the chain's 1040-byte packets) and the arm names none: policies count segments
    of ``mss`` bytes (d, dynamic_d's thresholds), and at 1448 a "d = 2" would wait for 2 x 1448
    bytes, three of the chain's 988-byte segments."""
    if mss != MSS_BYTES and "mss" not in params:
        return {**params, "mss": mss}
    return dict(params)


def host_policy_params(spec: PolicySpec, k: TimeScale, mss: int = MSS_BYTES) -> dict[str, str]:
    """A host policy's parameters as the agent gets them: its times x k, the maximum ACK delay and
    the policy's own times included (their defaults written out when k is not 1), so that a test
    bed k times slower holds ACKs as long, in the emulated network's time, as a real receiver
    would; and the topology's MSS (with_topology_mss). The kernel's own baselines take no
    parameters and no agent."""
    params = with_topology_mss(dict(spec.params), mss) if spec.name in HOST_POLICIES else dict(spec.params)
    if spec.name in HOST_POLICIES and k.k != 1:
        params.setdefault("max_delay_s", f"{MAX_ACK_DELAY_S:g}")
        # the policy's other times, as its defaults (smartacking's rtt_refresh_s, the piggyback
        # hold's hold_ms): written out so that they scale too
        for f in fields(HOST_POLICIES[spec.name]):
            if f.name in POLICY_TIME_PARAMS and isinstance(f.default, int | float) and f.default:
                params.setdefault(f.name, f"{f.default:g}")
    return {name: str(value) for name, value in k.policy_params(params).items()}


def switch_policy_params(spec: PolicySpec, k: TimeScale, mss: int = MSS_BYTES) -> dict[str, str]:
    """A switch policy's parameters as the switch gets them: its times x k, the defaults of the
    times it uses (idle_ms, hold_ms) written out when k is not 1, since the data plane's defaults
    are real time; and the topology's MSS (with_topology_mss). rtt_min_us's default 0 (measured
    by the switch) stays 0: the switch measures the scaled path."""
    params: dict[str, Any] = dict(spec.params)
    if spec.name in SWITCH_POLICY_NAMES and "mss" in POLICY_PARAMS[Policy(spec.name)]:
        params = with_topology_mss(params, mss)
    if k.k != 1 and spec.name in SWITCH_POLICY_NAMES:
        policy = Policy(spec.name)
        defaults = PolicyParams(policy)
        for name in POLICY_PARAMS[policy]:
            if name in POLICY_TIME_PARAMS and getattr(defaults, name):  # 0 means off or measured
                params.setdefault(name, getattr(defaults, name))
    return {name: str(value) for name, value in k.policy_params(params).items()}


def execute(
    run: PlannedRun,
    scenario: Scenario,
    on_progress: Callable[[str], None] | None = None,
    keep_captures: Path | None = None,
) -> RunRecord:
    """Run one point x arm x repeat in a fresh test bed and return its record (failed or not).
    ``keep_captures``: a directory to keep the run's pcaps in (RUN_ID-INTERFACE.pcap)."""
    started = time.time()
    started_iso = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    record = RunRecord(
        run_id=run.run_id,
        scenario=run.scenario,
        point=asdict(run.point),
        arm=run.arm.to_dict(),
        repeat=run.repeat,
        seed=run.seed,
        scale=dict(scenario.scale),
        config=run.config,
        code_version=code_version(),
        versions=tool_versions(),
        link_backend="",
        status="ok",
        reason=None,
        started_at=started_iso,
        duration_s=0.0,
    )
    try:
        _run_in_testbed(run, scenario, record, on_progress, keep_captures)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a run that fails is a result: record why
        record.status = "failed"
        record.reason = f"{type(exc).__name__}: {exc}"[:800]
        record.metrics = record.metrics or {}
        if not isinstance(exc, ExperimentError):
            record.reason += " | " + traceback.format_exc(limit=3).strip().splitlines()[-1][:200]
    record.duration_s = round(time.time() - started, 2)
    return record


def _run_in_testbed(
    run: PlannedRun,
    scenario: Scenario,
    record: RunRecord,
    on_progress: Callable[[str], None] | None,
    keep_captures: Path | None = None,
) -> None:
    # lazy: the test bed imports Mininet, which plan() and the report must not need.
    from ackwise.topologies.links import link_backend
    from ackwise.topologies.testbed import Testbed

    config = run.config
    traffic = config["traffic"]  # the scenario's, with what the point sets (Scenario.point_traffic)
    params = _topology_params(config)
    record.link_backend = link_backend(params.get("backend", "auto"))
    testbed = Testbed.create(config["topology"], **params)
    mss = testbed.topo.mss_bytes
    with ExitStack() as stack:
        stack.enter_context(testbed)
        decisions = _configure_switches(testbed, run.arm, config, stack, mss)
        flows = _flows(testbed, traffic)
        agents = []
        agent_receivers: list[str] = []
        # udp-answers: the receiving application runs the host policy, on UDP: no agent, no
        # capture of TCP, no TCP sampler.
        udp = traffic["kind"] == UDP_ANSWERS
        if run.arm.host is not None and not udp:
            host_params = host_policy_params(run.arm.host, TimeScale(testbed.time_scale), mss)
            for receiver, ports in _receivers_ports(flows, traffic).items():
                agent = HostAgent(testbed.host(receiver), run.arm.host.name, host_params, tuple(ports))
                agents.append(agent.start())
                agent_receivers.append(receiver)
                stack.callback(agent.stop)
        captures = [] if udp else [tr.Capture(intf) for intf in _capture_intfs(testbed, scenario.capture)]
        kept_pcaps: list[dict[str, Any]] = []
        for capture in captures:
            stack.callback(capture.discard)
        # One sampler per sender (its host's counters), watching its first flow's cwnd and RTT.
        first_receiver = {} if udp else {s: r for s, r, _ in reversed(flows)}
        samplers = {
            s: tr.TcpSampler(testbed.host(s), tr.traffic_ip(testbed.host(r))).start()
            for s, r in first_receiver.items()
        }
        for sampler in samplers.values():
            stack.callback(sampler.close)  # a failed run stops sampling before the test bed goes
        started = resources.snapshot(testbed.pids)
        clamp_bytes = testbed.topo.window_clamp_bytes
        results, extra = _drive_traffic(
            testbed, traffic, flows, run.seed, on_progress, clamp_bytes, run.arm.host
        )
        used = resources.usage(started, resources.snapshot(testbed.pids))
        tcp = {s: sampler.stop() for s, sampler in samplers.items()}
        segments = []
        for capture in captures:
            capture.stop(keep_pcap=True)
            segments += list(read_segments(capture.path))
            if keep_captures is not None:
                keep_captures.mkdir(parents=True, exist_ok=True)
                kept = keep_captures / f"{run.run_id}-{capture.path.name}"
                shutil.move(capture.path, kept)
                kept_pcaps.append({"interface": capture.path.stem, "file": kept.name})
            capture.discard()
        agent_reports = [agent.stop() for agent in agents]
        ap_proxy = _ap_proxy_report(testbed) if run.arm.ap else None
        switch_policies = _switch_policy_report(testbed, run.arm) if run.arm.switch else None
        record.provenance = {
            **testbed.provenance(),
            "scenario_file": Path(scenario.source_path).name,
            "scenario_sha256": scenario.source_sha256,
            "scale": dict(scenario.scale),
        }
        health = testbed.health()
        link_stats = testbed.link_stats()
        record.resources = {**used, "linkem_lateness": resources.linkem_lateness(link_stats)}
        ips = {h.name: tr.traffic_ip(h) for h in testbed.hosts}  # as the captures name the flows
        k = testbed.time_scale
    wanted = requested_tcp(params)
    mismatched = [p for s, t in tcp.items() for p in check_connection_options(s, wanted, set(t["options"]))]
    if mismatched:
        raise ExperimentError("the senders did not run the TCP asked for: " + "; ".join(mismatched))
    died = [r for r in agent_reports if r.get("agent_died")]
    if died:
        raise ExperimentError(f"the host agent died during the run ({len(died)} of {len(agent_reports)})")
    if health:
        raise ExperimentError("the test bed broke during the run: " + "; ".join(health))
    _fill_metrics(record, scenario, flows, results, tcp, segments, ips, link_stats, extra, k, mss)
    _fill_estimates(record, flows, tcp, agent_reports, ips)
    max_window_pkts = int(params.get("max_window_pkts", 0))
    if max_window_pkts > 0:
        _check_window_clamp(record, tcp, max_window_pkts, mss)
    if decisions is not None:
        record.series["controller"] = decisions
    if switch_policies is not None:  # what the arm's switches did to the ACKs (comparison.inert_reason)
        record.series["switch_policies"] = switch_policies
    if ap_proxy is not None:  # what the AP proxy did: spoofed, consumed, budget stalls, repairs
        record.series["ap_proxy"] = [ap_proxy]
    if agent_reports:  # what each receiver's agent held, sent and why (released_kept by reason)
        record.series["host_agents"] = [
            {"receiver": receiver, **report}
            for receiver, report in zip(agent_receivers, agent_reports, strict=True)
        ]
    if kept_pcaps:
        record.series["captures"] = kept_pcaps  # in the results directory's captures/
    failed = [f for f in record.flows if not f["byte_exact"]]
    if failed:
        raise ExperimentError(
            f"{len(failed)} transfer(s) not byte-exact: {failed[0]['sender']}->{failed[0]['receiver']}"
        )


def _check_window_clamp(
    record: RunRecord, tcp: dict[str, dict[str, Any]], max_window_pkts: int, mss: int
) -> None:
    """Record what the senders had in flight, and fail the run if the maximum window did not hold:
    a run that claims W segments must have had no more."""
    checks = [window_clamp_check(t["cwnd_samples"], max_window_pkts, mss) for t in tcp.values()]
    record.metrics["max_in_flight_segments"] = max(c.max_in_flight_segments for c in checks)
    heard = [c.max_snd_wnd_bytes for c in checks if c.max_snd_wnd_bytes is not None]
    record.metrics["max_snd_wnd_bytes"] = max(heard) if heard else None
    for check in checks:
        if not check.held:
            raise ExperimentError(
                f"max_window_pkts={max_window_pkts} did not hold: {check.violations} of {check.samples} "
                f"sender samples (ss, every 0.1 s) had more than {max_window_pkts} segments in flight "
                f"(W + 2 in the connection's opening) or a window that fits one more "
                f"(first at {check.first_violation_t_s} s; "
                f"most in flight {check.max_in_flight_segments}, largest window {check.max_snd_wnd_bytes} "
                "bytes): the receiver's TCP_WINDOW_CLAMP was reset by the kernel (transfer.py says when "
                "Linux does); check that the receiver runs this checkout's transfer.py, or drop "
                "max_window_pkts from the scenario"
            )


def _ap_proxy_report(testbed: Testbed) -> dict[str, Any]:
    """The AP proxy's data-plane counters (ap.stats) and its repair agent's report, read before
    the test bed stops; the topology's per-station budget beside them."""
    setting = testbed.topo.meta.ap
    if setting is None:
        return {}
    with testbed.switch(setting.switch).client() as client:
        stats = read_stats(client)
    return {
        "budget_bytes": setting.budget_bytes,
        "switch": stats,
        "agent": testbed.ap_agent_report().get("counters", {}),
    }


AUTO = "auto"  # the switch policy that is no one policy: the per-flow controller picks each flow's
TRACKING = PolicyParams.parse("every_d", ["d=1"])  # under auto: every flow tracked, every segment ACKed


def _configure_switches(
    testbed: Testbed, arm: Arm, config: dict[str, Any], stack: ExitStack, mss: int = MSS_BYTES
) -> list[dict[str, Any]] | None:
    """ECN thresholds, and the arm's switch policy. With policy ``auto``, the controller runs on the
    arm's switches for the run (stopped by ``stack``); its decisions, as logged, are returned."""
    for setting in config.get("switch_ecn", []):
        switch = testbed.switch(setting["switch"])
        with switch.client() as client:
            ecn.set_threshold(client, switch.port_to(setting["toward"]), int(setting["k"]))
    if arm.switch is None:
        return None
    names = _policy_switches(testbed, arm)
    if arm.switch.name == AUTO:
        return _start_controller(testbed, names, arm.switch.params, stack)
    scaled = switch_policy_params(arm.switch, TimeScale(testbed.time_scale), mss)
    try:
        params = PolicyParams.parse(arm.switch.name, [f"{k}={v}" for k, v in scaled.items()])
    except PolicyError as exc:
        raise ExperimentError(f"switch policy {arm.switch.label()}: {exc}") from None
    for name in names:
        with testbed.switch(name).client() as client:
            set_default_policy(client, params)
    return None


def _policy_switches(testbed: Testbed, arm: Arm) -> list[str]:
    """The switches an arm's switch policy is set on (``all``: every switch of the topology)."""
    return [s.name for s in testbed.switches] if arm.switches == ("all",) else list(arm.switches)


def _switch_policy_report(testbed: Testbed, arm: Arm) -> list[dict[str, Any]]:
    """What each of the arm's switches did to the pure ACKs, read from its flow records before the
    test bed stops, summed over the records it still holds (a record taken over by a later flow
    starts its counts again, so with more flows than slots this undercounts): seen, forwarded,
    thinned (dropped, absorbed by coalescing or held until released) and absorbed. An arm whose
    switches thinned next to nothing compares the baseline with itself (comparison.inert_reason):
    coalesce on a port that never queues, for one."""
    report = []
    for name in _policy_switches(testbed, arm):
        with testbed.switch(name).client() as client:
            flows = read_flows(client)
        halves = [h for f in flows for h in f.halves]
        report.append(
            {
                "switch": name,
                "flows": len(flows),
                "acks_seen": sum(h.acks_seen for h in halves),
                "acks_forwarded": sum(h.acks_forwarded for h in halves),
                "acks_thinned": sum(h.acks_thinned for h in halves),
                "acks_absorbed": sum(h.acks_absorbed for h in halves),
            }
        )
    return report


def _start_controller(
    testbed: Testbed, names: list[str], thresholds: dict[str, str], stack: ExitStack
) -> list[dict[str, Any]]:
    """``ackwise controller run`` in this process, on the named switches, managing every flow, with
    the default limits and thresholds (``thresholds`` overrides some, from the arm's params)."""
    import threading

    doc: dict[str, Any] = {"rules": [{"name": "all", "match": {"src": "0.0.0.0/0"}}]}
    if thresholds:
        doc["defaults"] = {"thresholds": {k: float(v) for k, v in thresholds.items()}}
    try:
        controller_config = parse_config(doc)
    except ValueError as exc:
        raise ExperimentError(f"switch policy auto: {exc}") from None
    for name in names:
        with testbed.switch(name).client() as client:
            set_default_policy(client, TRACKING)
    decisions: list[dict[str, Any]] = []
    started = time.time()

    def log(line: dict[str, Any]) -> None:
        if line.get("event") in ("set", "change", "reapply", "remove", "error"):
            kept = {k: line.get(k) for k in ("event", "switch", "flow", "new", "kind", "reason", "error")}
            decisions.append({"t_s": round(line["t"] - started, 3), **kept})

    endpoints = [SwitchEndpoint("localhost", testbed.switch(n).thrift_port) for n in names]
    controller = Controller(endpoints, controller_config, log=log)
    controller.connect_all()
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, kwargs={"stop": stop}, name="controller", daemon=True)
    thread.start()

    def finish() -> None:
        stop.set()
        thread.join(timeout=10)
        controller.close()

    stack.callback(finish)
    return decisions


def _flows(testbed: Testbed, traffic: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(sender, receiver, port) for each bulk flow of the traffic."""
    pairs = testbed.flows if traffic.get("flows", "all") == "all" else [tuple(f) for f in traffic["flows"]]
    return [(s, r, 5001 + i) for i, (s, r) in enumerate(pairs)]


def _capture_intfs(testbed: Testbed, capture: dict[str, Any]) -> list[str]:
    if "intf" in capture:
        return [capture["intf"]]
    node = testbed._net().get(capture["node"])
    names = []
    for intf in node.intfList():
        link = intf.link
        if link is None:
            continue
        other = link.intf2 if link.intf1 is intf else link.intf1
        if other.node.name == capture["toward"]:
            names.append(intf.name)
    if not names:
        raise ExperimentError(f"capture: {capture['node']} has no link towards {capture['toward']}")
    return names


def _drive_traffic(
    testbed: Testbed,
    traffic: dict[str, Any],
    flows: list[tuple[str, str, int]],
    seed: int,
    on_progress: Callable[[str], None] | None,
    window_clamp_bytes: int = 0,
    host_policy: PolicySpec | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    extra: dict[str, Any] = {}
    background: list[Any] = []
    try:
        udp = traffic.get("udp_onoff")
        if udp:
            onoff = tr.OnOffUdp(
                testbed.host(udp["sender"]),
                testbed.host(udp["receiver"]),
                float(udp["rate_bps"]),
                float(udp["on_s"]),
                float(udp["off_s"]),
                float(udp["duration_s"]),
            ).start()
            background.append(onoff)
        if traffic["kind"] == "transfers":
            pairs = [(testbed.host(s), testbed.host(r)) for s, r, _ in flows]

            def progress(transfers: list[Any]) -> None:
                if on_progress is not None:
                    done = sum(t.progress() for t in transfers)
                    total = sum(t.size_bytes for t in transfers)
                    on_progress(f"{done / 1e6:.2f}/{total / 1e6:.2f} MB")

            results = tr.run_transfers(
                pairs,
                int(traffic["size_bytes"]),
                stagger_s=float(traffic.get("stagger_s", 0)),
                on_progress=progress,
                timeout_s=float(traffic.get("timeout_s", RUN_TIMEOUT_S)),
                seed_base=seed,
                reverse_rate_bps=float(traffic.get("reverse_data", {}).get("rate_bps", 0)),
                reverse_write_bytes=int(traffic.get("reverse_data", {}).get("write_bytes", 1000)),
                window_clamp_bytes=window_clamp_bytes,
            )
        elif traffic["kind"] == "piggyback":
            results = [_piggyback(testbed, traffic, flows, seed, on_progress, extra)]
        elif traffic["kind"] == UDP_ANSWERS:
            extra[UDP_ANSWERS] = _udp_answers(testbed, traffic, flows, host_policy, on_progress)
            results = []
        else:
            results = _short_flows(testbed, traffic, flows, seed, on_progress, window_clamp_bytes)
        for proc in background:
            extra[type(proc).__name__] = proc.wait()
        return results, extra
    finally:
        for proc in background:
            proc.stop()


def _udp_answers(
    testbed: Testbed,
    traffic: dict[str, Any],
    flows: list[tuple[str, str, int]],
    host_policy: PolicySpec | None,
    on_progress: Callable[[str], None] | None,
) -> udp_answers.UdpAnswersResult:
    """TACK Fig. 13's UDP on the first flow's pair: offered at ``offered_mbps`` of UDP payload, the
    receiver answering by the arm's host policy (none: the UDP baseline); the traffic's times and
    rates are the emulated network's, run k times slower."""
    k = testbed.time_scale
    sender, receiver, port = flows[0]
    rule = udp_answers.rule_for(
        host_policy.name if host_policy else None,
        host_policy.params if host_policy else {},
        float(traffic.get("tack_rtt_min_s", UDP_TACK_RTT_MIN_S)) * k,
    )
    if on_progress is not None:
        bound = f", at least {rule.min_interval_s:.3f} s apart" if rule.min_interval_s else ""
        on_progress(f"UDP, an answer every {rule.every or 'never'}{bound}")
    return tr.run_udp_answers(
        testbed.host(sender),
        testbed.host(receiver),
        rule,
        rate_pps=float(traffic["offered_mbps"]) * 1e6 / k / (8 * udp_answers.PAYLOAD_BYTES),
        warmup_s=float(traffic["warmup_s"]) * k,
        measure_s=float(traffic["measure_s"]) * k,
        port=port,
        timeout_s=float(traffic.get("timeout_s", 60)),
    )


def _piggyback(
    testbed: Testbed,
    traffic: dict[str, Any],
    flows: list[tuple[str, str, int]],
    seed: int,
    on_progress: Callable[[str], None] | None,
    extra: dict[str, Any],
) -> tr.TransferResult:
    """Shang and Wills' experiment on the first flow's pair: the download (the flow the receiver's
    ACK policy acts on) as the run's transfer; both directions' throughput in ``extra``."""
    sender, receiver, port = flows[0]
    size = int(traffic["size_bytes"])
    if on_progress is not None:
        on_progress(
            f"{traffic.get('mode', 'piggyback')}, {int(traffic.get('write_bytes', 0))} bytes back per read"
        )
    result = tr.run_piggyback(
        testbed.host(sender),
        testbed.host(receiver),
        str(traffic.get("mode", "piggyback")),
        size,
        int(traffic.get("write_bytes", 0)),
        seed=seed,
        port=port,
        timeout_s=float(traffic.get("timeout_s", RUN_TIMEOUT_S)),
    )
    extra["piggyback"] = result
    return tr.TransferResult(
        sender=sender,
        receiver=receiver,
        size_bytes=size,
        completion_s=result.down_s,
        goodput_bps=result.down_bytes_per_s * 8,
        byte_exact=result.byte_exact,
        sender_sha256="",
        receiver_sha256=None,
        started_at=0.0,
        reverse_bytes=result.up_total_bytes,
    )


def _short_flows(
    testbed: Testbed,
    traffic: dict[str, Any],
    flows: list[tuple[str, str, int]],
    seed: int,
    on_progress: Callable[[str], None] | None,
    window_clamp_bytes: int = 0,
) -> list[Any]:
    """Per sender, ``n_flows`` transfers one after another: Pareto sizes, exponential think times."""
    rng = random.Random(seed)
    shape = float(traffic.get("pareto_shape", 1.5))
    mean = float(traffic["mean_size_bytes"])
    scale = mean * (shape - 1) / shape  # Pareto with this shape has this mean
    streams = []
    for s, r, _ in flows:
        stream = []
        for _ in range(int(traffic["n_flows"])):
            size = max(1, int(scale / (1 - rng.random()) ** (1 / shape)))
            size = min(size, int(traffic.get("max_size_bytes", 2_000_000)))
            think = rng.expovariate(1 / float(traffic["think_s"]))
            stream.append((testbed.host(s), testbed.host(r), size, think))
        streams.append(stream)
    per_stream = tr.run_transfer_streams(
        streams,
        base_port=SHORT_FLOWS_BASE_PORT,
        timeout_s=float(traffic.get("timeout_s", 120)),
        on_progress=on_progress,
        window_clamp_bytes=window_clamp_bytes,
    )
    return [result for stream in per_stream for result in stream]


def _fill_udp_metrics(
    record: RunRecord,
    scenario: Scenario,
    flows: list[tuple[str, str, int]],
    result: udp_answers.UdpAnswersResult,
    link_stats: dict[str, Any],
    k: float,
) -> None:
    """udp-answers: goodput and answers over the receiver's window (emulated time); the medium's
    counters over the whole run (the sender's time, warm-up included), as the WLAN runs'."""
    medium = link_stats.get("air", {}).get("media", [{}])[0] if scenario.topology == "wlan" else {}
    m: dict[str, float | int | None] = {
        "udp_goodput_mbps": result.goodput_bps(k) / 1e6,
        "answers_per_datagram": result.answers_per_datagram,
        "answer_frequency_hz": result.answer_frequency_hz(k),
        "udp_rcvbuf_drops": result.rcvbuf_drops,
    }
    if medium:
        m |= medium_metrics(medium, sorted({r for _, r, _ in flows[:1]}), "ap", result.send_duration_s / k)
    record.metrics = {name: _plain(v) for name, v in m.items()}
    record.series = {"udp_answers": [{"flow": f"{flows[0][0]}->{flows[0][1]}", **asdict(result)}]}
    if medium:
        record.series["medium"] = [{"name": n, **c} for n, c in transmitters(medium).items()]
        record.series["wired_links"] = [
            {"name": name, **stats} for name, stats in link_stats.items() if name != "air" and stats
        ]


def _plain(value: Any) -> float | int | None:
    """A JSON-safe number: numpy scalars become Python numbers, NaN and infinities None."""
    if value is None:
        return None
    number = float(value) if not isinstance(value, int | bool) else int(value)
    if isinstance(number, float):
        return round(number, 6) if math.isfinite(number) else None
    return number


def _cwnd_sample(x: dict[str, Any]) -> CwndSample:
    # ss leaves unacked out when it is 0
    return (float(x["t"]), int(x["cwnd"]), x.get("ssthresh"), int(x.get("unacked") or 0))


def _fill_estimates(
    record: RunRecord,
    flows: list[tuple[str, str, int]],
    tcp: dict[str, dict[str, Any]],
    agent_reports: list[dict[str, Any]],
    ips: dict[str, str],
) -> None:
    """Each flow's window estimate at its receiver (the host agent's, when its policy keeps one)
    beside its sender's cwnd: the series ``cwnd_estimate`` on the cwnd series' clock, and the
    estimate's error over the sender's congestion avoidance (metrics.estimate_error). The agent's
    own copy of a trace taken here (wall clock) leaves its report, so that the record (whose
    ``host_agents`` series is that report) keeps each trace once."""
    agent_flows: dict[str, dict[str, Any]] = {}
    for report in agent_reports:
        agent_flows.update(report.get("agent", {}).get("flows", {}))
    series, errors, biases = [], [], []
    for s, r, port in flows:
        entry = agent_flows.get(f"{ips[s]}:{_remote_port(agent_flows, ips[s], port)} > :{port}")
        samples = tcp.get(s, {}).get("cwnd_samples", [])
        if entry is None or not samples or first_receiver_of(flows, s) != r:
            continue
        started = samples[0]["at"] - samples[0]["t"]  # the sampler's clock: series.cwnd's t_s
        trace = entry.pop("estimate")
        at, values = trace["at"], trace["segments"]
        estimate = [(a - started, v) for a, v in zip(at, values, strict=True)]
        state = entry.get("policy_state", {})
        series.append(
            {
                "flow": f"{s}->{r}",
                "t_s": [round(t, 3) for t, _ in estimate],
                "estimate": values,
                "estimator": state.get("estimator"),
            }
        )
        error = estimate_error(estimate, [_cwnd_sample(x) for x in samples])
        if error is not None:
            errors.append(error.median_abs)
            biases.append(error.median)
    if series:
        record.series["cwnd_estimate"] = series
    if errors:
        record.metrics["cwnd_estimate_error"] = _plain(float(np.median(errors)))
        record.metrics["cwnd_estimate_bias"] = _plain(float(np.median(biases)))


def _remote_port(agent_flows: dict[str, dict[str, Any]], sender_ip: str, port: int) -> str:
    """The sender's ephemeral port of the flow to ``port``, as the agent keyed it: of several (a
    connect the sender retried leaves a flow that carried no data beside the one that did), the
    one that carried the most data segments."""
    best, best_segments = "?", -1
    for key, entry in agent_flows.items():
        remote, _, local = key.partition(" > :")
        address, _, remote_port = remote.rpartition(":")
        segments = int(entry.get("data_segments", 0))
        if address == sender_ip and local == str(port) and segments > best_segments:
            best, best_segments = remote_port, segments
    return best


def first_receiver_of(flows: list[tuple[str, str, int]], sender: str) -> str:
    return next(r for s, r, _ in flows if s == sender)


def _fill_metrics(
    record: RunRecord,
    scenario: Scenario,
    flows: list[tuple[str, str, int]],
    results: list[Any],
    tcp: dict[str, dict[str, Any]],
    segments: list[Any],
    ips: dict[str, str],
    link_stats: dict[str, Any],
    extra: dict[str, Any],
    k: float,
    mss: int = MSS_BYTES,
) -> None:
    if record.config["traffic"]["kind"] == UDP_ANSWERS:
        _fill_udp_metrics(record, scenario, flows, extra[UDP_ANSWERS], link_stats, k)
        return
    record.flows = [
        asdict(
            FlowResult(
                r.sender,
                r.receiver,
                r.size_bytes,
                round(r.completion_s, 4),
                round(r.goodput_bps, 1),
                r.byte_exact,
                None,
                r.max_stall_s,
            )
        )
        for r in results
    ]
    senders = {ips[s] for s, _, _ in flows}
    receivers = {ips[r] for _, r, _ in flows}
    counts = ack_counts(segments, senders, receivers)
    completions = [r.completion_s for r in results]
    goodputs = [r.goodput_bps for r in results]
    rtts = [s["rtt_ms"] for t in tcp.values() for s in t["cwnd_samples"]]
    m: dict[str, float | int | None] = {
        "completion_s": sum(completions) / len(completions) if completions else None,
        "completion_p95_s": percentile(completions, 95),
        "completion_max_s": max(completions) if completions else None,
        "goodput_mbps": sum(goodputs) / 1e6 if record.config["traffic"]["kind"] == "transfers" else None,
        "acks_per_data_segment": counts.acks_per_data_segment,
        "pure_acks": counts.pure_acks,
        "data_segments": counts.data_segments,
        "retransmissions": sum(t["retransmitted_segments"] for t in tcp.values()),
        "rto_timeouts": sum(t["rto_timeouts"] for t in tcp.values()),
        "jain_fairness": jain_index(goodputs) if len(goodputs) > 1 else None,
        "queue_delay_ms": queue_delay(rtts),
    }
    if scenario.topology == "chain":
        m["throughput_mbps"] = m["goodput_mbps"]
        m["throughput_pkts_per_s"] = sum(goodputs) / 8 / mss if goodputs else None
    # The shared medium's own counters (retries, retry-limit and queue drops, collisions), on
    # every topology that has one: on the chain they say where a segment was lost.
    medium = shared_medium(link_stats)
    if scenario.topology == "wlan":
        # The WLAN metrics (issue 37) from the medium's own counters; ack_airtime_share, which
        # priced every ACK as a lone 66-byte exchange, is wrong where ACKs share an A-MPDU.
        per_station: dict[str, float] = {}
        for r in results:
            per_station[r.receiver] = per_station.get(r.receiver, 0.0) + r.goodput_bps
        # The middle of the transfers, from the stations' ACKs as they reached the AP (the
        # capture's side of the air): a long flow's goodput, without the startup.
        received = delivered_bytes_series(segments, senders, {ips[r.receiver]: r.size_bytes for r in results})
        steady = steady_goodput_bps(received.values(), sum(r.size_bytes for r in results))
        m |= wlan_metrics(
            [TransferSpan(r.size_bytes, r.started_at, r.completion_s) for r in results],
            list(per_station.values()),
            counts,
            medium,
            sorted({r for _, r, _ in flows}),
            "ap",
            k,
            steady,
        )
    if len(flows) == 1:
        samples = tcp.get(flows[0][0], {}).get("cwnd_samples", [])
        m["acks_per_window"] = acks_per_window(
            counts.pure_acks, counts.data_segments, [_cwnd_sample(x) for x in samples]
        )
    if record.config["traffic"].get("reverse_data"):
        m["reverse_bytes"] = sum(t.reverse_bytes for t in results)
    piggyback = extra.get("piggyback")
    if piggyback is not None:
        # Shang and Wills' quantities: throughput each way (kB/s, 1 kB = 1000 bytes, as their
        # Table I's KBps) and the packets each way on the capture (both connections in 2Con).
        sender, receiver, _ = flows[0]
        down, up = packets_each_way(segments, ips[sender], ips[receiver])
        m["down_throughput_kBps"] = piggyback.down_bytes_per_s / 1000
        m["up_throughput_kBps"] = piggyback.up_bytes_per_s / 1000
        m["down_packets"], m["up_packets"] = down, up
        m["reverse_bytes"] = piggyback.up_total_bytes
        extra["piggyback"] = asdict(piggyback)
    record.metrics = {k: _plain(v) for k, v in m.items() if k in scenario.metrics or v is not None}
    record.series = {
        "cwnd": [
            {
                "flow": f"{s}->{first_receiver_of(flows, s)}",
                "t_s": [round(x["t"], 2) for x in t["cwnd_samples"]],
                "cwnd": [x["cwnd"] for x in t["cwnd_samples"]],
                "snd_wnd": [x.get("snd_wnd") for x in t["cwnd_samples"]],
                "unacked": [x.get("unacked", 0) for x in t["cwnd_samples"]],
                "ssthresh": [x.get("ssthresh") for x in t["cwnd_samples"]],
                "congestion_controls": t["congestion_controls"],  # as the kernel named them
            }
            for s, t in tcp.items()
        ],
        "ack_rate": [],
    }
    for s, r, _ in flows:
        times, rates = ack_rate_series(segments, ips[r], ips[s])
        record.series["ack_rate"].append({"flow": f"{s}->{r}", "t_s": times, "acks_per_s": rates})
    if medium:  # each transmitter's counters (A-MPDU sizes, retries, drops, airtime): the why
        record.series["medium"] = [{"name": n, **c} for n, c in transmitters(medium).items()]
        # The wired links' counters beside it: a segment lost before the AP's queue (the wired
        # link's queue, or the AP switch) is no medium drop, yet costs the same retransmission.
        record.series["wired_links"] = [
            {"name": name, **stats} for name, stats in link_stats.items() if name != "air" and stats
        ]
