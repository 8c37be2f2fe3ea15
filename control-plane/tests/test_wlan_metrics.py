"""The WLAN scenarios' metrics (issue 37): aggregate goodput from the first start to the last byte,
Jain over stations, ACK frequency and every rate in the emulated network's time, the stations'
share of airtime and the collisions from linkem's own per-transmitter counters."""

from __future__ import annotations

import dataclasses

import pytest

from ackwise.experiments.harness.report import point_scale_notes
from ackwise.experiments.harness.schema import PER_POINT
from ackwise.experiments.measure.metrics import (
    AckCounts,
    TransferSpan,
    aggregate_goodput_bps,
    airtime_fraction,
    collided_ppdus,
    delivered_bytes_series,
    mpdus_per_ppdu,
    shared_medium,
    steady_goodput_bps,
    traffic_span_s,
    transmitters,
    wlan_metrics,
)
from ackwise.twins.packets import ACK, SYN, TcpSegment
from ackwise.twins.serial import seq_diff


def medium(**by_name: dict[str, int]) -> dict[str, object]:
    """linkem's stats of one medium: busy time and each transmitter's model counters."""
    return {
        "name": "air",
        "busy_ns": 1_000_000_000,
        "transmitters": [{"name": n, "queued": 0, "model": c} for n, c in by_name.items()],
    }


def test_aggregate_goodput_is_all_bytes_over_the_time_to_the_last_byte() -> None:
    # The audit's case: one station finishing early made the sum of per-flow rates 7.1 Mbit/s
    # while the air carried 5.9 together. Here: 1 MB in 1 s and 1 MB in 4 s, started together.
    spans = [TransferSpan(1_000_000, 100.0, 1.0), TransferSpan(1_000_000, 100.0, 4.0)]
    assert traffic_span_s(spans) == pytest.approx(4.0)
    assert aggregate_goodput_bps(spans) == pytest.approx(2_000_000 * 8 / 4.0)
    per_flow_sum = 1_000_000 * 8 / 1.0 + 1_000_000 * 8 / 4.0
    assert aggregate_goodput_bps(spans) < per_flow_sum  # what goodput_mbps reported
    # a later start counts from the first one
    assert traffic_span_s([TransferSpan(1, 10.0, 1.0), TransferSpan(1, 12.0, 1.0)]) == pytest.approx(3.0)
    assert aggregate_goodput_bps([]) is None


def test_airtime_collisions_and_aggregates_come_from_linkems_counters() -> None:
    m = medium(
        ap={"airtime_ns": 700_000_000, "ppdus": 100, "mpdus_sent": 4000, "ppdus_collided": 3},
        sta1={"airtime_ns": 150_000_000, "ppdus": 90, "mpdus_sent": 900, "ppdus_collided": 2},
        sta2={"airtime_ns": 50_000_000, "ppdus": 10, "mpdus_sent": 10, "ppdus_collided": 1},
    )
    assert airtime_fraction(m, ["sta1", "sta2"]) == pytest.approx(0.2)
    assert airtime_fraction(m, ["nobody"]) == 0
    assert airtime_fraction({"busy_ns": 0}, ["sta1"]) is None
    assert collided_ppdus(m) == 6
    assert mpdus_per_ppdu(m, "ap") == pytest.approx(40)
    assert mpdus_per_ppdu(m, "sta9") is None


def test_rates_are_the_emulated_networks() -> None:
    """A test bed k = 3 times slower: the same run in the real network took a third of the time,
    so it carried three times the bits, ACKs and collisions per second."""
    m = medium(
        ap={"airtime_ns": 1, "ppdus": 10, "mpdus_sent": 20, "ppdus_collided": 0, "queue_drops": 7},
        sta1={"airtime_ns": 1, "ppdus": 10, "mpdus_sent": 10, "ppdus_collided": 6},
    )
    spans = [TransferSpan(3_000_000, 0.0, 6.0)]
    got = wlan_metrics(spans, [4e6], AckCounts(data_segments=2000, pure_acks=60), m, ["sta1"], "ap", 3.0)
    assert got["aggregate_goodput_mbps"] == pytest.approx(3_000_000 * 8 / 6.0 * 3 / 1e6)
    assert got["ack_frequency_hz"] == pytest.approx(60 / 2.0)
    assert got["collided_ppdus_per_s"] == pytest.approx(6 / 2.0)
    assert got["pure_acks_per_segment"] == pytest.approx(0.03)
    assert got["station_jain_index"] is None  # one station: nothing to be fair between
    assert got["ap_mpdus_per_ppdu"] == pytest.approx(2.0)
    assert got["ap_queue_drops"] == 7


def test_jain_over_stations() -> None:
    m = medium(ap={}, sta1={}, sta2={})
    got = wlan_metrics(
        [TransferSpan(1, 0.0, 1.0)] * 2, [3e6, 1e6], AckCounts(10, 5), m, ["sta1", "sta2"], "ap", 1.0
    )
    assert got["station_jain_index"] == pytest.approx(16 / (2 * 10))


def test_a_reports_header_gives_each_wlan_points_bdp_scale_and_unscaled_timers() -> None:
    scenario = {
        "scale": {"factor": PER_POINT, "what": "k per point"},
        "params": {"wired_delay_ms": 39, "cc": "bbr"},
        "points": [
            {"label": "n 80", "params": {"preset": "802.11n", "scale": 3.0}},
            {"label": "no preset", "params": {"scale": 2.0}},
        ],
    }
    notes = point_scale_notes(scenario)
    assert len(notes) == 1
    assert notes[0].startswith("n 80: k = 3; RTTmin 78.")
    assert "at its UDP baseline" in notes[0] and "BBR ProbeRTT" in notes[0]
    assert "minimum RTO 2.5 -> 0.85" in notes[0]
    assert point_scale_notes({**scenario, "points": [{"label": "x", "params": {"n_pairs": 2}}]}) == []
    # a scenario with one scale factor (and the records published under it) keeps its header
    assert point_scale_notes({**scenario, "scale": {"factor": 4, "what": "x4"}}) == []


def test_the_header_names_our_agents_timers_that_run_in_real_time_where_an_arm_runs_them() -> None:
    """Issue 37: the AP repair agent's constants and the controller's period do not scale; the
    header names them at points with k > 1 for the arms that run them, and a UDP scenario has no
    kernel timers to name."""
    point = {"label": "n", "params": {"preset": "802.11n", "scale": 3.0, "wired_delay_ms": 39}}
    scenario = {"scale": {"factor": PER_POINT, "what": "k"}, "points": [point, {**point, "label": "g1"}]}
    scenario["points"][1]["params"] = {"preset": "802.11g", "scale": 1.0, "wired_delay_ms": 39}
    plain = point_scale_notes({**scenario, "arms": [{"ap": False, "switch": None}]})
    assert not any("real time" in n for n in plain)
    proxy, at_k1 = point_scale_notes({**scenario, "arms": [{"ap": True}, {"switch": "auto"}]})
    assert "handshake repair 0.25 s -> 0.083 s" in proxy and "stations refresh 2 s -> 0.67 s" in proxy
    assert "controller's period 0.1 s -> 0.033 s" in proxy
    assert "real time" not in at_k1  # k = 1: real time is the emulated network's
    (udp, _) = point_scale_notes({**scenario, "traffic": {"kind": "udp-answers"}})
    assert "no TCP, so no kernel timer applies" in udp and "minimum RTO" not in udp


def test_the_chain_s_medium_counters_are_found_like_the_wlan_s() -> None:
    """The runner keeps every shared medium's per-transmitter counters (series.medium), the chain's
    too: its retry-limit drops are where a segment is lost on the chain (issue 38)."""
    chain_stats = {
        "air": {"media": [{"busy_ns": 5, "transmitters": [{"name": "r1", "model": {"retry_drops": 3}}]}]},
        "e1": {"rx": 1},
    }
    assert transmitters(shared_medium(chain_stats)) == {"r1": {"retry_drops": 3}}
    assert shared_medium({"e1": {"rx": 1}}) == {}
    assert shared_medium({"air": {}}) == {}


# ---- steady goodput: the middle half of the bytes, from the receivers' ACKs ----

SRV, STA1, STA2 = "10.0.0.1", "10.0.1.1", "10.0.1.2"


def syn(dst: str, dport: int, isn: int, t: float, flags: int = SYN) -> TcpSegment:
    """The sender's SYN (the test bed's senders connect to their receivers), or its SYN-ACK."""
    return TcpSegment(SRV, dst, 5001, dport, isn, 0, flags, 65535, 0, 0, time=t)


def ack_from(src: str, sport: int, isn: int, acked: int, t: float) -> TcpSegment:
    return TcpSegment(src, SRV, sport, 5001, 1, (isn + 1 + acked) % (1 << 32), ACK, 65535, 0, 0, time=t)


def transfer(
    src: str, sport: int, isn: int, size: int, startup_s: float, rate_bps: float
) -> list[TcpSegment]:
    """A connection's SYN at 0, then ACKs every 10 ms: 1 % of ``size`` at each ACK of a
    ``startup_s`` startup, then ``rate_bps`` to the end, and the FIN's ACK (size + 1)."""
    segs, t, acked = [syn(src, sport, isn, 0.0)], 0.0, 0
    while t < startup_s:
        t, acked = t + 0.01, acked + size // 1000
        segs.append(ack_from(src, sport, isn, acked, t))
    while acked < size:
        t, acked = t + 0.01, min(size, acked + int(rate_bps * 0.01 / 8))
        segs.append(ack_from(src, sport, isn, acked, t))
    segs.append(ack_from(src, sport, isn, size + 1, t + 0.001))
    return segs


def test_steady_goodput_leaves_the_startup_out() -> None:
    # 40 MB: 1 s of startup at 4 MB/s (32 Mbit/s), then 80 Mbit/s; its sequence numbers wrap.
    size = 40_000_000
    segs = transfer(STA1, 40000, (1 << 32) - 5_000_000, size, 1.0, 80e6)
    series = delivered_bytes_series(segs, {SRV}, {STA1: size})
    (flow,) = series.values()
    assert flow[0] == (pytest.approx(0.01), 40_000) and flow[-1][1] == size  # the FIN's ACK capped
    assert steady_goodput_bps(series.values(), size) == pytest.approx(80e6, rel=1e-3)
    whole = size * 8 / flow[-1][0]
    assert whole < 0.9 * 80e6  # what the transfer's goodput says, startup included


def test_steady_goodput_sums_the_connections() -> None:
    # Two stations, 60 and 20 Mbit/s after 0.5 s; 30 and 10 MB: both still run at 75 % of all.
    a = transfer(STA1, 40000, 1000, 30_000_000, 0.5, 60e6)
    b = transfer(STA2, 40001, 7_000_000, 10_000_000, 0.5, 20e6)
    series = delivered_bytes_series(b + a, {SRV}, {STA1: 30_000_000, STA2: 10_000_000})
    assert len(series) == 2
    assert steady_goodput_bps(series.values(), 40_000_000) == pytest.approx(80e6, rel=1e-3)


def test_a_hole_from_a_loss_does_not_move_the_window() -> None:
    """Regression: a segment lost just before 25 % of the bytes; for 0.3 s, until its repair, the
    receiver's ACKs repeat the hole's start and SACK what arrives after it, then the ACK number
    jumps. Counted by ACK number, the window began at the jump, 0.3 s late: 182 Mbit/s for a
    steady 80 (a run at 802.11n read 271 Mbit/s where the air carries 256 at most)."""
    size, rate_bps, isn, hole = 10_000_000, 80e6, 12345, 2_400_000
    repair_t = hole * 8 / rate_bps + 0.3
    segs, t, received = [syn(STA1, 40000, isn, 0.0)], 0.0, 0
    while received < size:
        t, received = t + 0.01, min(size, received + int(rate_bps * 0.01 / 8))
        if received > hole and t < repair_t:
            sack = ((isn + 1 + hole + 1448) % (1 << 32), (isn + 1 + received) % (1 << 32))
            segs.append(dataclasses.replace(ack_from(STA1, 40000, isn, hole, t), sack=(sack,)))
        else:
            segs.append(ack_from(STA1, 40000, isn, received, t))
    series = delivered_bytes_series(segs, {SRV}, {STA1: size})
    assert steady_goodput_bps(series.values(), size) == pytest.approx(rate_bps, rel=1e-2)
    by_ack_number = [(seg.time, seq_diff(seg.ack, isn) - 1) for seg in segs[1:]]
    assert steady_goodput_bps([by_ack_number], size) == pytest.approx(182e6, rel=0.02)


def test_duplicate_acks_and_unknown_connections_add_nothing() -> None:
    segs = [
        syn(STA1, 40000, 0, 0.0, SYN | ACK),  # a SYN-ACK counts as well
        ack_from(STA1, 40000, 0, 1000, 1.0),
        ack_from(STA1, 40000, 0, 1000, 1.1),  # a duplicate ACK
        ack_from(STA1, 40000, 0, 500, 1.2),  # reordered: older
        ack_from(STA2, 40001, 0, 9000, 1.3),  # no SYN seen: left out
        ack_from(STA1, 40000, 0, 2000, 1.4),
    ]
    assert delivered_bytes_series(segs, {SRV}, {STA1: 10_000, STA2: 10_000}) == {
        (STA1, 40000, SRV, 5001): [(1.0, 1000), (1.4, 2000)]
    }


def test_no_steady_goodput_without_enough_acks_or_bytes() -> None:
    sparse = [(0.0, 0), (1.0, 250), (2.0, 750), (3.0, 1000)]  # no ACK time inside the window
    assert steady_goodput_bps([sparse], 1000) is None
    short = [(0.0, 0), (1.0, 100), (2.0, 200), (3.0, 300), (4.0, 400), (5.0, 500)]
    assert steady_goodput_bps([short], 1000) is None  # never reached 75 %
    assert steady_goodput_bps([], 1000) is None
    assert steady_goodput_bps([short], 0) is None


def test_the_steady_goodput_is_in_the_emulated_networks_time() -> None:
    got = wlan_metrics(
        [TransferSpan(3_000_000, 0.0, 6.0)], [4e6], AckCounts(2000, 60), medium(), ["sta1"], "ap", 3.0, 5e6
    )
    assert got["steady_goodput_mbps"] == pytest.approx(15.0)
    assert wlan_metrics([], [], AckCounts(0, 0), medium(), [], "ap", 3.0)["steady_goodput_mbps"] is None
