"""Hold-back: next to the receiver every ACK acknowledges all data the switch has seen, so the
end-of-burst rule keeps every one of them. With the hold-back agent on the CPU port, an ACK that
every_d would thin and only that rule keeps goes to the agent instead; the agent sends the newest
back after hold_ms, and the switch forwards it unless a newer ACK of the flow has passed. The real
agent (python -m ackwise.daemons.holdback_agent) runs on the agent veth pair run_ptf.py creates."""

from __future__ import annotations

import json
import signal
import time

from ackwise.features.thinning import read_half_field
from ackwise.twins.policies import PolicyParams
from base_test import CpuAgentTest, TcpFlow, param, routed
from test_ack_thinning import ThinningTest

CPU_PORT = 64
HOLD_MS = 500
EVERY_4 = PolicyParams.parse("every_d", ["d=4", f"hold_ms={HOLD_MS}"])


class HoldbackTest(CpuAgentTest, ThinningTest):
    """A switch with the agent's port as port 64, and the agent running on its far end."""

    agent_module = "ackwise.daemons.holdback_agent"
    agent_name = "hold-back agent"

    policy = EVERY_4
    start_agent = True

    def switch_ports(self) -> dict[int, str]:
        return super().switch_ports() | {CPU_PORT: param("agent_switch_iface")}

    def install_entries(self) -> None:
        super().install_entries()
        if self.start_agent:
            self.start_the_agent()

    def start_the_agent(self) -> None:
        self.launch_agent("--cpu-port", str(CPU_PORT))

    def interleave(self, flow: TcpFlow, n: int) -> tuple[list[bytes], dict[int, float]]:
        """data(k), then ack(k + 1) right behind it, for k < n: each ACK acknowledges everything
        the switch has seen. The next data segment is sent only once the switch has taken the ACK
        in (bmv2 reads each port on its own, so a packet sent on one port right after one sent on
        another may overtake it). Returns the ACKs and when each was sent."""
        key, direction = flow.key()
        acks, sent_at = [], {}
        for k in range(n):
            data = flow.data(k)
            self.send(flow.data_port, data)
            self.expect_next(routed(data, flow.ack_port), flow.ack_port)
            ack = flow.ack(k + 1)
            sent_at[k] = time.monotonic()
            self.send(flow.ack_port, ack)
            acks.append(ack)
            deadline = time.monotonic() + 2
            while read_half_field(self.client, "acks_seen", key.half(direction)) < k + 1:
                self.assertLess(time.monotonic(), deadline, f"the switch never saw ack({k + 1})")
                time.sleep(0.001)
        return acks, sent_at

    def received(self, flow: TcpFlow, acks: list[bytes], quiet_s: float) -> list[tuple[int, float]]:
        """(index into acks, arrival time) of what came out on the sender's port."""
        out = []
        while (pkt := self.next_packet(flow.data_port, quiet_s)) is not None:
            arrived = time.monotonic()
            index = next((i for i, a in enumerate(acks) if routed(a, flow.data_port) == pkt), -1)
            self.assertNotEqual(index, -1, "a packet that is none of the ACKs sent, unchanged, came out")
            out.append((index, arrived))
        return out


class HoldbackOneInFourTest(HoldbackTest):
    """200 ACKs, each right after the data it acknowledges: one in four leaves (ack(1), ack(5),
    ..., ack(197)), the held ones in between are superseded, and the last, ack(200), is released
    by the agent within the hold time of the first ACK held after ack(197)."""

    def runTest(self) -> None:
        flow = self.new_flow()
        acks, sent_at = self.interleave(flow, 200)
        out = self.received(flow, acks, quiet_s=HOLD_MS / 1000 + 0.5)
        indices = [i for i, _ in out]
        self.assertEqual(indices, [*range(0, 197, 4), 199])
        last_arrival = out[-1][1]
        waited_s = last_arrival - sent_at[197]  # ack(198): the first held after ack(197)
        self.assertGreaterEqual(waited_s, HOLD_MS / 1000 * 0.9, "released before the hold time")
        self.assertLess(waited_s, HOLD_MS / 1000 + 0.3, "released long after the hold time")
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_seen, side.acks_forwarded, side.acks_thinned), (200, 51, 149))
        self.assertEqual((side.acks_held, side.acks_released), (150, 1))
        # 50 runs of held ACKs (after each forwarded one): 49 superseded by the next run, the last
        # released.
        counters = json.loads(self.stats.read_text())["counters"]
        self.assertEqual((counters["held"], counters["superseded"], counters["released"]), (150, 49, 1))


class HoldbackFailOpenTest(HoldbackTest):
    """No agent on the CPU port: nothing is held, the end-of-burst rule keeps every ACK."""

    start_agent = False

    def install_entries(self) -> None:
        super().install_entries()
        from ackwise.features import holdback

        assert self.client is not None
        holdback.setup(self.client, CPU_PORT)

    def runTest(self) -> None:
        flow = self.new_flow()
        acks, _ = self.interleave(flow, 12)
        self.assertEqual([i for i, _ in self.received(flow, acks, 0.3)], list(range(12)))


class HoldbackAgentKilledTest(HoldbackTest):
    """The agent is killed (no clean release): within its 500 ms heartbeat timeout the switch
    stops holding, and every ACK of the next burst is kept again."""

    def runTest(self) -> None:
        assert self.agent is not None
        self.agent.send_signal(signal.SIGKILL)
        self.agent.wait()
        time.sleep(0.6)
        flow = self.new_flow()
        acks, _ = self.interleave(flow, 12)
        self.assertEqual([i for i, _ in self.received(flow, acks, 0.3)], list(range(12)))


class HoldbackStopReleasesTest(HoldbackTest):
    """Stopped cleanly (SIGTERM) while it holds an ACK, the agent sends it back at once: the end
    of the burst is not lost."""

    def runTest(self) -> None:
        assert self.agent is not None
        flow = self.new_flow()
        acks, _ = self.interleave(flow, 3)  # ack(1) out; ack(2), ack(3) held
        time.sleep(0.05)
        self.agent.terminate()
        self.agent.communicate(timeout=10)
        self.assertEqual([i for i, _ in self.received(flow, acks, 0.3)], [0, 2])


# ---- the same over IPv6 ----


class HoldbackOneInFourTest6(HoldbackOneInFourTest):
    ip_version = 6


class HoldbackFailOpenTest6(HoldbackFailOpenTest):
    ip_version = 6


class HoldbackAgentKilledTest6(HoldbackAgentKilledTest):
    ip_version = 6


class HoldbackStopReleasesTest6(HoldbackStopReleasesTest):
    ip_version = 6
