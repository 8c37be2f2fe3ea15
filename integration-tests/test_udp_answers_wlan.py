"""TACK Fig. 13's UDP tool through the runner on a real WLAN test bed (802.11g, k = 1): the UDP
baseline carries the medium's UDP rate, a receiver answering every 2 datagrams answers half of
them and costs goodput, and TACK's rule answers at beta / RTTmin (docs/testbed.md, "The same on
the test bed", has the full figure)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ackwise.experiments.harness.runner import execute, plan
from ackwise.experiments.harness.scenario import load

SCENARIO = {
    "name": "udp-it",
    "title": "udp-answers on 802.11g",
    "reproduces": [{"source": "this test", "claim": "the tool answers as told"}],
    "topology": "wlan",
    "params": {
        "n_stations": 1,
        "preset": "802.11g",
        "scale": 1.0,
        "wired_delay_ms": 39.7,
        "medium_buffer_pkts": 500,
    },
    "traffic": {"kind": "udp-answers", "offered_mbps": 40, "warmup_s": 0.5, "measure_s": 1.5},
    "capture": {"node": "ap", "toward": "air", "what": "nothing captured"},
    "metrics": ["udp_goodput_mbps", "answers_per_datagram", "answer_frequency_hz", "ack_airtime_fraction"],
    "arms": [{}, {"host": {"policy": "every_d", "params": {"d": 2}}}, {"host": "tack"}],
    "repeats": 1,
    "scale": {"factor": 1, "what": "none: a test"},
}
NS3_UDP_MBPS, NS3_L2_MBPS = 29.68, 24.84  # make validate's 802.11g rows (docs/testbed.md)


def test_udp_answers_on_80211g_answer_as_told_and_cost_what_ns3_says(tmp_path: Path) -> None:
    path = tmp_path / "udp-it.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    scenario = load(path)
    records = {r.arm.label(): execute(r, scenario) for r in plan(scenario)}
    for label, rec in records.items():
        assert rec.status == "ok", f"{label}: {rec.reason}"
        assert rec.metrics["udp_rcvbuf_drops"] == 0, label
    base = records["baseline (nothing on)"].metrics
    every2 = records["host every_d d=2"].metrics
    tack = records["host tack"].metrics
    assert base["answers_per_datagram"] == 0
    assert base["udp_goodput_mbps"] == pytest.approx(NS3_UDP_MBPS, rel=0.05)
    assert every2["answers_per_datagram"] == pytest.approx(0.5, abs=0.001)
    assert every2["udp_goodput_mbps"] == pytest.approx(NS3_L2_MBPS, rel=0.05)
    assert tack["answer_frequency_hz"] == pytest.approx(4 / 0.080, rel=0.05)  # beta / RTTmin
    assert every2["ack_airtime_fraction"] > tack["ack_airtime_fraction"] > 0
