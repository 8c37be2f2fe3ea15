"""The agent's per-flow logic without NFQUEUE: safety, holding, superseding, timers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ackwise.hosts.policies import EveryD, PiggybackHold
from ackwise.hosts.receiver import ReceiverFlow
from ackwise.hosts.send_backlog import SendState
from ackwise.twins.packets import ACK, CWR, ECE, FIN, PSH, TcpSegment

MSS = 1448


class Pkt:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def accept(self) -> None:
        self.log.append(f"sent {self.name}")

    def drop(self) -> None:
        self.log.append(f"dropped {self.name}")


def data(k: int, t: float) -> TcpSegment:
    return TcpSegment(
        "10.0.0.1",
        "10.0.0.2",
        40000,
        5001,
        1000 + k * MSS,
        1,
        ACK,
        500,
        MSS,
        0,
        ts_val=100 + k,
        ts_ecr=50,
        time=t,
    )


def ack(k: int, flags: int = ACK, window: int = 500, sack: tuple = ()) -> TcpSegment:
    return TcpSegment(
        "10.0.0.2",
        "10.0.0.1",
        5001,
        40000,
        1,
        1000 + k * MSS,
        flags,
        window,
        0,
        0,
        ts_val=50 + k,
        ts_ecr=100 + k,
        sack=sack,
    )


def run(flow: ReceiverFlow, steps: list[tuple[float, TcpSegment]], log: list[str]) -> None:
    for t, seg in steps:
        if seg.payload_len:
            flow.on_incoming(seg, t)
        else:
            flow.on_outgoing(seg, Pkt(f"ack{(seg.ack - 1000) // MSS}", log), t)
        flow.on_timer(t)


def test_held_acks_are_superseded_and_released_in_order() -> None:
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=4))
    steps = []
    for k in range(6):
        steps += [(k * 0.001, data(k, k * 0.001)), (k * 0.001 + 0.0001, ack(k + 1))]
    run(flow, steps, log)
    # ack1: first; ack2..ack4 held and superseded in turn; ack5: 4 segments on; ack6 held
    assert log == ["sent ack1", "dropped ack2", "dropped ack3", "dropped ack4", "sent ack5"]
    assert flow.held is not None and flow.held.seg.ack == 1000 + 6 * MSS
    flow.on_timer(0.1)
    assert log[-1] == "sent ack5"  # not due yet (held at 5.1 ms, due 205.1 ms)
    flow.on_timer(0.2052)
    assert log[-1] == "sent ack6"
    assert flow.stats.released_on_timer == 1 and flow.stats.superseded == 3


def test_a_superseding_ack_inherits_the_earlier_due_time() -> None:
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=100))
    run(
        flow,
        [
            (0.0, data(0, 0.0)),
            (0.0, ack(1)),
            (0.001, data(1, 0.001)),
            (0.001, ack(2)),
            (0.15, data(2, 0.15)),
            (0.15, ack(3)),
        ],
        log,
    )
    assert flow.held is not None and abs(flow.held.due - 0.201) < 1e-9  # ack2's, not ack3's 0.35
    flow.on_timer(0.202)
    assert log == ["sent ack1", "dropped ack2", "sent ack3"]


def test_safety_contract_releases_at_once_and_drops_older_held() -> None:
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=100))
    run(flow, [(0.0, ack(1)), (0.001, ack(2)), (0.002, ack(2, flags=ACK | PSH))], log)
    assert log == ["sent ack1", "dropped ack2", "sent ack2"]
    run(flow, [(0.003, ack(3)), (0.004, ack(3))], log)  # a duplicate ACK: never held
    assert log[-2:] == ["dropped ack3", "sent ack3"]
    run(flow, [(0.005, ack(4)), (0.006, ack(5, flags=ACK | ECE))], log)
    assert log[-2:] == ["dropped ack4", "sent ack5"]
    run(flow, [(0.007, ack(6, sack=((1000 + 8 * MSS, 1000 + 9 * MSS),)))], log)
    assert log[-1] == "sent ack6"  # SACK news (the ECE change back comes later in the rule order)
    assert flow.stats.released_kept == {
        "first_ack": 1,
        "flags": 1,
        "dup_ack": 1,
        "ece_cwr_change": 1,
        "sack_news": 1,
    }


def test_fin_and_data_are_never_held_and_supersede() -> None:
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=100))
    run(flow, [(0.0, ack(1)), (0.001, ack(2))], log)
    flow.on_outgoing(replace(ack(3), flags=ACK | FIN), Pkt("fin", log), 0.002)
    assert log == ["sent ack1", "dropped ack2", "sent fin"]


def test_rtt_from_echoed_timestamps() -> None:
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=1))
    run(flow, [(0.0, ack(1))], log)  # released with TSval 51
    echoed = replace(data(1, 0.03), ts_ecr=51)
    flow.on_incoming(echoed, 0.03)
    assert abs(flow.policy.rtt.min_s - 0.03) < 1e-9


def test_flush_releases_what_is_held() -> None:
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=100))
    run(flow, [(0.0, ack(1)), (0.001, ack(2))], log)
    flow.flush()
    assert log == ["sent ack1", "sent ack2"]


def test_segments_after_a_repaired_hole_count_in_order() -> None:
    """Regression: after a retransmission filled a hole, the agent's next expected byte stayed at
    the hole's end, so no later segment ever counted as in order and the window estimate (which
    counts in-order arrivals per RTT) collapsed for the rest of the connection."""
    log: list[str] = []
    policy = EveryD(d=1, estimator="figure1")  # it counts in-order arrivals per RTT
    flow = ReceiverFlow(policy)
    steps = [(0.000, data(0, 0.0)), (0.0001, ack(1)), (0.001, data(1, 0.001)), (0.0011, ack(2))]
    steps += [(0.003, data(3, 0.003)), (0.0031, ack(2)), (0.004, data(4, 0.004)), (0.0041, ack(2))]
    steps += [(0.010, data(2, 0.010)), (0.0101, ack(5)), (0.011, data(5, 0.011)), (0.0111, ack(6))]
    run(flow, steps, log)
    # in order: 0, 1, the retransmitted 2 and 5; 3 and 4 arrived beyond the hole
    assert policy.cwnd.segments_this == 4
    assert flow.rcv_nxt == 1000 + 6 * MSS


def test_cwr_on_data_ends_the_initial_slow_start_estimate() -> None:
    policy = EveryD(d=1, estimator="figure1")
    flow = ReceiverFlow(policy)
    run(flow, [(0.0, data(0, 0.0)), (0.0001, ack(1))], [])
    assert policy.cwnd.starting_cwnd > -1
    run(flow, [(0.001, replace(data(1, 0.001), flags=ACK | CWR))], [])
    assert policy.cwnd.starting_cwnd == -1 and policy.cwnd.seen_loss_this_interval


# ---- the piggyback hold (Shang and Wills) ----


def reverse_data(k: int, ack_k: int) -> TcpSegment:
    """Data the receiver's host sends back on the connection, carrying ACK number ack_k."""
    return TcpSegment(
        "10.0.0.2",
        "10.0.0.1",
        5001,
        40000,
        1 + k * 100,
        1000 + ack_k * MSS,
        ACK | PSH,
        500,
        100,
        0,
        ts_val=60 + k,
        ts_ecr=100 + ack_k,
    )


def piggyback_flow(hold_ms: float = 40.0) -> ReceiverFlow:
    flow = ReceiverFlow(PiggybackHold(hold_ms=hold_ms))
    flow.on_outgoing(ack(1), Pkt("ack1", []), 0.0)  # the first ACK: the contract sends it
    return flow


def test_piggyback_drops_a_held_ack_when_data_carries_it() -> None:
    log: list[str] = []
    flow = piggyback_flow()
    flow.on_outgoing(ack(2), Pkt("ack2", log), 0.010)
    assert log == [] and flow.held is not None
    flow.on_outgoing(reverse_data(1, ack_k=2), Pkt("data1", log), 0.015)
    assert log == ["dropped ack2", "sent data1"]
    assert flow.stats.piggybacked == 1 and flow.stats.superseded == 0
    assert abs(flow.stats.max_hold_s - 0.005) < 1e-9


def test_piggyback_releases_a_held_ack_after_hold_ms_without_data() -> None:
    log: list[str] = []
    flow = piggyback_flow(hold_ms=20)
    flow.on_outgoing(ack(2), Pkt("ack2", log), 0.010)
    flow.on_timer(0.029)
    assert log == []
    flow.on_timer(0.030)
    assert log == ["sent ack2"] and flow.stats.released_on_timer == 1
    assert abs(flow.stats.max_hold_s - 0.020) < 1e-9


def test_piggyback_with_hold_ms_0_holds_nothing_every_ack_leaves_as_it_arrives() -> None:
    """hold_ms=0 is the agent-only control (issue 39): the ACK goes out in the same call that saw
    it, not on the next timer tick, and data that follows finds nothing to carry."""
    log: list[str] = []
    flow = piggyback_flow(hold_ms=0)
    flow.on_outgoing(ack(2), Pkt("ack2", log), 0.010)
    assert log == ["sent ack2"] and flow.held is None and flow.next_due() is None
    flow.on_outgoing(reverse_data(1, ack_k=2), Pkt("data1", log), 0.011)
    assert log == ["sent ack2", "sent data1"]
    assert (flow.stats.held, flow.stats.piggybacked, flow.stats.released_by_policy) == (0, 0, 1)


def test_piggyback_never_thins_a_newer_pure_ack_releases_the_held_one_first() -> None:
    log: list[str] = []
    flow = piggyback_flow()
    flow.on_outgoing(ack(2), Pkt("ack2", log), 0.010)
    flow.on_outgoing(ack(4), Pkt("ack4", log), 0.012)
    assert log == ["sent ack2"] and flow.held is not None and flow.held.seg.ack == 1000 + 4 * MSS
    assert flow.held.due == 0.012 + 0.040  # its own hold, not the earlier one's
    flow.on_outgoing(ack(4, flags=ACK | FIN), Pkt("fin", log), 0.013)  # FIN: never held, carries it
    assert log == ["sent ack2", "dropped ack4", "sent fin"]
    assert flow.stats.released_early == 1 and flow.stats.superseded == 1 and flow.stats.piggybacked == 0


def test_data_with_an_older_ack_does_not_drop_the_held_one() -> None:
    log: list[str] = []
    flow = piggyback_flow()
    flow.on_outgoing(ack(3), Pkt("ack3", log), 0.010)
    flow.on_outgoing(reverse_data(1, ack_k=2), Pkt("data1", log), 0.011)
    assert log == ["sent data1"] and flow.held is not None


def test_piggyback_never_holds_sack_ece_duplicates_or_fin() -> None:
    log: list[str] = []
    flow = piggyback_flow()
    # SACK blocks the contract would let through as no news (the same block again): refused
    block = ((1000 + 8 * MSS, 1000 + 9 * MSS),)
    flow.on_outgoing(ack(2, sack=block), Pkt("sack-a", log), 0.010)
    flow.on_outgoing(ack(3, sack=block), Pkt("sack-b", log), 0.011)
    # ECE on every ACK (not only where it changes): refused
    flow.on_outgoing(ack(4, flags=ACK | ECE), Pkt("ece-a", log), 0.012)
    flow.on_outgoing(ack(5, flags=ACK | ECE), Pkt("ece-b", log), 0.013)
    flow.on_outgoing(ack(5, flags=ACK | ECE), Pkt("dup", log), 0.014)  # a duplicate: the contract
    flow.on_outgoing(ack(6, flags=ACK | FIN), Pkt("fin", log), 0.015)
    assert log == ["sent sack-a", "sent sack-b", "sent ece-a", "sent ece-b", "sent dup", "sent fin"]
    assert flow.held is None and flow.stats.held == 0
    assert flow.stats.refused_by_policy >= 2


def test_a_safety_release_sends_the_held_ack_first() -> None:
    log: list[str] = []
    flow = piggyback_flow()
    flow.on_outgoing(ack(2), Pkt("ack2", log), 0.010)
    flow.on_outgoing(ack(3, window=900), Pkt("ack3", log), 0.011)  # held too (a new ACK, not an update)
    flow.on_outgoing(ack(3, window=1200), Pkt("update", log), 0.012)  # a window update: never held
    assert log == ["sent ack2", "sent ack3", "sent update"]


def test_release_if_blocked_sends_a_pure_ack_at_once_while_the_hosts_data_waits() -> None:
    """The reader is asked once per pure ACK the policy decides on (not for data, not for what
    the contract keeps); while the host's data waits for its window the ACK leaves as the kernel
    sent it, otherwise it is held and reverse data may still carry it."""
    log: list[str] = []
    waiting, free = SendState(1448, 10, 10, 1448), SendState(0, 3, 10, 1448)
    readings = iter([free, free, waiting])  # at ack2 (after ack1), ack12, ack13
    asked: list[int] = []

    def send_state() -> SendState | None:
        asked.append(1)
        return next(readings)

    flow = ReceiverFlow(PiggybackHold(hold_ms=40, release_if_blocked=True), send_state=send_state)
    flow.on_outgoing(ack(1), Pkt("ack1", log), 0.0)  # the first ACK: the contract's, no reading
    assert asked == []
    flow.on_outgoing(ack(2), Pkt("ack2", log), 0.010)  # not blocked: held
    flow.on_outgoing(reverse_data(1, ack_k=2), Pkt("data1", log), 0.011)  # carries it: dropped
    # (ACKs 12 and 13: their timestamps are newer than data1's, so the contract does not keep them)
    flow.on_outgoing(ack(12), Pkt("ack12", log), 0.020)  # not blocked: held
    assert flow.held is not None
    flow.on_outgoing(ack(13), Pkt("ack13", log), 0.021)  # blocked: ack12 first, then ack13 at once
    assert log == ["sent ack1", "dropped ack2", "sent data1", "sent ack12", "sent ack13"]
    assert flow.held is None and len(asked) == 3
    assert flow.stats.piggybacked == 1 and flow.stats.released_by_policy == 1
    assert flow.policy.released_while_blocked == 1  # type: ignore[attr-defined]


def test_a_policy_that_reads_the_send_state_needs_a_reader() -> None:
    with pytest.raises(ValueError, match="give a reader"):
        ReceiverFlow(PiggybackHold(release_if_blocked=True))
    # without release_if_blocked a reader is not called at all
    flow = ReceiverFlow(PiggybackHold(hold_ms=40), send_state=lambda: pytest.fail("read"))
    flow.on_outgoing(ack(1), Pkt("ack1", []), 0.0)
    flow.on_outgoing(ack(2), Pkt("ack2", []), 0.010)
    assert flow.held is not None


def test_piggyback_runs_on_the_kernels_delayed_ack() -> None:
    assert not PiggybackHold.quickack and not PiggybackHold.thins
    assert EveryD.quickack and EveryD.thins


def test_a_partial_ack_is_held_at_most_two_inter_segment_times() -> None:
    """Issue 39: 4W held NewReno's partial ACKs up to its 200 ms (no new data, so no duplicate
    ACK, came after them in a long recovery): 60 timer releases and 22.9 s for 1 MB at 12 Mbit/s,
    the baseline 8.2 s. Now the hold ends within two inter-segment times; a duplicate ACK
    arriving before that still supersedes it."""
    log: list[str] = []
    flow = ReceiverFlow(EveryD(d=4))
    steps: list[tuple[float, TcpSegment]] = []
    for k in range(4):  # in order, 1 ms apart: ISAT 1 ms
        steps += [(k * 0.001, data(k, k * 0.001)), (k * 0.001 + 0.0001, ack(k + 1))]
    # 4 and 6 lost: 5, 7, 8 arrive beyond the holes, each with its duplicate ACK
    for i, k in enumerate((5, 7, 8)):
        steps += [(0.01 + i * 0.001, data(k, 0.01 + i * 0.001)), (0.0101 + i * 0.001, ack(4))]
    run(flow, steps, log)
    assert flow.policy.isat_s == pytest.approx(0.001)
    # the retransmission of 4: the partial ACK (to 6) covers 2 segments, fewer than d = 4: held,
    # but only until two ISATs later, not the policy's 200 ms
    run(flow, [(0.2, data(4, 0.2)), (0.2001, ack(6))], log)
    assert flow.held is not None and flow.next_due() == pytest.approx(0.2021)
    flow.on_timer(0.2021)
    assert log[-1] == "sent ack6" and flow.held is None
    # the next partial ACK is superseded by the duplicate ACK of the next segment, as before
    flow2 = ReceiverFlow(EveryD(d=4))
    log2: list[str] = []
    run(flow2, steps, log2)
    run(flow2, [(0.2, data(4, 0.2)), (0.2001, ack(6)), (0.2006, data(9, 0.2006)), (0.2007, ack(6))], log2)
    assert log2[-2:] == ["dropped ack6", "sent ack6"]
    # the hole closed (the retransmission of 6, its ACK covering 4 segments), the policy holds
    # up to its 200 ms again
    run(flow, [(0.35, data(6, 0.35)), (0.3501, ack(10)), (0.351, data(10, 0.351)), (0.3511, ack(11))], log)
    assert log[-1] == "sent ack10" and flow.next_due() == pytest.approx(0.5511)
