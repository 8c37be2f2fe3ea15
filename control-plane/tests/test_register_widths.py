"""Every register the control plane or a test reads is at most 63 bits wide.

Regression: Thrift returns a register cell as a signed 64-bit value and bmv2 saturates anything
larger, so a 64-bit cell with its top bit set reads as 2^63 - 1. ack_thinning.key_addrs and
ap.key_addrs (the flow key's two addresses in one 64-bit cell) read wrong for any flow with an
address from 128.0.0.0 up, and so did `ackwise flows` and `ackwise ap flows`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ackwise.features.ap import FLOW_REGISTERS as AP_FLOW_REGISTERS
from ackwise.features.thinning import READ_REGISTERS
from ackwise.twins import p4names
from ackwise.twins.p4names import REGISTER_WIDTHS_BITS

REPO = Path(__file__).resolve().parents[2]
# REGISTER_X_Y -> "x.y": how code names a register (a string equal to a name counts too).
REGISTER_CONSTANTS = {
    k: v for k, v in vars(p4names).items() if k.startswith("REGISTER_") and isinstance(v, str)
}


def names_read_in(paths: list[Path]) -> set[str]:
    text = "\n".join(p.read_text() for p in paths)
    words = set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", text))
    named = {REGISTER_CONSTANTS[w] for w in words & REGISTER_CONSTANTS.keys()}
    return named | {name for name in REGISTER_WIDTHS_BITS if f'"{name}"' in text}


def test_registers_the_control_plane_and_tests_read_fit_in_63_bits() -> None:
    python = [
        *(REPO / "control-plane" / "ackwise").rglob("*.py"),
        *(REPO / "ptf-tests").glob("*.py"),
        *(REPO / "experiments").glob("*.py"),
    ]
    python = [p for p in python if p.name != "p4names.py"]  # the generated module names them all
    read = names_read_in(python) | set(READ_REGISTERS) | set(AP_FLOW_REGISTERS.values())
    assert "ack_thinning.slot" in read, "no register reads found"
    too_wide = {name: REGISTER_WIDTHS_BITS[name] for name in read if REGISTER_WIDTHS_BITS[name] > 63}
    assert too_wide == {}, f"read over Thrift but wider than 63 bits: {too_wide}"


def test_read_registers_exist() -> None:
    assert [r for r in (*READ_REGISTERS, *AP_FLOW_REGISTERS.values()) if r not in REGISTER_WIDTHS_BITS] == []
