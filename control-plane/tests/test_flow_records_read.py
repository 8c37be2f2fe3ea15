"""read_flows: what the switch does not count is derived from what it does."""

from __future__ import annotations

from typing import Any

from fake_switch_client import FakeSwitchClient

from ackwise.features.thinning import read_flows


def test_acks_thinned_are_seen_less_forwarded_and_left_to_the_filter() -> None:
    """ack_switch counts an ACK's seen, forwarded and left-to-the-filter, not thinned (a register
    read and write fewer per ACK): every ACK it evaluates is one of the three. The egress filter's
    own forwarded and filtered counts add to ingress's, as before."""
    fake: Any = FakeSwitchClient()
    fake.set_flow(
        "10.0.1.1",
        40000,
        "10.0.2.1",
        5001,
        acks={
            "acks_seen": 50,
            "acks_forwarded": 10,
            "acks_to_filter": 12,
            "filter_forwarded": 5,
            "filter_filtered": 6,
        },
    )
    [record] = read_flows(fake)
    acks = next(h for h in record.halves if h.sender.startswith("10.0.2.1"))
    assert (acks.acks_seen, acks.acks_forwarded, acks.acks_thinned) == (50, 10 + 5, 50 - 10 - 12 + 6)


def test_an_ipv6_record_is_read_with_its_addresses() -> None:
    """An IPv6 flow's record: (FLOW_KEY_IPV6, 0) where an IPv4 key has its addresses (never an
    IPv4 key's: the lower address comes first), the addresses in key6_a/key6_b's words; its slot
    the crc32 of the 36 key bytes (FlowKey.key_bytes). IPv4 records beside it read as before."""
    fake: Any = FakeSwitchClient()
    key6 = fake.set_flow("fd00:0:0:2::1", 5001, "fd00:0:0:1::1", 40000, acks={"acks_seen": 3})
    key4 = fake.set_flow("10.0.1.1", 40000, "10.0.2.1", 5001)
    assert len(key6.key_bytes) == 36 and key6.slot != key4.slot
    records = {r.slot: r for r in read_flows(fake)}
    assert str(records[key6.slot].key) == "[fd00:0:0:1::1]:40000 <> [fd00:0:0:2::1]:5001"
    assert records[key6.slot].key == key6
    assert str(records[key4.slot].key) == "10.0.1.1:40000 <> 10.0.2.1:5001"
