"""Control plane of ACK thinning: policy rules in the ack_thinning.policy table, and the per-flow
records the switch keeps in registers (what ``ackwise flows`` shows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bmv2.client import SwitchClient, SwitchOperationError
from .flowkey import FlowKey
from .policies import POLICY_TABLE, PolicyMatch, PolicyParams
from .safety import KeepReason

THINNING_STATS = "ack_thinning.stats"
FILTER_STATS = "ack_filter.stats"
CONFIG_REGISTER = "ack_thinning.config"


class ThinningStat:
    """Indices of the ack_thinning.stats counter (STAT_* in constants.p4)."""

    COLLISIONS = 0
    RECLAIMED = 1
    NEW_FLOWS = 2
    ACKS_SEEN = 3
    ACKS_THINNED = 4
    ACKS_FILTERED = 5
    ACKS_ABSORBED = 6
    ACKS_HELD = 7


@dataclass(frozen=True)
class PolicyRule:
    handle: int
    match: PolicyMatch
    params: PolicyParams
    priority: int


def set_policy(
    client: SwitchClient, match: PolicyMatch, params: PolicyParams, priority: int | None = None
) -> int:
    """Add a rule; the most specific match wins unless ``priority`` says otherwise (lower wins)."""
    action, action_params = params.action()
    return client.table_add(
        POLICY_TABLE, action, match.key(), action_params, priority if priority is not None else match.priority
    )


def set_default_policy(client: SwitchClient, params: PolicyParams) -> None:
    action, action_params = params.action()
    client.table_set_default(POLICY_TABLE, action, action_params)


def list_policies(client: SwitchClient) -> tuple[list[PolicyRule], PolicyParams]:
    rules = []
    for entry in client.table_entries(POLICY_TABLE):
        key = {m.field: (m.value, m.mask or 0) for m in entry.key}
        rules.append(
            PolicyRule(
                entry.handle,
                PolicyMatch.from_key(key),
                PolicyParams.from_action(entry.action, entry.params),
                entry.priority or 0,
            )
        )
    default = client.table_default(POLICY_TABLE)
    default_params = (
        PolicyParams.from_action(default.action, default.params)
        if default.action
        else PolicyParams.parse("off", [])
    )
    return sorted(rules, key=lambda r: (r.priority, r.handle)), default_params


def delete_policy(client: SwitchClient, handle: int) -> None:
    client.table_delete(POLICY_TABLE, handle)


def set_reclaim_idle_ms(client: SwitchClient, idle_ms: int) -> None:
    """Records idle this long may be taken over by another flow (0: the built-in 10 s)."""
    if idle_ms < 0:
        raise SwitchOperationError("reclaim idle time must be >= 0 ms")
    client.register_write(CONFIG_REGISTER, 0, idle_ms * 1000)


# ---- flow records ----

HALF_REGISTERS = {
    "acks_seen": "ack_thinning.acks_seen",
    "acks_forwarded": "ack_thinning.acks_forwarded",
    "acks_thinned": "ack_thinning.acks_thinned",
    "data_segments": "ack_thinning.data_segments",
    "last_keep_reason": "ack_thinning.last_keep_reason",
    "rtt_min_us": "ack_thinning.rtt_min_us",
    "filter_forwarded": "ack_filter.forwarded",
    "filter_filtered": "ack_filter.filtered",
    "acc_d": "acc.d",
    "acc_d_max": "acc.d_max",
    "acc_signals": "acc.signals",
    "coalesce_counts": "coalesce.counts",
    "holdback_held": "holdback.held",
    "holdback_released": "holdback.released",
    "data_end": "ack_thinning.data_end",
    "retransmissions": "ack_thinning.retransmissions",
    "dup_acks": "ack_thinning.dup_acks",
}


@dataclass
class HalfFlow:
    """One direction of a flow: the data this endpoint sent and the ACKs it sent about the other's."""

    sender: str
    acks_seen: int = 0
    acks_forwarded: int = 0
    acks_thinned: int = 0
    data_segments: int = 0
    last_keep_reason: str = "none"
    rtt_min_us: int = 0  # from this endpoint's data to the other's ACKs, seen from the switch
    acc_d: int = 0  # acc: the delay factor of this endpoint's ACKs (0: not under acc)
    acc_d_max: int = 0
    acc_signals: int = 0  # congestion signals that doubled d
    acks_absorbed: int = 0  # coalesce: folded into a waiting ACK (also counted in acks_thinned)
    acks_rewritten: int = 0  # coalesce: waiting ACKs that left carrying absorbed ACKs' state
    # hold-back: handed to the agent (counted thinned until released), and released (then counted
    # forwarded instead): acks_seen = acks_forwarded + acks_thinned at any time.
    acks_held: int = 0
    acks_released: int = 0
    data_end: int = 0  # the highest sequence number + length this endpoint sent (serial)
    retransmissions: int = 0  # data segments that did not go beyond data_end
    dup_acks: int = 0  # ACKs this endpoint sent that the contract kept as duplicates

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class FlowRecord:
    slot: int
    key: FlowKey
    last_seen_us: int
    closed: bool
    halves: list[HalfFlow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "flow": str(self.key),
            "last_seen_us": self.last_seen_us,
            "closed": self.closed,
            "directions": [h.to_dict() for h in self.halves],
        }


def read_flows(client: SwitchClient) -> list[FlowRecord]:
    addrs = client.register_read_all("ack_thinning.key_addrs")
    ports = client.register_read_all("ack_thinning.key_ports")
    last_seen = client.register_read_all("ack_thinning.last_seen_us")
    closed = client.register_read_all("ack_thinning.closed")
    halves = {name: client.register_read_all(reg) for name, reg in HALF_REGISTERS.items()}
    flows = []
    for slot, (a, p) in enumerate(zip(addrs, ports, strict=True)):
        if a == 0 and p == 0:
            continue
        key = FlowKey.from_registers(a, p)
        record = FlowRecord(slot, key, last_seen[slot], bool(closed[slot]))
        for direction in (0, 1):
            h = slot << 1 | direction
            reason = halves["last_keep_reason"][h]
            record.halves.append(
                HalfFlow(
                    sender=key.endpoint(direction),
                    acks_seen=halves["acks_seen"][h],
                    # filter decides at egress: its forwarded/filtered counts add to ingress's
                    acks_forwarded=halves["acks_forwarded"][h] + halves["filter_forwarded"][h],
                    acks_thinned=halves["acks_thinned"][h] + halves["filter_filtered"][h],
                    data_segments=halves["data_segments"][h],
                    last_keep_reason=KeepReason(reason).name.lower()
                    if reason in KeepReason._value2member_map_
                    else str(reason),
                    rtt_min_us=halves["rtt_min_us"][h],
                    acc_d=halves["acc_d"][h],
                    acc_d_max=halves["acc_d_max"][h],
                    acc_signals=halves["acc_signals"][h],
                    acks_absorbed=halves["coalesce_counts"][h] >> 32,
                    acks_rewritten=halves["coalesce_counts"][h] & 0xFFFFFFFF,
                    acks_held=halves["holdback_held"][h],
                    acks_released=halves["holdback_released"][h],
                    data_end=halves["data_end"][h],
                    retransmissions=halves["retransmissions"][h],
                    dup_acks=halves["dup_acks"][h],
                )
            )
        flows.append(record)
    return flows
