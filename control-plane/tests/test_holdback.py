"""The hold-back agent's decisions: the newest copy per flow, due a hold time after the first copy
held on the same base, a new hold once the switch forwarded something newer."""

from __future__ import annotations

import struct

from ackwise.features import holdback
from ackwise.features.holdback import HoldTable
from ackwise.twins.p4names import HEADER_FIELDS_BITS

F = ("10.0.0.2", "10.0.0.1", 5001, 40000)
G = ("10.0.0.4", "10.0.0.3", 5001, 40001)


def test_header_is_the_p4s_holdback_h() -> None:
    """holdback.HEADER unpacks the fields of headers.p4's holdback_h, each at its width, in order."""
    fmt = holdback.HEADER.format
    assert fmt.startswith("!")
    widths = [8 * struct.calcsize("!" + code) for code in fmt[1:]]
    assert widths == [bits for _, bits in HEADER_FIELDS_BITS["holdback_h"]]


def test_newer_copies_replace_and_keep_the_first_due_time() -> None:
    table = HoldTable()
    table.offer(F, 1000, 500, b"a1", 0.2, now=10.0)
    table.offer(F, 2000, 500, b"a2", 0.2, now=10.1)
    assert table.next_due() == 10.2
    assert table.due(10.19) == []
    assert table.due(10.2) == [b"a2"]
    assert table.held == {}
    assert table.counters == {"held": 2, "replaced": 1, "superseded": 0, "stale": 0, "released": 1}


def test_an_older_copy_is_dropped() -> None:
    table = HoldTable()
    table.offer(F, 2000, 500, b"a2", 0.2, now=0.0)
    table.offer(F, 1000, 500, b"a1", 0.2, now=0.01)
    assert table.due(1.0) == [b"a2"]
    assert table.counters["stale"] == 1


def test_a_new_base_starts_a_new_hold() -> None:
    """The switch forwarded an ACK (base 500 -> 1500) after a2 was held: a2 is superseded, and
    the newer copy is due a full hold time after it arrived, not after a2."""
    table = HoldTable()
    table.offer(F, 1000, 500, b"a1", 0.2, now=0.0)
    table.offer(F, 2000, 1500, b"a3", 0.2, now=0.15)
    assert table.next_due() == 0.35
    assert table.due(0.3) == []
    assert table.due(0.35) == [b"a3"]
    assert table.counters["superseded"] == 1


def test_flows_are_held_apart_and_wrap_is_serial() -> None:
    table = HoldTable()
    table.offer(F, 2**32 - 10, 0, b"f1", 0.1, now=0.0)
    table.offer(F, 20, 0, b"f2", 0.1, now=0.01)  # past the wrap: newer
    table.offer(G, 7, 0, b"g1", 0.3, now=0.0)
    assert table.due(0.1) == [b"f2"]
    assert table.due(0.3) == [b"g1"]
