"""Text <-> bytes for table keys, action parameters and register values.

Operators write IPv4 and IPv6 addresses, MAC addresses, prefixes and integers; bmv2 wants
big-endian byte strings exactly as wide as the field.
"""

from __future__ import annotations

import ipaddress
import re

from ackwise.errors import InputError

_MAC = re.compile(r"^([0-9a-fA-F]{2})(:[0-9a-fA-F]{2}){5}$")


class BadValue(InputError, ValueError):
    """A value that does not fit its field; the message names the field."""


def parse_int(text: str | int, width_bits: int, what: str) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        raw = str(text).strip()
        if width_bits == 32 and raw.count(".") == 3:
            try:
                value = int(ipaddress.IPv4Address(raw))
            except ipaddress.AddressValueError as exc:
                raise BadValue(f"{what}: {raw!r} is not an IPv4 address") from exc
        elif width_bits == 128 and ":" in raw:
            try:
                value = int(ipaddress.IPv6Address(raw))
            except ipaddress.AddressValueError as exc:
                raise BadValue(f"{what}: {raw!r} is not an IPv6 address") from exc
        elif width_bits == 48 and _MAC.match(raw):
            value = int(raw.replace(":", ""), 16)
        elif (":" in raw and width_bits != 48) or (width_bits == 128 and raw.count(".") == 3):
            # An address of the other IP version: say so, not "not a number".
            given, wanted = ("IPv6", "IPv4") if ":" in raw else ("IPv4", "IPv6")
            raise BadValue(
                f"{what}: {raw!r} is an {given} address, this field is {width_bits} bits wide"
                + (
                    f" (an {wanted} address): {given} goes in the {given} tables"
                    if width_bits in (32, 128)
                    else ""
                )
            )
        else:
            try:
                value = int(raw, 0)
            except ValueError as exc:
                raise BadValue(
                    f"{what}: {raw!r} is not a number (decimal, 0x hex"
                    + (", IPv4 address" if width_bits == 32 else "")
                    + (", IPv6 address" if width_bits == 128 else "")
                    + (", MAC address" if width_bits == 48 else "")
                    + ")"
                ) from exc
    if value < 0 or value >= 1 << width_bits:
        raise BadValue(f"{what}: {value} does not fit in {width_bits} bits")
    return value


def to_bytes(value: int, width_bits: int) -> bytes:
    return value.to_bytes((width_bits + 7) // 8, "big")


def from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "big")


def parse_prefix(text: str, width_bits: int, what: str) -> tuple[int, int]:
    """``10.0.1.0/24`` or ``2001:db8:1::/64`` -> (value, prefix length). A bare value is a
    full-length prefix."""
    if "/" in text:
        value_text, length_text = text.split("/", 1)
        try:
            length = int(length_text)
        except ValueError as exc:
            raise BadValue(f"{what}: prefix length {length_text!r} is not a number") from exc
    else:
        value_text, length = text, width_bits
    if not 0 <= length <= width_bits:
        raise BadValue(f"{what}: prefix length {length} outside 0..{width_bits}")
    value = parse_int(value_text, width_bits, what)
    host_bits = width_bits - length
    if host_bits and value & ((1 << host_bits) - 1):
        raise BadValue(f"{what}: {text} has bits set beyond the /{length} prefix")
    return value, length


def format_value(value: int, width_bits: int, name: str = "") -> str:
    """An address-like field (name says addr/mac) prints as an address, anything else as a number."""
    lowered = name.lower()
    if width_bits == 32 and "addr" in lowered:
        return str(ipaddress.IPv4Address(value))
    if width_bits == 128 and "addr" in lowered:
        return str(ipaddress.IPv6Address(value))
    if width_bits == 48 and ("mac" in lowered or "addr" in lowered):
        raw = f"{value:012x}"
        return ":".join(raw[i : i + 2] for i in range(0, 12, 2))
    return str(value)
