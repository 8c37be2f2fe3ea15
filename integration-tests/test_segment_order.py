"""A host's segments arrive in the order it sent them (ackwise.netdev, receive steering); on the
PTF runner's test ports, every frame does, whatever its flow.

Regression: a veth delivers a frame into the backlog of the CPU that sent it, so two segments of
one flow sent back to back from two CPUs (the application's write on one, the softirq processing
an ACK on the other) could arrive swapped. Through the test bed that happened in 2 of 46
transfers of 2 MB here, and on CI it made test_ack_thinning_e2e's loss-free transfer retransmit
(8918770); over one veth pair at full speed it happens hundreds of times in a few seconds, which is what the
first test provokes: the sender's application pinned to one CPU, the receiver's (which sends the
window updates that clock the sender) to the other.

Regression (PTF ports): per-flow steering keeps each flow in order but lets two flows' frames
swap, since each flow's backlog drains on its own CPU; on CI two flows' ACKs sent back to back
reached the switch swapped and test_ack_coalesce.CoalesceTwoFlowsTest6 saw them leave its queue
in that order. The last test sends frames of 8 flows back to back over a pair made as run_ptf.py
makes them: with per-flow steering 2189-3562 of 20 000 arrived after a later one (5 runs).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Netns

from ackwise.netdev import add_veth, check_receive_steering, in_own_sysfs
from ackwise.topologies.testbed import Testbed

STRESS_S = 4
REPO = Path(__file__).resolve().parents[1]
FRAMES = 20_000
FLOWS = 8
ETH_P_ALL = 0x0003
NSTAT_KEYS = ("TcpExtTCPOFOQueue", "TcpRetransSegs", "TcpInSegs")


def nstat(ns: Netns) -> dict[str, int]:
    out = ns.run("nstat", "-asz", *NSTAT_KEYS).stdout
    return {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.split()[1:2]}


@pytest.fixture
def two_namespaces() -> Iterator[tuple[Netns, Netns]]:
    tag = f"awso{os.getpid() % 10000}"
    a, b = Netns(f"{tag}a"), Netns(f"{tag}b")
    try:
        yield a, b
    finally:
        a.remove()
        b.remove()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="reordering across backlogs needs two CPUs")
def test_bulk_tcp_over_a_veth_pair_stays_in_order(two_namespaces: tuple[Netns, Netns]) -> None:
    sender, receiver = two_namespaces
    tag = sender.name
    add_veth(f"{tag}s", f"{tag}r", netns=sender.name)  # as every pair the stress tools make
    sender.run("ip", "link", "set", f"{tag}r", "netns", receiver.name)
    sender.run("ip", "addr", "add", "10.77.0.1/24", "dev", f"{tag}s")
    receiver.run("ip", "addr", "add", "10.77.0.2/24", "dev", f"{tag}r")
    receiver.run("ip", "link", "set", f"{tag}r", "up")
    cpus = sorted(os.sched_getaffinity(0))
    server = subprocess.Popen(
        ["ip", "netns", "exec", receiver.name, "taskset", "-c", str(cpus[1]), "iperf3", "-s", "-1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        before = nstat(receiver), nstat(sender)
        sender.run(
            "taskset",
            "-c",
            str(cpus[0]),
            "iperf3",
            "-c",
            "10.77.0.2",
            "-t",
            str(STRESS_S),
            "-b",
            "0",
            timeout=STRESS_S + 30,
        )
        after = nstat(receiver), nstat(sender)
    finally:
        server.kill()
        server.wait()
    received = after[0]["TcpInSegs"] - before[0]["TcpInSegs"]
    out_of_order = after[0]["TcpExtTCPOFOQueue"] - before[0]["TcpExtTCPOFOQueue"]
    retransmitted = after[1]["TcpRetransSegs"] - before[1]["TcpRetransSegs"]
    print(f"{received} segments in {STRESS_S} s: {out_of_order} out of order, {retransmitted} retransmitted")
    assert received > 100_000  # the stress ran: without it, no order to check
    assert (out_of_order, retransmitted) == (0, 0)


def test_every_test_bed_interface_steers_receive_per_flow() -> None:
    """Each end of each link (hosts, switches, link emulators) has RPS on every receive queue."""
    with Testbed.create("dumbbell", n_pairs=1, fwd_delay_ms=2, rev_delay_ms=2) as testbed:
        assert testbed.net is not None
        checked = []
        for link in testbed.net.links:
            for intf in (link.intf1, link.intf2):
                shown = intf.node.cmd(in_own_sysfs(f"cat /sys/class/net/{intf.name}/queues/rx-*/rps_cpus"))
                check_receive_steering(f"{intf.node.name}:{intf.name}", shown)  # raises unless all set
                checked.append(intf.name)
        assert len(checked) == 2 * len(testbed.net.links) >= 4


def run_ptf_module() -> object:
    """ptf-tests/run_ptf.py, imported (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("run_ptf", REPO / "ptf-tests" / "run_ptf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def udp_frame(flow: int, number: int) -> bytes:
    """An Ethernet/IPv4/UDP frame of flow ``flow`` (its ports) carrying ``number``."""
    src, dst = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 36, 0, 0, 64, 17, 0, src, dst)
    udp = struct.pack("!HHHH", 10_000 + flow, 20_000 + flow, 16, 0)
    return bytes.fromhex("020000000002020000000001") + b"\x08\x00" + ip + udp + struct.pack("!Q", number)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="reordering across backlogs needs two CPUs")
def test_frames_of_many_flows_reach_a_ptf_port_in_the_order_sent() -> None:
    run_ptf = run_ptf_module()
    pairs = run_ptf.create_veths(f"awpo{os.getpid() % 10000}")  # type: ignore[attr-defined]
    try:
        switch_side, test_side = pairs[0]
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        with rx, tx:
            rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 25)
            rx.bind((switch_side, 0))
            tx.bind((test_side, 0))
            frames = [udp_frame(k % FLOWS, k) for k in range(FRAMES)]
            for frame in frames:  # back to back, as a test sends two flows' ACKs
                tx.send(frame)
            received: list[int] = []
            rx.settimeout(1.0)
            try:
                while len(received) < FRAMES:
                    got = rx.recv(2048)
                    if len(got) >= 50 and got[12:14] == b"\x08\x00" and got[23] == 17:
                        received.append(struct.unpack("!Q", got[42:50])[0])
            except TimeoutError:
                pass
    finally:
        run_ptf.delete_veths(pairs)  # type: ignore[attr-defined]
    late = sum(1 for before, after in itertools.pairwise(received) if after < before)
    print(f"{len(received)} of {FRAMES} frames of {FLOWS} flows received, {late} after a later one")
    assert len(received) == FRAMES  # every frame seen: else the order checked is of a part
    assert late == 0
