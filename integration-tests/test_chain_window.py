"""The maximum window on a real chain (issue 38): the receiver's window clamp, as the chain-window
scenario sets it, bounds what the sender has in flight to W segments of the chain's 1040-byte
packets, and without it the sender has more."""

from __future__ import annotations

from ackwise.experiments.measure.metrics import window_clamp_check
from ackwise.experiments.measure.traffic import TcpSampler, Transfer
from ackwise.topologies.testbed import Testbed

W = 3
SIZE_BYTES = 100_000  # about 100 segments: a few seconds on 3 nodes at 1 Mbit/s


def test_receiver_clamp_bounds_segments_in_flight_on_the_chain() -> None:
    params = {"hops": 2, "preset": "802.11b-1mbps", "geometry": "line", "mtu_bytes": 1040}
    with Testbed.create("chain", **params, max_window_pkts=W) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        mss = testbed.topo.mss_bytes
        assert mss == 988 and testbed.topo.window_clamp_bytes == W * mss
        assert receiver.provenance()["mtu"] == {"dst-eth0": "1040"}
        runs = {}
        for port, clamp in ((5001, 0), (5002, testbed.topo.window_clamp_bytes)):
            sampler = TcpSampler(sender, receiver.IP(), interval_s=0.05).start()
            with Transfer(sender, receiver, SIZE_BYTES, port, window_clamp_bytes=clamp).start() as t:
                result = t.wait()
            runs[clamp] = (result, window_clamp_check(sampler.stop()["cwnd_samples"], W, mss))
    unclamped, clamped = runs[0][1], runs[W * 988][1]
    print(f"unclamped: {unclamped}\nclamped: {clamped}")
    assert all(result.byte_exact for result, _ in runs.values())
    assert unclamped.max_in_flight_segments > W + 2  # the control: Linux's own window lets more out
    assert clamped.held, clamped
    assert clamped.max_snd_wnd_bytes is not None and clamped.max_snd_wnd_bytes <= (W + 2) * mss
