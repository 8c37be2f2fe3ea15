"""The piggyback hold on the test bed, checked from outside the agent: an NFLOG rule ahead of the
agent's NFQUEUE rule records every segment the receiver's kernel sent, a capture on its interface
every segment that left. Byte-exact both ways; nothing unsafe held; every held ACK left within
the hold, or was dropped because data carrying its ACK left within it.

About 15 s per run: one 300 kB download at 190 kB/s over a lossy 40 kB/s uplink (Shang and
Wills' DSL path, with 1 % random loss each way so that duplicate ACKs and SACK blocks occur)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from typing import Any

import pytest

from ackwise.experiments.measure.pcapstats import read_segments
from ackwise.experiments.measure.traffic import Capture, run_piggyback
from ackwise.hosts.mininet_agent import HostAgent
from ackwise.topologies.testbed import Testbed
from ackwise.twins.packets import ECE, FIN, RST, SYN, TcpSegment
from ackwise.twins.serial import seq_geq, seq_gt

HOLD_S = 0.030
# Userspace: the agent handles a packet within a millisecond on an idle machine; on two busy
# cores, later. A "not held" segment left well before a hold would have ended; a held one by the
# hold's end and this much.
NOT_HELD_S = 0.015
LATE_S = 0.030
NFLOG_GROUP = 7


def key(seg: TcpSegment) -> tuple[int, int, int, int | None, int]:
    return (seg.seq, seg.ack, seg.flags, seg.ts_val, seg.payload_len)


@dataclass
class HoldRun:
    stats: dict[str, Any]  # the agent's counters of the flow
    policy_state: dict[str, Any]
    pure_sent: int  # pure ACKs the receiver's kernel sent
    pure_left: int  # ... and that left its interface
    piggybacked: int  # dropped ACKs whose carrier was data
    unsafe_seen: int


def run_hold(params: dict[str, str], write_bytes: int) -> HoldRun:
    """One 300 kB download with ``write_bytes`` written back per read under the hold, checked
    from outside the agent: byte-exact both ways, nothing unsafe held, every held ACK left within
    the hold or was dropped for data carrying its ACK within it, the agent's counts agree."""
    with Testbed.create(
        "dumbbell",
        fwd_rate_mbps=1.52,
        rev_rate_mbps=0.32,
        fwd_delay_ms=13.5,
        rev_delay_ms=13.5,
        rev_buffer_pkts=20,
        loss=0.01,
        cc="cubic",
    ) as testbed:
        server, client = testbed.host("h1"), testbed.host("r1")
        client_ip = client.IP()
        agent = HostAgent(
            client, "piggyback", {"hold_ms": str(HOLD_S * 1000), **params}, ports=(5001,)
        ).start()
        # First in OUTPUT, ahead of the agent's NFQUEUE rule: what the kernel sent, before any hold.
        # Threshold 1: each record goes to tcpdump at once (the kernel's default batches up to 100
        # records or 1 s, measured 16 ms to 1.01 s late); NFLOG gives an OUTPUT packet no
        # timestamp, so tcpdump stamps it as it reads it. The first 128 bytes of each packet.
        rule = [
            *("OUTPUT", "-p", "tcp", "--sport", "5001", "-j", "NFLOG", "--nflog-group", str(NFLOG_GROUP)),
            *("--nflog-threshold", "1", "--nflog-size", "128"),
        ]
        client.cmd("iptables -I " + " ".join(rule))
        before = Capture(f"nflog:{NFLOG_GROUP}", node=client, bpf="")
        after = Capture("r1-eth0", node=client)
        try:
            result = run_piggyback(
                server, client, "piggyback", 300_000, write_bytes=write_bytes, timeout_s=60
            )
            time.sleep(0.5)  # the connection's last segments (its close) leave before the agent goes
            report = agent.stop()
            before.stop(keep_pcap=True)
            after.stop(keep_pcap=True)
            sent = [s for s in read_segments(before.path) if s.src == client_ip]
            left = [s for s in read_segments(after.path) if s.src == client_ip and s.sport == 5001]
        finally:
            client.cmd("iptables -D " + " ".join(rule))
            before.discard()
            after.discard()
    assert result.byte_exact and (result.up_total_bytes > 0) == (write_bytes > 0)
    assert not report.get("agent_died"), report
    flow = next(iter(report["agent"]["flows"].values()))
    stats = {k: v for k, v in flow.items() if k not in ("estimate", "policy_state")}
    assert sent and left

    # A data segment the kernel sent may be a GSO super-packet (TCP builds them whatever the
    # device does; the device's segmentation is software, after OUTPUT): at N = 1400 the client
    # sent 2896-byte segments that left as two of 1448. It left when its first piece did: the
    # piece that starts at its sequence number, with its ACK and timestamp.
    left_at: dict[tuple[int, int, int, int | None, int], float] = {}
    first_piece_at: dict[tuple[int, int, int | None], float] = {}
    for seg in left:
        left_at.setdefault(key(seg), seg.time)
        if seg.payload_len > 0:
            first_piece_at.setdefault((seg.seq, seg.ack, seg.ts_val), seg.time)

    def left_time(seg: TcpSegment) -> float | None:
        when = left_at.get(key(seg))
        if when is None and seg.payload_len > 0:
            when = first_piece_at.get((seg.seq, seg.ack, seg.ts_val))
        return when

    unsafe_seen, held, piggybacked, dropped = 0, 0, 0, 0
    previous_ack: int | None = None
    for index, seg in enumerate(sent):
        duplicate = seg.is_pure_ack and previous_ack is not None and not seq_gt(seg.ack, previous_ack)
        unsafe = (
            not seg.is_pure_ack or duplicate or bool(seg.sack) or bool(seg.flags & (ECE | FIN | SYN | RST))
        )
        if seg.is_pure_ack and (previous_ack is None or seq_gt(seg.ack, previous_ack)):
            previous_ack = seg.ack
        when = left_time(seg)
        if unsafe:
            unsafe_seen += 1
            assert when is not None, f"an unsafe segment never left: {seg}"
            assert when - seg.time <= NOT_HELD_S, f"an unsafe segment was held {when - seg.time:.3f} s: {seg}"
            continue
        if when is not None:
            assert when - seg.time <= HOLD_S + LATE_S, f"held {when - seg.time:.3f} s: {seg}"
            held += when - seg.time > NOT_HELD_S
            continue
        # dropped: data (or the FIN) the kernel sent after it carried an ACK at least as new, and
        # left within the hold. "After" by the kernel's order (the NFLOG stream's), not by its
        # time: tcpdump stamps an NFLOG record when it reads it, later than the kernel sent it
        # when tcpdump waits for a core, while the interface capture's stamps are the kernel's.
        after = [
            (s, when_s)
            for s in sent[index + 1 :]
            if not s.is_pure_ack and seq_geq(s.ack, seg.ack) and (when_s := left_time(s)) is not None
        ]
        carriers = [s for s, when_s in after if when_s - seg.time <= HOLD_S + LATE_S]
        later = [round(when_s - seg.time, 4) for _, when_s in after][:3]
        assert carriers, (
            f"a pure ACK was dropped with no data sent after it carrying its ACK within the hold: "
            f"{seg}; the first such segments left {later} s after it was read; agent: {stats}"
        )
        dropped += 1
        piggybacked += any(s.payload_len > 0 for s in carriers)
    pure_sent = sum(s.is_pure_ack for s in sent)
    pure_left = sum(s.is_pure_ack for s in left)
    print(
        f"pure ACKs the kernel sent {pure_sent}, left {pure_left}; piggybacked {piggybacked}, "
        f"held and sent {held}, unsafe segments sent at once {unsafe_seen}; agent: {stats}"
    )
    assert unsafe_seen > 0  # the loss made duplicates and SACK blocks: the check above was exercised
    assert stats["piggybacked"] + stats["superseded"] == dropped
    assert stats["max_hold_s"] <= HOLD_S + LATE_S
    return HoldRun(stats, flow["policy_state"], pure_sent, pure_left, piggybacked, unsafe_seen)


def test_piggyback_hold_saves_acks_and_holds_nothing_unsafe() -> None:
    run = run_hold({}, write_bytes=100)
    assert run.piggybacked > 0 and run.pure_left < run.pure_sent


@pytest.mark.parametrize("write_bytes", [100, 1400])
def test_release_if_blocked_holds_only_while_the_clients_data_is_not_waiting(write_bytes: int) -> None:
    """The agent reads the client's own connection from the kernel (sock_diag) before each hold.
    Writing 100 bytes back per read, the client's data is application-limited: ACKs are held and
    reverse data carries some, as without the rule (its small writes wait for Nagle, not for the
    window: a rule on unsent bytes alone released every one of its ACKs, 73 of 73 in a run of
    2026-11-28). Writing 1400 bytes per read into a 64 kB send buffer over a 40 kB/s uplink, the
    client's data waits for its congestion window: those ACKs leave at once. Either way the reader
    found the connection every time (an unknown reading would release the ACK, never hold it
    blind), and the checks of run_hold hold."""
    run = run_hold({"release_if_blocked": "1"}, write_bytes=write_bytes)
    state, stats = run.policy_state, run.stats
    assert state["released_state_unknown"] == 0, state
    # the policy's only releases are for a blocked window; everything else it holds
    assert stats["released_by_policy"] == state["released_while_blocked"], (stats, state)
    if write_bytes == 100:
        assert stats["held"] > 0 and run.piggybacked > 0, (stats, state)
    else:
        assert state["released_while_blocked"] > 0, (stats, state)


@pytest.mark.parametrize("write_bytes", [100, 1400])
def test_the_guarded_hold_holds_only_where_holding_is_free(write_bytes: int) -> None:
    """The three guards (docs/piggyback-guarded): the agent releases at once while its own window
    estimate says the server is in slow start (the connection's first pure ACKs are), while the
    client has a full segment or more unsent (read from the kernel before each hold), and while
    the uplink queues more than the path's round trip (by the timestamps the server echoes).
    Writing 100 bytes back per read the client's data is application-limited and the uplink
    mostly idle: past slow start ACKs are held and reverse data carries some. Writing 1400 into
    a 64 kB send buffer over the 40 kB/s uplink, the data backs up in the socket and the uplink:
    most ACKs leave at once. The policy releases for no other reason, the reader found the
    connection every time, and the checks of run_hold hold."""
    guards = {"release_if_backlogged": "1", "release_in_slow_start": "1", "release_if_ack_path_queued": "1"}
    run = run_hold(guards, write_bytes=write_bytes)
    state, stats = run.policy_state, run.stats
    assert state["released_state_unknown"] == 0 and state["released_while_blocked"] == 0, state
    assert state["released_in_slow_start"] > 0, (stats, state)
    reasons = ("released_in_slow_start", "released_while_backlogged", "released_ack_path_queued")
    assert stats["released_by_policy"] == sum(state[reason] for reason in reasons), (stats, state)
    if write_bytes == 100:
        assert stats["held"] > 0 and run.piggybacked > 0, (stats, state)
    else:
        assert stats["released_by_policy"] > stats["held"], (stats, state)


def test_nflog_is_there() -> None:
    """The test above needs tcpdump's nflog interface (libpcap with netfilter support)."""
    out = subprocess.run(["tcpdump", "-D"], capture_output=True, text=True).stdout
    assert "nflog" in out
