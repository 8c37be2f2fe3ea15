import zlib

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
