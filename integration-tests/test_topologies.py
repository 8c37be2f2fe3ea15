"""Every topology starts, passes pingall and a short iperf3 run, and leaves nothing behind."""

from __future__ import annotations

from typing import Any

import leftovers
import pytest

from ackwise.experiments.traffic import iperf3_bulk, iperf3_goodput_bps
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
