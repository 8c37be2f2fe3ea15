"""TACK Fig. 13's checks in make validate (validation/run.py): TACK's point as frames per answer,
and the two claims (ideal goodput non-decreasing in L; TACK's point near the UDP baseline) read
from the rows, on each side."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "validation" / "run.py"
_SPEC = importlib.util.spec_from_file_location("validation_run", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
run = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = run  # dataclasses look their module up there
_SPEC.loader.exec_module(run)


def test_tacks_point_is_the_frames_of_rttmin_over_beta() -> None:
    # 802.11n: 255.6 Mbit/s of 1472-byte payloads is 21 705 frames/s; 80 ms / 4 holds 434 of them
    assert run.tack_every(255.6) == round(255.6e6 / (8 * 1472) * 0.080 / 4) == 434
    # a slow medium at a short RTT: the rule's bandwidth bound, every L = 2 frames
    assert run.tack_every(1.0, rtt_min_s=0.001) == run.TACK_L


def _rows(ns3: list[float], model: list[float], udp: tuple[float, float]) -> list:
    ns3_durations = {
        "ampdu_bytes": 64846,
        "ampdu_us": 1771,
        "max_mpdus": 42,
        "durations_us": {"block_ack": 32},
    }
    rows = [run.Row("802.11n", "saturated UDP, 1 sta", udp[0], udp[1], ns3_durations)]
    rows.append(run.Row("802.11n", "saturated UDP, 3 sta", 1.0, 1.0, {}))
    labels = [f"L={e}" for e in run.EVERY] + ["TACK at 80 ms (L=434)"]
    rows += [
        run.Row("802.11n", f"ideal goodput, {lab}", a, b, {})
        for lab, a, b in zip(labels, ns3, model, strict=True)
    ]
    return rows


def test_fig13_reads_both_sides_from_the_rows() -> None:
    rows = _rows(
        [213.3, 224.5, 227.4, 228.9, 230.3, 250.0], [214.4, 225.5, 229.0, 228.0, 231.0, 255.0], (255.6, 256.3)
    )
    ns3, model = run.fig13(rows)
    assert (ns3.side, model.side) == ("ns-3", "model")
    assert ns3.non_decreasing and not model.non_decreasing  # the model's L = 8 dips
    assert ns3.tack_to_udp == pytest.approx(250.0 / 255.6)
    assert model.tack_to_udp == pytest.approx(255.0 / 256.3)
    assert "| 802.11n | model | no |" in run.render(rows)


def test_tacks_point_counts_where_its_l_falls() -> None:
    """802.11b at 80 ms: TACK's L is 10, between 8 and 16; listed last, its goodput (5.86, between
    L = 8's 5.84 and L = 16's 5.95) read as a fall (the first make validate with it said 'no')."""
    rows = _rows([4.48, 5.22, 5.62, 5.84, 5.95, 5.86], [4.49, 5.20, 5.62, 5.85, 5.97, 5.90], (6.07, 6.11))
    rows[-1].workload = "ideal goodput, TACK at 80 ms (L=10)"
    ns3, model = run.fig13(rows)
    assert ns3.every == [1, 2, 4, 8, 16, 10]
    assert ns3.non_decreasing and model.non_decreasing
