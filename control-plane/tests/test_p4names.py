"""The reason codes in ackwise.p4names must be the ones constants.p4 defines."""

import re
from enum import IntEnum
from pathlib import Path

import pytest

from ackwise.p4names import DropReason, MalformedReason

CONSTANTS = Path(__file__).resolve().parents[2] / "p4src" / "include" / "constants.p4"


def p4_constants(prefix: str) -> dict[str, int]:
    pattern = re.compile(rf"^const \w+ {prefix}_(\w+) = (\d+);", re.MULTILINE)
    return {name: int(value) for name, value in pattern.findall(CONSTANTS.read_text())}


@pytest.mark.parametrize(("enum", "prefix"), [(MalformedReason, "MALFORMED"), (DropReason, "DROP")])
def test_reason_codes_match_p4(enum: type[IntEnum], prefix: str) -> None:
    p4 = p4_constants(prefix)
    assert p4, f"no {prefix}_* constants found in {CONSTANTS}"
    assert {m.name: m.value for m in enum} == p4
