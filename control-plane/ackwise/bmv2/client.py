"""A typed client for bmv2's Thrift runtime (simple_switch).

Every call goes through one connection to host:port. Errors a user can hit come out as
``SwitchError`` subclasses whose message names the switch and what to do; nothing from Thrift
leaks to the caller.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any, TypeVar

from ackwise.bmv2.program import Program, Table, UnknownName
from ackwise.bmv2.toolchain import ensure_bmv2_bindings
from ackwise.bmv2.values import BadValue, format_value, from_bytes, parse_int, parse_prefix, to_bytes
from ackwise.errors import InputError

T = TypeVar("T")
DEFAULT_THRIFT_PORT = 9090


class SwitchError(RuntimeError):
    """An operation on a switch failed; str() is one line fit for an operator."""


class SwitchUnreachable(SwitchError):
    pass


class SwitchOperationError(SwitchError):
    pass


class SwitchInputError(SwitchOperationError, InputError):
    """The request names something the loaded program does not have, or a value that does not
    fit: refused before anything is sent to the switch."""


# Thrift's types for what the CLI and files give: entry handles, ports and session ids are i32,
# register cells are indexed by i32 (bmv2's Thrift: "i32 index"); mirroring session ids stop at
# 2^15 - 1 in simple_switch (RegisterAccess::MAX_MIRROR_SESSION_ID), ports at 511 (9-bit
# egress_spec), queue rates and depths are i64/i32.
I32_MAX = 2**31 - 1
MAX_MIRROR_SESSION = 2**15 - 1
MAX_PORT = 511


def check_range(what: str, value: int, lo: int, hi: int, hint: str = "") -> int:
    """``value`` if lo <= value <= hi, else a SwitchInputError naming ``what`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise SwitchInputError(f"{what}={value}: must be {lo}..{hi}{hint}")
    return value


# ---- typed results ----


@dataclass(frozen=True)
class MatchValue:
    """One key field of an entry: value plus prefix length (lpm), mask (ternary) or end (range)."""

    field: str
    match_type: str
    width_bits: int
    value: int
    prefix_len: int | None = None
    mask: int | None = None
    end: int | None = None

    def __str__(self) -> str:
        text = format_value(self.value, self.width_bits, self.field)
        if self.match_type == "lpm":
            return f"{text}/{self.prefix_len}"
        if self.match_type == "ternary":
            return f"{text}&&&{format_value(self.mask or 0, self.width_bits, self.field)}"
        if self.match_type == "range":
            return f"{text}->{format_value(self.end or 0, self.width_bits, self.field)}"
        return text


@dataclass(frozen=True)
class TableEntry:
    table: str
    handle: int
    key: tuple[MatchValue, ...]
    action: str
    params: dict[str, int]
    priority: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "handle": self.handle,
            "key": {m.field: str(m) for m in self.key},
            "action": self.action,
            "params": self.params,
            "priority": self.priority,
        }


@dataclass(frozen=True)
class DefaultAction:
    table: str
    action: str | None
    params: dict[str, int]


@dataclass(frozen=True)
class CounterValue:
    packets: int
    bytes: int


def named_cells(cells: Sequence[CounterValue], names: type[IntEnum]) -> dict[str, int]:
    """Packets per cell of a counter read whole (``counter_read_all``: as many cells as the running
    program declares), keyed by the lower-case name of the enum member for that index (the
    generated ackwise.twins.p4names); a cell the enum does not name, as ``cell_<index>``."""
    known = {member.value: member.name.lower() for member in names}
    return {known.get(i, f"cell_{i}"): c.packets for i, c in enumerate(cells)}


@dataclass(frozen=True)
class PortInfo:
    port: int
    interface: str
    up: bool


@dataclass(frozen=True)
class SwitchInfo:
    host: str
    thrift_port: int
    device_id: int
    config_md5: str
    ports: tuple[PortInfo, ...]
    time_elapsed_us: int


class SwitchClient:
    """One simple_switch, reached over its Thrift port."""

    def __init__(
        self, host: str = "localhost", thrift_port: int = DEFAULT_THRIFT_PORT, timeout_s: float = 10.0
    ) -> None:
        self.host = host
        self.thrift_port = thrift_port
        self.timeout_s = timeout_s
        self._transport: Any = None
        self._standard: Any = None
        self._sswitch: Any = None
        self._pre: Any = None
        self._program: Program | None = None

    @property
    def where(self) -> str:
        return f"{self.host}:{self.thrift_port}"

    # ---- connection ----

    def connect(self) -> SwitchClient:
        # Checked before the bindings are needed, so this error names the port in any case.
        if not port_answers(self.host, self.thrift_port):
            raise SwitchUnreachable(
                f"no switch answers on Thrift port {self.where}: start one "
                f"('ackwise switch start') or pass the right --thrift-port"
            )
        ensure_bmv2_bindings()
        from bm_runtime.simple_pre_lag import SimplePreLAG
        from bm_runtime.standard import Standard
        from sswitch_runtime import SimpleSwitch
        from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
        from thrift.transport import TSocket, TTransport

        sock = TSocket.TSocket(self.host, self.thrift_port)
        sock.setTimeout(int(self.timeout_s * 1000))
        transport = TTransport.TBufferedTransport(sock)
        protocol = TBinaryProtocol.TBinaryProtocol(transport)
        try:
            transport.open()
        except TTransport.TTransportException as exc:
            raise SwitchUnreachable(
                f"no switch answers on Thrift port {self.where}: start one "
                f"('ackwise switch start') or pass the right --thrift-port"
            ) from exc
        self._transport = transport
        self._standard = Standard.Client(TMultiplexedProtocol.TMultiplexedProtocol(protocol, "standard"))
        self._pre = SimplePreLAG.Client(TMultiplexedProtocol.TMultiplexedProtocol(protocol, "simple_pre_lag"))
        self._sswitch = SimpleSwitch.Client(
            TMultiplexedProtocol.TMultiplexedProtocol(protocol, "simple_switch")
        )
        return self

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def __enter__(self) -> SwitchClient:
        return self.connect() if self._transport is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        if self._transport is None:
            self.connect()
        from thrift.Thrift import TException
        from thrift.transport.TTransport import TTransportException

        try:
            return fn()
        except (TimeoutError, TTransportException, OSError) as exc:
            self.close()
            raise SwitchUnreachable(
                f"switch on Thrift port {self.where} stopped answering during {what}: "
                "check that simple_switch is still running ('ackwise switch status')"
            ) from exc
        except TException as exc:
            problem = _describe(exc)
            hint = _HINTS.get(problem, "")
            # A handle, key or session that does not exist is the user's to fix, like an unknown
            # name; a full table or a duplicate key is a valid request the switch's state refuses.
            kind = SwitchInputError if problem in _INPUT_PROBLEMS else SwitchOperationError
            raise kind(f"{what} failed on {self.where}: {problem}{hint}") from exc

    # ---- program ----

    @property
    def program(self) -> Program:
        if self._program is None:
            text = self._call("reading the program", lambda: self._standard.bm_get_config())
            self._program = Program.from_json(text)
        return self._program

    def info(self) -> SwitchInfo:
        cfg = self._call("reading switch info", lambda: self._standard.bm_mgmt_get_info())
        md5 = self._call("reading program md5", lambda: self._standard.bm_get_config_md5())
        ports = self._call("listing ports", lambda: self._standard.bm_dev_mgr_show_ports())
        elapsed = self._call("reading the clock", lambda: self._sswitch.get_time_elapsed_us())
        return SwitchInfo(
            host=self.host,
            thrift_port=self.thrift_port,
            device_id=cfg.device_id,
            config_md5=md5.hex() if isinstance(md5, bytes) else str(md5),
            ports=tuple(
                sorted((PortInfo(p.port_num, p.iface_name, p.is_up) for p in ports), key=lambda p: p.port)
            ),
            time_elapsed_us=elapsed,
        )

    def load_program(self, json_path: str | Path) -> None:
        """Swap the running program for another; its tables start empty and registers at zero."""
        try:
            text = Path(json_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SwitchInputError(
                f"{json_path}: cannot read it ({getattr(exc, 'strerror', None) or 'not UTF-8 text'}): "
                "give a program compiled by p4c-bm2-ss, e.g. build/ack_switch.json"
            ) from exc
        try:
            Program.from_json(text)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SwitchInputError(f"{json_path} is not a bmv2 program JSON (from p4c-bm2-ss)") from exc
        self._call("loading the new program", lambda: self._standard.bm_load_new_config(text))
        self._call("swapping to the new program", lambda: self._standard.bm_swap_configs())
        self._program = None

    # ---- tables ----

    def _table(self, name: str) -> Table:
        try:
            return self.program.table(name)
        except UnknownName as exc:
            raise SwitchInputError(str(exc)) from exc

    def _match_params(self, table: Table, key: Sequence[str] | Mapping[str, str]) -> list[Any]:
        from bm_runtime.standard.ttypes import (
            BmMatchParam,
            BmMatchParamExact,
            BmMatchParamLPM,
            BmMatchParamRange,
            BmMatchParamTernary,
            BmMatchParamType,
            BmMatchParamValid,
        )

        values = _bind(f"key of {table.name}", [k.name for k in table.key], key)
        params = []
        for kf, text in zip(table.key, values, strict=True):
            what = f"{table.name} key {kf.name}"
            w = kf.width_bits
            try:
                if kf.match_type == "exact":
                    params.append(
                        BmMatchParam(
                            type=BmMatchParamType.EXACT,
                            exact=BmMatchParamExact(to_bytes(parse_int(text, w, what), w)),
                        )
                    )
                elif kf.match_type == "lpm":
                    value, length = parse_prefix(text, w, what)
                    params.append(
                        BmMatchParam(
                            type=BmMatchParamType.LPM, lpm=BmMatchParamLPM(to_bytes(value, w), length)
                        )
                    )
                elif kf.match_type == "ternary":
                    value_text, _, mask_text = text.partition("&&&")
                    mask = parse_int(mask_text, w, what) if mask_text else (1 << w) - 1
                    params.append(
                        BmMatchParam(
                            type=BmMatchParamType.TERNARY,
                            ternary=BmMatchParamTernary(
                                to_bytes(parse_int(value_text, w, what), w), to_bytes(mask, w)
                            ),
                        )
                    )
                elif kf.match_type == "range":
                    lo_text, _, hi_text = text.partition("->")
                    lo = parse_int(lo_text, w, what)
                    hi = parse_int(hi_text, w, what) if hi_text else lo
                    params.append(
                        BmMatchParam(
                            type=BmMatchParamType.RANGE,
                            range=BmMatchParamRange(to_bytes(lo, w), to_bytes(hi, w)),
                        )
                    )
                elif kf.match_type == "valid":
                    params.append(
                        BmMatchParam(
                            type=BmMatchParamType.VALID,
                            valid=BmMatchParamValid(parse_int(text, 1, what) == 1),
                        )
                    )
                else:
                    raise SwitchInputError(f"{what}: match type {kf.match_type} not supported")
            except BadValue as exc:
                raise SwitchInputError(str(exc)) from exc
        return params

    def _action_data(
        self,
        table: Table,
        action: str,
        params: Sequence[str | int] | Mapping[str, str | int],
        program: Program | None = None,
    ) -> tuple[str, list[bytes]]:
        """The action's full name and its parameters as bytes; ``program`` checks them against
        another program than the running one (a file that will swap it in)."""
        try:
            act = (program or self.program).action(table, action)
        except UnknownName as exc:
            raise SwitchInputError(str(exc)) from exc
        values = _bind(f"parameters of {act.name}", [p.name for p in act.params], params)
        try:
            data = [
                to_bytes(parse_int(v, p.width_bits, f"{act.name} parameter {p.name}"), p.width_bits)
                for p, v in zip(act.params, values, strict=True)
            ]
        except BadValue as exc:
            raise SwitchInputError(str(exc)) from exc
        return act.name, data

    def table_add(
        self,
        table: str,
        action: str,
        key: Sequence[str] | Mapping[str, str],
        params: Sequence[str | int] | Mapping[str, str | int] = (),
        priority: int | None = None,
    ) -> int:
        from bm_runtime.standard.ttypes import BmAddEntryOptions

        t = self._table(table)
        match = self._match_params(t, key)
        act, data = self._action_data(t, action, params)
        if priority is not None:
            check_range("priority", priority, 0, I32_MAX)
        if t.needs_priority and priority is None:
            raise SwitchInputError(f"{t.name} has ternary or range keys: give a priority (--priority N)")
        options = BmAddEntryOptions(priority=priority) if priority is not None else BmAddEntryOptions()
        return self._call(
            f"adding an entry to {t.name}",
            lambda: self._standard.bm_mt_add_entry(0, t.name, match, act, data, options),
        )

    def table_modify(
        self, table: str, handle: int, action: str, params: Sequence[str | int] | Mapping[str, str | int] = ()
    ) -> None:
        t = self._table(table)
        check_range("handle", handle, 0, I32_MAX)
        act, data = self._action_data(t, action, params)
        self._call(
            f"modifying entry {handle} of {t.name}",
            lambda: self._standard.bm_mt_modify_entry(0, t.name, handle, act, data),
        )

    def table_delete(self, table: str, handle: int) -> None:
        t = self._table(table)
        check_range("handle", handle, 0, I32_MAX)
        self._call(
            f"deleting entry {handle} of {t.name}",
            lambda: self._standard.bm_mt_delete_entry(0, t.name, handle),
        )

    def table_delete_by_key(
        self, table: str, key: Sequence[str] | Mapping[str, str], priority: int | None = None
    ) -> int:
        from bm_runtime.standard.ttypes import BmAddEntryOptions

        t = self._table(table)
        match = self._match_params(t, key)
        if priority is not None:
            check_range("priority", priority, 0, I32_MAX)
        options = BmAddEntryOptions(priority=priority) if priority is not None else BmAddEntryOptions()
        entry = self._call(
            f"looking up a key in {t.name}",
            lambda: self._standard.bm_mt_get_entry_from_key(0, t.name, match, options),
        )
        self.table_delete(t.name, entry.entry_handle)
        return int(entry.entry_handle)

    def table_set_default(
        self, table: str, action: str, params: Sequence[str | int] | Mapping[str, str | int] = ()
    ) -> None:
        t = self._table(table)
        if t.const_default:
            raise SwitchInputError(
                f"{t.name} has a const default action set by the P4 program: it cannot be changed"
            )
        act, data = self._action_data(t, action, params)
        self._call(
            f"setting the default action of {t.name}",
            lambda: self._standard.bm_mt_set_default_action(0, t.name, act, data),
        )

    def table_reset_default(self, table: str) -> None:
        """Back to the default action the P4 program declares."""
        t = self._table(table)
        self._call(
            f"resetting the default action of {t.name}",
            lambda: self._standard.bm_mt_reset_default_entry(0, t.name),
        )

    def table_clear(self, table: str) -> None:
        t = self._table(table)
        self._call(f"clearing {t.name}", lambda: self._standard.bm_mt_clear_entries(0, t.name, False))

    def table_num_entries(self, table: str) -> int:
        """How many entries the table holds: one Thrift call, whatever their number (a dump of
        thousands takes hundreds of milliseconds)."""
        t = self._table(table)
        return int(
            self._call(
                f"counting the entries of {t.name}", lambda: self._standard.bm_mt_get_num_entries(0, t.name)
            )
        )

    def table_entries(self, table: str) -> list[TableEntry]:
        t = self._table(table)
        raw = self._call(f"dumping {t.name}", lambda: self._standard.bm_mt_get_entries(0, t.name))
        return sorted((self._entry(t, e) for e in raw), key=lambda e: e.handle)

    def table_default(self, table: str) -> DefaultAction:
        t = self._table(table)
        raw = self._call(
            f"reading the default of {t.name}", lambda: self._standard.bm_mt_get_default_entry(0, t.name)
        )
        if not raw.action_name:
            return DefaultAction(t.name, None, {})
        return DefaultAction(t.name, raw.action_name, self._params_of(raw.action_name, raw.action_data))

    def _params_of(self, action: str, data: Sequence[bytes]) -> dict[str, int]:
        act = self.program.actions[action]
        return {p.name: from_bytes(d) for p, d in zip(act.params, data or [], strict=False)}

    def _entry(self, t: Table, e: Any) -> TableEntry:
        key = []
        for kf, mp in zip(t.key, e.match_key, strict=True):
            if kf.match_type == "exact":
                key.append(MatchValue(kf.name, "exact", kf.width_bits, from_bytes(mp.exact.key)))
            elif kf.match_type == "lpm":
                key.append(
                    MatchValue(
                        kf.name, "lpm", kf.width_bits, from_bytes(mp.lpm.key), prefix_len=mp.lpm.prefix_length
                    )
                )
            elif kf.match_type == "ternary":
                key.append(
                    MatchValue(
                        kf.name,
                        "ternary",
                        kf.width_bits,
                        from_bytes(mp.ternary.key),
                        mask=from_bytes(mp.ternary.mask),
                    )
                )
            elif kf.match_type == "range":
                key.append(
                    MatchValue(
                        kf.name,
                        "range",
                        kf.width_bits,
                        from_bytes(mp.range.start),
                        end=from_bytes(mp.range.end_),
                    )
                )
            else:
                key.append(MatchValue(kf.name, kf.match_type, 1, int(bool(mp.valid.key))))
        action = e.action_entry.action_name
        priority = e.options.priority if e.options is not None and t.needs_priority else None
        return TableEntry(
            t.name,
            e.entry_handle,
            tuple(key),
            action,
            self._params_of(action, e.action_entry.action_data),
            priority,
        )

    # ---- registers ----

    def register_read(self, name: str, index: int) -> int:
        reg = self._register(name)
        self._check_index(reg.name, index, reg.size)
        value = self._call(
            f"reading {reg.name}[{index}]", lambda: self._standard.bm_register_read(0, reg.name, index)
        )
        return value & ((1 << reg.width_bits) - 1)

    def register_read_all(self, name: str) -> list[int]:
        reg = self._register(name)
        values = self._call(f"reading {reg.name}", lambda: self._standard.bm_register_read_all(0, reg.name))
        mask = (1 << reg.width_bits) - 1
        return [v & mask for v in values]

    def register_write(self, name: str, index: int, value: int) -> None:
        reg = self._register(name)
        self._check_index(reg.name, index, reg.size)
        if not 0 <= value < 1 << reg.width_bits:
            raise SwitchInputError(
                f"value {value} does not fit {reg.name}: give 0..{(1 << reg.width_bits) - 1} "
                f"({reg.width_bits} bits)"
            )
        self._call(
            f"writing {reg.name}[{index}]",
            lambda: self._standard.bm_register_write(0, reg.name, index, _as_i64(value)),
        )

    def register_write_range(self, name: str, start: int, end: int, value: int) -> None:
        """Write ``value`` into cells start..end (inclusive)."""
        reg = self._register(name)
        self._check_index(reg.name, start, reg.size)
        self._check_index(reg.name, end, reg.size)
        self._call(
            f"writing {reg.name}[{start}..{end}]",
            lambda: self._standard.bm_register_write_range(0, reg.name, start, end, _as_i64(value)),
        )

    def register_reset(self, name: str) -> None:
        reg = self._register(name)
        self._call(f"resetting {reg.name}", lambda: self._standard.bm_register_reset(0, reg.name))

    def _register(self, name: str) -> Any:
        try:
            return self.program.register(name)
        except UnknownName as exc:
            raise SwitchInputError(str(exc)) from exc

    # ---- counters ----

    def counter_read(self, name: str, index: int) -> CounterValue:
        ctr = self._counter(name)
        self._check_index(ctr.name, index, ctr.size)
        raw = self._call(
            f"reading {ctr.name}[{index}]", lambda: self._standard.bm_counter_read(0, ctr.name, index)
        )
        return CounterValue(packets=raw.packets, bytes=raw.bytes)

    def counter_read_all(self, name: str) -> list[CounterValue]:
        ctr = self._counter(name)
        return [self.counter_read(ctr.name, i) for i in range(ctr.size)]

    def counter_reset(self, name: str) -> None:
        ctr = self._counter(name)
        self._call(f"resetting {ctr.name}", lambda: self._standard.bm_counter_reset_all(0, ctr.name))

    def _counter(self, name: str) -> Any:
        try:
            return self.program.counter(name)
        except UnknownName as exc:
            raise SwitchInputError(str(exc)) from exc

    @staticmethod
    def _check_index(name: str, index: int, size: int) -> None:
        if not 0 <= index < size:
            raise SwitchInputError(f"index {index} outside {name}[0..{size - 1}]: give 0..{size - 1}")

    # ---- mirroring ----

    def mirroring_add(self, session: int, egress_port: int) -> None:
        from sswitch_runtime.ttypes import MirroringSessionConfig

        check_range("session", session, 0, MAX_MIRROR_SESSION)
        check_range("port", egress_port, 0, MAX_PORT)
        cfg = MirroringSessionConfig(port=egress_port)
        self._call(
            f"adding mirroring session {session}", lambda: self._sswitch.mirroring_session_add(session, cfg)
        )

    def mirroring_delete(self, session: int) -> None:
        check_range("session", session, 0, MAX_MIRROR_SESSION)
        self._call(
            f"deleting mirroring session {session}", lambda: self._sswitch.mirroring_session_delete(session)
        )

    def mirroring_get(self, session: int) -> int:
        check_range("session", session, 0, MAX_MIRROR_SESSION)
        cfg = self._call(
            f"reading mirroring session {session}", lambda: self._sswitch.mirroring_session_get(session)
        )
        return int(cfg.port)

    # ---- multicast ----

    def mc_groups(self) -> dict[int, list[tuple[int, int]]]:
        """Every multicast group: id -> sorted (rid, port) copies."""
        doc = json.loads(self.mc_entries())
        l2_ports = {n["handle"]: n["ports"] for n in doc.get("l2_handles", [])}
        l1 = {n["handle"]: (n["rid"], l2_ports.get(n["l2_handle"], [])) for n in doc.get("l1_handles", [])}
        groups: dict[int, list[tuple[int, int]]] = {}
        for g in doc.get("mgrps", []):
            copies = [
                (rid, port) for h in g.get("l1_handles", []) for rid, ports in [l1[h]] for port in ports
            ]
            groups[int(g["id"])] = sorted(copies)
        return groups

    def mc_group_delete(self, group: int) -> None:
        """Remove multicast group ``group`` and its nodes; nothing if there is none."""
        doc = json.loads(self.mc_entries())
        # simple_pre hands out the group id itself as the group's handle (McSimplePre::mc_mgrp_create).
        for g in doc.get("mgrps", []):
            if int(g["id"]) != group:
                continue
            for node in g.get("l1_handles", []):
                self._call(
                    f"removing a node from multicast group {group}",
                    lambda node=node: self._pre.bm_mc_node_dissociate(0, group, node),
                )
                self._call(
                    f"destroying a multicast node of group {group}",
                    lambda node=node: self._pre.bm_mc_node_destroy(0, node),
                )
            self._call(f"destroying multicast group {group}", lambda: self._pre.bm_mc_mgrp_destroy(0, group))

    def mc_group_set(self, group: int, replicas: Sequence[tuple[int, int]]) -> None:
        """Make multicast group ``group`` hold exactly one copy per (rid, port). Creating it again
        with the same copies changes nothing; with other copies it replaces them (bmv2 itself
        would add a second set of nodes: every packet would go out twice)."""
        wanted = sorted((int(rid), int(port)) for rid, port in replicas)
        existing = self.mc_groups()
        if existing.get(group) == wanted:
            return
        if group in existing:
            self.mc_group_delete(group)
        handle = self._call(
            f"creating multicast group {group}", lambda: self._pre.bm_mc_mgrp_create(0, group)
        )
        for rid, port in replicas:
            port_map = "1" + "0" * port  # bit i from the right is port i
            node = self._call(
                f"creating a multicast node for port {port}",
                lambda rid=rid, port_map=port_map: self._pre.bm_mc_node_create(0, rid, port_map, ""),
            )
            self._call(
                f"adding port {port} to multicast group {group}",
                lambda node=node: self._pre.bm_mc_node_associate(0, handle, node),
            )

    def mc_entries(self) -> str:
        return str(self._call("reading multicast groups", lambda: self._pre.bm_mc_get_entries(0)))

    # ---- egress queues ----

    def set_queue_rate(self, port: int | None, rate_pps: int) -> None:
        """Egress queue service rate in packets per second (one port, or all with None; 0: no limit,
        bmv2's default)."""
        if port is not None:
            check_range("port", port, 0, MAX_PORT)
        check_range("rate_pps", rate_pps, 0, 2**63 - 1, " packets per second (0: no limit)")
        if port is None:
            self._call("setting all queue rates", lambda: self._sswitch.set_all_egress_queue_rates(rate_pps))
        else:
            self._call(
                f"setting the queue rate of port {port}",
                lambda: self._sswitch.set_egress_queue_rate(port, rate_pps),
            )

    def set_queue_depth(self, port: int | None, depth_pkts: int) -> None:
        """Egress queue capacity in packets (one port, or all with None)."""
        if port is not None:
            check_range("port", port, 0, MAX_PORT)
        check_range("depth_pkts", depth_pkts, 1, I32_MAX, " packets")
        if port is None:
            self._call(
                "setting all queue depths", lambda: self._sswitch.set_all_egress_queue_depths(depth_pkts)
            )
        else:
            self._call(
                f"setting the queue depth of port {port}",
                lambda: self._sswitch.set_egress_queue_depth(port, depth_pkts),
            )

    def time_elapsed_us(self) -> int:
        return self._call("reading the clock", lambda: self._sswitch.get_time_elapsed_us())


def port_answers(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


@contextmanager
def connected(host: str = "localhost", thrift_port: int = DEFAULT_THRIFT_PORT) -> Iterator[SwitchClient]:
    client = SwitchClient(host, thrift_port).connect()
    try:
        yield client
    finally:
        client.close()


def _bind(what: str, names: list[str], given: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    """Positional values, or a name -> value mapping, in declaration order."""
    if isinstance(given, Mapping):
        unknown = sorted(set(given) - set(names))
        missing = [n for n in names if n not in given]
        if unknown or missing:
            raise SwitchInputError(
                f"{what}: expected {', '.join(names) or 'nothing'}"
                + (f"; unknown {', '.join(unknown)}" if unknown else "")
                + (f"; missing {', '.join(missing)}" if missing else "")
            )
        return [given[n] for n in names]
    values = list(given)
    if len(values) != len(names):
        raise SwitchInputError(
            f"{what}: expected {len(names)} value(s) ({', '.join(names) or 'none'}), got {len(values)}"
        )
    return values


_INPUT_PROBLEMS = {"invalid handle", "expired handle", "bad match key", "session not found"}
_HINTS = {
    "invalid handle": ": no entry has that handle ('ackwise table dump TABLE' lists them)",
    "bad match key": ": no entry has that key ('ackwise table dump TABLE' lists them)",
    "session not found": ": no such mirroring session ('ackwise mirror add SESSION PORT' creates one)",
    "duplicate entry": ": an entry with this key exists ('ackwise table modify' changes it)",
    "table full": ": delete entries first ('ackwise table dump TABLE' lists them)",
}


def _as_i64(value: int) -> int:
    """Thrift's BmRegisterValue is a signed i64."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _describe(exc: Exception) -> str:
    """bmv2's exceptions carry only an enum code; InvalidTableOperation pairs with
    TableOperationErrorCode in the same generated module, and so on."""
    code = getattr(exc, "code", None)
    if code is None:
        return str(exc) or type(exc).__name__
    ttypes = sys.modules.get(type(exc).__module__)
    enum = getattr(ttypes, type(exc).__name__.removeprefix("Invalid") + "ErrorCode", None)
    name = getattr(enum, "_VALUES_TO_NAMES", {}).get(code, f"error code {code}")
    return name.lower().replace("_", " ")
