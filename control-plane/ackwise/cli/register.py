"""ackwise register and ackwise counter: read, write and reset the program's registers and counters."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from ackwise.cli.args import INDEX
from ackwise.cli.common import Registry, UsageError, client_for
from ackwise.cli.output import emit, render_table
from ackwise.errors import shown


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


def add_commands(registry: Registry) -> None:
    rg = registry.group("register", "read, write or reset registers")
    p = registry.command(rg, "read", cmd_register_read, "read one cell, or the whole array without INDEX")
    p.add_argument("register")
    p.add_argument("index", type=INDEX, nargs="?")
    p = registry.command(rg, "write", cmd_register_write, "write one cell")
    p.add_argument("register")
    p.add_argument("index", type=INDEX)
    p.add_argument("value")
    p = registry.command(rg, "reset", cmd_register_reset, "set every cell to zero")
    p.add_argument("register")

    ct = registry.group("counter", "read or reset counters")
    p = registry.command(ct, "read", cmd_counter_read, "read one cell, or every cell without INDEX")
    p.add_argument("counter")
    p.add_argument("index", type=INDEX, nargs="?")
    p = registry.command(ct, "reset", cmd_counter_reset, "set every cell to zero")
    p.add_argument("counter")
