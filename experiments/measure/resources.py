"""How much of the machine a run used: CPU time of the emulator's processes (each simple_switch and
linkem), the whole machine's busy share (/proc/stat) and CPU pressure (/proc/pressure/cpu, PSI),
between two snapshots. A run whose emulator was the bottleneck measures the machine, not the ACK
policy; the report flags such runs (comparison.emulator_limited) and keeps them out of verdicts."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float | None:
    """utime + stime of a process (all its threads), in seconds; None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of proc(5)


def _thread_cpu_s(pid: int) -> dict[int, float]:
    """utime + stime of each thread of a process so far, in seconds."""
    threads = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    for task in tasks:
        try:
            fields = task.joinpath("stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        threads[int(task.name)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return threads


def _process_schedstat_ns(pid: int) -> tuple[int, int] | None:
    """(time on a CPU, time runnable but waiting for one) of all the process's threads so far, in
    ns (/proc/PID/task/*/schedstat); None if it is gone. Waiting is what contention costs it."""
    on_cpu = waiting = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                ran, waited = task.joinpath("schedstat").read_text().split()[:2]
            except OSError:
                continue  # a thread that just ended
            on_cpu, waiting = on_cpu + int(ran), waiting + int(waited)
    except OSError:
        return None
    return on_cpu, waiting


def _machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU since boot (/proc/stat's first line; idle and iowait
    are not busy)."""
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


def _cpu_pressure_us() -> int | None:
    """Total time some task waited for a CPU (PSI 'some'), in microseconds; None without PSI."""
    try:
        for line in Path("/proc/pressure/cpu").read_text().splitlines():
            if line.startswith("some "):
                return int(dict(kv.split("=") for kv in line.split()[1:])["total"])
    except (OSError, KeyError, ValueError):
        return None
    return None


@dataclass
class Snapshot:
    time_s: float
    processes: dict[str, float | None]  # name -> CPU seconds so far
    sched: dict[str, tuple[int, int] | None]  # name -> (on-CPU ns, waiting ns) so far
    threads: dict[str, dict[int, float]]  # name -> thread id -> CPU seconds so far
    busy_jiffies: int
    total_jiffies: int
    pressure_us: int | None
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)


def snapshot(pids: dict[str, int]) -> Snapshot:
    """The CPU time so far of the processes named in ``pids`` (only simple_switch and linkem are
    kept: the emulator), and of the machine."""
    emulator = {name: pid for name, pid in pids.items() if name.endswith((" simple_switch", " linkem"))}
    busy, total = _machine_jiffies()
    return Snapshot(
        time.monotonic(),
        {name: _process_cpu_s(pid) for name, pid in emulator.items()},
        {name: _process_schedstat_ns(pid) for name, pid in emulator.items()},
        {name: _thread_cpu_s(pid) for name, pid in emulator.items()},
        busy,
        total,
        _cpu_pressure_us(),
    )


def usage(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    """What the run used between the snapshots: each emulator process's CPU in cores (1.0: one
    core all the time), the machine's busy share of all its CPUs, the share of the time some task
    waited for a CPU (PSI), and the interval."""
    elapsed = max(after.time_s - before.time_s, 1e-9)
    processes = {}
    for name, start in before.processes.items():
        end = after.processes.get(name)
        if start is not None and end is not None:
            processes[name] = round((end - start) / elapsed, 3)
    waits = {}
    for name, start_ns in before.sched.items():
        end_ns = after.sched.get(name)
        if start_ns is not None and end_ns is not None:
            ran, waited = end_ns[0] - start_ns[0], end_ns[1] - start_ns[1]
            if ran + waited > 0:
                waits[name] = round(waited / (ran + waited), 3)
    busiest = {}
    for name, start_threads in before.threads.items():
        end_threads = after.threads.get(name, {})
        shares = [(end_threads[t] - s) / elapsed for t, s in start_threads.items() if t in end_threads]
        if shares:
            busiest[name] = round(max(shares), 3)
    total = after.total_jiffies - before.total_jiffies
    doc: dict[str, Any] = {
        "interval_s": round(elapsed, 3),
        "cpus": after.cpus,
        "emulator_cores": processes,
        # Of the time each emulator process wanted a CPU, the share it waited for one.
        "emulator_waiting": waits,
        # Each process's busiest thread, in cores: a pipeline thread near 1.0 is the bottleneck.
        "emulator_busiest_thread": busiest,
        "machine_busy": round((after.busy_jiffies - before.busy_jiffies) / total, 3) if total > 0 else None,
        "cpu_pressure": None,
    }
    if before.pressure_us is not None and after.pressure_us is not None:
        doc["cpu_pressure"] = round((after.pressure_us - before.pressure_us) / 1e6 / elapsed, 3)
    return doc


def linkem_lateness(link_stats: dict[str, Any]) -> dict[str, Any]:
    """Each linkem's lateness (frames sent after the model meant them to), from its stats."""
    return {
        name: stats["lateness"]
        for name, stats in link_stats.items()
        if isinstance(stats, dict) and "lateness" in stats
    }
