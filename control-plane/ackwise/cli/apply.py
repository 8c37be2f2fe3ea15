"""ackwise apply: a whole switch configuration from a YAML or JSON file, all or nothing
(features/apply.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ackwise.cli.common import Registry, client_for
from ackwise.cli.output import emit
from ackwise.features.apply import execute, load_config, plan_config


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


def add_commands(registry: Registry) -> None:
    p = registry.command(
        None,
        "apply",
        cmd_apply,
        "apply entries and settings from a YAML or JSON file: all or nothing, and again changes nothing",
    )
    p.add_argument("file")
    p.add_argument("--check", action="store_true", help="only check the file against the running program")
