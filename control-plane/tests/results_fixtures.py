"""Synthetic run records and results directories for the store, stats and report tests."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from ackwise.experiments.harness.schema import Arm, Point, PolicySpec, RunRecord, run_id
from ackwise.experiments.harness.store import ResultStore, matrix_dict, new_manifest

SCALE = {"factor": 0.1, "what": "link rates and buffers divided by 10 so that bmv2 keeps up"}
COMMAND = "ackwise experiment run asym-dumbbell --out results/asym --repeats 3"
CODE = "abc1234"

BASELINE_ARM = Arm()
HOST_ARM = Arm(host=PolicySpec("every_d", {"d": "4"}))
SWITCH_ARM = Arm(switch=PolicySpec("coalesce"), switches=("s1",))
AP_ARM = Arm(ap=True)
ARMS = [BASELINE_ARM, HOST_ARM, SWITCH_ARM, AP_ARM]
POINTS = [Point(64, "64 kbit/s", {"rev_kbit": 64}), Point(256, "256 kbit/s", {"rev_kbit": 256})]

# completion_s of repeats 0, 1, 2 per (point label, arm where). At 64 kbit/s the switch is best and
# clearly better than the baseline; at 256 kbit/s the AP is best. The host's repeat 2 at 64 kbit/s
# fails (None here), so that group has n = 2; the AP at 64 and the host at 256 overlap the baseline.
COMPLETION_S: dict[tuple[str, str], list[float | None]] = {
    ("64 kbit/s", "none"): [10.0, 11.0, 12.0],
    ("64 kbit/s", "host"): [8.0, 8.5, None],
    ("64 kbit/s", "switch"): [6.0, 6.2, 6.4],
    ("64 kbit/s", "ap"): [9.5, 10.5, 11.45],  # 4.5-5 % under the baseline in each block
    ("256 kbit/s", "none"): [5.0, 5.2, 5.4],
    ("256 kbit/s", "host"): [4.9, 5.1, 5.6],
    ("256 kbit/s", "switch"): [4.0, 4.1, 4.2],
    ("256 kbit/s", "ap"): [3.0, 3.2, 3.1],
}
SIZE_MBIT = 8.0  # each run moves 1 MB: goodput = 8 Mbit / completion time
ACKS_PER_SEGMENT = {"none": 0.5, "host": 0.25, "switch": 0.125, "ap": 0.05}
FAILURE_REASON = "receiver agent died: NFQUEUE 3 unbound"

SCENARIO: dict[str, Any] = {
    "name": "asym-dumbbell",
    "title": "ACK reduction on an asymmetric dumbbell",
    "description": "Bulk transfers over a slow reverse link, with ACK reduction at each place.",
    "reproduces": [
        {"source": "Balakrishnan et al., 1997, Fig. 5", "claim": "ACK filtering shortens transfers"},
    ],
    "topology": {"name": "dumbbell", "params": {"fwd_mbit": 10, "n_pairs": 1}},
    "traffic": {"kind": "transfer", "size_bytes": 1_000_000},
    "scale": SCALE,
    "axis": {"name": "reverse link rate", "unit": "kbit/s"},
    "metrics": ["completion_s", "goodput_mbps", "acks_per_data_segment"],
    "figures": [
        {"kind": "metric_vs_x", "metric": "completion_s", "title": "Completion time vs reverse rate"},
        {"kind": "relative_vs_x", "metric": "completion_s", "title": "Relative completion time"},
        {"kind": "acks_vs_goodput", "title": "ACKs per segment vs goodput"},
        {"kind": "bars", "metric": "goodput_mbps", "title": "Goodput per reverse rate"},
        {"kind": "timeline", "title": "cwnd and ACK rate", "point": "64 kbit/s"},
    ],
}


def make_record(
    point: Point,
    arm: Arm,
    repeat: int,
    *,
    completion_s: float | None = 1.0,
    status: str = "ok",
    reason: str | None = None,
    scenario: str = "asym-dumbbell",
    code_version: str = CODE,
    with_series: bool = False,
) -> RunRecord:
    config = {"topology": "dumbbell", **point.params}
    metrics: dict[str, float | int | None] = {}
    if status == "ok" and completion_s is not None:
        metrics = {
            "completion_s": completion_s,
            "goodput_mbps": SIZE_MBIT / completion_s,
            "acks_per_data_segment": ACKS_PER_SEGMENT[arm.where],
        }
    series: dict[str, list[dict[str, Any]]] = {}
    if with_series:
        t_s = [i * 0.1 for i in range(50)]
        series = {
            "cwnd": [
                {
                    "flow": "h1->r1",
                    "t_s": t_s,
                    "cwnd": [min(10 + 2 * i, 60) for i in range(50)],
                    "congestion_controls": ["cubic"],
                }
            ],
            "ack_rate": [
                {"flow": "h1->r1", "t_s": t_s, "acks_per_s": [400 * ACKS_PER_SEGMENT[arm.where]] * 50}
            ],
        }
    return RunRecord(
        run_id=run_id(scenario, point, arm, repeat, 1 + repeat, config),
        scenario=scenario,
        point=asdict(point),
        arm=arm.to_dict(),
        repeat=repeat,
        seed=1 + repeat,
        scale=dict(SCALE),
        config=config,
        code_version=code_version,
        versions={"simple_switch": "1.15.5", "p4c": "1.2.4.8", "kernel": "6.1.0"},
        link_backend="netem",
        status=status,
        reason=reason,
        started_at="2024-05-01T12:00:00+00:00",
        duration_s=12.5,
        metrics=metrics,
        series=series,
    )


def manifest(code_version: str = CODE, repeats: int = 3, arms: list[Arm] | None = None) -> dict[str, Any]:
    matrix = matrix_dict(POINTS, arms or ARMS, repeats=repeats, seed=1, quick=False)
    return new_manifest(SCENARIO, matrix, code_version, COMMAND)


def build_store(directory: Path) -> ResultStore:
    """The 2 points x 4 arms x 3 repeats of COMPLETION_S, one of them failed."""
    store = ResultStore.open(directory, manifest())
    for point in POINTS:
        for arm in ARMS:
            for repeat, value in enumerate(COMPLETION_S[(point.label, arm.where)]):
                if value is None:
                    record = make_record(point, arm, repeat, status="failed", reason=FAILURE_REASON)
                else:
                    record = make_record(point, arm, repeat, completion_s=value, with_series=True)
                store.append(record)
    return store


def planned_run_record(
    run: Any, versions: dict[str, str] | None = None, started_at: str = "2026-11-28T03:00:00+00:00"
) -> RunRecord:
    """The ok record a fake runner's execute returns for a planned run: no test bed, a minute long."""
    return RunRecord(
        run_id=run.run_id,
        scenario=run.scenario,
        point={"label": run.point.label, "x": run.point.x, "params": run.point.params},
        arm=run.arm.to_dict(),
        repeat=run.repeat,
        seed=run.seed,
        scale={"factor": 1, "what": "none"},
        config={},
        code_version="abc1234",
        versions=dict(versions or {}),
        link_backend="linkem",
        status="ok",
        reason=None,
        started_at=started_at,
        duration_s=60.0,
        metrics={},
        series={},
    )
