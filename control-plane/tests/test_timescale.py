"""Time scaling keeps the BDP in packets; what does not scale is listed."""

import pytest

from ackwise.topologies.catalog import AP_EMULATOR_QUEUE_PKTS, Wlan
from ackwise.topologies.timescale import (
    BBR_TIMERS,
    CHOSEN_K,
    LINUX_TIMERS,
    TimeScale,
    bdp_packets,
    point_scale,
    tack_thins,
    timer_distortions,
)
from ackwise.topologies.wireless import PRESETS, bianchi, preset


def test_bdp_in_packets_is_invariant() -> None:
    k = TimeScale(20)
    real = bdp_packets(600e6, 10)
    assert bdp_packets(600e6 / k.k, k.delay_ms(10)) == pytest.approx(real)
    assert k.rate_mbps(100) == 5 and k.rate_mbps(0) == 0 and k.timer_s(0.5) == 10


def test_tack_engages_on_a_scaled_80211ac_path_and_did_not_before() -> None:
    """The issue's case: 802.11ac, a 10 ms RTT, one saturated station, k = 20."""
    ac = preset("802.11ac")
    rate = bianchi(ac, 1, 1514).throughput_bps
    scaled = TimeScale(20)
    bdp_now = bdp_packets(rate / scaled.k, scaled.delay_ms(10))
    bdp_air_only = bdp_packets(rate / scaled.k, 10)  # linkem 1: only the air slowed
    assert tack_thins(bdp_now) and bdp_now > 500
    assert bdp_air_only == pytest.approx(bdp_now / 20)


def test_policy_times_scale_and_the_rest_does_not() -> None:
    p = TimeScale(4).policy_params({"d": 4, "hold_ms": 200, "idle_ms": 1000, "rtt_min_us": 0, "L": 2})
    assert p == {"d": 4, "hold_ms": 800, "idle_ms": 4000, "rtt_min_us": 0, "L": 2}


def test_policy_times_written_as_an_arms_strings_scale_and_stay_strings() -> None:
    """Arms carry parameters as strings (the agent's and the switch's command lines); seconds may
    become fractions, milliseconds and microseconds stay whole, a word is left to the policy."""
    p = TimeScale(3).policy_params({"d": "8", "max_delay_s": "0.2", "hold_ms": "5", "idle_ms": "off"})
    assert p == {"d": "8", "max_delay_s": "0.6", "hold_ms": "15", "idle_ms": "off"}
    assert TimeScale(1).policy_params({"max_delay_s": "0.2"}) == {"max_delay_s": "0.2"}


def test_bad_scale() -> None:
    with pytest.raises(ValueError, match="positive"):
        TimeScale(0)


def test_linux_timers_and_their_distortion() -> None:
    names = {t.name for t in LINUX_TIMERS}
    assert names == {"initial RTO", "minimum RTO", "delayed ACK"}
    assert {t.ms for t in LINUX_TIMERS} == {1000, 200, 40}
    assert {t.ms for t in BBR_TIMERS} == {10_000, 200}
    for d in timer_distortions(20, 10):
        assert d.emulated_rtts == pytest.approx(d.real_rtts / 20)


def test_a_wlan_points_header_its_bdp_beside_the_papers() -> None:
    """802.11n at RTTmin 80 ms (TACK Fig. 13(b), 14(b)): the model's saturated AP carries about
    250 Mbit/s of TCP payload, so some 1700 segments are in flight; the paper's 300 Mbit/s PHY gives
    about 2000 of its 1500-byte segments and its 210 Mbit/s UDP baseline about 1400."""
    s = point_scale({"preset": "802.11n", "scale": 3.0, "wired_delay_ms": 39, "cc": "bbr"})
    assert s is not None
    assert 78 < s.rtt_ms < 79 and s.k == 3
    assert 240 < s.capacity_mbps < 260
    assert s.bdp_segments == pytest.approx(s.capacity_mbps * 1e6 * s.rtt_ms / 1000 / (8 * 1448))
    assert s.paper_bdp_segments == pytest.approx(300e6 * s.rtt_ms / 1000 / 12000)
    assert s.paper_udp_bdp_segments == pytest.approx(210e6 * s.rtt_ms / 1000 / 12000)
    # BBR senders add BBR's timers; each in RTTs, reality -> test bed, k times fewer there
    assert [d.timer.name for d in s.timers][-2:] == ["BBR min-RTT window", "BBR ProbeRTT"]
    assert "minimum RTO 2.5 -> 0.85" in s.timers_text()
    cubic = point_scale({"preset": "802.11g", "scale": 1.0, "wired_delay_ms": 4})
    assert cubic is not None and len(cubic.timers) == len(LINUX_TIMERS)
    assert cubic.paper_udp_bdp_segments is None  # the paper gives a UDP baseline for 802.11n only
    assert point_scale({"n_pairs": 1}) is None
    assert point_scale({"preset": "802.11n", "wired_delay_ms": 39}) is None  # k is the topology's


def test_a_k_for_every_preset() -> None:
    assert set(CHOSEN_K) == set(PRESETS)
    assert CHOSEN_K["802.11b"] <= CHOSEN_K["802.11g"] <= CHOSEN_K["802.11n"] <= CHOSEN_K["802.11ac"]
    assert CHOSEN_K["802.11b-1mbps"] <= CHOSEN_K["802.11b"]


def test_wlan_scales_its_wired_link() -> None:
    topo = Wlan(n_stations=1, preset="802.11g", scale=4.0, wired_delay_ms=10.0, wired_rate_mbps=100.0)
    forward = topo.nodeInfo("e1")["forward"]
    assert forward.delay_ms == 40 and forward.rate_bps == 25e6
    assert topo.nodeInfo("air")["preset"].scale == 4.0


def test_the_wlan_ap_switch_queues_deep_enough_not_to_drop() -> None:
    """bmv2's 64-packet default egress queue at the AP lost 300-1000 segments a run in issue 37's
    pilots (none in the medium's queue): the AP's ports towards the medium and the wire get
    AP_EMULATOR_QUEUE_PKTS, unlimited in rate; the medium's queue stays the AP's queue."""
    topo = Wlan(n_stations=3, preset="802.11n", scale=3.0, medium_buffer_pkts=3500)
    queues = {(q.switch, q.toward): q for q in topo.meta.queues}
    assert set(queues) == {("ap", "air"), ("ap", "e1")}
    for q in queues.values():
        assert q.rate_pps == 0 and q.depth_pkts == AP_EMULATOR_QUEUE_PKTS
    assert topo.nodeInfo("air")["limit_pkts"] == 3500
