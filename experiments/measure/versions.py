"""The versions of everything a measurement ran with: ackwise (commit, dirty flag), simple_switch and
how it was built, p4c, the kernel, iperf3, Mininet, Python. Every run record, bench table and fuzz
report carries them."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from functools import cache

from ackwise import __version__
from ackwise.bmv2.toolchain import (
    P4C_BMV2,
    REPO_ROOT,
    SIMPLE_SWITCH,
    ToolchainError,
    build_config,
    find_tool,
)


def _first_line(cmd: list[str]) -> str:
    """The first line of a command's output that carries a version number."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    lines = (out.stdout or out.stderr).strip().splitlines()
    # p4c-bm2-ss prints its own path first, which may hold a version-like string (a pinned prefix).
    lines = [line for line in lines if line.strip() != cmd[0]]
    return next((line.strip() for line in lines if re.search(r"\d+\.\d+", line)), "unknown")


@cache
def _simple_switch_version() -> str:
    """The version of the simple_switch ackwise runs, with its path when it is not the one on PATH."""
    try:
        path = find_tool(SIMPLE_SWITCH)
    except ToolchainError:
        return "missing"
    version = _first_line([path, "--version"])
    return version if path == shutil.which(SIMPLE_SWITCH) else f"{version} ({path})"


@cache
def _bmv2_build() -> str:
    """How the simple_switch ackwise runs was built (its bm/config.h): fast or logging."""
    try:
        return build_config(find_tool(SIMPLE_SWITCH)).describe()
    except ToolchainError:
        return "missing"


@cache
def _p4c_version() -> str:
    try:
        return _first_line([find_tool(P4C_BMV2), "--version"])
    except ToolchainError:
        return "missing"


def _machine() -> str:
    """The cores and memory the measurement had: a figure depends on them (bmv2 is CPU-bound)."""
    try:
        mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
        memory = f", {mem_kib / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = ""
    return f"{os.cpu_count()} cores{memory}"


def tool_versions() -> dict[str, str]:
    commit = (
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or "no git"
    )
    dirty = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    try:
        import mininet.net

        mininet_version = mininet.net.VERSION
    except ImportError:
        mininet_version = "missing"
    return {
        "ackwise": f"{__version__} ({commit}{'+dirty' if dirty else ''})",
        "simple_switch": _simple_switch_version(),
        "bmv2_build": _bmv2_build(),
        "p4c": _p4c_version(),
        "kernel": platform.release(),
        "machine": _machine(),
        "iperf3": _first_line(["iperf3", "--version"]),
        "mininet": mininet_version,
        "python": platform.python_version(),
    }
