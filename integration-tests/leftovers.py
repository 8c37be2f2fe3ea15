"""What a test left on the machine: the processes, interfaces, namespaces and files that exist after
it and did not before it, and their removal.

Tests run one at a time, so anything of the test bed's kind that appeared while a test ran is that
test's. Processes count when they are of a kind the test bed starts (switches, emulators, agents,
traffic, captures, Mininet host shells); interfaces and named namespaces when they are new; files
when they are new /tmp/ackwise-* entries.
"""

from __future__ import annotations

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
    r"ackwise\.(hosts\.agent|ap_agent|experiments\.(transfer|onoff))|^mininet:|run_ptf\.py$|(^|/)ptf$"
)
TMP_PREFIX = "ackwise-"
# Set in this test run's environment, and so in every process it starts (switches, Mininet shells,
# agents, the CLI): a process without it belongs to someone else on the machine (another test run,
# a benchmark) and is neither blamed on a test nor stopped. Without the variable, every process of
# the test bed's kinds counts, as before.
RUN_MARKER = "ACKWISE_TEST_RUN"


def processes() -> dict[int, str]:
    """pid -> command line of every live (not zombie) process of the test bed's kinds that this
    test run started (see RUN_MARKER)."""
    found: dict[int, str] = {}
    marker = os.environ.get(RUN_MARKER)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if not argv or state == "Z":
            continue
        if Path(argv[0]).name in PROGRAMS or any(MODULES.search(a) for a in argv):
            if marker and not _carries(entry, marker):
                continue
            found[int(entry.name)] = " ".join(argv)[:120]
    return found


def _carries(proc: Path, marker: str) -> bool:
    try:
        environ = (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return True  # cannot tell (it is exiting): count it, as before the marker
    return f"{RUN_MARKER}={marker}".encode() in environ


def interfaces() -> set[str]:
    return {p.name for p in Path("/sys/class/net").iterdir()}


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def tmp_files() -> set[Path]:
    return set(Path("/tmp").glob(f"{TMP_PREFIX}*"))


def firewall() -> set[str]:
    """The test bed's INPUT rules in the root namespace (ackwise.topologies.links)."""
    return set(firewall_rules())


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


def since(before: Snapshot) -> Leftovers:
    """What appeared since ``before`` and is this run's: an interface, namespace or file that a
    live process of another run uses (named on its command line, or a veth named after its pid,
    as run_ptf.py names them) is someone else's on a shared machine, and is left alone."""
    foreign = foreign_processes()
    words = {w for cmd in foreign.values() for w in re.split(r"[\s@,;=':/]+", cmd) if w}
    text = " ".join(foreign.values())

    def theirs_intf(name: str) -> bool:
        if name in words or _peer(name) in words:
            return True
        return any(int(n) in foreign for n in re.findall(r"\d{3,}", name))

    def theirs_ns(name: str) -> bool:
        out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout
        return any(int(pid) in foreign for pid in out.split())

    def theirs_file(path: Path) -> bool:
        port = re.search(r"ackwise-bmv2-(\d+)-", path.name)
        return str(path) in text or (port is not None and f"--thrift-port {port.group(1)}" in text)

    return Leftovers(
        {pid: cmd for pid, cmd in processes().items() if pid not in before.pids},
        sorted(n for n in interfaces() - before.intfs if not theirs_intf(n)),
        sorted(n for n in namespaces() - before.netns if not theirs_ns(n)),
        sorted(f for f in tmp_files() - before.files if not theirs_file(f)),
        sorted(firewall() - before.rules),
    )


def foreign_processes() -> dict[int, str]:
    """pid -> command line of every live process that does not carry this run's marker (without
    a marker, none: everything counts as this run's, as before)."""
    marker = os.environ.get(RUN_MARKER)
    if not marker:
        return {}
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if argv and not _carries(entry, marker):
            found[int(entry.name)] = " ".join(argv)
    return found


def _peer(name: str) -> str:
    """The other end of a veth pair, or ''."""
    try:
        peer_index = Path(f"/sys/class/net/{name}/iflink").read_text().strip()
    except OSError:
        return ""
    for intf in Path("/sys/class/net").iterdir():
        try:
            if (intf / "ifindex").read_text().strip() == peer_index and intf.name != name:
                return intf.name
        except OSError:
            continue
    return ""


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
