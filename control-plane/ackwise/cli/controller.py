"""``ackwise controller run`` and ``ackwise controller check``: the per-flow ACK policy controller."""

from __future__ import annotations

import argparse
import json
import sys

from ackwise.bmv2.client import DEFAULT_THRIFT_PORT
from ackwise.cli.args import EXIT_USAGE, int_in
from ackwise.cli.common import Registry
from ackwise.cli.output import emit, render_records
from ackwise.controller.config import EXAMPLE, ControllerConfigError, describe, load_config, with_interval
from ackwise.controller.loop import Controller, SwitchEndpoint, parse_switches
from ackwise.errors import printable
from ackwise.processes import stop_between_steps


def cmd_check(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
    except ControllerConfigError as exc:
        if args.json:
            print(json.dumps({"file": args.file, "ok": False, "problems": exc.problems}, indent=2))
        else:
            # The report (every problem) is this command's output; stderr gets the one-line verdict.
            for problem in exc.problems:
                print(f"{exc.origin}: {problem}")
            n = len(exc.problems)
            plural = "s" if n > 1 else ""
            print(
                f"ackwise: {printable(exc.origin)}: {n} problem{plural} (listed above): fix them",
                file=sys.stderr,
            )
        return EXIT_USAGE
    rules = describe(config)
    managed = sum(not r["ignore"] for r in rules)
    emit(
        args,
        {
            "file": args.file,
            "ok": True,
            "interval_ms": config.interval_ms,
            "max_rules_per_switch": config.max_rules_per_switch,
            "forget_after_s": config.forget_after_s,
            "rules": rules,
        },
        [
            f"{args.file}: OK: {len(rules)} rules ({managed} managed, {len(rules) - managed} ignore), "
            f"every {config.interval_ms} ms, at most {config.max_rules_per_switch} per-flow rules per switch",
            render_records(("name", "match", "ignore", "d", "policies"), rules, "no rules"),
        ],
    )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if args.interval_ms is not None:
        config = with_interval(config, args.interval_ms)
    switches = (
        parse_switches(args.switch) if args.switch else [SwitchEndpoint(args.thrift_host, args.thrift_port)]
    )
    controller = Controller(switches, config)
    controller.connect_all()  # a switch that does not answer at start is an error, later only logged
    controller.log_event(
        "start",
        switches=[str(s) for s in switches],
        config=args.config,
        rules=len(config.rules),
        interval_ms=config.interval_ms,
    )
    # Ctrl-C (or SIGTERM, SIGHUP) is the way to stop it: the interval under way ends whole, then
    # it stops; a second Ctrl-C stops it at once.
    with stop_between_steps() as stop:
        try:
            controller.run(stop=stop)
        except KeyboardInterrupt:
            pass
        finally:
            if args.remove_rules_on_exit:
                controller.release()
            left = sum(len(v.installed) for v in controller.views)
            controller.log_event(
                "stop",
                rules_left=left,
                reason="the switches keep these rules; a controller started later adopts them"
                if left
                else "no rules left",
            )
            controller.close()
    return 0


def add_commands(registry: Registry) -> None:
    ctl = registry.group("controller", "tune each flow's ACK policy from what the switches measure")
    p = registry.command(
        ctl,
        "run",
        cmd_run,
        "every interval: read the flows, decide per flow (ramp-up, saturated, congested, misbehaving), "
        "write per-flow policy rules; one JSON line per change",
    )
    p.add_argument(
        "--switch",
        action="append",
        metavar="HOST:PORT",
        help=f"a switch's Thrift endpoint (repeat for several; default --thrift-host:--thrift-port, "
        f"{DEFAULT_THRIFT_PORT})",
    )
    p.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help=f"the YAML rules: which flows, limits, thresholds (example: {EXAMPLE})",
    )
    p.add_argument(
        "--interval-ms", type=int_in(1, 2**31 - 1, "ms"), metavar="N", help="override the file's interval_ms"
    )
    p.add_argument(
        "--remove-rules-on-exit",
        action="store_true",
        help="delete the controller's per-flow rules when it stops (default: the switches keep them)",
    )
    p = registry.command(
        ctl, "check", cmd_check, "check a controller configuration; lists every problem", switch=False
    )
    p.add_argument("file")
