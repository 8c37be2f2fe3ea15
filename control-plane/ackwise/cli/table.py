"""ackwise table: entries added, modified, deleted and dumped; default actions; the tables of the
loaded program."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from ackwise.bmv2.values import format_value
from ackwise.cli.args import HANDLE, PRIORITY
from ackwise.cli.common import Registry, UsageError, client_for, parse_assignments, split_arrow
from ackwise.cli.output import emit, render_table


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


def add_commands(registry: Registry) -> None:
    tb = registry.group("table", "add, modify, delete and dump table entries")
    p = registry.command(tb, "add", cmd_table_add, "add an entry: TABLE ACTION KEY... -p PARAM...")
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
    p = registry.command(tb, "modify", cmd_table_modify, "change the action of an entry")
    p.add_argument("table")
    p.add_argument("handle", type=HANDLE)
    p.add_argument("action")
    p.add_argument("params", nargs="*", metavar="PARAM")
    p = registry.command(tb, "del", cmd_table_del, "delete an entry by handle or by key")
    p.add_argument("table")
    p.add_argument("key", nargs="*", metavar="KEY")
    p.add_argument("--handle", type=HANDLE)
    p.add_argument("--priority", type=PRIORITY)
    p = registry.command(tb, "default", cmd_table_default, "set the default action of a table")
    p.add_argument("table")
    p.add_argument("action")
    p.add_argument("params", nargs="*", metavar="PARAM")
    p = registry.command(tb, "clear", cmd_table_clear, "delete every entry of a table")
    p.add_argument("table")
    p = registry.command(tb, "dump", cmd_table_dump, "show the entries and default action of a table")
    p.add_argument("table")
    registry.command(tb, "list", cmd_table_list, "list the tables of the loaded program")
