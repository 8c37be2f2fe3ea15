"""Hold-back: the switch hands an ACK it would thin, but that may end a burst, to an agent on its
CPU port, which sends it back after the policy's hold time (p4src/include/ack_holdback.p4). The
same agent is the queue share's second queue (ackwise/queue_share.py).

This module sets the switch up for it (``setup``), says what state it is in (``status``), and
holds the decision logic of hold-back (``HoldTable``: pure, unit-tested); the agent's socket loop
is ackwise/holdback_agent.py.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import SwitchClient, SwitchInputError, SwitchOperationError
from ackwise.twins.p4names import (
    ACTION_HOLDBACK_AGENT_PORT,
    HOLDBACK_AGENT_TIMEOUT_US,
    HOLDBACK_SESSION,
    KEY_PORT,
    REGISTER_HOLDBACK_AGENT_ALIVE_AT_US,
    TABLE_HOLDBACK_PORTS,
)
from ackwise.twins.serial import seq_geq

# The switch stops holding ACKs back once the agent has been silent this long (fail-open).
AGENT_TIMEOUT_MS = HOLDBACK_AGENT_TIMEOUT_US / 1000
# holdback_h, in front of each copy the switch sends the agent: hold_ms, kind (p4names.AgentKind),
# arg (hold-back: the base ACK; the queue share: microseconds to wait).
HEADER = struct.Struct("!HHI")


def setup(client: SwitchClient, cpu_port: int) -> None:
    """Copy held ACKs to ``cpu_port`` and take released ones back from it (0: hold-back off)."""
    if TABLE_HOLDBACK_PORTS not in client.program.tables:
        raise SwitchInputError(
            f"the program on {client.where} has no hold-back: load ack_switch ('ackwise load ack_switch')"
        )
    if not 0 <= cpu_port < 512:
        raise SwitchInputError(f"CPU port {cpu_port}: must be a port number 0..511 (0: off)")
    client.table_clear(TABLE_HOLDBACK_PORTS)
    if cpu_port:
        client.table_add(TABLE_HOLDBACK_PORTS, ACTION_HOLDBACK_AGENT_PORT, {KEY_PORT: str(cpu_port)})
        client.mirroring_add(HOLDBACK_SESSION, cpu_port)
    else:
        try:
            client.mirroring_delete(HOLDBACK_SESSION)
        except SwitchOperationError:
            pass  # there was none


@dataclass(frozen=True)
class HoldbackStatus:
    cpu_port: int  # 0: none
    agent_alive: bool
    agent_silent_ms: float | None  # since its last heartbeat; None: never heard


def status(client: SwitchClient) -> HoldbackStatus:
    entries = client.table_entries(TABLE_HOLDBACK_PORTS)
    cpu_port = entries[0].key[0].value if entries else 0
    alive_at = client.register_read(REGISTER_HOLDBACK_AGENT_ALIVE_AT_US, 0)
    if not alive_at:
        return HoldbackStatus(cpu_port, False, None)
    silent_ms = (client.info().time_elapsed_us - alive_at) / 1000
    return HoldbackStatus(cpu_port, silent_ms < AGENT_TIMEOUT_MS, silent_ms)


def agent_stats_path(thrift_port: int) -> Path:
    """Where the hold-back agent of the switch on this Thrift port writes its counters by default."""
    return Path(tempfile.gettempdir()) / f"ackwise-holdback-agent-{thrift_port}.json"


# ---- the agent's decision logic ----

FlowId = tuple[str, str, int, int]  # the ACK's source, destination, source port, destination port


@dataclass
class Held:
    frame: bytes  # the ACK as the switch received it
    ack: int
    base_ack: int  # the flow's last ACK number the switch had forwarded when it held this one
    due: float  # when it goes back: hold_ms after the first ACK held on this base


@dataclass
class HoldTable:
    """The newest held ACK per flow, and when each goes back to the switch.

    A newer copy of a flow replaces the one held (it acknowledges at least as much) but keeps its
    due time: no ACK is delayed more than the hold time, as with a receiver's delayed-ACK timer.
    Unless the switch forwarded an ACK of the flow in between (the copy's base_ack moved): the held
    one is then superseded, and the new copy starts a new hold. An older copy (reordered on the
    way) is dropped: the held one says more."""

    held: dict[FlowId, Held] = field(default_factory=dict)
    counters: dict[str, int] = field(
        default_factory=lambda: {"held": 0, "replaced": 0, "superseded": 0, "stale": 0, "released": 0}
    )

    def offer(self, flow: FlowId, ack: int, base_ack: int, frame: bytes, hold_s: float, now: float) -> None:
        self.counters["held"] += 1
        current = self.held.get(flow)
        if current is None:
            self.held[flow] = Held(frame, ack, base_ack, now + hold_s)
        elif not seq_geq(ack, current.ack):
            self.counters["stale"] += 1
        elif base_ack != current.base_ack:
            self.counters["superseded"] += 1
            self.held[flow] = Held(frame, ack, base_ack, now + hold_s)
        else:
            self.counters["replaced"] += 1
            current.frame, current.ack = frame, ack

    def due(self, now: float) -> list[bytes]:
        """The frames to send back now (each flow's newest), removed from the table."""
        ready = [flow for flow, h in self.held.items() if h.due <= now]
        self.counters["released"] += len(ready)
        return [self.held.pop(flow).frame for flow in ready]

    def next_due(self) -> float | None:
        return min((h.due for h in self.held.values()), default=None)

    def report(self) -> dict[str, Any]:
        return {"counters": dict(self.counters), "holding": len(self.held)}
