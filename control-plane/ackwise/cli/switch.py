"""ackwise switch start|stop|status, ackwise load: a simple_switch started, inspected and stopped,
its program swapped."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from ackwise.bmv2.client import SwitchError, SwitchUnreachable
from ackwise.bmv2.launcher import RunningSwitch, SwitchSpec, listener_pid, start_switch
from ackwise.bmv2.toolchain import running_build_config
from ackwise.cli.args import I32_MAX, MAX_PORT, SWITCH_PORT, int_in
from ackwise.cli.common import Registry, UsageError, client_for, resolve_program
from ackwise.cli.output import emit
from ackwise.errors import shown


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


def add_commands(registry: Registry) -> None:
    sw = registry.group("switch", "start, stop or inspect a simple_switch")
    p = registry.command(sw, "start", cmd_switch_start, "start simple_switch running a program on interfaces")
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
    p.add_argument(
        "--log",
        metavar="FILE",
        help="write bmv2's packet log to FILE (slows the switch; runs the logging build)",
    )
    p.add_argument("--pcap", metavar="DIR", help="write a pcap per port into DIR")
    p.add_argument("--cpu-port", type=SWITCH_PORT, help="port number of the CPU port (packet-in/out)")
    registry.command(sw, "stop", cmd_switch_stop, "stop the switch started by ackwise on this Thrift port")
    registry.command(sw, "status", cmd_switch_status, "show the program, ports, uptime and build of a switch")
    p = registry.command(
        None, "load", cmd_load, "swap the program of a running switch (its tables start empty)"
    )
    p.add_argument("program", help="program name (build/NAME.json) or path to a compiled JSON")
