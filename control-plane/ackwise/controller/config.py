"""The controller's YAML configuration: which flows it may touch, within which limits, with which
thresholds. ``ackwise controller check FILE`` runs ``load_config`` and lists every problem.

    interval_ms: 100                 # how often every switch is read (10..10000)
    max_rules_per_switch: 8192       # per-flow rules the controller may hold (flow_policy and flow_policy6)
    forget_after_s: 10               # a flow without new data this long loses its rule
    defaults:                        # for every rule; a rule overrides any key
      limits: {min_d: 1, max_d: 16, policies: [every_d, tack, acc, coalesce]}
      thresholds: {dwell_s: 0.5}
    rules:                           # first match wins; a flow no rule matches is never touched
      - name: bulk
        match: {src: 10.0.2.0/24, dst: 10.0.1.0/24}   # the ACKs: src is the data receiver
        limits: {max_d: 8}
      - name: hands-off
        match: {src: 10.0.2.9/32}
        ignore: true                 # never touched, even if a later rule matches

``match`` takes ``src``, ``dst`` (IPv4 or IPv6 address or prefix, both of one version: a rule
matches only flows of its IP version) and ``sport``, ``dport`` (port numbers),
as ``ackwise policy set`` does: they describe the ACKs, ``src`` being the data receiver that sends
them. Omitted fields match anything. Rules are tried in order; the first that matches decides, so
put narrow rules (and ``ignore`` rules) first.

Thresholds (decision.py explains how each is used), their defaults, and why:

- ``ramp_up_growth`` 1.25: slow start doubles per RTT, so x1.25 per 100 ms interval for RTTs up
  to about 300 ms; congestion avoidance at 10 segments or more grows at most 10 % per RTT.
- ``steady_growth`` 1.10, ``steady_intervals`` 3: saturated once the rate grew less than 10 % for
  3 intervals; the 15-point gap to ramp_up_growth is the hysteresis.
- ``min_segments_per_interval`` 4: one segment more or less is then 25 %; below, growth cannot be
  told from noise (and the flow is under 0.5 Mbit/s at 100 ms: little to save).
- ``idle_s`` 1.0: RFC 5681 §4.1 restarts after an idle period longer than the RTO, at least 1 s
  (RFC 6298).
- ``underused_busy`` 0.8, ``saturated_busy`` 0.95: where the data's egress port has a rate, the
  share of the interval it was busy: below 80 % there is capacity to take (ACK every segment), from
  95 % the bottleneck is full; the gap is the hysteresis.
- ``rate_gain`` 0.25: EWMA gain of the smoothed rate TACK's bw uses.
- ``congestion_backlog_pkts`` 8, ``congestion_clear_pkts`` 4, ``congestion_clear_intervals`` 3:
  an eighth of bmv2's default 64-packet queue; clear at half, after 3 quiet intervals.
- ``congestion_ecn_marks`` 1: any CE mark on the ACKs' port in an interval (its queue passed the
  port's K); 0 ignores marks.
- ``misbehaviour_retransmissions`` 3 per interval: one loss is ordinary TCP, three in 100 ms not.
- ``misbehaviour_dup_acks`` 6 per interval: two fast-retransmit triggers (3 duplicate ACKs each,
  RFC 5681).
- ``safe_d`` 2: the delayed ACK any receiver may do (RFC 5681 §4.2); never more than the flow had.
- ``hold_off_s`` 2, ``hold_off_max_s`` 16: safe for 2 s, doubling for repeat offenders up to 16 s.
- ``dwell_s`` 0.5: at most two policy writes per flow per second.
- ``param_margin`` 0.25: a parameter is rewritten only when it moves by 25 % (and at least 1).
- ``tack_l`` 2, ``tack_beta`` 4: TACK's defaults (Li et al., ToN 2021, Eq. 4).
- ``mss_bytes`` 1448: a 1500-byte MTU with the Timestamps option.

Limits: ``min_d`` 1, ``max_d`` 16 (an ACK then releases at most 16 segments, 23 KB, at a sender
that does not pace), ``policies`` every_d, tack, acc, coalesce.
``every_d`` must stay allowed: ramp-up and the safe policy are every_d.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from ackwise.controller.decision import (
    BETA_MAX,
    CONTROLLER_POLICIES,
    D_MAX,
    AckStream,
    DecisionConfig,
    Limits,
    Thresholds,
    policy_named,
)
from ackwise.errors import InputError
from ackwise.features.thinning import PolicyRule
from ackwise.twins.p4names import ACC_D_CAP_MAX, FLOW_POLICY_TABLE_SIZE, RECLAIM_IDLE_DEFAULT_US
from ackwise.twins.policies import Policy, PolicyError, PolicyMatch, PolicyParams, parse_network

EXAMPLE = Path(__file__).with_name("example.yaml")
TOP_KEYS = ("interval_ms", "max_rules_per_switch", "forget_after_s", "defaults", "rules")
RULE_KEYS = ("name", "match", "ignore", "limits", "thresholds")
MATCH_KEYS = ("src", "dst", "sport", "dport")
LIMIT_KEYS = ("min_d", "max_d", "policies")

# Every number the file may set: (integer?, lowest, highest, what it is). Highest None: unbounded.
Bound = tuple[bool, float, float | None, str]
THRESHOLD_BOUNDS: dict[str, Bound] = {
    "ramp_up_growth": (False, 1.01, 100.0, "a growth factor per interval, e.g. 1.25 for +25 %"),
    "steady_growth": (False, 1.0, 100.0, "a growth factor per interval, e.g. 1.10"),
    "steady_intervals": (True, 1, 1000, "a count of intervals"),
    "min_segments_per_interval": (True, 1, 100000, "segments per interval"),
    "idle_s": (False, 0.01, 3600.0, "seconds"),
    "underused_busy": (False, 0.0, 1.0, "a share of the interval, e.g. 0.8"),
    "saturated_busy": (False, 0.0, 1.0, "a share of the interval, e.g. 0.95"),
    "rate_gain": (False, 0.01, 1.0, "an EWMA gain in (0, 1]"),
    "congestion_backlog_pkts": (True, 1, 1 << 19, "packets"),
    "congestion_clear_pkts": (True, 0, 1 << 19, "packets"),
    "congestion_clear_intervals": (True, 1, 1000, "a count of intervals"),
    "congestion_ecn_marks": (True, 0, 1 << 20, "marks per interval (0: ignore marks)"),
    "misbehaviour_retransmissions": (True, 1, 1 << 20, "retransmissions per interval"),
    "misbehaviour_dup_acks": (True, 1, 1 << 20, "duplicate ACKs per interval"),
    "safe_d": (True, 1, D_MAX, "segments per ACK"),
    "hold_off_s": (False, 0.0, 3600.0, "seconds"),
    "hold_off_max_s": (False, 0.0, 3600.0, "seconds"),
    "dwell_s": (False, 0.0, 3600.0, "seconds"),
    "param_margin": (False, 0.0, 10.0, "a fraction, e.g. 0.25 for 25 %"),
    "tack_l": (True, 1, 255, "full-sized segments per ACK"),
    "tack_beta": (True, 1, BETA_MAX, "ACKs per RTTmin"),
    "mss_bytes": (True, 1, 65535, "bytes"),
}
LIMIT_BOUNDS: dict[str, Bound] = {
    "min_d": (True, 1, D_MAX, "segments per ACK"),
    "max_d": (True, 1, D_MAX, "segments per ACK"),
}
TOP_BOUNDS: dict[str, Bound] = {
    "interval_ms": (True, 10, 10000, "milliseconds: below 10 one read of every flow record can outlast it"),
    "max_rules_per_switch": (
        True,
        1,
        65536,
        f"rules; ack_thinning.flow_policy holds {FLOW_POLICY_TABLE_SIZE} in ack_switch.p4",
    ),
    "forget_after_s": (False, 0.1, 86400.0, "seconds"),
}


class ControllerConfigError(InputError, ValueError):
    """The configuration has problems; ``problems`` lists each, naming the key and the fix."""

    def __init__(self, origin: str, problems: list[str]) -> None:
        self.origin = origin
        self.problems = problems
        more = f" (and {len(problems) - 1} more: 'ackwise controller check {origin}' lists them)"
        super().__init__(f"{origin}: {problems[0]}{more if len(problems) > 1 else ''}")


@dataclass(frozen=True)
class Rule:
    name: str
    match: PolicyMatch
    ignore: bool = False
    decision: DecisionConfig = field(default_factory=DecisionConfig)


@dataclass(frozen=True)
class ControllerConfig:
    rules: tuple[Rule, ...]
    interval_ms: int = 100
    max_rules_per_switch: int = FLOW_POLICY_TABLE_SIZE  # the whole of ack_thinning.flow_policy
    forget_after_s: float = RECLAIM_IDLE_DEFAULT_US / 1e6  # the switch's own reclaim time for idle records

    def rule_for(self, stream: AckStream) -> Rule | None:
        """The first rule matching these ACKs, ignore rules included."""
        for rule in self.rules:
            if matches(rule.match, stream):
                return rule
        return None

    def managed(self, stream: AckStream) -> Rule | None:
        """The rule the controller applies to these ACKs, None if it must not touch them."""
        rule = self.rule_for(stream)
        return None if rule is None or rule.ignore else rule


def matches(match: PolicyMatch, stream: AckStream) -> bool:
    """Whether a rule's match (the ACKs' direction) covers the stream; integer masks, as this runs
    for every flow and rule each interval."""
    src, dst = match.src, match.dst
    return (
        (match.version is None or match.version == stream.version)
        and (src is None or stream.src_addr & int(src.netmask) == int(src.network_address))
        and (dst is None or stream.dst_addr & int(dst.netmask) == int(dst.network_address))
        and (match.sport is None or stream.sport == match.sport)
        and (match.dport is None or stream.dport == match.dport)
    )


def policy_for(stream: AckStream, rules: Sequence[PolicyRule], default: PolicyParams) -> PolicyParams:
    """The policy the switch applies to these ACKs: the first matching rule in priority order
    (lower wins, as ``list_policies`` sorts them), else the table's default."""
    for rule in rules:
        if matches(rule.match, stream):
            return rule.params
    return default


# ---- loading and checking ----


def load_config(path: str | Path) -> ControllerConfig:
    """Read and check a configuration file; ControllerConfigError lists every problem."""
    origin = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ControllerConfigError(origin, [f"cannot read it: {exc.strerror or exc}"]) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ControllerConfigError(origin, [f"{where}not valid YAML: {problem}"]) from None
    return parse_config(doc, origin)


def parse_config(doc: Any, origin: str = "<config>") -> ControllerConfig:
    checker = _Checker()
    config = checker.config(doc)
    if checker.problems or config is None:
        raise ControllerConfigError(origin, checker.problems or ["empty"])
    return config


class _Checker:
    """Collects every problem instead of stopping at the first, each naming its key."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def problem(self, where: str, text: str) -> None:
        self.problems.append(f"{where}: {text}" if where else text)

    def mapping(self, value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any] | None:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.problem(where, f"must be a mapping of {', '.join(known)}, not {_kind(value)}")
            return None
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key not in known:
                self.problem(where, f"unknown key {key!r} (known: {', '.join(known)})")
            else:
                out[key] = item
        return out

    def number(self, value: Any, where: str, bound: Bound) -> float | int | None:
        integer, lo, hi, what = bound
        ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
        if isinstance(value, bool) or not ok_type:
            kind = "an integer" if integer else "a number"
            self.problem(where, f"{value!r} is not {kind}: give {what}")
            return None
        if value < lo or (hi is not None and value > hi):
            rng = f"{lo:g}..{hi:g}" if hi is not None else f">= {lo:g}"
            self.problem(where, f"{value!r} is outside {rng} ({what})")
            return None
        return value

    def numbers(self, section: dict[str, Any], where: str, bounds: dict[str, Bound]) -> dict[str, Any]:
        out = {}
        for key, value in section.items():
            if key in bounds:
                checked = self.number(value, f"{where}.{key}" if where else key, bounds[key])
                if checked is not None:
                    out[key] = checked
        return out

    def config(self, doc: Any) -> ControllerConfig | None:
        if doc is None:
            self.problem("", "the file is empty: it needs at least 'rules' (see example.yaml)")
            return None
        top = self.mapping(doc, "top level", TOP_KEYS)
        if top is None:
            return None
        settings = self.numbers(top, "", TOP_BOUNDS)
        defaults = self.mapping(top.get("defaults"), "defaults", ("limits", "thresholds")) or {}
        base_limits = self.limits(defaults.get("limits"), "defaults.limits", Limits())
        base_thresholds = self.thresholds(defaults.get("thresholds"), "defaults.thresholds", Thresholds())
        rules_doc = top.get("rules")
        if "rules" not in top:
            self.problem("rules", "missing: without rules the controller touches no flow (see example.yaml)")
            rules_doc = []
        elif not isinstance(rules_doc, list):
            self.problem("rules", f"must be a list of rules, not {_kind(rules_doc)}")
            rules_doc = []
        elif not rules_doc:
            self.problem("rules", "empty: the controller would touch no flow; add a rule with a match")
        rules = []
        names: set[str] = set()
        for i, item in enumerate(rules_doc):
            rule = self.rule(item, i, base_limits, base_thresholds)
            if rule is None:
                continue
            if rule.name in names:
                self.problem(f"rules[{i}].name", f"{rule.name!r} is used twice: give each rule its own name")
            names.add(rule.name)
            rules.append(rule)
        return ControllerConfig(tuple(rules), **settings)

    def rule(self, item: Any, i: int, limits: Limits, thresholds: Thresholds) -> Rule | None:
        where = f"rules[{i}]"
        doc = self.mapping(item, where, RULE_KEYS)
        if doc is None:
            return None
        name = doc.get("name", f"rule {i}")
        if not isinstance(name, str) or not name:
            self.problem(f"{where}.name", f"{name!r}: give a name as text, e.g. name: bulk-transfers")
            name = f"rule {i}"
        elif "name" in doc:
            where = f"rules[{i}] ({name})"
        if "match" not in doc:
            self.problem(where, "no 'match': write match: {src: PREFIX, dst: PREFIX, sport: N, dport: N}")
            return None
        match = self.match(doc["match"], f"{where}.match")
        ignore = doc.get("ignore", False)
        if not isinstance(ignore, bool):
            self.problem(f"{where}.ignore", f"{ignore!r}: write true or false")
            ignore = False
        if ignore and ("limits" in doc or "thresholds" in doc):
            self.problem(where, "an ignore rule takes no limits or thresholds: remove them, or ignore: false")
        rule_limits = self.limits(doc.get("limits"), f"{where}.limits", limits)
        rule_thresholds = self.thresholds(doc.get("thresholds"), f"{where}.thresholds", thresholds)
        if match is None:
            return None
        return Rule(name, match, ignore, DecisionConfig(rule_limits, rule_thresholds))

    def match(self, value: Any, where: str) -> PolicyMatch | None:
        doc = self.mapping(value, where, MATCH_KEYS)
        if doc is None:
            return None
        values: dict[str, Any] = {}
        for key in ("src", "dst"):
            if key in doc:
                try:
                    values[key] = parse_network(str(doc[key]), repr(doc[key]))
                except PolicyError as exc:
                    self.problem(f"{where}.{key}", str(exc))
        for key in ("sport", "dport"):
            if key in doc:
                port = self.number(doc[key], f"{where}.{key}", (True, 0, 65535, "a TCP port number"))
                if port is not None:
                    values[key] = int(port)
        try:
            return PolicyMatch(**values)
        except PolicyError as exc:
            self.problem(where, str(exc))
            return None

    def limits(self, value: Any, where: str, base: Limits) -> Limits:
        doc = self.mapping(value, where, LIMIT_KEYS)
        if not doc:
            return base
        out = replace(base, **self.numbers(doc, where, LIMIT_BOUNDS))
        if "policies" in doc:
            policies = self.policies(doc["policies"], f"{where}.policies")
            if policies is not None:
                out = replace(out, policies=policies)
        if out.min_d > out.max_d:
            self.problem(where, f"min_d {out.min_d} is above max_d {out.max_d}: make min_d <= max_d")
        if Policy.ACC in out.policies and out.max_d > ACC_D_CAP_MAX:
            self.problem(
                f"{where}.max_d",
                f"{out.max_d}: acc's d_cap goes up to {ACC_D_CAP_MAX}; "
                "lower max_d or remove acc from policies",
            )
        return out

    def policies(self, value: Any, where: str) -> frozenset[Policy] | None:
        known = ", ".join(p.value for p in CONTROLLER_POLICIES)
        if not isinstance(value, list) or not value:
            self.problem(where, f"give a list of policies, e.g. [every_d, tack, acc] (known: {known})")
            return None
        out = set()
        for name in value:
            policy = policy_named(str(name))
            if policy not in CONTROLLER_POLICIES:
                why = (
                    "this ackwise has no coalesce policy (its switch program predates it)"
                    if name == "coalesce"
                    else "the controller does not choose it"
                    if policy is not None
                    else "no such policy"
                )
                self.problem(where, f"{name!r}: {why}; use some of: {known}")
                continue
            out.add(policy)
        if Policy.EVERY_D not in out:
            self.problem(where, "every_d must be allowed: ramp-up and the safe policy use it; add every_d")
        return frozenset(p for p in out if p is not None)

    def thresholds(self, value: Any, where: str, base: Thresholds) -> Thresholds:
        known = tuple(f.name for f in fields(Thresholds))
        doc = self.mapping(value, where, known)
        if not doc:
            return base
        base = replace(base, **self.numbers(doc, where, THRESHOLD_BOUNDS))
        if base.steady_growth >= base.ramp_up_growth:
            self.problem(
                where,
                f"steady_growth {base.steady_growth:g} must be below ramp_up_growth {base.ramp_up_growth:g}: "
                "the gap is the hysteresis between the two tests; e.g. 1.10 and 1.25",
            )
        if base.underused_busy >= base.saturated_busy:
            self.problem(
                where,
                f"underused_busy {base.underused_busy:g} must be below saturated_busy "
                f"{base.saturated_busy:g}: the gap is the hysteresis; e.g. 0.8 and 0.95",
            )
        if base.congestion_clear_pkts >= base.congestion_backlog_pkts:
            self.problem(
                where,
                f"congestion_clear_pkts {base.congestion_clear_pkts} must be below congestion_backlog_pkts "
                f"{base.congestion_backlog_pkts}: e.g. half of it",
            )
        if base.hold_off_max_s < base.hold_off_s:
            self.problem(
                where,
                f"hold_off_max_s {base.hold_off_max_s:g} is below hold_off_s {base.hold_off_s:g}: "
                "make it at least hold_off_s",
            )
        return base


def with_interval(config: ControllerConfig, interval_ms: int) -> ControllerConfig:
    """The configuration with another interval (``--interval-ms``), checked as the file's is."""
    checker = _Checker()
    checker.number(interval_ms, "--interval-ms", TOP_BOUNDS["interval_ms"])
    if checker.problems:
        raise ControllerConfigError("command line", checker.problems)
    return replace(config, interval_ms=interval_ms)


def _kind(value: Any) -> str:
    kinds = {
        list: "a list",
        dict: "a mapping",
        str: "text",
        int: "a number",
        float: "a number",
        bool: "true/false",
    }
    return kinds.get(type(value), type(value).__name__)


def describe(config: ControllerConfig) -> list[dict[str, Any]]:
    """One line per rule, for ``ackwise controller check``."""
    out = []
    for rule in config.rules:
        lim = rule.decision.limits
        out.append(
            {
                "name": rule.name,
                "match": str(rule.match),
                "ignore": rule.ignore,
                "d": f"{lim.min_d}..{lim.max_d}",
                "policies": ",".join(p.value for p in CONTROLLER_POLICIES if p in lim.policies),
            }
        )
    return out
