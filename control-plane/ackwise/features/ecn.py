"""ECN marking thresholds per egress port (p4src/include/ecn_marking.p4) and its mark counters."""

from __future__ import annotations

from ackwise.bmv2.client import SwitchClient, SwitchInputError
from ackwise.twins.p4names import (
    ACTION_ECN_RED,
    ACTION_ECN_THRESHOLD,
    COUNTER_ECN_MARKS,
    KEY_PORT,
    TABLE_ECN_PORT_THRESHOLD,
)

MAX_DEPTH = (1 << 19) - 1  # enq_qdepth is 19 bits


def _clear_port(client: SwitchClient, port: int) -> None:
    for entry in client.table_entries(TABLE_ECN_PORT_THRESHOLD):
        if entry.key[0].value == port:
            client.table_delete(TABLE_ECN_PORT_THRESHOLD, entry.handle)


def check_threshold(k_pkts: int) -> None:
    if not 0 <= k_pkts <= MAX_DEPTH:
        raise SwitchInputError(f"K={k_pkts}: a queue depth in packets, 0..{MAX_DEPTH}")


def check_red(k_min_pkts: int, k_max_pkts: int, p_max_pct: int) -> None:
    if not 0 <= k_min_pkts < k_max_pkts <= MAX_DEPTH:
        raise SwitchInputError(
            f"k_min={k_min_pkts} k_max={k_max_pkts}: give 0 <= k_min < k_max <= {MAX_DEPTH} packets"
        )
    if not 0 <= p_max_pct <= 100:
        raise SwitchInputError(f"p_max={p_max_pct}: a percentage, 0..100")


def set_threshold(client: SwitchClient, port: int, k_pkts: int) -> None:
    """Mark CE on ECT packets that find more than k_pkts packets in the port's egress queue."""
    check_threshold(k_pkts)
    _clear_port(client, port)
    client.table_add(TABLE_ECN_PORT_THRESHOLD, ACTION_ECN_THRESHOLD, {KEY_PORT: str(port)}, {"k": k_pkts})


def set_red(client: SwitchClient, port: int, k_min_pkts: int, k_max_pkts: int, p_max_pct: int) -> None:
    """Above k_max always; between k_min and k_max with a probability rising linearly to p_max."""
    check_red(k_min_pkts, k_max_pkts, p_max_pct)
    _clear_port(client, port)
    client.table_add(
        TABLE_ECN_PORT_THRESHOLD,
        ACTION_ECN_RED,
        {KEY_PORT: str(port)},
        {"k_min_pkts": k_min_pkts, "k_max_pkts": k_max_pkts, "p_max": p_max_pct},
    )


def disable(client: SwitchClient, port: int) -> None:
    _clear_port(client, port)


def marks(client: SwitchClient, port: int) -> int:
    return client.counter_read(COUNTER_ECN_MARKS, port).packets
