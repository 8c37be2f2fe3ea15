"""Control plane of ACK thinning: policy rules in the ack_thinning.policy table, and the per-flow
records the switch keeps in registers (what ``ackwise flows`` shows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ackwise.bmv2.client import SwitchClient, SwitchOperationError
from ackwise.twins.flowkey import FlowKey, address6
from ackwise.twins.p4names import (
    FLOW_KEY_IPV6,
    REGISTER_ACC_D,
    REGISTER_ACC_D_MAX,
    REGISTER_ACC_SIGNALS,
    REGISTER_ACK_FILTER_FILTERED,
    REGISTER_ACK_FILTER_FORWARDED,
    REGISTER_ACK_THINNING_ACKS,
    REGISTER_ACK_THINNING_CONFIG,
    REGISTER_ACK_THINNING_DATA,
    REGISTER_ACK_THINNING_KEY6_A,
    REGISTER_ACK_THINNING_KEY6_B,
    REGISTER_ACK_THINNING_KEY_A,
    REGISTER_ACK_THINNING_KEY_B,
    REGISTER_ACK_THINNING_OUTCOME,
    REGISTER_ACK_THINNING_PORT,
    REGISTER_ACK_THINNING_RARE_COUNTS,
    REGISTER_ACK_THINNING_RTT,
    REGISTER_ACK_THINNING_SLOT,
    REGISTER_COALESCE_COUNTS,
    REGISTER_HOLDBACK_HELD,
    REGISTER_HOLDBACK_RELEASED,
    REGISTER_SHARE_COUNTS,
    TABLE_ACK_THINNING_FLOW_POLICY,
    TABLE_ACK_THINNING_FLOW_POLICY6,
    TABLE_ACK_THINNING_POLICY,
    TABLE_ACK_THINNING_POLICY6,
    KeepReason,
)
from ackwise.twins.policies import PolicyMatch, PolicyParams


@dataclass(frozen=True)
class PolicyRule:
    handle: int
    match: PolicyMatch
    params: PolicyParams
    priority: int
    version: int = 4  # the IP version of the table the rule is in (its handle is that table's)


# Each IP version's tables: (ternary rules, per-flow rules). A program without IPv6 has only IPv4's.
POLICY_TABLES = {
    4: (TABLE_ACK_THINNING_POLICY, TABLE_ACK_THINNING_FLOW_POLICY),
    6: (TABLE_ACK_THINNING_POLICY6, TABLE_ACK_THINNING_FLOW_POLICY6),
}


def policy_versions(client: SwitchClient) -> tuple[int, ...]:
    """The IP versions whose ACKs the switch's program can thin (whose rules' table it has)."""
    return tuple(v for v, (table, _) in POLICY_TABLES.items() if table in client.program.tables)


def thinned_versions(client: SwitchClient) -> tuple[int, ...]:
    """``policy_versions``, refusing a program that thins neither version (ap_proxy) with the
    program's own error naming the IPv4 table, as the CLI always said: without it a rule or
    default set on such a switch was silently nothing."""
    versions = policy_versions(client)
    if not versions:
        client.program.table(TABLE_ACK_THINNING_POLICY)  # raises UnknownName: no such table
    return versions


def offers(client: SwitchClient, version: int, params: PolicyParams) -> bool:
    """Whether ``version``'s tables offer the policy (ack_switch's offer every policy for both
    versions; a program whose IPv6 tables lacked one would leave IPv6 flows off under it)."""
    table = client.program.tables.get(POLICY_TABLES[version][0])
    return table is not None and params.action()[0] in table.actions


def set_policy(
    client: SwitchClient, match: PolicyMatch, params: PolicyParams, priority: int | None = None
) -> int:
    """Add a rule; the most specific match wins unless ``priority`` says otherwise (lower wins).
    Into the table of the match's IP version; a match without addresses goes into IPv4's and, where
    the program has IPv6's and it offers the policy, into IPv6's too. Returns the handle in the
    table of the match's version (IPv4's for one without addresses)."""
    action, action_params = params.action()
    handles = []
    thinned = thinned_versions(client)
    for version in match.versions:
        if version not in thinned:
            if match.version == version:
                raise SwitchOperationError(
                    f"match {match}: the switch's program has no IPv{version} policy table; "
                    "load ack_switch, which thins IPv4 and IPv6"
                )
            continue
        if version == 6 and not offers(client, 6, params):
            if match.version == 6:
                raise SwitchOperationError(
                    f"{params.policy.value} is not offered for IPv6 flows by the switch's program: "
                    "load ack_switch"
                )
            continue
        handles.append(
            client.table_add(
                POLICY_TABLES[version][0],
                action,
                match.key(version),
                action_params,
                priority if priority is not None else match.priority_in(version),
            )
        )
    return handles[0]


def set_default_policy(client: SwitchClient, params: PolicyParams) -> None:
    """The policy of flows no rule matches, for each IP version the program thins; IPv6's is
    ``off`` for a policy its tables do not offer (see ``offers``)."""
    action, action_params = params.action()
    for version in thinned_versions(client):
        if offers(client, version, params):
            client.table_set_default(POLICY_TABLES[version][0], action, action_params)
        else:
            off, off_params = PolicyParams.parse("off", []).action()
            client.table_set_default(POLICY_TABLES[version][0], off, off_params)


def list_policies(client: SwitchClient) -> tuple[list[PolicyRule], PolicyParams]:
    """Every ternary rule of each IP version's table, and IPv4's default (IPv6's is the same, or
    off where its tables do not offer the policy: ``set_default_policy``)."""
    rules = []
    for version in policy_versions(client):
        for entry in client.table_entries(POLICY_TABLES[version][0]):
            key = {m.field: (m.value, m.mask or 0) for m in entry.key}
            rules.append(
                PolicyRule(
                    entry.handle,
                    PolicyMatch.from_key(key, version),
                    PolicyParams.from_action(entry.action, entry.params),
                    entry.priority or 0,
                    version,
                )
            )
    default = client.table_default(TABLE_ACK_THINNING_POLICY)
    default_params = (
        PolicyParams.from_action(default.action, default.params)
        if default.action
        else PolicyParams.parse("off", [])
    )
    return sorted(rules, key=lambda r: (r.version, r.priority, r.handle)), default_params


def delete_policy(client: SwitchClient, handle: int, version: int = 4) -> None:
    client.table_delete(POLICY_TABLES[version][0], handle)


# ---- per-flow rules: exact entries of ack_thinning.flow_policy, looked up before the ternary rules ----


def rules_in_lookup_order(client: SwitchClient) -> tuple[list[PolicyRule], PolicyParams]:
    """Every rule in the order the switch looks them up (per-flow rules, then the ternary rules
    by priority), and the default: the first rule that matches a flow's ACKs is its policy (a
    rule of the other IP version never matches)."""
    rules, default = list_policies(client)
    return list_flow_policies(client) + rules, default


def flow_policy_versions(client: SwitchClient) -> tuple[int, ...]:
    """The IP versions whose per-flow rules' table the switch's program has."""
    return tuple(v for v, (_, table) in POLICY_TABLES.items() if table in client.program.tables)


def flow_policy_table(client: SwitchClient, version: int) -> str:
    """The per-flow rules' table of IP ``version``; SwitchOperationError naming the program to load
    when the switch's has none."""
    if version not in flow_policy_versions(client):
        raise SwitchOperationError(
            f"the switch's program has no per-flow rules' table for IPv{version} flows "
            f"({POLICY_TABLES[version][1]}); load ack_switch, which has them for IPv4 and IPv6"
        )
    return POLICY_TABLES[version][1]


def set_flow_policy(client: SwitchClient, match: PolicyMatch, params: PolicyParams) -> int:
    """Give one flow's ACKs (an exact match: both addresses full length, both ports) their own
    policy, in the per-flow table of the match's IP version (ack_thinning.flow_policy, or
    flow_policy6); returns the entry's handle, that table's."""
    key = match.exact_key()  # PolicyError naming what an exact match needs
    table = flow_policy_table(client, match.version or 4)
    action, action_params = params.action()
    return client.table_add(table, action, key, action_params)


def modify_flow_policy(client: SwitchClient, handle: int, params: PolicyParams, version: int = 4) -> None:
    """Change the policy of per-flow rule ``handle`` of IP ``version``'s table."""
    action, action_params = params.action()
    client.table_modify(flow_policy_table(client, version), handle, action, action_params)


def delete_flow_policy(client: SwitchClient, handle: int, version: int = 4) -> None:
    """Delete per-flow rule ``handle`` of IP ``version``'s table."""
    client.table_delete(flow_policy_table(client, version), handle)


def count_flow_policies(client: SwitchClient) -> int:
    """How many per-flow rules the switch holds, of both IP versions (one call per table; no dump)."""
    return sum(client.table_num_entries(POLICY_TABLES[v][1]) for v in flow_policy_versions(client))


def list_flow_policies(client: SwitchClient) -> list[PolicyRule]:
    """Every per-flow rule, of both IP versions (priority 0: they are looked up before any ternary
    rule); IPv4's first, each table's by handle."""
    rules = []
    for version in flow_policy_versions(client):
        for entry in client.table_entries(POLICY_TABLES[version][1]):
            key = {m.field: (m.value, (1 << m.width_bits) - 1) for m in entry.key}
            rules.append(
                PolicyRule(
                    entry.handle,
                    PolicyMatch.from_key(key, version),
                    PolicyParams.from_action(entry.action, entry.params),
                    0,
                    version,
                )
            )
    return sorted(rules, key=lambda r: (r.version, r.handle))


def set_reclaim_idle_ms(client: SwitchClient, idle_ms: int) -> None:
    """Records idle this long may be taken over by another flow (0: the built-in 10 s)."""
    if idle_ms < 0:
        raise SwitchOperationError("reclaim idle time must be >= 0 ms")
    client.register_write(REGISTER_ACK_THINNING_CONFIG, 0, idle_ms * 1000)


# ---- flow records ----

# Where each per-half-flow value lives: (register, most significant bit, least significant bit).
# ack_switch keeps a half-flow's own state in its flow record, a register too wide for Thrift
# (p4src/include/ack_thinning.p4), and what the control plane reads in these, each at most 63 bits;
# this is the one Python place that knows their layout.
HALF_FIELDS: dict[str, tuple[str, int, int]] = {
    "data_end": (REGISTER_ACK_THINNING_DATA, 62, 31),
    "data_segments": (REGISTER_ACK_THINNING_DATA, 30, 0),
    "acks_seen": (REGISTER_ACK_THINNING_ACKS, 61, 31),
    "acks_forwarded": (REGISTER_ACK_THINNING_ACKS, 30, 0),
    "acks_to_filter": (REGISTER_ACK_THINNING_RARE_COUNTS, 61, 31),  # left to the egress filter
    "retransmissions": (REGISTER_ACK_THINNING_RARE_COUNTS, 30, 0),
    "dup_acks": (REGISTER_ACK_THINNING_OUTCOME, 38, 8),
    "last_keep_reason": (REGISTER_ACK_THINNING_OUTCOME, 7, 0),
    "rtt_min_us": (REGISTER_ACK_THINNING_RTT, 62, 32),
    "egress_port": (REGISTER_ACK_THINNING_PORT, 8, 0),
    "filter_forwarded": (REGISTER_ACK_FILTER_FORWARDED, 31, 0),
    "filter_filtered": (REGISTER_ACK_FILTER_FILTERED, 31, 0),
    "acc_d": (REGISTER_ACC_D, 7, 0),
    "acc_d_max": (REGISTER_ACC_D_MAX, 7, 0),
    "acc_signals": (REGISTER_ACC_SIGNALS, 31, 0),
    "acks_absorbed": (REGISTER_COALESCE_COUNTS, 61, 31),
    "acks_rewritten": (REGISTER_COALESCE_COUNTS, 30, 0),
    "acks_shared": (REGISTER_SHARE_COUNTS, 61, 31),
    "share_bounced": (REGISTER_SHARE_COUNTS, 30, 0),
    "acks_held": (REGISTER_HOLDBACK_HELD, 31, 0),
    "acks_released": (REGISTER_HOLDBACK_RELEASED, 31, 0),
}
# Per slot: the key's addresses (lower endpoint first), and (REGISTER_ACK_THINNING_SLOT) its ports |
# last seen (30 bits of 1.024 ms ticks) | closed.
KEY_REGISTERS = (REGISTER_ACK_THINNING_KEY_A, REGISTER_ACK_THINNING_KEY_B)
# An IPv6 flow's record has (FLOW_KEY_IPV6, 0) there, and its addresses in these: KEY6_WORDS 32-bit
# words each at slot * KEY6_WORDS, the highest first (ack_thinning.p4's take_over6).
KEY6_REGISTERS = (REGISTER_ACK_THINNING_KEY6_A, REGISTER_ACK_THINNING_KEY6_B)
TICK_US = 1024  # the slot's clock: the switch's microseconds >> 10
# Thrift reads a register cell as a signed 64-bit value and saturates anything larger, so every
# register read here must be at most 63 bits wide (control-plane/tests/test_register_widths.py).
READ_REGISTERS = (
    *KEY_REGISTERS,
    *KEY6_REGISTERS,
    REGISTER_ACK_THINNING_SLOT,
    *sorted({r for r, _, _ in HALF_FIELDS.values()}),
)


def acks_thinned(seen: int, forwarded: int, to_filter: int) -> int:
    """ACKs the switch thinned at ingress (dropped, absorbed, or held until released): it does not
    count them, since every pure ACK it evaluates is forwarded, thinned or left to the egress
    filter, each counted but these (a register read and write fewer per ACK)."""
    return max(0, seen - forwarded - to_filter)


def field_of(word: int, msb: int, lsb: int) -> int:
    """Bits msb..lsb of a register word (Thrift returns 64-bit words signed)."""
    return ((word & (2**64 - 1)) >> lsb) & ((1 << (msb - lsb + 1)) - 1)


def read_half_fields(client: SwitchClient, names: list[str] | None = None) -> dict[str, list[int]]:
    """Each named per-half-flow value for every half-flow, with one bulk read per register."""
    wanted = names or list(HALF_FIELDS)
    words = {reg: client.register_read_all(reg) for reg in {HALF_FIELDS[n][0] for n in wanted}}
    return {
        n: [field_of(w, HALF_FIELDS[n][1], HALF_FIELDS[n][2]) for w in words[HALF_FIELDS[n][0]]]
        for n in wanted
    }


def read_half_field(client: SwitchClient, name: str, half: int) -> int:
    """One per-half-flow value of one half-flow (slot * 2 + direction)."""
    register, msb, lsb = HALF_FIELDS[name]
    return field_of(client.register_read(register, half), msb, lsb)


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
    # the queue share: handed to the agent (seen when they come back), and sent back to it again
    acks_shared: int = 0
    share_bounced: int = 0
    # hold-back: handed to the agent (counted thinned until released), and released (then counted
    # forwarded instead): acks_seen = acks_forwarded + acks_thinned at any time.
    acks_held: int = 0
    acks_released: int = 0
    data_end: int = 0  # the highest sequence number + length this endpoint sent (serial)
    retransmissions: int = 0  # data segments that did not go beyond data_end
    dup_acks: int = 0  # ACKs this endpoint sent that the contract kept as duplicates
    egress_port: int | None = None  # the port its segments leave the switch by; None: sent none yet

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class FlowRecord:
    slot: int
    key: FlowKey
    last_seen_us: int  # the switch's clock, to 1.024 ms and modulo 12.7 days (30 bits of 1024 us ticks)
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
    """Every flow record, decoded; one bulk read per register."""
    addrs_a = client.register_read_all(KEY_REGISTERS[0])
    addrs_b = client.register_read_all(KEY_REGISTERS[1])
    slots = client.register_read_all(REGISTER_ACK_THINNING_SLOT)
    halves = read_half_fields(client)
    flows = []
    words6: tuple[list[int], list[int]] | None = None
    for slot, (a, b, word) in enumerate(zip(addrs_a, addrs_b, slots, strict=True)):
        ports = field_of(word, 62, 31)
        if a == 0 and b == 0 and ports == 0:
            continue
        if (a, b) == (FLOW_KEY_IPV6, 0):  # an IPv6 flow's record: its addresses are in key6_a/_b
            if words6 is None:
                words6 = (
                    client.register_read_all(KEY6_REGISTERS[0]),
                    client.register_read_all(KEY6_REGISTERS[1]),
                )
            a, b = (address6(w, slot) for w in words6)
            key = FlowKey.from_registers(a, b, ports, version=6)
        else:
            key = FlowKey.from_registers(a, b, ports)
        record = FlowRecord(slot, key, field_of(word, 30, 1) * TICK_US, bool(field_of(word, 0, 0)))
        for direction in (0, 1):
            h = slot << 1 | direction
            reason = halves["last_keep_reason"][h]
            record.halves.append(
                HalfFlow(
                    sender=key.endpoint(direction),
                    acks_seen=halves["acks_seen"][h],
                    # filter decides at egress: its forwarded/filtered counts add to ingress's
                    acks_forwarded=halves["acks_forwarded"][h] + halves["filter_forwarded"][h],
                    acks_thinned=acks_thinned(
                        halves["acks_seen"][h], halves["acks_forwarded"][h], halves["acks_to_filter"][h]
                    )
                    + halves["filter_filtered"][h],
                    data_segments=halves["data_segments"][h],
                    last_keep_reason=KeepReason(reason).name.lower()
                    if reason in KeepReason._value2member_map_
                    else str(reason),
                    rtt_min_us=halves["rtt_min_us"][h],
                    acc_d=halves["acc_d"][h],
                    acc_d_max=halves["acc_d_max"][h],
                    acc_signals=halves["acc_signals"][h],
                    acks_absorbed=halves["acks_absorbed"][h],
                    acks_rewritten=halves["acks_rewritten"][h],
                    acks_shared=halves["acks_shared"][h],
                    share_bounced=halves["share_bounced"][h],
                    acks_held=halves["acks_held"][h],
                    acks_released=halves["acks_released"][h],
                    data_end=halves["data_end"][h],
                    retransmissions=halves["retransmissions"][h],
                    dup_acks=halves["dup_acks"][h],
                    egress_port=halves["egress_port"][h]
                    if halves["data_segments"][h] or halves["acks_seen"][h]
                    else None,
                )
            )
        flows.append(record)
    return flows
