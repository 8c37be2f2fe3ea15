"""Control plane of the AP proxy (p4src/ap_proxy.p4): port roles, the stations served (IPv4 prefixes
in ap.stations, IPv6 prefixes in ap.stations6), the multicast groups that make a spoofed segment's
three copies, and the per-flow records (IPv4 and IPv6 flows alike)."""

from __future__ import annotations

import ipaddress
import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import SwitchClient, named_cells
from ackwise.errors import InputError
from ackwise.twins.flowkey import FlowKey, address6
from ackwise.twins.p4names import (
    ACTION_AP_CPU,
    ACTION_AP_EGRESS_UPLINK,
    ACTION_AP_EGRESS_WIRELESS,
    ACTION_AP_SERVE,
    ACTION_AP_UPLINK,
    ACTION_AP_WIRELESS,
    AP_AGENT_TIMEOUT_US,
    COUNTER_AP_REPAIRS,
    COUNTER_AP_STATS,
    FLOW_KEY_IPV6,
    KEY_PORT,
    KEY_STATION,
    REGISTER_AP_AGENT_ALIVE_AT_US,
    REGISTER_AP_BUDGET_STALLS,
    REGISTER_AP_CONSUMED_ACKS,
    REGISTER_AP_DUP_ACKS_TO_AGENT,
    REGISTER_AP_HOLDOFF_UNTIL_US,
    REGISTER_AP_KEY6_A,
    REGISTER_AP_KEY6_B,
    REGISTER_AP_KEY_A,
    REGISTER_AP_KEY_B,
    REGISTER_AP_KEY_PORTS,
    REGISTER_AP_MODE,
    REGISTER_AP_SPOOFED,
    REGISTER_AP_SPOOFED_ACKS,
    REGISTER_AP_STATE,
    REGISTER_AP_STATION_ACK,
    REGISTER_AP_WINDOW_UPDATES,
    TABLE_AP_EGRESS_ROLE,
    TABLE_AP_PORT_ROLE,
    TABLE_AP_STATIONS,
    TABLE_AP_STATIONS6,
    ApFlowState,
    ApMode,
    ApRid,
    ApStat,
)
from ackwise.twins.serial import seq_diff

AGENT_TIMEOUT_MS = AP_AGENT_TIMEOUT_US / 1000  # no heartbeat this long: the switch stops spoofing


class ApConfigError(InputError, ValueError):
    """A station prefix, parameter or port the AP cannot take; the message names it and the fix."""


def parse_station_prefix(text: str) -> str:
    """``10.0.0.3``, ``10.0.0.0/24``, ``fd00:0:0:2::1`` or ``fd00:0:0:2::/64`` -> the normalised
    prefix (a bare address is its /32 or /128); host bits must be zero."""
    try:
        return str(ipaddress.ip_network(text.strip()))
    except ValueError as exc:
        raise ApConfigError(
            f"station {text}: not an IPv4 or IPv6 address or prefix ({exc}); write e.g. 10.0.0.3/32, "
            "10.0.1.0/24, fd00:0:0:2::1/128 or fd00:0:0:2::/64"
        ) from None


# Where each IP version's station prefixes are (ap_stations.p4): the same action and parameters.
STATION_TABLES = {4: TABLE_AP_STATIONS, 6: TABLE_AP_STATIONS6}


@dataclass(frozen=True)
class StationParams:
    """How the proxy treats flows to a station (prefix)."""

    # Spoofed but not yet acknowledged by the station: at most this. The sum over busy stations
    # must fit the queue in front of the air (docs/ap-proxy.md).
    budget_bytes: int = 64 * 1024
    fast_after_segments: int = 4  # in-order segments after the handshake before spoofing
    stall_timeout_ms: int = 1000  # station ACK stuck with data outstanding this long: leave fast mode
    holdoff_ms: int = 2000  # ...for this long (0: for good)

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
                raise ApConfigError(f"{name}={value}: must be a whole number 0..{2**32 - 1}")
        if self.budget_bytes < 1:
            raise ApConfigError(f"budget_bytes={self.budget_bytes}: must be at least one byte")


def multicast_group(station_port: int, uplink_port: int) -> int:
    """The group the P4 picks for a spoofed segment: (station port << 8) | uplink port."""
    if not (0 <= station_port < 256 and 0 <= uplink_port < 256):
        raise ApConfigError(
            f"AP ports {station_port}, {uplink_port}: must be below 256 (multicast group ids are 16 bits)"
        )
    return station_port << 8 | uplink_port


def check_ports(uplink_ports: list[int], wireless_ports: list[int], cpu_port: int) -> None:
    """Refuse port roles the multicast groups cannot express, before anything is written."""
    if 0 in wireless_ports or 0 in uplink_ports:
        raise ApConfigError(
            "the AP cannot use port 0 as uplink or wireless: multicast group ids use 0 for 'none'"
        )
    roles = [*uplink_ports, *wireless_ports, cpu_port]
    if len(set(roles)) != len(roles):
        raise ApConfigError(
            f"uplink, wireless and CPU ports must all differ (given {', '.join(map(str, roles))})"
        )
    for port in [*uplink_ports, *wireless_ports]:
        multicast_group(port, 0)


def configure_ap(
    client: SwitchClient,
    uplink_ports: list[int],
    wireless_ports: list[int],
    cpu_port: int,
    stations: list[tuple[str, StationParams]],
) -> None:
    """Port roles (where a packet comes from, and where it goes: the proxy acts only between an
    uplink and a wireless port), the multicast groups and the stations. Group (wireless << 8) | uplink makes a
    spoofed segment's three copies (station, agent, ACK to the sender); (wireless << 8) | 0 a
    copied segment's two (station, agent); (0 << 8) | uplink a window update's two (the station's
    ACK to the agent, an ACK to the sender)."""
    check_ports(uplink_ports, wireless_ports, cpu_port)
    for port in uplink_ports:
        client.table_add(TABLE_AP_PORT_ROLE, ACTION_AP_UPLINK, {KEY_PORT: str(port)})
        client.table_add(TABLE_AP_EGRESS_ROLE, ACTION_AP_EGRESS_UPLINK, {KEY_PORT: str(port)})
    for port in wireless_ports:
        client.table_add(TABLE_AP_PORT_ROLE, ACTION_AP_WIRELESS, {KEY_PORT: str(port)}, {"cpu": cpu_port})
        client.table_add(TABLE_AP_EGRESS_ROLE, ACTION_AP_EGRESS_WIRELESS, {KEY_PORT: str(port)})
    client.table_add(TABLE_AP_PORT_ROLE, ACTION_AP_CPU, {KEY_PORT: str(cpu_port)})
    for u in uplink_ports:
        client.mc_group_set(multicast_group(0, u), [(ApRid.CPU, cpu_port), (ApRid.SPOOF, u)])
        for w in wireless_ports:
            client.mc_group_set(
                multicast_group(w, u), [(ApRid.STATION, w), (ApRid.CPU, cpu_port), (ApRid.SPOOF, u)]
            )
    for w in wireless_ports:
        client.mc_group_set(multicast_group(w, 0), [(ApRid.STATION, w), (ApRid.CPU, cpu_port)])
    for prefix, params in stations:
        add_station(client, prefix, params)


def add_station(client: SwitchClient, prefix: str, params: StationParams) -> int:
    """Serve a station prefix of either IP version (ap.stations or ap.stations6); its entry handle."""
    net = ipaddress.ip_network(parse_station_prefix(prefix))
    return client.table_add(
        STATION_TABLES[net.version],
        ACTION_AP_SERVE,
        {KEY_STATION: str(net)},
        {
            "budget_bytes": params.budget_bytes,
            "fast_after_segments": params.fast_after_segments,
            "stall_timeout_ms": params.stall_timeout_ms,
            "holdoff_ms": params.holdoff_ms,
        },
    )


def list_stations(client: SwitchClient) -> list[dict[str, Any]]:
    """Every station prefix served, IPv4's then IPv6's: entry handle (within its version's table),
    IP version, prefix and parameters."""
    out = []
    for version, table in STATION_TABLES.items():
        for e in client.table_entries(table):
            (key,) = e.key
            network = ipaddress.IPv6Network if version == 6 else ipaddress.IPv4Network
            prefix = network((key.value, key.prefix_len or 0))
            out.append({"handle": e.handle, "ip_version": version, "station": str(prefix), **e.params})
    return out


def remove_station(client: SwitchClient, prefix: str) -> int:
    """Stop serving a station prefix (either IP version): how many entries were deleted (0: it was
    not served)."""
    prefix = parse_station_prefix(prefix)
    version = ipaddress.ip_network(prefix).version
    handles = [s["handle"] for s in list_stations(client) if s["station"] == prefix]
    for handle in handles:
        client.table_delete(STATION_TABLES[version], handle)
    return len(handles)


def leave_fast_mode(client: SwitchClient, key: FlowKey, holdoff_ms: int) -> None:
    """What the agent does on trouble: the flow stops being spoofed (for holdoff_ms, or for good)."""
    if holdoff_ms == 0:
        client.register_write(REGISTER_AP_MODE, key.slot, ApMode.OFF)
        return
    until = client.time_elapsed_us() + holdoff_ms * 1000
    client.register_write(REGISTER_AP_HOLDOFF_UNTIL_US, key.slot, until)
    client.register_write(REGISTER_AP_MODE, key.slot, ApMode.HOLDOFF)


@dataclass
class ApFlow:
    slot: int
    key: FlowKey
    mode: str
    spoofed: int
    station_ack: int
    outstanding_bytes: int  # spoofed, not yet acknowledged by the station
    spoofed_acks: int
    consumed_acks: int
    dup_acks_to_agent: int
    budget_stalls: int
    window_updates: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"key": str(self.key)}


COUNTERS = ("spoofed_acks", "consumed_acks", "dup_acks_to_agent", "budget_stalls", "window_updates")


# The per-slot registers read_flows reads (each at most 63 bits: control-plane/tests/
# test_register_widths.py).
FLOW_REGISTERS = {
    "key_a": REGISTER_AP_KEY_A,
    "key_b": REGISTER_AP_KEY_B,
    "key_ports": REGISTER_AP_KEY_PORTS,
    "mode": REGISTER_AP_MODE,
    "state": REGISTER_AP_STATE,
    "spoofed": REGISTER_AP_SPOOFED,
    "station_ack": REGISTER_AP_STATION_ACK,
    "spoofed_acks": REGISTER_AP_SPOOFED_ACKS,
    "consumed_acks": REGISTER_AP_CONSUMED_ACKS,
    "dup_acks_to_agent": REGISTER_AP_DUP_ACKS_TO_AGENT,
    "budget_stalls": REGISTER_AP_BUDGET_STALLS,
    "window_updates": REGISTER_AP_WINDOW_UPDATES,
}


# An IPv6 flow's slot has (FLOW_KEY_IPV6, 0) in key_a and key_b, and its addresses in these:
# KEY6_WORDS 32-bit words each at slot * KEY6_WORDS, the highest first (ap_proxy_flows.p4).
KEY6_REGISTERS = (REGISTER_AP_KEY6_A, REGISTER_AP_KEY6_B)


def read_flows(client: SwitchClient) -> list[ApFlow]:
    regs = {name: client.register_read_all(register) for name, register in FLOW_REGISTERS.items()}
    words6: tuple[list[int], list[int]] | None = None
    flows = []
    for slot in range(len(regs["key_a"])):  # the program's slots
        a, b, ports = regs["key_a"][slot], regs["key_b"][slot], regs["key_ports"][slot]
        if a == 0 and b == 0 and ports == 0:
            continue
        if (a, b) == (FLOW_KEY_IPV6, 0):  # an IPv6 flow (never an IPv4 key: lower address first)
            if words6 is None:
                words6 = (
                    client.register_read_all(KEY6_REGISTERS[0]),
                    client.register_read_all(KEY6_REGISTERS[1]),
                )
            key = FlowKey.from_registers(
                address6(words6[0], slot), address6(words6[1], slot), ports, version=6
            )
        else:
            key = FlowKey.from_registers(a, b, ports)
        spoof_valid = regs["state"][slot] & ApFlowState.SPOOF_VALID
        spoofed, station_ack = regs["spoofed"][slot], regs["station_ack"][slot]
        flows.append(
            ApFlow(
                slot=slot,
                key=key,
                mode=ApMode(regs["mode"][slot]).name.lower(),
                spoofed=spoofed,
                station_ack=station_ack,
                outstanding_bytes=max(0, seq_diff(spoofed, station_ack)) if spoof_valid else 0,
                **{name: regs[name][slot] for name in COUNTERS},
            )
        )
    return flows


def read_stats(client: SwitchClient) -> dict[str, int]:
    stats = named_cells(client.counter_read_all(COUNTER_AP_STATS), ApStat)
    stats["repairs"] = client.counter_read(COUNTER_AP_REPAIRS, 0).packets
    alive_at = client.register_read(REGISTER_AP_AGENT_ALIVE_AT_US, 0)
    stats["agent_heartbeat_age_ms"] = (client.time_elapsed_us() - alive_at) // 1000 if alive_at else -1
    return stats


def agent_stats_path(thrift_port: int) -> Path:
    """Where the repair agent of the switch on this Thrift port writes its counters by default."""
    return Path(tempfile.gettempdir()) / f"ackwise-ap-agent-{thrift_port}.json"


def read_agent_report(path: Path) -> dict[str, Any] | None:
    """The agent's last report, or None when there is none or its writer is gone."""
    try:
        report: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    pid = report.get("pid")
    if not isinstance(pid, int) or not Path(f"/proc/{pid}").exists():
        return None
    report["age_s"] = round(max(0.0, time.time() - path.stat().st_mtime), 1)
    return report
