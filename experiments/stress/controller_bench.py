"""How long the controller's work takes per interval for many flows: building the samples from
flow records, matching configuration rules, deciding (synthetic records), and, with --switch, the
reads of one interval from a running switch (flow records in bulk, the rules, the ports' queue
counts). The records' cost does not depend on how many flows the switch holds (every register
array is read whole); the per-flow rules' does, so with --switch the bench first writes one
per-flow rule per synthetic flow, as the controller would hold, and removes them at the end.

    python -m ackwise.experiments.stress.controller_bench --flows 4000 --intervals 20
        [--switch localhost:9090]
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ackwise.bmv2.client import SwitchClient
from ackwise.controller.config import ControllerConfig, Rule
from ackwise.controller.decision import AckStream, FlowSample, FlowState, decide, sample_from
from ackwise.controller.loop import RULES_FULL_CHECK_S, SwitchEndpoint
from ackwise.controller.ports import port_loads
from ackwise.features.thinning import (
    FlowRecord,
    HalfFlow,
    count_flow_policies,
    delete_flow_policy,
    list_flow_policies,
    list_policies,
    read_flows,
    set_flow_policy,
)
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.policies import MSS_BYTES, PolicyMatch, PolicyParams
from ackwise.twins.serial import seq_add


def synthetic_records(flows: int) -> list[FlowRecord]:
    """``flows`` flows from 10.1.0.0/16 to 10.2.0.0/16, each with a data and an ACK half."""
    records = []
    for i in range(flows):
        src = str(ipaddress.IPv4Address(0x0A010000 + i))
        dst = str(ipaddress.IPv4Address(0x0A020000 + i))
        key, direction = FlowKey.of(src, dst, 40000 + i % 20000, 5001)
        halves = [HalfFlow(key.endpoint(0)), HalfFlow(key.endpoint(1))]
        data = halves[direction]
        data.data_end = i * 7919
        data.rtt_min_us = 20_000 + i % 50 * 1000
        records.append(FlowRecord(key.slot, key, 0, False, halves))
    return records


def advance(records: Sequence[FlowRecord], step: int) -> None:
    """One interval of traffic: each flow ramps up for a few intervals, then holds its rate."""
    for i, record in enumerate(records):
        for half in record.halves:
            if half.rtt_min_us:
                segments = min(2 ** min(step, 8), 50 + i % 200)
                half.data_segments += segments
                half.data_end = seq_add(half.data_end, segments * MSS_BYTES)
            else:
                half.acks_seen += 10
                half.acks_forwarded += 5
                half.acks_thinned += 5


@dataclass(frozen=True)
class BenchResult:
    flows: int
    intervals: int
    samples_ms: float  # per interval, median
    rules_ms: float
    decide_ms: float
    read_ms: float | None = None  # the reads of one interval from a switch, median; None: no switch
    dump_ms: float | None = None  # one dump of the per-flow rules (loop: once per RULES_FULL_CHECK_S)

    @property
    def work_ms(self) -> float:
        return self.samples_ms + self.rules_ms + self.decide_ms

    @property
    def decide_per_sample(self) -> float:
        return self.decide_ms / self.samples_ms if self.samples_ms else float("inf")


def read_interval(client: SwitchClient) -> None:
    """What the controller reads from a switch every interval (loop.Controller._step_switch): the
    per-flow rules counted, not dumped (the dump is timed apart)."""
    client.time_elapsed_us()
    list_policies(client)
    count_flow_policies(client)
    read_flows(client)
    port_loads(client)


def fill_flow_rules(client: SwitchClient, records: Sequence[FlowRecord]) -> list[int]:
    """One per-flow rule per flow (its ACK stream: the receiver's ACKs), as the controller holds
    them at that many flows; their handles."""
    tracking = PolicyParams.parse("every_d", ["d=1"])
    handles = []
    for record in records:
        data = next(h for h in record.halves if h.data_segments)
        ack = next(h for h in record.halves if h is not data)
        (src, sport), (dst, dport) = (ack.sender.rsplit(":", 1), data.sender.rsplit(":", 1))
        match = PolicyMatch.parse([f"src={src}/32", f"dst={dst}/32", f"sport={sport}", f"dport={dport}"])
        handles.append(set_flow_policy(client, match, tracking))
    return handles


def run(
    flows: int = 4000, intervals: int = 20, interval_s: float = 0.1, client: SwitchClient | None = None
) -> BenchResult:
    records = synthetic_records(flows)
    config = ControllerConfig(
        (
            Rule("other", PolicyMatch(src=ipaddress.IPv4Network("192.168.0.0/16"))),
            Rule("bench", PolicyMatch(src=ipaddress.IPv4Network("10.0.0.0/8"))),
        )
    )
    states: dict[AckStream, FlowState] = {}
    samples_ms, rules_ms, decide_ms = [], [], []
    for step in range(intervals):
        advance(records, step)
        now = step * interval_s
        t0 = time.perf_counter()
        samples: list[tuple[AckStream, FlowSample]] = []
        for record in records:
            for direction, half in enumerate(record.halves):
                if half.data_segments:
                    samples.append((AckStream.of(record.key, direction), sample_from(record, half, now, 3)))
        t1 = time.perf_counter()
        ruled = [(stream, sample, config.managed(stream)) for stream, sample in samples]
        t2 = time.perf_counter()
        for stream, sample, rule in ruled:
            if rule is not None:
                states[stream], _ = decide(states.get(stream, FlowState()), sample, rule.decision)
        t3 = time.perf_counter()
        samples_ms.append((t1 - t0) * 1000)
        rules_ms.append((t2 - t1) * 1000)
        decide_ms.append((t3 - t2) * 1000)
    read_ms, dump_ms = [], []
    if client is not None:
        handles = fill_flow_rules(client, records)
        try:
            for _ in range(intervals):
                t0 = time.perf_counter()
                read_interval(client)
                t1 = time.perf_counter()
                list_flow_policies(client)
                read_ms.append((t1 - t0) * 1000)
                dump_ms.append((time.perf_counter() - t1) * 1000)
        finally:
            for handle in handles:
                delete_flow_policy(client, handle)
    return BenchResult(
        flows,
        intervals,
        statistics.median(samples_ms),
        statistics.median(rules_ms),
        statistics.median(decide_ms),
        statistics.median(read_ms) if read_ms else None,
        statistics.median(dump_ms) if dump_ms else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=4000)
    parser.add_argument("--intervals", type=int, default=20)
    parser.add_argument(
        "--switch", metavar="HOST:PORT", help="also time one interval's reads from this switch"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.flows < 1 or args.intervals < 2:
        parser.error("--flows must be at least 1 and --intervals at least 2")
    if args.switch:
        with SwitchEndpoint.parse(args.switch).connect() as client:
            result = run(args.flows, args.intervals, client=client)
    else:
        result = run(args.flows, args.intervals)
    if args.json:
        print(json.dumps(vars(result) | {"decide_per_sample": round(result.decide_per_sample, 2)}))
        return 0
    print(
        f"{result.flows} flows, median of {result.intervals} intervals: building samples "
        f"{result.samples_ms:.1f} ms, matching rules {result.rules_ms:.1f} ms, deciding "
        f"{result.decide_ms:.1f} ms per interval (deciding / building samples = "
        f"{result.decide_per_sample:.1f})"
    )
    if result.read_ms is not None:
        print(
            f"reads of one interval from {args.switch}: {result.read_ms:.1f} ms; the work for "
            f"{result.flows} flows is {result.work_ms / result.read_ms:.2f}x the reads; both: "
            f"{result.work_ms + result.read_ms:.0f} ms of the default 100 ms interval; plus, once per "
            f"{RULES_FULL_CHECK_S:g} s, the dump of {result.flows} per-flow rules: {result.dump_ms:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
