"""Runs whose emulator set the pace: what a run records of the machine (resources.usage) and the
rule that flags it (comparison.emulator_limited), whose blocks the verdict then leaves out."""

from __future__ import annotations

from pathlib import Path

from results_fixtures import ARMS, POINTS, make_record, manifest

from ackwise.experiments.harness.comparison import (
    CPU_PRESSURE_MAX,
    THREAD_CORES_MAX,
    agent_queue_drops,
    emulator_limited,
)
from ackwise.experiments.harness.report import build_report
from ackwise.experiments.harness.store import ResultStore
from ackwise.experiments.measure.resources import Snapshot, linkem_lateness, usage


def test_usage_is_cores_and_shares_over_the_interval() -> None:
    names = ("s1 simple_switch", "e1 linkem", "s2 simple_switch")
    before = Snapshot(
        100.0,
        dict(zip(names, (10.0, 2.0, None), strict=True)),
        dict(zip(names, ((0, 0), (0, 0), None), strict=True)),
        {"s1 simple_switch": {11: 1.0, 12: 9.0}, "e1 linkem": {21: 2.0}, "s2 simple_switch": {}},
        1000,
        4000,
        5_000_000,
        2,
    )
    after = Snapshot(
        110.0,
        dict(zip(names, (19.0, 3.0, 4.0), strict=True)),
        dict(zip(names, ((9_000_000_000, 3_000_000_000), (1_000_000_000, 0), (1, 1)), strict=True)),
        {
            "s1 simple_switch": {11: 2.0, 12: 17.0, 13: 0.5},
            "e1 linkem": {21: 3.0},
            "s2 simple_switch": {31: 4.0},
        },
        2500,
        6000,
        7_500_000,
        2,
    )
    used = usage(before, after)
    assert used["emulator_cores"] == {"s1 simple_switch": 0.9, "e1 linkem": 0.1}  # s2 appeared late: unknown
    # s1 ran 9 s and waited 3 s for a CPU: a quarter of the time it wanted one
    assert used["emulator_waiting"] == {"s1 simple_switch": 0.25, "e1 linkem": 0.0}
    # the busiest thread of each (a thread born during the interval is not counted)
    assert used["emulator_busiest_thread"] == {"s1 simple_switch": 0.8, "e1 linkem": 0.1}
    assert used["machine_busy"] == 0.75 and used["cpu_pressure"] == 0.25 and used["interval_s"] == 10.0


def test_lateness_is_read_from_each_linkem() -> None:
    stats = {"e1": {"wires": [], "lateness": {"frames": 10, "over_10ms": 1}}, "air": {"media": []}}
    assert linkem_lateness(stats) == {"e1": {"frames": 10, "over_10ms": 1}}


def record_with(
    thread: float = 0.3,
    late: int = 0,
    pressure: float = 0.5,
    repeat: int = 0,
    arm: int = 0,
    value: float = 5.0,
):
    r = make_record(POINTS[0], ARMS[arm], repeat, completion_s=value)
    r.resources = {
        "cpu_pressure": pressure,
        "emulator_busiest_thread": {"s1 simple_switch": thread, "e1 linkem": 0.2},
        "linkem_lateness": {"e1": {"frames": 1000, "over_10ms": late}},
    }
    return r


def test_a_loaded_machine_a_saturated_thread_or_a_late_linkem_flags_the_run() -> None:
    assert emulator_limited(record_with()) is None
    assert emulator_limited(make_record(POINTS[0], ARMS[0], 0)) is None  # recorded before resources
    assert emulator_limited(record_with(pressure=CPU_PRESSURE_MAX)) is None  # at the limit, not over it
    assert "tasks waited for a CPU 90% of the time" in (emulator_limited(record_with(pressure=0.9)) or "")
    why = emulator_limited(record_with(thread=THREAD_CORES_MAX + 0.05))
    assert why is not None and "a thread of s1 simple_switch used 0.95 cores" in why
    assert emulator_limited(record_with(late=10)) is None  # 1 %: at the limit, not over it
    assert "11 of 1000 frames over 10 ms late" in (emulator_limited(record_with(late=11)) or "")


def test_a_flagged_run_takes_its_block_out_of_its_own_comparisons(tmp_path: Path) -> None:
    """A flagged arm's run leaves its block out of that arm's comparison only; a flagged baseline
    run leaves it out of every arm's at its point."""
    store = ResultStore.open(tmp_path / "flagged", manifest())
    for repeat in range(4):
        store.append(
            record_with(pressure=0.95 if repeat == 3 else 0.5, repeat=repeat, arm=0, value=10.0 + repeat)
        )
        store.append(record_with(repeat=repeat, arm=1, value=8.0 + repeat))
        busy = repeat == 1
        store.append(record_with(pressure=0.95 if busy else 0.5, repeat=repeat, arm=2, value=6.0 + repeat))
    report = build_report(store, draw_figures=False)
    assert len(report.flagged) == 2 and "repeat 1" in report.flagged[0] and "repeat 3" in report.flagged[1]
    busy = "tasks waited for a CPU 95% of the time (limit 78%)"
    assert report.excluded == [
        f"point {POINTS[0].label}, repeat 1, {ARMS[2].label()}: {busy}",
        f"point {POINTS[0].label}, repeat 3, {ARMS[0].label()}: {busy}",
    ]
    n = {e.label: e.effect.n for e in report.sections[0].effects if e.effect is not None}
    assert n == {ARMS[1].label(): 3, ARMS[2].label(): 2}  # host: blocks 0-2; switch: 0 and 2


def host_agents(incoming_dropped: int = 0, outgoing_user_dropped: int = 0) -> list[dict[str, object]]:
    """A host agent's record as hosts/agent.py writes it (the kernel's NFQUEUE counters)."""
    queue = {"packets": 5000, "queued": 0, "queue_dropped": 0, "user_dropped": 0}
    return [
        {
            "receiver": "sta1",
            "policy": "tack",
            "agent": {
                "policy": "tack",
                "nfqueue": {
                    "incoming": queue | {"queue_dropped": incoming_dropped},
                    "outgoing": queue | {"user_dropped": outgoing_user_dropped},
                },
            },
        }
    ]


def test_a_host_agent_that_dropped_packets_flags_the_run() -> None:
    """Regression (wlan-comparison at bfaedbc): on 802.11n the receiver agent's incoming queue
    overflowed and the kernel dropped up to 5313 data segments a run before the policy saw them;
    the runs' CPU pressure (0.35-0.64) flagged none, so host tack's verdict rested on the loss."""
    clean = record_with()
    clean.series["host_agents"] = host_agents()
    assert agent_queue_drops(clean) == {} and emulator_limited(clean) is None
    dropped = record_with()
    dropped.series["host_agents"] = host_agents(incoming_dropped=257)
    assert agent_queue_drops(dropped) == {"sta1 incoming": 257}
    assert emulator_limited(dropped) == (
        "the host agent's NFQUEUE dropped packets it never saw (257 from sta1 incoming)"
    )
    one_ack = record_with()  # an ACK the agent's socket could not take counts as much as data
    one_ack.series["host_agents"] = host_agents(outgoing_user_dropped=1)
    assert emulator_limited(one_ack) is not None


def test_a_run_with_agent_drops_takes_its_block_out_of_the_verdict(tmp_path: Path) -> None:
    store = ResultStore.open(tmp_path / "agent", manifest())
    for repeat in range(3):
        store.append(record_with(repeat=repeat, arm=0, value=10.0 + repeat))
        host = record_with(repeat=repeat, arm=1, value=12.0 + repeat)
        host.series["host_agents"] = host_agents(incoming_dropped=1000 if repeat == 2 else 0)
        store.append(host)
    report = build_report(store, draw_figures=False)
    assert len(report.flagged) == 1 and "repeat 2" in report.flagged[0]
    assert report.excluded == [
        f"point {POINTS[0].label}, repeat 2, {ARMS[1].label()}: the host agent's NFQUEUE dropped packets "
        "it never saw "
        "(1000 from sta1 incoming)"
    ]
    n = {e.label: e.effect.n for e in report.sections[0].effects if e.effect is not None}
    assert n == {ARMS[1].label(): 2}  # the host arm without its block 2
