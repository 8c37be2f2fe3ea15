"""What a test left on the machine: the processes, interfaces, namespaces and files that exist after
it and did not before it, and their removal.

Only what this test run made counts, so that a run never touches what another user (or another
test run) has going on the same machine:

- processes: descendants of this pytest process. pytest is made a child subreaper
  (``become_subreaper``), so processes that detach from their parent (Mininet's host shells and
  everything started in a host, which mnexec daemonizes) are reparented to it, not to init;
- interfaces: new ones with the names the suite uses (Mininet's NODE-ethN and NODE-cpu[a], the
  ``aw`` prefix of the tests' own, run_ptf.py's ``ap<pid>``);
- namespaces: new ones with the ``aw`` prefix the suite uses;
- files: new /tmp/ackwise* entries (the CLI's state directory /tmp/ackwise too) that no process
  outside this run names on its command line;
- firewall rules: the test bed's INPUT rules in the root namespace (ackwise.topologies.links).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ackwise.topologies.links import firewall_rules

# argv[0] names, or words anywhere on the command line, of the processes a test bed starts.
PROGRAMS = {"simple_switch", "linkem", "tcpdump", "iperf3", "mnexec", "ptf"}
MODULES = re.compile(
    r"ackwise\.(hosts\.agent|ap_agent|holdback_agent|experiments\.(transfer|onoff))|^mininet:|run_ptf\.py$|(^|/)ptf$"
)
TMP_PREFIX = "ackwise"
# Set in this test run's environment (conftest.py), and so in every process it starts: tells a
# process of this run from another run's when reading /proc by hand.
RUN_MARKER = "ACKWISE_TEST_RUN"


OUR_INTERFACES = re.compile(r"^[a-z]+\d*-(eth\d+|cpu|cpua)$|^aw|^ap\d+[stc]")
OUR_NAMESPACES = re.compile(r"^aw")
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Make orphaned descendants of this process its children rather than init's (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _all_processes() -> dict[int, tuple[int, str, list[str]]]:
    """pid -> (parent pid, state, argv) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            argv = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[1]), fields[0], argv)
    return found


def _descendants(table: dict[int, tuple[int, str, list[str]]], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def processes() -> dict[int, str]:
    """pid -> command line of every live (not zombie) process of the test bed's kinds that this
    test run started."""
    table = _all_processes()
    ours = _descendants(table, os.getpid())
    found: dict[int, str] = {}
    for pid in ours:
        _, state, argv = table[pid]
        if not argv or state == "Z":
            continue
        if Path(argv[0]).name in PROGRAMS or any(MODULES.search(a) for a in argv):
            found[pid] = " ".join(argv)[:120]
    return found


def running(name: str) -> set[int]:
    """Pids of the live processes named ``name`` (their comm), on the whole machine; zombies, which
    ``pgrep`` still lists under the name, are not running."""
    return {
        pid
        for pid, (_, state, argv) in _all_processes().items()
        if argv and Path(argv[0]).name == name and state != "Z"
    }


def foreign_command_lines() -> str:
    """The command lines of the processes this test run did not start, joined."""
    table = _all_processes()
    ours = _descendants(table, os.getpid()) | {os.getpid()}
    return "\n".join(" ".join(argv) for pid, (_, _, argv) in table.items() if pid not in ours)


def interfaces() -> set[str]:
    return {p.name for p in Path("/sys/class/net").iterdir() if OUR_INTERFACES.search(p.name)}


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {
        n for n in (line.split()[0] for line in out.splitlines() if line.strip()) if OUR_NAMESPACES.search(n)
    }


def tmp_files() -> set[Path]:
    return set(Path("/tmp").glob(f"{TMP_PREFIX}*"))


@dataclass
class Snapshot:
    pids: set[int]
    intfs: set[str]
    netns: set[str]
    files: set[Path]
    rules: set[str] = field(default_factory=set)

    @classmethod
    def take(cls) -> Snapshot:
        return cls(set(processes()), interfaces(), namespaces(), tmp_files(), firewall())


@dataclass
class Leftovers:
    processes: dict[int, str] = field(default_factory=dict)
    intfs: list[str] = field(default_factory=list)
    netns: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.processes or self.intfs or self.netns or self.files or self.rules)

    def describe(self) -> list[str]:
        return (
            [f"process {cmd} (pid {pid})" for pid, cmd in sorted(self.processes.items())]
            + [f"interface {name}" for name in self.intfs]
            + [f"namespace {name}" for name in self.netns]
            + [f"file {path}" for path in self.files]
            + [f"firewall rule {rule}" for rule in self.rules]
        )


def firewall() -> set[str]:
    """The test bed's INPUT rules in the root namespace (ackwise.topologies.links)."""
    return set(firewall_rules())


def since(before: Snapshot) -> Leftovers:
    foreign = foreign_command_lines()
    return Leftovers(
        {pid: cmd for pid, cmd in processes().items() if pid not in before.pids},
        sorted(interfaces() - before.intfs),
        sorted(namespaces() - before.netns),
        sorted(f for f in tmp_files() - before.files if str(f) not in foreign),
        sorted(firewall() - before.rules),
    )


def remove(left: Leftovers, grace_s: float = 3.0) -> None:
    """Stop the processes (SIGTERM, then SIGKILL), then delete the interfaces, namespaces and files."""
    for pid in left.processes:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(pid) for pid in left.processes):
        time.sleep(0.05)
    for pid in left.processes:
        if _alive(pid):
            _signal(pid, signal.SIGKILL)
    for name in left.netns:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            _signal(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    for name in left.intfs:
        # One end of a veth pair takes its peer with it; the peer may be in the list too.
        if Path(f"/sys/class/net/{name}").exists():
            subprocess.run(["ip", "link", "del", name], capture_output=True)
    for rule in left.rules:
        tool, _, spec = rule.partition(" ")
        subprocess.run([tool, "-w", *spec.replace("-A INPUT", "-D INPUT", 1).split()], capture_output=True)
    for path in left.files:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def reap_orphans() -> list[int]:
    """Collect the exit status of this process's children that have ended (zombies), and return
    their pids.

    A child subreaper inherits every orphan of its descendants (a test bed's switches once their
    Mininet shell is gone, an ``ackwise demo`` run's processes), and must wait for them like its own
    children, or each stays a zombie until the whole run ends: CI saw 12 of them, still named
    simple_switch, which a later test's ``pgrep`` took for a running test bed. Called between tests,
    when no test holds a child it has yet to wait for."""
    reaped = []
    for pid, (ppid, state, _) in _all_processes().items():
        if ppid == os.getpid() and state == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
                reaped.append(pid)
            except ChildProcessError:
                pass
    return reaped


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    if state == "Z":
        try:  # our own child: reap it
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def terminal_job_signals() -> None:
    """``preexec_fn`` for a child a test will stop with Ctrl-C: SIGINT as a terminal's job has it
    (default), also when this run inherited it ignored (a shell ignores SIGINT in a job it starts
    with ``&`` from a script, and exec keeps that). Without it such a child never sees the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
