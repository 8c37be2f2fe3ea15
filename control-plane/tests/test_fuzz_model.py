"""The fuzzer's model of the parser behind the IPv6 EtherType (experiments/stress/fuzz.py): the
cases ptf-tests/test_ipv6_headers.py sends through bmv2, with the verdict the switch gave them;
and the IPv6 pass's frames, tags and mutations."""

from __future__ import annotations

import random

import pytest

from ackwise.experiments.stress.dataplane import DOWNLINK, UPLINK, mac
from ackwise.experiments.stress.fuzz import (
    IPV6_EXT_FOLLOWED,
    MUTATIONS_BY_VERSION,
    Flow,
    _ip_parts,
    _with_ext_chain,
    forwarded,
    label,
    merge_reports,
    model,
    model_ipv6,
    mutate,
    tag_of,
)
from ackwise.twins.p4names import IPV6_EXT_FRAGMENT, IPV6_EXT_HEADERS_MAX, IPV6_EXT_LEN_MAX

TCP_HEADER = bytes(12) + bytes([5 << 4]) + bytes(7)  # data offset 5, no options


def ipv6(next_header: int, exts: bytes = b"", payload_len: int | None = None, version: int = 6) -> bytes:
    body = exts + TCP_HEADER  # after the extension headers
    plen = len(body) if payload_len is None else payload_len
    return (
        bytes([version << 4, 0, 0, 0]) + plen.to_bytes(2, "big") + bytes([next_header, 64]) + bytes(32) + body
    )


def ext(next_header: int, hdr_ext_len: int) -> bytes:
    return bytes([next_header, hdr_ext_len]) + bytes((hdr_ext_len + 1) * 8 - 2)


def test_followed_extension_headers_are_neither_malformed_nor_dropped() -> None:
    assert IPV6_EXT_HEADERS_MAX == 2
    m = model_ipv6(ipv6(0, ext(43, 1) + ext(6, IPV6_EXT_LEN_MAX)))
    assert (m.malformed, m.must_drop) == ("", False)


def test_too_many_or_too_long_or_not_followed_are_skipped_and_forwarded() -> None:
    one_too_many = ext(60, 0) * IPV6_EXT_HEADERS_MAX + ext(6, 0)
    for frame in (
        ipv6(60, one_too_many),
        ipv6(60, ext(6, IPV6_EXT_LEN_MAX + 1)),
        ipv6(IPV6_EXT_FRAGMENT, ext(6, 0)),
    ):
        m = model_ipv6(frame)
        assert (m.malformed, m.must_drop) == ("ipv6_ext_skipped", False)


def test_unreadable_ipv6_is_malformed_and_dropped() -> None:
    good = ipv6(6)
    hbh = ipv6(0, ext(6, 2))
    for frame in (
        ipv6(6, version=4),
        good[:30],
        hbh[: 40 + 16],
        ipv6(0, ext(6, 2), payload_len=16),
    ):
        m = model_ipv6(frame)
        assert (m.malformed, m.must_drop) == ("ipv6_header", True)
    assert model_ipv6(good).malformed == ""


def test_payload_length_is_checked_at_the_chains_end_as_the_parser_does() -> None:
    # Ends inside the first of one too many: the check at the end comes before the last is skipped.
    one_too_many = ext(60, 0) * IPV6_EXT_HEADERS_MAX + ext(6, 0)
    assert model_ipv6(ipv6(60, one_too_many, payload_len=4)).malformed == "ipv6_header"
    # A header too long is skipped where it is met, before the end's check.
    assert model_ipv6(ipv6(60, ext(60, 0) + ext(6, IPV6_EXT_LEN_MAX + 1), payload_len=4)).malformed == (
        "ipv6_ext_skipped"
    )


def test_tcp_over_ipv6_is_modelled_as_the_parser_reads_it_behind_the_extension_headers() -> None:
    m = model_ipv6(ipv6(60, ext(6, 0)))
    # A TCP segment (no ACK flag): TCP, nothing to thin; IPv6 has no header checksum to be wrong.
    assert (m.malformed, m.tcp, m.thinnable, m.must_drop, m.ip_ok) == ("", True, False, False, True)
    ack = bytearray(ipv6(60, ext(6, 0)))
    ack[40 + 8 + 13] = 0x10
    assert (model_ipv6(bytes(ack), "every_d").pure_ack, model_ipv6(bytes(ack), "every_d").thinnable) == (
        True,
        True,
    )
    assert model_ipv6(bytes(ack), "off").thinnable is False  # off: a pure ACK, never thinned
    # The AP proxy proxies IPv6 (issue 40): a station's pure ACK is one to it, never thinned. (The
    # model had it leave IPv6 alone, so every ACK it spoofed over IPv6 was a violation.)
    proxied = model_ipv6(bytes(ack), "ap_proxy")
    assert (proxied.tcp, proxied.pure_ack, proxied.thinnable) == (True, True, False)
    assert model_ipv6(ipv6(60, ext(6, 0))[:-1]).malformed == "truncated"
    offset_4 = bytearray(ipv6(60, ext(6, 0)))
    offset_4[40 + 8 + 12] = 4 << 4
    assert model_ipv6(bytes(offset_4)).malformed == "tcp_data_offset"


def test_an_ipv6_segments_checksum_is_checked_over_its_pseudo_header() -> None:
    """tcp_ok over IPv6's pseudo-header (the upper-layer length without the extension headers):
    what the fuzzer compares before and after a coalesced ACK's rewrite."""
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop

    ack = bytes(
        IPv6(src="fd00::1", dst="fd00::2")
        / IPv6ExtHdrHopByHop()
        / TCP(flags="A", options=[("Timestamp", (1, 2))])
    )
    assert model_ipv6(ack, "coalesce").tcp_ok
    assert not model_ipv6(ack[:-1] + bytes([ack[-1] ^ 1]), "coalesce").tcp_ok


# ---- the IPv6 pass: flows over IPv6, tagged in the flow label, routed, and its mutations ----


def _flow6() -> Flow:
    return Flow(3, 1000, 2000, 5, ip_version=6)


def test_an_ipv6_flows_segments_carry_their_tag_in_the_flow_label_and_are_routed() -> None:
    flow = _flow6()
    data, _ = flow.data(17)
    ack = flow.pure_ack(18, random.Random(1))
    assert (tag_of(data), tag_of(ack)) == ((6, 17), (6, 18))
    m = model(data, "every_d")
    assert (m.ipv6, m.routed, m.malformed, m.pure_ack, m.tcp_ok) == (True, True, "", False, True)
    port, out = forwarded(data, m)
    assert port == DOWNLINK and out[14 + 7] == data[14 + 7] - 1 and out[:6] == mac(DOWNLINK, True)
    assert out[14:] != data[14:] and out[14 + 8 :] == data[14 + 8 :]
    assert model(ack, "every_d").thinnable and not model(ack, "off").thinnable
    # An IPv4 frame relabelled with the IPv6 EtherType has no tag (its TOS is 0): matched whole.
    v4 = Flow(3, 1000, 2000, 5).data(17)[0]
    assert tag_of(v4) == (4, 17) and tag_of(v4[:12] + b"\x86\xdd" + v4[14:]) is None


def test_an_ipv6_segment_with_hop_limit_1_must_be_dropped_and_is_never_thinned() -> None:
    ack = bytearray(_flow6().pure_ack(1, random.Random(1)))
    ack[14 + 7] = 1
    m = model(bytes(ack), "every_d")
    assert (m.must_drop, m.thinnable) == (True, False)
    no_route = bytearray(ack)
    no_route[14 + 24] = 0x20  # 2000::/3: no route, switched on its MAC whatever its hop limit
    m = model(bytes(no_route), "every_d")
    assert (m.routed, m.must_drop) == (False, False)
    assert forwarded(bytes(no_route), m) == (UPLINK, bytes(no_route))


def test_extension_headers_inserted_keep_the_segment_valid_and_are_read_as_the_parser_does() -> None:
    rng = random.Random(2)
    ack = _flow6().pure_ack(5, rng)
    followed = sorted(IPV6_EXT_FOLLOWED)
    for n, malformed in ((1, ""), (IPV6_EXT_HEADERS_MAX, ""), (IPV6_EXT_HEADERS_MAX + 1, "ipv6_ext_skipped")):
        g = _with_ext_chain(ack, [followed[i % 3] for i in range(n)], rng, [1] * n)
        m = model(g, "every_d")
        # (the checksum is read only where the parser reads TCP)
        assert (m.malformed, m.tcp_ok, m.thinnable, tag_of(g)) == (
            malformed,
            not malformed,
            not malformed,
            (6, 5),
        )
        assert int.from_bytes(g[18:20], "big") == len(g) - 54
        assert _ip_parts(g)[1] == ack[54:]  # the TCP segment, found behind them
    assert model(_with_ext_chain(ack, [IPV6_EXT_FRAGMENT], rng), "every_d").malformed == "ipv6_ext_skipped"


def test_every_ipv6_mutation_keeps_the_tag_of_a_frame_long_enough_to_carry_it() -> None:
    rng = random.Random(3)
    flow = _flow6()
    for kind in MUTATIONS_BY_VERSION[6]:
        for i in range(200):
            base = flow.data(9)[0] if i % 2 else flow.pure_ack(9, rng)
            f = mutate(kind, base, rng)
            assert len(f) <= 1514, kind
            if kind != "ethertype" and len(f) >= 18:
                assert tag_of(f) == (6, 9), (kind, f[:60].hex())
            model(f, "coalesce")  # never raises


def test_shards_merge_into_one_report_or_say_what_differs() -> None:
    def doc(seed: int, *labels: tuple[str, int]) -> dict:
        reports = [{"config": c, "ip_version": v} for c, v in labels]
        return {"seed": seed, "packets_per_config": 10, "versions": {"ackwise": "x"}, "reports": reports}

    merged = merge_reports([doc(1, ("off", 4)), doc(1, ("off", 6), ("acc", 6))])
    assert [label(r) for r in merged["reports"]] == ["off", "off IPv6", "acc IPv6"]
    other_commit = doc(1, ("acc", 4))
    other_commit["versions"]["ackwise"] = "y"
    assert merge_reports([doc(1, ("off", 4)), other_commit])["versions"]["ackwise"] == "x, y"
    with pytest.raises(ValueError, match="differ in seed"):
        merge_reports([doc(1, ("off", 4)), doc(2, ("off", 6))])
    with pytest.raises(ValueError, match="off IPv6 in more than one report"):
        merge_reports([doc(1, ("off", 6)), doc(1, ("off", 6))])
