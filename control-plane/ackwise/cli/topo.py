"""``ackwise topo`` and ``ackwise demo``: the Mininet test bed from the command line.

``topo up`` keeps the topology in a background process (Mininet hosts live as long as the process
holding them) and records it in a state file; ``topo down`` stops that process, which removes
everything it created. Mininet is imported only when these commands run.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ackwise.bmv2.launcher import release_state_dir, state_dir
from ackwise.cli.common import Registry
from ackwise.errors import InputError, shown
from ackwise.processes import EXIT_INTERRUPTED, stop_on_signals


class TopoError(RuntimeError):
    pass


class TopoUsageError(TopoError, InputError):
    """A topology, parameter or host name the user gave that does not exist or does not fit."""


def state_path() -> Path:
    return state_dir() / "topo.json"


def parse_params(name: str, tokens: list[str]) -> dict[str, Any]:
    """``key=value`` tokens typed by the topology's build() signature."""
    # lazy: the test bed loads Mininet; other commands must not pay for it.
    from ackwise.topologies.catalog import TOPOLOGIES, build_params, check_params, param_type

    if name not in TOPOLOGIES:
        raise TopoUsageError(f"unknown topology {shown(name)}; known: {', '.join(TOPOLOGIES)}")
    known = build_params(TOPOLOGIES[name])
    params: dict[str, Any] = {}
    for token in tokens:
        key, sep, text = token.partition("=")
        if not sep or key not in known:
            raise TopoUsageError(
                f"{name} parameter {shown(token)}: write KEY=VALUE with KEY one of {', '.join(known)}"
            )
        if key in params:
            raise TopoUsageError(f"{key} is given twice")
        kind = param_type(TOPOLOGIES[name], key)
        try:
            if kind is bool:
                if text.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(text)
                params[key] = text.lower() in ("1", "true", "yes", "on")
            elif kind is int:
                params[key] = int(text)
            elif kind is float:
                params[key] = float(text)
            else:
                params[key] = text
        except ValueError:
            what = {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, kind.__name__)
            raise TopoUsageError(f"{key}={text}: give {what}") from None
    check_params(name, params)
    return params


def _summary(testbed: Any) -> dict[str, Any]:
    return {
        "topology": testbed.name,
        "daemon_pid": os.getpid(),
        "hosts": {
            h.name: {"ip": h.IP(), **({"ip6": h.ip6} if h.ip6 else {}), "mac": h.MAC(), "shell_pid": h.pid}
            for h in testbed.hosts
        },
        "switches": {
            s.name: {
                "thrift_port": s.thrift_port,
                "pid": s.running.pid if s.running else None,
                "program": s.program,
            }
            for s in testbed.switches
        },
        "links": [n.describe() for n in testbed.link_nodes()],
        "flows": testbed.flows,
    }


def cmd_topo_up(args: argparse.Namespace) -> int:
    # lazy: the test bed loads Mininet; other commands must not pay for it.
    from ackwise.topologies.testbed import Testbed

    params = parse_params(args.name, args.params)
    existing = _load_state()
    if existing is not None:
        raise TopoError(
            f"topology {existing['topology']} is already up (pid {existing['daemon_pid']}): "
            "'ackwise topo down' first"
        )
    if args.cli:
        from mininet.cli import CLI

        with stop_on_signals(), Testbed.create(args.name, **params) as testbed:
            print(json.dumps(_summary(testbed), indent=2))
            CLI(testbed.net)
        return 0

    state_dir().mkdir(parents=True, exist_ok=True)
    log = state_dir() / "topo.log"
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the process that holds the topology
        os.close(read_fd)
        os.setsid()
        with open(log, "ab", buffering=0) as out:
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
        try:
            testbed = Testbed.create(args.name, **params).start()
        except BaseException as exc:  # report to the parent, which prints it
            os.write(write_fd, f"error: {exc}".encode())
            os._exit(1)
        summary = _summary(testbed)
        state_path().write_text(json.dumps(summary, indent=2))
        stop = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
        signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
        os.write(write_fd, b"ready")
        os.close(write_fd)
        while not stop["now"]:
            signal.pause()
        testbed.stop()
        state_path().unlink(missing_ok=True)
        release_state_dir()
        os._exit(0)
    os.close(write_fd)
    message = os.read(read_fd, 65536).decode()
    os.close(read_fd)
    if message != "ready":
        os.waitpid(pid, 0)
        raise TopoError(message.removeprefix("error: ") or f"topology process died; see {log}")
    state = json.loads(state_path().read_text())
    if args.json:
        print(json.dumps(state, indent=2))
    else:
        print(
            f"{args.name} is up (held by pid {pid}); hosts: "
            + ", ".join(f"{n} {h['ip']}" for n, h in state["hosts"].items())
        )
        print(
            "switches: "
            + ", ".join(f"{n} (Thrift port {s['thrift_port']})" for n, s in state["switches"].items())
        )
        print("run commands on a host with 'ackwise topo exec HOST CMD...'; stop with 'ackwise topo down'")
    return 0


def _load_state() -> dict[str, Any] | None:
    path = state_path()
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    if not Path(f"/proc/{state['daemon_pid']}").exists():
        path.unlink(missing_ok=True)
        return None
    return state


def cmd_topo_down(args: argparse.Namespace) -> int:
    state = _load_state()
    if state is None:
        raise TopoError("no topology is up")
    pid = state["daemon_pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if Path(f"/proc/{pid}").exists():
        raise TopoError(f"topology process {pid} did not exit within 60 s")
    print(f"{state['topology']} is down")
    return 0


def cmd_topo_status(args: argparse.Namespace) -> int:
    state = _load_state()
    if state is None:
        raise TopoError("no topology is up")
    print(json.dumps(state, indent=2))
    return 0


def cmd_topo_exec(args: argparse.Namespace) -> int:
    state = _load_state()
    if state is None:
        raise TopoError("no topology is up")
    host = state["hosts"].get(args.host)
    if host is None:
        raise TopoUsageError(f"no host {shown(args.host)}; hosts: {', '.join(state['hosts'])}")
    if not args.command:
        raise TopoUsageError("give a command to run on the host: ackwise topo exec HOST CMD...")
    return subprocess.run(["mnexec", "-a", str(host["shell_pid"]), *args.command]).returncode


def cmd_demo(args: argparse.Namespace) -> int:
    # lazy: the harness loads matplotlib, scipy and the test bed.
    from ackwise.experiments.harness.demo import run_demo

    try:
        run_demo()
    except KeyboardInterrupt:
        print("\ndemo interrupted; everything it started has been removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def add_commands(registry: Registry) -> None:
    # Nothing here talks to a switch over Thrift.
    command = functools.partial(registry.command, switch=False)
    tp = registry.group(
        "topo", "start and stop Mininet topologies (dumbbell, parking-lot, wlan, chain)", switch=False
    )
    p = command(tp, "up", cmd_topo_up, "start a topology in the background (or in the foreground with --cli)")
    p.add_argument("name", help="dumbbell, parking-lot, wlan or chain")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE", help="topology parameters, e.g. n_pairs=2")
    p.add_argument("--cli", action="store_true", help="stay in the foreground with Mininet's CLI")
    command(tp, "down", cmd_topo_down, "stop the running topology and remove everything it created")
    command(tp, "status", cmd_topo_status, "show the running topology")
    p = command(tp, "exec", cmd_topo_exec, "run a command on a host of the running topology")
    p.add_argument("host")
    p.add_argument("command", nargs=argparse.REMAINDER)
    command(None, "demo", cmd_demo, "the comparison in miniature: nothing on vs a host vs a switch policy")
