"""The ``ackwise`` operator CLI: assembles the command modules' parsers and runs one command.

Exit codes: 0 done, 1 the operation failed, 2 bad usage, 3 no switch answers on the Thrift port,
4 a toolchain piece is missing. Every failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ackwise import __version__
from ackwise.bmv2.client import DEFAULT_THRIFT_PORT, SwitchError, SwitchUnreachable
from ackwise.bmv2.toolchain import ToolchainError
from ackwise.cli import (
    ap,
    apply,
    controller,
    experiment,
    holdback,
    policy,
    port,
    register,
    switch,
    table,
    topo,
    watch,
)
from ackwise.cli.args import EXIT_FAILED, EXIT_TOOLCHAIN, EXIT_UNREACHABLE, EXIT_USAGE, THRIFT_PORT, Parser
from ackwise.cli.common import Registry, UsageError
from ackwise.errors import InputError, printable, shown
from ackwise.features.apply import ConfigError
from ackwise.processes import EXIT_INTERRUPTED

# Every command group, in the order `ackwise --help` lists them.
MODULES = (switch, table, register, port, apply, policy, ap, holdback, topo, experiment, watch, controller)


def build_parser() -> argparse.ArgumentParser:
    # SUPPRESS lets these options come before or after the command without one hiding the other.
    switch_options = Parser(add_help=False)
    switch_options.add_argument(
        "--thrift-port",
        type=THRIFT_PORT,
        default=argparse.SUPPRESS,
        help=f"Thrift port of the switch (default {DEFAULT_THRIFT_PORT}, or $ACKWISE_THRIFT_PORT)",
    )
    switch_options.add_argument(
        "--thrift-host", default=argparse.SUPPRESS, help="host of the switch (default localhost)"
    )
    output_options = Parser(add_help=False)
    output_options.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    parser = Parser(
        prog="ackwise",
        parents=[switch_options, output_options],
        description="Operate ackwise switches: bmv2 simple_switch driven over its Thrift runtime.",
        epilog="Exit codes: 0 done, 1 failed, 2 bad usage, 3 switch not answering, 4 toolchain missing.",
    )
    parser.add_argument("--version", action="version", version=f"ackwise {__version__}")
    registry = Registry(
        parser.add_subparsers(dest="command", metavar="COMMAND", required=True),
        switch_options,
        output_options,
    )
    for module in MODULES:
        module.add_commands(registry)
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
        if not args.uses_switch:
            given = [o for o in ("thrift_port", "thrift_host") if hasattr(args, o)]
            if given:
                name = " ".join(x for x in (args.command, getattr(args, "subcommand", None)) if x)
                raise UsageError(
                    f"--{given[0].replace('_', '-')} means nothing to '{name}': it talks to no switch"
                )
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
        topo.TopoError,
        experiment.ExperimentCliError,
        LookupError,
        ValueError,
        OSError,
        RuntimeError,
    ) as exc:
        fail(exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
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
