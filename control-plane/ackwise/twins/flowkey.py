"""The flow key, as p4src/include/flow_key.p4 computes it: the TCP 5-tuple with both directions
mapped to one record, the lower (address, port) endpoint first, and the record's slot.

IPv4 and IPv6 flows share the slots: an IPv4 key is 12 bytes (two 4-byte addresses, two ports),
an IPv6 key 36 (two 16-byte addresses, two ports), and the slot is the crc32 of those bytes. The
addresses are compared as unsigned numbers of the family's width, so the endpoint that comes first
is the same one the P4 puts first."""

from __future__ import annotations

import ipaddress
import zlib
from dataclasses import dataclass

from ackwise.twins.p4names import FLOW_SLOTS, KEY6_WORDS

ADDR_BYTES = {4: 4, 6: 16}  # the bytes of an address of each IP version


def format_endpoint(address: int, port: int, version: int) -> str:
    """``10.0.1.1:5001``; ``[2001:db8::1]:5001`` for IPv6, as URLs write it."""
    if version == 6:
        return f"[{ipaddress.IPv6Address(address)}]:{port}"
    return f"{ipaddress.IPv4Address(address)}:{port}"


def address6(words: list[int], slot: int) -> int:
    """An IPv6 address from the KEY6_WORDS 32-bit words the P4 keeps of it for the control plane at
    slot * KEY6_WORDS, the highest first (ack_thinning.key6_a/_b, ap.key6_a/_b)."""
    value = 0
    for i in range(KEY6_WORDS):
        value = value << 32 | words[slot * KEY6_WORDS + i] & 0xFFFFFFFF
    return value


@dataclass(frozen=True)
class FlowKey:
    addr_lo: int
    addr_hi: int
    port_lo: int
    port_hi: int
    version: int = 4  # the IP version of both addresses

    @classmethod
    def of(cls, src: str, dst: str, sport: int, dport: int) -> tuple[FlowKey, int]:
        """The key of a packet from src:sport to dst:dport, and its direction (0: from the lower
        endpoint). Addresses of either IP version, both the same."""
        a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
        if a.version != b.version:
            raise ValueError(f"{src} and {dst}: one flow's addresses must be of one IP version")
        s, d, version = int(a), int(b), a.version
        if (s, sport) <= (d, dport):
            return cls(s, d, sport, dport, version), 0
        return cls(d, s, dport, sport, version), 1

    @classmethod
    def from_registers(cls, addr_lo: int, addr_hi: int, ports: int, version: int = 4) -> FlowKey:
        """From a slot's key: the lower endpoint's address, the other's, and the ports."""
        return cls(addr_lo, addr_hi, ports >> 16, ports & 0xFFFF, version)

    @property
    def addr_bytes(self) -> int:
        return ADDR_BYTES[self.version]

    @property
    def addrs(self) -> int:
        return self.addr_lo << (8 * self.addr_bytes) | self.addr_hi

    @property
    def ports(self) -> int:
        return self.port_lo << 16 | self.port_hi

    @property
    def key_bytes(self) -> bytes:
        """What the P4 hashes: both addresses, then both ports (12 bytes for IPv4, 36 for IPv6)."""
        return self.addrs.to_bytes(2 * self.addr_bytes, "big") + self.ports.to_bytes(4, "big")

    @property
    def slot(self) -> int:
        """bmv2's crc32 over the key bytes, modulo the number of slots."""
        return zlib.crc32(self.key_bytes) % FLOW_SLOTS

    def half(self, direction: int) -> int:
        return self.slot << 1 | direction

    def endpoint(self, direction: int) -> str:
        """The sender of half-flow ``direction``, as address:port ([address]:port for IPv6)."""
        addr, port = (self.addr_lo, self.port_lo) if direction == 0 else (self.addr_hi, self.port_hi)
        return format_endpoint(addr, port, self.version)

    def __str__(self) -> str:
        return f"{self.endpoint(0)} <> {self.endpoint(1)}"
