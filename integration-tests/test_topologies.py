"""Every topology starts, passes pingall and a short iperf3 run, and leaves nothing behind; hosts run
the congestion control asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import leftovers
import pytest

from ackwise.experiments.measure.traffic import TcpSampler, Transfer, iperf3_bulk, iperf3_goodput_bps
from ackwise.topologies.hosts import CONGESTION_CONTROLS
from ackwise.topologies.testbed import Testbed

# Small, fast parameters: each run is about bringing the pieces up and carrying traffic.
CASES: dict[str, dict[str, Any]] = {
    "dumbbell": {
        "n_pairs": 2,
        "fwd_rate_mbps": 10,
        "rev_rate_mbps": 10,
        "fwd_delay_ms": 5,
        "rev_delay_ms": 5,
    },
    "dumbbell-switch-bottleneck": {
        "n_pairs": 1,
        "bottleneck": "switch",
        "fwd_queue_pps": 500,
        "rev_queue_pps": 500,
        "fwd_delay_ms": 5,
        "rev_delay_ms": 5,
    },
    "parking-lot": {"rate_mbps": 5, "delay_ms": 2},
    "wlan": {"n_stations": 2, "preset": "802.11g", "scale": 4},
    "chain": {"hops": 3, "preset": "802.11b", "scale": 1},
}


def simple_switch_pids() -> set[int]:
    return leftovers.running("simple_switch")


@pytest.mark.parametrize("case", list(CASES))
def test_topology_up_ping_iperf_down(case: str) -> None:
    name = "dumbbell" if case.startswith("dumbbell") else case
    switches_before = simple_switch_pids()
    testbed = Testbed.create(name, **CASES[case])
    try:
        testbed.start()
        assert testbed.pingall() == 0.0
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        report = iperf3_bulk(sender, receiver, seconds=2)
        goodput = iperf3_goodput_bps(report)
        print(f"{case}: iperf3 {goodput / 1e6:.2f} Mbit/s")
        assert goodput > 100_000, f"{case}: iperf3 carried only {goodput:.0f} bit/s"
    finally:
        testbed.stop()
    assert testbed.leftovers() == []
    assert simple_switch_pids() <= switches_before


SYSCTL = Path("/proc/sys/net/ipv4")


def test_hosts_run_the_congestion_control_asked_for() -> None:
    """Only the root namespace may make an algorithm outside net.ipv4.tcp_allowed_congestion_control
    its default; a host namespace asking for one gets EPERM. On a machine whose default is bbr
    ("reno bbr" allowed) every host asked for cubic ran bbr, and the records said cubic. Here the
    root allows its own default only, and a host asks for another: the test bed widens the list
    while it runs, the sender's connection runs what was asked (as ss names it), and the list is
    as it was once the test bed stops."""
    root_default = (SYSCTL / "tcp_congestion_control").read_text().strip()
    available = (SYSCTL / "tcp_available_congestion_control").read_text().split()
    wanted = next(cc for cc in ("cubic", *CONGESTION_CONTROLS) if cc != root_default and cc in available)
    allowed_file = SYSCTL / "tcp_allowed_congestion_control"
    original = allowed_file.read_text().strip()
    try:
        allowed_file.write_text(root_default)
        with Testbed.create("dumbbell", n_pairs=1, fwd_delay_ms=2, rev_delay_ms=2, cc=wanted) as testbed:
            allowed_while_running = allowed_file.read_text().split()
            sender, receiver = (testbed.host(n) for n in testbed.flows[0])
            in_namespace = sender.cmd("sysctl -n net.ipv4.tcp_congestion_control").strip()
            sampler = TcpSampler(sender, receiver.IP(), interval_s=0.05).start()
            with Transfer(sender, receiver, 2_000_000).start() as transfer:
                result = transfer.wait()
            tcp = sampler.stop()
        after = allowed_file.read_text().strip()
    finally:
        allowed_file.write_text(original)
    print(
        f"root default {root_default}, asked {wanted}: "
        f"namespace {in_namespace}, ss {tcp['congestion_controls']}"
    )
    assert result.byte_exact
    assert in_namespace == wanted
    assert tcp["congestion_controls"] == [wanted], tcp["congestion_controls"]
    assert wanted in allowed_while_running
    assert after == root_default
