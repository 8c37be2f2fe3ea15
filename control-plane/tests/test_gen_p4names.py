"""tools/gen_p4names.py (``make constants``): what it reads from P4 sources, what it writes, and what
it refuses rather than guess."""

from __future__ import annotations

from enum import IntEnum
from types import ModuleType
from typing import Any

import pytest
from p4gen import gen_p4names

CONSTANTS = """\
#ifndef X_CONSTANTS_P4
#define X_CONSTANTS_P4
// ---- Sizes ----
#define SLOTS 4096
#define SLOT_BITS 3
#define CELLS (SLOTS << SLOT_BITS)   // one per slot and ring entry
#define REC_KEY 223:128
#define SEQ_LT(a, b) ((int<32>)((a) - (b)) < 0)
const bit<32> RING = 1 << SLOT_BITS;
const bit<16> ETHERTYPE_HEARTBEAT = 0x88B5;
const bit<8> NARROW = 8w3;

// Why a packet was dropped (index into the `drops` counter).
typedef bit<8> drop_reason_t;
const drop_reason_t DROP_NONE = 0;
const drop_reason_t DROP_NO_ENTRY = 1;     // no route
// Checked last: a bad header.
const drop_reason_t DROP_BAD_HEADER = 2;
#endif
"""

PROGRAM = """\
#include <core.p4>
#include "include/constants.p4"
header ctl_h {
    bit<16> hold_ms;
    drop_reason_t reason;
    bool flag;
    bit<7> unused;
}
header opts_h { varbit<320> data; }
struct headers_t {
    ctl_h ctl;
    opts_h opts;
}
@name(".demo.wide") register<bit<CELLS>>(SLOTS) wide;
control Demo(inout headers_t hdr) {
    @name(".demo.stats") counter(4, CounterType.packets) stats;
    @name(".demo.cells") register<bit<48>>(CELLS) cells;

    @name(".demo.set")
    action set(bit<16> mss, drop_reason_t d,
               bit<32> idle_ms) {
    }
    action internal() {}

    @name(".demo.rules")
    table rules {
        key = { hdr.ctl.hold_ms: exact @name("hold"); }
        actions = { set; internal; }
        size = SLOTS;
    }

    table verdict {
        key = { hdr.ctl.reason: ternary; }
        actions = { internal; set; }
        const entries = {
            DROP_NO_ENTRY &&& DROP_NO_ENTRY : set(1, 2, RING);
            (DROP_BAD_HEADER &&& 0xFF) : set(3, 4, 5);
        }
    }
    apply {}
}
"""


def generate(**sources: str) -> str:
    return gen_p4names.generate({path.replace("__", "/") + ".p4": text for path, text in sources.items()})


def module_of(text: str) -> ModuleType:
    module = ModuleType("p4names_under_test")
    exec(compile(text, "p4names_under_test.py", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def demo() -> tuple[str, Any]:
    text = generate(p4src__include__constants=CONSTANTS, p4src__demo=PROGRAM)
    return text, module_of(text)


def test_defines_and_consts_with_expressions(demo: tuple[str, Any]) -> None:
    text, m = demo
    assert (m.SLOTS, m.SLOT_BITS, m.CELLS, m.RING, m.NARROW) == (4096, 3, 32768, 8, 3)
    assert m.ETHERTYPE_HEARTBEAT == 0x88B5
    assert "ETHERTYPE_HEARTBEAT = 0x88B5\n" in text  # hex stays hex
    assert "CELLS = 32768  # = (SLOTS << SLOT_BITS); one per slot and ring entry\n" in text
    assert "# ---- Sizes ----\nSLOTS = 4096\n" in text
    # Not integers: a slice, a function-like macro, the include guard.
    assert not {"REC_KEY", "SEQ_LT", "X_CONSTANTS_P4"} & set(vars(m))


def test_a_typedef_group_is_an_int_enum_without_its_prefix(demo: tuple[str, Any]) -> None:
    text, m = demo
    assert issubclass(m.DropReason, IntEnum)
    assert {r.name: r.value for r in m.DropReason} == {"NONE": 0, "NO_ENTRY": 1, "BAD_HEADER": 2}
    assert m.DropReason.__doc__.startswith("Why a packet was dropped (index into the `drops` counter).")
    assert "P4: drop_reason_t, DROP_* in p4src/include/constants.p4." in m.DropReason.__doc__
    assert "    NO_ENTRY = 1  # no route\n    # Checked last: a bad header.\n    BAD_HEADER = 2\n" in text
    assert "DROP_NONE" not in vars(m)  # a member lives in its enum only


def test_object_names_widths_and_action_parameters(demo: tuple[str, Any]) -> None:
    _, m = demo
    assert (m.TABLE_DEMO_RULES, m.ACTION_DEMO_SET, m.COUNTER_DEMO_STATS) == (
        "demo.rules",
        "demo.set",
        "demo.stats",
    )
    assert (m.REGISTER_DEMO_CELLS, m.REGISTER_DEMO_WIDE) == ("demo.cells", "demo.wide")
    assert m.REGISTER_WIDTHS_BITS == {"demo.cells": 48, "demo.wide": 32768}
    assert m.ACTION_PARAMS_BITS == {"demo.set": (("mss", 16), ("d", 8), ("idle_ms", 32))}
    assert m.KEY_HOLD == "hold"
    assert not any(name.endswith("INTERNAL") or name.endswith("VERDICT") for name in vars(m))


def test_wire_headers_and_const_entries(demo: tuple[str, Any]) -> None:
    _, m = demo
    # Only headers_t's fixed-width headers; a typedef'd field and a bool have their widths.
    assert m.HEADER_FIELDS_BITS == {"ctl_h": (("hold_ms", 16), ("reason", 8), ("flag", 1), ("unused", 7))}
    assert m.DEMO_VERDICT_ENTRIES == (
        (((m.DropReason.NO_ENTRY, m.DropReason.NO_ENTRY),), "set", (1, 2, m.RING)),
        (((m.DropReason.BAD_HEADER, 255),), "set", (3, 4, 5)),
    )


def test_the_output_is_deterministic_and_says_how_it_was_made(demo: tuple[str, Any]) -> None:
    text, _ = demo
    assert text == generate(p4src__include__constants=CONSTANTS, p4src__demo=PROGRAM)
    assert "generated by `make constants`" in text.splitlines()[0]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("const bit<8> A = B + 1;", "uses B, not a known constant"),
        ("const bit<8> A = 256;", "does not fit its bit<8>"),
        ("const bit<8> A = hdr.x;", "not an integer expression"),
        ("#ifdef FAST\n#define A 1\n#endif", "#define under #if/#ifdef"),
        ("#if A\nconst bit<8> B = 1;\n#endif", "code under #if/#ifdef"),
        ("#define A (A + 1)", "defined in terms of itself"),
        ("typedef bit<8> k_t;\nconst k_t K_A = 1;\nconst k_t K_B = 1;", "have one value"),
        ('control C() { @name("local") register<bit<8>>(1) r; apply {} }', "give it a global name"),
        ('control C() { @name(".c.m") meter(1, MeterType.packets) m; apply {} }', "does not know"),
        ('@name(".x.y") const bit<8> A = 1;', "does not read"),
        ("#undef A", "not one the generator reads"),
        ("/* a */ const bit<8> A = 1;", "/* */ comments"),
    ],
)
def test_what_it_cannot_read_exactly_is_an_error(source: str, message: str) -> None:
    with pytest.raises(gen_p4names.P4ParseError, match=message):
        generate(p4src__x=source)


def test_one_name_defined_two_ways_is_an_error() -> None:
    with pytest.raises(gen_p4names.P4ParseError, match="one Python module cannot hold both"):
        generate(p4src__a="#define SIZE 1", p4src__b="#define SIZE 2")
    # The same definition in two programs is one constant.
    assert module_of(generate(p4src__a="#define SIZE 1", p4src__b="#define SIZE 1")).SIZE == 1


def test_a_programs_own_ifdef_is_read_as_taken() -> None:
    """headers.p4 adds ack_switch's working headers to the shared metadata under its flag: what the
    block declares is read, and an #else (code for the other programs) is refused."""
    block = "#ifdef ACKWISE_ACK_SWITCH\nconst bit<8> A = 1;\n#define B 2\n{}#endif"
    module = module_of(generate(p4src__x=block.format("")))
    assert (module.A, module.B) == (1, 2)
    with pytest.raises(gen_p4names.P4ParseError, match="under a program's #ifdef"):
        generate(p4src__x=block.format("#else\nconst bit<8> C = 2;\n"))


def test_an_if_with_only_an_error_is_a_compile_time_check() -> None:
    m = module_of(generate(p4src__x='#define PKTS 2\n#if PKTS != 2\n#error "update X"\n#endif'))
    assert m.PKTS == 2


@pytest.mark.parametrize(
    ("names", "prefix"),
    [
        (["DROP_NONE", "DROP_NO_ENTRY", "DROP_TTL"], "DROP_"),  # the common NO is not a word of all
        (["AP_STAT_SPOOFED", "AP_STAT_STALL_EXITS"], "AP_STAT_"),
        (["PROBE_SACK_LEFT_0", "PROBE_SACK_BLOCKS"], "PROBE_SACK_"),
        (["STAT_1", "STAT_2"], ""),  # members must stay identifiers
        (["KEEP_NONE"], "KEEP_"),
    ],
)
def test_member_prefix(names: list[str], prefix: str) -> None:
    assert gen_p4names.member_prefix(names) == prefix


def test_main_writes_once_then_reports_up_to_date(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """make constants is idempotent: a second run changes nothing; --check says whether it would."""
    target = tmp_path / "p4names.py"
    monkeypatch.setattr(gen_p4names, "OUTPUT", target)
    monkeypatch.setattr(gen_p4names, "REPO", tmp_path)
    assert gen_p4names.main(["--check"]) == 1
    assert gen_p4names.main([]) == 0
    written = target.read_text()
    mtime = target.stat().st_mtime_ns
    assert gen_p4names.main([]) == 0 and gen_p4names.main(["--check"]) == 0
    assert target.read_text() == written and target.stat().st_mtime_ns == mtime
