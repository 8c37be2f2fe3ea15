"""Every register the control plane or a test reads is at most 63 bits wide.

Regression: Thrift returns a register cell as a signed 64-bit value and bmv2 saturates anything
larger, so a 64-bit cell with its top bit set reads as 2^63 - 1. ack_thinning.key_addrs and
ap.key_addrs (the flow key's two addresses in one 64-bit cell) read wrong for any flow with an
address from 128.0.0.0 up, and so did `ackwise flows` and `ackwise ap flows`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ackwise.ap import FLOW_REGISTERS as AP_FLOW_REGISTERS
from ackwise.thinning import READ_REGISTERS

REPO = Path(__file__).resolve().parents[2]
DECLARATION = re.compile(r'@name\("\.([\w.]+)"\)\s*register<bit<(\d+)>>')


def register_widths() -> dict[str, int]:
    widths = {}
    for source in (REPO / "p4src").rglob("*.p4"):
        for name, width in DECLARATION.findall(source.read_text()):
            widths[name] = int(width)
    return widths


def names_read_in(paths: list[Path], widths: dict[str, int]) -> set[str]:
    text = "\n".join(p.read_text() for p in paths)
    return {name for name in widths if f'"{name}"' in text}


def test_registers_the_control_plane_and_tests_read_fit_in_63_bits() -> None:
    widths = register_widths()
    assert "ack_thinning.slot" in widths, "no register declarations found"
    python = [*(REPO / "control-plane" / "ackwise").rglob("*.py"), *(REPO / "ptf-tests").glob("*.py")]
    read = names_read_in(python, widths) | set(READ_REGISTERS) | set(AP_FLOW_REGISTERS.values())
    too_wide = {name: widths[name] for name in read if name in widths and widths[name] > 63}
    assert too_wide == {}, f"read over Thrift but wider than 63 bits: {too_wide}"


def test_read_registers_exist() -> None:
    widths = register_widths()
    assert [r for r in (*READ_REGISTERS, *AP_FLOW_REGISTERS.values()) if r not in widths] == []
