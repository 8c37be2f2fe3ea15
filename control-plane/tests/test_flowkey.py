import zlib

import pytest

from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import FLOW_SLOTS, HALF_FLOWS


def test_both_directions_share_one_key() -> None:
    a, da = FlowKey.of("10.0.1.1", "10.0.2.1", 40000, 5001)
    b, db = FlowKey.of("10.0.2.1", "10.0.1.1", 5001, 40000)
    assert a == b and {da, db} == {0, 1}
    assert a.half(da) != a.half(db) and a.half(da) >> 1 == a.slot


def test_slot_is_crc32_of_the_key_bytes() -> None:
    key, _ = FlowKey.of("10.0.1.1", "10.0.2.1", 40000, 5001)
    raw = bytes([10, 0, 1, 1, 10, 0, 2, 1]) + (40000).to_bytes(2, "big") + (5001).to_bytes(2, "big")
    assert key.slot == zlib.crc32(raw) % FLOW_SLOTS


def test_register_round_trip() -> None:
    key, _ = FlowKey.of("10.0.9.9", "10.0.1.2", 1234, 80)
    assert FlowKey.from_registers(key.addr_lo, key.addr_hi, key.ports) == key
    assert str(key) == "10.0.1.2:80 <> 10.0.9.9:1234"


def test_same_address_orders_by_port() -> None:
    key, direction = FlowKey.of("10.0.0.1", "10.0.0.1", 6000, 5000)
    assert direction == 1 and key.endpoint(0) == "10.0.0.1:5000"


def test_a_slot_has_two_half_flows() -> None:
    """FlowKey.half (slot << 1 | direction) indexes the P4's per-half-flow registers."""
    assert HALF_FLOWS == 2 * FLOW_SLOTS


# ---- IPv6 ----


def test_ipv6_key_orders_by_the_whole_address() -> None:
    """The lower endpoint is the lower 128-bit address: 2001:db8::2:1 is below 2001:db8:0:1::1 although
    its last 32 bits are higher (a key made of the low 32 bits would put them the other way)."""
    a, da = FlowKey.of("2001:db8:0:1::1", "2001:db8::2:1", 40000, 5001)
    b, db = FlowKey.of("2001:db8::2:1", "2001:db8:0:1::1", 5001, 40000)
    assert a == b and (da, db) == (1, 0)
    assert a.version == 6 and a.endpoint(0) == "[2001:db8::2:1]:5001"
    assert str(a) == "[2001:db8::2:1]:5001 <> [2001:db8:0:1::1]:40000"


def test_ipv6_slot_is_crc32_of_36_key_bytes() -> None:
    key, _ = FlowKey.of("2001:db8::1", "2001:db8::2", 40000, 5001)
    raw = (
        bytes.fromhex("20010db8000000000000000000000001")
        + bytes.fromhex("20010db8000000000000000000000002")
        + (40000).to_bytes(2, "big")
        + (5001).to_bytes(2, "big")
    )
    assert key.key_bytes == raw and key.slot == zlib.crc32(raw) % FLOW_SLOTS


def test_ipv4_and_ipv6_keys_differ_for_the_same_numbers() -> None:
    """::a00:101 is the number of 10.0.1.1: the keys must still differ (the version is part of it)."""
    v4, _ = FlowKey.of("10.0.1.1", "10.0.2.1", 40000, 5001)
    v6, _ = FlowKey.of("::a00:101", "::a00:201", 40000, 5001)
    assert (v4.addr_lo, v4.addr_hi, v4.ports) == (v6.addr_lo, v6.addr_hi, v6.ports)
    assert v4 != v6 and v4.key_bytes != v6.key_bytes


def test_mixed_versions_refused() -> None:
    with pytest.raises(ValueError, match="one IP version"):
        FlowKey.of("10.0.1.1", "2001:db8::1", 1, 2)
