"""Receiver traces: what a receiving host saw of one transfer, beside its sender's cwnd.

    python -m ackwise.experiments.measure.receiver_trace --out trace.json.gz \\
        --rate-mbps 2 --delay-ms 50 --buffer-pkts 9 --cc reno --initcwnd 2 --no-sack --policy 4w

(root; it starts a dumbbell test bed: hold the test-bed lock.) The trace holds every TCP segment
on the receiver's interface, captured inside its namespace (the data as it arrived, the ACKs as
they left, after the host agent if one runs), and the sender's ``ss`` samples (cwnd, ssthresh)
every ``--ss-interval-ms``. hosts/replay.py feeds the segments to a window estimator offline;
the unit tests do so with the traces in control-plane/tests/data/receiver-traces/.

The file is gzipped JSON: ``meta`` (how it was recorded), ``segments`` (one row each:
time, src, dst, sport, dport, seq, ack, flags, window, payload length, ECN, TSval, TSecr, SACK
blocks; times from the first segment) and ``cwnd`` (rows of time, cwnd, ssthresh or null, on the same clock).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ackwise.experiments.measure.metrics import CwndSample
from ackwise.twins.packets import TcpSegment

FORMAT = 2


def to_rows(segments: Iterable[TcpSegment], t0: float) -> list[list[Any]]:
    return [
        [
            round(s.time - t0, 6),
            s.src,
            s.dst,
            s.sport,
            s.dport,
            s.seq,
            s.ack,
            s.flags,
            s.window,
            s.payload_len,
            s.ecn,
            s.ts_val,
            s.ts_ecr,
            [list(block) for block in s.sack],
        ]
        for s in segments
    ]


def from_rows(rows: Iterable[list[Any]]) -> list[TcpSegment]:
    return [
        TcpSegment(
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            window,
            length,
            ecn,
            tsval,
            tsecr,
            sack=tuple((a, b) for a, b in sack),
            time=t,
        )
        for t, src, dst, sport, dport, seq, ack, flags, window, length, ecn, tsval, tsecr, sack in rows
    ]


def save(path: Path, meta: dict[str, Any], segments: list[TcpSegment], cwnd: list[dict[str, Any]]) -> None:
    """``cwnd``: TcpSampler samples (their wall-clock ``at``, cwnd, ssthresh)."""
    t0 = min(s.time for s in segments)
    doc = {
        "format": FORMAT,
        "meta": meta,
        "segments": to_rows(segments, t0),
        "cwnd": [[round(c["at"] - t0, 4), c["cwnd"], c.get("ssthresh")] for c in cwnd],
    }
    with gzip.open(path, "wt") as f:
        json.dump(doc, f, separators=(",", ":"))


def load(path: Path) -> tuple[dict[str, Any], list[TcpSegment], list[CwndSample]]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}: receiver trace format {doc.get('format')}, this code reads {FORMAT}")
    # the traces keep no segments in flight: None, not known
    cwnd: list[CwndSample] = [
        (float(t), int(c), None if s is None else int(s), None) for t, c, s in doc["cwnd"]
    ]
    return doc["meta"], from_rows(doc["segments"]), cwnd


def record(args: argparse.Namespace) -> dict[str, Any]:
    # lazy: the test bed imports Mininet, which loading a trace must not need.
    from ackwise.experiments.measure.pcapstats import read_segments
    from ackwise.experiments.measure.traffic import Capture, TcpSampler, run_transfers
    from ackwise.hosts.mininet_agent import HostAgent
    from ackwise.topologies.testbed import Testbed

    params = {
        "fwd_rate_mbps": args.rate_mbps,
        "fwd_delay_ms": args.delay_ms,
        "rev_delay_ms": args.delay_ms,
        "rev_rate_mbps": args.rev_rate_mbps,
        "fwd_buffer_pkts": args.buffer_pkts,
        "cc": args.cc,
        "initcwnd": args.initcwnd,
        "sack": args.sack,
        "ecn": args.ecn,
        "timestamps": args.timestamps,
    }
    policy_params = dict(p.split("=", 1) for p in args.param)
    with Testbed.create("dumbbell", **params) as testbed:
        sender, receiver = testbed.host("h1"), testbed.host("r1")
        ips = {"sender": sender.IP(), "receiver": receiver.IP()}
        agent = HostAgent(receiver, args.policy, policy_params).start()
        capture = Capture("r1-eth0", node=receiver)
        sampler = TcpSampler(sender, receiver.IP(), interval_s=args.ss_interval_ms / 1000).start()
        try:
            (result,) = run_transfers([(sender, receiver)], args.size, seed_base=args.seed)
            tcp = sampler.stop()
            report = agent.stop()
            capture.stop(keep_pcap=True)
            segments = list(read_segments(capture.path))
        finally:
            capture.discard()
    meta = {
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "topology": "dumbbell",
        "params": params,
        "policy": args.policy,
        "policy_params": policy_params,
        "size_bytes": args.size,
        "completion_s": round(result.completion_s, 4),
        "retransmissions": tcp["retransmitted_segments"],
        "congestion_controls": tcp["congestion_controls"],
        "options": tcp["options"],
        **ips,
        "agent_flows": report.get("agent", {}).get("flows", {}),
    }
    save(args.out, meta, segments, tcp["cwnd_samples"])
    return meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rate-mbps", type=float, default=2.0)
    parser.add_argument("--rev-rate-mbps", type=float, default=100.0)
    parser.add_argument("--delay-ms", type=float, default=50.0, help="one way, each direction")
    parser.add_argument("--buffer-pkts", type=int, default=9)
    parser.add_argument("--cc", default="cubic")
    parser.add_argument("--initcwnd", type=int, default=0)
    parser.add_argument("--no-sack", dest="sack", action="store_false")
    parser.add_argument("--no-ecn", dest="ecn", action="store_false")
    parser.add_argument("--no-timestamps", dest="timestamps", action="store_false")
    parser.add_argument("--policy", default="delayed", help="a host policy, or delayed / quickack")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ss-interval-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    meta = record(args)
    shown = ("completion_s", "retransmissions", "congestion_controls", "options")
    print(json.dumps({k: meta[k] for k in shown}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
