"""The AP proxy's control plane and the repair agent's decisions (no switch needed)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from ackwise.cli.ap import FLOW_COLUMNS, flow_rows
from ackwise.cli.output import render_records
from ackwise.daemons.ap_agent import (
    HANDSHAKE_REPAIR_S,
    HANDSHAKE_REPAIRS_MAX,
    MAX_REPAIR_INTERVAL_S,
    ProxiedFlow,
)
from ackwise.features.ap import (
    ApFlow,
    StationParams,
    multicast_group,
    read_agent_report,
)
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.packets import ACK, FIN, SYN, TcpSegment

MSS = 1000
ISN = 2**32 - 2500  # the sequence space wraps inside the test flow


def test_multicast_group_and_station_params() -> None:
    assert multicast_group(2, 1) == 0x0201
    with pytest.raises(ValueError, match="below 256"):
        multicast_group(256, 1)
    with pytest.raises(ValueError, match="budget_bytes"):
        StationParams(budget_bytes=0)
    with pytest.raises(ValueError, match="stall_timeout_ms"):
        StationParams(stall_timeout_ms=-1)


def test_agent_report_of_a_dead_agent_is_none(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    assert read_agent_report(path) is None
    path.write_text(json.dumps({"pid": os.getpid(), "buffered_bytes": 5}))
    report = read_agent_report(path)
    assert report is not None and report["buffered_bytes"] == 5
    path.write_text(json.dumps({"pid": 2**22 + 1, "buffered_bytes": 5}))  # above pid_max: never alive
    assert read_agent_report(path) is None


# ---- the repair agent's flow logic ----


def seq(k: int) -> int:
    return (ISN + k * MSS) % 2**32


def data(k: int) -> TcpSegment:
    return TcpSegment("10.0.0.2", "10.0.0.3", 5001, 40000, seq(k), 1, ACK, 500, MSS, 0)


def station_ack(k: int, sack: tuple[tuple[int, int], ...] = (), flags: int = ACK) -> TcpSegment:
    return TcpSegment("10.0.0.3", "10.0.0.2", 40000, 5001, 1, seq(k), flags, 500, 0, 0, sack=sack)


def flow_with(n: int, now: float = 0.0) -> ProxiedFlow:
    flow = ProxiedFlow(FlowKey.of("10.0.0.2", "10.0.0.3", 5001, 40000)[0])
    for k in range(n):
        flow.copy(data(k), b"frame%d" % k, now)
    return flow


def test_station_ack_frees_what_it_covers_across_the_wrap() -> None:
    flow = flow_with(6)
    assert flow.buffered_bytes == 6 * MSS
    assert flow.station_packet(station_ack(4), 0.03) == []
    assert sorted(flow.segments) == [seq(4), seq(5)] and flow.buffered_bytes == 2 * MSS
    assert flow.rtt_s == pytest.approx(0.03)  # first sample replaces the default


def test_three_duplicates_without_sack_repair_the_segment_at_the_ack() -> None:
    flow = flow_with(6)
    flow.station_packet(station_ack(2), 0.0)
    assert flow.station_packet(station_ack(2), 0.001) == []
    assert flow.station_packet(station_ack(2), 0.002) == []
    (lost,) = flow.station_packet(station_ack(2), 0.003)
    assert lost.seq == seq(2)


def test_sack_repairs_holes_with_three_sacked_segments_above_only() -> None:
    flow = flow_with(10)
    flow.station_packet(station_ack(2), 0.0)
    # The station has 3 and 5..8: segment 2 has 5 SACKed above it, segment 4 has 4: both lost.
    # Segment 9 is above every block: not lost, maybe still in the queue for the air.
    sack = ((seq(5), seq(9)), (seq(3), seq(4)))
    lost = flow.station_packet(station_ack(2, sack), 0.001)
    assert {s.seq for s in lost} == {seq(2), seq(4)}
    for s in lost:
        s.repaired_at, s.repairs = 0.001, 1
    # The next duplicate reports only the newest block: the scoreboard still knows 3 was SACKed.
    assert flow.station_packet(station_ack(2, ((seq(5), seq(10)),)), 0.002) == []  # within the back-off
    assert flow.segments[seq(3)].sacked


def test_dsack_and_acks_with_data_or_fin_are_not_duplicates() -> None:
    flow = flow_with(8)
    flow.station_packet(station_ack(2), 0.0)
    dsack = ((seq(1), seq(2)), (seq(4), seq(8)))  # first block below the ACK: a DSACK
    for _ in range(4):
        assert flow.station_packet(station_ack(2, dsack), 0.001) == []
    for _ in range(4):
        assert flow.station_packet(station_ack(2, flags=ACK | FIN), 0.002) == []


def test_repairs_of_one_segment_back_off() -> None:
    flow = flow_with(4)
    flow.station_packet(station_ack(1), 0.0)
    flow.rtt_s = 0.02
    seg = flow.segments[seq(1)]
    times = []
    now = 0.0
    while now < 5.0:
        for s in flow.to_repair(seq(1), now, timer=True):
            s.repaired_at, s.repairs = now, s.repairs + 1
            times.append(now)
        now = round(now + 0.005, 3)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert seg.repairs == len(times) and gaps[0] == pytest.approx(0.02, abs=0.006)
    assert all(later >= earlier - 1e-9 for earlier, later in itertools.pairwise(gaps))
    assert max(gaps) <= MAX_REPAIR_INTERVAL_S + 0.006


def test_a_gap_in_the_copies_is_noticed() -> None:
    flow = flow_with(3)
    assert flow.copy(data(3), b"frame3", 0.0)
    assert not flow.copy(data(5), b"frame5", 0.0)  # segment 4 was copied but never arrived
    # After a gap the switch itself copied nothing (the agent was gone); it resumes once the
    # station has acknowledged up to the next segment: no gap.
    flow = flow_with(3)
    flow.station_packet(station_ack(6), 0.0)
    assert flow.copy(data(6), b"frame6", 0.0)


def test_flow_table_has_every_column_and_joins_the_agent_by_key() -> None:
    key, _ = FlowKey.of("10.0.0.1", "10.0.0.2", 5001, 40000)
    flow = ApFlow(3, key, "fast", 1000, 400, 600, 7, 5, 1, 0, 2)
    agent = {str(key): {"buffered_bytes": 600, "repairs": 1}, "other": {"buffered_bytes": 9}}
    (row,) = flow_rows([flow], agent)
    assert set(FLOW_COLUMNS) <= set(row)
    assert (row["key"], row["buffered_bytes"], row["repairs"]) == (str(key), 600, 1)
    table = render_records(FLOW_COLUMNS, [row], "no flows")
    assert str(key) in table and "fast" in table
    assert flow_rows([flow], {})[0]["buffered_bytes"] == 0
    assert render_records(FLOW_COLUMNS, [], "no flows") == "no flows"


def test_a_held_syn_is_resent_with_back_off_until_the_station_answers() -> None:
    flow = flow_with(2)  # an earlier connection on the same key, still holding data
    syn = TcpSegment("10.0.0.2", "10.0.0.3", 5001, 40000, ISN - 1, 0, SYN, 64000, 0, 0)
    flow.sender_handshake(syn, b"syn", 10.0)
    assert flow.segments == {} and flow.buffered_bytes == 0 and flow.station_ack is None
    assert flow.handshake_due(10.0 + HANDSHAKE_REPAIR_S - 0.01) is None
    due = [10.0 + HANDSHAKE_REPAIR_S * (2**n - 1) for n in range(1, HANDSHAKE_REPAIRS_MAX + 1)]
    for when in due:  # as the agent's repair() records it
        held = flow.handshake_due(when)
        assert held is not None and held.frame == b"syn"
        held.repairs, held.repaired_at = held.repairs + 1, when
        assert flow.handshake_due(when + 0.01) is None
    assert flow.handshake_due(due[-1] + 60) is None, "resent more than HANDSHAKE_REPAIRS_MAX times"
    # The station's SYN-ACK acknowledges the SYN: answered, and its ACK number is the station's.
    synack = TcpSegment("10.0.0.3", "10.0.0.2", 40000, 5001, 0, ISN, SYN | ACK, 64000, 0, 0)
    flow.sender_handshake(syn, b"syn", 20.0)
    assert flow.station_packet(synack, 20.1) == []
    assert flow.handshake is None and flow.station_ack == ISN
    assert flow.handshake_due(30.0) is None


def test_when_the_station_opens_its_syn_sets_nothing_and_its_ack_answers_the_syn_ack() -> None:
    flow = ProxiedFlow(FlowKey.of("10.0.0.2", "10.0.0.3", 5001, 40000)[0])
    station_syn = TcpSegment("10.0.0.3", "10.0.0.2", 40000, 5001, 0, 123_456, SYN, 64000, 0, 0)
    assert flow.station_packet(station_syn, 0.0) == []
    assert flow.station_ack is None, "a SYN's ACK field is not an ACK"
    synack = TcpSegment("10.0.0.2", "10.0.0.3", 5001, 40000, ISN - 1, 1, SYN | ACK, 64000, 0, 0)
    flow.sender_handshake(synack, b"synack", 0.01)
    flow.station_packet(station_ack(-1), 0.02)  # some other ACK number: not the answer
    assert flow.handshake is not None
    flow.station_packet(station_ack(0), 0.03)  # ack = ISN: the SYN-ACK's sequence number + 1
    assert flow.handshake is None and flow.station_ack == seq(0)
