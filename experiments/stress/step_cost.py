"""What one bmv2 step costs: CPU time per packet of simple_switch running small generated P4
programs that differ from a base program in one kind of work only (50 tables, 50 conditions, 50
primitives, 50 register reads, 50 metadata fields nobody uses, the same on 392-bit values, ...). The
difference to the base, divided by 50, is the cost of one unit of that kind on this machine and
this bmv2 build. docs/performance.md explains the thinning
stage's cost with these figures.

The switch's CPU time is read from /proc/PID/task/*/schedstat (all its threads, in nanoseconds)
around a paced send well below its capacity, so the figure does not depend on how fast the sender is.

    python -m ackwise.experiments.stress.step_cost [--packets 3000] [--rate 1500]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.bmv2.toolchain import P4C_BMV2, find_tool
from ackwise.experiments.stress.dataplane import cpu_s
from ackwise.netdev import add_veth, delete_link
from ackwise.processes import run_until_stopped

UNITS = 50  # of the measured kind per packet

_HEAD = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { %(fields)s bit<32> a; bit<32> b; bit<32> k1; bit<32> k2; bit<16> k3; bit<16> k4; }
parser P(packet_in p, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply {} }
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control CC(inout headers_t hdr, inout meta_t m) { apply {} }
control D(packet_out p, in headers_t hdr) { apply { p.emit(hdr.eth); } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd() { sm.egress_spec = sm.ingress_port ^ 3; }
%(body)s
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@dataclass(frozen=True)
class Variant:
    name: str
    what: str  # one unit of it, as the docs say it
    body: str
    fields: str = ""


def _slices(name: str, source_bits: int, step: int, n: int) -> Variant:
    """n primitives, each a 32-bit field cut out of one source_bits-wide field, at offsets step apart
    (wrapping inside the field)."""
    low = [i * step % (source_bits - 31) for i in range(n)]
    return Variant(
        name,
        f"primitive: a 32-bit field cut out of a {source_bits}-bit one",
        "action work() { "
        + " ".join(f"m.s{i} = m.x[{lo + 31}:{lo}];" for i, lo in enumerate(low))
        + " } apply { fwd(); work(); }",
        f"bit<{source_bits}> x; " + " ".join(f"bit<32> s{i};" for i in range(n)),
    )


def _register_reads(name: str, cell_bits: int, n: int) -> Variant:
    """n register reads of cell_bits-wide cells into n fields, which one write then uses (so that
    p4c keeps the reads)."""
    return Variant(
        name,
        f"register read ({cell_bits}-bit cell)",
        f"register<bit<{cell_bits}>>(1024) r; action work() {{ "
        + " ".join(f"r.read(m.v{i}, {i});" for i in range(n))
        + " r.write(1000, "
        + " ^ ".join(f"m.v{i}" for i in range(n))
        + "); } apply { fwd(); work(); }",
        " ".join(f"bit<{cell_bits}> v{i};" for i in range(n)),
    )


def _variants(n: int = UNITS) -> list[Variant]:
    r = range(n)
    keys = "m.k1: exact; m.k2: exact; m.k3: exact; m.k4: exact;"
    return [
        Variant("base", "-", "apply { fwd(); }"),
        Variant(
            "primitives",
            "primitive (one assignment in an action)",
            "action work() { " + " ".join(f"m.a = m.a + {i};" for i in r) + " } apply { fwd(); work(); }",
        ),
        Variant(
            "expression",
            "operator inside one expression",
            "action work() { m.a = " + " + ".join(f"(m.b ^ {i})" for i in r) + "; } apply { fwd(); work(); }",
        ),
        Variant(
            "expression_wide",
            "operator inside one expression, on 392-bit values (the thinning record's width)",
            "action work() { m.c = " + " + ".join(f"(m.y ^ {i})" for i in r) + "; } apply { fwd(); work(); }",
            "bit<392> c; bit<392> y;",
        ),
        _slices("slices_64", 64, 1, n),
        _slices("slices_wide", 392, 7, n),
        Variant(
            "metadata_fields",
            "metadata field (32 bits, unused: bmv2 resets every metadata field of every packet)",
            "apply { fwd(); }",
            " ".join(f"bit<32> u{i};" for i in r),
        ),
        Variant(
            "actions",
            "step: an action outside a table (p4c's keyless table), one primitive",
            " ".join(f"action a{i}() {{ m.a = m.a + {i}; }}" for i in r)
            + " apply { fwd(); "
            + " ".join(f"a{i}();" for i in r)
            + " }",
        ),
        Variant(
            "conditions",
            "condition (false: its branch not taken)",
            "action z() { m.b = 1; } apply { fwd(); "
            + " ".join(f"if (m.a == {i + 1}) {{ z(); }}" for i in r)
            + " }",
        ),
        _register_reads("register_reads", 64, n),
        _register_reads("register_reads_wide", 392, n),
        Variant(
            "register_writes",
            "register write (64-bit cell)",
            "register<bit<64>>(1024) r; action work() { "
            + " ".join(f"r.write({i}, (bit<64>)m.a + {i});" for i in r)
            + " } apply { fwd(); work(); }",
        ),
        Variant(
            "tables_1_key",
            "table lookup, exact on one field, miss",
            " ".join(
                f"table t{i} {{ key = {{ m.k1: exact; }} actions = {{ NoAction; }} size = 64; }}" for i in r
            )
            + " apply { fwd(); "
            + " ".join(f"t{i}.apply();" for i in r)
            + " }",
        ),
        Variant(
            "tables_4_keys",
            "table lookup, exact on four fields, miss",
            " ".join(f"table t{i} {{ key = {{ {keys} }} actions = {{ NoAction; }} size = 64; }}" for i in r)
            + " apply { fwd(); "
            + " ".join(f"t{i}.apply();" for i in r)
            + " }",
        ),
    ]


def cpu_us_per_packet(
    program_json: Path, ifaces: tuple[tuple[str, str], tuple[str, str]], packets: int, rate: float
) -> float:
    spec = SwitchSpec(
        program_json=str(program_json),
        ports={1: ifaces[0][0], 2: ifaces[1][0]},
        thrift_port=9597,
        enable_swap=False,
    )
    running = start_switch(spec)
    try:
        frame = bytes.fromhex("0000000002010000000001010800") + bytes(50)
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
            s.bind((ifaces[0][1], 0))
            time.sleep(0.3)
            before = cpu_s(running.pid)
            start = time.monotonic()
            for i in range(0, packets, 50):
                for _ in range(50):
                    s.send(frame)
                ahead = start + (i + 50) / rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            time.sleep(0.5)
            return (cpu_s(running.pid) - before) / packets * 1e6
    finally:
        running.stop()


def run(packets: int, rate: float, repeats: int) -> list[tuple[Variant, float, float]]:
    """(variant, median CPU us per packet, us per unit over base) for each variant."""
    tag = f"sc{os.getpid() % 10000}"
    ifaces = ((f"{tag}s1", f"{tag}t1"), (f"{tag}s2", f"{tag}t2"))
    variants = _variants()
    with tempfile.TemporaryDirectory(prefix="ackwise-step-cost-") as tmp:
        jsons = {}
        for v in variants:
            source = Path(tmp) / f"{v.name}.p4"
            source.write_text(_HEAD % {"fields": v.fields, "body": v.body})
            jsons[v.name] = Path(tmp) / f"{v.name}.json"
            subprocess.run([find_tool(P4C_BMV2), str(source), "-o", str(jsons[v.name])], check=True)
        try:
            for sw, peer in ifaces:
                add_veth(sw, peer, offloads=True)  # as make bench
            samples: dict[str, list[float]] = {v.name: [] for v in variants}
            for rep in range(repeats):
                for v in variants:
                    samples[v.name].append(cpu_us_per_packet(jsons[v.name], ifaces, packets, rate))
                    print(
                        f"  [{rep + 1}/{repeats}] {v.name:<16} {samples[v.name][-1]:7.1f} us/packet",
                        flush=True,
                    )
        finally:
            for sw, _ in ifaces:
                delete_link(sw)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return [(v, medians[v.name], (medians[v.name] - medians["base"]) / UNITS) for v in variants]


def render(rows: list[tuple[Variant, float, float]], packets: int, rate: float, repeats: int) -> str:
    lines = [
        "| program | one unit is | CPU us per packet | us per unit |",
        "| --- | --- | --- | --- |",
    ]
    for v, per_packet, per_unit in rows:
        unit = "-" if v.name == "base" else f"{per_unit:.2f}"
        lines.append(f"| {v.name} | {v.what} | {per_packet:.1f} | {unit} |")
    lines.append(
        f"\n{UNITS} units per packet; {packets} packets at {rate:g} packets/s per program, median of "
        f"{repeats} runs; simple_switch {find_tool('simple_switch')}."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_until_stopped("step_cost", lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--packets", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=1500.0, help="packets/s, below what the switch handles")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("step_cost creates veth interfaces: run it as root", file=sys.stderr)
        return 2
    print(render(run(args.packets, args.rate, args.repeats), args.packets, args.rate, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
