"""make validate: the medium model against ns-3 3.37, row by row, into docs/testbed.md.

Per preset (802.11b/g/n/ac): saturated UDP throughput with 1 and 3 stations sending to the AP,
and TACK Fig. 13's "ideal goodput" (the AP sends 1518-byte frames to one station, which answers
every L frames with one 64-byte frame; L = 1, 2, 4, 8, 16, and TACK's point: the frames one
RTTmin / beta carries at 80 ms). ns-3 runs build/wifi_validation
(validation/ns3/wifi_validation.cc); the model runs linkem --virtual on the same workload. Both
count UDP payload (1472 bytes per data frame). Frame sizes as linkem sees them: 1514 and 60 bytes
(Ethernet without FCS).

    python validation/run.py [--write-docs] [--only 802.11g] [--ns3 build/wifi_validation]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from ackwise.topologies.medium_model import VirtualMedium
from ackwise.topologies.wireless import CHAIN_PRESET, PRESETS, WirelessPreset

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "testbed.md"
BEGIN, END = "<!-- validation:begin -->", "<!-- validation:end -->"
DATA_FRAME_BYTES = 1514  # 1500-byte IP packet; 1518 bytes on Ethernet with the FCS
PAYLOAD_BYTES = 1472  # its UDP payload
REPLY_FRAME_BYTES = 60  # 64 bytes with the FCS: 18 bytes of UDP payload
EVERY = (1, 2, 4, 8, 16)
# TACK's point of Fig. 13: f = min(bw / (L MSS), beta / RTTmin) with the paper's beta = 4 and
# L = 2 at RTTmin 80 ms (its Fig. 13 path), as frames per answer at the medium's UDP rate.
TACK_BETA, TACK_L, TACK_RTT_MIN_S = 4, 2, 0.080
# Per-transmitter queue, packets, on both sides: ns-3's default MAC queue (WifiMacQueue MaxSize
# 500p). With L = 1 on 802.11ac the station gets 64 frames per A-MPDU and owes 64 answers each
# time; a shorter queue would drop answers and flatter the goodput.
QUEUE_PKTS = 500
# The WLAN presets; the chain's (802.11b at 1 Mbit/s with RTS/CTS) has its own run, chain.py.
WLAN_PRESETS = [name for name in PRESETS if name != CHAIN_PRESET]
TOLERANCE = 0.10  # the acceptance: every row within 10 %
# Simulated seconds: enough for the throughput to settle to well under 1 % (thousands of PPDUs
# per run), short enough for the whole table to take minutes.
NS3_WARMUP_S, NS3_MEASURE_S = 1.0, 3.0
MODEL_WARMUP_S, MODEL_SECONDS = 1.0, 21.0


@dataclass
class Row:
    preset: str
    workload: str
    ns3_mbps: float
    model_mbps: float
    ns3: dict[str, object]

    @property
    def error(self) -> float:
        return self.model_mbps / self.ns3_mbps - 1


def ns3_args(p: WirelessPreset) -> list[str]:
    """The table's values that ns-3 lets a user set (it computes PPDU durations itself)."""
    args = [f"--preset={p.name}", f"--slot_us={p.slot_us:g}", f"--sifs_us={p.sifs_us:g}"]
    args += [f"--cw_min={p.cw_min}", f"--cw_max={p.cw_max}", f"--aifsn={p.aifsn}", f"--queue={QUEUE_PKTS}"]
    if p.aggregate:
        args.append(f"--max_ampdu={p.max_ampdu_bytes}")
    return args


def run_ns3(binary: Path, p: WirelessPreset, extra: list[str]) -> dict[str, object]:
    cmd = [str(binary), *ns3_args(p), f"--warmup={NS3_WARMUP_S}", f"--measure={NS3_MEASURE_S}", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def model_saturate(p: WirelessPreset, stations: int) -> float:
    names = [f"sta{i}" for i in range(1, stations + 1)]
    vm = VirtualMedium(p, limit_pkts=QUEUE_PKTS).stations("ap", *names)
    for name in names:
        vm.saturate(name, "ap", DATA_FRAME_BYTES)
    r = vm.run(MODEL_SECONDS, MODEL_WARMUP_S)
    return sum(r.throughput_bps(name, "ap", PAYLOAD_BYTES) for name in names) / 1e6


def model_ideal(p: WirelessPreset, every: int) -> float:
    vm = VirtualMedium(p, limit_pkts=QUEUE_PKTS).stations("ap", "sta1")
    vm.saturate("ap", "sta1", DATA_FRAME_BYTES).reply("sta1", "ap", every, REPLY_FRAME_BYTES)
    r = vm.run(MODEL_SECONDS, MODEL_WARMUP_S)
    return r.throughput_bps("ap", "sta1", PAYLOAD_BYTES) / 1e6


def _progress(row: Row) -> None:
    print(
        f"{row.preset} {row.workload}: ns-3 {row.ns3_mbps:.2f}, model {row.model_mbps:.2f} Mbit/s "
        f"({row.error:+.1%})",
        file=sys.stderr,
    )


def tack_every(udp_mbps: float, rtt_min_s: float = TACK_RTT_MIN_S) -> int:
    """TACK's answer rate as frames per answer: the frames one RTTmin / beta carries at the medium's
    UDP rate, and never fewer than L (the rule's bandwidth bound)."""
    frames_per_s = udp_mbps * 1e6 / (8 * PAYLOAD_BYTES)
    return max(TACK_L, round(frames_per_s * rtt_min_s / TACK_BETA))


@dataclass
class Fig13:
    """TACK Fig. 13 on one side (ns-3 or the model): ideal goodput over L = 1..16 and TACK's
    point, the UDP baseline (no answers) as ceiling."""

    preset: str
    side: str
    every: list[int]  # L = EVERY, then TACK's point (which may fall between them: 802.11b's 10)
    goodputs: list[float]
    udp_mbps: float

    @property
    def non_decreasing(self) -> bool:
        """Over L in increasing order, TACK's point where its L falls."""
        ordered = [g for _, g in sorted(zip(self.every, self.goodputs, strict=True))]
        return all(b >= a for a, b in pairwise(ordered))

    @property
    def tack_to_udp(self) -> float:
        return self.goodputs[-1] / self.udp_mbps


def fig13(rows: list[Row]) -> list[Fig13]:
    """Fig. 13's checks per preset and side from the rows (ideal goodput rows in EVERY's order,
    then TACK's; the 1-station saturated row as the UDP baseline: one sender, no answers)."""
    out = []
    for name in dict.fromkeys(r.preset for r in rows):
        mine = [r for r in rows if r.preset == name]
        ideal = [r for r in mine if r.workload.startswith("ideal goodput")]
        (udp,) = [r for r in mine if r.workload == "saturated UDP, 1 sta"]
        every = [int(r.workload.rsplit("L=", 1)[1].rstrip(")")) for r in ideal]
        for side in ("ns-3", "model"):
            pick = (lambda r: r.ns3_mbps) if side == "ns-3" else (lambda r: r.model_mbps)
            out.append(Fig13(name, side, every, [pick(r) for r in ideal], pick(udp)))
    return out


def run_rows(binary: Path, presets: list[str]) -> list[Row]:
    rows = []
    for name in presets:
        p = PRESETS[name]
        for stations in (1, 3):
            ns3 = run_ns3(binary, p, ["--mode=saturate", f"--stations={stations}"])
            rows.append(
                Row(
                    name,
                    f"saturated UDP, {stations} sta",
                    float(ns3["throughput_mbps"]),  # type: ignore[arg-type]
                    model_saturate(p, stations),
                    ns3,
                )
            )
            _progress(rows[-1])
        (udp,) = [r for r in rows if r.preset == name and r.workload == "saturated UDP, 1 sta"]
        tack = tack_every(udp.ns3_mbps)  # from ns-3's 1-station rate: the same L on both sides
        for every in (*EVERY, tack):
            ns3 = run_ns3(binary, p, ["--mode=ideal", f"--every={every}"])
            label = f"L={every}" if every in EVERY else f"TACK at 80 ms (L={every})"
            rows.append(
                Row(
                    name,
                    f"ideal goodput, {label}",
                    float(ns3["throughput_mbps"]),  # type: ignore[arg-type]
                    model_ideal(p, every),
                    ns3,
                )
            )
            _progress(rows[-1])
    return rows


def duration_checks(rows: list[Row]) -> list[str]:
    """The PPDU durations ns-3 used against the table's, from the 1-station saturated runs."""
    lines = []
    for row in rows:
        if not row.workload.startswith("saturated UDP, 1"):
            continue
        p = PRESETS[row.preset]
        d = row.ns3.get("durations_us", {})
        assert isinstance(d, dict)
        if p.aggregate:
            size = int(row.ns3["ampdu_bytes"])  # type: ignore[call-overload]
            ours = p.ppdu_us(size)
            theirs = float(row.ns3["ampdu_us"])  # type: ignore[arg-type]
            lines.append(
                f"| {p.name} | A-MPDU of {row.ns3['max_mpdus']} MPDUs, {size} bytes | {ours:.1f} | "
                f"{theirs:.0f} |"
            )
            lines.append(
                f"| {p.name} | Block Ack | {p.block_ack_us:g} | {float(d.get('block_ack', 0)):.0f} |"
            )
        else:
            ours = p.ppdu_us(p.mpdu_bytes(DATA_FRAME_BYTES))
            lines.append(
                f"| {p.name} | data MPDU, {p.mpdu_bytes(DATA_FRAME_BYTES)} bytes | {ours:.1f} | "
                f"{float(d.get('data', 0)):.0f} |"
            )
    return lines


def render(rows: list[Row]) -> str:
    worst = max(abs(r.error) for r in rows)
    outside = [r for r in rows if abs(r.error) > TOLERANCE]
    out = [
        BEGIN,
        "",
        f"Generated by `make validate` (validation/run.py): ns-3 3.37 "
        f"({NS3_MEASURE_S:g} simulated seconds after {NS3_WARMUP_S:g} s of warm-up, one run per row) "
        f"against the model in virtual time ({MODEL_SECONDS - MODEL_WARMUP_S:g} s after "
        f"{MODEL_WARMUP_S:g} s). UDP payload, Mbit/s; error = model / ns-3 - 1.",
        "",
        "| preset | workload | ns-3 Mbit/s | model Mbit/s | error |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        flag = " (outside 10 %)" if abs(r.error) > TOLERANCE else ""
        out.append(
            f"| {r.preset} | {r.workload} | {r.ns3_mbps:.2f} | {r.model_mbps:.2f} | {r.error:+.1%}{flag} |"
        )
    out += [
        "",
        f"Largest error {worst:.1%}; rows outside 10 %: {len(outside)}.",
        "",
        f"TACK Fig. 13 from these rows: ideal goodput over L = 1, 2, 4, 8, 16 and TACK's point "
        f"(beta = {TACK_BETA}, RTTmin {TACK_RTT_MIN_S * 1000:g} ms: one answer per RTTmin / beta, as "
        f"frames at the 1-station UDP rate), against the UDP baseline (1 station, no answers):",
        "",
        "| preset | side | non-decreasing in L | TACK's point / UDP baseline |",
        "| --- | --- | --- | --- |",
        *(
            f"| {f.preset} | {f.side} | {'yes' if f.non_decreasing else 'no'} | {f.tack_to_udp:.1%} |"
            for f in fig13(rows)
        ),
        "",
        "PPDU durations, the table's (wireless.py) against what ns-3 put on the air (ns-3 prints whole "
        "microseconds):",
        "",
        "| preset | PPDU | table us | ns-3 us |",
        "| --- | --- | --- | --- |",
        *duration_checks(rows),
        "",
        END,
    ]
    return "\n".join(out)


def write_docs(text: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the block from ``begin`` to ``end`` in docs/testbed.md with ``text`` (which holds both)."""
    doc = DOC.read_text()
    if begin not in doc or end not in doc:
        raise SystemExit(f"{DOC} has no {begin} ... {end} block to replace: add one where the table goes")
    doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: text, doc, flags=re.S)
    DOC.write_text(doc)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ns3", type=Path, default=REPO / "build" / "wifi_validation")
    parser.add_argument("--only", action="append", choices=WLAN_PRESETS, help="presets to run (default: all)")
    parser.add_argument("--write-docs", action="store_true", help="replace the table in docs/testbed.md")
    args = parser.parse_args()
    if not args.ns3.exists():
        raise SystemExit(f"{args.ns3} missing: run 'make validate' (it builds it against ns-3's libraries)")
    rows = run_rows(args.ns3, args.only or WLAN_PRESETS)
    text = render(rows)
    print(text)
    if args.write_docs:
        write_docs(text)
        print(f"wrote the table into {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
