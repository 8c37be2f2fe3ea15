"""TACK Fig. 13's UDP tool (experiments/measure/udp_answers.py) and its traffic kind: the answer
rule, the receiver's window, the sender's pacing, the arm-to-rule mapping, both sides' reports,
and what a scenario may declare."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackwise.experiments.harness.runner import plan
from ackwise.experiments.harness.scenario import ScenarioError, load
from ackwise.experiments.measure.udp_answers import (
    PAYLOAD_BYTES,
    AnswerRule,
    WindowCount,
    due_now,
    rule_for,
    summarize,
)
from ackwise.topologies.timescale import FRAME_BYTES, point_scale
from ackwise.twins.policies import MSS_BYTES


def test_every_l_answers_once_per_l_datagrams() -> None:
    rule = AnswerRule(4)
    answers, since, last = 0, 0, None
    for i in range(100):
        since += 1
        if rule.due(since, i * 0.001, last):
            answers, since, last = answers + 1, 0, i * 0.001
    assert answers == 25


def test_the_udp_baseline_never_answers() -> None:
    assert not AnswerRule(0).due(10**6, 100.0, None)


def test_tacks_rule_answers_once_l_arrived_and_rttmin_over_beta_passed() -> None:
    """f = min(bw / (L MSS), beta / RTTmin): at a high rate the time bound binds (one answer per
    RTTmin / beta), at a low one the count does (one per L datagrams)."""
    rule = rule_for("tack", {}, rtt_min_s=0.080)
    assert rule == AnswerRule(2, 0.020)
    assert not rule.due(434, 0.019, 0.0)  # many datagrams, not yet RTTmin / beta
    assert rule.due(434, 0.020, 0.0)
    assert not rule.due(1, 1.0, 0.0)  # long past the interval, one datagram: L = 2 not reached
    assert rule.due(2, 1.0, 0.0)
    assert rule.due(2, 0.0, None)  # the first answer waits for L only


def test_rule_for_maps_the_arms_and_refuses_what_udp_cannot_run() -> None:
    assert rule_for(None, {}, 0.08) == AnswerRule(0)
    assert rule_for("every_d", {"d": "8"}, 0.08) == AnswerRule(8)
    assert rule_for("every_d", {}, 0.08) == AnswerRule(2)  # EveryD's default d
    assert rule_for("tack", {"beta": "8", "L": "4"}, 0.240) == AnswerRule(4, 0.030)
    with pytest.raises(ValueError, match="not 'smartacking'"):
        rule_for("smartacking", {}, 0.08)
    with pytest.raises(ValueError, match="not max_delay_s"):
        rule_for("every_d", {"d": "2", "max_delay_s": "0.2"}, 0.08)
    with pytest.raises(ValueError):
        AnswerRule(-1)


def test_the_window_counts_only_inside_it() -> None:
    w = WindowCount(start=1.0, end=3.0)
    for t in (0.5, 0.99, 1.0, 2.0, 2.999, 3.0, 4.0):
        w.datagram(t, 1472)
        w.answer(t)
    assert (w.datagrams, w.payload_bytes, w.answers) == (3, 3 * 1472, 3)
    assert (w.total_datagrams, w.total_answers, w.seconds) == (7, 7, 2.0)


def test_the_sender_owes_what_the_rate_says_in_bursts_of_at_most_its_burst() -> None:
    assert due_now(0.0, 8000, 0) == 0
    assert due_now(0.001, 8000, 0) == 8
    assert due_now(1.0, 8000, 7990) == 10
    assert due_now(1.0, 8000, 0, burst=16) == 16  # behind: catches up 16 at a time
    assert due_now(1.0, 8000, 9000) == 0  # ahead: nothing


def _sides() -> tuple[dict[str, object], dict[str, object]]:
    sender = {"sent": 100_000, "refused": 0, "answers_received": 40, "duration_s": 13.5}
    receiver = {
        "window_s": 9.0,
        "ended_early": False,
        "start": 0.0,
        "end": 9.0,
        "datagrams": 65_310,
        "payload_bytes": 65_310 * 1472,
        "answers": 30,
        "total_datagrams": 86_965,
        "total_answers": 40,
    }
    return sender, receiver


def test_summarize_gives_goodput_and_answers_in_the_emulated_networks_time() -> None:
    sender, receiver = _sides()
    r = summarize(sender, receiver, rcvbuf_drops=3)
    # 65 310 datagrams of 1472 bytes in 9 s of a test bed 3x slower: 256.4 Mbit/s emulated
    assert r.goodput_bps(3.0) / 1e6 == pytest.approx(65_310 * 1472 * 8 / 9 * 3 / 1e6)
    assert r.goodput_bps(3.0) / 1e6 == pytest.approx(256.36, abs=0.01)
    assert r.answer_frequency_hz(3.0) == pytest.approx(10.0)
    assert r.answers_per_datagram == pytest.approx(30 / 65_310)
    assert (r.rcvbuf_drops, r.sent, r.ended_early) == (3, 100_000, False)


def test_summarize_refuses_a_side_that_failed() -> None:
    sender, _ = _sides()
    with pytest.raises(ValueError, match="the UDP receiver failed: TimeoutError"):
        summarize(sender, {"error": "TimeoutError: timed out"})


_BASE = """name: {name}
title: t
reproduces: [{{source: s, claim: c}}]
topology: wlan
params: {{n_stations: 1, preset: 802.11g, scale: 1.0}}
traffic: {traffic}
capture: {{node: ap, toward: air, what: nothing}}
metrics: [udp_goodput_mbps]
arms: {arms}
scale: {{factor: 1, what: none}}
"""
_TRAFFIC = "{kind: udp-answers, offered_mbps: 40, warmup_s: 1, measure_s: 2}"


def _write(tmp_path: Path, traffic: str = _TRAFFIC, arms: str = "[{}, {host: tack}]") -> Path:
    path = tmp_path / "udp.yaml"
    path.write_text(_BASE.format(name="udp", traffic=traffic, arms=arms))
    return path


def test_a_scenario_declares_the_traffic_kind_and_its_arms(tmp_path: Path) -> None:
    s = load(_write(tmp_path, arms="[{}, {host: {policy: every_d, params: {d: 4}}}, {host: tack}]"))
    assert s.traffic["kind"] == "udp-answers"
    assert len(plan(s)) == 3 * 3


@pytest.mark.parametrize(
    ("traffic", "arms", "says"),
    [
        (_TRAFFIC, "[{}, {switch: tack, switches: [ap]}]", "not a switch or AP"),
        (_TRAFFIC, "[{}, {host: smartacking}]", "not 'smartacking'"),
        (_TRAFFIC, "[{}, {host: {policy: every_d, params: {d: 4, max_delay_s: 1}}}]", "not max_delay_s"),
        ("{kind: udp-answers, offered_mbps: 40, warmup_s: 1}", "[{}]", "needs measure_s > 0"),
        (
            "{kind: udp-answers, offered_mbps: 40, warmup_s: 1, measure_s: 2, size_bytes: 9}",
            "[{}]",
            "no size_bytes",
        ),
    ],
)
def test_a_scenario_the_udp_tool_cannot_run_is_refused(
    tmp_path: Path, traffic: str, arms: str, says: str
) -> None:
    with pytest.raises(ScenarioError, match=says):
        load(_write(tmp_path, traffic, arms))


def test_fig13s_scenario_has_every_l_tack_and_the_udp_baseline() -> None:
    s = load("wlan-ideal-goodput")
    assert {a.label() for a in s.arms} == {
        "baseline (nothing on)",
        *(f"host every_d d={d}" for d in (1, 2, 4, 8, 16)),
        "host tack",
    }
    assert {p.params["preset"] for p in s.points} == {"802.11n", "802.11g"}


# What the TCP scenarios push through the bmv2 AP at 802.11n's k = 3 (data and one ACK per two
# segments: 1.5 x 7 254 frames/s) without a loss inside the switch (docs/testbed.md, Time scale).
AP_LOSSLESS_PPS = 10_900


def test_fig13s_ap_forwards_data_and_an_answer_per_datagram_within_what_it_carried() -> None:
    """UDP at L = 1 makes the AP forward every datagram offered (up to the wire's rate) and an
    answer per datagram the air delivers. The first pilot ran 802.11n at k = 3: 8 200 datagrams
    and up to 7 200 answers a second, and the AP lost 39 000 of 110 000 datagrams inside the
    switch (L = 1: 150 Mbit/s against ns-3's 213); at k = 5 it lost none (209.7)."""
    s = load("wlan-ideal-goodput")
    for point in s.points:
        params = dict(s.params) | dict(point.params)
        scale = point_scale(params)
        assert scale is not None
        offered_fps = float(s.point_traffic(point)["offered_mbps"]) * 1e6 / (8 * PAYLOAD_BYTES)
        wire_fps = float(params["wired_rate_mbps"]) * 1e6 / (8 * FRAME_BYTES)
        medium_fps = scale.capacity_mbps * 1e6 / (8 * MSS_BYTES)  # at most one answer each
        assert offered_fps * PAYLOAD_BYTES * 8 > scale.capacity_mbps * 1e6, point.label  # saturates
        assert (min(offered_fps, wire_fps) + medium_fps) / scale.k <= AP_LOSSLESS_PPS, point.label
