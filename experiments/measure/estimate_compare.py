"""``python -m ackwise.experiments.measure.estimate_compare OUT.png --arm LABEL BEFORE_DIR AFTER_DIR
[--points ...]``: a receiver policy's window estimate beside the sender's cwnd, before and after a
change, one row per point (the first ok repeat of the arm in each results directory), with each
run's median |error| and bias over the sender's congestion avoidance (metrics.estimate_error, on
the records' series: the same rule for both directories, whatever rule their code stored). Prints
the errors of every repeat as JSON."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ackwise.experiments.measure.metrics import CwndSample, estimate_error
from ackwise.experiments.measure.run_records import ok_run_records


def _records(results: Path) -> list[dict[str, Any]]:
    return sorted(ok_run_records(results), key=lambda r: (r["point"]["x"], r["repeat"]))


def _series(record: dict[str, Any]) -> tuple[list[CwndSample], list[tuple[float, float]], str]:
    cwnd = record["series"]["cwnd"][0]
    samples: list[CwndSample] = [
        (t, c, s, u or 0)
        for t, c, s, u in zip(cwnd["t_s"], cwnd["cwnd"], cwnd["ssthresh"], cwnd["unacked"], strict=True)
    ]
    entry = record["series"]["cwnd_estimate"][0]
    estimate = list(zip(entry["t_s"], entry["estimate"], strict=True))
    return samples, estimate, str(entry.get("estimator"))


def errors(results: Path, arm: str) -> dict[str, list[dict[str, Any]]]:
    """Per point label, each ok repeat's error and bias (None: no congestion avoidance)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in _records(results):
        if record["arm"]["label"] != arm or not record["series"].get("cwnd_estimate"):
            continue
        samples, estimate, _ = _series(record)
        error = estimate_error(estimate, samples)
        out.setdefault(record["point"]["label"], []).append(
            {
                "run_id": record["run_id"],
                "repeat": record["repeat"],
                "error": None if error is None else round(error.median_abs, 3),
                "bias": None if error is None else round(error.median, 3),
                "samples": 0 if error is None else error.samples,
            }
        )
    return out


def draw(out: Path, arm: str, before: Path, after: Path, points: list[str]) -> None:
    runs = {name: _records(d) for name, d in (("before", before), ("after", after))}
    fig, axes = plt.subplots(len(points), 2, figsize=(11, 2.6 * len(points)), squeeze=False)
    for row, point in enumerate(points):
        for col, name in enumerate(("before", "after")):
            ax = axes[row][col]
            record = next(
                (
                    r
                    for r in runs[name]
                    if r["point"]["label"] == point
                    and r["arm"]["label"] == arm
                    and r["series"].get("cwnd_estimate")
                ),
                None,
            )
            if record is None:
                ax.text(0.5, 0.5, "no run", ha="center", transform=ax.transAxes)
                continue
            samples, estimate, estimator = _series(record)
            ax.plot(
                [s[0] for s in samples], [s[1] for s in samples], color="black", lw=1.2, label="sender's cwnd"
            )
            ax.plot(
                [s[0] for s in samples],
                [s[2] for s in samples],
                color="grey",
                lw=0.8,
                ls=":",
                label="ssthresh",
            )
            # the estimate holds its last value to the end of the run (the trace keeps changes)
            held = [*estimate, (samples[-1][0], estimate[-1][1])] if estimate and samples else estimate
            ax.step(
                [t for t, _ in held],
                [v for _, v in held],
                where="post",
                color="tab:red",
                lw=1,
                ls="--",
                label=f"receiver's estimate ({estimator})",
            )
            error = estimate_error(estimate, samples)
            said = (
                f"|error| {error.median_abs:.0%}, bias {error.median:+.0%} ({error.samples} CA samples)"
                if error
                else "no congestion avoidance"
            )
            ax.set_title(
                f"{name} ({record['code_version']}), {point}, rep {record['repeat']}: {said}", fontsize=8
            )
            ax.set_ylabel("segments")
            if row == len(points) - 1:
                ax.set_xlabel("time (s)")
            if row == 0 and col == 0:
                ax.legend(fontsize=7)
    fig.suptitle(f"one-flow, {arm}: the receiver's window estimate beside the sender's cwnd", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--points", nargs="+", default=["1 Mbit/s", "2 Mbit/s", "4 Mbit/s", "12 Mbit/s"])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    draw(args.out, args.arm, args.before, args.after, args.points)
    summary = {name: errors(d, args.arm) for name, d in (("before", args.before), ("after", args.after))}
    for name, per_point in summary.items():
        for point, rows in per_point.items():
            values = [r["error"] for r in rows if r["error"] is not None]
            median = statistics.median(values) if values else None
            print(json.dumps({"which": name, "point": point, "median_error": median, "runs": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
