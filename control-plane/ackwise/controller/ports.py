"""What a port's egress queue shows: its backlog and CE marks, and, for ports with a rate, how
busy it was. Each half-flow record holds the port its segments leave by (ack_thinning.port), so
the controller knows which port a flow's ACKs and data cross, however the switch forwards them.
"""

from __future__ import annotations

from ackwise.bmv2.client import SwitchClient, SwitchOperationError
from ackwise.bmv2.program import UnknownName
from ackwise.features import ecn, queues


def queue_backlog_pkts(client: SwitchClient, port: int) -> int | None:
    """Packets waiting in ``port``'s egress queue, from the program's queue model; None for a port
    without a rate or a program without the model (ackwise.features.queues.queue_backlog_pkts)."""
    try:
        return queues.queue_backlog_pkts(client, port)
    except (SwitchOperationError, UnknownName):  # not this program: unknown, not an error
        return None


def ecn_marks(client: SwitchClient, port: int) -> int | None:
    """CE marks the port has applied so far; None if the program does not mark (no ecn.marks)."""
    try:
        return ecn.marks(client, port)
    except (SwitchOperationError, UnknownName):  # not this program: unknown, not an error
        return None


def port_loads(client: SwitchClient) -> dict[int, tuple[int, int]]:
    """port -> (service_us, packets booked) of the ports with a rate (ackwise.features.queues.port_loads);
    {} for a program without the queue model."""
    try:
        return queues.port_loads(client)
    except (SwitchOperationError, UnknownName):
        return {}


def busy_share(before: tuple[int, int] | None, after: tuple[int, int], elapsed_us: int) -> float | None:
    """The share of ``elapsed_us`` a port was busy sending, from two port_loads() readings (packets
    booked, times the service time); None without an earlier reading, a service change, or time."""
    if before is None or elapsed_us <= 0 or before[0] != after[0]:
        return None
    packets = (after[1] - before[1]) % 2**32
    return min(1.0, packets * after[0] / elapsed_us)
