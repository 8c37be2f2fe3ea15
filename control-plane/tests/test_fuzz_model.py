"""The fuzzer's model of the parser behind the IPv6 EtherType (experiments/stress/fuzz.py): the
cases ptf-tests/test_ipv6_headers.py sends through bmv2, with the verdict the switch gave them."""

from __future__ import annotations

from ackwise.experiments.stress.fuzz import model_ipv6
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
    assert (m.malformed, m.tcp, m.thinnable, m.must_drop) == ("", False, False, False)  # no ACK flag
    ack = bytearray(ipv6(60, ext(6, 0)))
    ack[40 + 8 + 13] = 0x10
    assert (model_ipv6(bytes(ack), "every_d").pure_ack, model_ipv6(bytes(ack), "every_d").thinnable) == (
        True,
        True,
    )
    assert model_ipv6(bytes(ack), "off").thinnable is False  # off: a pure ACK, never thinned
    assert model_ipv6(bytes(ack), "ap_proxy").pure_ack is False  # the AP proxy leaves IPv6 alone
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
