"""The flow key, as p4src/include/flow_key.p4 computes it: the TCP 5-tuple with both directions
mapped to one record, the lower (address, port) endpoint first, and the record's slot."""

from __future__ import annotations

import ipaddress
import zlib
from dataclasses import dataclass

from ackwise.twins.p4names import FLOW_SLOTS


@dataclass(frozen=True)
class FlowKey:
    addr_lo: int
    addr_hi: int
    port_lo: int
    port_hi: int

    @classmethod
    def of(cls, src: str, dst: str, sport: int, dport: int) -> tuple[FlowKey, int]:
        """The key of a packet from src:sport to dst:dport, and its direction (0: from the lower
        endpoint)."""
        s, d = int(ipaddress.IPv4Address(src)), int(ipaddress.IPv4Address(dst))
        if (s, sport) <= (d, dport):
            return cls(s, d, sport, dport), 0
        return cls(d, s, dport, sport), 1

    @classmethod
    def from_registers(cls, addr_lo: int, addr_hi: int, ports: int) -> FlowKey:
        """From a slot's key registers: key_a (the lower endpoint's address), key_b, and the ports."""
        return cls(addr_lo, addr_hi, ports >> 16, ports & 0xFFFF)

    @property
    def addrs(self) -> int:
        return self.addr_lo << 32 | self.addr_hi

    @property
    def ports(self) -> int:
        return self.port_lo << 16 | self.port_hi

    @property
    def slot(self) -> int:
        """bmv2's crc32 over the 12 key bytes, modulo the number of slots."""
        data = self.addrs.to_bytes(8, "big") + self.ports.to_bytes(4, "big")
        return zlib.crc32(data) % FLOW_SLOTS

    def half(self, direction: int) -> int:
        return self.slot << 1 | direction

    def endpoint(self, direction: int) -> str:
        """The sender of half-flow ``direction``, as address:port."""
        addr, port = (self.addr_lo, self.port_lo) if direction == 0 else (self.addr_hi, self.port_hi)
        return f"{ipaddress.IPv4Address(addr)}:{port}"

    def __str__(self) -> str:
        return f"{self.endpoint(0)} <> {self.endpoint(1)}"
