import pytest

from ackwise.bmv2.values import BadValue, format_value, parse_int, parse_prefix, to_bytes


def test_parse_int_forms() -> None:
    assert parse_int("10", 9, "port") == 10
    assert parse_int("0x1ff", 9, "port") == 511
    assert parse_int(7, 9, "port") == 7
    assert parse_int("10.0.2.1", 32, "addr") == 0x0A000201
    assert parse_int("00:00:00:00:02:fe", 48, "mac") == 0x2FE
    assert parse_int("2001:db8::2:1", 128, "addr") == 0x20010DB8_00000000_00000000_00020001


@pytest.mark.parametrize(
    ("text", "width", "fragment"),
    [
        ("512", 9, "does not fit in 9 bits"),
        ("-1", 8, "does not fit"),
        ("ten", 8, "not a number"),
        ("10.0.0.300", 32, "not an IPv4 address"),
        ("2001:db8::g", 128, "not an IPv6 address"),
        (
            "2001:db8::1",
            32,
            "an IPv6 address, this field is 32 bits wide .an IPv4 address.: IPv6 goes in the IPv6 tables",
        ),
        (
            "10.0.0.1",
            128,
            "an IPv4 address, this field is 128 bits wide .an IPv6 address.: IPv4 goes in the IPv4 tables",
        ),
    ],
)
def test_parse_int_rejects(text: str, width: int, fragment: str) -> None:
    with pytest.raises(BadValue, match=fragment):
        parse_int(text, width, "field")


def test_parse_prefix() -> None:
    assert parse_prefix("10.0.1.0/24", 32, "dst") == (0x0A000100, 24)
    assert parse_prefix("10.0.1.7", 32, "dst") == (0x0A000107, 32)
    assert parse_prefix("0.0.0.0/0", 32, "dst") == (0, 0)
    with pytest.raises(BadValue, match="beyond the /24 prefix"):
        parse_prefix("10.0.1.1/24", 32, "dst")
    with pytest.raises(BadValue, match=r"outside 0\.\.32"):
        parse_prefix("10.0.1.0/33", 32, "dst")
    assert parse_prefix("2001:db8:1::/64", 128, "dst") == (0x20010DB8_00010000 << 64, 64)
    assert parse_prefix("::/0", 128, "dst") == (0, 0)
    with pytest.raises(BadValue, match="beyond the /64 prefix"):
        parse_prefix("2001:db8:1::1/64", 128, "dst")


def test_bytes_are_big_endian_and_field_wide() -> None:
    assert to_bytes(1, 9) == b"\x00\x01"
    assert to_bytes(0x0A000201, 32) == b"\x0a\x00\x02\x01"


def test_format_value_prints_addresses_only_for_address_fields() -> None:
    assert format_value(0x0A000201, 32, "dst_addr") == "10.0.2.1"
    assert format_value(0x0A000201, 32, "seq_no") == str(0x0A000201)
    assert format_value(0x2FE, 48, "src_mac") == "00:00:00:00:02:fe"
    assert format_value(0x20010DB8 << 96 | 1, 128, "dst_addr") == "2001:db8::1"
    assert format_value(5, 128, "flow") == "5"
