"""The emulated medium on the test bed delivers what the model predicts: saturated UDP from the
server through the bmv2 AP to one station, 802.11g and 802.11n at their chosen time scales
(timescale.CHOSEN_K), within 10 % of linkem --virtual's prediction for the same preset, k and
queue (validation/testbed_k.py does the measuring; docs/testbed.md, "Time scale", has its
figures)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ackwise.topologies.timescale import CHOSEN_K

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "validation"))
from testbed_k import measure


@pytest.mark.parametrize("name", ["802.11g", "802.11n"])
def test_saturated_udp_through_the_ap_matches_the_model(name: str) -> None:
    m = measure(name, CHOSEN_K[name])
    print(
        f"\n{name} x{m.k:g}: test bed {m.measured_fps:.0f} frames/s, model {m.model_fps:.0f} "
        f"({m.error:+.1%}); "
        f"AP counters {m.medium}"
    )
    assert m.measured_fps == pytest.approx(m.model_fps, rel=0.10)
