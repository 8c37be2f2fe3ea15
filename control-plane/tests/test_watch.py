"""``ackwise watch``: rows from flow records (pure), sorting and matching, JSON lines, and the
refresh loop against the in-memory fake client."""

from __future__ import annotations

import io
import json
import socket
from typing import cast

import pytest
from fake_switch_client import FakeSwitchClient

from ackwise.bmv2.client import PortInfo, SwitchClient
from ackwise.cli import app as cli
from ackwise.cli.args import EXIT_USAGE
from ackwise.cli.watch import (
    WATCH_COLUMNS,
    build_rows,
    json_lines,
    policy_for,
    port_rows,
    select_rows,
    watch,
)
from ackwise.controller.decision import AckStream
from ackwise.features.thinning import FlowRecord, HalfFlow, PolicyRule, set_flow_policy, set_policy
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.policies import MSS_BYTES, PolicyMatch, PolicyParams


def record(src: str, sport: int, dst: str, dport: int, data: HalfFlow, acks: HalfFlow) -> FlowRecord:
    """A record in which src sends ``data`` and dst sends ``acks``."""
    key, direction = FlowKey.of(src, dst, sport, dport)
    data.sender, acks.sender = key.endpoint(direction), key.endpoint(1 - direction)
    return FlowRecord(key.slot, key, 0, False, [data, acks] if direction == 0 else [acks, data])


def rule(handle: int, match: str, policy: str, *params: str) -> PolicyRule:
    m = PolicyMatch.parse(match.split())
    return PolicyRule(handle, m, PolicyParams.parse(policy, list(params)), m.priority)


RULES = sorted(
    [
        rule(0, "src=10.0.2.0/24", "every_d", "d=4"),
        rule(1, "src=10.0.2.1 dst=10.0.1.1 sport=5001 dport=40000", "tack"),
        rule(2, "src=10.0.2.2", "acc"),
    ],
    key=lambda r: (r.priority, r.handle),
)
DEFAULT = PolicyParams.parse("every_d", ["d=2"])


def records(data_end: int = 1000, segments: int = 10) -> list[FlowRecord]:
    return [
        record(
            "10.0.1.1",
            40000,
            "10.0.2.1",
            5001,
            HalfFlow("", data_segments=segments, rtt_min_us=40_000, data_end=data_end, egress_port=2),
            HalfFlow(
                "",
                acks_seen=100,
                acks_forwarded=25,
                acks_thinned=75,
                last_keep_reason="acks_all_data",
                egress_port=3,
            ),
        ),
        record(
            "10.0.1.2",
            40000,
            "10.0.2.2",
            5001,
            HalfFlow("", data_segments=segments),
            HalfFlow("", acks_seen=10, acks_forwarded=10, acc_d=8),
        ),
        record(
            "10.0.1.3",
            40000,
            "10.0.3.3",
            22,
            HalfFlow("", data_segments=1),
            HalfFlow("", acks_seen=1, egress_port=1),
        ),
        record("10.0.1.4", 40000, "10.0.3.4", 22, HalfFlow(""), HalfFlow("")),  # nothing yet: no row
    ]


def test_rows_per_ack_stream_with_the_policy_the_switch_applies() -> None:
    rows, progress = build_rows(records(), RULES, DEFAULT, {}, 10.0)
    by_sender = {r["sender"]: r for r in rows}
    assert set(by_sender) == {"10.0.1.1:40000", "10.0.1.2:40000", "10.0.1.3:40000"}
    first = by_sender["10.0.1.1:40000"]
    assert first == {
        "flow": "10.0.1.1:40000 <> 10.0.2.1:5001",
        "sender": "10.0.1.1:40000",
        "receiver": "10.0.2.1:5001",
        "data_segments": 10,
        "acks_seen": 100,
        "acks_forwarded": 25,
        "acks_thinned": 75,
        "thinned_pct": 75.0,
        "rtt_min_us": 40_000,
        "rate_bytes_per_s": None,  # one refresh: no rate yet
        "policy": "tack",  # the exact rule beats the /24
        "policy_params": "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200",
        "d": None,
        "last_keep_reason": "acks_all_data",
        "port": 3,  # the port the switch saw the ACKs leave by
        "closed": False,
    }
    assert by_sender["10.0.1.2:40000"]["policy"] == "acc"
    assert by_sender["10.0.1.2:40000"]["d"] == 8  # acc: the switch's current d
    assert by_sender["10.0.1.3:40000"]["policy"] == "every_d"  # no rule: the default
    assert by_sender["10.0.1.3:40000"]["d"] == 2
    assert by_sender["10.0.1.3:40000"]["port"] == 1
    assert AckStream.parse("10.0.2.1", 5001, "10.0.1.1", 40000) in progress


def test_rate_between_refreshes_from_data_end_or_segments() -> None:
    _, progress = build_rows(records(data_end=2**32 - 1000, segments=10), RULES, DEFAULT, {}, 10.0)
    rows, _ = build_rows(
        records(data_end=100 * MSS_BYTES - 1000, segments=60), RULES, DEFAULT, progress, 10.5
    )
    by_sender = {r["sender"]: r for r in rows}
    # data_end across the wrap: 100 segments in 0.5 s
    assert by_sender["10.0.1.1:40000"]["rate_bytes_per_s"] == round(100 * MSS_BYTES / 0.5)
    # tack's d estimated: bdp = 289600 B/s x 40 ms / 1448 = 8 segments, / beta 4 = 2, L = 2
    assert by_sender["10.0.1.1:40000"]["d"] == 2
    # without data_end: 50 new segments counted full-sized
    assert by_sender["10.0.1.2:40000"]["rate_bytes_per_s"] == round(50 * MSS_BYTES / 0.5)


def test_policy_lookup_follows_priority_then_default() -> None:
    stream = AckStream.parse("10.0.2.9", 1, "10.0.1.9", 2)
    assert policy_for(stream, RULES, DEFAULT).d == 4
    assert policy_for(AckStream.parse("10.9.9.9", 1, "10.0.1.9", 2), RULES, DEFAULT) == DEFAULT


def test_sorting_and_matching() -> None:
    rows, _ = build_rows(records(), RULES, DEFAULT, {}, 1.0)
    by_seen = select_rows(rows, "acks_seen", None)
    assert [r["acks_seen"] for r in by_seen] == [100, 10, 1]  # numbers: largest first
    by_sender = select_rows(rows, "sender", None)
    assert [r["sender"] for r in by_sender] == ["10.0.1.1:40000", "10.0.1.2:40000", "10.0.1.3:40000"]
    by_d = select_rows(rows, "d", None)
    assert [r["d"] for r in by_d] == [8, 2, None]  # unknown last
    assert [r["sender"] for r in select_rows(rows, "flow", "10.0.2.")] == ["10.0.1.1:40000", "10.0.1.2:40000"]
    assert select_rows(rows, "flow", "192.168.") == []
    with pytest.raises(ValueError, match=r"--sort speed: use one of flow, sender, acks_seen"):
        select_rows(rows, "speed", None)
    for column in WATCH_COLUMNS:  # every advertised column sorts
        assert len(select_rows(rows, column, None)) == 3


def test_json_lines_one_per_flow() -> None:
    rows, _ = build_rows(records(), RULES, DEFAULT, {}, 1.0)
    lines = json_lines(rows, 1700000000.25)
    assert len(lines) == 3
    parsed = [json.loads(line) for line in lines]
    assert all(p["t"] == 1700000000.25 for p in parsed)
    assert [p["sender"] for p in parsed] == [r["sender"] for r in rows]


def test_port_rows() -> None:
    ports = (PortInfo(1, "veth1", True), PortInfo(2, "veth2", True))
    assert port_rows(ports, {1: 12, 2: None}, {1: 3}) == [
        {"port": 1, "interface": "veth1", "backlog_pkts": 12, "ecn_marks": 3},
        {"port": 2, "interface": "veth2", "backlog_pkts": None, "ecn_marks": None},
    ]


# ---- the refresh loop, on the fake client ----


def fake_switch() -> tuple[FakeSwitchClient, SwitchClient]:
    fake = FakeSwitchClient()
    client = cast(SwitchClient, fake)
    fake.set_flow(
        "10.0.1.1",
        40000,
        "10.0.2.1",
        5001,
        data={"data_segments": 10},
        acks={"acks_seen": 4, "egress_port": 1},
    )
    set_policy(client, PolicyMatch.parse(["src=10.0.2.0/24"]), PolicyParams.parse("every_d", ["d=8"]))
    fake.counters[("ecn.marks", 1)] = 7
    return fake, client


def test_watch_streams_json_lines_for_a_given_count() -> None:
    fake, client = fake_switch()
    out = io.StringIO()
    clock = iter([0.0, 1.0])

    def sleep(seconds: float) -> None:
        fake.set_flow("10.0.1.1", 40000, "10.0.2.1", 5001, data={"data_segments": 30})

    assert watch(client, as_json=True, count=2, out=out, clock=lambda: next(clock), sleep=sleep) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["sender"], x["policy"], x["d"], x["port"]) for x in lines] == [
        ("10.0.1.1:40000", "every_d", 8, 1)
    ] * 2
    assert [x["rate_bytes_per_s"] for x in lines] == [None, 20 * MSS_BYTES]


def test_watch_draws_a_table_and_leaves_on_ctrl_c() -> None:
    _, client = fake_switch()
    out = io.StringIO()

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    assert watch(client, out=out, width=160, sleep=interrupted) == 0  # Ctrl-C during the wait: exit 0
    text = out.getvalue()
    assert "10.0.1.1:40000 -> 10.0.2.1:5001" in text
    assert "every_d" in text
    assert "veth1" in text and "7" in text  # the port table, with its ECN marks


def test_watch_refuses_bad_arguments_before_reading() -> None:
    _, client = fake_switch()
    with pytest.raises(ValueError, match="--interval 0: give seconds above 0"):
        watch(client, interval_s=0)
    with pytest.raises(ValueError, match="--count 0"):
        watch(client, count=0)
    with pytest.raises(ValueError, match="--sort x:"):
        watch(client, sort="x")


def test_watch_command_without_a_switch(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert cli.main(["watch", "--count", "1", "--thrift-port", str(port)]) == 3
    assert f"no switch answers on Thrift port localhost:{port}" in capsys.readouterr().err
    assert cli.main(["watch", "--sort", "speed", "--thrift-port", str(port)]) == EXIT_USAGE  # no switch asked
    assert "--sort speed: use one of" in capsys.readouterr().err


def test_an_80_column_terminal_keeps_whole_numbers() -> None:
    """Below 112 columns the table keeps seen, thinned, rate, policy and d, and says what it left
    out; no number is cut short."""
    import io

    from rich.console import Console

    from ackwise.cli.watch import WIDE_COLUMNS, render

    rows, _ = build_rows(records(), RULES, DEFAULT, {}, 10.0)
    ports = [{"port": 1, "interface": "s1-eth1", "backlog_pkts": None, "ecn_marks": 0}]
    for width in (80, WIDE_COLUMNS):
        out = io.StringIO()
        Console(file=out, width=width).print(render(rows, ports, "t", width))
        screen = out.getvalue()
        assert "…" not in screen
        assert all(len(line) <= width for line in screen.splitlines())
        assert "10.0.1.1:40000 -> 10.0.2.1:5001" in screen and " 100 " in screen and " 75 " in screen
        assert ("RTTmin ┃" in screen) == (width >= WIDE_COLUMNS)  # the column, not the caption
    assert "(fwd, %, RTTmin and kept in a terminal of 112 columns or more)" in render_text(rows, 80)


def render_text(rows: list[dict[str, object]], width: int) -> str:
    import io

    from rich.console import Console

    from ackwise.cli.watch import render

    out = io.StringIO()
    Console(file=out, width=width).print(render(rows, [], "t", width))
    return out.getvalue()


def test_watch_shows_an_ipv6_flow_with_the_per_flow_rule_it_has() -> None:
    """An IPv6 flow's record (its addresses in key6_a/_b) and its per-flow rule in flow_policy6,
    beside an IPv4 flow whose per-flow rule has the same handle (0) in IPv4's table."""
    fake, client = fake_switch()
    sender6, receiver6 = ("fd00:0:0:1::1", 40000), ("fd00:0:0:2::1", 5001)
    fake.set_flow(*sender6, *receiver6, data={"data_segments": 10}, acks={"acks_seen": 6, "egress_port": 1})
    acks6 = AckStream.parse(*receiver6, *sender6)
    acks4 = AckStream.parse("10.0.2.1", 5001, "10.0.1.1", 40000)
    assert set_flow_policy(client, acks6.match(), PolicyParams.parse("tack", [])) == 0
    assert set_flow_policy(client, acks4.match(), PolicyParams.parse("every_d", ["d=3"])) == 0
    out = io.StringIO()
    assert watch(client, as_json=True, count=1, out=out) == 0
    lines = {x["sender"]: x for x in map(json.loads, out.getvalue().splitlines())}
    assert (lines["[fd00:0:0:1::1]:40000"]["policy"], lines["[fd00:0:0:1::1]:40000"]["acks_seen"]) == (
        "tack",
        6,
    )
    assert (lines["10.0.1.1:40000"]["policy"], lines["10.0.1.1:40000"]["d"]) == ("every_d", 3)


def test_watch_draws_an_ipv6_flows_endpoints_whole() -> None:
    """rich reads ``[...]`` as markup: an IPv6 flow was drawn as ':40000 -> :5001'."""
    fake, client = fake_switch()
    fake.set_flow("fd00:0:0:1::1", 40000, "fd00:0:0:2::1", 5001, data={"data_segments": 10})
    out = io.StringIO()
    watch(client, out=out, width=160, count=1)
    assert "[fd00:0:0:1::1]:40000 -> [fd00:0:0:2::1]:5001" in out.getvalue()
