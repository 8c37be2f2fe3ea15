"""The link emulation does what it is configured to do, measured through two bmv2 switches."""

from __future__ import annotations

import re
import statistics
import time

import pytest

from ackwise.experiments.measure.traffic import iperf3_bulk, iperf3_goodput_bps, udp_receive_buffer_drops
from ackwise.topologies.medium_model import VirtualMedium
from ackwise.topologies.testbed import Testbed
from ackwise.topologies.wireless import preset


def ping_rtts_ms(testbed: Testbed, count: int = 30) -> list[float]:
    sender, receiver = (testbed.host(n) for n in testbed.flows[0])
    sender.cmd(f"ping -c 3 -i 0.2 {receiver.IP()}")  # warm up
    out = sender.cmd(f"ping -c {count} -i 0.05 {receiver.IP()}")
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]


def median_rtt_ms(delay_ms: float) -> float:
    with Testbed.create(
        "dumbbell", fwd_rate_mbps=100, rev_rate_mbps=100, fwd_delay_ms=delay_ms, rev_delay_ms=delay_ms
    ) as testbed:
        rtts = ping_rtts_ms(testbed)
    assert len(rtts) >= 25
    return statistics.median(rtts)


def test_delay_20ms_each_way_gives_40ms_plus_baseline() -> None:
    baseline = median_rtt_ms(0)
    delayed = median_rtt_ms(20)
    print(f"baseline RTT {baseline:.3f} ms, with 20 ms each way {delayed:.3f} ms")
    assert delayed == pytest.approx(40 + baseline, abs=1.0)


def test_rate_10mbps_gives_the_tcp_ceiling() -> None:
    with Testbed.create(
        "dumbbell", fwd_rate_mbps=10, rev_rate_mbps=10, fwd_delay_ms=5, rev_delay_ms=5, fwd_buffer_pkts=100
    ) as testbed:
        sender, receiver = (testbed.host(n) for n in testbed.flows[0])
        report = iperf3_bulk(sender, receiver, seconds=8)
    # Steady state only: skip the first two seconds of slow start.
    intervals = report["intervals"][2:]
    goodput = sum(i["sum"]["bytes"] for i in intervals) * 8 / sum(i["sum"]["seconds"] for i in intervals)
    mss = 1448  # 1500-byte MTU, 20 + 20 bytes of headers, 12 bytes of timestamps
    ceiling = 10e6 * mss / (mss + 12 + 20 + 20 + 14)  # the emulator counts whole Ethernet frames
    print(f"goodput {goodput / 1e6:.3f} Mbit/s, ceiling {ceiling / 1e6:.3f} Mbit/s")
    assert goodput == pytest.approx(ceiling, rel=0.05)
    assert iperf3_goodput_bps(report) <= ceiling * 1.01


def model_frames_per_s(scale: float, with_reverse: bool) -> float:
    """The medium model's prediction (linkem --virtual): frames per second the AP delivers to the
    station while saturated, beside a saturated station sending 64-byte frames if asked. (Before
    linkem 2 this was the round-robin airtime formula; the expectation moved with the model.)"""
    vm = VirtualMedium(preset("802.11g", scale), limit_pkts=50).stations("ap", "sta1")
    vm.saturate("ap", "sta1", 1514)
    if with_reverse:
        vm.saturate("sta1", "ap", 64)
    r = vm.run(20 * scale, 2 * scale)
    return r.delivered_frames("ap", "sta1") / r.window_s


@pytest.mark.parametrize("with_reverse", [False, True])
def test_airtime_model_udp_throughput(with_reverse: bool) -> None:
    scale = 4.0
    udp_payload = 1472  # IP 1500, Ethernet frame 1514
    reverse_payload = 64 - 14 - 20 - 8  # 64-byte frames
    expected_frames = model_frames_per_s(scale, with_reverse)
    with Testbed.create(
        "wlan", n_stations=1, preset="802.11g", scale=scale, medium_buffer_pkts=50
    ) as testbed:
        srv, sta = testbed.host("srv"), testbed.host("sta1")
        offered = expected_frames * 1.5 * 1514 * 8
        reverse = []
        if with_reverse:
            # A saturating stream of 64-byte frames from the station: offered at 1.5 times the
            # frame rate the medium can give it.
            reverse_bps = expected_frames * 1.5 * reverse_payload * 8
            reverse.append(srv.popen(["iperf3", "-s", "-1", "-p", "5301"]))
            time.sleep(0.5)
            reverse.append(
                sta.popen(
                    [
                        "iperf3",
                        "-c",
                        srv.IP(),
                        "-p",
                        "5301",
                        "-u",
                        "-b",
                        f"{reverse_bps:.0f}",
                        "-l",
                        str(reverse_payload),
                        "-t",
                        "9",
                    ]
                )
            )
            time.sleep(1)
        try:
            host_drops = udp_receive_buffer_drops(sta)
            report = iperf3_bulk(srv, sta, seconds=6, udp_rate_bps=offered, length=udp_payload)
            host_drops = udp_receive_buffer_drops(sta) - host_drops
        finally:
            for proc in reverse:
                proc.kill()
                proc.wait()
        stats = testbed.link_stats()["air"]
    # What the medium delivered to the station: what iperf3 received, and what the station's kernel
    # dropped from the server's full socket buffer. iperf3 counts the latter as lost, but they
    # crossed the medium: on a loaded machine the server runs late and its buffer overflows (seen:
    # 134 datagrams in one 6 s run, with three other busy processes on two cores).
    seconds = float(report["end"]["sum"]["seconds"])
    received_frames = iperf3_goodput_bps(report) / (udp_payload * 8)
    delivered_frames = received_frames + host_drops / seconds
    print(
        f"802.11g x{scale}: {delivered_frames:.0f} frames/s delivered to the station ({received_frames:.0f} "
        f"received by iperf3, {host_drops} dropped by its full socket buffer), model {expected_frames:.0f} "
        f"frames/s; medium {stats}"
    )
    assert delivered_frames == pytest.approx(expected_frames, rel=0.10)
