"""The ``ackwise`` operator CLI.

Exit codes: 0 done, 1 the operation failed, 2 bad usage, 3 no switch answers on the Thrift port,
4 a toolchain piece is missing. Every failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ackwise import __version__
from ackwise.bmv2.client import DEFAULT_THRIFT_PORT, SwitchClient, SwitchError, SwitchUnreachable
from ackwise.bmv2.launcher import RunningSwitch, SwitchSpec, listener_pid, start_switch
from ackwise.bmv2.toolchain import ToolchainError, compiled_program, running_build_config
from ackwise.bmv2.values import format_value
from ackwise.cli import ap as ap_cli
from ackwise.cli import controller as controller_cli
from ackwise.cli import experiment as experiment_cli
from ackwise.cli import holdback as holdback_cli
from ackwise.cli import policy as policy_cli
from ackwise.cli import topo as topo_cli
from ackwise.cli import watch as watch_cli
from ackwise.cli.args import (
    HANDLE,
    I32_MAX,
    I64_MAX,
    INDEX,
    MAX_PORT,
    PRIORITY,
    SESSION,
    SWITCH_PORT,
    THRIFT_PORT,
    Parser,
    int_in,
)
from ackwise.cli.output import emit, render_table
from ackwise.errors import InputError, printable, shown
from ackwise.features import ecn
from ackwise.features.apply import ConfigError, execute, load_config, plan_config
from ackwise.features.queues import set_queue_depth, set_queue_rate

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_TOOLCHAIN = 4

Command = Callable[[argparse.Namespace], int]


class UsageError(InputError):
    """The command line is wrong as given; the message says what to write instead."""


# ---- output ----


def client_for(args: argparse.Namespace) -> SwitchClient:
    return SwitchClient(args.thrift_host, args.thrift_port).connect()


def resolve_program(name: str) -> Path:
    try:
        return compiled_program(name)
    except ToolchainError as exc:
        raise UsageError(str(exc)) from exc


def parse_assignments(tokens: Sequence[str]) -> list[str] | dict[str, str]:
    """``a b c`` stays positional; ``x=a y=b`` becomes a mapping. Mixing is refused."""
    named = [t for t in tokens if "=" in t and not t.startswith("=")]
    if not named:
        return list(tokens)
    if len(named) != len(tokens):
        raise UsageError("give all values positionally or all as name=value, not a mix")
    return dict(t.split("=", 1) for t in tokens)


def parse_port(text: str) -> int | None:
    if text == "all":
        return None
    try:
        port = int(text, 0)
    except ValueError:
        raise UsageError(f"port {shown(text)}: give a port number 0..{MAX_PORT} or 'all'") from None
    if not 0 <= port <= MAX_PORT:
        raise UsageError(f"port {port}: give a port number 0..{MAX_PORT} or 'all'")
    return port


# ---- switch ----


def cmd_switch_start(args: argparse.Namespace) -> int:
    ports: dict[int, str] = {}
    for spec in args.interface:
        port, sep, iface = spec.partition("@")
        if not sep or not port.isdigit() or not iface:
            raise UsageError(f"interface {shown(spec)}: write PORT@IFACE, e.g. 1@veth1")
        if int(port) > MAX_PORT:
            raise UsageError(f"interface {shown(spec)}: port {port}: give 0..{MAX_PORT}")
        if int(port) in ports:
            raise UsageError(f"interface {shown(spec)}: port {port} is given twice")
        if len(iface) > 15 or "/" in iface or not iface.isprintable() or iface != iface.strip():
            raise UsageError(f"interface {shown(spec)}: {shown(iface)} is not an interface name")
        ports[int(port)] = iface
    if args.cpu_port is not None and args.cpu_port in ports:
        raise UsageError(f"--cpu-port {args.cpu_port} is also a data port (-i {args.cpu_port}@...)")
    program = resolve_program(args.program)
    existing = RunningSwitch.load(args.thrift_port)
    if existing is not None and existing.alive:
        raise SwitchError(
            f"a switch started by ackwise (pid {existing.pid}) already runs on "
            f"Thrift port {args.thrift_port}: stop it first or use another --thrift-port"
        )
    spec = SwitchSpec(
        program_json=str(program),
        ports=ports,
        thrift_port=args.thrift_port,
        device_id=args.device_id,
        log_file=str(Path(args.log).resolve()) if args.log else None,
        pcap_dir=str(Path(args.pcap).resolve()) if args.pcap else None,
        cpu_port=args.cpu_port,
    )
    running = start_switch(spec, detach=True)
    running.save()
    data = {"pid": running.pid, "thrift_port": args.thrift_port, "program": str(program), "ports": ports}
    emit(
        args,
        data,
        f"simple_switch pid {running.pid} on Thrift port {args.thrift_port} "
        f"running {program.name} on {', '.join(f'{p}@{i}' for p, i in sorted(ports.items()))}",
    )
    return 0


def cmd_switch_stop(args: argparse.Namespace) -> int:
    running = RunningSwitch.load(args.thrift_port)
    if running is None or not running.alive:
        gone = ""
        if running is not None:  # it died: remove its state file, notification socket and output
            running.stop()
            running.forget()
            gone = f" (pid {running.pid} exited; removed what it left)"
        raise SwitchUnreachable(
            f"no switch started by ackwise runs on Thrift port "
            f"{args.thrift_host}:{args.thrift_port}{gone}: nothing to stop"
        )
    running.stop()
    running.forget()
    emit(
        args,
        {"stopped": running.pid, "thrift_port": args.thrift_port},
        f"stopped simple_switch pid {running.pid} (Thrift port {args.thrift_port})",
    )
    return 0


def cmd_switch_status(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        info = client.info()
        program = client.program
    running = RunningSwitch.load(args.thrift_port)
    pid = running.pid if running and running.alive else None
    # The build of the process serving this port: ackwise's own switch, or whatever listens there.
    local = args.thrift_host in ("localhost", "127.0.0.1", "::1")
    serving = pid or (listener_pid(args.thrift_port) if local else None)
    build = running_build_config(serving) if serving else None
    data = asdict(info) | {
        "pid": pid,
        "program_json": running.spec.program_json if running and running.alive else None,
        "build": build.as_record() if build else None,
        "tables": sorted(program.tables),
        "registers": sorted(program.registers),
        "counters": sorted(program.counters),
    }
    lines = [
        f"switch on {info.host}:{info.thrift_port}: up {info.time_elapsed_us / 1e6:.1f} s, "
        f"device {info.device_id}, program md5 {info.config_md5}",
    ]
    if data["pid"]:
        lines.append(f"pid {data['pid']}, program {data['program_json']}")
    if build is not None:
        lines.append(f"build: {build.describe()}, {build.executable}")
    elif not local:
        lines.append("build: not known (the switch runs on another machine)")
    lines.append(
        "ports: "
        + (", ".join(f"{p.port}@{p.interface}{'' if p.up else ' (down)'}" for p in info.ports) or "none")
    )
    lines.append(f"tables: {', '.join(data['tables']) or 'none'}")
    lines.append(f"registers: {', '.join(data['registers']) or 'none'}")
    lines.append(f"counters: {', '.join(data['counters']) or 'none'}")
    emit(args, data, lines)
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    program = resolve_program(args.program)
    with client_for(args) as client:
        client.load_program(program)
    running = RunningSwitch.load(args.thrift_port)
    if running is not None and running.alive:
        running.spec.program_json = str(program)
        running.save()
    emit(args, {"loaded": str(program)}, f"loaded {program} (tables empty, registers zero)")
    return 0


# ---- tables ----


def split_arrow(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    if "=>" in tokens:
        i = list(tokens).index("=>")
        return list(tokens[:i]), list(tokens[i + 1 :])
    return list(tokens), []


def cmd_table_add(args: argparse.Namespace) -> int:
    key, params = split_arrow(args.values)
    if args.params is not None:
        if params:
            raise UsageError("give the action parameters either after -p or after '=>', not both")
        params = args.params
    key_values, param_values = parse_assignments(key), parse_assignments(params)  # before connecting
    with client_for(args) as client:
        handle = client.table_add(args.table, args.action, key_values, param_values, args.priority)
    emit(args, {"table": args.table, "handle": handle}, f"added entry {handle} to {args.table}")
    return 0


def cmd_table_modify(args: argparse.Namespace) -> int:
    params = parse_assignments(args.params)
    with client_for(args) as client:
        client.table_modify(args.table, args.handle, args.action, params)
    emit(args, {"table": args.table, "handle": args.handle}, f"modified entry {args.handle} of {args.table}")
    return 0


def cmd_table_del(args: argparse.Namespace) -> int:
    if args.handle is not None and args.key:
        raise UsageError("give either --handle or a key, not both")
    if args.handle is None and not args.key:
        raise UsageError("give the entry's --handle or its key")
    key = parse_assignments(args.key)
    with client_for(args) as client:
        if args.handle is not None:
            client.table_delete(args.table, args.handle)
            handle = args.handle
        else:
            handle = client.table_delete_by_key(args.table, key, args.priority)
    emit(args, {"table": args.table, "deleted": handle}, f"deleted entry {handle} of {args.table}")
    return 0


def cmd_table_default(args: argparse.Namespace) -> int:
    params = parse_assignments(args.params)
    with client_for(args) as client:
        client.table_set_default(args.table, args.action, params)
    emit(args, {"table": args.table, "default": args.action}, f"{args.table}: default action {args.action}")
    return 0


def cmd_table_clear(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.table_clear(args.table)
    emit(args, {"table": args.table, "cleared": True}, f"cleared {args.table}")
    return 0


def cmd_table_dump(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        table = client.program.table(args.table)
        entries = client.table_entries(table.name)
        default = client.table_default(table.name)
    widths = {p.name: p.width_bits for a in table.actions for p in client.program.actions[a].params}

    def fmt(params: dict[str, int]) -> str:
        return " ".join(f"{k}={format_value(v, widths.get(k, 0), k)}" for k, v in params.items())

    rows = [[e.handle, " ".join(str(m) for m in e.key), e.action, fmt(e.params)] for e in entries]
    text = [f"{table.name}: {len(entries)} of {table.size} entries"]
    if rows:
        text.append(render_table(["handle", "key", "action", "params"], rows))
    text.append(f"default: {default.action or 'none'} {fmt(default.params)}".rstrip())
    data = {
        "table": table.name,
        "size": table.size,
        "entries": [e.to_dict() for e in entries],
        "default": {"action": default.action, "params": default.params},
    }
    emit(args, data, text)
    return 0


def cmd_table_list(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        program = client.program
    rows, data = [], []
    for t in sorted(program.tables.values(), key=lambda t: t.name):
        key = ", ".join(f"{k.name}:{k.match_type}/{k.width_bits}" for k in t.key)
        rows.append([t.name, key, ", ".join(t.actions), t.size])
        data.append(
            {"table": t.name, "key": [asdict(k) for k in t.key], "actions": list(t.actions), "size": t.size}
        )
    emit(args, data, render_table(["table", "key", "actions", "size"], rows))
    return 0


# ---- registers and counters ----


def cmd_register_read(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        reg = client.program.register(args.register)
        if args.index is None:
            values = client.register_read_all(reg.name)
            emit(
                args,
                {"register": reg.name, "values": values},
                f"{reg.name}[0..{reg.size - 1}] = " + ", ".join(str(v) for v in values),
            )
        else:
            value = client.register_read(reg.name, args.index)
            emit(
                args,
                {"register": reg.name, "index": args.index, "value": value},
                f"{reg.name}[{args.index}] = {value}",
            )
    return 0


def cmd_register_write(args: argparse.Namespace) -> int:
    try:
        value = int(args.value, 0)
    except ValueError:
        raise UsageError(f"value {shown(args.value)} is not a whole number (decimal or 0x hex)") from None
    if value < 0:
        raise UsageError(f"value {value}: registers hold non-negative numbers")
    with client_for(args) as client:
        client.register_write(args.register, args.index, value)
    emit(
        args,
        {"register": args.register, "index": args.index, "value": value},
        f"{args.register}[{args.index}] = {value}",
    )
    return 0


def cmd_register_reset(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.register_reset(args.register)
    emit(args, {"register": args.register, "reset": True}, f"{args.register}: all cells zero")
    return 0


def cmd_counter_read(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        ctr = client.program.counter(args.counter)
        indices = range(ctr.size) if args.index is None else [args.index]
        values = [(i, client.counter_read(ctr.name, i)) for i in indices]
    data = {"counter": ctr.name, "values": [{"index": i, **asdict(v)} for i, v in values]}
    emit(
        args,
        data,
        [
            f"{ctr.name}:",
            render_table(["index", "packets", "bytes"], [[i, v.packets, v.bytes] for i, v in values]),
        ],
    )
    return 0


def cmd_counter_reset(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.counter_reset(args.counter)
    emit(args, {"counter": args.counter, "reset": True}, f"{args.counter}: all cells zero")
    return 0


# ---- ports, mirroring, apply ----


def cmd_port_rate(args: argparse.Namespace) -> int:
    port = parse_port(args.port)
    with client_for(args) as client:
        set_queue_rate(client, port, args.rate_pps)
    emit(
        args,
        {"port": args.port, "rate_pps": args.rate_pps},
        f"port {args.port}: egress queue served at {args.rate_pps} packets/s",
    )
    return 0


def cmd_port_depth(args: argparse.Namespace) -> int:
    port = parse_port(args.port)
    with client_for(args) as client:
        set_queue_depth(client, port, args.depth_pkts)
    emit(
        args,
        {"port": args.port, "depth_pkts": args.depth_pkts},
        f"port {args.port}: egress queue holds {args.depth_pkts} packets",
    )
    return 0


def cmd_port_ecn(args: argparse.Namespace) -> int:
    port = parse_port(args.port)
    if port is None:
        raise UsageError("ECN thresholds are set one port at a time: give a port number, not 'all'")
    # Checked before connecting: a bad setting is the same mistake with or without a switch.
    if args.setting == ["off"]:
        setting: tuple[int, ...] = ()
    elif len(args.setting) == 1:
        setting = (_int(args.setting[0], "K"),)
        ecn.check_threshold(setting[0])
    elif len(args.setting) == 3:
        setting = tuple(_int(v, n) for v, n in zip(args.setting, ("k_min", "k_max", "p_max"), strict=True))
        ecn.check_red(*setting)
    else:
        raise UsageError("give K, or K_MIN K_MAX P_MAX_PERCENT, or 'off'")
    with client_for(args) as client:
        if not setting:
            ecn.disable(client, port)
            text = f"port {port}: no ECN marking"
        elif len(setting) == 1:
            ecn.set_threshold(client, port, setting[0])
            text = f"port {port}: CE when more than {setting[0]} packets are queued"
        else:
            k_min, k_max, p_max = setting
            ecn.set_red(client, port, k_min, k_max, p_max)
            text = (
                f"port {port}: CE with probability up to {p_max} % between {k_min} and {k_max} packets, "
                "always above"
            )
        marked = ecn.marks(client, port)
    emit(args, {"port": port, "setting": args.setting, "marks": marked}, f"{text} (marked so far: {marked})")
    return 0


def _int(text: str, name: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"{name} {shown(text)} is not a whole number") from None


def cmd_mirror_add(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.mirroring_add(args.session, args.port)
    emit(
        args,
        {"session": args.session, "port": args.port},
        f"mirroring session {args.session} -> port {args.port}",
    )
    return 0


def cmd_mirror_del(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.mirroring_delete(args.session)
    emit(args, {"session": args.session, "deleted": True}, f"deleted mirroring session {args.session}")
    return 0


def cmd_mirror_show(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        port = client.mirroring_get(args.session)
    emit(args, {"session": args.session, "port": port}, f"mirroring session {args.session} -> port {port}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    doc = load_config(args.file)  # the file's shape, before any switch is contacted
    with client_for(args) as client:
        ops = plan_config(client, doc, Path.cwd())  # names and values against the program: reads only
        if args.check:
            emit(args, {"valid": True, "changes_at_most": len(ops)}, f"{args.file}: valid ({len(ops)} items)")
            return 0
        result = execute(client, ops)
    text = (
        [*result.changed, f"{result.unchanged} item(s) already in place"]
        if result.unchanged
        else result.changed
    )
    emit(
        args,
        {"applied": result.changed, "unchanged": result.unchanged},
        text or ["nothing to apply"],
    )
    return 0


# ---- parser ----


def build_parser() -> argparse.ArgumentParser:
    common = Parser(add_help=False)
    # SUPPRESS lets these options come before or after the subcommand without one hiding the other.
    common.add_argument(
        "--thrift-port",
        type=THRIFT_PORT,
        default=argparse.SUPPRESS,
        help=f"Thrift port of the switch (default {DEFAULT_THRIFT_PORT}, or $ACKWISE_THRIFT_PORT)",
    )
    common.add_argument(
        "--thrift-host", default=argparse.SUPPRESS, help="host of the switch (default localhost)"
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )

    parser = Parser(
        prog="ackwise",
        parents=[common],
        description="Operate ackwise switches: bmv2 simple_switch driven over its Thrift runtime.",
        epilog="Exit codes: 0 done, 1 failed, 2 bad usage, 3 switch not answering, 4 toolchain missing.",
    )
    parser.add_argument("--version", action="version", version=f"ackwise {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(parent: Any, name: str, fn: Command, help_: str) -> argparse.ArgumentParser:
        p = parent.add_parser(name, parents=[common], help=help_, description=help_)
        p.set_defaults(func=fn)
        return p

    def group(name: str, help_: str) -> Any:
        p = sub.add_parser(name, parents=[common], help=help_, description=help_)
        return p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)

    sw = group("switch", "start, stop or inspect a simple_switch")
    p = add(sw, "start", cmd_switch_start, "start simple_switch running a program on interfaces")
    p.add_argument("program", help="program name (build/NAME.json) or path to a compiled JSON")
    p.add_argument(
        "-i",
        "--interface",
        action="append",
        required=True,
        metavar="PORT@IFACE",
        help="bind switch port PORT to interface IFACE (repeat for each port)",
    )
    p.add_argument("--device-id", type=int_in(0, I32_MAX), default=0)
    p.add_argument("--log", metavar="FILE", help="write bmv2's packet log to FILE (slows the switch)")
    p.add_argument("--pcap", metavar="DIR", help="write a pcap per port into DIR")
    p.add_argument("--cpu-port", type=SWITCH_PORT, help="port number of the CPU port (packet-in/out)")
    add(sw, "stop", cmd_switch_stop, "stop the switch started by ackwise on this Thrift port")
    add(sw, "status", cmd_switch_status, "show the program, ports and uptime of a switch")

    p = add(sub, "load", cmd_load, "swap the program of a running switch (its tables start empty)")
    p.add_argument("program", help="program name (build/NAME.json) or path to a compiled JSON")

    tb = group("table", "add, modify, delete and dump table entries")
    p = add(tb, "add", cmd_table_add, "add an entry: TABLE ACTION KEY... -p PARAM...")
    p.add_argument("table")
    p.add_argument("action")
    p.add_argument(
        "values",
        nargs="*",
        metavar="KEY",
        help="key fields in order, or as name=value ('=>' then parameters also works, quoted)",
    )
    p.add_argument(
        "-p", "--params", nargs="*", metavar="PARAM", help="action parameters in order, or as name=value"
    )
    p.add_argument("--priority", type=PRIORITY, help="priority, for tables with ternary or range keys")
    p = add(tb, "modify", cmd_table_modify, "change the action of an entry")
    p.add_argument("table")
    p.add_argument("handle", type=HANDLE)
    p.add_argument("action")
    p.add_argument("params", nargs="*", metavar="PARAM")
    p = add(tb, "del", cmd_table_del, "delete an entry by handle or by key")
    p.add_argument("table")
    p.add_argument("key", nargs="*", metavar="KEY")
    p.add_argument("--handle", type=HANDLE)
    p.add_argument("--priority", type=PRIORITY)
    p = add(tb, "default", cmd_table_default, "set the default action of a table")
    p.add_argument("table")
    p.add_argument("action")
    p.add_argument("params", nargs="*", metavar="PARAM")
    p = add(tb, "clear", cmd_table_clear, "delete every entry of a table")
    p.add_argument("table")
    p = add(tb, "dump", cmd_table_dump, "show the entries and default action of a table")
    p.add_argument("table")
    add(tb, "list", cmd_table_list, "list the tables of the loaded program")

    rg = group("register", "read, write or reset registers")
    p = add(rg, "read", cmd_register_read, "read one cell, or the whole array without INDEX")
    p.add_argument("register")
    p.add_argument("index", type=INDEX, nargs="?")
    p = add(rg, "write", cmd_register_write, "write one cell")
    p.add_argument("register")
    p.add_argument("index", type=INDEX)
    p.add_argument("value")
    p = add(rg, "reset", cmd_register_reset, "set every cell to zero")
    p.add_argument("register")

    ct = group("counter", "read or reset counters")
    p = add(ct, "read", cmd_counter_read, "read one cell, or every cell without INDEX")
    p.add_argument("counter")
    p.add_argument("index", type=INDEX, nargs="?")
    p = add(ct, "reset", cmd_counter_reset, "set every cell to zero")
    p.add_argument("counter")

    pt = group("port", "egress queue rate and depth per port")
    p = add(pt, "rate", cmd_port_rate, "egress queue service rate in packets per second")
    p.add_argument("port", help="port number, or 'all'")
    p.add_argument("rate_pps", type=int_in(0, I64_MAX, "packets/s"), help="0: no limit (bmv2's default)")
    p = add(pt, "depth", cmd_port_depth, "egress queue capacity in packets")
    p.add_argument("port", help="port number, or 'all'")
    p.add_argument("depth_pkts", type=int_in(1, I32_MAX, "packets"))

    p = add(pt, "ecn", cmd_port_ecn, "ECN marking threshold of a port's egress queue (ack_switch)")
    p.add_argument("port", help="port number")
    p.add_argument(
        "setting",
        nargs="+",
        metavar="SETTING",
        help="K (packets): mark above it; or K_MIN K_MAX P_MAX_PERCENT (RED-like); or 'off'",
    )

    mr = group("mirror", "mirroring (clone) sessions")
    p = add(mr, "add", cmd_mirror_add, "send clones of session SESSION to PORT")
    p.add_argument("session", type=SESSION)
    p.add_argument("port", type=SWITCH_PORT)
    p = add(mr, "del", cmd_mirror_del, "delete a mirroring session")
    p.add_argument("session", type=SESSION)
    p = add(mr, "show", cmd_mirror_show, "show the port of a mirroring session")
    p.add_argument("session", type=SESSION)

    p = add(
        sub,
        "apply",
        cmd_apply,
        "apply entries and settings from a YAML or JSON file: all or nothing, and again changes nothing",
    )
    p.add_argument("file")
    p.add_argument("--check", action="store_true", help="only check the file against the running program")

    policy_cli.add_commands(sub, add, group, client_for)
    ap_cli.add_commands(add, group, client_for)
    holdback_cli.add_commands(add, group, client_for)
    topo_cli.add_commands(sub, add, group)
    experiment_cli.add_commands(sub, add, group)
    watch_cli.add_commands(sub, add, client_for)
    controller_cli.add_commands(sub, add, group)
    return parser


def thrift_port_from_env() -> int:
    text = os.environ.get("ACKWISE_THRIFT_PORT", "")
    if not text:
        return DEFAULT_THRIFT_PORT
    try:
        port = int(text)
    except ValueError:
        raise UsageError(f"ACKWISE_THRIFT_PORT={shown(text)}: give a TCP port number 1..65535") from None
    if not 1 <= port <= 65535:
        raise UsageError(f"ACKWISE_THRIFT_PORT={port}: give a TCP port number 1..65535")
    return port


def fail(exc: BaseException | str) -> None:
    """The one line on stderr: printable whatever bytes the user typed, never more than a line."""
    print(f"ackwise: {printable(str(exc))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error already printed (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        args.thrift_port = getattr(args, "thrift_port", None) or thrift_port_from_env()
        args.thrift_host = getattr(args, "thrift_host", None) or "localhost"
        args.json = getattr(args, "json", False)
        return int(args.func(args))
    # The order matters: a SwitchInputError is a SwitchError too, and it is the user's to fix.
    except InputError as exc:
        fail(exc)
        return EXIT_USAGE
    except SwitchUnreachable as exc:
        fail(exc)
        return EXIT_UNREACHABLE
    except ToolchainError as exc:
        fail(exc)
        return EXIT_TOOLCHAIN
    except (
        SwitchError,
        ConfigError,
        topo_cli.TopoError,
        experiment_cli.ExperimentCliError,
        LookupError,
        ValueError,
        OSError,
        RuntimeError,
    ) as exc:
        fail(exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: still one line, never a traceback, but say it is one
        if os.environ.get("ACKWISE_DEBUG"):
            raise
        fail(
            f"internal error ({type(exc).__name__}: {exc}); please report it with the command "
            "(ACKWISE_DEBUG=1 shows the traceback)"
        )
        return EXIT_FAILED


def run() -> None:
    sys.exit(main())
