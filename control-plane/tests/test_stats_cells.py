"""make fuzz and the scale run report every cell of the switch's stats counters, by name.

Regression: both read ack_thinning.stats for range(8) by bare index while the P4 counts 11 cells
(THINNING_STATS), so acks_passed, acks_shared and share_bounced were never reported.
"""

from __future__ import annotations

from ackwise.bmv2.client import CounterValue, named_cells
from ackwise.experiments.stress.fuzz import Fuzzer, counter_lines
from ackwise.experiments.stress.scale import phase1_report, phase2_report
from ackwise.twins.p4names import (
    AP_STATS,
    COUNTER_ACK_FILTER_STATS,
    COUNTER_ACK_THINNING_STATS,
    COUNTER_AP_STATS,
    COUNTER_FORWARDING_DROPS,
    COUNTER_PARSER_MALFORMED,
    DROP_REASONS,
    FILTER_STATS,
    FLOW_SLOTS,
    MALFORMED_REASONS,
    THINNING_STATS,
    ApStat,
    FilterStat,
    ThinningStat,
)

# The counters fuzz reads, with as many cells as the P4 declares.
CELLS = {
    COUNTER_FORWARDING_DROPS: DROP_REASONS,
    COUNTER_PARSER_MALFORMED: MALFORMED_REASONS,
    COUNTER_ACK_THINNING_STATS: THINNING_STATS,
    COUNTER_ACK_FILTER_STATS: FILTER_STATS,
    COUNTER_AP_STATS: AP_STATS,
}


class CountingSwitch:
    """A switch whose every counter cell holds a value of its own (counter k of CELLS, cell i:
    100 k + i + 1); registers all zero."""

    def value(self, name: str, index: int) -> int:
        return 100 * list(CELLS).index(name) + index + 1

    def counter_read(self, name: str, index: int) -> CounterValue:
        assert 0 <= index < CELLS[name], f"{name}[{index}]"
        return CounterValue(self.value(name, index), 0)

    def counter_read_all(self, name: str) -> list[CounterValue]:
        return [self.counter_read(name, i) for i in range(CELLS[name])]

    def register_read_all(self, name: str) -> list[int]:
        return [0] * FLOW_SLOTS


def checked(config: str) -> Fuzzer:
    fuzzer = Fuzzer(config, 1, CountingSwitch(), None, lambda: True)  # type: ignore[arg-type]
    fuzzer._check_counters()
    return fuzzer


def test_fuzz_reports_every_thinning_and_filter_cell_by_name() -> None:
    switch, counters = CountingSwitch(), checked("every_d").report.counters
    assert THINNING_STATS == len(ThinningStat) == 11
    assert counters[COUNTER_ACK_THINNING_STATS] == {
        s.name.lower(): switch.value(COUNTER_ACK_THINNING_STATS, s) for s in ThinningStat
    }
    assert counters[COUNTER_ACK_FILTER_STATS] == {
        s.name.lower(): switch.value(COUNTER_ACK_FILTER_STATS, s) for s in FilterStat
    }


def test_fuzz_prints_every_cell() -> None:
    """What make fuzz prints after each configuration: one line per stats counter, every cell."""
    fuzzer = checked("coalesce")
    thinning, filtering = counter_lines(fuzzer.report.to_dict())
    assert thinning.startswith("ack_thinning.stats: collisions 201, reclaimed 202, ")
    assert thinning.endswith(", acks_passed 209, acks_shared 210, share_bounced 211")
    assert filtering == "ack_filter.stats: forwarded 301, filtered 302, kept_queue_full 303"


def test_fuzz_reports_every_ap_cell_by_name() -> None:
    switch, fuzzer = CountingSwitch(), checked("ap_proxy")
    assert fuzzer.report.counters[COUNTER_AP_STATS] == {
        s.name.lower(): switch.value(COUNTER_AP_STATS, s) for s in ApStat
    }
    assert COUNTER_ACK_THINNING_STATS not in fuzzer.report.counters
    assert counter_lines(fuzzer.report.to_dict())[0].startswith("ap.stats: spoofed 401, consumed 402, ")


def test_scale_reports_every_cell_by_name() -> None:
    switch = CountingSwitch()
    stats = switch.counter_read_all(COUNTER_ACK_THINNING_STATS)
    every_cell = {s.name.lower(): switch.value(COUNTER_ACK_THINNING_STATS, s) for s in ThinningStat}
    phase1 = phase1_report(stats, 10, {0, 1}, {5, 6}, 1.0)
    assert phase1["stats"] == every_cell
    assert (phase1["new_records"], phase1["collision_packets"], phase1["acks_thinned"]) == (203, 201, 205)
    phase2 = phase2_report(stats, 4, {0}, {5, 7}, {5, 6})
    assert phase2["stats"] == every_cell
    assert (phase2["reclaimed"], phase2["reclaimed_expected"], phase2["new_records_expected"]) == (202, 1, 1)


def test_named_cells_names_what_the_enum_names() -> None:
    """As many cells as the program has: one the enum does not name keeps its index."""
    cells = [CounterValue(7, 0), CounterValue(8, 0), CounterValue(9, 0), CounterValue(10, 0)]
    assert named_cells(cells, FilterStat) == {
        "forwarded": 7,
        "filtered": 8,
        "kept_queue_full": 9,
        "cell_3": 10,
    }
    assert named_cells(cells[:1], FilterStat) == {"forwarded": 7}
