"""``make bench``: packets per second through one simple_switch (no event log) running ack_switch
with each ACK policy, against the same switch running forward_only (the same parser and
forwarding, no thinning stage), all measured in one run. Beside them, a yardstick:
thinning_floor (p4src/thinning_floor.p4), the least a switch does to thin with every_d, so that
the table says what ack_switch's contract and features cost beyond that core.

Traffic is crafted per flow so that the thinning stage does real work: data segments with
advancing sequence numbers one way, pure ACKs with advancing ACK numbers the other way, NOP NOP
Timestamps on every segment. Two mixes: pure-ACK-heavy (1 data segment per 8 ACKs, 66-byte ACKs)
and data-heavy (2 data segments of 1514 bytes per ACK). The rate of a configuration is its
throughput in RFC 2544's sense: the highest rate offered that the switch handles with at most 1 %
of the frames lost (handled: out of it, or ACKs it thinned on purpose), found by bisection, probe
after probe on one switch with the traffic continuing. Frames are paced in bursts of at most
BURST_FRAMES (rawsend.py): simple_switch's libpcap socket cuts longer bursts before the switch
sees them. Offering more than a switch takes does not measure it: it spends its CPU receiving
what it then has no room for, and handles less the more it is offered.

    python -m ackwise.experiments.stress.bench [--seconds 2] [--rounds 3] [--max-pps 50000] [--write-docs]
        [--steps-only] [--instructions-only | --no-instructions] [--keep-trace DIR]
        [--simple-switch PATH --label NAME]

Besides the rates it counts, for every configuration and mix, the instructions the switch executes
per packet under callgrind (experiments/stress/instructions.py): deterministic within about 2 %, where the
rates and CPU times move by 10-30 % between rounds and up to 2x between invocations here.

With --simple-switch, every switch of the run is that binary (for instance a bmv2 built with
--disable-logging-macros); --write-docs then writes the table into its own block, named by --label.
Steps are counted from bmv2's trace, which such a build does not write: that table is left out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ackwise.bmv2.client import SwitchClient
from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.bmv2.toolchain import (
    FAST,
    LOGGING,
    REPO_ROOT,
    SIMPLE_SWITCH_ENV,
    ToolchainError,
    build_config,
    compiled_program,
    simple_switch_of_kind,
    warn_if_logging_build,
)
from ackwise.experiments.measure.rawsend import BURST_FRAMES, send_paced, senders
from ackwise.experiments.measure.versions import tool_versions
from ackwise.experiments.stress import holdback_bench, instructions
from ackwise.experiments.stress.dataplane import (
    CPU,
    DOWNLINK,
    UPLINK,
    cpu_s,
    install_routes,
    over_ipv6,
    segment,
)
from ackwise.features.ap import StationParams, configure_ap
from ackwise.features.thinning import set_default_policy
from ackwise.netdev import add_veth, delete_link
from ackwise.processes import run_until_stopped
from ackwise.twins.p4names import (
    ACTION_FLOOR_EVERY_D,
    COUNTER_ACK_FILTER_STATS,
    COUNTER_ACK_THINNING_STATS,
    KEY_DST_ADDR,
    TABLE_FLOOR_POLICY,
    FilterStat,
    ThinningStat,
)
from ackwise.twins.policies import MSS_BYTES, Policy, PolicyParams

N_FLOWS = 64  # the main table's; the flow sweep also runs FLOW_SWEEP flows
FLOW_SWEEP = (64, 1000, 4000)
SWEEP_POLICY = "every_d d=8"
# The throughput search (highest_passing_rate): a rate passes when the switch handled all but
# LOSS_MAX of the frames offered (out of it, or thinned on purpose); bisection between LOW_PPS and
# the highest rate offered (--max-pps) in PROBE_STEPS probes: within 5 % with these.
LOSS_MAX = 0.01
LOW_PPS = 1500.0
PROBE_STEPS = 6
# After a probe, what the switch holds comes out: the counts are read once they stand still.
DRAIN_QUIET_S = 0.15
DRAIN_MAX_S = 2.0
MIXES = {"ack-heavy": (1, 8), "data-heavy": (2, 1)}  # (data segments, pure ACKs) per round
CONFIGS = [
    ("forward_only", None),
    ("ack_switch", "off"),
    ("ack_switch", "every_d d=8"),
    ("ack_switch", "dynamic_d"),
    ("ack_switch", "tack"),
    ("ack_switch", "filter"),
    ("ack_switch", "acc"),
    ("ack_switch", "coalesce"),
    ("thinning_floor", "every_d d=8"),
]
# Selectable with --configs only, not in `make bench`'s tables: the AP proxy serving the receivers'
# prefix (10.0.2.0/24, or fd00:0:0:2::/64 with --ip-version 6). The traffic has no handshake and no
# agent runs, so every flow stays in pass mode: what each proxied packet pays for the station lookup,
# the flow key and the per-flow state, not spoofing.
AP_PROXY = "ap_proxy"
EXTRA_CONFIGS = [(AP_PROXY, None)]
# The yardstick (p4src/thinning_floor.p4): the least a switch does to thin with every_d. Not an
# ackwise program: it measures what ack_switch's contract and features cost beyond that core.
FLOOR = "thinning_floor"
# Programs by name whose JSON is not build/NAME.json (--baseline).
PROGRAM_JSONS: dict[str, Path] = {}


@dataclass(frozen=True)
class Build:
    """One simple_switch executable the bench runs every configuration on."""

    label: str  # fast, logging, or the user's name for it
    executable: str

    def describe(self) -> str:
        return f"{self.label}: {self.executable}, {build_config(self.executable).describe()}"


DEFAULT_BUILDS = f"{FAST},{LOGGING}"


def resolve_builds(spec: str, explicit: bool) -> list[Build]:
    """--builds: comma-separated build kinds (fast, logging) or LABEL=PATH. A kind that is not
    installed is an error when asked for explicitly, and skipped (with a line saying so) by default."""
    builds = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        label, sep, path = item.partition("=")
        if sep:
            if not os.access(path, os.X_OK):
                raise ToolchainError(f"--builds {item}: {path} is not an executable")
            builds.append(Build(label, os.path.abspath(path)))
            continue
        try:
            builds.append(Build(label, simple_switch_of_kind(label)))
        except ToolchainError as exc:
            if explicit:
                raise
            print(f"bench: no {label} build here, measuring without it ({exc})", flush=True)
    if not builds:
        raise ToolchainError(f"--builds {spec}: none of them is installed: run 'make deps'")
    return builds


@contextlib.contextmanager
def using(build: Build) -> Iterator[None]:
    """Every switch started inside runs this build (SIMPLE_SWITCH_ENV; a log still gets a
    logging build, toolchain.find_tool)."""
    before = os.environ.get(SIMPLE_SWITCH_ENV)
    os.environ[SIMPLE_SWITCH_ENV] = build.executable
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SIMPLE_SWITCH_ENV, None)
        else:
            os.environ[SIMPLE_SWITCH_ENV] = before


def program_json(name: str) -> str:
    return str(PROGRAM_JSONS.get(name) or compiled_program(name))


class TrafficStream:
    """The bench's traffic, (ingress port, frame) in sending order, as a stream that continues from
    one probe to the next: every flow's sequence and ACK numbers keep advancing, so a later probe
    does not replay what the switch has seen (old numbers would be retransmissions and duplicate
    ACKs, another path through the program)."""

    def __init__(self, mix: str, n_flows: int = N_FLOWS, ip_version: int = 4) -> None:
        self.n_data, self.n_acks = MIXES[mix]
        self.n_flows = n_flows
        self.ip_version = ip_version  # 6: every frame over_ipv6 (the same segments)
        self.rounds = 0
        self.sent = [0] * n_flows  # bytes of data per flow

    def take_rounds(self, rounds: int) -> list[tuple[int, bytes]]:
        host1, host2 = 0x0A000101, 0x0A000201
        frames: list[tuple[int, bytes]] = []
        # ACKs lag the data by a flight of 16 segments and share out the data's advance evenly, so
        # they are neither duplicates nor acknowledgements of everything sent.
        step = self.n_data * MSS_BYTES // self.n_acks
        for r in range(self.rounds, self.rounds + rounds):
            f = r % self.n_flows
            sport = 20000 + f
            for _ in range(self.n_data):
                frames.append((1, segment(1, host1, host2, sport, 5001, 1000 + self.sent[f], 1, MSS_BYTES)))
                self.sent[f] += MSS_BYTES
            for i in range(self.n_acks):
                acked = max(0, self.sent[f] - 16 * MSS_BYTES - (self.n_acks - 1 - i) * step)
                frames.append((2, segment(2, host2, host1, 5001, sport, 1, 1000 + acked, 0)))
        self.rounds += rounds
        if self.ip_version == 6:
            return [(port, over_ipv6(f)) for port, f in frames]
        return frames

    def take(self, n_frames: int) -> list[tuple[int, bytes]]:
        """At least n_frames, in whole rounds of the mix."""
        per_round = self.n_data + self.n_acks
        return self.take_rounds(-(-n_frames // per_round))


def build_traffic(
    mix: str, rounds: int, n_flows: int = N_FLOWS, ip_version: int = 4
) -> list[tuple[int, bytes]]:
    """(ingress port, frame) in sending order: the stream's first `rounds` rounds of the mix."""
    return TrafficStream(mix, n_flows, ip_version).take_rounds(rounds)


def bench_interfaces(pid: int) -> dict[int, tuple[str, str]]:
    """The veth pairs a bench run of process `pid` makes: port -> (switch side, test side)."""
    tag = f"bn{pid % 10000}"
    return {port: (f"{tag}s{port}", f"{tag}t{port}") for port in (1, 2)}


def _rx(iface: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/rx_packets").read_text())


@dataclass
class Probe:
    """One offered rate for a few seconds on a running switch."""

    offered_pps: float  # frames sent over the seconds the sending took (may be below the rate asked)
    sent: int
    forwarded: int  # frames out of the switch
    thinned: int  # ACKs it thinned on purpose (thinned, absorbed, filtered)
    cpu_s: float  # the switch's CPU time (all threads) over the probe

    @property
    def loss(self) -> float:
        return (self.sent - self.forwarded - self.thinned) / self.sent if self.sent else 0.0


def highest_passing_rate(
    probe: Callable[[float], Probe], low_pps: float, high_pps: float, steps: int
) -> tuple[Probe | None, bool]:
    """The switch's throughput (RFC 2544's sense: the highest rate it handles without loss, here
    with at most LOSS_MAX of the frames lost): (the passing probe with the highest offered rate,
    or None if none passed; whether high_pps itself passed, so that the throughput is at least
    that and the search found no limit). Bisection between low_pps and high_pps in log space,
    `steps` probes after the one at high_pps: the rate is known to within (high/low)^(1/2^steps)."""
    top = probe(high_pps)
    if top.loss <= LOSS_MAX:
        return top, True
    best: Probe | None = None
    low, high = low_pps, high_pps
    for _ in range(steps):
        rate = math.sqrt(low * high)
        p = probe(rate)
        if p.loss <= LOSS_MAX:
            best = p if best is None or p.offered_pps > best.offered_pps else best
            low = rate
        else:
            high = rate
    return best, False


@dataclass
class Result:
    program: str
    policy: str
    mix: str
    flows: int
    throughput_pps: float  # the highest rate handled with at most LOSS_MAX lost (0: none was)
    capped: bool  # the highest rate offered passed: the throughput is at least throughput_pps
    loss: float  # at that rate
    forwarded: int  # at that rate
    thinned: int
    cpu_us_per_packet: float  # the switch's CPU time (all threads) per packet it handled, at that rate
    probes: int
    round_no: int = 0
    build: str = ""  # which simple_switch build (Build.label)


@dataclass
class Ratio:
    """A configuration's rate over a reference's (forward_only, thinning_floor) taken within each
    round, on the same build: median and range over the rounds."""

    median: float
    low: float
    high: float
    bound: str  # ">=" if the configuration's rate was capped, "<=" if the reference's was, else ""

    def cell(self) -> str:
        return f"{self.bound}{self.median:.2f} ({self.low:.2f}-{self.high:.2f})"


@dataclass
class Row:
    """One configuration on one build over every round: the round with the median rate, and its
    ratios to forward_only and to the yardstick (both measured back to back with it)."""

    median: Result
    rounds: int
    to_forward_only: Ratio | None
    to_floor: Ratio | None


def _rate(r: Result) -> float:
    return r.throughput_pps


def _key(r: Result) -> tuple[str, str, int, str, str]:
    return (r.build, r.mix, r.flows, r.program, r.policy)


def _ratio(runs: list[Result], references: list[Result]) -> Ratio:
    ratios = sorted(
        r.throughput_pps / b.throughput_pps if b.throughput_pps else 0.0
        for r, b in zip(runs, references, strict=True)
    )
    own_capped, base_capped = any(r.capped for r in runs), any(b.capped for b in references)
    bound = "" if own_capped == base_capped else (">=" if own_capped else "<=")
    return Ratio(statistics.median(ratios), ratios[0], ratios[-1], bound)


def summarize(results: list[Result]) -> list[Row]:
    """Per (build, mix, flows, program, policy), in the order first measured. A configuration's
    ratio in a round is to the reference's rate in the same round on the same build, so a slow
    round (another process on the machine) moves both; the median over rounds is what the table
    reports, and the range how much the rounds disagreed. The yardstick runs with every_d d=8."""
    keys = list(dict.fromkeys(_key(r) for r in results))
    references = {
        name: {(r.build, r.mix, r.flows, r.round_no): r for r in results if r.program == name}
        for name in ("forward_only", FLOOR)
    }
    rows = []
    for key in keys:
        runs = sorted(
            (r for r in results if (r.build, r.mix, r.flows, r.program, r.policy) == key), key=_rate
        )
        ratios: dict[str, Ratio | None] = {}
        for name, by_round in references.items():
            refs = [by_round.get((r.build, r.mix, r.flows, r.round_no)) for r in runs]
            ratios[name] = _ratio(runs, refs) if all(refs) else None  # type: ignore[arg-type]
        median = runs[(len(runs) - 1) // 2]
        rows.append(Row(median, len(runs), ratios["forward_only"], ratios[FLOOR]))
    return rows


def _thinned(client: SwitchClient, program: str) -> int:
    """ACKs the switch dropped on purpose so far: thinned, absorbed, dropped by filter."""
    if program == "forward_only":
        return 0
    thinned = client.counter_read(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_THINNED).packets
    if program != FLOOR:  # which has no coalescing or filter
        thinned += (
            client.counter_read(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_ABSORBED).packets
            + client.counter_read(COUNTER_ACK_FILTER_STATS, FilterStat.FILTERED).packets
        )
    return thinned


def _drained(ifaces: dict[int, tuple[str, str]]) -> dict[int, int]:
    """The test sides' received counts once the switch has sent what it holds (unchanged for
    DRAIN_QUIET_S, at most DRAIN_MAX_S)."""
    deadline = time.monotonic() + DRAIN_MAX_S
    rx = {p: _rx(t) for p, (_, t) in ifaces.items()}
    while time.monotonic() < deadline:
        time.sleep(DRAIN_QUIET_S)
        now = {p: _rx(t) for p, (_, t) in ifaces.items()}
        if now == rx:
            break
        rx = now
    return rx


def measure(
    program: str,
    policy: str | None,
    mix: str,
    seconds: float,
    rates: tuple[float, float, int],
    ifaces: dict[int, tuple[str, str]],
    thrift_port: int,
    n_flows: int = N_FLOWS,
    round_no: int = 0,
) -> Result:
    """The throughput of one configuration: one switch, probes of `seconds` each at the rates
    highest_passing_rate chooses within rates = (low pps, high pps, steps), the traffic
    continuing from probe to probe."""
    spec = SwitchSpec(
        program_json=program_json(program),
        ports={p: sw for p, (sw, _) in ifaces.items()},
        thrift_port=thrift_port,
        enable_swap=False,
    )
    traffic = TrafficStream(mix, n_flows)
    running = start_switch(spec)
    try:
        _routes_and_policy(thrift_port, policy, program)
        time.sleep(0.2)
        with (
            SwitchClient("localhost", thrift_port) as client,
            senders({p: t for p, (_, t) in ifaces.items()}) as socks,
        ):
            probes: list[Probe] = []

            def probe(rate_pps: float) -> Probe:
                frames = traffic.take(int(rate_pps * seconds))
                rx_before = {p: _rx(t) for p, (_, t) in ifaces.items()}
                thinned_before = _thinned(client, program)
                cpu_before = cpu_s(running.pid)
                sent_s = send_paced(
                    socks, frames, rate_pps, batch=BURST_FRAMES, drop_refused=True, catch_up=False
                )
                rx_after = _drained(ifaces)
                p = Probe(
                    len(frames) / sent_s,
                    len(frames),
                    sum(rx_after[port] - rx_before[port] for port in ifaces),
                    _thinned(client, program) - thinned_before,
                    cpu_s(running.pid) - cpu_before,
                )
                probes.append(p)
                print(
                    f"    {rate_pps:8.0f} pps asked, {p.offered_pps:8.0f} offered: "
                    f"{'lost' if p.loss > LOSS_MAX else 'ok  '} {100 * p.loss:5.1f} %",
                    flush=True,
                )
                return p

            best, capped = highest_passing_rate(probe, *rates)
    finally:
        running.stop()
    if best is None:
        return Result(program, policy or "-", mix, n_flows, 0.0, False, 1.0, 0, 0, 0.0, len(probes), round_no)
    handled = best.forwarded + best.thinned
    return Result(
        program,
        policy or "-",
        mix,
        n_flows,
        best.offered_pps,
        capped,
        best.loss,
        best.forwarded,
        best.thinned,
        best.cpu_s / max(1, handled) * 1e6,
        len(probes),
        round_no,
    )


# ---- the work per packet, from bmv2's own trace ----

# What the trace says for each step of a packet (simple_switch --log-level trace).
STEP_KINDS = {
    "parser states": re.compile(r"Parser '\w+' entering state"),
    "tables": re.compile(r"Applying table '"),
    "conditions": re.compile(r"Condition \""),
    "primitives": re.compile(r" Primitive "),
    "register reads": re.compile(r"Read register '"),
    "register writes": re.compile(r"Wrote register '"),
}
TYPICAL = {"data segment": 24, "pure ACK": 25}  # packet ids in the trace (see count_steps)
OPERATORS = "expression operators"  # the column count_steps adds from the compiled program
METADATA_FIELDS = "metadata fields"  # the program's, reset for every packet (see metadata_fields)
_TRACE_ACTION = re.compile(r"\] (?:\S+\(\d+\) )?Action (\S+)$")  # with the source, if the action has one
_TRACE_METHOD = re.compile(r"\] Executing method (\S+)$")
_TRACE_CONDITION = re.compile(r"Condition \".*\" \((\w+)\) is ")


def _operators_in(node: object) -> int:
    """The operators of a compiled expression tree: its nodes with an "op" (a primitive's own "op"
    sits beside its "parameters" and is not one)."""
    if isinstance(node, dict):
        own = 1 if "op" in node and "parameters" not in node else 0
        return own + sum(_operators_in(v) for v in node.values())
    if isinstance(node, list):
        return sum(_operators_in(v) for v in node)
    return 0


def expression_operators(program: dict, trace_lines: list[str]) -> int:
    """How many expression operators bmv2 evaluates for the packet whose trace lines these are:
    those of every action it ran (all its primitives' arguments) and of every condition it tested.
    The trace counts steps, not what is inside them; a primitive list whose expressions grew a
    thousandfold (docs/performance.md, the coalesce regression) shows here. Where p4c gave two
    actions one name (the policy actions of two tables) they are the same code: the larger counts.
    A `?:` inside an action counts both branches, though bmv2 evaluates one. The parser's method
    calls (setValid in a parser state: "Executing method", then an "Action" of that name) are not
    counted; the parser states are a column of their own."""
    per_action: dict[str, int] = {}
    for action in program["actions"]:
        n = sum(_operators_in(p.get("parameters", [])) for p in action["primitives"])
        per_action[action["name"]] = max(n, per_action.get(action["name"], 0))
    per_condition = {
        c["name"]: _operators_in(c["expression"]) for p in program["pipelines"] for c in p["conditionals"]
    }
    total = 0
    method = None
    for line in trace_lines:
        if m := _TRACE_METHOD.search(line):
            method = m.group(1)
        elif (m := _TRACE_ACTION.search(line)) and m.group(1) == method:
            method = None  # a parser's method call (setValid): not an action of the program
        elif m:
            total += per_action[m.group(1)]
        elif m := _TRACE_CONDITION.search(line):
            total += per_condition[m.group(1)]
    return total


def metadata_fields(program: dict) -> int:
    """How many metadata fields the compiled program has: simple_switch sets every one of them to
    zero for every packet it receives, before the parser (PHV::reset_metadata, a Field::set each),
    whatever path the packet then takes. p4c makes a field of every local variable and temporary of
    every action and control instance (the "scalars" header), so this grows with the program's code,
    not only with its declared metadata (docs/performance.md, "What every packet pays first")."""
    types = {t["name"]: t for t in program["header_types"]}
    return sum(len(types[h["header_type"]]["fields"]) for h in program["headers"] if h["metadata"])


@dataclass
class Steps:
    program: str
    policy: str
    packet: str
    counts: dict[str, int]


def count_steps(
    program: str,
    policy: str | None,
    ifaces: dict[int, tuple[str, str]],
    thrift_port: int,
    keep_trace: Path | None = None,
) -> list[Steps]:
    """Run a switch with its trace on, send a flow's warm-up (20 data segments, 4 ACKs lagging 16
    segments behind), then one typical data segment (packet 24) and one typical pure ACK (25,
    neither a duplicate nor the end of a burst), and count each one's steps in the trace. With
    keep_trace, the two packets' trace lines are written there (one file per configuration)."""
    with tempfile.TemporaryDirectory(prefix="ackwise-bench-trace-") as tmp:
        log = Path(tmp) / "trace.log"
        spec = SwitchSpec(
            program_json=program_json(program),
            ports={p: sw for p, (sw, _) in ifaces.items()},
            thrift_port=thrift_port,
            enable_swap=False,
            log_file=str(log),
            log_level="trace",
        )
        running = start_switch(spec)
        try:
            _routes_and_policy(thrift_port, policy, program)
            host1, host2 = 0x0A000101, 0x0A000201
            frames = [
                (1, segment(1, host1, host2, 20000, 5001, 1000 + k * MSS_BYTES, 1, MSS_BYTES))
                for k in range(20)
            ]
            frames += [
                (2, segment(2, host2, host1, 5001, 20000, 1, 1000 + k * MSS_BYTES, 0)) for k in range(1, 5)
            ]
            frames += [(1, segment(1, host1, host2, 20000, 5001, 1000 + 20 * MSS_BYTES, 1, MSS_BYTES))]
            frames += [(2, segment(2, host2, host1, 5001, 20000, 1, 1000 + 5 * MSS_BYTES, 0))]
            # One at a time, 10 ms apart: the trace's packet ids follow the sending order.
            with senders({p: t for p, (_, t) in ifaces.items()}) as socks:
                send_paced(socks, frames, 100.0)
            time.sleep(0.3)
        finally:
            running.stop()
        text = "\n".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("trace.log*")))
    compiled = json.loads(Path(program_json(program)).read_text())
    results = []
    for packet, pid in TYPICAL.items():
        lines = [line for line in text.splitlines() if f"] [{pid}.0] " in line]
        counts = {kind: sum(1 for line in lines if rx.search(line)) for kind, rx in STEP_KINDS.items()}
        counts[OPERATORS] = expression_operators(compiled, lines)
        counts[METADATA_FIELDS] = metadata_fields(compiled)
        results.append(Steps(program, policy or "-", packet, counts))
        if keep_trace is not None:
            keep_trace.mkdir(parents=True, exist_ok=True)
            name = f"{program}-{(policy or '-').split()[0]}-{packet.replace(' ', '-')}.log"
            (keep_trace / name).write_text("\n".join(lines) + "\n")
    return results


def set_floor_policy(client: SwitchClient, params: PolicyParams) -> None:
    """thinning_floor's policy for every flow: it has every_d only."""
    if params.policy != Policy.EVERY_D:
        raise ValueError(f"{FLOOR} has every_d only, not {params.policy}")
    client.table_add(
        TABLE_FLOOR_POLICY,
        ACTION_FLOOR_EVERY_D,
        {KEY_DST_ADDR: "0&&&0"},
        {"d_segments": params.d, "mss_bytes": params.mss},
        priority=1,
    )


def _routes_and_policy(thrift_port: int, policy: str | None, program: str, ipv6: bool = False) -> None:
    with SwitchClient("localhost", thrift_port) as client:
        install_routes(client, ipv6=ipv6)
        if program == AP_PROXY:
            station = f"fd00:0:0:{DOWNLINK}::/64" if ipv6 else f"10.0.{DOWNLINK}.0/24"
            configure_ap(client, [UPLINK], [DOWNLINK], CPU, [(station, StationParams())])
        if policy is None:
            return
        params = PolicyParams.parse(policy.split()[0], policy.split()[1:])
        if program == FLOOR:
            set_floor_policy(client, params)
        else:
            set_default_policy(client, params)


def render_steps(steps: list[Steps]) -> str:
    kinds = [*STEP_KINDS, OPERATORS, METADATA_FIELDS]
    lines = [
        "| program | policy | packet | " + " | ".join(kinds) + " | steps (tables + conditions) |",
        "| --- | --- | --- | " + " | ".join("---" for _ in kinds) + " | --- |",
    ]
    for s in steps:
        cells = " | ".join(str(s.counts[k]) for k in kinds)
        lines.append(
            f"| {s.program} | {s.policy} | {s.packet} | {cells} | "
            f"{s.counts['tables'] + s.counts['conditions']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_until_stopped("bench", lambda: _main(argv))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="of each probe of the throughput search")
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="measure every configuration this many times, round by round; the table gives medians",
    )
    parser.add_argument(
        "--max-pps",
        type=float,
        default=50000,
        help="the highest rate offered; a configuration that handles it is reported as at least that",
    )
    parser.add_argument(
        "--builds",
        help=f"simple_switch builds to measure side by side: comma-separated {FAST}, {LOGGING} or "
        f"LABEL=PATH (default {DEFAULT_BUILDS}, those installed)",
    )
    parser.add_argument("--no-sweep", action="store_true", help="skip the 1 000 and 4 000 flow runs")
    parser.add_argument("--no-holdback", action="store_true", help="skip the hold-back agent's part")
    parser.add_argument(
        "--steps-only", action="store_true", help="only count the steps of a typical packet per policy"
    )
    parser.add_argument(
        "--no-instructions", action="store_true", help="skip the instruction counts (callgrind)"
    )
    parser.add_argument(
        "--instructions-only",
        action="store_true",
        help="only count the instructions per packet of every configuration (callgrind, a few minutes)",
    )
    parser.add_argument(
        "--keep-trace", type=Path, metavar="DIR", help="write the counted packets' trace lines into DIR"
    )
    parser.add_argument(
        "--baseline",
        metavar="NAME=JSON",
        help="also run every ack_switch policy on this compiled program (an earlier ack_switch.p4 "
        "with the same policy table), named NAME in the tables: before and after in one run",
    )
    parser.add_argument(
        "--ip-version",
        type=int,
        choices=(4, 6),
        default=4,
        help="the instruction counts' traffic over IPv4 (default) or IPv6 (the same segments; "
        "with --instructions-only)",
    )
    parser.add_argument(
        "--configs",
        metavar="LIST",
        help="only these configurations: comma-separated PROGRAM or PROGRAM:POLICY (the policy's "
        "name, its parameters aside), e.g. ack_switch:dynamic_d,ack_switch:coalesce,thinning_floor; "
        f"a --baseline program by its NAME; also {AP_PROXY} (not in the full run: the AP proxy's flows, in "
        "pass mode)",
    )
    parser.add_argument(
        "--write-docs", action="store_true", help="write the results into docs/performance.md"
    )
    parser.add_argument(
        "--label",
        default="",
        help="docs/performance.md block to write (bench-LABEL; default: the block 'bench'), so that a run of "
        "one build does not replace another's",
    )
    return parser


def select_configs(configs: list[tuple[str, str | None]], spec: str) -> list[tuple[str, str | None]]:
    """The configurations ``spec`` names (``--configs``: PROGRAM or PROGRAM:POLICY, comma-separated,
    a policy by its name without parameters), in the bench's order; a name that matches none is an
    error that lists the known ones."""

    def name(program: str, policy: str | None) -> str:
        return program if policy is None else f"{program}:{policy.split()[0]}"

    wanted = [item.strip() for item in spec.split(",") if item.strip()]
    chosen = [
        (program, policy)
        for program, policy in configs
        if any(w in (program, name(program, policy)) for w in wanted)
    ]
    known = {name(p, q) for p, q in configs} | {p for p, _ in configs}
    if unknown := [w for w in wanted if w not in known]:
        raise ValueError(f"--configs: {', '.join(unknown)} not known; known: {', '.join(sorted(known))}")
    return chosen


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    configs = list(CONFIGS)
    if args.baseline:
        name, sep, path = args.baseline.partition("=")
        if not sep or not name or not Path(path).is_file():
            parser.error(f"--baseline {args.baseline}: give NAME=PATH of a compiled program JSON")
        PROGRAM_JSONS[name] = Path(path).resolve()
        configs += [(name, policy) for program, policy in CONFIGS if program == "ack_switch"]
    if args.configs:
        try:
            configs = select_configs(configs + EXTRA_CONFIGS, args.configs)
        except ValueError as exc:
            parser.error(str(exc))
        if args.write_docs:
            parser.error("--write-docs needs every configuration: drop --configs")
    if args.ip_version == 6 and not args.instructions_only:
        parser.error("--ip-version 6: only with --instructions-only")
    if (args.steps_only or args.instructions_only) and args.write_docs:
        parser.error("--write-docs needs the full run: drop --steps-only / --instructions-only")
    if args.instructions_only and args.no_instructions:
        parser.error("--instructions-only and --no-instructions contradict each other")
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    count_instructions = not (args.steps_only or args.no_instructions)
    if count_instructions and (missing := instructions.available()):
        parser.error(missing)
    if os.geteuid() != 0:
        print("bench creates veth interfaces: run it as root", file=sys.stderr)
        return 2
    try:
        builds = resolve_builds(args.builds or DEFAULT_BUILDS, explicit=args.builds is not None)
    except ToolchainError as exc:
        parser.error(str(exc))
    for build in builds:
        print(f"build {build.describe()}", flush=True)
    if not any(b.label == FAST for b in builds):
        warn_if_logging_build()
    ifaces = bench_interfaces(os.getpid())
    results: list[Result] = []
    steps: list[Steps] = []
    counted: list[instructions.Instructions] = []
    try:
        for sw, test in ifaces.values():
            # Offloads left as the kernel sets them: what the bench has always measured.
            add_veth(sw, test, offloads=True)
        if not args.instructions_only:  # first: a failure here costs no long run
            try:  # bmv2's trace: the logging build, whichever builds are measured
                for program, policy in configs:
                    steps += count_steps(program, policy, ifaces, 9591, args.keep_trace)
            except ToolchainError as exc:
                print(f"bench: steps not counted: {exc}", flush=True)
        if count_instructions:
            for build in builds:
                with using(build):
                    counted += count_instructions_of(configs, ifaces, 9592, build.label, args.ip_version)
        runs: list[tuple[Build, str, int, str, str | None]] = []  # (build, mix, flows, program, policy)
        if not args.steps_only and not args.instructions_only:
            for build in builds:
                runs += [
                    (build, mix, N_FLOWS, program, policy) for mix in MIXES for program, policy in configs
                ]
            if not args.no_sweep:  # on the first build only: it shows whether the rate depends on flows
                sweep = (("forward_only", None), ("ack_switch", SWEEP_POLICY))
                runs += [
                    (builds[0], "ack-heavy", n, program, policy)
                    for n in FLOW_SWEEP[1:]
                    for program, policy in sweep
                ]
        for round_no in range(args.rounds if runs else 0):
            print(f"round {round_no + 1} of {args.rounds}", flush=True)
            for build, mix, flows, program, policy in runs:
                print(f"{build.label}: {mix}, {flows} flows, {program} {policy or ''}", flush=True)
                with using(build):
                    r = measure(
                        program,
                        policy,
                        mix,
                        args.seconds,
                        (LOW_PPS, args.max_pps, PROBE_STEPS),
                        ifaces,
                        9590,
                        flows,
                        round_no,
                    )
                r.build = build.label
                results.append(r)
                _print(r)
    finally:
        for sw, _ in ifaces.values():
            delete_link(sw)
    holdback_table = ""
    if not args.no_holdback and not args.steps_only and not args.instructions_only:
        with using(builds[0]):
            holdback_table = holdback_bench.render(holdback_bench.run(args.seconds, [1000.0, 2000.0, 4000.0]))
    parts = [
        "Builds: " + "; ".join(b.describe() for b in builds) + ".",
    ]
    if results:
        parts += [render(results, args), render_builds(results)]
    if counted:
        parts += [instructions.render(counted, N_FLOWS), instructions.render_breakdown(counted)]
    if steps:
        parts.append(render_steps(steps))
    if holdback_table:
        parts.append(
            f"Hold-back agent ({builds[0].label} build; every_d d=4, hold_ms=200, each ACK right "
            f"behind its data):\n\n{holdback_table}"
        )
    table = "\n\n".join(p for p in parts if p)
    print(table)
    if args.write_docs:
        write_docs(table, args.label, sys.argv[1:] if argv is None else argv)
    return 0


def count_instructions_of(
    configs: list[tuple[str, str | None]],
    ifaces: dict[int, tuple[str, str]],
    thrift_port: int,
    build: str = "",
    ip_version: int = 4,
) -> list[instructions.Instructions]:
    """Every configuration's instructions per packet on each mix (experiments/stress/instructions.py)."""
    counted = []
    for mix, (n_data, n_acks) in MIXES.items():
        per_round = n_data + n_acks
        warmup = instructions.WARMUP_ROUNDS_PER_FLOW * N_FLOWS * per_round
        frames = build_traffic(mix, (warmup + instructions.N_PACKETS) // per_round + 1, ip_version=ip_version)
        for program, policy in configs:
            per_packet, phv, parts = instructions.count(
                program_json(program),
                lambda port, program=program, policy=policy: _routes_and_policy(
                    port, policy, program, ipv6=ip_version == 6
                ),
                frames,
                warmup,
                ifaces,
                thrift_port,
            )
            counted.append(
                instructions.Instructions(program, policy or "-", mix, per_packet, phv, parts, build)
            )
            print(
                f"{build or '-'}: {mix:<10} {program:<14} {policy or '-':<12} {per_packet / 1000:7.1f} "
                "thousand instructions per packet (callgrind)",
                flush=True,
            )
    return counted


def _print(r: Result) -> None:
    print(
        f"{r.build or '-'}: {r.mix:<10} {r.flows:>5} flows {r.program:<12} {r.policy:<12} throughput "
        f"{'>=' if r.capped else ''}{r.throughput_pps:.0f} pps (loss {100 * r.loss:.1f} %, "
        f"out {r.forwarded}, thinned {r.thinned}), switch CPU {r.cpu_us_per_packet:.0f} us/packet, "
        f"{r.probes} probes",
        flush=True,
    )


def render(results: list[Result], args: argparse.Namespace) -> str:
    lines = [
        "| build | mix | flows | program | policy | throughput pps | ratio to thinning_floor (range) "
        "| ratio to forward_only (range) | loss | out | thinned | switch CPU us per packet |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = summarize(results)
    for row in rows:
        r = row.median
        lines.append(
            f"| {r.build} | {r.mix} | {r.flows} | {r.program} | {r.policy} | "
            f"{'>=' if r.capped else ''}{r.throughput_pps:.0f} | "
            f"{row.to_floor.cell() if row.to_floor else '-'} | "
            f"{row.to_forward_only.cell() if row.to_forward_only else '-'} | "
            f"{100 * r.loss:.1f} % | {r.forwarded} | {r.thinned} | {r.cpu_us_per_packet:.0f} |"
        )
    v = tool_versions()
    lines += [
        "",
        f"Throughput: the highest rate offered with at most {100 * LOSS_MAX:g} % of the frames lost "
        f"(out of the switch or thinned on purpose), bisection between {LOW_PPS:.0f} and "
        f"{args.max_pps:.0f} pps in {PROBE_STEPS} probes of {args.seconds:g} s after one at "
        f"{args.max_pps:.0f}, frames in bursts of at most {BURST_FRAMES}; loss, out, thinned and CPU "
        f"are of that probe. >= : the highest rate passed; a ratio <= or >= is a bound for that reason. "
        f"{max(row.rounds for row in rows)} rounds (every configuration on every build once per "
        "round, in the order above; the row is the median round, a ratio the median of the rounds' "
        f"ratios on the same build, with their range); the yardstick runs every_d d=8. p4c {v['p4c']}, "
        f"kernel {v['kernel']}, {os.cpu_count()} cores, ackwise {v['ackwise']}.",
    ]
    return "\n".join(lines)


def render_builds(results: list[Result]) -> str:
    """Throughput of each configuration on every build against the first build's, ratio taken
    within each round: what the builds' difference costs in packets per second."""
    labels = list(dict.fromkeys(r.build for r in results))
    if len(labels) < 2:
        return ""
    first, others = labels[0], labels[1:]
    by_key = {(r.build, r.mix, r.flows, r.program, r.policy, r.round_no): r for r in results}
    keys = list(dict.fromkeys((r.mix, r.flows, r.program, r.policy) for r in results if r.build == first))
    header = ["mix", "program", "policy", f"{first} pps"]
    for other in others:
        header += [f"{other} pps", f"{first} ÷ {other} (range)"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for mix, flows, program, policy in keys:
        if flows != N_FLOWS:
            continue
        mine = [
            r for (b, *k, _), r in by_key.items() if b == first and tuple(k) == (mix, flows, program, policy)
        ]
        cells = [mix, program, policy, f"{statistics.median(r.throughput_pps for r in mine):.0f}"]
        for other in others:
            theirs = [by_key.get((other, mix, flows, program, policy, r.round_no)) for r in mine]
            pairs = [(r, o) for r, o in zip(mine, theirs, strict=True) if o is not None]
            if not pairs:
                cells += ["-", "-"]
                continue
            ratio = _ratio([r for r, _ in pairs], [o for _, o in pairs])
            cells += [f"{statistics.median(o.throughput_pps for _, o in pairs):.0f}", ratio.cell()]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"The same configurations on each build, {N_FLOWS} flows: medians over the rounds, and the "
        "ratio of the rates within each round (median and range).",
    ]
    return "\n".join(lines)


def write_docs(table: str, label: str, argv: list[str]) -> None:
    """Write the table into docs/performance.md, between its block's markers (one block per
    --label), with the command that measured it."""
    path = REPO_ROOT / "docs" / "performance.md"
    text = path.read_text() if path.exists() else ""
    name = f"bench-{label}" if label else "bench"
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if argv == ["--write-docs"]:
        command = "sudo make bench   # = python -m ackwise.experiments.stress.bench --write-docs"
    else:
        command = "sudo .venv/bin/python -m ackwise.experiments.stress.bench " + shlex.join(argv)
    block = f"{start}\nMeasured {time.strftime('%Y-%m-%d')} with:\n\n    {command}\n\n{table}\n{end}"
    if start in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
