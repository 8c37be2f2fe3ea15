"""The AP proxy's control plane and the repair agent's decisions (no switch needed)."""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import struct
from pathlib import Path

import pytest

from ackwise.bmv2.client import MatchValue, TableEntry
from ackwise.cli.ap import FLOW_COLUMNS, flow_rows
from ackwise.cli.output import render_records
from ackwise.daemons.ap_agent import (
    HANDSHAKE_REPAIR_S,
    HANDSHAKE_REPAIRS_MAX,
    MAX_REPAIR_INTERVAL_S,
    ProxiedFlow,
    RepairAgent,
    is_station,
)
from ackwise.features.ap import (
    FLOW_REGISTERS,
    ApConfigError,
    ApFlow,
    StationParams,
    add_station,
    list_stations,
    multicast_group,
    parse_station_prefix,
    read_agent_report,
    read_flows,
    remove_station,
)
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import (
    ETHERTYPE_IPV6,
    FLOW_KEY_IPV6,
    IP_PROTO_TCP,
    KEY6_WORDS,
    KEY_STATION,
    REGISTER_AP_KEY6_A,
    REGISTER_AP_KEY6_B,
    REGISTER_AP_KEY_A,
    REGISTER_AP_KEY_B,
    REGISTER_AP_KEY_PORTS,
    TABLE_AP_STATIONS,
    TABLE_AP_STATIONS6,
)
from ackwise.twins.packets import ACK, FIN, SYN, TcpSegment, ethernet, fix_tcp_checksum, tcp_header

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


# ---- IPv6: stations, flow records, the agent's frames ----


class StationsClient:
    """The few SwitchClient calls the AP's station and flow functions make, in memory."""

    def __init__(self, registers: dict[str, list[int]] | None = None) -> None:
        self.tables: dict[str, dict[int, TableEntry]] = {TABLE_AP_STATIONS: {}, TABLE_AP_STATIONS6: {}}
        self.registers = registers or {}
        self.handles = itertools.count()

    def table_add(self, table: str, action: str, key: dict[str, str], params: dict[str, int]) -> int:
        net = ipaddress.ip_network(key[KEY_STATION])
        handle = next(self.handles)
        match = MatchValue(
            KEY_STATION, "lpm", net.max_prefixlen, int(net.network_address), prefix_len=net.prefixlen
        )
        self.tables[table][handle] = TableEntry(table, handle, (match,), action, params)
        return handle

    def table_entries(self, table: str) -> list[TableEntry]:
        return list(self.tables[table].values())

    def table_delete(self, table: str, handle: int) -> None:
        del self.tables[table][handle]

    def register_read_all(self, name: str) -> list[int]:
        return self.registers.get(name, [0] * 4)


def test_ipv6_stations_go_to_their_own_table_and_read_back() -> None:
    client = StationsClient()
    assert parse_station_prefix("fd00:0:0:2::1") == "fd00:0:0:2::1/128"
    with pytest.raises(ApConfigError, match=r"host bits set.*fd00:0:0:2::/64"):
        parse_station_prefix("fd00:0:0:2::1/64")
    add_station(client, "10.0.2.0/24", StationParams())  # type: ignore[arg-type]
    add_station(client, "fd00:0:0:2::/64", StationParams(budget_bytes=5000))  # type: ignore[arg-type]
    add_station(client, "::1", StationParams())  # type: ignore[arg-type]  # below 2**32: still IPv6
    assert [len(client.tables[t]) for t in (TABLE_AP_STATIONS, TABLE_AP_STATIONS6)] == [1, 2]
    listed = [(s["ip_version"], s["station"]) for s in list_stations(client)]  # type: ignore[arg-type]
    assert listed == [(4, "10.0.2.0/24"), (6, "fd00:0:0:2::/64"), (6, "::1/128")]
    assert remove_station(client, "fd00:0:0:2::/64") == 1  # type: ignore[arg-type]
    assert remove_station(client, "fd00:0:0:2::/64") == 0  # type: ignore[arg-type]
    assert [s["station"] for s in list_stations(client)] == ["10.0.2.0/24", "::1/128"]  # type: ignore[arg-type]


def test_an_ipv6_flow_reads_back_from_its_key_words() -> None:
    v6, _ = FlowKey.of("fdff:ffff::9", "2001:db8:ff02::7", 5001, 40000)
    v4, _ = FlowKey.of("10.0.1.1", "10.0.2.1", 5001, 40000)
    regs: dict[str, list[int]] = {name: [0] * 4 for name in FLOW_REGISTERS.values()}
    words = {REGISTER_AP_KEY6_A: [0] * 4 * KEY6_WORDS, REGISTER_AP_KEY6_B: [0] * 4 * KEY6_WORDS}
    for slot, key in ((1, v6), (3, v4)):
        if key.version == 6:  # as ap_proxy_flows.p4 writes them: the tag, then the words
            regs[REGISTER_AP_KEY_A][slot], regs[REGISTER_AP_KEY_B][slot] = FLOW_KEY_IPV6, 0
            for i in range(KEY6_WORDS):
                shift = 32 * (KEY6_WORDS - 1 - i)
                words[REGISTER_AP_KEY6_A][slot * KEY6_WORDS + i] = key.addr_lo >> shift & 0xFFFFFFFF
                words[REGISTER_AP_KEY6_B][slot * KEY6_WORDS + i] = key.addr_hi >> shift & 0xFFFFFFFF
        else:
            regs[REGISTER_AP_KEY_A][slot], regs[REGISTER_AP_KEY_B][slot] = key.addr_lo, key.addr_hi
        regs[REGISTER_AP_KEY_PORTS][slot] = key.ports
    client = StationsClient(regs | words)
    flows = read_flows(client)  # type: ignore[arg-type]
    assert [(f.slot, f.key) for f in flows] == [(1, v6), (3, v4)]
    assert str(flows[0].key) == "[2001:db8:ff02::7]:40000 <> [fdff:ffff::9]:5001"


def ipv6_frame(
    src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes
) -> bytes:
    """Ethernet / IPv6 (a Destination Options header, as the switch follows) / TCP, checksummed."""
    tcp = bytes(tcp_header(0, 0, sport, dport, seq, ack, flags, 500, payload=payload))
    dest_opts = bytes([IP_PROTO_TCP, 0, 1, 4, 0, 0, 0, 0])  # PadN
    fixed = struct.pack("!IHBB", 6 << 28 | 0xABCDE, len(dest_opts) + len(tcp), 60, 64)
    ip = fixed + ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed
    frame = bytearray(ethernet(b"\x02" * 6, b"\x04" * 6, ip + dest_opts + tcp, ETHERTYPE_IPV6))
    fix_tcp_checksum(frame)
    return bytes(frame)


class SentFrames:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, frame: bytes) -> None:
        self.sent.append(frame)


def test_the_agent_holds_and_resends_an_ipv6_segment_unchanged() -> None:
    agent = RepairAgent.__new__(RepairAgent)  # its logic, without a socket or a switch
    agent.flows, agent.global_cap_bytes, agent.holdoff_ms = {}, 2**20, 0
    agent.counters = dict.fromkeys(
        ("data_copies", "station_acks", "repairs_sent", "errors", "missed_copies"), 0
    )
    agent.station_nets = [ipaddress.ip_network("10.0.2.0/24"), ipaddress.ip_network("fd00:0:0:2::/64")]
    agent.sock = SentFrames()  # type: ignore[assignment]
    sender, station = "fd00:0:0:1::1", "fd00:0:0:2::1"
    data = [ipv6_frame(sender, station, 5001, 40000, seq(k), 1, ACK, bytes([k]) * MSS) for k in range(4)]
    for frame in data:
        agent.handle(frame, 0.0)
    key, _ = FlowKey.of(sender, station, 5001, 40000)
    assert agent.counters["data_copies"] == 4 and agent.flows[key].buffered_bytes == 4 * MSS
    for n in range(4):  # the station acknowledges segment 1, then three duplicates: 2 was lost
        agent.handle(ipv6_frame(station, sender, 40000, 5001, 1, seq(2), ACK, b""), 0.01 * n)
    assert agent.sock.sent == [data[2]]  # the held frame, byte for byte
    assert agent.counters["repairs_sent"] == 1 and set(agent.flows[key].segments) == {seq(2), seq(3)}
    agent.handle(ipv6_frame(sender, "fd00:0:0:3::1", 5001, 40000, seq(0), 1, ACK, b"x" * MSS), 0.1)
    assert len(agent.flows) == 1  # not a station served: not the proxy's


def test_a_station_is_an_address_in_a_prefix_of_its_own_version() -> None:
    nets = [ipaddress.ip_network("10.0.2.0/24"), ipaddress.ip_network("fd00:0:0:2::/64")]
    assert is_station("10.0.2.9", nets) and is_station("fd00:0:0:2::9", nets)
    assert not is_station("10.0.3.1", nets) and not is_station("fd00:0:0:3::1", nets)
    assert not is_station("::a00:209", nets)  # 10.0.2.9's number, but an IPv6 address
