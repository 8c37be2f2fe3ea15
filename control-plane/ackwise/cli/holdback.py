"""``ackwise holdback``: the switch's hold-back agent (the in-network delayed-ACK timer)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ackwise.cli.args import SWITCH_PORT
from ackwise.cli.common import Registry, client_for
from ackwise.cli.output import emit
from ackwise.features import holdback


def cmd_setup(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        holdback.setup(client, args.cpu_port)
    text = (
        f"held ACKs go to CPU port {args.cpu_port} (session {holdback.HOLDBACK_SESSION}); start the agent: "
        f"python -m ackwise.daemons.holdback_agent --iface IFACE --thrift-port {args.thrift_port}"
        if args.cpu_port
        else "hold-back off: no CPU port"
    )
    emit(args, {"cpu_port": args.cpu_port, "session": holdback.HOLDBACK_SESSION}, text)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        state = holdback.status(client)
    report_path = holdback.agent_stats_path(args.thrift_port)
    agent: dict[str, Any] = {}
    if report_path.exists():
        try:
            agent = json.loads(report_path.read_text())
        except ValueError:
            agent = {}
    data = {"cpu_port": state.cpu_port, "agent_alive": state.agent_alive, "silent_ms": state.agent_silent_ms}
    data["agent"] = agent
    silent = (
        "never heard"
        if state.agent_silent_ms is None
        else f"last heartbeat {state.agent_silent_ms:.0f} ms ago"
    )
    alive = "alive" if state.agent_alive else "not alive"
    lines = [f"CPU port {state.cpu_port or 'none'}; agent {alive} ({silent})"]
    if agent:
        c = agent.get("counters", {})
        lines.append(
            f"agent pid {agent.get('pid')}: held {c.get('held', 0)}, released {c.get('released', 0)}, "
            f"superseded {c.get('superseded', 0)}, holding {agent.get('holding', 0)} now, "
            f"{agent.get('handling_us_per_ack')} us per ACK"
        )
        lines.append(
            f"queue share: kept {c.get('share_kept', 0)}, taken back {c.get('share_taken', 0)}, "
            f"bounced {c.get('share_bounced', 0)}, sent again {c.get('share_resent', 0)}, "
            f"holding {agent.get('share_holding', 0)} now"
        )
    emit(args, data, lines)
    return 0


def add_commands(registry: Registry) -> None:
    hb = registry.group(
        "holdback", "hold back a burst's last ACK in an agent instead of forwarding it (ack_switch)"
    )
    p = registry.command(hb, "setup", cmd_setup, "send held ACKs to this CPU port and take them back from it")
    p.add_argument("cpu_port", type=SWITCH_PORT, help="the CPU port's number (0: off)")
    registry.command(hb, "status", cmd_status, "the CPU port, whether the agent is alive, what it holds")
