"""Which port a flow's ACKs leave by, and what that port's egress queue shows.

The switch does not record a flow's egress port, so it is looked up as the switch forwards: the
longest ``forwarding.ipv4_lpm`` prefix holding the ACKs' destination (the data sender). ACKs that
only the L2 fallback forwards have no known port, and so no backlog or marks.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from ackwise import ecn
from ackwise.bmv2.client import SwitchClient, SwitchOperationError
from ackwise.bmv2.program import UnknownName
from ackwise.p4names import IPV4_LPM


@dataclass(frozen=True)
class Route:
    prefix: ipaddress.IPv4Network
    port: int


def read_routes(client: SwitchClient) -> list[Route]:
    """The LPM routes of the switch (one Thrift call); none if the program has no such table."""
    try:
        entries = client.table_entries(IPV4_LPM)
    except (SwitchOperationError, UnknownName):  # not this program: unknown, not an error
        return []
    routes = []
    for entry in entries:
        if "port" not in entry.params or not entry.key:
            continue
        key = entry.key[0]
        routes.append(Route(ipaddress.IPv4Network((key.value, key.prefix_len or 0)), entry.params["port"]))
    return routes


def egress_port(routes: Sequence[Route], dst: ipaddress.IPv4Address) -> int | None:
    """The port the switch sends packets to ``dst`` out of, by longest prefix; None: no route."""
    best: Route | None = None
    for route in routes:
        if dst in route.prefix and (best is None or route.prefix.prefixlen > best.prefix.prefixlen):
            best = route
    return best.port if best is not None else None


def queue_backlog_pkts(client: SwitchClient, port: int) -> int | None:
    """Packets waiting in ``port``'s egress queue; None while the switch does not expose it.

    Placeholder: bmv2's Thrift API sets queue rates and depths but reads no occupancy, so the P4
    program has to record it (e.g. ``deq_qdepth`` per egress port in a register) and this function
    read that register."""
    del client, port
    return None


def ecn_marks(client: SwitchClient, port: int) -> int | None:
    """CE marks the port has applied so far; None if the program does not mark (no ecn.marks)."""
    try:
        return ecn.marks(client, port)
    except (SwitchOperationError, UnknownName):  # not this program: unknown, not an error
        return None
