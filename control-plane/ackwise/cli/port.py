"""ackwise port and ackwise mirror: egress queue rate, depth and ECN marking per port; mirroring sessions."""

from __future__ import annotations

import argparse

from ackwise.cli.args import I32_MAX, I64_MAX, SESSION, SWITCH_PORT, int_in
from ackwise.cli.common import Registry, UsageError, client_for, parse_port
from ackwise.cli.output import emit
from ackwise.errors import shown
from ackwise.features import ecn
from ackwise.features.queues import set_queue_depth, set_queue_rate


def cmd_port_rate(args: argparse.Namespace) -> int:
    port = parse_port(args.port)
    with client_for(args) as client:
        set_queue_rate(client, port, args.rate_pps)
    emit(
        args,
        {"port": args.port, "rate_pps": args.rate_pps},
        f"port {args.port}: egress queue served at {args.rate_pps} packets/s",
    )
    return 0


def cmd_port_depth(args: argparse.Namespace) -> int:
    port = parse_port(args.port)
    with client_for(args) as client:
        set_queue_depth(client, port, args.depth_pkts)
    emit(
        args,
        {"port": args.port, "depth_pkts": args.depth_pkts},
        f"port {args.port}: egress queue holds {args.depth_pkts} packets",
    )
    return 0


def cmd_port_ecn(args: argparse.Namespace) -> int:
    port = parse_port(args.port)
    if port is None:
        raise UsageError("ECN thresholds are set one port at a time: give a port number, not 'all'")
    # Checked before connecting: a bad setting is the same mistake with or without a switch.
    if args.setting == ["off"]:
        setting: tuple[int, ...] = ()
    elif len(args.setting) == 1:
        setting = (_int(args.setting[0], "K"),)
        ecn.check_threshold(setting[0])
    elif len(args.setting) == 3:
        setting = tuple(_int(v, n) for v, n in zip(args.setting, ("k_min", "k_max", "p_max"), strict=True))
        ecn.check_red(*setting)
    else:
        raise UsageError("give K, or K_MIN K_MAX P_MAX_PERCENT, or 'off'")
    with client_for(args) as client:
        if not setting:
            ecn.disable(client, port)
            text = f"port {port}: no ECN marking"
        elif len(setting) == 1:
            ecn.set_threshold(client, port, setting[0])
            text = f"port {port}: CE when more than {setting[0]} packets are queued"
        else:
            k_min, k_max, p_max = setting
            ecn.set_red(client, port, k_min, k_max, p_max)
            text = (
                f"port {port}: CE with probability up to {p_max} % between {k_min} and {k_max} packets, "
                "always above"
            )
        marked = ecn.marks(client, port)
    emit(args, {"port": port, "setting": args.setting, "marks": marked}, f"{text} (marked so far: {marked})")
    return 0


def _int(text: str, name: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"{name} {shown(text)} is not a whole number") from None


def cmd_mirror_add(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.mirroring_add(args.session, args.port)
    emit(
        args,
        {"session": args.session, "port": args.port},
        f"mirroring session {args.session} -> port {args.port}",
    )
    return 0


def cmd_mirror_del(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.mirroring_delete(args.session)
    emit(args, {"session": args.session, "deleted": True}, f"deleted mirroring session {args.session}")
    return 0


def cmd_mirror_show(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        port = client.mirroring_get(args.session)
    emit(args, {"session": args.session, "port": port}, f"mirroring session {args.session} -> port {port}")
    return 0


def add_commands(registry: Registry) -> None:
    pt = registry.group("port", "egress queue rate and depth per port")
    p = registry.command(pt, "rate", cmd_port_rate, "egress queue service rate in packets per second")
    p.add_argument("port", help="port number, or 'all'")
    p.add_argument("rate_pps", type=int_in(0, I64_MAX, "packets/s"), help="0: no limit (bmv2's default)")
    p = registry.command(pt, "depth", cmd_port_depth, "egress queue capacity in packets")
    p.add_argument("port", help="port number, or 'all'")
    p.add_argument("depth_pkts", type=int_in(1, I32_MAX, "packets"))
    p = registry.command(
        pt, "ecn", cmd_port_ecn, "ECN marking threshold of a port's egress queue (ack_switch)"
    )
    p.add_argument("port", help="port number")
    p.add_argument(
        "setting",
        nargs="+",
        metavar="SETTING",
        help="K (packets): mark above it; or K_MIN K_MAX P_MAX_PERCENT (RED-like); or 'off'",
    )

    mr = registry.group("mirror", "mirroring (clone) sessions")
    p = registry.command(mr, "add", cmd_mirror_add, "send clones of session SESSION to PORT")
    p.add_argument("session", type=SESSION)
    p.add_argument("port", type=SWITCH_PORT)
    p = registry.command(mr, "del", cmd_mirror_del, "delete a mirroring session")
    p.add_argument("session", type=SESSION)
    p = registry.command(mr, "show", cmd_mirror_show, "show the port of a mirroring session")
    p.add_argument("session", type=SESSION)
