"""The kernel's own ACK behaviour on a host: Linux's delayed ACK by default, or one ACK per
segment with the route attribute quickack. Commands run in the caller's network namespace, or
through ``run`` (e.g. a Mininet host's cmd) in another."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

Runner = Callable[[str], str]


def _local(command: str) -> str:
    return subprocess.run(command, shell=True, capture_output=True, text=True, check=False).stdout


def _routes(run: Runner) -> list[str]:
    """Every route of the main table, IPv4's then IPv6's (none where IPv6 is off); ``ip route
    change`` tells the family from the prefix, so a line reads back as it was shown."""
    text = run("ip -4 route show") + "\n" + run("ip -6 route show")
    return [line.strip() for line in text.splitlines() if line.strip()]


def set_quickack(on: bool, routes: list[str] | None = None, run: Runner = _local) -> list[str]:
    """Turn quickack on (or off) for ``routes`` (default: every IPv4 and IPv6 route); returns the
    routes changed, as they read before, to hand back for turning it off."""
    changed = routes if routes is not None else _routes(run)
    for route in changed:
        base = route.replace(" quickack 1", "")
        run(f"ip route change {base} quickack {1 if on else 0}")
    return changed


def quickack_routes(run: Runner = _local) -> list[str]:
    return [r for r in _routes(run) if "quickack 1" in r]


NFQUEUE_PROC = "/proc/net/netfilter/nfnetlink_queue"  # per network namespace


def parse_nfqueue_counters(text: str, queues: set[int]) -> dict[int, dict[str, int]]:
    """The kernel's counters of the named NFQUEUE queues, from ``NFQUEUE_PROC``'s lines
    (nfnetlink_queue.c, seq_show: queue, peer portid, queued now, copy mode, copy range, dropped
    for want of room in the queue, dropped when the agent's socket could not take them, last
    packet id, 1). A packet the kernel drops here is one the agent never saw: data lost at the
    receiver, or an ACK never sent."""
    counters: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].isdigit() or int(fields[0]) not in queues:
            continue
        counters[int(fields[0])] = {
            "queued": int(fields[2]),
            "queue_dropped": int(fields[5]),
            "user_dropped": int(fields[6]),
            "packets": int(fields[7]),
        }
    return counters
