"""ACK policies and their parameters, in one Python place, with the table entries they become.

The P4 side is p4src/include/ack_policy.p4: one action per policy in the ack_thinning.policy table,
which matches the ACK direction's addresses and ports (ternary). A rule's match is written as
``src=IP[/LEN] dst=IP[/LEN] sport=N dport=N`` (omitted fields match anything) and describes the
ACKs: src is the data receiver that sends them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum
from typing import Any

from ackwise.errors import InputError
from ackwise.twins.p4names import (
    ACTION_ACK_THINNING_POLICY_ACC,
    ACTION_ACK_THINNING_POLICY_COALESCE,
    ACTION_ACK_THINNING_POLICY_DYNAMIC_D,
    ACTION_ACK_THINNING_POLICY_EVERY_D,
    ACTION_ACK_THINNING_POLICY_FILTER,
    ACTION_ACK_THINNING_POLICY_OFF,
    ACTION_ACK_THINNING_POLICY_TACK,
    KEY_FLOW,
    AccSignal,
)


class PolicyError(InputError, ValueError):
    """A policy, parameter or match the operator gave is not valid; the message says why."""


class Policy(StrEnum):
    OFF = "off"
    EVERY_D = "every_d"
    DYNAMIC_D = "dynamic_d"
    TACK = "tack"
    FILTER = "filter"
    ACC = "acc"
    COALESCE = "coalesce"


# The rules live in two tables per IP version (ack_policy.p4): ack_thinning.policy (ternary, the
# operator's) and, looked up before it, ack_thinning.flow_policy (exact per-flow entries: the
# controller's); IPv6 packets look up ack_thinning.policy6 and ack_thinning.flow_policy6 instead.
# Each table's key (KEY_FLOW) is one field of the ACK direction's source address, destination
# address, source port and destination port, in that order from the top bit: 96 bits for IPv4, 288
# for IPv6. PolicyMatch packs and unpacks it.
ADDR_BITS = {4: 32, 6: 128}


def key_parts_bits(version: int) -> tuple[tuple[int, int], ...]:
    """(end bit, width) of src, dst, sport and dport in the key of ``version``'s tables."""
    a = ADDR_BITS[version]
    return ((2 * a + 32, a), (a + 32, a), (32, 16), (16, 16))


POLICY_KEY_BITS = {version: 2 * a + 32 for version, a in ADDR_BITS.items()}


def _pack_key(parts: tuple[int, ...], version: int) -> int:
    return sum(
        value << (end - width) for value, (end, width) in zip(parts, key_parts_bits(version), strict=True)
    )


def _unpack_key(packed: int, version: int) -> tuple[int, int, int, int]:
    src, dst, sport, dport = (
        packed >> (end - width) & ((1 << width) - 1) for end, width in key_parts_bits(version)
    )
    return src, dst, sport, dport


ACTIONS = {
    Policy.OFF: ACTION_ACK_THINNING_POLICY_OFF,
    Policy.EVERY_D: ACTION_ACK_THINNING_POLICY_EVERY_D,
    Policy.DYNAMIC_D: ACTION_ACK_THINNING_POLICY_DYNAMIC_D,
    Policy.TACK: ACTION_ACK_THINNING_POLICY_TACK,
    Policy.FILTER: ACTION_ACK_THINNING_POLICY_FILTER,
    Policy.ACC: ACTION_ACK_THINNING_POLICY_ACC,
    Policy.COALESCE: ACTION_ACK_THINNING_POLICY_COALESCE,
}
# Parameters each policy uses (besides none for off); all others are ignored by that policy.
POLICY_PARAMS: dict[Policy, tuple[str, ...]] = {
    Policy.OFF: (),
    Policy.EVERY_D: ("mss", "d", "idle_ms", "hold_ms"),
    Policy.DYNAMIC_D: ("mss", "l1", "l2", "l3", "idle_ms", "hold_ms"),
    Policy.TACK: ("mss", "L", "beta", "rtt_min_us", "idle_ms", "hold_ms"),
    Policy.FILTER: ("mss", "idle_ms"),
    Policy.ACC: ("mss", "d_cap", "signals", "rtt_min_us", "idle_ms", "hold_ms"),
    Policy.COALESCE: ("mss", "idle_ms"),
}
# Action parameter names where they differ from the operator's names.
_ACTION_NAMES = {"L": "tack_l"}
# ACC congestion signals by the names an operator writes: `signals=ce,ece,queue`.
ACC_SIGNALS = {signal.name.lower(): signal.value for signal in AccSignal}
MSS_BYTES = 1448  # a 1500-byte MTU less IPv4, TCP and the Timestamps option: our hosts' MSS


@dataclass(frozen=True)
class PolicyParams:
    """A policy with its parameters. Defaults: d = 2; the dynamic delayed ACK's thresholds 2, 5, 9
    (Altman and Jimenez); TACK's beta = 4, L = 2; MSS 1448 (1500-byte MTU with timestamps)."""

    policy: Policy
    mss: int = MSS_BYTES  # thresholds count segments of this size
    d: int = 2  # every_d: at most one ACK per d segments acknowledged
    l1: int = 2  # dynamic_d: d = 1, 2, 3, 4 below l1, l2, l3 segments acknowledged, and above
    l2: int = 5
    l3: int = 9
    L: int = 2
    beta: int = 4  # ...and at most beta ACKs per RTTmin
    rtt_min_us: int = 0  # tack, acc: RTTmin override; 0 = measured by the switch
    d_cap: int = 64  # acc: the control plane's bound on d (the flight bound applies too)
    signals: int = sum(AccSignal)  # acc: which congestion signals the flow reacts to (all of them)
    idle_ms: int = 1000  # the first ACK after this much silence is always kept; 0: rule off
    # every_d, dynamic_d, tack, acc: with a hold-back agent on the switch, an ACK the policy would
    # thin but that may end a burst is held this long instead of forwarded (TCP's delayed-ACK
    # bound, as Linux uses it); 0: never held. Without an agent nothing is held.
    hold_ms: int = 200

    def __post_init__(self) -> None:
        checks = {
            "mss": (1, 65535),
            "d": (1, 255),
            "l1": (1, 255),
            "l2": (1, 255),
            "l3": (1, 255),
            "L": (1, 255),
            "beta": (1, 255),
            "rtt_min_us": (0, 2**32 - 1),
            "idle_ms": (0, 4_000_000),
            "hold_ms": (0, 65535),
        }
        for name, (lo, hi) in checks.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise PolicyError(f"{name}={value!r}: must be an integer in {lo}..{hi}")
        if not self.l1 < self.l2 < self.l3:
            raise PolicyError(f"dynamic_d thresholds must grow: l1={self.l1} < l2={self.l2} < l3={self.l3}")

    @classmethod
    def parse(cls, policy: str, assignments: list[str]) -> PolicyParams:
        """``every_d`` and ``["d=8", "mss=1448"]`` -> PolicyParams; unknown or unused names refused."""
        try:
            p = Policy(policy)
        except ValueError:
            raise PolicyError(
                f"unknown policy {policy!r}; known: {', '.join(x.value for x in Policy)}"
            ) from None
        values: dict[str, int] = {}
        for item in assignments:
            name, sep, text = item.partition("=")
            if not sep:
                raise PolicyError(f"{item!r}: write NAME=VALUE")
            if name not in POLICY_PARAMS[p]:
                used = ", ".join(POLICY_PARAMS[p]) or "none"
                raise PolicyError(f"{p.value} has no parameter {name!r} (it takes: {used})")
            if name == "signals":
                values[name] = parse_signals(text)
                continue
            try:
                values[name] = int(text, 0)
            except ValueError:
                raise PolicyError(f"{name}={text!r}: not an integer") from None
        return cls(p, **values)

    def action(self) -> tuple[str, dict[str, int]]:
        """The table action and its parameters."""
        return ACTIONS[self.policy], {
            _ACTION_NAMES.get(n, n): getattr(self, n) for n in POLICY_PARAMS[self.policy]
        }

    @classmethod
    def from_action(cls, action: str, params: dict[str, int]) -> PolicyParams:
        for policy, name in ACTIONS.items():
            if action == name:
                reverse = {v: k for k, v in _ACTION_NAMES.items()}
                return cls(policy, **{reverse.get(k, k): v for k, v in params.items()})
        raise PolicyError(f"{action} is not an ACK policy action")

    def describe(self) -> str:
        used = POLICY_PARAMS[self.policy]
        shown = {n: (format_signals(self.signals) if n == "signals" else getattr(self, n)) for n in used}
        return " ".join([self.policy.value, *(f"{n}={v}" for n, v in shown.items())])

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k == "policy" or k in POLICY_PARAMS[self.policy]}

    def with_(self, **changes: int) -> PolicyParams:
        return replace(self, **changes)


def parse_signals(text: str) -> int:
    """``ce,ece,queue`` (any subset) -> the bitmask the P4 expects."""
    mask = 0
    for name in text.split(","):
        if name.strip() not in ACC_SIGNALS:
            raise PolicyError(f"signals={text!r}: use a comma-separated subset of {', '.join(ACC_SIGNALS)}")
        mask |= ACC_SIGNALS[name.strip()]
    return mask


def format_signals(mask: int) -> str:
    return ",".join(name for name, bit in ACC_SIGNALS.items() if mask & bit)


# ---- matches ----


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class PolicyMatch:
    """Which ACKs a rule applies to. None matches anything. Both addresses, where given, are of one
    IP version; a match without addresses applies to IPv4 and IPv6 alike (an entry in each
    version's table)."""

    src: Network | None = None
    dst: Network | None = None
    sport: int | None = None
    dport: int | None = None

    def __post_init__(self) -> None:
        if self.src is not None and self.dst is not None and self.src.version != self.dst.version:
            raise PolicyError(
                f"match src={self.src} dst={self.dst}: an IPv{self.src.version} and an IPv{self.dst.version} "
                "prefix; a rule's addresses are of one IP version (write one rule per version)"
            )

    @classmethod
    def parse(cls, tokens: list[str]) -> PolicyMatch:
        values: dict[str, Any] = {}
        for token in tokens:
            name, sep, text = token.partition("=")
            if not sep or name not in ("src", "dst", "sport", "dport"):
                raise PolicyError(f"match {token!r}: use src=IP[/LEN], dst=IP[/LEN], sport=N, dport=N")
            if text in ("*", "any"):
                continue
            if name in ("src", "dst"):
                values[name] = parse_network(text, f"match {token!r}")
            else:
                try:
                    port = int(text)
                except ValueError:
                    raise PolicyError(f"match {token!r}: port must be a number") from None
                if not 0 <= port <= 65535:
                    raise PolicyError(f"match {token!r}: port outside 0..65535")
                values[name] = port
        return cls(**values)

    @property
    def version(self) -> int | None:
        """The IP version of the match's addresses; None if it gives none (both versions)."""
        net = self.src or self.dst
        return None if net is None else net.version

    @property
    def versions(self) -> tuple[int, ...]:
        """The IP versions whose tables the rule goes into."""
        return (4, 6) if self.version is None else (self.version,)

    def _value_and_mask(self, version: int) -> tuple[int, int]:
        def addr(net: Network | None) -> tuple[int, int]:
            return (0, 0) if net is None else (int(net.network_address), int(net.netmask))

        def port(p: int | None) -> tuple[int, int]:
            return (0, 0) if p is None else (p, 0xFFFF)

        parts = (addr(self.src), addr(self.dst), port(self.sport), port(self.dport))
        return (
            _pack_key(tuple(v for v, _ in parts), version),
            _pack_key(tuple(m for _, m in parts), version),
        )

    def _check_version(self, version: int) -> None:
        if version not in self.versions:
            raise PolicyError(f"match {self}: its addresses are IPv{self.version}, not IPv{version}")

    def key(self, version: int = 4) -> dict[str, str]:
        """The key of ``version``'s ternary rules' table (ack_thinning.policy, or policy6)."""
        self._check_version(version)
        value, mask = self._value_and_mask(version)
        return {KEY_FLOW: f"{value:#x}&&&{mask:#x}"}

    @property
    def exact(self) -> bool:
        """One flow's ACKs: both addresses full-length (/32, /128) and both ports given."""
        return (
            self.src is not None
            and self.dst is not None
            and self.src.prefixlen == self.src.max_prefixlen
            and self.dst.prefixlen == self.dst.max_prefixlen
            and self.sport is not None
            and self.dport is not None
        )

    def exact_key(self) -> dict[str, str]:
        """The key of the exact per-flow table of the match's IP version (ack_thinning.flow_policy,
        or flow_policy6)."""
        if not self.exact or self.version is None:
            raise PolicyError(
                f"match {self}: a per-flow rule needs src=IP dst=IP sport=N dport=N (/32 or /128 addresses)"
            )
        return {KEY_FLOW: f"{self._value_and_mask(self.version)[0]:#x}"}

    @property
    def priority(self) -> int:
        """The rule's priority in the table of its own IP version (IPv4's for a match without
        addresses): ``priority_in``."""
        return self.priority_in(self.version or 4)

    def priority_in(self, version: int) -> int:
        """bmv2 prefers the lowest priority value: count wildcard bits, so the most specific wins.
        Counted in the widths of ``version``'s table, whose rules it competes with (a match
        without addresses has all of that version's address bits wild)."""
        self._check_version(version)
        width = ADDR_BITS[version]
        wild = (width - self.src.prefixlen if self.src else width) + (
            width - self.dst.prefixlen if self.dst else width
        )
        wild += (16 if self.sport is None else 0) + (16 if self.dport is None else 0)
        return wild + 1

    @classmethod
    def from_key(cls, key: dict[str, tuple[int, int]], version: int = 4) -> PolicyMatch:
        """From the key's (value, mask) as read back from ``version``'s table (an exact entry's mask:
        all ones)."""
        network = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network

        def net(value: int, mask: int) -> Network | None:
            if mask == 0:
                return None
            return network((value, bin(mask).count("1")))

        def port(value: int, mask: int) -> int | None:
            return None if mask == 0 else value

        value, mask = key[KEY_FLOW]
        (src, dst, sport, dport), (src_mask, dst_mask, sport_mask, dport_mask) = (
            _unpack_key(value, version),
            _unpack_key(mask, version),
        )
        return cls(net(src, src_mask), net(dst, dst_mask), port(sport, sport_mask), port(dport, dport_mask))

    def __str__(self) -> str:
        parts = [
            f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name) is not None
        ]
        return " ".join(parts) or "any"


def parse_network(text: str, what: str) -> Network:
    """``10.0.2.0/24``, ``2001:db8::/32`` or a bare address (a full-length prefix); PolicyError
    naming ``what`` and the network to write instead when host bits are set."""
    # The version's own class where the text says which: its messages say what is wrong
    # ("not a valid netmask"), ip_network's only that the text is neither.
    network = ipaddress.IPv6Network if ":" in text else ipaddress.IPv4Network if "." in text else None
    try:
        return network(text) if network is not None else ipaddress.ip_network(text)
    except ValueError as exc:
        try:
            fix = f"; write its network, {ipaddress.ip_network(text, strict=False)}"
        except ValueError:
            fix = "; write an IPv4 or IPv6 address or prefix, e.g. 10.0.2.0/24 or 2001:db8:2::/64"
        raise PolicyError(f"{what}: {exc}{fix}") from None
