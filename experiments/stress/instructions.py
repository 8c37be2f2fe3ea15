"""Instructions per packet: the bench's traffic through one simple_switch run under callgrind.

CPU time per packet on this machine moves by up to 2x between invocations (a shared two-core VM),
so changes of 5-10 % vanish in it. The number of instructions the switch executes per packet does
not: callgrind counts them (valgrind's `Ir`), and two runs of one configuration agree within
about 2 %. It is a proxy, not a rate: instructions do not weigh cache misses or system calls, and
the switch runs 20-50 times slower under callgrind, so it is measured at a low rate.

Method: the switch starts with instrumentation off; a warm-up takes every flow past its first
packets (two rounds of the mix per flow, fast); then counting is switched on, zeroed, `n_packets`
frames follow at `rate_pps`, and the counts are dumped. Only the switch's own threads are counted
(the sender is another process). Subtracted: the PHV objects simple_switch builds when its pool
is empty, which happens only when packets queue up because callgrind slowed the switch down (the
pool then grows; at full speed it holds one or two); the result says how much it subtracted.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.experiments.measure.rawsend import send_paced, senders

WARMUP_ROUNDS_PER_FLOW = 2  # every flow past its first packets (first ACK, probe)
WARMUP_PPS = 200.0  # instrumentation off: valgrind's core alone, about 5x slower than native
RATE_PPS = 25.0  # counting: about 1 M instructions per packet at 20-50 M per second
N_PACKETS = 200
START_TIMEOUT_S = 300.0  # loading a 5 MB program under valgrind
PHV_CREATE = "bm::PHVFactory::create"


# Where the instructions go: bmv2 functions, each with what it called (callgrind's inclusive
# counts). The top-level parts do not overlap (nothing here calls another of them); what they leave
# is receiving, queueing and sending packets, threads, and the PHV pool. The action parts are
# inside "actions": the primitives' arguments evaluated (every expression operator, each a GMP
# operation), fields written (each write exports the value's bytes), headers made valid (a header
# made valid has its fields set to zero), register reads and writes.
BREAKDOWN_PARTS: tuple[tuple[str, str], ...] = (
    ("metadata reset", "bm::PHV::reset_metadata"),  # every metadata field, every packet
    ("header invalidation", "bm::PHV::reset"),  # every header marked invalid, every packet
    ("parser", "bm::Parser::parse"),
    ("deparser", "bm::Deparser::deparse"),
    ("table lookups", "bm::MatchTable::lookup"),
    ("conditions", "bm::Conditional::operator()"),
    ("actions", "bm::ActionFnEntry::execute"),
)
ACTION_PARTS: tuple[tuple[str, str], ...] = (
    ("expressions", "bm::Data const& bm::ActionParam::to<bm::Data const&>"),
    ("field writes", "bm::core::assign::operator()"),
    ("setValid", "add_header::operator()"),
    ("register reads", "register_read::operator()"),
    ("register writes", "register_write::operator()"),
)
REST = "rest"


@dataclass
class Instructions:
    program: str
    policy: str
    mix: str
    per_packet: float  # instructions the switch executed per packet sent, PHV building subtracted
    phv_subtracted: float  # per packet
    breakdown: dict[str, float] | None = None  # per packet, by BREAKDOWN_PARTS, ACTION_PARTS and REST
    build: str = ""  # which simple_switch build ran (bench.Build.label)


def available() -> str | None:
    """None if callgrind can be used here, else what to do about it."""
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        if shutil.which(tool) is None:
            return f"{tool} not found: install Debian's valgrind ('make deps'), or pass --no-instructions"
    return None


def _control(pid: int, *args: str) -> None:
    done = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"callgrind_control {' '.join(args)} {pid}: {(done.stderr or done.stdout).strip()}"
        )


def total_instructions(dump: str) -> int:
    """All instructions of one callgrind dump (its `totals:` or `summary:` line)."""
    lines = [line for line in dump.splitlines() if line.startswith(("summary:", "totals:"))]
    if not lines:
        raise ValueError("no totals in the callgrind dump")
    return max(int(line.split()[1]) for line in lines)


def inclusive_instructions(annotated: str, function: str) -> int:
    """The instructions spent in `function` and what it called, from `callgrind_annotate
    --inclusive=yes` output (lines like `1,234 (5.6%)  ???:bm::PHVFactory::create() const [...]`);
    0 if it was never called."""
    for line in annotated.splitlines():
        cells = line.split()
        if len(cells) >= 3 and f":{function}(" in line and cells[0].replace(",", "").isdigit():
            return int(cells[0].replace(",", ""))
    return 0


def breakdown(annotated: str, total: int) -> dict[str, int]:
    """`total` (the dump's instructions, anything subtracted already) split by BREAKDOWN_PARTS, what
    they leave as REST, and the ACTION_PARTS inside "actions", from `callgrind_annotate
    --inclusive=yes` output."""
    parts = {name: inclusive_instructions(annotated, function) for name, function in BREAKDOWN_PARTS}
    parts[REST] = total - sum(parts.values())
    parts.update({name: inclusive_instructions(annotated, function) for name, function in ACTION_PARTS})
    return parts


def _totals(out_file: Path) -> tuple[int, int, dict[str, int]]:
    """(all instructions, instructions inside PHV building, the breakdown of the rest) of one
    callgrind dump."""
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total = total_instructions(out_file.read_text(errors="replace"))
    phv = inclusive_instructions(annotated, PHV_CREATE)
    return total, phv, breakdown(annotated, total - phv)


def count(
    program_json: str,
    configure: Callable[[int], None],
    frames: list[tuple[int, bytes]],
    warmup: int,
    ifaces: dict[int, tuple[str, str]],
    thrift_port: int,
    n_packets: int = N_PACKETS,
    rate_pps: float = RATE_PPS,
) -> tuple[float, float, dict[str, float]]:
    """(instructions per packet, PHV building subtracted per packet, where the instructions per
    packet went: `breakdown`) of `program_json` set up by `configure(thrift_port)`: `warmup`
    frames fast, then the next `n_packets` frames counted. `ifaces`: port -> (switch side, sending
    side)."""
    if len(frames) < warmup + n_packets:
        raise ValueError(f"{len(frames)} frames: need {warmup} to warm up and {n_packets} to count")
    with tempfile.TemporaryDirectory(prefix="ackwise-bench-callgrind-") as tmp:
        out_file = Path(tmp) / "callgrind.out"
        spec = SwitchSpec(
            program_json=program_json,
            ports={p: sw for p, (sw, _) in ifaces.items()},
            thrift_port=thrift_port,
            enable_swap=False,
            wrapper=[
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out_file}",
            ],
        )
        running = start_switch(spec, timeout_s=START_TIMEOUT_S)
        try:
            configure(thrift_port)
            with senders({p: t for p, (_, t) in ifaces.items()}) as socks:
                send_paced(socks, frames[:warmup], WARMUP_PPS)
                time.sleep(1.0)
                _control(running.pid, "--instr=on")
                _control(running.pid, "--zero")
                send_paced(socks, frames[warmup : warmup + n_packets], rate_pps)
                time.sleep(2.0)  # the last packets through the pipeline
            _control(running.pid, "--dump")
            dumps = sorted(Path(tmp).glob("callgrind.out*"), key=lambda p: p.stat().st_mtime)
            if not dumps:
                raise RuntimeError(f"callgrind wrote no counts into {tmp}")
            total, phv, parts = _totals(dumps[-1])
        finally:
            running.stop(timeout_s=30.0)
    return (total - phv) / n_packets, phv / n_packets, {k: v / n_packets for k, v in parts.items()}


def render_breakdown(rows: list[Instructions]) -> str:
    """Where each counted configuration's instructions per packet go (thousands), a row each."""
    counted = [r for r in rows if r.breakdown]
    if not counted:
        return ""
    top = [name for name, _ in BREAKDOWN_PARTS if name != "actions"] + [REST, "actions"]
    inside = [name for name, _ in ACTION_PARTS]
    header = ["build", "mix", "program", "policy", "all", *top, *(f"actions: {name}" for name in inside)]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in counted:
        assert r.breakdown is not None
        cells = [f"{r.per_packet / 1000:.1f}", *(f"{r.breakdown[name] / 1000:.1f}" for name in top + inside)]
        lines.append(f"| {r.build} | {r.mix} | {r.program} | {r.policy} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Thousands of instructions per packet, by the bmv2 functions they were spent in, each with "
        "what it called (callgrind's inclusive counts, same runs as the table above). The parts "
        "before `actions` and `actions` itself add up to `all`; `rest` is receiving, queueing and "
        "sending packets, threads and the PHV pool. Inside `actions`: `expressions` evaluates the "
        "primitives' arguments (each operator a GMP operation), `field writes` stores values into "
        "fields, `setValid` sets a header's fields to zero as it is made valid, and the register "
        "reads and writes (a read includes writing the field it reads into).",
    ]
    return "\n".join(lines)


def render(
    rows: list[Instructions],
    n_flows: int,
    n_packets: int = N_PACKETS,
    rate_pps: float = RATE_PPS,
    yardstick: str = "thinning_floor",
) -> str:
    """Instructions per packet of every configuration, a column group per build: thousands, and
    the ratios to the yardstick and to forward_only on the same build and mix; with two builds or
    more, each one's count over the first's."""
    builds = list(dict.fromkeys(r.build for r in rows))
    by_key = {(r.build, r.mix, r.program, r.policy): r for r in rows}
    floor = {(r.build, r.mix): r.per_packet for r in rows if r.program == yardstick}
    base = {(r.build, r.mix): r.per_packet for r in rows if r.program == "forward_only"}
    header = ["mix", "program", "policy"]
    for build in builds:
        name = build or "this build"
        header += [f"{name}: thousands", f"{name}: ratio to {yardstick}", f"{name}: ratio to forward_only"]
    header += [f"{b} ÷ {builds[0]}" for b in builds[1:]]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]

    def ratio(value: float, reference: float | None) -> str:
        return f"{value / reference:.2f}" if reference else "-"

    for mix, program, policy in dict.fromkeys((r.mix, r.program, r.policy) for r in rows):
        cells = [mix, program, policy]
        for build in builds:
            r = by_key.get((build, mix, program, policy))
            if r is None:
                cells += ["-", "-", "-"]
                continue
            cells += [
                f"{r.per_packet / 1000:.1f}",
                ratio(r.per_packet, floor.get((build, mix))),
                ratio(r.per_packet, base.get((build, mix))),
            ]
        first = by_key.get((builds[0], mix, program, policy))
        for build in builds[1:]:
            r = by_key.get((build, mix, program, policy))
            cells.append(ratio(r.per_packet, first.per_packet if first else None) if r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    subtracted = max((r.phv_subtracted for r in rows), default=0.0)
    lines += [
        "",
        f"callgrind (valgrind's instruction count, `Ir`) of the switch process over {n_packets} packets "
        f"at {rate_pps:g} packets/s after a warm-up of {WARMUP_ROUNDS_PER_FLOW} rounds of the mix per "
        f"flow, {n_flows} flows; PHV objects built while callgrind held packets back subtracted "
        f"(at most {subtracted / 1000:.1f} thousand per packet). Deterministic within about 2 %: "
        f"one run per configuration and build; {yardstick} runs every_d d=8.",
    ]
    return "\n".join(lines)
