"""``ackwise demo`` / ``make demo``: the comparison in miniature, in under a minute.

The same 1 MB transfer on the Asymmetric dumbbell (10 Mbit/s forward, 30 kbit/s back: the ACKs
queue on the thin uplink) three times, each in a fresh test bed: with nothing on, with an ACK
policy at the receiver, and with one in the switch next to it. One line each, then the command
that runs the whole comparison. Everything it starts is removed at the end, also on Ctrl-C.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ackwise.experiments.harness.runner import execute, plan
from ackwise.experiments.harness.scenario import load
from ackwise.experiments.harness.schema import Arm, PolicySpec, RunRecord
from ackwise.processes import stop_on_signals

DEMO_SCENARIO = "asymmetric"
DEMO_POINT = "30 kbit/s"
DEMO_ARMS = (
    Arm(),
    Arm(host=PolicySpec("every_d", {"d": "4"})),
    Arm(switch=PolicySpec("coalesce"), switches=("s2",)),
)


def render(record: RunRecord) -> str:
    m = record.metrics
    label = record.arm["label"]
    if record.status != "ok":
        return f"  {label:<28} failed: {record.reason}"
    return (
        f"  {label:<28} completion {m['completion_s']:6.2f} s   goodput {m['goodput_mbps']:5.2f} Mbit/s   "
        f"{m['acks_per_data_segment']:.2f} pure ACKs per data segment"
    )


def run_demo(out: TextIO = sys.stdout) -> list[RunRecord]:
    scenario = load(DEMO_SCENARIO)
    point = scenario.point(DEMO_POINT)
    runs = {r.arm: r for r in plan(scenario) if r.point == point and r.repeat == 0 and r.arm in DEMO_ARMS}
    out.write(
        f"ackwise demo: {scenario.title}, at {DEMO_POINT} back; 1 MB from h1 to r1, three times\n"
        f"(scale: {scenario.scale['what']})\n\n"
    )
    records = []
    with stop_on_signals():
        for arm in DEMO_ARMS:
            if out.isatty():  # a progress hint, overwritten by the result line
                out.write(f"  {arm.label():<28} running ...\r")
                out.flush()
            record = execute(runs[arm], scenario)
            records.append(record)
            out.write(render(record) + "\n")
            out.flush()  # each line as its run ends, also into a pipe (a user's tee, a test)
    out.write(
        "\nThe whole comparison (every placement and policy, 5-30 kbit/s, 3 repeats; about 30 min):\n"
        f"  ackwise experiment run {DEMO_SCENARIO} && ackwise experiment report results/{DEMO_SCENARIO}\n"
        "Every scenario: make experiments (docs/results.md)\n"
    )
    return records


def summary(records: list[RunRecord]) -> dict[str, Any]:
    return {r.arm["label"]: r.metrics | {"status": r.status} for r in records}
