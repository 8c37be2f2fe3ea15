"""The queue share's second queue in the agent: each flow's oldest back after the switch's wait,
one at a time, again when bounced or unanswered; a newer ACK that says everything the newest held
one says replaces it, never over what the contract keeps."""

from __future__ import annotations

from ackwise.features.queue_share import SHARE_ANSWER_TIMEOUT_S, ShareQueues, says_all_of
from ackwise.twins.p4names import AgentKind
from ackwise.twins.packets import ACK, TcpSegment

F = ("10.0.0.2", "10.0.0.1", 5001, 40000)
G = ("10.0.0.4", "10.0.0.3", 5001, 40001)


def seg(
    ack: int,
    window: int = 500,
    sack: tuple[tuple[int, int], ...] = (),
    ts: tuple[int, int] | None = (100, 50),
    flags: int = ACK,
) -> TcpSegment:
    return TcpSegment(
        "10.0.0.2",
        "10.0.0.1",
        5001,
        40000,
        7,
        ack,
        flags,
        window,
        0,
        0,
        ts_val=None if ts is None else ts[0],
        ts_ecr=None if ts is None else ts[1],
        sack=sack,
    )


PLAIN = seg(1000)


def test_share_sends_each_flows_oldest_after_the_wait_and_the_next_only_once_taken() -> None:
    share = ShareQueues()
    share.keep(F, b"f1", PLAIN, 0.05, now=0.0)
    share.keep(F, b"f2", PLAIN, 0.0, now=0.01)  # the wait of a later one does not move the oldest's
    share.keep(G, b"g1", PLAIN, 0.0, now=0.02)
    assert share.ready(0.02) == [b"g1"]
    assert share.ready(0.049) == []
    assert share.ready(0.05) == [b"f1"]
    assert share.ready(0.06) == []  # f1 is out: nothing more of F until the switch answers
    share.answer(F, AgentKind.SHARE_TAKEN, 0.052, now=0.06)
    assert share.ready(0.1) == []
    assert share.ready(0.112) == [b"f2"]
    share.answer(F, AgentKind.SHARE_TAKEN, 0.0, now=0.113)
    share.answer(G, AgentKind.SHARE_TAKEN, 0.0, now=0.113)
    assert share.holding() == 0 and share.frames == {} and share.next_due() is None
    assert share.counters["share_taken"] == 3 and share.counters["share_kept"] == 3


def test_share_sends_a_bounced_ack_again_after_the_wait_it_came_with() -> None:
    share = ShareQueues()
    share.keep(F, b"f1", PLAIN, 0.0, now=0.0)
    share.keep(F, b"f2", PLAIN, 0.0, now=0.0)
    assert share.ready(0.0) == [b"f1"]
    share.answer(F, AgentKind.SHARE_BOUNCED, 0.03, now=0.001)
    assert share.next_due() == 0.031
    assert share.ready(0.02) == []
    assert share.ready(0.031) == [b"f1"]  # the same, oldest, ACK: the order holds
    share.answer(F, AgentKind.SHARE_TAKEN, 0.0, now=0.032)
    assert share.ready(0.032) == [b"f2"]
    assert (share.counters["share_bounced"], share.counters["share_taken"]) == (1, 1)


def test_share_sends_an_ack_again_when_its_answer_never_comes() -> None:
    share = ShareQueues()
    share.keep(F, b"f1", PLAIN, 0.0, now=0.0)
    assert share.ready(0.0) == [b"f1"]
    assert share.ready(SHARE_ANSWER_TIMEOUT_S - 0.001) == []
    assert share.ready(SHARE_ANSWER_TIMEOUT_S) == [b"f1"]
    assert share.counters["share_resent"] == 1
    share.answer(F, AgentKind.SHARE_TAKEN, 0.0, now=0.3)
    assert share.holding() == 0


def test_share_ignores_an_answer_for_a_flow_with_nothing_out() -> None:
    share = ShareQueues()
    share.keep(F, b"f1", PLAIN, 1.0, now=0.0)
    share.answer(F, AgentKind.SHARE_TAKEN, 0.0, now=0.1)  # f1 never went out: nothing is taken
    assert share.holding() == 1 and share.counters["share_stray_answers"] == 1


def test_share_drains_every_flow_in_its_order() -> None:
    share = ShareQueues()
    for i in range(3):  # each a duplicate ACK without SACK: none replaces another
        share.keep(F, f"f{i}".encode(), PLAIN, 0.5, now=0.0)
    share.keep(G, b"g0", PLAIN, 0.5, now=0.0)
    assert share.drain() == [b"f0", b"f1", b"f2", b"g0"]
    assert share.holding() == 0 and share.ready(10.0) == []


def test_share_replaces_the_newest_held_ack_with_one_that_says_all_it_says() -> None:
    share = ShareQueues()
    share.keep(F, b"a1", seg(1000, sack=((2000, 3000),)), 0.5, now=0.0)
    share.keep(F, b"a2", seg(1000, sack=((2000, 4000),), ts=(101, 50)), 0.5, now=0.01)  # the block grew
    share.keep(F, b"a3", seg(5000, window=600, ts=(102, 50)), 0.5, now=0.02)  # the hole filled
    assert share.holding() == 1 and share.counters["share_replaced"] == 2
    assert share.ready(0.5) == [b"a3"]


def test_share_never_replaces_what_the_contract_keeps() -> None:
    held = seg(1000, sack=((2000, 3000),))
    cases = {
        "a block no longer said": seg(1000, sack=((4000, 5000),), ts=(101, 50)),
        "DSACK": seg(1000, sack=((500, 900), (2000, 3000)), ts=(101, 50)),
        "ECE appears": seg(1000, sack=((2000, 3000),), ts=(101, 50), flags=ACK | 0x40),
        "FIN": seg(1000, sack=((2000, 3000),), ts=(101, 50), flags=ACK | 0x01),
        "older timestamps": seg(1000, sack=((2000, 3000),), ts=(99, 50)),
        "Timestamps gone": seg(1000, sack=((2000, 3000),), ts=None),
        "window shrinks": seg(1000, window=400, sack=((2000, 3000),), ts=(101, 50)),
        "ACK number behind": seg(900, sack=((2000, 3000),), ts=(101, 50)),
    }
    for name, newer in cases.items():
        assert not says_all_of(newer, held, None), name
    assert not says_all_of(seg(1000), seg(1000), None), "a duplicate ACK without SACK"
    assert says_all_of(seg(1000, window=501), seg(1000), None), "a window update"


def test_share_counts_on_the_ack_ahead_for_a_block_the_newer_drops() -> None:
    # More holes than blocks: each new hole drops the oldest block, which the ACK ahead says.
    ahead = seg(1000, sack=((3000, 4000), (2000, 2500), (1500, 1800)))
    held = seg(1000, sack=((5000, 6000), (3000, 4000), (2000, 2500)), ts=(101, 50))
    newer = seg(1000, sack=((7000, 8000), (5000, 6000), (3000, 4000)), ts=(102, 50))
    assert not says_all_of(newer, held, None)
    assert says_all_of(newer, held, ahead)
    share = ShareQueues()
    for frame, s_ in ((b"ahead", ahead), (b"held", held), (b"newer", newer)):
        share.keep(F, frame, s_, 0.5, now=0.0)
    assert share.drain() == [b"ahead", b"newer"]
    # The ACK the switch took last counts as ahead for SHARE_SAID_S.
    share = ShareQueues()
    share.keep(F, b"ahead", ahead, 0.0, now=0.0)
    assert share.ready(0.0) == [b"ahead"]
    share.answer(F, AgentKind.SHARE_TAKEN, 0.1, now=0.01)
    share.keep(F, b"held", held, 0.1, now=0.02)
    share.keep(F, b"newer", newer, 0.1, now=0.03)
    assert share.drain() == [b"newer"]
    share.answer(F, AgentKind.SHARE_TAKEN, 0.0, now=0.0)  # stray: nothing out
    share.keep(F, b"held", held, 0.1, now=2.0)
    share.keep(F, b"newer", newer, 0.1, now=2.0)
    assert share.drain() == [b"held", b"newer"], "taken too long ago to count on"


def test_share_never_replaces_the_ack_that_is_out() -> None:
    share = ShareQueues()
    share.keep(F, b"a1", seg(1000), 0.0, now=0.0)
    assert share.ready(0.0) == [b"a1"]
    share.keep(F, b"a2", seg(2000, ts=(101, 50)), 0.0, now=0.001)
    assert share.holding() == 2
    share.keep(F, b"a3", seg(3000, ts=(102, 50)), 0.0, now=0.002)
    assert share.holding() == 2 and share.drain() == [b"a1", b"a3"]
