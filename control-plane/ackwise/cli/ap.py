"""``ackwise ap``: the AP proxy (p4src/ap_proxy.p4) and its repair agent, for operators."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from ackwise.cli.args import SWITCH_PORT, int_in
from ackwise.cli.common import Registry, client_for
from ackwise.cli.output import emit, render_records
from ackwise.features.ap import (
    AGENT_TIMEOUT_MS,
    ApConfigError,
    ApFlow,
    StationParams,
    add_station,
    agent_stats_path,
    check_ports,
    configure_ap,
    list_stations,
    parse_station_prefix,
    read_agent_report,
    read_flows,
    read_stats,
    remove_station,
)

STAT_LABELS = {
    "spoofed": "spoofed ACKs sent",
    "consumed": "station ACKs consumed",
    "dup_to_agent": "duplicate station ACKs to the agent",
    "budget_stalls": "segments not spoofed: over budget",
    "not_spoofed": "segments not spoofed: out of order, FIN/RST/URG, no window",
    "stall_exits": "flows that left fast mode: station stalled",
    "repairs": "local repairs (packet-outs to stations)",
    "collisions": "packets whose flow slot was taken",
}


def _agent(args: argparse.Namespace) -> dict[str, Any] | None:
    path = Path(args.agent_stats) if args.agent_stats else agent_stats_path(args.thrift_port)
    return read_agent_report(path)


def cmd_ap_status(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        stats = read_stats(client)
        stations = list_stations(client)
        flows = read_flows(client)
    agent = _agent(args)
    age_ms = stats["agent_heartbeat_age_ms"]
    alive = 0 <= age_ms < AGENT_TIMEOUT_MS
    modes = Counter(f.mode for f in flows)
    data = {
        "agent_alive": alive,
        "agent_heartbeat_age_ms": age_ms,
        "agent": agent,
        "stations": len(stations),
        "flows": dict(modes),
        "outstanding_bytes": sum(f.outstanding_bytes for f in flows),
        "counters": {k: v for k, v in stats.items() if k != "agent_heartbeat_age_ms"},
    }
    if age_ms < 0:
        beat = "agent: never seen (no heartbeat): the AP forwards everything without spoofing"
    elif alive:
        beat = f"agent: alive (last heartbeat {age_ms} ms ago)"
    else:
        beat = (
            f"agent: GONE (no heartbeat for {age_ms / 1000:.1f} s): new data is forwarded without "
            "spoofing; data already spoofed and lost on the air cannot be repaired"
        )
    text = [beat]
    if agent is not None:
        c = agent.get("counters", {})
        text.append(
            f"  pid {agent.get('pid')} on {agent.get('iface')}: {agent.get('buffered_bytes', 0)} bytes "
            f"buffered in {len(agent.get('flows', {}))} flows (cap {agent.get('global_cap_bytes')}), "
            f"{c.get('repairs_sent', 0)} repairs sent, {c.get('over_cap', 0)} over the cap, "
            f"{c.get('errors', 0)} errors (report {agent.get('age_s')} s old)"
        )
    mode_text = ", ".join(f"{n} {m}" for m, n in sorted(modes.items())) or "none"
    text.append(f"stations served: {len(stations)}; flows: {mode_text}")
    text.append(f"spoofed, not yet acknowledged by stations: {data['outstanding_bytes']} bytes")
    text += [f"  {label}: {stats[key]}" for key, label in STAT_LABELS.items()]
    emit(args, data, text)
    return 0


FLOW_COLUMNS = (
    "slot",
    "key",
    "mode",
    "outstanding_bytes",
    "buffered_bytes",
    "repairs",
    "spoofed_acks",
    "consumed_acks",
    "dup_acks_to_agent",
    "budget_stalls",
    "window_updates",
)


def cmd_ap_flows(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        flows = read_flows(client)
    rows = flow_rows(flows, (_agent(args) or {}).get("flows", {}))
    emit(args, rows, render_records(FLOW_COLUMNS, rows, "no flows"))
    return 0


def flow_rows(flows: list[ApFlow], agent_flows: dict[str, Any]) -> list[dict[str, Any]]:
    """The switch's view of each flow joined with what the agent holds for it."""
    rows = []
    for flow in flows:
        held = agent_flows.get(str(flow.key), {})
        rows.append(
            flow.to_dict()
            | {"buffered_bytes": held.get("buffered_bytes", 0), "repairs": held.get("repairs", 0)}
        )
    return rows


STATION_COLUMNS = (
    "handle",
    "ip_version",
    "station",
    "budget_bytes",
    "fast_after_segments",
    "stall_timeout_ms",
    "holdoff_ms",
)


def cmd_ap_stations(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        stations = list_stations(client)
    emit(args, stations, render_records(STATION_COLUMNS, stations, "no stations served"))
    return 0


def cmd_ap_serve(args: argparse.Namespace) -> int:
    prefix = parse_station_prefix(args.prefix)
    params = StationParams(
        budget_bytes=args.budget_bytes,
        fast_after_segments=args.fast_after_segments,
        stall_timeout_ms=args.stall_timeout_ms,
        holdoff_ms=args.holdoff_ms,
    )
    with client_for(args) as client:
        remove_station(client, prefix)
        handle = add_station(client, prefix, params)
    emit(args, {"handle": handle, "station": prefix} | params.__dict__, f"serving {prefix} (entry {handle})")
    return 0


def cmd_ap_unserve(args: argparse.Namespace) -> int:
    prefix = parse_station_prefix(args.prefix)
    with client_for(args) as client:
        if not remove_station(client, prefix):
            raise ApConfigError(f"{prefix} is not served: 'ackwise ap stations' lists what is")
    emit(args, {"deleted": prefix}, f"no longer serving {prefix}: its new flows pass untouched")
    return 0


def cmd_ap_setup(args: argparse.Namespace) -> int:
    check_ports(args.uplink, args.wireless, args.cpu)
    with client_for(args) as client:
        configure_ap(client, args.uplink, args.wireless, args.cpu, [])
    emit(
        args,
        {"uplink": args.uplink, "wireless": args.wireless, "cpu": args.cpu},
        f"AP ports: uplink {args.uplink}, wireless {args.wireless}, CPU {args.cpu}; "
        "now `ackwise ap serve PREFIX` and start the agent: python -m ackwise.daemons.ap_agent --iface IFACE",
    )
    return 0


def add_commands(registry: Registry) -> None:
    ap = registry.group("ap", "the AP proxy (ap_proxy.p4): stations, flows, the repair agent")
    for name, fn, help_ in (
        ("status", cmd_ap_status, "the agent's liveness and memory, AP-wide counters"),
        ("flows", cmd_ap_flows, "per-flow mode, outstanding and buffered bytes, repairs, counters"),
    ):
        p = registry.command(ap, name, fn, help_)
        p.add_argument(
            "--agent-stats",
            metavar="FILE",
            help="the agent's --stats file (default: the one for this Thrift port)",
        )
    registry.command(ap, "stations", cmd_ap_stations, "the station prefixes served and their parameters")
    defaults = StationParams()
    p = registry.command(
        ap, "serve", cmd_ap_serve, "serve a station prefix (replaces its entry if it has one)"
    )
    p.add_argument(
        "prefix", help="station address or prefix, IPv4 or IPv6, e.g. 10.0.0.3/32 or fd00:0:0:2::/64"
    )
    p.add_argument(
        "--budget-bytes",
        type=int_in(1, 2**32 - 1, "bytes"),
        default=defaults.budget_bytes,
        help="most bytes spoofed ahead of the station's own ACK (what the agent may have to hold); "
        "keep the sum over busy stations below the AP's wireless queue",
    )
    u32 = int_in(0, 2**32 - 1)
    p.add_argument("--fast-after-segments", type=u32, default=defaults.fast_after_segments)
    p.add_argument("--stall-timeout-ms", type=u32, default=defaults.stall_timeout_ms)
    p.add_argument("--holdoff-ms", type=u32, default=defaults.holdoff_ms, help="0: leave fast mode for good")
    p = registry.command(ap, "unserve", cmd_ap_unserve, "stop serving a station prefix")
    p.add_argument("prefix", help="as given to 'ap serve' (IPv4 or IPv6)")
    p = registry.command(
        ap, "setup", cmd_ap_setup, "port roles and multicast groups of a fresh ap_proxy switch"
    )
    p.add_argument(
        "--uplink", type=SWITCH_PORT, action="append", required=True, help="wired port (repeatable)"
    )
    p.add_argument(
        "--wireless", type=SWITCH_PORT, action="append", required=True, help="station port (repeatable)"
    )
    p.add_argument("--cpu", type=SWITCH_PORT, required=True, help="the port of the repair agent")
