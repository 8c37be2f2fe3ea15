"""ackwise.twins.p4names is what `make constants` makes of p4src today: the one Python side of every P4
constant, enum and object name. It fails after any edit of the P4 that changes them until the
module is regenerated."""

from __future__ import annotations

import difflib

import pytest
from p4gen import gen_p4names

from ackwise.twins import p4names


def test_p4names_is_what_p4src_gives() -> None:
    expected = gen_p4names.generate(gen_p4names.read_p4src())
    current = gen_p4names.OUTPUT.read_text(encoding="utf-8")
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                current.splitlines(True), expected.splitlines(True), "p4names.py (committed)", "from p4src"
            )
        )
        pytest.fail(f"control-plane/ackwise/twins/p4names.py is stale: run `make constants`\n{diff[:4000]}")


def test_every_counter_cell_has_a_name() -> None:
    """The counters the control plane reads by cell: one enum member per cell, the cells counted
    by the size the P4 declares them with."""
    assert len(p4names.ThinningStat) == p4names.THINNING_STATS
    assert len(p4names.FilterStat) == p4names.FILTER_STATS
    assert len(p4names.ApStat) == p4names.AP_STATS
    assert len(p4names.MalformedReason) == p4names.MALFORMED_REASONS
    assert len(p4names.DropReason) <= p4names.DROP_REASONS
    assert len(p4names.KeepReason) == p4names.KEEP_REASONS
    for enum in (p4names.ThinningStat, p4names.FilterStat, p4names.ApStat, p4names.MalformedReason):
        assert [m.value for m in enum] == list(range(len(enum))), enum
