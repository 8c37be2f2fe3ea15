import pytest

from ackwise.topologies.wireless import MAC_BYTES_BEYOND_ETHERNET, PRESETS, preset, saturated_throughput_bps


def test_overhead_is_the_sum_of_the_standard_intervals() -> None:
    g = PRESETS["802.11g"]
    assert g.difs_us == 28
    assert g.mean_backoff_us == 67.5
    assert g.overhead_us == pytest.approx(28 + 67.5 + 26 + 10 + 34)


def test_airtime_of_a_data_frame_and_an_ack() -> None:
    g = PRESETS["802.11g"]
    data = g.airtime_us(1514)
    ack = g.airtime_us(66)
    assert data == pytest.approx(g.overhead_us + (1514 + MAC_BYTES_BEYOND_ETHERNET) * 8 / 54)
    # The point of the model: an ACK costs a large share of a data frame's air.
    assert ack / data > 0.4
    ac = PRESETS["802.11ac"]
    assert ac.airtime_us(66) / ac.airtime_us(1514) > 0.8


def test_scale_keeps_the_ratio() -> None:
    base, slow = preset("802.11n"), preset("802.11n", scale=10)
    assert slow.airtime_us(1514) == pytest.approx(10 * base.airtime_us(1514))
    assert slow.airtime_us(66) / slow.airtime_us(1514) == pytest.approx(
        base.airtime_us(66) / base.airtime_us(1514)
    )


def test_saturated_throughput_with_and_without_reverse_traffic() -> None:
    g = preset("802.11g", scale=4)
    alone = saturated_throughput_bps(g, 1514)
    shared = saturated_throughput_bps(g, 1514, reverse_frame_bytes=64)
    assert alone == pytest.approx(1514 * 8 / (g.airtime_us(1514) / 1e6))
    assert shared == pytest.approx(1514 * 8 / ((g.airtime_us(1514) + g.airtime_us(64)) / 1e6))
    assert shared < alone


def test_unknown_preset_and_bad_scale() -> None:
    with pytest.raises(ValueError, match="unknown wireless preset"):
        preset("802.11z")
    with pytest.raises(ValueError, match="positive"):
        preset("802.11b", scale=0)
