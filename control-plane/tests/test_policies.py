import ipaddress
import re

import pytest

from ackwise.twins.p4names import ACTION_PARAMS_BITS, AckPolicy
from ackwise.twins.policies import ACTIONS, POLICY_PARAMS, Policy, PolicyError, PolicyMatch, PolicyParams


def test_defaults_are_the_papers() -> None:
    p = PolicyParams(Policy.DYNAMIC_D)
    assert (p.l1, p.l2, p.l3) == (2, 5, 9)
    t = PolicyParams(Policy.TACK)
    assert (t.L, t.beta, t.rtt_min_us) == (2, 4, 0)


def test_parse_and_action_round_trip() -> None:
    p = PolicyParams.parse("tack", ["L=3", "beta=8", "rtt_min_us=20000", "mss=1400"])
    action, params = p.action()
    assert action == "ack_thinning.policy_tack"
    assert params == {
        "mss": 1400,
        "tack_l": 3,
        "beta": 8,
        "rtt_min_us": 20000,
        "idle_ms": 1000,
        "hold_ms": 200,
    }
    assert PolicyParams.from_action(action, params) == p


def test_action_parameters_match_the_p4_actions() -> None:
    for policy in Policy:
        action, params = PolicyParams(policy).action()
        assert action == ACTIONS[policy]
        assert [name for name, _ in ACTION_PARAMS_BITS[action]] == list(params), policy


def test_every_p4_policy_has_a_name() -> None:
    """The policies the switch knows (ack_policy_t) are the ones the control plane names."""
    assert {p.name for p in Policy} == {p.name for p in AckPolicy}


@pytest.mark.parametrize(
    ("policy", "args", "fragment"),
    [
        ("every", [], "unknown policy"),
        ("every_d", ["d=0"], r"d=0: must be an integer in 1\.\.255"),
        ("every_d", ["beta=4"], "every_d has no parameter 'beta'"),
        ("dynamic_d", ["l1=5", "l2=5"], "thresholds must grow"),
        ("tack", ["L=two"], "not an integer"),
        ("filter", ["mss"], "NAME=VALUE"),
        ("off", ["d=2"], r"takes: none"),
    ],
)
def test_invalid_parameters_say_why(policy: str, args: list[str], fragment: str) -> None:
    with pytest.raises(PolicyError, match=fragment):
        PolicyParams.parse(policy, args)


def test_every_policy_lists_its_parameters() -> None:
    assert set(POLICY_PARAMS) == set(Policy)


def test_match_key_and_priority() -> None:
    m = PolicyMatch.parse(["src=10.0.2.0/24", "sport=5001", "dport=*"])
    assert m.src == ipaddress.IPv4Network("10.0.2.0/24") and m.dport is None
    # one 96-bit field: source address | destination address | source port | destination port
    assert m.key() == {"flow": "0xa0002000000000013890000&&&0xffffff0000000000ffff0000"}
    assert PolicyMatch.parse(["src=10.0.2.1", "sport=5001"]).priority < m.priority < PolicyMatch().priority
    assert PolicyMatch.from_key({"flow": (0x0A00020000000000_13890000, 0xFFFFFF0000000000_FFFF0000)}) == m
    flow = PolicyMatch.parse(["src=10.0.2.1", "dst=10.0.1.1", "sport=5001", "dport=40000"])
    assert flow.exact_key() == {"flow": "0xa0002010a00010113899c40"}
    assert PolicyMatch.from_key({"flow": (0x0A0002010A00010113899C40, (1 << 96) - 1)}) == flow
    with pytest.raises(PolicyError, match="per-flow rule needs"):
        m.exact_key()
    with pytest.raises(PolicyError, match="use src="):
        PolicyMatch.parse(["source=10.0.0.1"])
    with pytest.raises(PolicyError, match="outside"):
        PolicyMatch.parse(["dport=70000"])


def test_ipv6_match_key_and_priority() -> None:
    """An IPv6 match packs into the 288-bit key of the IPv6 tables: src 128 | dst 128 | sport | dport."""
    m = PolicyMatch.parse(["src=2001:db8:2::/48", "sport=5001"])
    assert m.version == 6 and m.versions == (6,)
    value = 0x20010DB80002 << (80 + 160) | 5001 << 16
    mask = (2**48 - 1) << (80 + 160) | 0xFFFF << 16
    assert m.key(6) == {"flow": f"{value:#x}&&&{mask:#x}"}
    assert PolicyMatch.from_key({"flow": (value, mask)}, 6) == m
    # 80 + 128 + 16 wildcard bits, one more than that
    assert m.priority == 80 + 128 + 16 + 1
    flow = PolicyMatch.parse(["src=2001:db8:2::1", "dst=2001:db8:1::1", "sport=5001", "dport=40000"])
    assert flow.exact and flow.priority == 1
    packed = int(flow.exact_key()["flow"], 16)
    assert packed == (
        0x20010DB8000200000000000000000001 << 160
        | 0x20010DB8000100000000000000000001 << 32
        | 5001 << 16
        | 40000
    )
    assert PolicyMatch.from_key({"flow": (packed, (1 << 288) - 1)}, 6) == flow
    with pytest.raises(PolicyError, match="not IPv4"):
        m.key(4)


def test_a_match_without_addresses_is_for_both_versions() -> None:
    m = PolicyMatch.parse(["sport=5001"])
    assert m.version is None and m.versions == (4, 6)
    assert m.key(4) == {"flow": f"{5001 << 16:#x}&&&{0xFFFF << 16:#x}"}
    assert m.key(6) == m.key(4)  # the ports are the low 32 bits of both keys
    assert PolicyMatch.from_key({"flow": (5001 << 16, 0xFFFF << 16)}, 6) == m


def test_mixed_versions_and_host_bits_name_the_fix() -> None:
    with pytest.raises(PolicyError, match="one IP version"):
        PolicyMatch.parse(["src=10.0.2.0/24", "dst=2001:db8::/32"])
    with pytest.raises(PolicyError, match="write its network, 2001:db8::/32"):
        PolicyMatch.parse(["src=2001:db8::1/32"])
    with pytest.raises(PolicyError, match=re.escape("write its network, 10.0.2.0/24")):
        PolicyMatch.parse(["src=10.0.2.1/24"])
    with pytest.raises(PolicyError, match="IPv4 or IPv6 address"):
        PolicyMatch.parse(["src=not-an-address"])


def test_a_match_without_addresses_ranks_below_prefixes_in_the_ipv6_table() -> None:
    """Its priority is counted in each table's widths: in the IPv6 table a ports-only rule must not
    outrank an IPv6 prefix rule (counted in IPv4's widths it would: 81 wild bits against 225)."""
    ports_only = PolicyMatch.parse(["sport=5001"])
    prefix = PolicyMatch.parse(["src=2001:db8:2::/48"])
    assert prefix.priority_in(6) < ports_only.priority_in(6)
    assert ports_only.priority_in(4) == ports_only.priority == 32 + 32 + 16 + 1
    assert ports_only.priority_in(6) == 128 + 128 + 16 + 1
