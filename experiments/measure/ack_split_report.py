"""``python -m ackwise.experiments.measure.ack_split_report RESULTS_DIR [--json]``: each one-flow
run's pure ACKs split by phase and kind (ack_split) from its kept capture, beside the record's
acks_per_window and the sender's mean cwnd in congestion avoidance. Reads only records and
captures (``ackwise experiment run ... --keep-captures``)."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from ackwise.experiments.measure.ack_split import acks_per_window_by_phase, split_acks
from ackwise.experiments.measure.metrics import in_congestion_avoidance
from ackwise.experiments.measure.pcapstats import read_segments
from ackwise.experiments.measure.run_records import ok_run_records
from ackwise.twins.policies import MSS_BYTES


def _mean_ca_cwnd(record: dict[str, Any]) -> float | None:
    cwnd = record["series"]["cwnd"][0]
    samples = zip(cwnd["t_s"], cwnd["cwnd"], cwnd["ssthresh"], cwnd["unacked"], strict=True)
    ca = [c for t, c, s, u in samples if in_congestion_avoidance((t, c, s, u or 0))]
    return statistics.fmean(ca) if ca else None


def run_split(results: Path, record: dict[str, Any]) -> dict[str, Any] | None:
    captures = record["series"].get("captures") or []
    if not captures:
        return None
    path = Path(captures[0]["file"])
    if not path.is_absolute():
        path = results / "captures" / path.name
    segments = sorted(read_segments(path), key=lambda s: s.time)
    data = [s for s in segments if s.payload_len > 0]
    if not data:
        return None
    sender, receiver = data[0].src, data[0].dst
    split = split_acks(segments, sender, receiver, MSS_BYTES)
    mean_cwnd = _mean_ca_cwnd(record)
    return {
        "run_id": record["run_id"],
        "point": record["point"]["label"],
        "arm": record["arm"]["label"],
        "repeat": record["repeat"],
        "acks_per_window": record["metrics"].get("acks_per_window"),
        "acks_per_data_segment": record["metrics"].get("acks_per_data_segment"),
        "retransmissions": record["metrics"].get("retransmissions"),
        "rto_timeouts": record["metrics"].get("rto_timeouts"),
        "mean_ca_cwnd": mean_cwnd,
        "split": split.to_dict(),
        "per_window": acks_per_window_by_phase(split, mean_cwnd) if mean_cwnd else None,
        "busy_fraction": split.busy_fraction(
            float(record["config"]["topology_params"]["fwd_rate_mbps"]) * 1e6
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [row for r in ok_run_records(args.results) if (row := run_split(args.results, r)) is not None]
    rows.sort(key=lambda r: (r["point"], r["arm"], r["repeat"]))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        s = r["split"]
        w = r["per_window"] or {}
        acks = s["acks"]
        print(
            f"{r['point']:>10} {r['arm']:<34} rep {r['repeat']} apw {r['acks_per_window'] or 0:5.2f} "
            f"(ca-only {w.get('ca_only') or 0:5.2f}, no-rec {w.get('without_recovery') or 0:5.2f}) "
            f"cwnd {r['mean_ca_cwnd'] or 0:5.1f} rtx {r['retransmissions']} rto {r['rto_timeouts']} "
            f"holes {s['holes']} data {s['data']} busy {r['busy_fraction'] or 0:.2f}"
        )
        for phase, kinds in acks.items():
            print(f"{'':>12}{phase:<11} " + " ".join(f"{k} {v}" for k, v in kinds.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
