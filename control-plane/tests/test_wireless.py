"""The 802.11 parameter table, the durations derived from it, and Bianchi's reference model."""

import math
import tomllib

import pytest

from ackwise.topologies.catalog import Chain, TopologyParamError, check_params
from ackwise.topologies.wireless import (
    CHAIN_PRESET,
    CHAIN_RANGES,
    PARAMS_PATH,
    PRESETS,
    WirelessPreset,
    bianchi,
    parameter_table,
    placement_lines,
    preset,
)


def test_every_value_has_a_source() -> None:
    with PARAMS_PATH.open("rb") as f:
        raw = tomllib.load(f)
    for section in [raw["common"], *raw["presets"].values()]:
        for name, entry in section.items():
            _value, source = entry
            assert isinstance(source, str) and len(source) > 3, name
    assert parameter_table() == raw


def test_standard_values() -> None:
    b, g, n, ac = (PRESETS[k] for k in ("802.11b", "802.11g", "802.11n", "802.11ac"))
    # DIFS = SIFS + 2 slots; AIFS[BE] = SIFS + 3 slots.
    assert b.aifs_us == 50 and g.aifs_us == 28 and n.aifs_us == 43 and ac.aifs_us == 43
    assert (b.cw_min, g.cw_min, n.cw_min, ac.cw_min) == (31, 15, 15, 15)
    assert all(p.cw_max == 1023 and p.retry_limit == 7 for p in PRESETS.values())
    # The MPDU: header (24 without QoS, 26 with) + LLC/SNAP 8 + FCS 4, for a 14-byte Ethernet header.
    assert g.mpdu_bytes(1514) == 1536 and n.mpdu_bytes(1514) == 1538
    assert not b.aggregate and not g.aggregate and n.aggregate and ac.aggregate
    assert n.max_ampdu_bytes == 2**16 - 1 and ac.max_ampdu_bytes == 2**20 - 1


def test_ppdu_durations() -> None:
    g = PRESETS["802.11g"]
    # 54 Mbit/s: 20 us preamble + ceil((16 + 8 * 1536 + 6) / 216) = 57 symbols of 4 us + 6 us extension
    assert g.ppdu_us(1536) == 20 + 57 * 4 + 6
    b = PRESETS["802.11b"]
    assert b.ppdu_us(1536) == 192 + math.ceil(1536 * 8 / 11)
    n = PRESETS["802.11n"]
    assert n.ppdu_us(1538) == pytest.approx(40 + math.ceil((16 + 8 * 1538 + 6) / 1080) * 3.6)


def test_aggregate_limits() -> None:
    n, ac = PRESETS["802.11n"], PRESETS["802.11ac"]
    # 42 subframes of 1542 bytes (4-byte delimiter, 1538-byte MPDU, 2 bytes of padding) fit 65 535.
    assert n.ampdu_limit(1514) == 42 and n.ampdu_bytes(1514, 42) <= 65535 < n.ampdu_bytes(1514, 43)
    # VHT's length limit is far away: the Block Ack window (64) binds.
    assert ac.ampdu_limit(1514) == 64
    assert PRESETS["802.11g"].ampdu_limit(1514) == 1


def test_linkem_arguments_name_every_parameter_once() -> None:
    args = PRESETS["802.11n"].with_scale(10).linkem_medium_args(loss=0.01, limit_pkts=50)
    keys = [a.split("=")[0] for a in args.split()]
    assert len(keys) == len(set(keys))
    kv = dict(a.split("=") for a in args.split())
    assert kv["slot_ns"] == "9000" and kv["aifs_ns"] == "43000" and kv["scale"] == "10"
    assert kv["aggregate"] == "1" and kv["max_mpdus"] == "64" and kv["limit_pkts"] == "50"


def test_scale_multiplies_durations_and_keeps_ratios() -> None:
    base, slow = preset("802.11n"), preset("802.11n", scale=10)
    assert slow.exchange_us(1514) == pytest.approx(10 * base.exchange_us(1514))
    assert slow.airtime_us(66) / slow.airtime_us(1514) == pytest.approx(
        base.airtime_us(66) / base.airtime_us(1514)
    )
    assert bianchi(slow, 3, 1514).throughput_bps == pytest.approx(bianchi(base, 3, 1514).throughput_bps / 10)


def test_bianchi_single_station_is_the_mean_backoff_cycle() -> None:
    g = preset("802.11g")
    cycle_us = g.ppdu_us(g.mpdu_bytes(1514)) + g.sifs_us + g.ack_us + g.aifs_us + g.cw_min / 2 * g.slot_us
    assert bianchi(g, 1, 1514).throughput_bps == pytest.approx(1514 * 8 / (cycle_us * 1e-6))
    assert bianchi(g, 1, 1514).p == 0


def test_bianchi_fixed_point() -> None:
    """tau and p satisfy eq. (7) and eq. (9); p rises with n, throughput peaks and falls."""
    g = preset("802.11g")
    w, m = g.cw_min + 1, 6
    results = [bianchi(g, n, 1514) for n in (2, 5, 10, 20, 50)]
    for r in results:
        assert r.p == pytest.approx(1 - (1 - r.tau) ** (r.n - 1), abs=1e-9)
        p = r.p
        assert r.tau == pytest.approx(2 * (1 - 2 * p) / ((1 - 2 * p) * (w + 1) + p * w * (1 - (2 * p) ** m)))
    assert [r.p for r in results] == sorted(r.p for r in results)
    assert results[-1].throughput_bps < results[0].throughput_bps


def test_unknown_preset_and_bad_scale() -> None:
    with pytest.raises(ValueError, match="unknown wireless preset"):
        preset("802.11z")
    with pytest.raises(ValueError, match="positive"):
        preset("802.11b", scale=0)


def test_a_table_entry_without_source_is_refused(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "t.toml"
    bad.write_text('[common]\nfcs_bytes = [4, ""]\n[presets]\n')
    import ackwise.topologies.wireless as wireless

    monkeypatch.setattr(wireless, "PARAMS_PATH", bad)
    parameter_table.cache_clear()
    try:
        with pytest.raises(ValueError, match="must be"):
            parameter_table()
    finally:
        parameter_table.cache_clear()
    assert isinstance(PRESETS["802.11g"], WirelessPreset)


def test_chain_preset_is_ns2s_default_mac() -> None:
    """1 Mbit/s DSSS for every frame, long preamble, RTS/CTS: a 1076-byte MPDU (1040-byte IP
    packet) takes 192 + 1076 x 8 us, an exchange adds RTS 352, CTS 304, ACK 304 and three SIFS."""
    p = preset(CHAIN_PRESET)
    assert p.rts_cts and not p.aggregate
    assert p.mpdu_bytes(1054) == 1076
    assert p.ppdu_us(1076) == pytest.approx(192 + 1076 * 8)
    assert p.exchange_us(1054) == pytest.approx(352 + 304 + 192 + 1076 * 8 + 304 + 3 * 10)


def test_placement_lines_put_the_nodes_on_a_line() -> None:
    assert placement_lines("air", ["src", "r1", "dst"]) == [
        "ranges air tx_m=250 cs_m=550 interference_m=550 capture=1.7783",
        "position air src x_m=0 y_m=0",
        "position air r1 x_m=200 y_m=0",
        "position air dst x_m=400 y_m=0",
    ]
    # two hops apart: sensed and interfering, not decoded; three hops: none of the three
    rel = CHAIN_RANGES.relations(4)
    assert 2 not in rel["decodes"][0] and 2 in rel["senses"][0] and 2 in rel["interfered_by"][0]
    assert all(3 not in rel[r][0] for r in rel)


def test_the_chain_topology_places_its_nodes_only_when_asked() -> None:
    assert Chain(hops=3, geometry="line").nodeInfo("air")["line"] == ["src", "r1", "r2", "dst"]
    assert Chain(hops=3).nodeInfo("air")["line"] is None
    check_params("chain", {"geometry": "line", "preset": CHAIN_PRESET})
    with pytest.raises(TopologyParamError, match="geometry=ring"):
        check_params("chain", {"geometry": "ring"})
