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


# The rules live in two tables (ack_policy.p4): ack_thinning.policy (ternary, the operator's) and,
# looked up before it, ack_thinning.flow_policy (exact per-flow entries: the controller's). Both
# tables' key (KEY_FLOW) is one 96-bit field of the ACK direction's source address, destination
# address, source port and destination port, in that order from the top bit. PolicyMatch packs and
# unpacks it.
_KEY_PARTS_BITS = ((96, 32), (64, 32), (32, 16), (16, 16))  # (end bit, width): src, dst, sport, dport
POLICY_KEY_BITS = sum(width for _, width in _KEY_PARTS_BITS)


def _pack_key(parts: tuple[int, ...]) -> int:
    return sum(value << (end - width) for value, (end, width) in zip(parts, _KEY_PARTS_BITS, strict=True))


def _unpack_key(packed: int) -> tuple[int, int, int, int]:
    src, dst, sport, dport = (packed >> (end - width) & ((1 << width) - 1) for end, width in _KEY_PARTS_BITS)
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


@dataclass(frozen=True)
class PolicyMatch:
    """Which ACKs a rule applies to. None matches anything."""

    src: ipaddress.IPv4Network | None = None
    dst: ipaddress.IPv4Network | None = None
    sport: int | None = None
    dport: int | None = None

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
                try:
                    values[name] = ipaddress.IPv4Network(text)
                except ValueError as exc:
                    raise PolicyError(f"match {token!r}: {exc}") from None
            else:
                try:
                    port = int(text)
                except ValueError:
                    raise PolicyError(f"match {token!r}: port must be a number") from None
                if not 0 <= port <= 65535:
                    raise PolicyError(f"match {token!r}: port outside 0..65535")
                values[name] = port
        return cls(**values)

    def _value_and_mask(self) -> tuple[int, int]:
        def addr(net: ipaddress.IPv4Network | None) -> tuple[int, int]:
            return (0, 0) if net is None else (int(net.network_address), int(net.netmask))

        def port(p: int | None) -> tuple[int, int]:
            return (0, 0) if p is None else (p, 0xFFFF)

        parts = (addr(self.src), addr(self.dst), port(self.sport), port(self.dport))
        return _pack_key(tuple(v for v, _ in parts)), _pack_key(tuple(m for _, m in parts))

    def key(self) -> dict[str, str]:
        """The key of the ternary rules' table (ack_thinning.policy)."""
        value, mask = self._value_and_mask()
        return {KEY_FLOW: f"{value:#x}&&&{mask:#x}"}

    @property
    def exact(self) -> bool:
        """One flow's ACKs: both addresses /32 and both ports given."""
        return (
            self.src is not None
            and self.dst is not None
            and self.src.prefixlen == 32
            and self.dst.prefixlen == 32
            and self.sport is not None
            and self.dport is not None
        )

    def exact_key(self) -> dict[str, str]:
        """The key of the exact per-flow table (ack_thinning.flow_policy)."""
        if not self.exact:
            raise PolicyError(f"match {self}: a per-flow rule needs src=IP dst=IP sport=N dport=N")
        return {KEY_FLOW: f"{self._value_and_mask()[0]:#x}"}

    @property
    def priority(self) -> int:
        """bmv2 prefers the lowest priority value: count wildcard bits, so the most specific wins."""
        wild = (32 - self.src.prefixlen if self.src else 32) + (32 - self.dst.prefixlen if self.dst else 32)
        wild += (16 if self.sport is None else 0) + (16 if self.dport is None else 0)
        return wild + 1

    @classmethod
    def from_key(cls, key: dict[str, tuple[int, int]]) -> PolicyMatch:
        """From the key's (value, mask) as read back from a table (an exact entry's mask: all ones)."""

        def net(value: int, mask: int) -> ipaddress.IPv4Network | None:
            if mask == 0:
                return None
            return ipaddress.IPv4Network((value, bin(mask).count("1")))

        def port(value: int, mask: int) -> int | None:
            return None if mask == 0 else value

        value, mask = key[KEY_FLOW]
        (src, dst, sport, dport), (src_mask, dst_mask, sport_mask, dport_mask) = (
            _unpack_key(value),
            _unpack_key(mask),
        )
        return cls(net(src, src_mask), net(dst, dst_mask), port(sport, sport_mask), port(dport, dport_mask))

    def __str__(self) -> str:
        parts = [
            f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name) is not None
        ]
        return " ".join(parts) or "any"
