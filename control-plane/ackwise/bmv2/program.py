"""The parts of a compiled bmv2 program (p4c's JSON) that the control plane needs: tables with
their key fields and widths, actions with their parameters, registers and counters.

Names are the ones the P4 source fixes with ``@name``. A name may be given by any unique suffix
made of whole dot-separated parts (``ipv4_lpm`` for ``forwarding.ipv4_lpm``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ackwise.errors import InputError


class UnknownName(InputError, LookupError):
    """A table, action, register or counter the loaded program does not have."""


@dataclass(frozen=True)
class KeyField:
    name: str
    match_type: str  # exact, lpm, ternary, range, valid
    width_bits: int


@dataclass(frozen=True)
class ActionParam:
    name: str
    width_bits: int


@dataclass(frozen=True)
class Action:
    name: str
    params: tuple[ActionParam, ...]


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[KeyField, ...]
    actions: tuple[str, ...]
    size: int
    const_default: bool

    @property
    def needs_priority(self) -> bool:
        return any(k.match_type in ("ternary", "range") for k in self.key)


@dataclass(frozen=True)
class Register:
    name: str
    size: int
    width_bits: int


@dataclass(frozen=True)
class Counter:
    name: str
    size: int
    direct_table: str | None


@dataclass
class Program:
    tables: dict[str, Table] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    registers: dict[str, Register] = field(default_factory=dict)
    counters: dict[str, Counter] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> Program:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_file(cls, path: str | Path) -> Program:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_dict(cls, doc: dict) -> Program:
        widths: dict[tuple[str, str], int] = {}
        header_types = {ht["name"]: ht for ht in doc.get("header_types", [])}
        for header in doc.get("headers", []):
            for fname, width, *_ in header_types[header["header_type"]]["fields"]:
                widths[(header["name"], fname)] = width

        program = cls()
        for action in doc.get("actions", []):
            params = tuple(ActionParam(p["name"], p["bitwidth"]) for p in action["runtime_data"])
            program.actions[action["name"]] = Action(action["name"], params)
        for pipeline in doc.get("pipelines", []):
            for table in pipeline.get("tables", []):
                if _compiler_generated(table):
                    continue
                key = []
                for k in table.get("key", []):
                    target = k["target"]
                    width = 1 if k["match_type"] == "valid" else widths[(target[0], target[1])]
                    key.append(KeyField(k.get("name") or ".".join(target), k["match_type"], width))
                program.tables[table["name"]] = Table(
                    name=table["name"],
                    key=tuple(key),
                    actions=tuple(table.get("actions", [])),
                    size=table.get("max_size", 0),
                    const_default=bool(table.get("default_entry", {}).get("action_const")),
                )
        for reg in doc.get("register_arrays", []):
            program.registers[reg["name"]] = Register(reg["name"], reg["size"], reg["bitwidth"])
        for ctr in doc.get("counter_arrays", []):
            program.counters[ctr["name"]] = Counter(
                ctr["name"], ctr.get("size", 0), ctr.get("binding") if ctr.get("is_direct") else None
            )
        return program

    # ---- lookup by full name or unique suffix ----

    @staticmethod
    def _resolve(kind: str, name: str, names: list[str]) -> str:
        if name in names:
            return name
        matches = [n for n in names if n.endswith("." + name)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UnknownName(f"{kind} {name!r} is ambiguous: {', '.join(sorted(matches))}")
        listing = ", ".join(sorted(names)) or "none"
        raise UnknownName(f"no {kind} {name!r} in the loaded program (it has: {listing})")

    def table(self, name: str) -> Table:
        return self.tables[self._resolve("table", name, list(self.tables))]

    def action(self, table: Table, name: str) -> Action:
        return self.actions[self._resolve(f"action of {table.name}", name, list(table.actions))]

    def register(self, name: str) -> Register:
        return self.registers[self._resolve("register", name, list(self.registers))]

    def counter(self, name: str) -> Counter:
        return self.counters[self._resolve("counter", name, list(self.counters))]


def _compiler_generated(table: dict) -> bool:
    """p4c turns straight-line code into keyless one-action tables named tbl_*; they are not
    part of the program's control-plane interface."""
    return table["name"].startswith("tbl_") and not table.get("key")
