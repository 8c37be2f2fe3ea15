"""An in-memory test double of the few SwitchClient methods the controller and ``ackwise watch``
use: whole register arrays (what read_flows reads), the policy tables, counters, the clock,
info. Not a switch: no packets, no P4; tests set the registers a switch would hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ackwise.bmv2.client import (
    CounterValue,
    DefaultAction,
    MatchValue,
    PortInfo,
    SwitchInfo,
    SwitchOperationError,
    SwitchUnreachable,
    TableEntry,
)
from ackwise.features.thinning import HALF_FIELDS, KEY6_REGISTERS, KEY_REGISTERS, TICK_US
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import (
    ACK_POLICY_TABLE_SIZE,
    FLOW_KEY_IPV6,
    FLOW_POLICY_TABLE_SIZE,
    FLOW_SLOTS,
    HALF_FLOWS,
    KEY6_WORDS,
    KEY_FLOW,
    REGISTER_ACK_THINNING_SLOT,
    TABLE_ACK_THINNING_FLOW_POLICY,
    TABLE_ACK_THINNING_FLOW_POLICY6,
    TABLE_ACK_THINNING_POLICY,
    TABLE_ACK_THINNING_POLICY6,
    TABLE_FORWARDING_IPV4_LPM,
)
from ackwise.twins.policies import POLICY_KEY_BITS

# The registers with a cell per flow slot; every other one the fake holds has one per half-flow.
SLOT_REGISTERS = (*KEY_REGISTERS, REGISTER_ACK_THINNING_SLOT)


# The policy tables, each IP version's (the key's width in bits): what ack_switch has.
POLICY_TABLES = {
    TABLE_ACK_THINNING_POLICY: POLICY_KEY_BITS[4],
    TABLE_ACK_THINNING_FLOW_POLICY: POLICY_KEY_BITS[4],
    TABLE_ACK_THINNING_POLICY6: POLICY_KEY_BITS[6],
    TABLE_ACK_THINNING_FLOW_POLICY6: POLICY_KEY_BITS[6],
}
FLOW_TABLES = (TABLE_ACK_THINNING_FLOW_POLICY, TABLE_ACK_THINNING_FLOW_POLICY6)


def _ternary(field_name: str, text: str, width: int) -> MatchValue:
    value, _, mask = text.partition("&&&")
    return MatchValue(field_name, "ternary", width, int(value, 0), mask=int(mask, 0))


def _exact(field_name: str, text: str, width: int) -> MatchValue:
    return MatchValue(field_name, "exact", width, int(text, 0))


def _empty_tables() -> dict[str, dict[int, TableEntry]]:
    return {**{table: {} for table in POLICY_TABLES}, TABLE_FORWARDING_IPV4_LPM: {}}


@dataclass
class Half:
    """The registers of one half-flow, by HalfFlow field name (plus the fields being added)."""

    values: dict[str, int] = field(default_factory=dict)


class FakeSwitchClient:
    def __init__(self, host: str = "localhost", thrift_port: int = 9090) -> None:
        self.host = host
        self.thrift_port = thrift_port
        self.uptime_us = 1_000_000
        self.registers: dict[str, list[int]] = {}
        self.entries = _empty_tables()
        self.default: dict[str, DefaultAction] = {}
        self.counters: dict[tuple[str, int], int] = {}
        self.ports = (PortInfo(1, "veth1", True), PortInfo(2, "veth2", True))
        self._next_handle: dict[str, int] = {}  # per table, as bmv2's handles
        self.writes: list[tuple[str, Any]] = []  # ("add" | "modify" | "delete", detail)
        self.dumps: list[str] = []  # the tables dumped, in order
        self.reachable = True
        self.closed = False

    # ---- what tests set ----

    def set_flow(
        self,
        src: str,
        sport: int,
        dst: str,
        dport: int,
        *,
        closed: bool = False,
        last_seen_us: int = 0,
        **halves: Mapping[str, int],
    ) -> FlowKey:
        """A flow record; ``data`` holds the src's half-flow registers (it sends the data), ``acks``
        the dst's (it sends the ACKs), by HalfFlow field name, e.g. ``data={"data_end": ...}``."""
        key, direction = FlowKey.of(src, dst, sport, dport)
        slot = key.slot
        if key.version == 6:  # as ack_switch's take_over6: the marker, and the addresses' words
            self._array(KEY_REGISTERS[0], FLOW_SLOTS)[slot] = FLOW_KEY_IPV6
            self._array(KEY_REGISTERS[1], FLOW_SLOTS)[slot] = 0
            for register, address in zip(KEY6_REGISTERS, (key.addr_lo, key.addr_hi), strict=True):
                words = self._array(register, FLOW_SLOTS * KEY6_WORDS)
                for i in range(KEY6_WORDS):
                    words[slot * KEY6_WORDS + i] = address >> 32 * (KEY6_WORDS - 1 - i) & 0xFFFFFFFF
        else:
            self._array(KEY_REGISTERS[0], FLOW_SLOTS)[slot] = key.addr_lo
            self._array(KEY_REGISTERS[1], FLOW_SLOTS)[slot] = key.addr_hi
        ticks = (last_seen_us // TICK_US) & (2**30 - 1)
        self._array(REGISTER_ACK_THINNING_SLOT, FLOW_SLOTS)[slot] = key.ports << 31 | ticks << 1 | int(closed)
        for role, values in halves.items():
            half = key.half(direction if role == "data" else 1 - direction)
            for name, value in values.items():
                # Packed as the switch packs it (thinning.HALF_FIELDS: register, msb, lsb).
                register, msb, lsb = HALF_FIELDS.get(name, (f"fake.{name}", 63, 0))
                mask = ((1 << (msb - lsb + 1)) - 1) << lsb
                cells = self._array(register, HALF_FLOWS)
                cells[half] = cells[half] & ~mask | (value << lsb) & mask
        return key

    def drop_flow(self, src: str, sport: int, dst: str, dport: int) -> None:
        key, _ = FlowKey.of(src, dst, sport, dport)
        for register in SLOT_REGISTERS:
            self._array(register, FLOW_SLOTS)[key.slot] = 0

    def restart(self) -> None:
        """As a restarted simple_switch: tables empty, registers zero, the clock from 0."""
        self.uptime_us = 0
        self.registers.clear()
        self.entries = _empty_tables()
        self._next_handle.clear()
        self.counters.clear()

    def _array(self, name: str, size: int) -> list[int]:
        return self.registers.setdefault(name, [0] * size)

    def _handle(self, table: str) -> int:
        handle = self._next_handle.get(table, 0)
        self._next_handle[table] = handle + 1
        return handle

    def _check(self) -> None:
        if not self.reachable:
            raise SwitchUnreachable(f"no switch answers on Thrift port {self.host}:{self.thrift_port}")

    # ---- the SwitchClient methods used ----

    def connect(self) -> FakeSwitchClient:
        self._check()
        return self

    def close(self) -> None:
        self.closed = True

    def time_elapsed_us(self) -> int:
        self._check()
        return self.uptime_us

    def info(self) -> SwitchInfo:
        self._check()
        return SwitchInfo(self.host, self.thrift_port, 0, "fake", self.ports, self.uptime_us)

    @property
    def program(self) -> Any:
        """The names a program declares, as far as the controller asks: no queue model."""
        from types import SimpleNamespace

        return SimpleNamespace(
            tables={**{table: None for table in POLICY_TABLES}, TABLE_FORWARDING_IPV4_LPM: None},
            registers={name: None for name in (*SLOT_REGISTERS, *self.registers)},
        )

    def register_read_all(self, name: str) -> list[int]:
        self._check()
        size = FLOW_SLOTS if name in SLOT_REGISTERS else HALF_FLOWS
        size = FLOW_SLOTS * KEY6_WORDS if name in KEY6_REGISTERS else size
        return list(self.registers.get(name, [0] * size))

    def counter_read(self, name: str, index: int) -> CounterValue:
        self._check()
        return CounterValue(self.counters.get((name, index), 0), 0)

    def table_add(
        self,
        table: str,
        action: str,
        key: Mapping[str, str],
        params: Mapping[str, int] | Sequence[Any] = (),
        priority: int | None = None,
    ) -> int:
        self._check()
        entries = self.entries.setdefault(table, {})
        size = FLOW_POLICY_TABLE_SIZE if table in FLOW_TABLES else ACK_POLICY_TABLE_SIZE
        if table in POLICY_TABLES and len(entries) >= size:
            raise SwitchOperationError(f"adding an entry to {table} failed: TABLE_FULL")
        exact = table in FLOW_TABLES
        width = POLICY_TABLES.get(table, POLICY_KEY_BITS[4])
        match = ((_exact if exact else _ternary)(KEY_FLOW, key[KEY_FLOW], width),)
        if any(e.key == match and e.priority == priority for e in entries.values()):
            raise SwitchOperationError(f"adding an entry to {table} failed: DUPLICATE_ENTRY")
        handle = self._handle(table)
        entries[handle] = TableEntry(table, handle, match, action, dict(params), priority)  # type: ignore[arg-type]
        self.writes.append(("add", handle))
        return handle

    def table_modify(self, table: str, handle: int, action: str, params: Mapping[str, int]) -> None:
        self._check()
        entry = self.entries[table].get(handle)
        if entry is None:
            raise SwitchOperationError(f"modifying entry {handle} of {table} failed: INVALID_HANDLE")
        self.entries[table][handle] = TableEntry(
            table, handle, entry.key, action, dict(params), entry.priority
        )
        self.writes.append(("modify", handle))

    def table_delete(self, table: str, handle: int) -> None:
        self._check()
        if self.entries[table].pop(handle, None) is None:
            raise SwitchOperationError(f"deleting entry {handle} of {table} failed: INVALID_HANDLE")
        self.writes.append(("delete", handle))

    def table_num_entries(self, table: str) -> int:
        self._check()
        return len(self.entries.get(table, {}))

    def table_entries(self, table: str) -> list[TableEntry]:
        self._check()
        self.dumps.append(table)
        return sorted(self.entries.get(table, {}).values(), key=lambda e: e.handle)

    def table_default(self, table: str) -> DefaultAction:
        self._check()
        return self.default.get(table, DefaultAction(table, None, {}))
