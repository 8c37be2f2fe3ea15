"""Apply a file of table entries and switch settings (YAML or JSON) to a running switch.

    program: build/ack_switch.json        # optional: swap this program in first
    clear: [forwarding.ipv4_lpm]          # optional: tables emptied before adding
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
      - {port: 2, rate_pps: 500, depth_pkts: 64}
    mirroring:
      - {session: 1, port: 3}

Sections are applied in the order above. The whole file is checked for unknown sections and fields
before anything is sent to the switch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .bmv2.client import SwitchClient, SwitchOperationError
from .queues import set_queue_depth, set_queue_rate

Handler = Callable[[SwitchClient, dict[str, Any]], str]


class ConfigError(ValueError):
    """The file is not a valid ackwise switch configuration; the message says where."""


def _table_entry(client: SwitchClient, item: dict[str, Any]) -> str:
    handle = client.table_add(
        item["table"], item["action"], item.get("key", []), item.get("params", []), item.get("priority")
    )
    return f"{item['table']}: added {item['action']} (handle {handle})"


def _default(client: SwitchClient, item: dict[str, Any]) -> str:
    client.table_set_default(item["table"], item["action"], item.get("params", []))
    return f"{item['table']}: default {item['action']}"


def _register(client: SwitchClient, item: dict[str, Any]) -> str:
    client.register_write(item["register"], int(item["index"]), int(item["value"]))
    return f"{item['register']}[{item['index']}] = {item['value']}"


def _port(client: SwitchClient, item: dict[str, Any]) -> str:
    done = []
    if "rate_pps" in item:
        set_queue_rate(client, int(item["port"]), int(item["rate_pps"]))
        done.append(f"rate {item['rate_pps']} pps")
    if "depth_pkts" in item:
        set_queue_depth(client, int(item["port"]), int(item["depth_pkts"]))
        done.append(f"depth {item['depth_pkts']} packets")
    return f"port {item['port']}: " + ", ".join(done)


def _mirroring(client: SwitchClient, item: dict[str, Any]) -> str:
    client.mirroring_add(int(item["session"]), int(item["port"]))
    return f"mirroring session {item['session']} -> port {item['port']}"


# section -> (required fields, optional fields, handler), in the order sections are applied
SECTIONS: dict[str, tuple[set[str], set[str], Handler]] = {
    "tables": ({"table", "action"}, {"key", "params", "priority"}, _table_entry),
    "defaults": ({"table", "action"}, {"params"}, _default),
    "registers": ({"register", "index", "value"}, set(), _register),
    "ports": ({"port"}, {"rate_pps", "depth_pkts"}, _port),
    "mirroring": ({"session", "port"}, set(), _mirroring),
}
TOP_LEVEL = {"program", "clear", *SECTIONS}


def load_config(path: str | Path) -> dict[str, Any]:
    text = Path(path).read_text(encoding="utf-8")
    try:
        doc = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"{path}: not valid {'JSON' if str(path).endswith('.json') else 'YAML'}: {exc}"
        ) from exc
    validate(doc, str(path))
    return doc


def validate(doc: Any, where: str) -> None:
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping of sections ({', '.join(sorted(TOP_LEVEL))})")
    unknown = set(doc) - TOP_LEVEL
    if unknown:
        raise ConfigError(
            f"{where}: unknown section(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(TOP_LEVEL))}"
        )
    if "clear" in doc and not (
        isinstance(doc["clear"], list) and all(isinstance(t, str) for t in doc["clear"])
    ):
        raise ConfigError(f"{where}: 'clear' must be a list of table names")
    for section, (required, optional, _) in SECTIONS.items():
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
                    + (f"unknown {', '.join(sorted(extra))}" if extra else "")
                )


def apply_config(client: SwitchClient, doc: dict[str, Any], base_dir: Path = Path(".")) -> list[str]:
    """Apply a validated configuration; returns one line per change made."""
    done: list[str] = []
    if "program" in doc:
        program = Path(doc["program"])
        if not program.is_absolute():
            program = base_dir / program
        client.load_program(program)
        done.append(f"loaded {program}")
    for table in doc.get("clear", []):
        client.table_clear(table)
        done.append(f"{table}: cleared")
    for section, (_, _, handler) in SECTIONS.items():
        for n, item in enumerate(doc.get(section, []), 1):
            try:
                done.append(handler(client, item))
            except (SwitchOperationError, ValueError) as exc:
                raise SwitchOperationError(f"{section} item {n}: {exc}") from exc
    return done
