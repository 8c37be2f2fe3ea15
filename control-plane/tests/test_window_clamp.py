"""The maximum window (issue 38): W segments as a receive-window clamp in bytes, the clamp a
receiving socket gets, and the check each run makes of it from the sender's ss samples."""

from __future__ import annotations

import socket

import pytest

from ackwise.experiments.measure.metrics import OPENING_EXTRA_SEGMENTS, window_clamp_check
from ackwise.experiments.measure.traffic import ss_sample
from ackwise.experiments.measure.transfer import clamp_window
from ackwise.topologies.catalog import TopologyParamError, check_params, mss_for_mtu, window_clamp_bytes

MSS = 988  # the chain's segments: 1040-byte packets with timestamps


def sample(t: float, unacked: int, snd_wnd: int | None, bytes_acked: int) -> dict[str, object]:
    return {
        "t": t,
        "cwnd": 10,
        "rtt_ms": 1.0,
        "unacked": unacked,
        "snd_wnd": snd_wnd,
        "bytes_acked": bytes_acked,
    }


def test_mss_and_clamp_follow_the_mtu() -> None:
    assert mss_for_mtu(1500) == 1448  # twins.policies.MSS_BYTES: the hosts' usual MSS
    assert mss_for_mtu(1040) == MSS
    assert window_clamp_bytes(3, 1040) == 3 * MSS
    assert window_clamp_bytes(0, 1040) == 0  # no clamp


def test_chain_takes_an_mtu_and_a_maximum_window_in_range() -> None:
    check_params("chain", {"hops": 8, "mtu_bytes": 1040, "max_window_pkts": 2000})
    with pytest.raises(TopologyParamError, match="mtu_bytes=400"):
        check_params("chain", {"mtu_bytes": 400})
    with pytest.raises(TopologyParamError, match="max_window_pkts=-1"):
        check_params("chain", {"max_window_pkts": -1})
    with pytest.raises(TopologyParamError, match="dumbbell has no parameter max_window_pkts"):
        check_params("dumbbell", {"max_window_pkts": 3})


def test_a_socket_gets_the_clamp_and_zero_leaves_it_alone() -> None:
    with socket.socket() as s:
        before = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP)
        clamp_window(s, 0)
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP) == before
        clamp_window(s, 3 * MSS)
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP) == 3 * MSS


def test_ss_line_gives_window_in_flight_and_acknowledged_bytes() -> None:
    out = (
        "ESTAB 0 0 10.0.0.2:40000 10.0.0.3:5001\n\t reno wscale:9,0 rto:1200 rtt:820.5/40 mss:988 "
        "cwnd:7 bytes_acked:120537 segs_out:200 unacked:3 snd_wnd:2964 lastsnd:10"
    )
    assert ss_sample(out) == {
        "cwnd": 7,
        "ssthresh": None,
        "rtt_ms": 820.5,
        "snd_wnd": 2964,
        "unacked": 3,
        "bytes_acked": 120537,
    }
    nothing_in_flight = ss_sample("ESTAB\n\t reno cwnd:10 rtt:1/1 snd_wnd:2964")
    assert nothing_in_flight is not None and nothing_in_flight["unacked"] == 0  # ss leaves out unacked:0
    assert ss_sample("State Recv-Q Send-Q\n") is None
    after_a_loss = ss_sample("ESTAB\n\t reno cwnd:10 ssthresh:7 rtt:1/1 snd_wnd:2964")
    assert after_a_loss is not None and after_a_loss["ssthresh"] == 7


def test_clamp_held_when_no_sample_exceeds_the_window() -> None:
    samples = [sample(0.1 * i, 3, 3 * MSS, 1000 * i * MSS) for i in range(1, 20)]
    check = window_clamp_check(samples, 3, MSS)
    assert check.held and check.max_in_flight_segments == 3 and check.max_snd_wnd_bytes == 3 * MSS


def test_the_opening_may_carry_two_more_segments_and_no_more() -> None:
    """The first ACK opens W + 2 (measured: 11856 = 12 x 988 bytes at W = 10); allowed until
    W + 3 segments are acknowledged, and not after."""
    w = 10
    opening_end = (w + OPENING_EXTRA_SEGMENTS + 1) * MSS
    opening = [sample(0.1, w + 2, (w + 2) * MSS, MSS), sample(0.2, w + 2, (w + 2) * MSS, opening_end)]
    steady = [sample(0.3, w, w * MSS, opening_end + MSS)]
    assert window_clamp_check(opening + steady, w, MSS).held
    too_many_early = [sample(0.1, w + 3, w * MSS, MSS)]
    assert not window_clamp_check(too_many_early + steady, w, MSS).held
    late = [sample(0.4, w + 1, w * MSS, opening_end + 2 * MSS)]
    check = window_clamp_check(opening + steady + late, w, MSS)
    assert not check.held and check.violations == 1 and check.first_violation_t_s == 0.4
    assert check.max_in_flight_segments == w + 2


def test_a_window_that_fits_one_more_segment_violates_even_with_nothing_in_flight() -> None:
    after_opening = 100 * MSS
    assert window_clamp_check([sample(1.0, 0, 4 * MSS - 1, after_opening)], 3, MSS).held  # scaling rounds up
    check = window_clamp_check([sample(1.0, 0, 4 * MSS, after_opening)], 3, MSS)
    assert not check.held and check.max_snd_wnd_bytes == 4 * MSS


def test_no_samples_is_not_a_clamp_that_held() -> None:
    check = window_clamp_check([], 3, MSS)
    assert not check.held and check.samples == 0


def test_a_window_larger_than_the_transfer_holds_in_its_opening() -> None:
    """W = 2000 on a 300 kB transfer: every sample is in the opening, and none exceeds W."""
    samples = [sample(0.1 * i, 40, 60000, i * 10 * MSS) for i in range(1, 30)]
    assert window_clamp_check(samples, 2000, MSS).held
