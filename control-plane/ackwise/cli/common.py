"""What every command module of the CLI shares: the registry it adds its commands to (one
``add_commands(registry)`` signature), the switch client, and the parsing of values the commands
have in common."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import SwitchClient
from ackwise.bmv2.toolchain import ToolchainError, compiled_program
from ackwise.cli.args import MAX_PORT
from ackwise.errors import InputError, shown

Command = Callable[[argparse.Namespace], int]


class UsageError(InputError):
    """The command line is wrong as given; the message says what to write instead."""


@dataclass
class Registry:
    """Where a command module adds its commands. A command that talks to a switch gets
    ``--thrift-port`` and ``--thrift-host``; every command gets ``--json``. (Both also work before
    the command, ``ackwise --thrift-port 9091 switch stop``; app.main refuses switch options given
    to a command that has no switch.)"""

    sub: Any  # the top-level subparsers
    switch_options: argparse.ArgumentParser
    output_options: argparse.ArgumentParser

    def group(self, name: str, help_: str, *, switch: bool = True) -> Any:
        """A command group (``ackwise NAME SUBCOMMAND``): its subparsers. Its options may also come
        between the group and the subcommand."""
        p = self.sub.add_parser(name, parents=self._options(switch), help=help_, description=help_)
        return p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)

    def _options(self, switch: bool) -> list[argparse.ArgumentParser]:
        return [self.switch_options, self.output_options] if switch else [self.output_options]

    def command(
        self, parent: Any | None, name: str, fn: Command, help_: str, *, switch: bool = True
    ) -> argparse.ArgumentParser:
        """A command in ``parent`` (a group's subparsers, or None: a top-level command)."""
        p = (parent or self.sub).add_parser(
            name, parents=self._options(switch), help=help_, description=help_
        )
        p.set_defaults(func=fn, uses_switch=switch)
        return p


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


def split_arrow(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    if "=>" in tokens:
        i = list(tokens).index("=>")
        return list(tokens[:i]), list(tokens[i + 1 :])
    return list(tokens), []
