"""``make bench``, hold-back part: what the hold-back agent costs per ACK and how many held ACKs per
second it takes without losing any, behind one simple_switch (no event log) running ack_switch.

Traffic: 64 flows, each data segment followed at once by the ACK that acknowledges it (the case
hold-back exists for: every ACK may end a burst), every_d d=4 with hold_ms=200, so three ACKs in
four go to the agent. Offered at increasing rates; per rate: held copies the switch sent, copies the
agent read, the kernel's drops on the agent's socket (the agent fell behind), and the agent's own
time per copy.

    python -m ackwise.experiments.stress.holdback_bench [--seconds 3] [--rates 500,1000,2000,4000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ackwise.bmv2.client import SwitchClient
from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.bmv2.toolchain import compiled_program
from ackwise.experiments.measure.rawsend import BURST_FRAMES, send_paced, senders
from ackwise.experiments.stress.dataplane import install_routes, segment
from ackwise.features.thinning import set_default_policy
from ackwise.netdev import add_veth, delete_link
from ackwise.processes import stop_process
from ackwise.twins.p4names import (
    COUNTER_ACK_THINNING_STATS,
    ThinningStat,
)
from ackwise.twins.policies import MSS_BYTES, PolicyParams

N_FLOWS = 64
CPU_PORT = 3


@dataclass
class HoldbackResult:
    offered_pps: float
    acks_per_s: float
    held: int
    agent_read: int
    agent_drops: int
    us_per_ack: float | None


def build_traffic(pairs: int) -> list[tuple[int, bytes]]:
    host1, host2 = 0x0A000101, 0x0A000201
    sent = [0] * N_FLOWS
    frames = []
    for r in range(pairs):
        f = r % N_FLOWS
        sport = 20000 + f
        frames.append((1, segment(1, host1, host2, sport, 5001, 1000 + sent[f], 1, MSS_BYTES)))
        sent[f] += MSS_BYTES
        frames.append((2, segment(2, host2, host1, 5001, sport, 1, 1000 + sent[f], 0)))
    return frames


def measure(
    rate_pps: float, seconds: float, ifaces: dict[int, tuple[str, str]], thrift_port: int
) -> HoldbackResult:
    spec = SwitchSpec(
        program_json=str(compiled_program("ack_switch")),
        ports={p: sw for p, (sw, _) in ifaces.items()},
        thrift_port=thrift_port,
        enable_swap=False,
    )
    running = start_switch(spec)
    stats = Path(tempfile.mkstemp(prefix="ackwise-bench-holdback-", suffix=".json")[1])
    agent = None
    try:
        with SwitchClient("localhost", thrift_port) as client:
            install_routes(client)
            set_default_policy(client, PolicyParams.parse("every_d", ["d=4", "hold_ms=200"]))
        cmd = [sys.executable, "-m", "ackwise.daemons.holdback_agent", "--iface", ifaces[CPU_PORT][1]]
        cmd += ["--thrift-port", str(thrift_port), "--cpu-port", str(CPU_PORT), "--stats", str(stats)]
        agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert agent.stdout is not None
        if agent.stdout.readline().strip() != "ready":
            raise RuntimeError(
                f"the hold-back agent did not start: {agent.stderr.read() if agent.stderr else ''}"
            )
        time.sleep(0.3)
        frames = build_traffic(int(rate_pps * seconds / 2) + 1)
        with senders({port: ifaces[port][1] for port in (1, 2)}) as socks:
            sent_s = send_paced(
                socks, frames, rate_pps, batch=BURST_FRAMES, drop_refused=True, catch_up=False
            )
            time.sleep(0.5)
        with SwitchClient("localhost", thrift_port) as client:
            held = client.counter_read(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_HELD).packets
        stop_process(agent, timeout_s=10)
        report = json.loads(stats.read_text())
        counters = report["counters"]
        return HoldbackResult(
            len(frames) / sent_s,
            len(frames) / 2 / sent_s,
            held,
            counters["frames_in"],
            counters["socket_drops"],
            report.get("handling_us_per_ack"),
        )
    finally:
        if agent is not None:
            stop_process(agent, timeout_s=10)
            for stream in (agent.stdout, agent.stderr):
                if stream is not None:
                    stream.close()
        stats.unlink(missing_ok=True)
        stats.with_suffix(".tmp").unlink(missing_ok=True)
        running.stop()


def run(seconds: float, rates: list[float]) -> list[HoldbackResult]:
    tag = f"hb{os.getpid() % 10000}"
    ifaces = {p: (f"{tag}s{p}", f"{tag}t{p}") for p in (1, 2, CPU_PORT)}
    results = []
    try:
        for sw, test in ifaces.values():
            add_veth(sw, test, offloads=True)  # as make bench
        for rate in rates:
            r = measure(rate, seconds, ifaces, 9592)
            results.append(r)
            print(
                f"hold-back: offered {r.offered_pps:6.0f} pps ({r.acks_per_s:5.0f} ACKs/s), held {r.held}, "
                f"agent read {r.agent_read}, socket drops {r.agent_drops}, {r.us_per_ack} us per ACK",
                flush=True,
            )
    finally:
        for sw, _ in ifaces.values():
            delete_link(sw)
    return results


def render(results: list[HoldbackResult]) -> str:
    lines = [
        "| offered pps (data + ACKs) | ACKs/s | held by the switch | read by the agent | agent socket drops "
        "| agent us per ACK |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        lines.append(
            f"| {r.offered_pps:.0f} | {r.acks_per_s:.0f} | {r.held} | {r.agent_read} | {r.agent_drops} | "
            f"{r.us_per_ack if r.us_per_ack is not None else '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rates", default="500,1000,2000,4000", help="offered packets/s, comma-separated")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("the benchmark creates veth interfaces: run it as root", file=sys.stderr)
        return 2
    results = run(args.seconds, [float(x) for x in args.rates.split(",")])
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
