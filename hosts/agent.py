"""The end-host ACK agent: NFQUEUE on the receiver's real path, one ReceiverFlow per flow.

    python -m ackwise.hosts.agent --policy every_d --param d=4 --port 5001 [--stats FILE]

Run inside the receiving host's network namespace, as root. It installs, for each --port (the
receiver's listening port), an INPUT rule queueing the incoming segments (only observed, accepted
at once, never altered) and an OUTPUT rule queueing the outgoing ones (pure ACKs may be held or
superseded), both with --queue-bypass: if the agent is gone, traffic flows as if it never was.
The rules go into iptables and ip6tables alike (FIREWALLS), onto the same two queues: a flow over
IPv6 is read, held and released as one over IPv4 is, under the same safety contract. It removes
exactly those rules when it stops (SIGTERM, SIGINT), releasing anything it holds, and writes its
counters as JSON to --stats.

With --quickack the routes of the namespace (IPv4 and IPv6) get `quickack 1` for the agent's
lifetime, so that the kernel produces one ACK per segment and the policy, not delayed ACK, decides
the ACK rate.
"""

from __future__ import annotations

import argparse
import json
import select
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ackwise.hosts.kernel import NFQUEUE_PROC, parse_nfqueue_counters, set_quickack
from ackwise.hosts.policies import PiggybackHold, Tack, make_policy
from ackwise.hosts.receiver import ReceiverFlow
from ackwise.hosts.send_backlog import SendState, SendStateReader
from ackwise.processes import run_daemon
from ackwise.twins.packets import parse_ip_tcp

FlowId = tuple[str, int, int]  # remote address, remote port, local port
# Where the rules go: one command per IP version, the same rules in each.
FIREWALLS = ("iptables", "ip6tables")
# Packets each queue holds awaiting the agent's verdict before the kernel drops the next one (a
# data segment lost at the receiver, an ACK never sent: comparison.agent_queue_drops flags the
# run). The library's default, 1024, overflowed on 802.11n and ac in the runs of 2026-11-28/29 (up
# to 5680 segments a run): a Python agent drains a burst of A-MPDUs slower than they arrive.
# Measured against 16384 in docs/agent-queues/.
QUEUE_MAXLEN_PACKETS = 16384
# What the kernel copies of each packet: headers only. The agent reads IP and TCP headers (the
# lengths from the IP header, not the copy) and gives verdicts without a payload, so the kernel
# sends the packet it kept; IPv6 extension headers the switch follows fit too (parse_ipv6_tcp).
COPY_BYTES = 512
NETLINK_MESSAGE_BYTES = COPY_BYTES + 256  # one queued packet's message: the copy and its attributes


class Agent:
    def __init__(
        self, policy: str, params: dict[str, str], ports: list[int], queue_base: int, idle_s: float
    ) -> None:
        # refuse bad parameters before touching the namespace
        reads_send_state = make_policy(policy, params).reads_send_state()
        self.policy, self.params, self.ports = policy, params, ports
        self.queue_in, self.queue_out = queue_base, queue_base + 1
        self.idle_s = idle_s
        self.flows: dict[FlowId, ReceiverFlow] = {}
        self.rules: list[tuple[str, list[str]]] = []  # (firewall command, rule)
        self.stop_requested = False
        # Packet times are monotonic; the record's series are on the wall clock, as the sender's
        # ss samples are (TcpSampler), so that the two line up.
        self.wall_offset_s = time.time() - time.monotonic()
        self.queue_counters: dict[str, dict[str, int]] = {}
        # the most packets handled in one wake-up, per queue: how far the agent fell behind
        self.max_batch: dict[str, int] = {"incoming": 0, "outgoing": 0}
        self._batch = 0
        # the host's own send state per connection, for a policy that decides on it
        self.send_state_reader = SendStateReader() if reads_send_state else None

    # ---- rules ----

    def install_rules(self) -> None:
        for port in self.ports:
            for chain, match, queue in (
                ("INPUT", "--dport", self.queue_in),
                ("OUTPUT", "--sport", self.queue_out),
            ):
                rule = [
                    chain,
                    "-p",
                    "tcp",
                    match,
                    str(port),
                    "-j",
                    "NFQUEUE",
                    "--queue-num",
                    str(queue),
                    "--queue-bypass",
                ]
                for firewall in FIREWALLS:
                    subprocess.run([firewall, "-I", *rule], check=True)
                    self.rules.append((firewall, rule))

    def remove_rules(self) -> None:
        while self.rules:
            firewall, rule = self.rules.pop()
            subprocess.run([firewall, "-D", *rule], stderr=subprocess.DEVNULL)

    # ---- packets ----

    def flow(self, flow_id: FlowId) -> ReceiverFlow:
        if flow_id not in self.flows:
            addr, rport, lport = flow_id
            reader = self.send_state_reader

            def send_state() -> SendState | None:
                assert reader is not None
                return reader.read(lport, addr, rport)

            self.flows[flow_id] = ReceiverFlow(
                make_policy(self.policy, self.params), self.idle_s, None if reader is None else send_state
            )
        return self.flows[flow_id]

    def incoming(self, pkt: Any) -> None:
        self._batch += 1
        seg = parse_ip_tcp(pkt.get_payload(), time.monotonic())
        pkt.accept()  # data is never held, altered or dropped
        if seg is not None:
            self.flow((seg.src, seg.sport, seg.dport)).on_incoming(seg, seg.time)

    def outgoing(self, pkt: Any) -> None:
        self._batch += 1
        seg = parse_ip_tcp(pkt.get_payload(), time.monotonic())
        if seg is None:
            pkt.accept()
            return
        self.flow((seg.dst, seg.dport, seg.sport)).on_outgoing(seg, pkt, seg.time)

    # ---- loop ----

    def run(self) -> None:
        from netfilterqueue import NetfilterQueue

        nfq_in, nfq_out = NetfilterQueue(), NetfilterQueue()
        sizes = {
            "max_len": QUEUE_MAXLEN_PACKETS,
            "range": COPY_BYTES,
            # the socket holds every queued packet's message (the kernel doubles what it is asked)
            "sock_len": QUEUE_MAXLEN_PACKETS * NETLINK_MESSAGE_BYTES // 2,
        }
        nfq_in.bind(self.queue_in, self.incoming, **sizes)
        nfq_out.bind(self.queue_out, self.outgoing, **sizes)
        fds = {nfq_in.get_fd(): (nfq_in, "incoming"), nfq_out.get_fd(): (nfq_out, "outgoing")}
        try:
            self.install_rules()
            print("ready", flush=True)
            while not self.stop_requested:
                now = time.monotonic()
                for flow in self.flows.values():
                    flow.on_timer(now)
                dues = [d for f in self.flows.values() if (d := f.next_due()) is not None]
                timeout = max(0.0, min(dues) - time.monotonic()) if dues else 0.5
                try:
                    readable, _, _ = select.select(list(fds), [], [], min(timeout, 0.5))
                except InterruptedError:
                    continue
                for fd in readable:
                    nfq, name = fds[fd]
                    self._batch = 0
                    nfq.run(block=False)
                    self.max_batch[name] = max(self.max_batch[name], self._batch)
        finally:
            self.remove_rules()
            # Packets already queued when the rules went are the kernel's still: give them their
            # verdicts (unbinding would drop them: a connection's last ACKs, at the end of a run).
            self.stop_requested = True
            for nfq in (nfq_in, nfq_out):
                try:
                    nfq.run(block=False)
                except OSError:
                    pass
            for flow in self.flows.values():
                flow.flush()
            self.queue_counters = self.read_queue_counters()
            nfq_in.unbind()
            nfq_out.unbind()
            if self.send_state_reader is not None:
                self.send_state_reader.close()

    def read_queue_counters(self) -> dict[str, dict[str, int]]:
        """The kernel's counters of our two queues (read while they are bound: unbinding drops
        them): packets the kernel dropped before the agent could see them show here only."""
        try:
            text = Path(NFQUEUE_PROC).read_text()
        except OSError:
            return {}
        counters = parse_nfqueue_counters(text, {self.queue_in, self.queue_out})
        names = {self.queue_in: "incoming", self.queue_out: "outgoing"}
        return {names[q]: c for q, c in counters.items()}

    def report(self) -> dict[str, Any]:
        flows = {
            f"{addr}:{rport} > :{lport}": asdict(flow.stats)
            | {"policy_state": _policy_state(flow), "estimate": self._estimate_series(flow)}
            for (addr, rport, lport), flow in self.flows.items()
        }
        return {
            "policy": self.policy,
            "params": self.params,
            "ports": self.ports,
            "flows": flows,
            "nfqueue": self.queue_counters,
            "nfqueue_max_batch": self.max_batch,
            "nfqueue_maxlen": QUEUE_MAXLEN_PACKETS,
        }

    def _estimate_series(self, flow: ReceiverFlow) -> dict[str, list[float]]:
        """The window estimate at each change: wall-clock times (s) and segments."""
        trace = flow.policy.estimate_trace
        return {
            "at": [round(t + self.wall_offset_s, 4) for t, _ in trace],
            "segments": [float(v) for _, v in trace],
        }


def _policy_state(flow: ReceiverFlow) -> dict[str, Any]:
    p = flow.policy
    state: dict[str, Any] = {
        "mss": p.mss,
        "srtt_s": p.rtt.srtt_s,
        "rtt_min_s": p.rtt.min_s,
        "cwnd_estimate": p.cwnd.estimate(),
        **p.cwnd.state(),
    }
    counters = (  # the piggyback hold's
        "released_while_blocked",
        "released_while_backlogged",
        "released_in_slow_start",
        "released_ack_path_queued",
        "released_state_unknown",
    )
    for name in ("d", "signals", "isat_s", "alpha", "bw_bytes_per_s", *counters):
        if hasattr(p, name):
            state[name] = getattr(p, name)
    if isinstance(p, PiggybackHold):  # the ACK path's queue at the end, by the timestamps
        state["ack_path_queue_s"] = p.ack_path.queue_s
    if isinstance(p, Tack):  # what set its ACK frequency at the end: RTTmin / beta or L MSS / bw
        state["ack_interval_s"] = p.interval()
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--policy", required=True)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--port", type=int, action="append", required=True, help="the receiver's listening port"
    )
    parser.add_argument("--queue-base", type=int, default=10, help="NFQUEUE numbers used: this and the next")
    parser.add_argument("--idle-ms", type=float, default=1000)
    parser.add_argument("--quickack", action="store_true", help="one kernel ACK per segment while running")
    parser.add_argument("--stats", type=Path)
    args = parser.parse_args(argv)

    def run(agent: Agent) -> None:
        routes = set_quickack(True) if args.quickack else []
        try:
            agent.run()
        finally:
            if routes:
                set_quickack(False, routes)
            if args.stats:
                args.stats.write_text(json.dumps(agent.report(), indent=2, default=str))

    return run_daemon(
        "agent",
        lambda: Agent(
            args.policy,
            dict(p.split("=", 1) for p in args.param),
            args.port,
            args.queue_base,
            args.idle_ms / 1000,
        ),
        (ValueError,),
        run,
    )


if __name__ == "__main__":
    sys.exit(main())
