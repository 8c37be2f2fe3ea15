"""What the host agent reports of a run: its flows' counters, its policy's estimates and the
kernel's counters of its two NFQUEUE queues (packets dropped before the agent saw them)."""

from __future__ import annotations

from ackwise.hosts.agent import Agent
from ackwise.hosts.kernel import parse_nfqueue_counters
from ackwise.hosts.policies import DataArrival, Tack
from ackwise.twins.packets import ACK, TcpSegment

# /proc/net/netfilter/nfnetlink_queue as the kernel writes it (nfnetlink_queue.c, seq_show)
PROC = """   10  12345     0 2 65531     0     0    27647  1
   11  12345     3 2 65531   194     7    27381  1
   12  99999     0 2 65531     5     0       40  1
"""


def test_nfqueue_counters_of_our_queues_only() -> None:
    counters = parse_nfqueue_counters(PROC, {10, 11})
    assert counters == {
        10: {"queued": 0, "queue_dropped": 0, "user_dropped": 0, "packets": 27647},
        11: {"queued": 3, "queue_dropped": 194, "user_dropped": 7, "packets": 27381},
    }
    assert parse_nfqueue_counters("", {10}) == {}


def test_the_report_names_tacks_interval_and_the_queues_counters() -> None:
    agent = Agent("tack", {}, [5001], queue_base=10, idle_s=1.0)
    flow = agent.flow(("10.0.0.1", 40000, 5001))
    policy = flow.policy
    assert isinstance(policy, Tack)
    policy.rtt.sample(0.24)
    for i in range(200):  # 1448-byte segments every 0.5 ms over 0.1 s: 2.9 MB/s
        policy.on_data(DataArrival(i * 0.0005, i * 1448, 1448))
    agent.queue_counters = {"incoming": {"queued": 0, "queue_dropped": 0, "user_dropped": 0, "packets": 9}}
    report = agent.report()
    (state,) = (f["policy_state"] for f in report["flows"].values())
    assert state["rtt_min_s"] == 0.24
    assert state["ack_interval_s"] == policy.interval() == 0.24 / policy.beta
    assert report["nfqueue"]["incoming"]["packets"] == 9


def test_the_report_of_a_flow_counts_what_the_contract_kept() -> None:
    agent = Agent("tack", {}, [5001], queue_base=10, idle_s=1.0)
    flow = agent.flow(("10.0.0.1", 40000, 5001))

    class Pkt:
        def accept(self) -> None: ...

        def drop(self) -> None: ...

    ack = TcpSegment(
        src="10.0.0.3",
        dst="10.0.0.1",
        sport=5001,
        dport=40000,
        seq=1,
        ack=1000,
        flags=ACK,
        window=1000,
        payload_len=0,
        ecn=0,
    )
    flow.on_outgoing(ack, Pkt(), 0.0)
    flow.on_outgoing(ack, Pkt(), 0.001)  # the same ACK again: a duplicate, kept
    (counters,) = agent.report()["flows"].values()
    assert counters["released_kept"] == {"first_ack": 1, "dup_ack": 1}


def test_the_piggyback_hold_reads_its_own_connection_and_reports_its_releases() -> None:
    """With release_if_blocked each flow's reader asks the kernel about that flow's connection
    (local port, remote address and port); the report says how many ACKs left because the host's
    data waited for its window, or because the connection could not be read. No such connection
    exists here: the reading is unknown, and the ACK is not held."""
    agent = Agent("piggyback", {"release_if_blocked": "1"}, [5001], queue_base=10, idle_s=1.0)
    reader = agent.send_state_reader
    assert reader is not None
    try:
        flow = agent.flow(("10.0.0.1", 40000, 5001))
        assert flow.send_state is not None and flow.send_state() is None
        assert reader.readings == 1

        class Pkt:
            def accept(self) -> None: ...

            def drop(self) -> None: ...

        def ack(number: int) -> TcpSegment:
            return TcpSegment("10.0.0.3", "10.0.0.1", 5001, 40000, 1, number, ACK, 1000, 0, 0)

        flow.on_outgoing(ack(1000), Pkt(), 0.0)  # the first ACK: the contract's
        flow.on_outgoing(ack(2448), Pkt(), 0.001)  # unknown reading: released, not held
        assert flow.held is None and reader.readings == 2
        (state,) = (f["policy_state"] for f in agent.report()["flows"].values())
        assert state["released_state_unknown"] == 1 and state["released_while_blocked"] == 0
    finally:
        reader.close()
    assert Agent("piggyback", {}, [5001], queue_base=10, idle_s=1.0).send_state_reader is None
