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
    return [line.strip() for line in run("ip -4 route show").splitlines() if line.strip()]


def set_quickack(on: bool, routes: list[str] | None = None, run: Runner = _local) -> list[str]:
    """Turn quickack on (or off) for ``routes`` (default: every IPv4 route); returns the routes
    changed, as they read before, to hand back for turning it off."""
    changed = routes if routes is not None else _routes(run)
    for route in changed:
        base = route.replace(" quickack 1", "")
        run(f"ip route change {base} quickack {1 if on else 0}")
    return changed


def quickack_routes(run: Runner = _local) -> list[str]:
    return [r for r in _routes(run) if "quickack 1" in r]
