"""The queue share (p4src/include/ack_share.p4): with the agent on the CPU port, a coalescing flow
has at most two pure ACKs in a modelled queue; its next ACKs go to the agent (a copy behind an
8-byte header: hold_ms 0, kind, the microseconds until the flow has room), in order, and come back
one at a time: too early, the switch sends one back to the agent again; in time, it takes it and
coalesces or queues it as if it had just arrived, and answers with the wait for the next. Another
flow's ACK waits behind at most two of the flow's. Port 1's queue is served at 5 packets/s.

Most tests play the agent themselves on the agent's veth (heartbeats from a thread, copies read
and sent back by hand, byte for byte); the last runs the real one (python -m ackwise.daemons.holdback_agent).
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from pathlib import Path

from ackwise.features import holdback
from ackwise.features.queues import set_queue_rate
from ackwise.features.thinning import set_default_policy
from ackwise.twins.p4names import (
    COUNTER_ACK_THINNING_STATS,
    ETHERTYPE_AGENT_HEARTBEAT,
    AgentKind,
    ThinningStat,
)
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow, param, routed
from test_ack_coalesce import QUEUE_PPS, CoalesceTest, rewritten
from test_ack_holdback import CPU_PORT, HoldbackTest

HEADER = holdback.HEADER


class FakeAgent:
    """The agent's end of the CPU port, driven by the test: heartbeats every 100 ms from a thread,
    copies read one by one, ACKs sent back on request."""

    def __init__(self, iface: str) -> None:
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.bind((iface, 0))
        mac = Path(f"/sys/class/net/{iface}/address").read_text().strip()
        self.heartbeat = (
            b"\xff" * 6 + bytes.fromhex(mac.replace(":", "")) + struct.pack("!H", ETHERTYPE_AGENT_HEARTBEAT)
        ).ljust(60, b"\0")
        self.beating = threading.Event()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        while not self.stopped.wait(0.1):
            if self.beating.is_set():
                self.sock.send(self.heartbeat)

    def start_beating(self) -> None:
        self.beating.set()
        self.sock.send(self.heartbeat)
        time.sleep(0.15)  # the switch has heard it

    def copies(self, quiet_s: float = 0.3) -> list[tuple[int, int, int, bytes]]:
        """(hold_ms, kind, arg, frame) of each copy the switch sent, until none came for quiet_s."""
        out = []
        while True:
            readable, _, _ = select.select([self.sock], [], [], quiet_s)
            if not readable:
                return out
            frame, addr = self.sock.recvfrom(65536)
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            hold_ms, kind, arg = HEADER.unpack_from(frame)
            out.append((hold_ms, kind, arg, frame[HEADER.size :]))

    def next_copy(self, timeout_s: float = 1.0) -> tuple[int, int, int, bytes]:
        """The next copy, as soon as it arrives (its wait then counts from about now)."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.sock], [], [], left)
            if not readable:
                break
            frame, addr = self.sock.recvfrom(65536)
            if addr[2] != socket.PACKET_OUTGOING:
                hold_ms, kind, arg = HEADER.unpack_from(frame)
                return hold_ms, kind, arg, frame[HEADER.size :]
        raise AssertionError(f"no copy reached the agent within {timeout_s} s")

    def send_back(self, frame: bytes) -> None:
        self.sock.send(frame)

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=2)
        self.sock.close()


class ShareTest(CoalesceTest):
    """Coalescing on port 1 at 5 packets/s, the agent's port as port 64, the test as the agent."""

    def setUp(self) -> None:
        self.agent: FakeAgent | None = None
        super().setUp()

    def switch_ports(self) -> dict[int, str]:
        return super().switch_ports() | {CPU_PORT: param("agent_switch_iface")}

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        holdback.setup(self.client, CPU_PORT)
        self.agent = FakeAgent(param("agent_iface"))

    def tearDown(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        super().tearDown()

    def fill_share(self, flow: TcpFlow) -> tuple[bytes, bytes]:
        """ack(1) leaves at once; ack(2) waits; a DSACK (never folded) is queued behind it and ends
        its wait: the flow has its two ACKs in the queue (ack(2) leaves 200 ms after ack(1), the
        DSACK 400 ms). Returns ack(2) and the DSACK."""
        self.send_data(flow, range(12))
        self.first_ack_out(flow)
        waiting, dsack = flow.ack(2), flow.ack(3, sack=[(1, 2)])
        self.send(flow.ack_port, waiting)
        self.send(flow.ack_port, dsack)
        time.sleep(0.02)
        return waiting, dsack


class ShareHandsOverInOrderTest(ShareTest):
    """With its two ACKs queued, the flow's next ACKs go to the agent, each unchanged behind the
    header (kind SHARE_KEEP, the time until ack(2) leaves), and none of them leaves on its own;
    another flow's ACK is queued as usual, right behind the flow's two."""

    def runTest(self) -> None:
        assert self.agent is not None
        self.agent.start_beating()
        a, b = self.new_flow(), self.new_flow(sport=40001, isn=900_000, irs=700_000, ts_base=3_000_000)
        self.send_data(b, range(4))
        waiting, dsack = self.fill_share(a)
        later = [a.ack(k) for k in (4, 5, 6)]
        for pkt in later:
            self.send(a.ack_port, pkt)
        b1 = b.ack(1)
        self.send(b.ack_port, b1)
        copies = self.agent.copies()
        self.assertEqual([(h, k, f) for h, k, _, f in copies], [(0, AgentKind.SHARE_KEEP, p) for p in later])
        for _, _, wait_us, _ in copies:
            # Until ack(2) leaves, 200 ms after ack(1) did.
            self.assertGreater(wait_us, 0, "the flow's two ACKs are queued: it must wait")
            self.assertLessEqual(wait_us, 200_000)
        self.check_out(a, [waiting, dsack, b1], quiet_s=0.8)
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SHARED), 3)
        side = self.flow_record(a)["ack_side"]
        self.assertEqual(side.acks_seen, 3, "an ACK the agent holds is seen when it comes back")
        self.assertEqual((side.acks_shared, side.share_bounced), (3, 0))


class ShareBounceAndTakeTest(ShareTest):
    """Sent back while the flow still has its two ACKs queued, an ACK goes back to the agent
    (SHARE_BOUNCED, with the wait) and does not leave. Sent back after ack(2) has left, it is
    taken (SHARE_TAKEN, with the time until the DSACK leaves) and becomes the flow's waiting ACK;
    the next, sent back at once, bounces until the DSACK has left, then is taken and folded into
    it (wait 0). What leaves: ack(2), the DSACK, ack(4) carrying ack(5)'s state."""

    def runTest(self) -> None:
        assert self.agent is not None
        self.agent.start_beating()
        a = self.new_flow()
        waiting, dsack = self.fill_share(a)
        ack4, ack5 = a.ack(4, window=600), a.ack(5, window=601)
        self.send(a.ack_port, ack4)
        self.send(a.ack_port, ack5)
        self.assertEqual([k for _, k, _, _ in self.agent.copies(0.1)], [AgentKind.SHARE_KEEP] * 2)

        self.agent.send_back(ack4)  # too early: ack(2) and the DSACK are queued
        bounced = self.agent.next_copy()
        self.assertEqual((bounced[1], bounced[3]), (AgentKind.SHARE_BOUNCED, ack4))
        self.assertGreater(bounced[2], 0)
        time.sleep(bounced[2] / 1e6 + 0.01)

        self.agent.send_back(ack4)  # ack(2) has left: taken, queued behind the DSACK
        taken = self.agent.next_copy()
        self.assertEqual((taken[1], taken[3]), (AgentKind.SHARE_TAKEN, ack4))
        self.assertGreater(taken[2], 100_000, "the next may follow when the DSACK has left")
        self.assertLessEqual(taken[2], 200_000)

        self.agent.send_back(ack5)  # the DSACK is still queued: bounced
        again = self.agent.next_copy()
        self.assertEqual(again[1], AgentKind.SHARE_BOUNCED)
        time.sleep(again[2] / 1e6 + 0.01)
        self.agent.send_back(ack5)  # folded into ack(4), which waits
        folded = self.agent.next_copy()
        self.assertEqual((folded[1], folded[2], folded[3]), (AgentKind.SHARE_TAKEN, 0, ack5))
        self.assertEqual(self.agent.copies(0.1), [], "one answer per ACK sent back")

        self.check_out(a, [waiting, dsack, rewritten(ack4, ack5)], quiet_s=0.8)
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.SHARE_BOUNCED), 2)
        side = self.flow_record(a)["ack_side"]
        self.assertEqual((side.acks_seen, side.acks_absorbed, side.acks_rewritten), (5, 1, 1))
        self.assertEqual((side.acks_shared, side.share_bounced), (2, 2))


class ShareAgentSilentTest(ShareTest):
    """No heartbeat: nothing goes to the agent, and the flow's ACKs are coalesced as without the
    share (ack(4) to ack(6) are queued: the DSACK ended ack(2)'s wait, ack(4) waits and takes ack(5)
    and ack(6) in)."""

    def runTest(self) -> None:
        assert self.agent is not None
        a = self.new_flow()
        waiting, dsack = self.fill_share(a)
        later = [a.ack(k) for k in (4, 5, 6)]
        for pkt in later:
            self.send(a.ack_port, pkt)
        self.assertEqual(self.agent.copies(0.1), [])
        self.check_out(a, [waiting, dsack, rewritten(later[0], later[-1])], quiet_s=0.8)
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SHARED), 0)


class ShareAgentGoneTakesWhatComesBackTest(ShareTest):
    """The agent's heartbeat stops while it holds ACKs: after the 500 ms timeout the switch hands
    it nothing more and takes what it sends back as it comes, even with the flow's two queued."""

    def runTest(self) -> None:
        assert self.agent is not None
        self.agent.start_beating()
        a = self.new_flow()
        waiting, dsack = self.fill_share(a)
        ack4 = a.ack(4)
        self.send(a.ack_port, ack4)
        self.assertEqual([k for _, k, _, _ in self.agent.copies(0.1)], [AgentKind.SHARE_KEEP])
        self.agent.beating.clear()
        time.sleep(holdback.AGENT_TIMEOUT_MS / 1000 + 0.1)
        # ack(2) and the DSACK have left; three DSACKs (never folded): the first leaves at once, the
        # other two fill the flow's share again.
        dsacks = [a.ack(4, sack=[(1, 2)], ts=(a.ts(600 + i), a.ts(4))) for i in range(3)]
        for pkt in dsacks:
            self.send(a.ack_port, pkt)
        time.sleep(0.02)
        self.agent.send_back(ack4)
        self.assertEqual(self.agent.copies(0.1), [])
        self.check_out(a, [waiting, dsack, *dsacks, ack4], quiet_s=1.2)


class SharePolicyChangedTest(ShareTest):
    """The policy stops being coalesce while the agent holds three of the flow's ACKs: ack(4), a
    duplicate of it with a SACK block, and its FIN. Each the agent sends back is forwarded
    unchanged, though none acknowledges more than ack(4) (not dropped as a superseded hold-back
    ACK), and answered as taken with no wait (else the agent would resend its oldest forever and
    never the rest). What leaves: ack(2), the DSACK, then the three in order."""

    new_policy = PolicyParams.parse("every_d", [])

    def runTest(self) -> None:
        assert self.agent is not None and self.client is not None
        self.agent.start_beating()
        a = self.new_flow()
        waiting, dsack = self.fill_share(a)
        held = [a.ack(4), a.ack(4, sack=[(5, 6)]), a.ack(4, flags="FA")]
        for pkt in held:
            self.send(a.ack_port, pkt)
        copies = self.agent.copies(0.1)
        self.assertEqual([(k, f) for _, k, _, f in copies], [(AgentKind.SHARE_KEEP, p) for p in held])

        set_default_policy(self.client, self.new_policy)
        for pkt in held:
            self.agent.send_back(pkt)
            answer = self.agent.next_copy()
            self.assertEqual(
                (answer[1], answer[2], answer[3]),
                (AgentKind.SHARE_TAKEN, 0, pkt),
                f"under {self.new_policy.describe()}, an ACK the agent sends back is answered as taken",
            )
        self.assertEqual(self.agent.copies(0.1), [], "one answer per ACK sent back")
        self.check_out(a, [waiting, dsack, *held], quiet_s=0.8)
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_SHARED), 3)
        side = self.flow_record(a)["ack_side"]
        self.assertEqual(side.acks_seen, 6, "each ACK the agent held is seen when it comes back")


class SharePolicyChangedToOffTest(SharePolicyChangedTest):
    """The same with the policy switched off: what the agent sends back is still answered."""

    new_policy = PolicyParams.parse("off", [])


class ShareRealAgentTest(HoldbackTest):
    """The real agent: ack(4) to ack(10) come while the flow has its two ACKs queued; each says all
    the one before it said, so the agent keeps only the newest, and sends ack(10) back once ack(2)
    has left; then the receiver's FIN, which the agent keeps as it is. What leaves: ack(2), the
    DSACK, ack(10), the FIN, unchanged. Nothing is lost, nothing overtakes, and the flow's newest
    state does not wait behind the ACKs it supersedes. (The agent once dropped a FIN handed to it,
    as not a pure ACK in its own sense: the sender never heard the end of the connection.)"""

    policy = CoalesceTest.policy

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_rate(self.client, 1, QUEUE_PPS)

    def runTest(self) -> None:
        a = self.new_flow()
        self.send_data(a, range(12))
        first = a.ack(1)
        self.send(a.ack_port, first)
        self.expect_next(routed(first, a.data_port), a.data_port)
        waiting, dsack = a.ack(2), a.ack(3, sack=[(1, 2)])
        later = [a.ack(k, window=600 + k) for k in range(4, 11)]
        fin = a.ack(10, flags="FA", window=610)
        for pkt in [waiting, dsack, *later, fin]:
            self.send(a.ack_port, pkt)
        got = self.collect(a.data_port, 1.0)
        self.assertEqual(got, [routed(p, a.data_port) for p in (waiting, dsack, later[-1], fin)])
        assert self.agent is not None
        self.agent.terminate()
        self.agent.communicate(timeout=10)
        self.agent = None
        counters = json.loads(self.stats.read_text())["counters"]
        self.assertEqual(
            (counters["share_kept"], counters["share_replaced"], counters["share_taken"]), (8, 6, 2)
        )


# ---- the same over IPv6 ----


class ShareHandsOverInOrderTest6(ShareHandsOverInOrderTest):
    ip_version = 6


class ShareBounceAndTakeTest6(ShareBounceAndTakeTest):
    ip_version = 6


class ShareAgentSilentTest6(ShareAgentSilentTest):
    ip_version = 6


class ShareAgentGoneTakesWhatComesBackTest6(ShareAgentGoneTakesWhatComesBackTest):
    ip_version = 6


class SharePolicyChangedTest6(SharePolicyChangedTest):
    ip_version = 6


class SharePolicyChangedToOffTest6(SharePolicyChangedToOffTest):
    ip_version = 6


class ShareRealAgentTest6(ShareRealAgentTest):
    ip_version = 6
