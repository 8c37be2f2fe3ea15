"""The WLAN scenarios of issue 37 as data: each point at its standard's chosen time scale, at the
RTTmin it names, with transfers long against its BDP, a header line each, the issue's arms and
only metrics that keep linkem 2's records apart from linkem 1's."""

from __future__ import annotations

import pytest
import yaml

from ackwise.experiments.harness.report import point_scale_notes
from ackwise.experiments.harness.runner import plan
from ackwise.experiments.harness.scenario import SCENARIO_DIR, load
from ackwise.experiments.harness.schema import PER_POINT
from ackwise.topologies.catalog import AP_EMULATOR_QUEUE_PKTS, check_params
from ackwise.topologies.timescale import (
    AP_PPS_MEASURED,
    BBR_STARTUP_GAIN,
    CHOSEN_K,
    ap_offered_pps,
    bbr_startup_queue_pkts,
    point_scale,
)
from ackwise.twins.policies import MSS_BYTES

WLAN_SCENARIOS = ("wlan-ack-frequency", "wlan-comparison")
# Long enough that BBR's startup (some 10 RTTs to fill the pipe) is a small part of a transfer.
MIN_BDPS_PER_TRANSFER = 8
OLD_MODEL_METRICS = {"goodput_mbps", "acks_per_data_segment", "ack_airtime_share"}


def _doc(name: str) -> dict:
    return yaml.safe_load((SCENARIO_DIR / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", WLAN_SCENARIOS)
def test_every_point_runs_at_its_standards_k_and_named_rttmin(name: str) -> None:
    s = load(name)
    assert s.scale["factor"] == PER_POINT
    for point in s.points:
        params = dict(s.params) | dict(point.params)
        check_params(s.topology, {k: v for k, v in params.items() if not k.startswith("_")})
        scale = point_scale(params)
        assert scale is not None, point.label
        assert scale.k == CHOSEN_K[scale.preset], point.label
        named_ms = int(point.label.rsplit(",", 1)[1].removesuffix(" ms"))
        assert scale.rtt_ms == pytest.approx(named_ms, abs=0.5), point.label
        # the stations share the pipe: together their transfers must hold the BDPs
        together = s.point_traffic(point)["size_bytes"] * int(params.get("n_stations", 1))
        assert together >= MIN_BDPS_PER_TRANSFER * scale.bdp_segments * MSS_BYTES, point.label


@pytest.mark.parametrize("name", WLAN_SCENARIOS)
def test_every_point_gets_its_header_line_and_new_metrics_only(name: str) -> None:
    s = load(name)
    notes = point_scale_notes(_doc(name))
    assert len(notes) == len(s.points)
    assert all("BDP" in n and "minimum RTO" in n and "BBR ProbeRTT" in n for n in notes)
    assert not OLD_MODEL_METRICS & set(s.metrics)
    assert plan(s)  # plans: every point, arm and repeat has a run


def test_fig12_spans_the_papers_axes() -> None:
    s = load("wlan-ack-frequency")
    axes = {(point_scale(dict(s.params) | dict(p.params)).preset, p.label[-5:]) for p in s.points}  # type: ignore[union-attr]
    assert axes == {(f"802.11{x}", f"{r} ms") for x in ("b", "g", "n", "ac") for r in ("10", "80")}
    assert {a.label() for a in s.arms} == {"baseline (nothing on)", "host tack"}


def test_the_comparison_has_the_issues_arms_and_points() -> None:
    s = load("wlan-comparison")
    assert {a.label() for a in s.arms} == {
        "baseline (nothing on)",
        "host every_d d=4",
        "host every_d d=8",
        "host every_d d=16",
        "host tack",
        "switch tack @ap",
        "ap proxy",
        "host tack; ap proxy",
    }
    assert {(p.params["preset"], p.params["n_stations"]) for p in s.points} == {
        ("802.11n", 1),
        ("802.11n", 3),
        ("802.11g", 1),
        ("802.11g", 3),
    }


@pytest.mark.parametrize("name", WLAN_SCENARIOS)
def test_every_queue_holds_bbrs_startup_and_the_ap_is_offered_what_it_forwards(name: str) -> None:
    """Issue 37's pilots: at 100 packets the AP's queue overflowed at the end of every BBR startup
    (1000-5000 drops, each answered by an RTT of duplicate ACKs that no policy may thin), and
    with the wired link at 1000 Mbit/s BBR's startup bursts reached the bmv2 AP faster than it
    forwards (802.11n, k = 3: 20 000 frames/s), which lost hundreds of segments inside the switch."""
    s = load(name)
    for point in s.points:
        params = dict(s.params) | dict(point.params)
        assert params["cc"] == "bbr", point.label
        scale = point_scale(params)
        assert scale is not None
        startup = bbr_startup_queue_pkts(scale.bdp_segments)
        assert int(params["medium_buffer_pkts"]) >= startup, point.label
        wired = float(params["wired_rate_mbps"])
        assert wired > scale.capacity_mbps, point.label  # the medium is the bottleneck
        if wired < BBR_STARTUP_GAIN * scale.capacity_mbps:  # the startup queues at the wire too
            assert int(params.get("wired_buffer_pkts", 1000)) >= startup, point.label
        assert ap_offered_pps(wired, scale.capacity_mbps, scale.k) <= AP_PPS_MEASURED, point.label


def test_bbr_startup_queue_and_offered_rate() -> None:
    assert bbr_startup_queue_pkts(1000) == pytest.approx(1885)
    # 802.11n at k = 3: the startup pace (2.885 x 252 Mbit/s) over a gigabit wire, then a 300 one
    assert ap_offered_pps(1000, 252.1, 3) == pytest.approx(2.885 * 252.1e6 / 3 / (8 * 1514))
    assert ap_offered_pps(300, 252.1, 3) == pytest.approx(100e6 / (8 * 1514))


def test_the_old_wlan_scenario_runs_at_the_chosen_k_with_queues_for_a_startup() -> None:
    """wlan.yaml (before the two scenarios above) ran g x4 and n/ac x20 with a 100-packet queue;
    its CUBIC senders' slow start is unpaced, so what reaches the AP is the wire's rate / k."""
    s = load("wlan")
    assert s.scale["factor"] == PER_POINT
    for point in s.points:
        params = dict(s.params) | dict(point.params)
        scale = point_scale(params)
        assert scale is not None and scale.k == CHOSEN_K[scale.preset], point.label
        startup = bbr_startup_queue_pkts(scale.bdp_segments)
        assert int(params["medium_buffer_pkts"]) >= startup, point.label
        wired = float(params["wired_rate_mbps"])
        if wired < BBR_STARTUP_GAIN * scale.capacity_mbps:
            assert int(params.get("wired_buffer_pkts", 1000)) >= startup, point.label
        # slow start's last burst (up to 2 BDPs at the wire's rate) longer than the switch absorbs
        if 2 * scale.bdp_segments > AP_EMULATOR_QUEUE_PKTS:
            assert wired / scale.k * 1e6 / (8 * 1514) <= AP_PPS_MEASURED, point.label
