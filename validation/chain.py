"""make validate (its chain part): the medium model's multihop chain against ns-3 3.37.

Saturated UDP from the first node of a chain to the last (Altman and Jiménez's chain: nodes
200 m apart, decode within 250 m, carrier sense and interference within 550 m, 802.11 DSSS at
1 Mbit/s with RTS/CTS before every frame, 1040-byte IP packets, static routes), for chains of 2
(one hop: the reference), 3, 5 and 9 nodes. ns-3 runs build/chain_validation
(validation/ns3/chain_validation.cc), the model linkem --virtual with the same geometry
(wireless.CHAIN_RANGES) and queue. Several seeds per row on both sides: the long chains' hidden
terminals make single runs spread by several per cent.

A second table puts a two-way load on the chain (issue 38): 1040-byte UDP packets at a set rate
from the first node, each echoed back by the last (chain_validation --mode=echo; the model's
offer and reply rules), for 4, 5 and 9 nodes at 8, 15 and 25 packets/s. Per row the fraction of
the echoes that come back, and data-PPDU failures (a data frame not received, or its ACK lost:
ns-3's MacTxDataFailed; the model's collided PPDUs and lost responses) per data PPDU sent. These
are where hidden terminals show: the model without capture lost 44 % of its data frames on 4
nodes at 25 packets/s where ns-3 lost almost none.

The spatial-reuse figure of a row: end-to-end packets per second x hops / one hop's packets per
second, the mean number of hops carrying a frame at once (1 in one collision domain; Fu et al.'s
bound for an ideal chain is 1/4 of the nodes).

    python validation/chain.py [--write-docs] [--ns3 build/chain_validation]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

from run import REPO, write_docs

from ackwise.topologies.medium_model import VirtualMedium
from ackwise.topologies.wireless import CHAIN_PRESET, preset

BEGIN, END = "<!-- chain-validation:begin -->", "<!-- chain-validation:end -->"
ECHO_BEGIN, ECHO_END = "<!-- chain-echo-validation:begin -->", "<!-- chain-echo-validation:end -->"
NODES = (2, 3, 5, 9)  # 2 nodes: one hop, the spatial-reuse figure's reference; the 3, 5, 9
FRAME_BYTES = 1054  # Ethernet frame of a 1040-byte IP packet (the paper's), as linkem sees it
QUEUE_PKTS = 50  # per node, both sides (chain_validation.cc --queue)
SEEDS = (1, 2, 3)
WARMUP_S, MEASURE_S = 5.0, 60.0  # both sides; a 9-node chain carries about 750 packets a run
TOLERANCE = 0.15  # the acceptance: every row within 15 % (or explained)
ECHO_NODES = (4, 5, 9)  # 4: the smallest chain with a hidden terminal (n3 at n1)
ECHO_RATES = (8.0, 15.0, 25.0)  # packets/s each way: below, near and above what 4 nodes carry
# Echo rows: the fraction back within 0.10 and the data failures within 3 points of the data
# PPDUs, model against ns-3 (means over the seeds); before issue 38 the 4-node 25 pkt/s row was
# 0.22 against 0.56 back and 45 % against 2.4 % failed.
ECHO_BACK_TOLERANCE, ECHO_FAILED_TOLERANCE = 0.10, 0.03


@dataclass
class Row:
    nodes: int
    ns3_pps: list[float]
    model_pps: list[float]

    @property
    def hops(self) -> int:
        return self.nodes - 1

    @property
    def error(self) -> float:
        return mean(self.model_pps) / mean(self.ns3_pps) - 1


@dataclass
class EchoRun:
    back: float  # echoes received / sent, over the measurement
    data_frames: int
    data_failed: int

    @property
    def failed(self) -> float:
        return self.data_failed / self.data_frames if self.data_frames else 0.0


@dataclass
class EchoRow:
    nodes: int
    rate_pps: float
    ns3: list[EchoRun]
    model: list[EchoRun]

    @staticmethod
    def back(runs: list[EchoRun]) -> float:
        return mean(r.back for r in runs)

    @staticmethod
    def failed(runs: list[EchoRun]) -> float:
        return mean(r.failed for r in runs)

    @property
    def outside(self) -> bool:
        return (
            abs(self.back(self.model) - self.back(self.ns3)) > ECHO_BACK_TOLERANCE
            or abs(self.failed(self.model) - self.failed(self.ns3)) > ECHO_FAILED_TOLERANCE
        )


def ns3_run(binary: Path, args: list[str]) -> dict[str, float]:
    cmd = [str(binary), *args, f"--queue={QUEUE_PKTS}", f"--warmup={WARMUP_S:g}", f"--measure={MEASURE_S:g}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-2000:]}")
    doc: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return doc


def ns3_echo(binary: Path, nodes: int, rate_pps: float, seed: int) -> EchoRun:
    o = ns3_run(binary, ["--mode=echo", f"--echo_pps={rate_pps:g}", f"--nodes={nodes}", f"--seed={seed}"])
    sent = o["echo_sent_measured"]
    return EchoRun(
        o["echo_received_measured"] / sent if sent else 0.0, int(o["data_frames"]), int(o["mac_data_failed"])
    )


def model_echo(nodes: int, rate_pps: float, seed: int) -> EchoRun:
    vm = VirtualMedium(preset(CHAIN_PRESET), limit_pkts=QUEUE_PKTS, seed=seed)
    names = vm.chain(nodes)
    vm.offer(names[0], names[1], rate_pps, FRAME_BYTES).reply(names[-1], names[-2], 1, FRAME_BYTES)
    r = vm.run(WARMUP_S + MEASURE_S, WARMUP_S)
    stations = [r.station(n) for n in names]
    return EchoRun(
        r.delivered_frames(names[1], names[0]) / (rate_pps * r.window_s),
        sum(int(s["ppdus"]) for s in stations),
        sum(int(s["ppdus_collided"]) + int(s["ppdus_lost"]) + int(s["responses_lost"]) for s in stations),
    )


def run_echo_rows(binary: Path) -> list[EchoRow]:
    rows = []
    for nodes in ECHO_NODES:
        for rate in ECHO_RATES:
            row = EchoRow(
                nodes,
                rate,
                [ns3_echo(binary, nodes, rate, s) for s in SEEDS],
                [model_echo(nodes, rate, s) for s in SEEDS],
            )
            rows.append(row)
            print(
                f"echo {nodes} nodes {rate:g} pkt/s: back ns-3 {row.back(row.ns3):.2f} model "
                f"{row.back(row.model):.2f}; data failed ns-3 {row.failed(row.ns3):.1%} model "
                f"{row.failed(row.model):.1%}",
                file=sys.stderr,
            )
    return rows


def render_echo(rows: list[EchoRow]) -> str:
    worst_back = max(abs(r.back(r.model) - r.back(r.ns3)) for r in rows)
    worst_failed = max(abs(r.failed(r.model) - r.failed(r.ns3)) for r in rows)
    out = [
        ECHO_BEGIN,
        "",
        f"Generated by `make validate` (validation/chain.py): 1040-byte UDP echoes over the chain, first "
        f"node to last and back, ns-3 3.37 against the model in virtual time, {len(SEEDS)} seeds each, "
        f"{MEASURE_S:g} s measured after {WARMUP_S:g} s. Back: echoes received over echoes sent in the "
        f"measurement; data failed: data PPDUs not received or not acknowledged (ns-3's MacTxDataFailed; "
        f"the model's collided PPDUs and lost ACKs) over data PPDUs sent, over the whole run; means over "
        f"the seeds. Tolerance: back within {ECHO_BACK_TOLERANCE:.2f}, data failed within "
        f"{ECHO_FAILED_TOLERANCE:.0%} of the data PPDUs.",
        "",
        "| nodes | pkt/s each way | back ns-3 / model | data failed ns-3 / model |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        flag = " (outside)" if r.outside else ""
        out.append(
            f"| {r.nodes} | {r.rate_pps:g} | {r.back(r.ns3):.2f} / {r.back(r.model):.2f} | "
            f"{r.failed(r.ns3):.1%} / {r.failed(r.model):.1%}{flag} |"
        )
    out += [
        "",
        f"Largest difference: back {worst_back:.2f}, data failed {worst_failed:.1%}; rows outside the "
        f"tolerance: {sum(r.outside for r in rows)}.",
        "",
        ECHO_END,
    ]
    return "\n".join(out)


def ns3_pps(binary: Path, nodes: int, seed: int) -> float:
    cmd = [
        str(binary),
        "--mode=udp",
        f"--nodes={nodes}",
        f"--queue={QUEUE_PKTS}",
        f"--seed={seed}",
        f"--warmup={WARMUP_S:g}",
        f"--measure={MEASURE_S:g}",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-2000:]}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["pkt_per_s"])


def model_pps(nodes: int, seed: int) -> float:
    vm = VirtualMedium(preset(CHAIN_PRESET), limit_pkts=QUEUE_PKTS, seed=seed)
    names = vm.chain(nodes)
    vm.saturate(names[0], names[1], FRAME_BYTES)
    r = vm.run(WARMUP_S + MEASURE_S, WARMUP_S)
    return r.delivered_frames(names[-2], names[-1]) / r.window_s


def run_rows(binary: Path) -> list[Row]:
    rows = []
    for nodes in NODES:
        row = Row(nodes, [ns3_pps(binary, nodes, s) for s in SEEDS], [model_pps(nodes, s) for s in SEEDS])
        rows.append(row)
        print(
            f"{nodes} nodes: ns-3 {mean(row.ns3_pps):.2f}, model {mean(row.model_pps):.2f} pkt/s "
            f"({row.error:+.1%})",
            file=sys.stderr,
        )
    return rows


def spread(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


def render(rows: list[Row]) -> str:
    one_hop = next(r for r in rows if r.nodes == 2)
    worst = max(abs(r.error) for r in rows)
    outside = [r for r in rows if abs(r.error) > TOLERANCE]
    out = [
        BEGIN,
        "",
        f"Generated by `make validate` (validation/chain.py): saturated UDP over the chain, ns-3 3.37 "
        f"against the model in virtual time, {len(SEEDS)} seeds each, {MEASURE_S:g} s measured after "
        f"{WARMUP_S:g} s. Packets (1040-byte IP) per second received by the last node, the mean over "
        f"the seeds (their range in brackets); error = model / ns-3 - 1; spatial reuse = pkt/s x hops / "
        f"one hop's pkt/s.",
        "",
        "| nodes (hops) | ns-3 pkt/s | model pkt/s | error | spatial reuse ns-3 / model |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        flag = f" (outside {TOLERANCE:.0%})" if abs(r.error) > TOLERANCE else ""
        reuse_ns3 = mean(r.ns3_pps) * r.hops / mean(one_hop.ns3_pps)
        reuse_model = mean(r.model_pps) * r.hops / mean(one_hop.model_pps)
        out.append(
            f"| {r.nodes} ({r.hops}) | {mean(r.ns3_pps):.2f} ({spread(r.ns3_pps)}) | "
            f"{mean(r.model_pps):.2f} ({spread(r.model_pps)}) | {r.error:+.1%}{flag} | "
            f"{reuse_ns3:.2f} / {reuse_model:.2f} |"
        )
    out += ["", f"Largest error {worst:.1%}; rows outside {TOLERANCE:.0%}: {len(outside)}.", "", END]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ns3", type=Path, default=REPO / "build" / "chain_validation")
    parser.add_argument("--write-docs", action="store_true", help="replace the table in docs/testbed.md")
    args = parser.parse_args()
    if not args.ns3.exists():
        raise SystemExit(f"{args.ns3} missing: run 'make validate' (it builds it against ns-3's libraries)")
    text = render(run_rows(args.ns3))
    print(text)
    echo = render_echo(run_echo_rows(args.ns3))
    print(echo)
    if args.write_docs:
        write_docs(text, BEGIN, END)
        write_docs(echo, ECHO_BEGIN, ECHO_END)
        print("wrote the chain tables into docs/testbed.md", file=sys.stderr)


if __name__ == "__main__":
    main()
