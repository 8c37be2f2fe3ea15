"""The controller loop against an in-memory fake of the Thrift client (tests/fake_switch_client.py):
what it writes, when, and what it never touches."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from unittest.mock import patch

import pytest
from fake_switch_client import FLOW_TABLES, FakeSwitchClient

from ackwise.bmv2.client import SwitchClient, SwitchOperationError
from ackwise.cli import app as cli
from ackwise.controller.config import ControllerConfig, parse_config
from ackwise.controller.decision import AckStream
from ackwise.controller.loop import (
    RULES_FULL_CHECK_S,
    Controller,
    SwitchEndpoint,
    exact_stream,
    print_json_line,
)
from ackwise.features.thinning import list_flow_policies, set_flow_policy, set_policy
from ackwise.twins.p4names import (
    FLOW_POLICY_TABLE_SIZE,
    TABLE_ACK_THINNING_FLOW_POLICY,
    TABLE_ACK_THINNING_FLOW_POLICY6,
    TABLE_ACK_THINNING_POLICY,
)
from ackwise.twins.policies import PolicyError, PolicyMatch, PolicyParams

SENDER, RECEIVER = ("10.0.1.1", 40000), ("10.0.2.1", 5001)
ACKS = AckStream.parse(RECEIVER[0], RECEIVER[1], SENDER[0], SENDER[1])
STEADY = 86  # segments per 100 ms interval


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Rig:
    """A controller on one fake switch, with a fake clock advanced by ``step``."""

    def __init__(self, config: ControllerConfig | None = None) -> None:
        self.fake = FakeSwitchClient()
        self.client = cast(SwitchClient, self.fake)  # the same object, for the typed helpers
        self.clock = Clock()
        self.events: list[dict[str, Any]] = []
        self.connects = 0
        self.controller = Controller(
            [SwitchEndpoint("fake", 9090)],
            config or parse_config({"rules": [{"name": "lab", "match": {"src": "10.0.2.0/24"}}]}),
            connect=self.connect,
            log=self.events.append,
            clock=self.clock,
            wall=lambda: 1700000000.0,
            sleep=self.sleep,
        )
        self.segments: dict[tuple[str, int, str, int], int] = {}

    def connect(self, endpoint: SwitchEndpoint) -> SwitchClient:
        self.connects += 1
        self.fake.connect()
        return self.client

    def sleep(self, seconds: float) -> None:
        self.clock.now += seconds

    def flow(
        self,
        src: tuple[str, int] = SENDER,
        dst: tuple[str, int] = RECEIVER,
        segments: int = STEADY,
        **kw: Any,
    ) -> None:
        """The data sender ``src`` sent ``segments`` more segments to ``dst``."""
        key = (src[0], src[1], dst[0], dst[1])
        self.segments[key] = self.segments.get(key, 0) + segments
        self.fake.set_flow(*key, data={"data_segments": self.segments[key], "rtt_min_us": 40_000}, **kw)

    def step(self, send: bool = True, **flow: Any) -> list[dict[str, Any]]:
        """One interval; unless ``send`` is False, the flow sends (``flow`` as for ``flow``)."""
        self.clock.now += 0.125
        self.fake.uptime_us += 125_000
        if send:
            self.flow(**flow)
        before = len(self.events)
        self.controller.step()
        return self.events[before:]

    def policy_rules(self) -> dict[AckStream | None, str]:
        """The per-flow rules (the controller's table)."""
        return {exact_stream(r.match): r.params.describe() for r in list_flow_policies(self.client)}


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def test_a_new_flow_gets_an_exact_rule_then_only_changes_are_written() -> None:
    rig = Rig()
    events = rig.step(segments=10)
    assert kinds(events) == ["connected", "set"]
    assert rig.policy_rules() == {ACKS: "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200"}
    entry = rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY][0]
    # looked up before any ternary rule: exact, on the one 96-bit key field
    assert [(m.match_type, m.width_bits) for m in entry.key] == [("exact", 96)]
    assert rig.fake.entries[TABLE_ACK_THINNING_POLICY] == {}  # the operator's table is never written
    set_event = events[1]
    assert set_event == {
        "t": 1700000000.0,
        "event": "set",
        "switch": "fake:9090",
        "flow": "10.0.1.1:40000 -> 10.0.2.1:5001",
        "acks": "src=10.0.2.1/32 dst=10.0.1.1/32 sport=5001 dport=40000",
        "old": None,
        "handle": 0,
        "new": "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200",
        "kind": "new",
        "reason": "new flow: ACK every segment until its rate is known",
    }
    writes = len(rig.fake.writes)
    for segments in (20, 40, 80, 86):  # ramping up: the decision stays every_d d=1
        assert kinds(rig.step(segments=segments)) == []
    assert len(rig.fake.writes) == writes
    events = [e for _ in range(3) for e in rig.step()]  # steady: saturated, tack
    assert [(e["event"], e["old"], e["new"]) for e in events] == [
        (
            "change",
            "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200",
            "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200",
        )
    ]
    assert rig.fake.writes[-1] == ("modify", 0)  # in place: never a moment without a rule


def test_no_rule_while_the_operators_rule_gives_the_same_policy() -> None:
    """Under a tracking rule every_d d=1, a new flow's d=1 needs no rule of its own (a write less):
    short flows never get one; a flow gets its rule when its policy differs."""
    rig = Rig()
    set_policy(rig.client, PolicyMatch.parse(["src=10.0.2.0/24"]), PolicyParams.parse("every_d", ["d=1"]))
    for segments in (10, 20, 40, 80, 86, 86):
        assert kinds(rig.step(segments=segments)) in (["connected"], [])
    assert len(rig.fake.entries[TABLE_ACK_THINNING_POLICY]) == 1
    assert rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY] == {}
    events = rig.step()
    assert [(e["event"], e["old"], e["kind"]) for e in events] == [("set", None, "saturated")]
    assert rig.policy_rules()[ACKS].startswith("tack")


def test_flows_no_rule_manages_are_never_touched() -> None:
    config = parse_config(
        {
            "rules": [
                {"name": "hands-off", "match": {"src": "10.0.2.9/32"}, "ignore": True},
                {"name": "lab", "match": {"src": "10.0.2.0/24"}},
            ]
        }
    )
    rig = Rig(config)
    # the operator's rules: a tracking rule for the managed prefix, a prefix rule elsewhere, and an
    # exact rule for a flow the controller does not manage
    for spec, policy in ((["src=10.0.2.0/24"], "every_d"), (["src=10.0.3.0/24"], "tack")):
        set_policy(rig.client, PolicyMatch.parse(spec), PolicyParams.parse(policy, []))
    unmanaged = AckStream.parse("10.0.3.1", 5001, "10.0.1.1", 40001)
    operator_exact = set_policy(rig.client, unmanaged.match(), PolicyParams.parse("every_d", ["d=8"]))
    rig.flow(("10.0.1.1", 40001), ("10.0.3.1", 5001))  # no rule matches its ACKs
    rig.flow(("10.0.1.1", 40002), ("10.0.2.9", 5001))  # the ignore rule matches
    rig.flow(RECEIVER, SENDER)  # data the other way: its ACKs come from 10.0.1.1
    before = dict(rig.fake.entries[TABLE_ACK_THINNING_POLICY])
    for _ in range(20):
        rig.flow(("10.0.1.1", 40001), ("10.0.3.1", 5001))
        rig.flow(("10.0.1.1", 40002), ("10.0.2.9", 5001))
        rig.flow(RECEIVER, SENDER)
        rig.step()  # and the managed flow, SENDER -> RECEIVER
    assert rig.fake.entries[TABLE_ACK_THINNING_POLICY] == before  # the operator's 3, unchanged
    assert len(before) == 3
    assert [exact_stream(r.match) for r in list_flow_policies(rig.client)] == [ACKS]
    rig.fake.drop_flow("10.0.1.1", 40001, "10.0.3.1", 5001)
    rig.step()
    assert operator_exact in rig.fake.entries[TABLE_ACK_THINNING_POLICY]  # not the controller's to remove


def test_a_switch_restart_gets_the_current_decisions_again() -> None:
    rig = Rig()
    for _ in range(8):
        rig.step()
    assert rig.policy_rules() == {ACKS: "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200"}
    rig.fake.restart()  # tables empty, registers zero, uptime from 0
    events = rig.step(send=False)  # the flow's record is not back yet
    assert kinds(events) == ["restart", "reapply"]
    assert events[0]["reason"] == "switch restarted: its uptime went back"
    assert events[1]["new"].startswith("tack")
    assert rig.policy_rules() == {ACKS: "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200"}


def test_a_rule_lost_without_a_restart_is_reapplied() -> None:
    rig = Rig()
    rig.step(segments=10)
    rig.flow(("10.0.1.2", 40000), RECEIVER, segments=10)
    rig.step(segments=10)
    assert len(rig.policy_rules()) == 2
    handle = next(r.handle for r in list_flow_policies(rig.client) if exact_stream(r.match) == ACKS)
    del rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY][handle]  # an operator's 'ackwise policy del --flow'
    events = rig.step(segments=10)
    assert kinds(events) == ["lost", "reapply"]
    assert len(rig.policy_rules()) == 2


def test_the_per_flow_table_is_dumped_only_when_its_count_is_off_or_the_full_check_is_due() -> None:
    """A dump of thousands of entries costs hundreds of milliseconds on bmv2 (~95 us each): each
    interval counts the entries, and dumps when the count is not what the controller's own writes
    left, or RULES_FULL_CHECK_S after the last dump."""
    rig = Rig()
    rig.step(segments=10)  # first contact: dumped (adoption)
    rig.fake.dumps.clear()
    for _ in range(3):  # the controller's own write (a change in place, or none): count as expected
        rig.step()
    assert TABLE_ACK_THINNING_FLOW_POLICY not in rig.fake.dumps
    for _ in range(int(RULES_FULL_CHECK_S / 0.125) + 1):
        rig.step()
    assert rig.fake.dumps.count(TABLE_ACK_THINNING_FLOW_POLICY) == 1  # the periodic full check


def test_a_rule_changed_in_place_by_someone_else_is_caught_by_the_full_check() -> None:
    """Same count, other parameters: only the periodic dump can see it; the rule is re-applied."""
    rig = Rig()
    rig.step(segments=10)
    entry = next(iter(rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY].values()))
    rig.client.table_modify(
        TABLE_ACK_THINNING_FLOW_POLICY, entry.handle, entry.action, {**entry.params, "d": 7}
    )
    seen: list[str] = []
    for _ in range(int(RULES_FULL_CHECK_S / 0.125) + 2):
        seen += kinds(rig.step(segments=2))  # low rate: the decision stays every_d d=1
    assert seen == ["lost", "change"], seen  # modified back in place
    assert rig.policy_rules() == {ACKS: "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200"}


def test_every_rule_lost_at_once_counts_as_a_restart() -> None:
    """A program reload keeps the uptime but empties the tables: as a restart."""
    rig = Rig()
    rig.step(segments=10)
    rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY].clear()
    events = rig.step(segments=10)
    assert kinds(events) == ["restart", "reapply"]
    assert events[0]["reason"] == "the policy table lost every rule of the controller"


def test_rules_of_finished_flows_are_removed() -> None:
    rig = Rig()
    other = ("10.0.1.2", 40000)
    rig.flow(other, RECEIVER, segments=10)
    rig.step(segments=10)
    assert len(rig.policy_rules()) == 2
    rig.fake.set_flow(*other, *RECEIVER, closed=True)  # FIN: the record is marked closed
    events = rig.step()
    assert [(e["event"], e["reason"]) for e in events] == [("remove", "flow closed (FIN or RST)")]
    rig.fake.drop_flow(*SENDER, *RECEIVER)  # its slot taken by another flow
    events = rig.step(send=False)
    assert [(e["event"], e["reason"]) for e in events] == [
        ("remove", "flow record gone (reclaimed, or the switch restarted)")
    ]
    assert rig.policy_rules() == {}


def test_an_idle_flow_loses_its_rule_and_gets_one_when_it_sends_again() -> None:
    config = parse_config({"forget_after_s": 1, "rules": [{"name": "lab", "match": {"src": "10.0.2.0/24"}}]})
    rig = Rig(config)
    rig.step(segments=10)
    removed = [e for _ in range(12) for e in rig.step(segments=0)]
    assert [(e["event"], e["reason"]) for e in removed] == [("remove", "no new data for 1 s")]
    assert rig.policy_rules() == {}
    assert [e for _ in range(5) for e in rig.step(segments=0)] == []  # still idle: not re-added
    assert kinds(rig.step(segments=10)) == ["set"]


def test_rules_left_by_a_previous_controller_are_adopted() -> None:
    rig = Rig()
    left = set_flow_policy(rig.client, ACKS.match(), PolicyParams.parse("tack", []))
    gone = AckStream.parse("10.0.2.2", 5001, "10.0.1.1", 40000)
    left_gone = set_flow_policy(rig.client, gone.match(), PolicyParams.parse("every_d", ["d=4"]))
    events = rig.step(segments=10)
    assert [(e["event"], e.get("handle")) for e in events] == [
        ("connected", None),
        ("adopt", left),
        ("adopt", left_gone),
        ("remove", None),  # the flow of the second is not there
        ("change", None),  # the first: modified in place, not added twice
    ]
    assert rig.fake.writes == [("add", left), ("add", left_gone), ("delete", left_gone), ("modify", left)]


def test_the_rule_budget_is_kept() -> None:
    config = parse_config(
        {"max_rules_per_switch": 1, "rules": [{"name": "lab", "match": {"src": "10.0.2.0/24"}}]}
    )
    rig = Rig(config)
    rig.flow(("10.0.1.2", 40000), RECEIVER, segments=10)
    events = rig.step(segments=10)
    assert kinds(events) == ["connected", "set", "budget"]
    assert "max_rules_per_switch reached" in events[2]["reason"]
    assert kinds(rig.step(segments=10)) == []  # logged once
    assert len(rig.policy_rules()) == 1


def test_a_switch_that_stops_answering_is_retried() -> None:
    rig = Rig()
    rig.step(segments=10)
    rig.fake.reachable = False
    events = [e for _ in range(5) for e in rig.step(segments=10)]
    assert kinds(events) == ["error"]  # once while it lasts, not every interval
    assert "no switch answers on Thrift port" in events[0]["error"]
    rig.fake.reachable = True
    events = rig.step(segments=10)
    assert kinds(events) == ["connected", "recovered"]
    assert rig.connects == 1 + 4 + 1  # the first, one attempt per interval while down, the last


def test_a_failed_write_is_logged_and_retried() -> None:
    rig = Rig()
    # Per-flow rules of flows this controller does not manage fill the table (written straight into
    # the fake: a table_add call per entry would check each for duplicates against all the others).
    template = rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY][
        set_flow_policy(rig.client, ACKS.match(), PolicyParams.parse("tack", []))
    ]
    rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY].clear()
    for handle in range(FLOW_POLICY_TABLE_SIZE):
        stream = AckStream.parse("10.0.3.1", 5001, "10.0.1.1", handle)
        key = (replace(template.key[0], value=int(stream.match().exact_key()["flow"], 0)),)
        rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY][handle] = replace(template, handle=handle, key=key)
    rig.fake._next_handle[TABLE_ACK_THINNING_FLOW_POLICY] = FLOW_POLICY_TABLE_SIZE
    events = rig.step(segments=10)
    assert kinds(events) == ["connected", "error"]
    assert "TABLE_FULL" in events[1]["error"]
    rig.fake.table_delete(TABLE_ACK_THINNING_FLOW_POLICY, 0)
    assert kinds(rig.step(segments=10)) == ["set"]


def test_run_steps_every_interval_and_release_removes_the_rules() -> None:
    rig = Rig()
    rig.flow(segments=10)
    start = rig.clock.now
    assert rig.controller.run(intervals=3) == 3
    assert rig.clock.now == pytest.approx(start + 0.2)  # slept between the 3 steps, not after
    assert len(rig.policy_rules()) == 1
    rig.controller.release()
    assert rig.policy_rules() == {}
    assert rig.events[-1]["reason"] == "controller exiting: its rules removed on request"


class OutOfStepConnection:
    """One Thrift connection to the fake switch. A call cut short by Ctrl-C (``cut``: the next call
    of that name raises KeyboardInterrupt after its request went out) leaves it out of step, as a
    real one is: each later call reads an earlier reply as its own, so it returns at once and its
    own request never takes effect."""

    def __init__(self, fake: FakeSwitchClient) -> None:
        self.fake = fake
        self.cut: str | None = None
        self.out_of_step = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.fake, name)
        if name == "close" or not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.out_of_step:
                return None
            if name == self.cut:
                self.out_of_step = True
                raise KeyboardInterrupt
            return method(*args, **kwargs)

        return call


def test_release_deletes_the_rules_over_a_new_connection_after_a_call_cut_short() -> None:
    """Regression: CI's test_policy_and_flows (stop 51) found the controller's rule still on the
    switch after a Ctrl-C and a logged 'remove': the delete went down the connection the interrupt
    had cut mid-call."""
    rig = Rig()
    connections: list[OutOfStepConnection] = []

    def connect(endpoint: SwitchEndpoint) -> SwitchClient:
        connections.append(OutOfStepConnection(rig.fake))
        return cast(SwitchClient, connections[-1])

    rig.controller._connect = connect
    assert kinds(rig.step(segments=10)) == ["connected", "set"]
    connections[-1].cut = "table_num_entries"
    with pytest.raises(KeyboardInterrupt):
        rig.step(segments=10)
    rig.controller.release()
    assert rig.policy_rules() == {}
    assert kinds(rig.events[-2:]) == ["connected", "remove"]
    assert len(connections) == 2 and connections[0].fake.closed


def test_ctrl_c_during_a_write_lets_the_interval_end_and_its_rule_be_removed(tmp_path: Path) -> None:
    """``ackwise controller run --remove-rules-on-exit``, Ctrl-C'd just after the switch took a
    rule: the write is recorded, the run stops after that interval, and the rule is removed. (A
    KeyboardInterrupt there used to leave the rule on the switch, unknown to the controller.)"""
    fake = FakeSwitchClient()
    fake.set_flow(*SENDER, *RECEIVER, data={"data_segments": 10, "rtt_min_us": 40_000})
    switch_add = fake.table_add

    def add_then_ctrl_c(*args: Any, **kwargs: Any) -> int:
        handle = switch_add(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return handle

    fake.table_add = add_then_ctrl_c  # type: ignore[method-assign]
    events: list[dict[str, Any]] = []
    on_the_fake = partial(Controller, connect=lambda endpoint: fake.connect(), log=events.append)
    config = tmp_path / "controller.yaml"
    config.write_text('rules: [{name: lab, match: {src: "10.0.2.0/24"}}]\n')
    before = signal.getsignal(signal.SIGINT)
    argv = ["controller", "run", "--config", str(config), "--switch", "fake:9090"]
    with patch("ackwise.cli.controller.Controller", on_the_fake):
        assert cli.main([*argv, "--interval-ms", "50", "--remove-rules-on-exit"]) == 0
    # an "overrun" (the 50 ms interval outlasted on a loaded machine) may come between: not this test's
    kinds_in_order = [e["event"] for e in events if e["event"] != "overrun"]
    assert kinds_in_order == ["connected", "start", "set", "connected", "remove", "stop"]
    assert events[-1]["rules_left"] == 0
    assert list_flow_policies(cast(SwitchClient, fake)) == []
    assert signal.getsignal(signal.SIGINT) is before


def test_an_overrun_is_logged() -> None:
    rig = Rig()
    rig.flow(segments=10)

    def slow_step() -> None:
        rig.clock.now += 0.3

    rig.controller.step = slow_step  # type: ignore[method-assign]
    rig.controller.run(intervals=2)
    assert [e["event"] for e in rig.events] == ["overrun", "overrun"]


def test_switch_endpoints() -> None:
    assert SwitchEndpoint.parse("s1:9091") == SwitchEndpoint("s1", 9091)
    assert SwitchEndpoint.parse("9092") == SwitchEndpoint("localhost", 9092)
    assert SwitchEndpoint.parse("s2") == SwitchEndpoint("s2", 9090)
    with pytest.raises(ValueError, match="write HOST:PORT"):
        SwitchEndpoint.parse("s1:x")
    with pytest.raises(ValueError, match="give at least one --switch"):
        Controller([], parse_config({"rules": [{"name": "r", "match": {}}]}))


def test_log_lines_are_json(capsys: pytest.CaptureFixture[str]) -> None:
    print_json_line({"event": "set", "flow": "a -> b"})
    assert json.loads(capsys.readouterr().out) == {"event": "set", "flow": "a -> b"}


# ---- IPv6 flows: their rules in ack_thinning.flow_policy6, whose handles are its own ----

SENDER6, RECEIVER6 = ("fd00:0:0:1::1", 40000), ("fd00:0:0:2::1", 5001)
ACKS6 = AckStream.parse(RECEIVER6[0], RECEIVER6[1], SENDER6[0], SENDER6[1])
BOTH_VERSIONS = {
    "rules": [
        {"name": "lab", "match": {"src": "10.0.2.0/24"}},
        {"name": "lab6", "match": {"src": "fd00:0:0:2::/64"}},
    ]
}


def test_an_ipv6_flow_gets_its_rule_in_the_ipv6_per_flow_table() -> None:
    rig = Rig(parse_config(BOTH_VERSIONS))
    events = rig.step(segments=10, src=SENDER6, dst=RECEIVER6)
    assert kinds(events) == ["connected", "set"]
    assert (events[1]["flow"], events[1]["acks"]) == (
        "[fd00:0:0:1::1]:40000 -> [fd00:0:0:2::1]:5001",
        "src=fd00:0:0:2::1/128 dst=fd00:0:0:1::1/128 sport=5001 dport=40000",
    )
    entry = rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY6][0]
    assert [(m.match_type, m.width_bits) for m in entry.key] == [("exact", 288)]  # 2 x 128 + 2 x 16
    assert rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY] == {}
    for segments in (20, 40, 80, 86):
        rig.step(segments=segments, src=SENDER6, dst=RECEIVER6)
    events = [e for _ in range(3) for e in rig.step(src=SENDER6, dst=RECEIVER6)]
    assert kinds(events) == ["change"]
    assert rig.fake.writes[-1] == ("modify", 0)
    assert rig.policy_rules() == {ACKS6: "tack mss=1448 L=2 beta=4 rtt_min_us=0 idle_ms=1000 hold_ms=200"}
    rig.fake.set_flow(*SENDER6, *RECEIVER6, closed=True)
    events = rig.step(send=False)
    assert [(e["event"], e["reason"]) for e in events] == [("remove", "flow closed (FIN or RST)")]
    assert rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY6] == {}


def test_an_ipv4_and_an_ipv6_rule_with_the_same_handle_are_each_checked_in_their_own_table() -> None:
    """bmv2 numbers each table's entries from 0: the IPv4 flow's rule and the IPv6 flow's are both
    handle 0, and neither may be taken for the other (lost, re-applied, deleted)."""
    rig = Rig(parse_config(BOTH_VERSIONS))
    rig.flow(SENDER6, RECEIVER6, segments=10)
    assert kinds(rig.step(segments=10)) == ["connected", "set", "set"]
    assert [list(rig.fake.entries[t]) for t in FLOW_TABLES] == [[0], [0]]
    seen: list[str] = []
    for _ in range(int(RULES_FULL_CHECK_S / 0.125) + 2):  # through a full check of both tables
        rig.flow(SENDER6, RECEIVER6, segments=2)
        seen += kinds(rig.step(segments=2))
    assert seen == []
    del rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY6][0]  # 'ackwise policy del --flow --ipv6 0'
    rig.flow(SENDER6, RECEIVER6, segments=2)
    events = rig.step(segments=2)
    assert [(e["event"], e["flow"]) for e in events] == [("lost", str(ACKS6)), ("reapply", str(ACKS6))]
    assert [list(rig.fake.entries[t]) for t in FLOW_TABLES] == [[0], [1]]
    rig.fake.set_flow(*SENDER, *RECEIVER, closed=True)
    rig.flow(SENDER6, RECEIVER6, segments=2)
    assert [(e["event"], e["flow"]) for e in rig.step(send=False)] == [("remove", str(ACKS))]
    assert [list(rig.fake.entries[t]) for t in FLOW_TABLES] == [[], [1]]
    assert rig.policy_rules() == {ACKS6: "every_d mss=1448 d=1 idle_ms=1000 hold_ms=200"}


def test_rules_of_one_ip_version_never_manage_flows_of_the_other() -> None:
    rig = Rig()  # manages src=10.0.2.0/24 only
    for _ in range(6):
        rig.flow(SENDER6, RECEIVER6)
        rig.step(send=False)
    assert rig.fake.writes == []
    rig6 = Rig(parse_config({"rules": [{"name": "lab6", "match": {"src": "fd00::/8"}}]}))
    for _ in range(6):
        rig6.step()  # the IPv4 flow
    assert rig6.fake.writes == []


def test_ipv6_rules_left_by_a_previous_controller_are_adopted_by_their_table() -> None:
    rig = Rig(parse_config(BOTH_VERSIONS))
    left4 = set_flow_policy(rig.client, ACKS.match(), PolicyParams.parse("tack", []))
    left6 = set_flow_policy(rig.client, ACKS6.match(), PolicyParams.parse("tack", []))
    assert (left4, left6) == (0, 0)
    rig.flow(SENDER6, RECEIVER6, segments=10)
    events = rig.step(segments=10)
    assert [(e["event"], e.get("flow")) for e in events[:3]] == [
        ("connected", None),
        ("adopt", str(ACKS)),
        ("adopt", str(ACKS6)),
    ]
    # each modified in place in its own table (in the order of the flows' slots), not added twice
    assert sorted((e["event"], e["flow"]) for e in events[3:]) == [
        ("change", str(ACKS)),
        ("change", str(ACKS6)),
    ]
    assert [len(rig.fake.entries[t]) for t in FLOW_TABLES] == [1, 1]


def test_a_per_flow_rule_needs_an_exact_match_and_a_program_with_the_versions_table() -> None:
    rig = Rig()
    with pytest.raises(PolicyError, match="a per-flow rule needs src=IP dst=IP sport=N dport=N"):
        set_flow_policy(rig.client, PolicyMatch.parse(["src=fd00::/64"]), PolicyParams.parse("tack", []))
    del rig.fake.entries[TABLE_ACK_THINNING_FLOW_POLICY6]
    no_ipv6 = SimpleNamespace(tables={TABLE_ACK_THINNING_FLOW_POLICY: None, TABLE_ACK_THINNING_POLICY: None})
    with (
        patch.object(FakeSwitchClient, "program", no_ipv6),
        pytest.raises(
            SwitchOperationError, match=r"no per-flow rules' table for IPv6 flows .* load ack_switch"
        ),
    ):
        set_flow_policy(rig.client, ACKS6.match(), PolicyParams.parse("tack", []))
