"""Start and stop simple_switch processes.

A switch is started for one compiled program on given interfaces, and is ready when its Thrift
server answers. It is stopped by its pid, and only if that pid is still the simple_switch we started.
Switches started from the CLI outlive it; their pid and settings are kept in a state file named
after the Thrift port, so later commands can find them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from ackwise.bmv2.client import (
    SwitchClient,
    SwitchError,
    SwitchOperationError,
    SwitchUnreachable,
    port_answers,
)
from ackwise.bmv2.toolchain import SIMPLE_SWITCH, find_tool

STATE_DIR_ENV = "ACKWISE_STATE_DIR"


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV, "/tmp/ackwise"))


def release_state_dir() -> None:
    """Remove the state directory if nothing is left in it: whoever made it (a switch, a topology)
    has gone, and an empty directory in /tmp is a leftover too. Another switch's files keep it."""
    with contextlib.suppress(OSError):
        state_dir().rmdir()


@dataclass
class SwitchSpec:
    program_json: str
    ports: dict[int, str]  # port number -> interface
    thrift_port: int = 9090
    device_id: int = 0
    log_file: str | None = None  # bmv2 event log; off when None (logging slows the switch down)
    log_level: str = "debug"
    pcap_dir: str | None = None
    cpu_port: int | None = None
    enable_swap: bool = True  # lets 'ackwise load' replace the running program
    extra_args: list[str] = field(default_factory=list)
    # A command the switch runs under, its program last (valgrind for the bench's instruction
    # counts); the process is then the wrapper's, with simple_switch among its arguments.
    wrapper: list[str] = field(default_factory=list)

    @property
    def notifications_path(self) -> str:
        return f"/tmp/ackwise-bmv2-{self.thrift_port}-notifications.ipc"

    def executable(self) -> str:
        """The simple_switch this spec runs (toolchain.find_tool's rules)."""
        return find_tool(SIMPLE_SWITCH, logging=self.log_file is not None)

    def command(self) -> list[str]:
        # A log needs a build that writes bmv2's trace: the logging build where the default is fast.
        cmd = [*self.wrapper, self.executable()]
        for port, iface in sorted(self.ports.items()):
            cmd += ["-i", f"{port}@{iface}"]
        cmd += ["--thrift-port", str(self.thrift_port), "--device-id", str(self.device_id)]
        # Each switch needs its own notification socket, or a second one on this machine steals it;
        # the Thrift port is unique among running switches. (/tmp: Unix socket paths are short.)
        cmd += ["--notifications-addr", f"ipc://{self.notifications_path}"]
        if self.log_file:
            cmd += ["--log-file", self.log_file, "--log-level", self.log_level, "--log-flush"]
        else:
            # bmv2's default level is trace, and with no log file it logs to a null sink: every
            # table, condition, primitive and register line is still formatted (time stamp, thread
            # id: a gettid system call each) and thrown away. That was most of the switch's CPU
            # time per packet (docs/performance.md, "The log level").
            cmd += ["--log-level", "off"]
        if self.pcap_dir:
            cmd.append(f"--pcap={self.pcap_dir}")  # boost implicit value: must be joined
        cmd += self.extra_args
        cmd.append(self.program_json)
        target_options = ["--enable-swap"] if self.enable_swap else []  # simple_switch's own options
        if self.cpu_port is not None:
            target_options += ["--cpu-port", str(self.cpu_port)]
        if target_options:
            cmd += ["--", *target_options]
        return cmd


@dataclass
class RunningSwitch:
    spec: SwitchSpec
    pid: int
    started_at: float
    output_file: str

    @property
    def alive(self) -> bool:
        return _is_simple_switch(self.pid, bool(self.spec.wrapper))

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop this switch (SIGTERM, then SIGKILL); a no-op if it already exited. Its
        notification socket and output file go with it."""
        self._terminate(timeout_s)
        Path(self.spec.notifications_path).unlink(missing_ok=True)
        Path(self.output_file).unlink(missing_ok=True)
        release_state_dir()
        # The next switch on this port must not find it taken: say so here if something still holds it.
        deadline = time.monotonic() + 2.0
        while port_answers("localhost", self.spec.thrift_port, timeout_s=0.2):
            if time.monotonic() > deadline:
                raise SwitchError(
                    f"simple_switch pid {self.pid} exited but Thrift port {self.spec.thrift_port} "
                    f"still answers{listener(self.spec.thrift_port)}"
                )
            time.sleep(0.05)

    def _terminate(self, timeout_s: float) -> None:
        if not self.alive:
            _reap(self.pid)
            return
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            _reap(self.pid)
            if not self.alive:
                return
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        for _ in range(100):
            _reap(self.pid)
            if not self.alive:
                return
            time.sleep(0.05)
        raise SwitchError(f"simple_switch pid {self.pid} did not exit after SIGKILL")

    def client(self) -> SwitchClient:
        return SwitchClient("localhost", self.spec.thrift_port).connect()

    # ---- state file, for switches that outlive the process that started them ----

    def save(self) -> Path:
        path = state_file(self.spec.thrift_port)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, thrift_port: int) -> RunningSwitch | None:
        path = state_file(thrift_port)
        if not path.exists():
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
        spec = doc["spec"]
        spec["ports"] = {int(k): v for k, v in spec["ports"].items()}
        return cls(SwitchSpec(**spec), doc["pid"], doc["started_at"], doc["output_file"])

    def forget(self) -> None:
        state_file(self.spec.thrift_port).unlink(missing_ok=True)
        release_state_dir()


def state_file(thrift_port: int) -> Path:
    return state_dir() / f"switch-{thrift_port}.json"


def start_switch(spec: SwitchSpec, timeout_s: float = 20.0, detach: bool = False) -> RunningSwitch:
    """Start simple_switch and wait until its Thrift server answers.

    ``detach`` puts it in its own session so that it outlives the caller (the CLI uses this).
    """
    if not Path(spec.program_json).is_file():
        raise SwitchError(f"{spec.program_json} does not exist: run 'make build' first")
    if port_answers("localhost", spec.thrift_port):
        raise SwitchError(
            f"Thrift port {spec.thrift_port} is already in use{listener(spec.thrift_port)}: stop that switch "
            f"('ackwise --thrift-port {spec.thrift_port} switch stop') or pick another port"
        )
    for iface in spec.ports.values():
        if not Path(f"/sys/class/net/{iface}").exists():
            raise SwitchError(f"interface {iface} does not exist: create it before starting the switch")
    output_file = str(state_dir() / f"switch-{spec.thrift_port}.out")
    with _open_in_state_dir(output_file) as out:
        proc = subprocess.Popen(
            spec.command(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=detach,
        )
    running = RunningSwitch(spec, proc.pid, time.time(), output_file)
    try:
        _wait_until_ready(proc, running, timeout_s)
    except BaseException:
        with contextlib.suppress(SwitchError):  # the reason it failed matters more
            running.stop()
        raise
    return running


def _open_in_state_dir(path: str) -> BinaryIO:
    """Open a file in the state directory, making the directory; once more if another switch's
    stop removed the (empty) directory in between."""
    try:
        state_dir().mkdir(parents=True, exist_ok=True)
        return open(path, "wb")
    except FileNotFoundError:
        state_dir().mkdir(parents=True, exist_ok=True)
        return open(path, "wb")


def _wait_until_ready(proc: subprocess.Popen[bytes], running: RunningSwitch, timeout_s: float) -> None:
    spec, output_file = running.spec, running.output_file
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            tail = Path(output_file).read_text(errors="replace").strip().splitlines()[-3:]
            Path(output_file).unlink(missing_ok=True)
            raise SwitchError(
                f"simple_switch exited with status {proc.returncode} while starting: "
                + (" | ".join(tail) or "no output")
            )
        if port_answers("localhost", spec.thrift_port):
            try:
                with SwitchClient("localhost", spec.thrift_port, timeout_s=2.0) as client:
                    client.info()
                return
            except SwitchUnreachable:
                pass
            except SwitchOperationError as exc:
                if not not_ready_yet(exc):
                    raise
        if time.monotonic() > deadline:
            tail = Path(output_file).read_text(errors="replace").strip().splitlines()[-3:]
            raise SwitchError(
                f"simple_switch did not answer on Thrift port {spec.thrift_port} within "
                f"{timeout_s:.0f} s: " + (" | ".join(tail) or "no output")
            )
        time.sleep(0.05)


def not_ready_yet(exc: SwitchOperationError) -> bool:
    """bmv2 starts its Thrift server before it registers the simple_switch service: a call in
    between fails with "Unknown service: simple_switch"."""
    return "Unknown service: simple_switch" in str(exc)


def _listeners(port: int) -> list[tuple[str, int]]:
    """(name, pid) of the processes listening on TCP ``port`` on this machine, as ss tells."""
    out = subprocess.run(
        ["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=False
    ).stdout
    return [(name, int(pid)) for name, pid in re.findall(r'\("([^"]+)",pid=(\d+)', out)]


def listener(port: int) -> str:
    """ " by NAME (pid N)" for the process listening on TCP ``port``, if ss can tell."""
    return "".join(f" by {name} (pid {pid})" for name, pid in _listeners(port)[:1])


def listener_pid(port: int) -> int | None:
    """The pid of the process listening on TCP ``port`` here, if ss can tell."""
    found = _listeners(port)
    return found[0][1] if found else None


def _is_simple_switch(pid: int, wrapped: bool = False) -> bool:
    """Whether pid is a simple_switch (or, wrapped, a process with simple_switch among its
    arguments) that still has a live thread. A multi-threaded process whose main thread exited
    shows as a zombie while its other threads (and sockets) live on."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    names = [os.path.basename(arg.decode(errors="replace")) for arg in cmdline.split(b"\0")]
    if cmdline and SIMPLE_SWITCH not in (names if wrapped else names[:1]):
        return False
    for task in tasks:
        try:
            if (task / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":
                return True
        except OSError:
            continue
    return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
