"""make bench's pure parts: the operator count of a traced packet, the metadata fields of a program,
the throughput search, the rounds summarized, the traffic stream, the pacing, the instruction
counts read from callgrind."""

from __future__ import annotations

import pytest

from ackwise.experiments.stress import bench, instructions
from ackwise.experiments.stress.bench import (
    LOSS_MAX,
    Probe,
    Result,
    TrafficStream,
    build_traffic,
    expression_operators,
    highest_passing_rate,
    metadata_fields,
    summarize,
)


def _field(name: str) -> dict[str, object]:
    return {"type": "field", "value": ["scalars", name]}


def _op(op: str, left: object, right: object) -> dict[str, object]:
    return {"type": "expression", "value": {"op": op, "left": left, "right": right}}


# a + (b & c) assigned: 2 operators; a plain copy: none; a condition a == b: 1.
PROGRAM = {
    "actions": [
        {
            "name": "work",
            "primitives": [
                {
                    "op": "assign",
                    "parameters": [_field("x"), _op("+", _field("a"), _op("&", _field("b"), _field("c")))],
                },
                {"op": "assign", "parameters": [_field("y"), _field("a")]},
            ],
        },
        {"name": "twin", "primitives": []},
        {
            "name": "twin",
            "primitives": [{"op": "assign", "parameters": [_field("y"), _op("^", _field("a"), _field("b"))]}],
        },
    ],
    "pipelines": [{"conditionals": [{"name": "node_7", "expression": _op("==", _field("a"), _field("b"))}]}],
}
PREFIX = "[03:02:36.141] [bmv2] [T] [thread 1] [25.0] [cxt 0] "


def test_actions_run_and_conditions_tested_are_counted() -> None:
    trace = [
        PREFIX + "Applying table 'tbl_work'",
        PREFIX + "Action entry is work - ",  # the table's hit, not a run: not counted
        PREFIX + "Action work",
        PREFIX + 'p4src/x.p4(3) Condition "a == b" (node_7) is false',
        PREFIX + "Action work",
    ]
    assert expression_operators(PROGRAM, trace) == 2 + 1 + 2


def test_an_action_traced_with_its_source_is_counted() -> None:
    assert expression_operators(PROGRAM, [PREFIX + "p4src/x.p4(12) Action work"]) == 2


def test_a_parser_method_call_is_not_an_action() -> None:
    trace = [PREFIX + "Executing method add_header", PREFIX + "Action add_header", PREFIX + "Action work"]
    assert expression_operators(PROGRAM, trace) == 2


def test_two_actions_of_one_name_count_as_the_larger() -> None:
    assert expression_operators(PROGRAM, [PREFIX + "Action twin"]) == 1


def test_an_unknown_step_is_an_error_not_a_zero() -> None:
    with pytest.raises(KeyError):
        expression_operators(PROGRAM, [PREFIX + "Action gone"])


def _result(program: str, pps: float, round_no: int, policy: str = "-", capped: bool = False) -> Result:
    return Result(program, policy, "ack-heavy", 64, pps, capped, 0.0, int(pps), 0, 100.0, 7, round_no)


def test_ratios_are_taken_within_a_round_and_the_median_reported() -> None:
    # Round 1 is slow for everything (another process): its ratio is still 0.5.
    results = [
        _result("forward_only", 10000, 0),
        _result("ack_switch", 5000, 0, "every_d"),
        _result("forward_only", 4000, 1),
        _result("ack_switch", 2000, 1, "every_d"),
        _result("forward_only", 10000, 2),
        _result("ack_switch", 7000, 2, "every_d"),
    ]
    base, policy = summarize(results)
    assert base.to_forward_only is not None and policy.to_forward_only is not None
    assert (base.to_forward_only.median, base.to_forward_only.low, base.to_forward_only.high) == (
        1.0,
        1.0,
        1.0,
    )
    assert base.rounds == 3
    assert policy.to_forward_only.median == 0.5
    assert (policy.to_forward_only.low, policy.to_forward_only.high) == (0.5, 0.7)
    assert policy.median.throughput_pps == 5000  # the round with the median rate
    assert base.to_forward_only.bound == policy.to_forward_only.bound == ""
    assert policy.to_floor is None  # no yardstick measured


def test_ratios_to_the_yardstick_are_per_build_and_round() -> None:
    """A build's configuration is compared with the yardstick on the same build, same round."""
    results = []
    for build, scale in (("fast", 2.0), ("logging", 1.0)):
        for round_no, slow in enumerate((1.0, 0.5)):
            for program, pps in (("forward_only", 10000), ("thinning_floor", 8000), ("ack_switch", 6000)):
                r = _result(
                    program, pps * scale * slow, round_no, "every_d d=8" if program != "forward_only" else "-"
                )
                r.build = build
                results.append(r)
    rows = {(row.median.build, row.median.program): row for row in summarize(results)}
    for build in ("fast", "logging"):
        row = rows[(build, "ack_switch")]
        assert row.to_floor is not None and row.to_forward_only is not None
        assert row.to_floor.median == 0.75 and row.to_forward_only.median == 0.6
        assert row.to_floor.cell() == "0.75 (0.75-0.75)"


def test_a_ratio_against_a_capped_rate_is_marked_as_a_bound() -> None:
    # forward_only handled the highest rate offered: its throughput is at least that, so the
    # policy's ratio is at most what the table says; the other way round, at least.
    results = [
        _result("forward_only", 50000, 0, capped=True),
        _result("ack_switch", 20000, 0, "every_d"),
        _result("forward_only", 30000, 1),
        _result("ack_switch", 50000, 1, "off", capped=True),
    ]
    rows = summarize(results)
    assert [row.to_forward_only.bound for row in rows if row.to_forward_only] == ["", "<=", ">="]


def _switch(capacity_pps: float, sender_max_pps: float = 1e9) -> tuple[list[float], object]:
    """A probe of a switch that handles everything up to capacity_pps and loses the excess, behind
    a sender that offers at most sender_max_pps; the rates asked are recorded."""
    asked: list[float] = []

    def probe(rate_pps: float) -> Probe:
        asked.append(rate_pps)
        offered = min(rate_pps, sender_max_pps)
        sent = int(offered * 2)
        handled = min(sent, int(capacity_pps * 2))
        return Probe(offered, sent, handled - handled // 4, handled // 4, 1.0)

    return asked, probe


def test_the_search_finds_the_highest_rate_handled_without_loss() -> None:
    asked, probe = _switch(12000)
    best, capped = highest_passing_rate(probe, 1500, 50000, 6)  # type: ignore[arg-type]
    assert not capped and best is not None
    assert asked[0] == 50000 and len(asked) == 7
    # within (50000 / 1500) ** (1 / 64) = 5.6 % below the capacity, and above it only by what
    # the loss allowance lets through
    assert 12000 / 1.056 <= best.offered_pps <= 12000 / (1 - LOSS_MAX)
    assert best.loss <= LOSS_MAX


def test_a_loss_within_the_allowance_passes_and_one_beyond_it_fails() -> None:
    assert Probe(1000, 2000, 1970, 10, 1.0).loss <= LOSS_MAX  # 1 % lost
    assert Probe(1000, 2000, 1960, 10, 1.0).loss > LOSS_MAX  # 1.5 % lost


def test_a_switch_faster_than_the_highest_rate_is_reported_as_capped() -> None:
    asked, probe = _switch(80000)
    best, capped = highest_passing_rate(probe, 1500, 50000, 6)  # type: ignore[arg-type]
    assert capped and best is not None and best.offered_pps == 50000 and asked == [50000]


def test_the_throughput_is_the_rate_offered_not_the_rate_asked() -> None:
    # The sender could not offer more than 20 000: a pass is credited with what was offered.
    _, probe = _switch(80000, sender_max_pps=20000)
    best, capped = highest_passing_rate(probe, 1500, 50000, 6)  # type: ignore[arg-type]
    assert capped and best is not None and best.offered_pps == 20000


def test_a_switch_that_loses_at_every_rate_has_no_throughput() -> None:
    _, probe = _switch(0)
    assert highest_passing_rate(probe, 1500, 50000, 6) == (None, False)  # type: ignore[arg-type]


def test_the_traffic_stream_continues_where_the_last_probe_stopped() -> None:
    # Two probes' frames are the first frames of one long stream: no sequence or ACK number repeats.
    stream = TrafficStream("data-heavy")
    first, second = stream.take(5), stream.take(7)
    assert len(first) == 6 and len(second) == 9  # whole rounds of 2 data segments and an ACK
    assert first + second == build_traffic("data-heavy", 5)
    assert len(set(first + second)) == len(first + second)


def test_the_bench_never_offers_bursts_the_switch_socket_cuts() -> None:
    from ackwise.experiments.measure.rawsend import BURST_FRAMES

    assert BURST_FRAMES <= 16  # about 32-46 frames into one port are cut (docs/performance.md)


def test_metadata_fields_are_those_of_every_metadata_header_and_no_packet_header() -> None:
    program = {
        "header_types": [
            {
                "name": "scalars_0",
                "fields": [["tmp", 32, False], ["w.flags", 40, False], ["_padding_0", 0, False]],
            },
            {"name": "standard_metadata", "fields": [["ingress_port", 9, False], ["egress_spec", 9, False]]},
            {"name": "ipv4_h", "fields": [["version", 4, False], ["ihl", 4, False]]},
        ],
        "headers": [
            {"name": "scalars", "header_type": "scalars_0", "metadata": True},
            {"name": "standard_metadata", "header_type": "standard_metadata", "metadata": True},
            {"name": "ipv4", "header_type": "ipv4_h", "metadata": False},
            {"name": "inner_ipv4", "header_type": "ipv4_h", "metadata": False},
        ],
    }
    # bmv2 resets the padding field too: it is a field of the header like any other
    assert metadata_fields(program) == 5


ANNOTATED = """\
--------------------------------------------------------------------------------
Ir                     file:function
--------------------------------------------------------------------------------
1,085,892,887 (100.0%)  PROGRAM TOTALS
  981,006,003 (90.34%)  ???:bm::Packet::Packet(unsigned int) [/usr/local/bin/simple_switch]
  980,557,595 (90.30%)  ???:bm::PHVFactory::create() const [/usr/local/bin/simple_switch]
   43,875,328 ( 4.04%)  ???:bm::PHV::reset_metadata() [/usr/local/bin/simple_switch]
"""


def test_the_instructions_of_a_function_are_read_from_its_own_line() -> None:
    assert instructions.inclusive_instructions(ANNOTATED, "bm::PHVFactory::create") == 980_557_595
    assert instructions.inclusive_instructions(ANNOTATED, "bm::PHV::reset_metadata") == 43_875_328
    # PHV::reset is a prefix of PHV::reset_metadata: not the same function, and never called here.
    assert instructions.inclusive_instructions(ANNOTATED, "bm::PHV::reset") == 0


BROKEN_DOWN = """\
  500,000 (100.0%)  PROGRAM TOTALS
  300,000 (60.00%)  ???:bm::ActionFnEntry::execute(bm::Packet*) const [/usr/local/bin/simple_switch]
  120,000 (24.00%)  ???:bm::Data const& bm::ActionParam::to<bm::Data const&>(bm::ActionEngineState*) const [x]
   90,000 (18.00%)  ???:bm::PHV::reset_metadata() [/usr/local/bin/simple_switch]
   60,000 (12.00%)  ???:bm::core::assign::operator()(bm::Data&, bm::Data const&) [x]
   40,000 ( 8.00%)  ???:bm::PHV::reset() [/usr/local/bin/simple_switch]
   30,000 ( 6.00%)  ???:bm::Parser::parse(bm::Packet*) const [x]
   20,000 ( 4.00%)  ???:add_header::operator()(bm::Header&) [x]
    9,000 ( 1.80%)  ???:register_read::operator()(bm::Field&, bm::RegisterArray const&, bm::Data const&) [x]
"""


def test_the_breakdown_splits_the_total_and_names_what_is_left() -> None:
    parts = instructions.breakdown(BROKEN_DOWN, total=500_000)
    assert parts["actions"] == 300_000
    assert parts["metadata reset"] == 90_000
    assert parts["header invalidation"] == 40_000  # PHV::reset(), not PHV::reset_metadata()
    assert parts["parser"] == 30_000
    assert parts["deparser"] == 0 and parts["conditions"] == 0 and parts["table lookups"] == 0
    # the top-level parts and the rest add up to the total; the action parts are inside "actions"
    assert parts[instructions.REST] == 500_000 - 300_000 - 90_000 - 40_000 - 30_000
    assert parts["expressions"] == 120_000 and parts["field writes"] == 60_000
    assert parts["setValid"] == 20_000 and parts["register reads"] == 9_000 and parts["register writes"] == 0


def test_the_breakdown_table_has_a_row_per_counted_configuration() -> None:
    parts = {k: v / 200 for k, v in instructions.breakdown(BROKEN_DOWN, total=500_000).items()}
    rows = [
        instructions.Instructions("ack_switch", "every_d d=8", "ack-heavy", 2_500, 0, parts, "fast"),
        instructions.Instructions("forward_only", "-", "ack-heavy", 1_000, 0),  # no breakdown: no row
    ]
    table = instructions.render_breakdown(rows)
    header, _, row = table.splitlines()[:3]
    assert header.startswith(
        "| build | mix | program | policy | all | metadata reset | header invalidation |"
    )
    # all, then metadata reset ... conditions, rest, actions, then the action parts
    cells = "2.5 | 0.5 | 0.2 | 0.1 | 0.0 | 0.0 | 0.0 | 0.2 | 1.5 | 0.6 | 0.3 | 0.1 | 0.0 | 0.0"
    assert row == f"| fast | ack-heavy | ack_switch | every_d d=8 | {cells} |"
    assert "forward_only" not in table
    assert instructions.render_breakdown(rows[1:]) == ""


def test_the_total_is_the_dumps_totals_line() -> None:
    assert instructions.total_instructions("events: Ir\nsummary: 1234\ntotals: 1234\n") == 1234
    with pytest.raises(ValueError, match="no totals"):
        instructions.total_instructions("events: Ir\n")


def test_instruction_ratios_are_to_the_yardstick_and_forward_only_of_the_same_mix_and_build() -> None:
    rows = []
    for build, scale in (("fast", 1.0), ("logging", 2.0)):
        rows += [
            instructions.Instructions("forward_only", "-", "ack-heavy", 400_000 * scale, 0, build=build),
            instructions.Instructions(
                "thinning_floor", "every_d d=8", "ack-heavy", 500_000 * scale, 0, build=build
            ),
            instructions.Instructions("ack_switch", "off", "ack-heavy", 600_000 * scale, 0, build=build),
            instructions.Instructions("forward_only", "-", "data-heavy", 500_000 * scale, 0, build=build),
            instructions.Instructions("ack_switch", "off", "data-heavy", 600_000 * scale, 1_500, build=build),
        ]
    table = instructions.render(rows, n_flows=64)
    # per build: thousands, to the yardstick, to forward_only; then logging over fast
    assert "| ack-heavy | ack_switch | off | 600.0 | 1.20 | 1.50 | 1200.0 | 1.20 | 1.50 | 2.00 |" in table
    assert "| data-heavy | ack_switch | off | 600.0 | - | 1.20 | 1200.0 | - | 1.20 | 2.00 |" in table
    assert "at most 1.5 thousand per packet" in table


class _Port:
    """A sending socket that records frames, and refuses the ones named."""

    def __init__(self, refuse: set[bytes] = frozenset()) -> None:  # type: ignore[assignment]
        self.sent: list[bytes] = []
        self.refuse = refuse

    def send(self, frame: bytes) -> int:
        if frame in self.refuse:
            raise OSError(105, "No buffer space available")
        self.sent.append(frame)
        return len(frame)


def test_frames_go_out_in_order_on_their_ports_and_a_refused_one_only_when_allowed() -> None:
    from ackwise.experiments.measure.rawsend import send_paced

    frames = [(1, b"a"), (2, b"b"), (1, b"c"), (2, b"d")]
    ports = {1: _Port(), 2: _Port(refuse={b"d"})}
    send_paced(ports, frames, rate_pps=1e6, batch=3, drop_refused=True)  # type: ignore[arg-type]
    assert ports[1].sent == [b"a", b"c"] and ports[2].sent == [b"b"]
    with pytest.raises(OSError):
        send_paced({1: _Port(), 2: _Port(refuse={b"d"})}, frames, rate_pps=1e6)  # type: ignore[arg-type]


def test_sending_waits_after_each_batch_until_the_rate_catches_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from ackwise.experiments.measure import rawsend

    clock = [0.0]  # sending takes no time; only sleeping moves the clock
    monkeypatch.setattr(rawsend.time, "monotonic", lambda: clock[0])
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 9))
        clock[0] += seconds

    monkeypatch.setattr(rawsend.time, "sleep", sleep)
    took_s = rawsend.send_paced({1: _Port()}, [(1, b"x")] * 10, rate_pps=100.0, batch=4)  # type: ignore[arg-type]
    assert slept == [0.04, 0.04, 0.04]  # batches of 4, 4, 2: each batch's slots end at 40, 80, 120 ms
    assert took_s == pytest.approx(0.12)


def test_a_late_sender_starts_its_schedule_again_instead_of_sending_a_burst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The sender stalls for 100 ms after its first batch (descheduled). Catching up, it would send
    # the next 8 batches back to back, a burst of 32 frames; without catch_up it sends a batch and
    # waits a batch's time again, from then on.
    from ackwise.experiments.measure import rawsend

    clock = [0.0]
    gaps: list[int] = []  # frames sent between sleeps

    class Port:
        def send(self, frame: bytes) -> int:
            gaps[-1] += 1
            if clock[0] == 0.0 and gaps == [4]:
                clock[0] += 0.1  # the stall, after the first batch
            return len(frame)

    def sleep(seconds: float) -> None:
        clock[0] += seconds
        gaps.append(0)

    monkeypatch.setattr(rawsend.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(rawsend.time, "sleep", sleep)
    gaps.append(0)
    rawsend.send_paced({1: Port()}, [(1, b"x")] * 40, rate_pps=1000.0, batch=4, catch_up=False)  # type: ignore[dict-item]
    assert max(gaps) <= 2 * 4
    gaps.clear()
    clock[0] = 0.0
    gaps.append(0)
    rawsend.send_paced({1: Port()}, [(1, b"x")] * 40, rate_pps=1000.0, batch=4)  # type: ignore[dict-item]
    # catching up, the default (instructions.py's one frame per batch at 25-200 pps)
    assert max(gaps) > 2 * 4


def test_configs_picks_programs_and_policies_by_name() -> None:
    """--configs: a program alone takes all its configurations, PROGRAM:POLICY one (by the
    policy's name, its parameters aside); a name that matches nothing is refused with the list."""
    configs = list(bench.CONFIGS)
    assert bench.select_configs(configs, "ack_switch:dynamic_d, thinning_floor") == [
        ("ack_switch", "dynamic_d"),
        ("thinning_floor", "every_d d=8"),
    ]
    assert bench.select_configs(configs, "ack_switch:every_d") == [("ack_switch", "every_d d=8")]
    assert len(bench.select_configs(configs, "ack_switch")) == 7
    with pytest.raises(ValueError, match="ack_switch:fast_d not known"):
        bench.select_configs(configs, "ack_switch:fast_d")
    # The AP proxy only when named: not in the full run's tables.
    assert bench.AP_PROXY not in {program for program, _ in configs}
    assert bench.select_configs(configs + bench.EXTRA_CONFIGS, "ap_proxy") == [("ap_proxy", None)]


def test_ipv6_traffic_is_the_same_segments_over_ipv6() -> None:
    """--ip-version 6: each frame of the mix with an IPv6 header instead of IPv4's (fd00:0:0:C::D
    for 10.0.C.D, hop limit the TTL), the TCP segment the same bytes but for its checksum, which is
    valid over IPv6's pseudo-header."""
    from ackwise.twins.packets import fix_tcp_checksum

    v4, v6 = bench.build_traffic("ack-heavy", 2), bench.build_traffic("ack-heavy", 2, ip_version=6)
    assert [p for p, _ in v4] == [p for p, _ in v6]
    for (_, a), (_, b) in zip(v4, v6, strict=True):
        assert b[12:14] == b"\x86\xdd" and len(b) == len(a) + 20
        assert b[14 + 8 : 14 + 40] == bytes.fromhex(
            f"fd000000000000{a[28]:02x}00000000000000{a[29]:02x}fd000000000000{a[32]:02x}00000000000000{a[33]:02x}"
        )
        assert b[14 + 7] == a[14 + 8]  # hop limit = TTL
        assert b[54:70] == a[34:50] and b[72:] == a[52:]  # TCP but its checksum
        fixed = bytearray(b)
        fix_tcp_checksum(fixed)
        assert bytes(fixed) == b
