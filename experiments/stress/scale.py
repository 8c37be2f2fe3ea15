"""Many concurrent flows through ack_switch's flow records (FLOW_SLOTS): collisions and reclamation
against the birthday bound, and that no flow is ever thinned on another flow's record.

    python -m ackwise.experiments.stress.scale [--flows 10000] [--reclaim-flows 2000] [--json FILE]

Run as root; it makes its own network namespace with one simple_switch (as experiments/stress/fuzz.py).

Phase 1: ``--flows`` flows, one after the other, each three data segments and three pure ACKs
(every_d d=2, records kept 10 minutes). A flow owns the record of its slot (crc32 of its key, the
Python twin ``ackwise.twins.flowkey``) if it is the first to touch that slot; every other flow collides.
For an owner the switch must thin exactly the second ACK (the first ACK of a half-flow and the one
that acknowledges all data are kept); for a colliding flow it must forward all three, untouched:
a thinned ACK of a colliding flow would be a decision taken on another flow's record. Each ACK's
fate is checked, and ack_thinning.stats must count the new records and collisions the twin
predicts. Phase 2: records idle longer than one second may be taken over; ``--reclaim-flows`` new
flows, of distinct slots, must each reclaim a phase-1 record or create one, exactly as the twin
says, and all be owners. Then the time ``ackwise flows``
takes over the full table, and the time of ``read_flows`` against one bulk register read.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import CounterValue, named_cells
from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.bmv2.toolchain import REPO_ROOT, compiled_program
from ackwise.experiments.stress.dataplane import (
    DOWNLINK,
    MARK,
    UPLINK,
    Wire,
    configure,
    frame,
    marker,
    rerun_inside_netns,
    ts_option,
)
from ackwise.features.thinning import read_flows, set_reclaim_idle_ms
from ackwise.netdev import add_veth
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import (
    COUNTER_ACK_THINNING_STATS,
    FLOW_SLOTS,
    REGISTER_ACK_THINNING_SLOT,
    ThinningStat,
)
from ackwise.twins.packets import ipv4_header, tcp_header

SEGMENT = 200
THRIFT_PORT = 9390  # in the run's own network namespace
BATCH = 8  # flows per burst: 48 packets, within what bmv2's port buffers take at once


@dataclass
class Flow:
    index: int
    phase: int
    src: str
    sport: int

    @property
    def key(self) -> FlowKey:
        return FlowKey.of(self.src, "10.0.2.2", self.sport, 5001)[0]

    def packets(self, ident: int) -> list[tuple[int, int, bytes]]:
        """(port, id, frame): three data segments, then ACKs of one, two and three of them."""
        out = []
        for k in range(3):
            tcp = tcp_header(
                self.src,
                "10.0.2.2",
                self.sport,
                5001,
                1000 + k * SEGMENT,
                5000,
                0x10,
                65535,
                ts_option(100 + k, 50),
                bytes(SEGMENT),
            )
            out.append(
                (
                    UPLINK,
                    ident,
                    frame(UPLINK, bytes(ipv4_header(self.src, "10.0.2.2", len(tcp), ident) + tcp)),
                )
            )
            ident += 1
        for k in range(1, 4):
            tcp = tcp_header(
                "10.0.2.2",
                self.src,
                5001,
                self.sport,
                5000,
                1000 + k * SEGMENT,
                0x10,
                65535,
                ts_option(60 + k, 100 + k),
                b"",
            )
            out.append(
                (
                    DOWNLINK,
                    ident,
                    frame(DOWNLINK, bytes(ipv4_header("10.0.2.2", self.src, len(tcp), ident) + tcp)),
                )
            )
            ident += 1
        return out


def make_flows(n: int, phase: int, rng: random.Random | None) -> list[Flow]:
    """``n`` distinct flows from 10.0.1.x to 10.0.2.2:5001: sequential addresses and ports, or
    drawn at random with ``rng`` (crc32 spreads sequential keys better than random ones)."""
    flows, seen = [], set()
    i = 0
    while len(flows) < n:
        if rng is None:
            src, sport = f"10.0.1.{2 + i % 250}", 10000 + i // 250 + 1000 * phase
        else:
            src, sport = f"10.0.1.{rng.randrange(2, 252)}", rng.randrange(1024, 65536)
        i += 1
        if (src, sport) not in seen:
            seen.add((src, sport))
            flows.append(Flow(len(flows), phase, src, sport))
    return flows


def expected_birthday(flows: int, slots: int = FLOW_SLOTS) -> float:
    """Expected slots occupied by ``flows`` random keys: slots * (1 - (1 - 1/slots)^flows)."""
    return slots * (1 - (1 - 1 / slots) ** flows)


def phase1_report(
    stats: Sequence[CounterValue], flows: int, owners: set[int], slots: set[int], seconds: float
) -> dict[str, Any]:
    """Phase 1 as ack_thinning.stats counted it, against the twin's expectations; every cell of the
    counter (as many as the program has) by name under "stats"."""
    return {
        "seconds": round(seconds, 1),
        "records_expected": len(slots),
        "records_birthday_bound": round(expected_birthday(flows), 1),
        "new_records": stats[ThinningStat.NEW_FLOWS].packets,
        "collision_packets": stats[ThinningStat.COLLISIONS].packets,
        "collision_packets_expected": 6 * (flows - len(owners)),
        "acks_thinned": stats[ThinningStat.ACKS_THINNED].packets,
        "stats": named_cells(stats, ThinningStat),
    }


def phase2_report(
    stats: Sequence[CounterValue], flows: int, owners: set[int], slots: set[int], phase1_slots: set[int]
) -> dict[str, Any]:
    """Phase 2 (the counter reset after phase 1) likewise: reclaimed records and new ones."""
    return {
        "reclaimed": stats[ThinningStat.RECLAIMED].packets,
        "reclaimed_expected": len(slots & phase1_slots),
        "new_records": stats[ThinningStat.NEW_FLOWS].packets,
        "new_records_expected": len(slots - phase1_slots),
        "collision_packets": stats[ThinningStat.COLLISIONS].packets,
        "collision_packets_expected": 6 * (flows - len(owners)),
        "stats": named_cells(stats, ThinningStat),
    }


def run_phase(wire: Wire, flows: list[Flow], owners: set[int]) -> dict[str, Any]:
    """Send the flows; return the fates of their ACKs, checked against ownership."""
    fates: dict[str, Any] = {"owner_ok": 0, "collided_ok": 0, "violations": []}
    for start in range(0, len(flows), BATCH):
        batch = flows[start : start + BATCH]
        packets = {flow.index: flow.packets(1 + 6 * n) for n, flow in enumerate(batch)}
        # The data first, all of it through the switch, then the ACKs: bmv2 takes one packet from
        # each ready port in turn, so ACKs sent right behind their data could overtake it.
        for half, port in ((slice(0, 3), UPLINK), (slice(3, 6), DOWNLINK)):
            for flow in batch:
                for _, _, f in packets[flow.index][half]:
                    wire.send(port, f)
            wire.send(port, marker(port, 2 * start + (port == DOWNLINK)))
            out_ids = collect(wire, port, 2 * start + (port == DOWNLINK))
        for flow in batch:
            came = {n + 1 for n, (_, pid, _) in enumerate(packets[flow.index][3:]) if pid in out_ids}
            owner = flow.index in owners
            if owner and came == {1, 3}:
                fates["owner_ok"] += 1
            elif not owner and came == {1, 2, 3}:
                fates["collided_ok"] += 1
            elif len(fates["violations"]) < 50:
                role = "owner" if owner else "collides"
                fates["violations"].append(
                    f"flow {flow.phase}/{flow.index} (slot {flow.key.slot}, {role}): ACKs out {sorted(came)}"
                )
    return fates


def collect(wire: Wire, port: int, burst: int) -> set[int]:
    """The IPv4 ids that came out until the marker sent on ``port`` did."""
    ids: set[int] = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for _, data in wire.take():
            if MARK in data:
                if data.endswith(burst.to_bytes(4, "big")):
                    return ids
            elif len(data) >= 20:
                ids.add(int.from_bytes(data[18:20], "big"))
        time.sleep(0.002)
    raise RuntimeError(f"burst {burst} (port {port}): the marker did not come out within 10 s")


def first_touch(flows: list[Flow], taken: set[int]) -> tuple[set[int], set[int]]:
    """Which flows take a slot (first to touch a slot not in ``taken``), and the slots they take."""
    owners, slots = set(), set()
    for flow in flows:
        slot = flow.key.slot
        if slot not in taken and slot not in slots:
            owners.add(flow.index)
            slots.add(slot)
    return owners, slots


def inside(args: argparse.Namespace) -> int:
    ifaces = {UPLINK: "scs1", DOWNLINK: "scs2"}
    for port, name in ifaces.items():
        add_veth(name, f"sct{port}")
    wire = Wire({p: f"sct{p}" for p in ifaces})
    spec = SwitchSpec(program_json=str(compiled_program("ack_switch")), ports=ifaces, thrift_port=THRIFT_PORT)
    switch = start_switch(spec)
    result: dict[str, Any] = {"flows": args.flows, "random_keys": args.random_keys}
    try:
        client = switch.client()
        result["slots"] = client.program.registers[REGISTER_ACK_THINNING_SLOT].size
        configure(client, "every_d")
        set_reclaim_idle_ms(client, 600_000)
        time.sleep(0.2)
        wire.take()

        rng = random.Random(args.seed) if args.random_keys else None
        phase1 = make_flows(args.flows, 0, rng)
        owners1, slots1 = first_touch(phase1, set())
        started = time.monotonic()
        fates1 = run_phase(wire, phase1, owners1)
        stats = client.counter_read_all(COUNTER_ACK_THINNING_STATS)
        seconds = time.monotonic() - started
        result["phase1"] = phase1_report(stats, args.flows, owners1, slots1, seconds) | fates1

        # Phase 2: every record idle more than a second may be taken over.
        set_reclaim_idle_ms(client, 1000)
        time.sleep(1.5)
        client.counter_reset(COUNTER_ACK_THINNING_STATS)
        # Flows of distinct slots: a phase-2 record may itself be idle a second before the phase
        # ends, and another phase-2 flow on its slot would then reclaim it, at a time no twin knows.
        phase1_keys = {(f.src, f.sport) for f in phase1}
        phase2, used = [], set()
        for flow in make_flows(10 * args.reclaim_flows, 1, rng):
            if (flow.src, flow.sport) in phase1_keys or flow.key.slot in used:
                continue
            if len(phase2) < args.reclaim_flows:
                used.add(flow.key.slot)
                phase2.append(Flow(len(phase2), 1, flow.src, flow.sport))
        owners2, slots2 = first_touch(phase2, set())  # every slot is free or reclaimable now
        fates2 = run_phase(wire, phase2, owners2)
        stats = client.counter_read_all(COUNTER_ACK_THINNING_STATS)
        result["phase2"] = phase2_report(stats, args.reclaim_flows, owners2, slots2, slots1) | fates2

        # ackwise flows over the full table; read_flows against one bulk read of the program's
        # largest register (no register named here: the layout is the thinning module's business).
        env = dict(os.environ, ACKWISE_STATE_DIR=str(Path(args.json).parent / "scale-state"))
        cli = []
        for _ in range(3):
            t0 = time.monotonic()
            out = subprocess.run(
                [sys.executable, "-m", "ackwise", "--thrift-port", str(THRIFT_PORT), "--json", "flows"],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
            cli.append(time.monotonic() - t0)
        rows = len(json.loads(out))
        biggest = max(client.program.registers.values(), key=lambda r: r.size)
        reads, bulk = [], []
        for _ in range(5):
            t0 = time.monotonic()
            records = read_flows(client)
            reads.append(time.monotonic() - t0)
            t0 = time.monotonic()
            client.register_read_all(biggest.name)
            bulk.append(time.monotonic() - t0)
        result["flows_command"] = {
            "records": len(records),
            "rows": rows,
            "cli_seconds_median": round(statistics.median(cli), 3),
            "read_flows_seconds_median": round(statistics.median(reads), 3),
            "bulk_read_seconds_median": round(statistics.median(bulk), 4),
            "bulk_read_cells": biggest.size,
            "ratio_read_flows_to_one_bulk_read": round(statistics.median(reads) / statistics.median(bulk), 1),
        }
        client.close()
    finally:
        switch.stop()
        wire.close()
    Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, default=10_000)
    parser.add_argument("--reclaim-flows", type=int, default=2000)
    parser.add_argument(
        "--random-keys", action="store_true", help="random addresses and ports, not sequential"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=str(REPO_ROOT / "build" / "scale.json"))
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        return inside(args)
    rc = rerun_inside_netns(
        "scale",
        "ackwise.experiments.stress.scale",
        [
            "--flows",
            str(args.flows),
            "--reclaim-flows",
            str(args.reclaim_flows),
            "--seed",
            str(args.seed),
            *(["--random-keys"] if args.random_keys else []),
            "--json",
            args.json,
        ],
    )
    if rc == 0:
        print(Path(args.json).read_text())
    return rc


if __name__ == "__main__":
    sys.exit(main())
