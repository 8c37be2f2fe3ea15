"""Command-line parsing that refuses bad input in one line, in the user's terms.

argparse prints its usage block and then the error; a script reading stderr wants one line that
says what to fix. Numbers are range-checked here, while parsing, so that a value no switch could
take is refused (exit 2) whether or not a switch is running.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from ackwise.errors import printable, shown

# Thrift fields the CLI fills: entry handles, priorities and register indices are i32 on the
# wire; mirroring session ids stop at 2^15 - 1 in simple_switch; ports at 511 (bmv2's 9-bit
# egress_spec); TCP ports at 65535.
# The CLI's exit codes (ackwise.cli.app).
EXIT_FAILED = 1  # a valid request failed (the switch refused it)
EXIT_USAGE = 2  # the request is wrong as given
EXIT_UNREACHABLE = 3  # no switch answers on the Thrift port
EXIT_TOOLCHAIN = 4  # a toolchain piece is missing

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1
MAX_PORT = 511
MAX_MIRROR_SESSION = 2**15 - 1


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: 'ackwise CMD: WHAT: FIX (see ... --help)'."""

    def error(self, message: str) -> NoReturn:
        # argparse says "argument index: ..." / "argument --priority: ..."; the user typed the value,
        # and the parameter's name is what they can look up in --help.
        message = re.sub(r"^argument ([^:]+): ", r"\1 ", message)
        message = message.replace("invalid choice: ", "")
        print(
            f"{printable(self.prog)}: {printable(message)} (see '{printable(self.prog)} --help')",
            file=sys.stderr,
        )
        sys.exit(2)


def int_in(lo: int, hi: int, unit: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number (decimal or 0x hex) in lo..hi."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not a whole number{_range(lo, hi, unit)}"
            ) from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value}: must be {lo}..{hi}{(' ' + unit) if unit else ''}")
        return value

    parse.__name__ = "number"
    return parse


def float_in(lo: float, hi: float, unit: str = "", lo_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in lo..hi (above lo with ``lo_open``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a number") from None
        if value != value or not (lo < value if lo_open else lo <= value) or not value <= hi:
            bound = f"above {lo:g}" if lo_open else f">= {lo:g}"
            raise argparse.ArgumentTypeError(
                f"{text.strip()}: must be {bound} and <= {hi:g}{(' ' + unit) if unit else ''}"
            )
        return value

    parse.__name__ = "number"
    return parse


def _range(lo: int, hi: int, unit: str) -> str:
    return f" ({lo}..{hi}{(' ' + unit) if unit else ''})"


THRIFT_PORT = int_in(1, 65535)
SWITCH_PORT = int_in(0, MAX_PORT)
HANDLE = int_in(0, I32_MAX)
PRIORITY = int_in(0, I32_MAX)
INDEX = int_in(0, I32_MAX)
SESSION = int_in(0, MAX_MIRROR_SESSION)
