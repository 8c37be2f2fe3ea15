"""Interfaces a test bed that was killed (SIGKILL, a crash, a machine restored mid-run) left in the
root namespace. Mininet creates its veth pairs without deleting old ones of the same name, so one
such leftover makes every later test bed with that name fail with "RTNETLINK answers: File exists".

A leftover is removed only when no running process still uses it: a simple_switch with it as a
port, a linkem whose configuration names it, or any process that has it on its command line (the AP
agent). Otherwise the test bed refuses to start and says which process to stop.

The check reads /proc/PID/cmdline (and linkem's configuration) at the moment the test bed starts.
A process that has only just been started may not be seen yet: for a moment its command line can
be empty or still the launcher's. Whoever starts a process and then relies on this check must
first wait until the process is observable (it answered, or ``intf_users`` names it)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mininet.node import Host


def planned_root_intfs(topo: Any) -> list[str]:
    """Names of the interfaces a Mininet ``Topo`` will create in the root namespace: those of its
    nodes that are not hosts (switches and emulator nodes), plus each bmv2 CPU-port veth pair."""
    root_nodes = set()
    names: list[str] = []
    for node in topo.nodes():
        info = topo.nodeInfo(node)
        cls = info.get("cls")
        if cls is not None and issubclass(cls, Host):
            continue
        root_nodes.add(node)
        if info.get("cpu_port") is not None:
            names += [f"{node}-cpu", f"{node}-cpua"]
    for _, _, info in topo.links(withInfo=True):
        for node, port in ((info["node1"], info["port1"]), (info["node2"], info["port2"])):
            if node in root_nodes and port is not None:
                names.append(f"{node}-eth{port}")
    return names


def existing(names: Iterable[str]) -> list[str]:
    return [name for name in names if Path(f"/sys/class/net/{name}").exists()]


def _processes() -> Iterable[tuple[int, list[str]]]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        yield int(entry.name), [arg.decode(errors="replace") for arg in argv if arg]


def intf_users(names: Iterable[str]) -> dict[str, str]:
    """interface -> "program (pid N)" for each interface some running process still uses."""
    wanted = set(names)
    users: dict[str, str] = {}
    for pid, argv in _processes():
        if not argv:
            continue
        program = Path(argv[0]).name
        words = set(argv)
        for arg in argv:
            # simple_switch ports are "-i N@name"
            match = re.fullmatch(r"\d+@(.+)", arg)
            if match:
                words.add(match.group(1))
        if program == "linkem" and len(argv) > 1:
            try:
                words.update(Path(argv[1]).read_text().split())
            except OSError:
                pass
        for name in wanted & words:
            users.setdefault(name, f"{program} (pid {pid})")
    return users


class StaleInterfaceInUse(RuntimeError):
    pass


def remove_stale_intfs(topo: Any) -> list[str]:
    """Delete the leftovers among ``planned_root_intfs(topo)``; return their names. Raises
    StaleInterfaceInUse, naming the process, if a running process still uses one."""
    stale = existing(planned_root_intfs(topo))
    if not stale:
        return []
    users = intf_users(stale)
    if users:
        listed = ", ".join(f"{name} (used by {who})" for name, who in sorted(users.items()))
        raise StaleInterfaceInUse(
            f"interfaces this topology needs already exist: {listed}. Another test bed is running: "
            "stop it with 'ackwise topo down' (or stop those processes) and try again"
        )
    for name in stale:
        # Deleting one end of a veth pair removes its peer too; the peer may be in this list.
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    left = existing(stale)
    if left:
        raise StaleInterfaceInUse(f"could not remove leftover interfaces {', '.join(left)}: run 'mn -c'")
    return stale
