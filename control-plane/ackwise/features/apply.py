"""Apply a file of table entries and switch settings (YAML or JSON) to a running switch, all or
nothing, and idempotently.

    program: build/ack_switch.json        # optional: swap this program in first (if not running)
    clear: [forwarding.ipv4_lpm]          # optional: these tables hold exactly the file's entries
    tables:
      - table: forwarding.ipv4_lpm
        action: route
        key: {dst_addr: 10.0.2.0/24}      # or a list in key order
        params: {port: 2, src_mac: "00:00:00:00:02:fe", dst_mac: "00:00:00:00:02:01"}
    defaults:
      - {table: some_table, action: some_action, params: {}}
    registers:
      - {register: some_register, index: 0, value: 5}
    ports:
      - {port: 2, rate_pps: 500, depth_pkts: 64}    # rate 0: no limit
    mirroring:
      - {session: 1, port: 3}
    policies:                             # ack_switch: what 'ackwise policy set' writes
      - {match: "src=10.0.2.0/24", policy: every_d, params: {d: 8}}
      - {match: default, policy: tack}
    ecn:                                  # ack_switch: what 'ackwise port ecn' writes
      - {port: 2, k: 20}
      - {port: 3, k_min: 10, k_max: 40, p_max: 20}
    ap: {uplink: [1], wireless: [2], cpu: 100}      # ap_proxy: what 'ackwise ap setup' writes
    stations:                             # ap_proxy: what 'ackwise ap serve' writes
      - {prefix: 10.0.0.3/32, budget_bytes: 65536}
      - {prefix: "fd00:0:0:2::/64"}          # IPv6 prefixes too (ap.stations6)

**All or nothing.** The whole file is checked first: sections, fields, and every table, action,
register, key and value against the program it will run on (the running one, or ``program``'s),
and no table key may appear twice. Nothing is sent to the switch before all of it passes. Then the
changes are made in the order above; if the switch refuses one (a table full, a program swap that
fails, the switch gone), every change made so far is undone in reverse order and the error says so.

**Idempotent.** Each change reads what the switch holds first: an identical table entry, default,
register value, mirroring session or multicast group is left alone; an entry with the same key but
another action or parameters is modified in place. Applying the same file twice changes nothing
the second time, so after a switch restart the same file restores the whole configuration.

**What an undo restores.** Entries added are deleted, entries modified or removed (``clear``) are
put back, defaults, registers, mirroring sessions and multicast groups get their previous values.
Queue rates and depths cannot be read back from bmv2: the previous values are those the program's
queue model holds (ack_switch, ``ackwise.features.queues``); for a program without one, bmv2's defaults (no
rate limit, 64 packets). A program swap is undone by loading the previous program and putting back
its table entries and defaults; its registers start at zero, as after any swap.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ackwise.bmv2.client import SwitchClient, SwitchError, SwitchOperationError, TableEntry
from ackwise.bmv2.program import Program, Table, UnknownName
from ackwise.bmv2.values import BadValue, format_value
from ackwise.errors import InputError
from ackwise.features.ap import (
    STATION_TABLES,
    ApConfigError,
    StationParams,
    check_ports,
    multicast_group,
    parse_station_prefix,
)
from ackwise.features.ecn import MAX_DEPTH
from ackwise.features.queues import (
    queue_settings,
    restore_depth,
    restore_rate,
    service_us,
    set_queue_depth,
    set_queue_rate,
)
from ackwise.features.thinning import POLICY_TABLES
from ackwise.twins.p4names import (
    ACTION_AP_CPU,
    ACTION_AP_EGRESS_UPLINK,
    ACTION_AP_EGRESS_WIRELESS,
    ACTION_AP_SERVE,
    ACTION_AP_UPLINK,
    ACTION_AP_WIRELESS,
    ACTION_ECN_RED,
    ACTION_ECN_THRESHOLD,
    KEY_PORT,
    KEY_STATION,
    TABLE_AP_EGRESS_ROLE,
    TABLE_AP_PORT_ROLE,
    TABLE_ECN_PORT_THRESHOLD,
    ApRid,
)
from ackwise.twins.policies import PolicyError, PolicyMatch, PolicyParams


class ConfigError(InputError, ValueError):
    """The file is not a valid ackwise switch configuration; the message says where."""


class ApplyFailed(SwitchOperationError):
    """The switch refused a change; what was already applied has been undone (or the message
    says what could not be)."""


# section -> (required fields, optional fields), in the order sections are applied
SECTIONS: dict[str, tuple[set[str], set[str]]] = {
    "tables": ({"table", "action"}, {"key", "params", "priority"}),
    "defaults": ({"table", "action"}, {"params"}),
    "registers": ({"register", "index", "value"}, set()),
    "ports": ({"port"}, {"rate_pps", "depth_pkts"}),
    "mirroring": ({"session", "port"}, set()),
    "policies": ({"match", "policy"}, {"params", "priority"}),
    "ecn": ({"port"}, {"k", "k_min", "k_max", "p_max"}),
    "stations": ({"prefix"}, {"budget_bytes", "fast_after_segments", "stall_timeout_ms", "holdoff_ms"}),
}
AP_FIELDS = {"uplink", "wireless", "cpu"}
TOP_LEVEL = {"program", "clear", "ap", *SECTIONS}


def load_config(path: str | Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text: give a YAML or JSON file") from None
    kind = "JSON" if str(path).endswith(".json") else "YAML"
    try:
        doc = json.loads(text) if kind == "JSON" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        problem = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid {kind}: {problem}") from None
    validate(doc, str(path))
    return doc


def validate(doc: Any, where: str) -> None:
    """The file's shape: known sections, each a list of mappings with the right fields."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping of sections ({', '.join(sorted(TOP_LEVEL))})")
    unknown = {str(k) for k in doc} - TOP_LEVEL
    if unknown:
        raise ConfigError(
            f"{where}: unknown section(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(TOP_LEVEL))}"
        )
    if "program" in doc and not isinstance(doc["program"], str):
        raise ConfigError(f"{where}: 'program' must be a path to a compiled program (build/NAME.json)")
    if "clear" in doc and not (
        isinstance(doc["clear"], list) and all(isinstance(t, str) for t in doc["clear"])
    ):
        raise ConfigError(f"{where}: 'clear' must be a list of table names")
    if "ap" in doc:
        ap = doc["ap"]
        if not isinstance(ap, dict) or set(ap) != AP_FIELDS:
            raise ConfigError(
                f"{where}: 'ap' must be a mapping of uplink: [PORT...], wireless: [PORT...], cpu: PORT"
            )
    for section, (required, optional) in SECTIONS.items():
        items = doc.get(section, [])
        if not isinstance(items, list):
            raise ConfigError(f"{where}: '{section}' must be a list")
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict):
                raise ConfigError(f"{where}: {section} item {n} must be a mapping")
            missing = required - set(item)
            extra = set(item) - required - optional
            if missing or extra:
                raise ConfigError(
                    f"{where}: {section} item {n}: "
                    + (f"missing {', '.join(sorted(missing))}" if missing else "")
                    + ("; " if missing and extra else "")
                    + (f"unknown {', '.join(sorted(map(str, extra)))}" if extra else "")
                )


# ---- the plan: validated operations, each of which reads the switch before it writes ----

Undo = Callable[[], None]
Canon = tuple[Any, ...]


@dataclass
class Op:
    """One change the file asks for; ``run`` makes it (if the switch does not hold it already)
    and returns what undoes it, or None when nothing changed."""

    where: str  # "tables item 3", for messages
    describe: str
    run: Callable[[SwitchClient, ApplyState], Undo | None]


@dataclass
class ApplyState:
    """What one apply has read of the switch, so that a table is read once, not per entry:
    per table, each entry with its canonical key."""

    entries: dict[str, list[tuple[Canon, TableEntry]]] = field(default_factory=dict)

    def table(self, client: SwitchClient, name: str) -> list[tuple[Canon, TableEntry]]:
        if name not in self.entries:
            self.entries[name] = [(_canon_entry(e), e) for e in client.table_entries(name)]
        return self.entries[name]

    def forget(self) -> None:
        self.entries.clear()


def _int(value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 0)
        except ValueError:
            raise ConfigError(f"{what}: {value} is not a whole number") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{what}={value}: must be {lo}..{hi}")
    return value


def _canon_match(param: Any) -> Canon:
    """A BmMatchParam as comparable values (as bmv2 stores them: lpm and ternary masked)."""
    from bm_runtime.standard.ttypes import BmMatchParamType as T

    if param.type == T.EXACT:
        return ("exact", param.exact.key)
    if param.type == T.LPM:
        return ("lpm", param.lpm.key, param.lpm.prefix_length)
    if param.type == T.TERNARY:
        mask = param.ternary.mask
        return ("ternary", bytes(a & b for a, b in zip(param.ternary.key, mask, strict=True)), mask)
    if param.type == T.RANGE:
        return ("range", param.range.start, param.range.end_)
    return ("valid", bool(param.valid.key))


def _canon_entry(entry: TableEntry) -> Canon:
    out: list[Canon] = []
    for m in entry.key:
        width = (m.width_bits + 7) // 8
        value = m.value.to_bytes(width, "big")
        if m.match_type == "exact":
            out.append(("exact", value))
        elif m.match_type == "lpm":
            out.append(("lpm", value, m.prefix_len))
        elif m.match_type == "ternary":
            mask = (m.mask or 0).to_bytes(width, "big")
            out.append(("ternary", bytes(a & b for a, b in zip(value, mask, strict=True)), mask))
        elif m.match_type == "range":
            out.append(("range", value, (m.end or 0).to_bytes(width, "big")))
        else:
            out.append(("valid", bool(m.value)))
    return (*out, entry.priority)


@dataclass
class EntrySpec:
    """A table entry from the file, encoded against the program."""

    table: Table
    match: list[Any]
    action: str
    data: list[bytes]
    priority: int | None
    key_canon: Canon
    params: dict[str, int]
    describe: str  # for people: "forwarding.ipv4_lpm 10.0.2.0/24: forwarding.route port=2 ..."


def _encode_entry(
    client: SwitchClient,
    program: Program,
    where: str,
    table_name: str,
    action: str,
    key: Any,
    params: Any,
    priority: Any,
) -> EntrySpec:
    try:
        table = program.table(table_name)
        if not isinstance(key, list | dict) or not isinstance(params, list | dict):
            raise ConfigError(f"{where}: key and params are a list (in order) or a mapping (by name)")
        key = {str(k): str(v) for k, v in key.items()} if isinstance(key, dict) else [str(v) for v in key]
        match = client._match_params(table, key)
        act, data = client._action_data(table, action, params, program)
    except (UnknownName, BadValue, SwitchOperationError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if priority is not None:
        priority = _int(priority, f"{where}: priority", 0, 2**31 - 1)
    elif table.needs_priority:
        raise ConfigError(f"{where}: {table.name} has ternary or range keys: give a priority")
    if not table.needs_priority:
        priority = None
    declared = program.actions[act].params
    values = {p.name: int.from_bytes(d, "big") for p, d in zip(declared, data, strict=True)}
    shown_key = " ".join(str(v) for v in (key.values() if isinstance(key, dict) else key))
    shown_params = " ".join(
        f"{p.name}={format_value(values[p.name], p.width_bits, p.name)}" for p in declared
    )
    return EntrySpec(
        table,
        match,
        act,
        data,
        priority,
        (*(_canon_match(m) for m in match), priority),
        values,
        f"{table.name} {shown_key}: {act} {shown_params}".rstrip(),
    )


def _entry_op(where: str, spec: EntrySpec) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        entries = state.table(client, spec.table.name)
        for i, (canon, old) in enumerate(entries):
            if canon != spec.key_canon:
                continue
            if old.action == spec.action and old.params == spec.params:
                return None
            client.table_modify(spec.table.name, old.handle, spec.action, list(spec.params.values()))
            entries[i] = (
                canon,
                TableEntry(old.table, old.handle, old.key, spec.action, spec.params, old.priority),
            )
            return lambda: client.table_modify(old.table, old.handle, old.action, list(old.params.values()))
        handle = _add(client, spec)
        entries.append(
            (spec.key_canon, TableEntry(spec.table.name, handle, (), spec.action, spec.params, spec.priority))
        )
        return lambda: client.table_delete(spec.table.name, handle)

    return Op(where, spec.describe, run)


def _add(client: SwitchClient, spec: EntrySpec) -> int:
    from bm_runtime.standard.ttypes import BmAddEntryOptions

    options = BmAddEntryOptions(priority=spec.priority) if spec.priority is not None else BmAddEntryOptions()
    return int(
        client._call(
            f"adding an entry to {spec.table.name}",
            lambda: client._standard.bm_mt_add_entry(
                0, spec.table.name, spec.match, spec.action, spec.data, options
            ),
        )
    )


def _readd(client: SwitchClient, entry: TableEntry) -> None:
    """Put back an entry read from the switch (its handle will differ)."""
    key = [_match_text(m) for m in entry.key]
    client.table_add(entry.table, entry.action, key, list(entry.params.values()), entry.priority)


def _match_text(m: Any) -> str:
    if m.match_type == "lpm":
        return f"{m.value}/{m.prefix_len}"
    if m.match_type == "ternary":
        return f"{m.value}&&&{m.mask or 0}"
    if m.match_type == "range":
        return f"{m.value}->{m.end or 0}"
    return str(m.value)


def _clear_op(table: Table, keep: set[Canon]) -> Op:
    """The table ends up with the file's entries only: others are deleted (and put back on undo)."""

    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        entries = state.table(client, table.name)
        gone = [e for canon, e in entries if canon not in keep]
        deleted: list[TableEntry] = []

        def undo() -> None:
            for e in deleted:
                _readd(client, e)

        for e in gone:
            try:
                client.table_delete(table.name, e.handle)
            except SwitchError:
                undo()  # the entries this op already removed go back with the rest
                raise
            deleted.append(e)
        entries[:] = [(c, e) for c, e in entries if c in keep]
        return undo if deleted else None

    return Op("clear", f"{table.name}: only the file's entries", run)


def _default_op(where: str, table: Table, action: str, data: list[bytes], params: dict[str, int]) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        old = client.table_default(table.name)
        if old.action == action and old.params == params:
            return None
        client.table_set_default(table.name, action, list(params.values()))
        if old.action is None:
            return lambda: client.table_reset_default(table.name)
        return lambda: client.table_set_default(table.name, str(old.action), list(old.params.values()))

    return Op(where, f"{table.name}: default {action}", run)


def _register_op(where: str, name: str, index: int, value: int) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        old = client.register_read(name, index)
        if old == value:
            return None
        client.register_write(name, index, value)
        return lambda: client.register_write(name, index, old)

    return Op(where, f"{name}[{index}] = {value}", run)


def _port_op(where: str, port: int, rate_pps: int | None, depth_pkts: int | None) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        # bmv2 cannot be asked for a queue's rate or depth; the program's model of the queue holds
        # what ackwise last set there (0: never set, so bmv2's defaults; None: no model, as in
        # forward_only and ap_proxy, where bmv2's defaults are what undo restores).
        settings = queue_settings(client, port)
        service, capacity = settings or (0, 0)
        if settings is not None:
            same_rate = rate_pps is None or service == service_us(rate_pps)
            same_depth = depth_pkts is None or capacity == depth_pkts
            if same_rate and same_depth:
                return None
        if rate_pps is not None:
            set_queue_rate(client, port, rate_pps)
        if depth_pkts is not None:
            set_queue_depth(client, port, depth_pkts)

        def undo() -> None:
            if rate_pps is not None:
                restore_rate(client, port, service)
            if depth_pkts is not None:
                restore_depth(client, port, capacity)

        return undo

    parts = [
        f"rate {rate_pps} pps" if rate_pps is not None else "",
        f"depth {depth_pkts}" if depth_pkts else "",
    ]
    return Op(where, f"port {port}: " + ", ".join(p for p in parts if p), run)


def _mirror_op(where: str, session: int, port: int) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        try:
            old: int | None = client.mirroring_get(session)
        except SwitchOperationError:
            old = None  # no such session
        if old == port:
            return None
        client.mirroring_add(session, port)
        if old is None:
            return lambda: client.mirroring_delete(session)
        previous = old
        return lambda: client.mirroring_add(session, previous)

    return Op(where, f"mirroring session {session} -> port {port}", run)


def _mc_op(where: str, group: int, copies: list[tuple[int, int]]) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        old = client.mc_groups().get(group)
        if old == sorted(copies):
            return None
        client.mc_group_set(group, copies)
        if old is None:
            return lambda: client.mc_group_delete(group)
        previous = old
        return lambda: client.mc_group_set(group, previous)

    return Op(where, f"multicast group {group}: {len(copies)} copies", run)


def _program_op(path: Path, text: str, program: Program) -> Op:
    def run(client: SwitchClient, state: ApplyState) -> Undo | None:
        old_text = client._call("reading the program", lambda: client._standard.bm_get_config())
        if json.loads(old_text) == json.loads(text):
            return None
        old_program = client.program
        saved = {t: client.table_entries(t) for t in old_program.tables}
        defaults = {
            t: client.table_default(t) for t in old_program.tables if not old_program.tables[t].const_default
        }
        client.load_program(path)
        state.forget()

        def undo() -> None:
            client._call(
                "loading the previous program", lambda: client._standard.bm_load_new_config(old_text)
            )
            client._call("swapping back", lambda: client._standard.bm_swap_configs())
            client._program = None
            for entries in saved.values():
                for e in entries:
                    _readd(client, e)
            for name, d in defaults.items():
                if d.action is not None:
                    client.table_set_default(name, d.action, list(d.params.values()))

        return undo

    return Op("program", f"program {path}", run)


def plan_config(client: SwitchClient, doc: dict[str, Any], base_dir: Path = Path(".")) -> list[Op]:
    """Every change the file asks for, checked against the program it will run on. Reads the
    switch's program (and nothing else); writes nothing. Raises ConfigError naming the item."""
    validate(doc, "config")
    return _Planner(client, doc, base_dir).plan()


class _Planner:
    """plan_config's work, a method per section of the file: each checks its items against the
    program and adds the operations that make them so."""

    def __init__(self, client: SwitchClient, doc: dict[str, Any], base_dir: Path) -> None:
        self.client, self.doc, self.base_dir = client, doc, base_dir
        self.program = client.program
        self.first: list[Op] = []  # the program swap, then the clears
        self.entries: list[tuple[str, EntrySpec]] = []
        # Changes in the file's section order (the order of SECTIONS), after the swap and the clears.
        self.ordered: list[Op] = []

    def plan(self) -> list[Op]:
        if "program" in self.doc:
            self.swap_program(self.doc["program"])
        for section in (
            self.tables,
            self.defaults,
            self.registers,
            self.ports,
            self.mirroring,
            self.policies,
            self.ecn,
            self.ap,
            self.stations,
        ):
            section()
        self.check_one_entry_per_key()
        self.clears()
        return self.first + self.ordered

    # ---- what each section adds ----

    def entry(self, where: str, table: str, action: str, key: Any, params: Any, priority: Any) -> None:
        spec = _encode_entry(self.client, self.program, where, table, action, key, params, priority)
        self.entries.append((where, spec))
        self.ordered.append(_entry_op(where, spec))

    def default(self, where: str, table_name: str, action: str, params: Any) -> None:
        try:
            table = self.program.table(table_name)
            if table.const_default:
                raise ConfigError(f"{where}: {table.name} has a const default action set by the P4 program")
            act, data = self.client._action_data(table, action, params, self.program)
        except (UnknownName, BadValue, SwitchOperationError) as exc:
            raise ConfigError(f"{where}: {exc}") from None
        names = [p.name for p in self.program.actions[act].params]
        values = {k: int.from_bytes(d, "big") for k, d in zip(names, data, strict=True)}
        self.ordered.append(_default_op(where, table, act, data, values))

    def items(self, section: str) -> list[tuple[str, Any]]:
        return [(f"{section} item {n}", item) for n, item in enumerate(self.doc.get(section, []), 1)]

    # ---- the sections ----

    def swap_program(self, name: str) -> None:
        path = Path(name)
        if not path.is_absolute():
            path = self.base_dir / path
        try:
            text = path.read_text(encoding="utf-8")
            self.program = Program.from_json(text)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"program {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})"
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"program {path}: not a bmv2 program JSON (from p4c-bm2-ss): {exc}") from None
        self.first.append(_program_op(path, text, self.program))

    def tables(self) -> None:
        for where, item in self.items("tables"):
            self.entry(
                where,
                str(item["table"]),
                str(item["action"]),
                item.get("key", []),
                item.get("params", []),
                item.get("priority"),
            )

    def defaults(self) -> None:
        for where, item in self.items("defaults"):
            self.default(where, str(item["table"]), str(item["action"]), item.get("params", []))

    def registers(self) -> None:
        for where, item in self.items("registers"):
            try:
                reg = self.program.register(str(item["register"]))
            except UnknownName as exc:
                raise ConfigError(f"{where}: {exc}") from None
            index = _int(item["index"], f"{where}: index", 0, reg.size - 1)
            value = _int(item["value"], f"{where}: value", 0, (1 << reg.width_bits) - 1)
            self.ordered.append(_register_op(where, reg.name, index, value))

    def ports(self) -> None:
        for where, item in self.items("ports"):
            port = _int(item["port"], f"{where}: port", 0, 511)
            rate = _int(item["rate_pps"], f"{where}: rate_pps", 0, 2**63 - 1) if "rate_pps" in item else None
            depth = (
                _int(item["depth_pkts"], f"{where}: depth_pkts", 1, 2**31 - 1)
                if "depth_pkts" in item
                else None
            )
            if rate is None and depth is None:
                raise ConfigError(f"{where}: give rate_pps and/or depth_pkts")
            self.ordered.append(_port_op(where, port, rate, depth))

    def mirroring(self) -> None:
        for where, item in self.items("mirroring"):
            session = _int(item["session"], f"{where}: session", 0, 2**15 - 1)
            self.ordered.append(_mirror_op(where, session, _int(item["port"], f"{where}: port", 0, 511)))

    def policies(self) -> None:
        for where, item in self.items("policies"):
            try:
                params = PolicyParams.parse(str(item["policy"]), _assignments(item.get("params", {}), where))
                match_spec = item["match"]
                if match_spec == "default":  # for each IP version the program thins
                    act, values = params.action()
                    # A program that thins neither (ap_proxy): IPv4's table, to be refused by name.
                    tables = [t for t, _ in POLICY_TABLES.values() if t in self.program.tables]
                    for table in tables or [POLICY_TABLES[4][0]]:
                        self.default(where, table, act, values)
                    continue
                tokens = (
                    match_spec.split() if isinstance(match_spec, str) else _assignments(match_spec, where)
                )
                match = PolicyMatch.parse(tokens)
            except (PolicyError, UnknownName, BadValue, SwitchOperationError) as exc:
                raise ConfigError(f"{where}: {exc}") from None
            act, values = params.action()
            # The table of the match's IP version; one without addresses into each the program has.
            versions = [v for v in match.versions if POLICY_TABLES[v][0] in self.program.tables]
            if not versions:
                raise ConfigError(
                    f"{where}: the program has no IPv{match.version} rules' table; load ack_switch"
                )
            for version in versions:
                self.entry(
                    where,
                    POLICY_TABLES[version][0],
                    act,
                    match.key(version),
                    values,
                    item.get("priority", match.priority_in(version)),
                )

    def ecn(self) -> None:
        for where, item in self.items("ecn"):
            port = _int(item["port"], f"{where}: port", 0, 511)
            if set(item) == {"port", "k"}:
                k = _int(item["k"], f"{where}: k", 0, MAX_DEPTH)
                self.entry(
                    where, TABLE_ECN_PORT_THRESHOLD, ACTION_ECN_THRESHOLD, {KEY_PORT: port}, {"k": k}, None
                )
            elif set(item) == {"port", "k_min", "k_max", "p_max"}:
                k_min = _int(item["k_min"], f"{where}: k_min", 0, MAX_DEPTH)
                k_max = _int(item["k_max"], f"{where}: k_max", 0, MAX_DEPTH)
                p_max = _int(item["p_max"], f"{where}: p_max", 0, 100)
                if k_min >= k_max:
                    raise ConfigError(f"{where}: k_min={k_min} k_max={k_max}: give k_min < k_max")
                red = {"k_min_pkts": k_min, "k_max_pkts": k_max, "p_max": p_max}
                self.entry(where, TABLE_ECN_PORT_THRESHOLD, ACTION_ECN_RED, {KEY_PORT: port}, red, None)
            else:
                raise ConfigError(f"{where}: give port with k, or port with k_min, k_max and p_max")

    def ap(self) -> None:
        if "ap" not in self.doc:
            return
        ap = self.doc["ap"]
        try:
            uplink = [_int(p, "ap: uplink", 1, 255) for p in _list(ap["uplink"], "ap: uplink")]
            wireless = [_int(p, "ap: wireless", 1, 255) for p in _list(ap["wireless"], "ap: wireless")]
            cpu = _int(ap["cpu"], "ap: cpu", 0, 511)
            check_ports(uplink, wireless, cpu)
        except ApConfigError as exc:
            raise ConfigError(f"ap: {exc}") from None
        for port in uplink:
            self.entry("ap", TABLE_AP_PORT_ROLE, ACTION_AP_UPLINK, {KEY_PORT: port}, {}, None)
            self.entry("ap", TABLE_AP_EGRESS_ROLE, ACTION_AP_EGRESS_UPLINK, {KEY_PORT: port}, {}, None)
        for port in wireless:
            self.entry("ap", TABLE_AP_PORT_ROLE, ACTION_AP_WIRELESS, {KEY_PORT: port}, {"cpu": cpu}, None)
            self.entry("ap", TABLE_AP_EGRESS_ROLE, ACTION_AP_EGRESS_WIRELESS, {KEY_PORT: port}, {}, None)
        self.entry("ap", TABLE_AP_PORT_ROLE, ACTION_AP_CPU, {KEY_PORT: cpu}, {}, None)
        for u in uplink:
            self.ordered.append(_mc_op("ap", multicast_group(0, u), [(ApRid.CPU, cpu), (ApRid.SPOOF, u)]))
            for w in wireless:
                members = [(ApRid.STATION, w), (ApRid.CPU, cpu), (ApRid.SPOOF, u)]
                self.ordered.append(_mc_op("ap", multicast_group(w, u), members))
        for w in wireless:
            self.ordered.append(_mc_op("ap", multicast_group(w, 0), [(ApRid.STATION, w), (ApRid.CPU, cpu)]))

    def stations(self) -> None:
        for where, item in self.items("stations"):
            try:
                prefix = parse_station_prefix(str(item["prefix"]))
                values = {k: _int(v, f"{where}: {k}", 0, 2**32 - 1) for k, v in item.items() if k != "prefix"}
                params = StationParams(**values)
            except ApConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            table = STATION_TABLES[ipaddress.ip_network(prefix).version]
            self.entry(where, table, ACTION_AP_SERVE, {KEY_STATION: prefix}, vars(params), None)

    def check_one_entry_per_key(self) -> None:
        """One key, one entry: two items with the same key would each undo the other."""
        seen: dict[tuple[str, Canon], str] = {}
        for where, spec in self.entries:
            k = (spec.table.name, spec.key_canon)
            if k in seen and seen[k] != where:
                raise ConfigError(
                    f"{where}: {spec.table.name} already gets an entry with this key from {seen[k]}"
                )
            seen[k] = where

    def clears(self) -> None:
        for table_name in self.doc.get("clear", []):
            try:
                table = self.program.table(table_name)
            except UnknownName as exc:
                raise ConfigError(f"clear: {exc}") from None
            keys = {s.key_canon for _, s in self.entries if s.table.name == table.name}
            self.first.append(_clear_op(table, keys))


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{what}: give a list of port numbers, e.g. [1]")
    return value


def _assignments(params: Any, where: str) -> list[str]:
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: params must be a mapping of NAME: VALUE")
    return [f"{k}={v}" for k, v in params.items()]


@dataclass
class ApplyResult:
    changed: list[str]
    unchanged: int


def execute(client: SwitchClient, ops: list[Op]) -> ApplyResult:
    """Run the plan; on the first failure undo what was done, newest first, and raise."""
    state = ApplyState()
    done: list[tuple[Op, Undo]] = []
    unchanged = 0
    for op in ops:
        try:
            undo = op.run(client, state)
        except SwitchError as exc:
            problems = _rollback(done)
            if problems:
                note = f"rollback INCOMPLETE ({'; '.join(problems)}): check the switch"
            else:
                note = f"undid the {len(done)} change(s) made before it: the switch is as it was"
            raise ApplyFailed(f"{op.where} ({op.describe}) refused: {exc}; {note}") from exc
        if undo is None:
            unchanged += 1
        else:
            done.append((op, undo))
    return ApplyResult([op.describe for op, _ in done], unchanged)


def _rollback(done: list[tuple[Op, Undo]]) -> list[str]:
    problems = []
    for op, undo in reversed(done):
        try:
            undo()
        except SwitchError as exc:
            problems.append(f"{op.where}: {exc}")
    return problems


def apply_config(client: SwitchClient, doc: dict[str, Any], base_dir: Path = Path(".")) -> list[str]:
    """Apply a configuration all or nothing; returns one line per change made (none: it was all
    in place already)."""
    return execute(client, plan_config(client, doc, base_dir)).changed
