"""The TCP a test-bed host runs with: what a scenario asks for, how it is applied to a network
namespace, and the check of what the kernel actually took. Pure: commands and read-backs are text
in and text out, so the check is unit-tested without a namespace (topologies/hosts.py runs them).

A paper's sender is more than its congestion control: smartacking's and Landström's ran ns-2
NewReno with a small initial window; Linux defaults to CUBIC, an initial window of 10 segments,
SACK and timestamps. A setting the kernel did not take must fail the run, never pass for one made:
the erratum of docs/results.md (BBR runs recorded as CUBIC) came from a refusal nobody read.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

CONGESTION_CONTROLS = ("reno", "cubic", "bbr")
DEFAULT_CONGESTION_CONTROL = "cubic"
LINUX_DEFAULT_INITCWND = 10  # segments (TCP_INIT_CWND), used when a route sets none
MAX_INITCWND = 1000  # what `ip route ... initcwnd` takes on this kernel is far more; beyond this a typo

# The per-namespace sysctls a host's TCP settings map to (all of them per network namespace
# since Linux 4.15, so each Mininet host has its own).
SYSCTLS = {
    "cc": "net.ipv4.tcp_congestion_control",
    "ecn": "net.ipv4.tcp_ecn",
    "sack": "net.ipv4.tcp_sack",
    "timestamps": "net.ipv4.tcp_timestamps",
}


class TcpSettingsError(RuntimeError):
    """The kernel did not take a TCP setting a host asked for; the message names the fix."""


@dataclass(frozen=True)
class TcpSettings:
    """One host's TCP: congestion control, ECN (1: request it as a sender, accept it as a
    receiver), SACK, timestamps, and the initial congestion window its routes set (0: the kernel's
    default, LINUX_DEFAULT_INITCWND)."""

    cc: str = DEFAULT_CONGESTION_CONTROL
    ecn: bool = True
    sack: bool = True
    timestamps: bool = True
    initcwnd: int = 0

    def __post_init__(self) -> None:
        if self.cc not in CONGESTION_CONTROLS:
            raise ValueError(f"cc={self.cc}: give one of {', '.join(CONGESTION_CONTROLS)}")
        if not 0 <= self.initcwnd <= MAX_INITCWND:
            raise ValueError(
                f"initcwnd={self.initcwnd}: give 1..{MAX_INITCWND} segments, or 0 for the default"
            )

    @property
    def effective_initcwnd(self) -> int:
        return self.initcwnd or LINUX_DEFAULT_INITCWND

    def sysctl_values(self) -> dict[str, str]:
        """sysctl name -> the value it must read back."""
        return {
            SYSCTLS["cc"]: self.cc,
            SYSCTLS["ecn"]: str(int(self.ecn)),
            SYSCTLS["sack"]: str(int(self.sack)),
            SYSCTLS["timestamps"]: str(int(self.timestamps)),
        }

    def sysctl_command(self) -> str:
        values = " ".join(f"{k}={v}" for k, v in self.sysctl_values().items())
        return f"sysctl -qw {values}"

    def readback_command(self) -> str:
        """Prints the sysctls' values one per line, in sysctl_values()' order."""
        return "sysctl -n " + " ".join(self.sysctl_values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"effective_initcwnd": self.effective_initcwnd}


def route_initcwnd_commands(routes_text: str, initcwnd: int) -> list[str]:
    """``ip route change`` commands that set ``initcwnd`` on every route of ``ip -4 route show``
    (and, on a dual-stack host, ``ip -6 route show``: ``ip route change`` tells the family from
    the prefix): the connected route of each interface and any other. A route's other attributes stay
    as they were, so quickack set later by the host agent (hosts/kernel.py) keeps the window."""
    commands = []
    for line in routes_text.splitlines():
        route = re.sub(r"\s+initcwnd \d+", "", line.strip())
        if route:
            commands.append(f"ip route change {route} initcwnd {initcwnd}")
    return commands


def route_initcwnds(routes_text: str) -> list[int | None]:
    """The initcwnd of each route shown (None: the route sets none, the kernel's default applies)."""
    found = []
    for line in routes_text.splitlines():
        if not line.strip():
            continue
        match = re.search(r"\binitcwnd (\d+)", line)
        found.append(int(match.group(1)) if match else None)
    return found


def check_readback(
    host: str, wanted: TcpSettings, sysctl_output: str, routes_text: str, allowed_cc: str = ""
) -> list[str]:
    """What the kernel did not take, one line each naming the fix; empty when everything was.
    ``sysctl_output`` is readback_command()'s output, ``routes_text`` ``ip -4 route show``'s (and
    ``ip -6 route show``'s on a dual-stack host: AckwiseHost.routes_shown),
    ``allowed_cc`` the root namespace's net.ipv4.tcp_allowed_congestion_control."""
    problems = []
    names = list(wanted.sysctl_values())
    values = sysctl_output.split()
    read = dict(zip(names, [*values, *[""] * len(names)][: len(names)], strict=True))
    for name, value in wanted.sysctl_values().items():
        if read[name] == value:
            continue
        if name == SYSCTLS["cc"]:
            problems.append(
                f"{host}: asked for congestion control {value}, its namespace has {read[name] or 'none'}: "
                "only the root namespace may pick an algorithm outside "
                f"net.ipv4.tcp_allowed_congestion_control ({allowed_cc!r}): add it with "
                f'`sysctl -w net.ipv4.tcp_allowed_congestion_control="{allowed_cc} {value}"` (the test '
                "bed does this itself when it starts)"
            )
        else:
            problems.append(
                f"{host}: {name} reads {read[name] or 'nothing'!r}, not {value}: this kernel does not "
                f"keep {name} per network namespace (Linux 4.15 or later does); set it in the root "
                "namespace or run on a newer kernel"
            )
    windows = route_initcwnds(routes_text)
    if not windows:
        problems.append(f"{host}: no IPv4 route to set initcwnd on: is its interface configured?")
    elif wanted.initcwnd:
        wrong = [w for w in windows if w != wanted.initcwnd]
        if wrong:
            problems.append(
                f"{host}: {len(wrong)} of {len(windows)} routes do not set initcwnd {wanted.initcwnd} "
                f"(they read {', '.join('none' if w is None else str(w) for w in wrong)}): "
                "`ip route change ROUTE initcwnd N` was refused; check `ip route show` in the host"
            )
    return problems


def check_connection_options(flow: str, wanted: TcpSettings, options: set[str]) -> list[str]:
    """What a running connection negotiated (``ss -i``'s option words: ts, sack, ecn) against
    what both its ends were set to; one line per difference. Empty when ``options`` is empty: the
    sampler never saw the connection, which the run's other checks report."""
    if not options:
        return []
    problems = []
    for word, on, name in (("sack", wanted.sack, "sack"), ("ts", wanted.timestamps, "timestamps")):
        if (word in options) != on:
            shown = " ".join(sorted(options))
            problems.append(
                f"{flow}: the connection {'lacks' if on else 'has'} {name} (ss shows {shown}), "
                f"though its hosts were set to {name}={'on' if on else 'off'}: check both ends' "
                f"{SYSCTLS[name]}"
            )
    if ("ecn" in options) != wanted.ecn:
        problems.append(
            f"{flow}: ECN {'not ' if wanted.ecn else ''}negotiated though the hosts were set to "
            f"ecn={'on' if wanted.ecn else 'off'}: check both ends' {SYSCTLS['ecn']}"
        )
    return problems
