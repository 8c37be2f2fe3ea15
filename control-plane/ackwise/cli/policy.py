"""``ackwise policy`` and ``ackwise flows``: per-flow ACK policies and what the switch did with them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ackwise.cli.args import HANDLE, PRIORITY, int_in
from ackwise.cli.common import Registry, client_for
from ackwise.cli.output import emit, render_records, render_table
from ackwise.features.thinning import (
    POLICY_TABLES,
    delete_flow_policy,
    delete_policy,
    list_flow_policies,
    list_policies,
    read_flows,
    set_default_policy,
    set_policy,
    set_reclaim_idle_ms,
)
from ackwise.twins.p4names import TABLE_ACK_THINNING_FLOW_POLICY, TABLE_ACK_THINNING_FLOW_POLICY6
from ackwise.twins.policies import Policy, PolicyError, PolicyMatch, PolicyParams

POLICY_NAMES = {p.value for p in Policy}


def split_policy_args(tokens: list[str]) -> tuple[list[str] | None, str, list[str]]:
    """``[match...|default] POLICY [param=value...]`` -> (match tokens or None for default,
    policy, parameters)."""
    for i, token in enumerate(tokens):
        if token in POLICY_NAMES:
            match = tokens[:i]
            if match == ["default"]:
                return None, token, tokens[i + 1 :]
            if "default" in match:
                raise PolicyError(
                    "'default' stands alone: ackwise policy set default POLICY [PARAM=VALUE...]"
                )
            return match, token, tokens[i + 1 :]
    raise PolicyError(f"no policy named; give one of {', '.join(sorted(POLICY_NAMES))} after the match")


def cmd_policy_set(args: argparse.Namespace) -> int:
    match_tokens, policy, params_tokens = split_policy_args(args.spec)
    params = PolicyParams.parse(policy, params_tokens)
    match = PolicyMatch.parse(match_tokens) if match_tokens is not None else None
    with client_for(args) as client:
        if match is None:
            set_default_policy(client, params)
            emit(args, {"default": params.to_dict()}, f"default policy: {params.describe()}")
        else:
            handle = set_policy(client, match, params, args.priority)
            emit(
                args,
                {"handle": handle, "match": str(match), "policy": params.to_dict()},
                f"rule {handle}: {match} -> {params.describe()}",
            )
    return 0


def cmd_policy_list(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        rules, default = list_policies(client)
        flow_rules = list_flow_policies(client)
    data = {
        "flow_rules": [
            {"handle": r.handle, "ip_version": r.version, "match": str(r.match), "policy": r.params.to_dict()}
            for r in flow_rules
        ],
        "rules": [
            {
                "handle": r.handle,
                "ip_version": r.version,
                "match": str(r.match),
                "priority": r.priority,
                "policy": r.params.to_dict(),
            }
            for r in rules
        ],
        "default": default.to_dict(),
    }
    text = []
    if flow_rules:
        rows = [[r.handle, f"IPv{r.version}", str(r.match), r.params.describe()] for r in flow_rules]
        text += [
            f"per-flow rules ({TABLE_ACK_THINNING_FLOW_POLICY}, {TABLE_ACK_THINNING_FLOW_POLICY6} for IPv6; "
            "looked up first; the controller's; 'policy del --flow HANDLE', IPv6's 'policy del --flow "
            "--ipv6 HANDLE'):",
            render_table(["handle", "table", "match (ACKs)", "policy"], rows),
            "",
        ]
    rows = [[r.handle, f"IPv{r.version}", r.priority, str(r.match), r.params.describe()] for r in rules]
    text += (
        [render_table(["handle", "table", "priority", "match (ACKs)", "policy"], rows)]
        + (["(IPv6 rules: 'policy del --ipv6 HANDLE')"] if any(r.version == 6 for r in rules) else [])
        if rows
        else ["no rules"]
    )
    text.append(f"default: {default.describe()}")
    emit(args, data, text)
    return 0


def cmd_policy_del(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        if args.flow:
            delete_flow_policy(client, args.handle, 6 if args.ipv6 else 4)
        else:
            delete_policy(client, args.handle, 6 if args.ipv6 else 4)
    what = "per-flow rule" if args.flow else "rule"
    emit(
        args,
        {
            "deleted": args.handle,
            "table": POLICY_TABLES[6 if args.ipv6 else 4][1 if args.flow else 0],
        },
        f"deleted {what} {args.handle}",
    )
    return 0


def cmd_policy_reclaim(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        set_reclaim_idle_ms(client, args.idle_ms)
    emit(args, {"reclaim_idle_ms": args.idle_ms}, f"flow records idle {args.idle_ms} ms may be reclaimed")
    return 0


FLOW_COLUMNS = (
    "slot",
    "sender",
    "data",
    "acks_seen",
    "acks_forwarded",
    "acks_thinned",
    "thinned_pct",
    "absorbed",
    "rewritten",
    "shared",
    "rtt_min_us",
    "last_keep_reason",
)


def cmd_flows(args: argparse.Namespace) -> int:
    if args.sort not in FLOW_COLUMNS:  # before the switch is asked: the same mistake either way
        raise PolicyError(f"--sort {args.sort}: give one of {', '.join(FLOW_COLUMNS)}")
    with client_for(args) as client:
        flows = read_flows(client)
    rows: list[dict[str, Any]] = []
    for flow in flows:
        for half in flow.halves:
            if not (half.acks_seen or half.data_segments):
                continue
            pct = 100.0 * half.acks_thinned / half.acks_seen if half.acks_seen else 0.0
            rows.append(
                {
                    "slot": flow.slot,
                    "flow": str(flow.key),
                    "sender": half.sender,
                    "data": half.data_segments,
                    "acks_seen": half.acks_seen,
                    "acks_forwarded": half.acks_forwarded,
                    "acks_thinned": half.acks_thinned,
                    "thinned_pct": round(pct, 1),
                    "absorbed": half.acks_absorbed,
                    "rewritten": half.acks_rewritten,
                    "shared": half.acks_shared,
                    "rtt_min_us": half.rtt_min_us,
                    "last_keep_reason": half.last_keep_reason,
                    "acc_d": half.acc_d,
                    "acc_d_max": half.acc_d_max,
                    "acc_signals": half.acc_signals,
                    "closed": flow.closed,
                }
            )
    if args.filter:
        rows = [r for r in rows if args.filter in r["flow"]]
    rows.sort(key=lambda r: r[args.sort], reverse=args.sort not in ("slot", "sender", "last_keep_reason"))
    text = render_records(FLOW_COLUMNS, rows, "no flows")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(text)
    return 0


def add_commands(registry: Registry) -> None:
    pol = registry.group(
        "policy", "per-flow ACK policies (off, every_d, dynamic_d, tack, filter, acc, coalesce)"
    )
    p = registry.command(
        pol,
        "set",
        cmd_policy_set,
        "set a rule: [src=IP[/LEN] dst=IP[/LEN] sport=N dport=N | default] POLICY [PARAM=VALUE...]",
    )
    p.add_argument(
        "spec",
        nargs="+",
        metavar="ARG",
        help="the ACKs to match (src is the data receiver sending them), or 'default'; the policy; "
        "its parameters: every_d d=, dynamic_d l1= l2= l3=, tack L= beta= rtt_min_us=, "
        "acc d_cap= signals=ce,ece,queue rtt_min_us=, coalesce (none); all: mss= idle_ms=",
    )
    p.add_argument(
        "--priority", type=PRIORITY, help="override the rule's priority (lower wins; default: specificity)"
    )
    registry.command(
        pol, "list", cmd_policy_list, "list the per-flow rules, the rules and the default policy"
    )
    p = registry.command(pol, "del", cmd_policy_del, "delete a rule by handle")
    p.add_argument("handle", type=HANDLE)
    p.add_argument(
        "--flow",
        action="store_true",
        help=f"a per-flow rule ({TABLE_ACK_THINNING_FLOW_POLICY}, or {TABLE_ACK_THINNING_FLOW_POLICY6} with "
        "--ipv6; as the controller writes)",
    )
    p.add_argument(
        "--ipv6",
        action="store_true",
        help="a rule of IPv6's table (of per-flow rules with --flow); its handles are that table's: "
        "'policy list' shows which",
    )
    p = registry.command(
        pol,
        "reclaim",
        cmd_policy_reclaim,
        "how long a flow record must be idle before another flow may take it",
    )
    p.add_argument("idle_ms", type=int_in(0, 4_000_000, "ms"), help="0: the built-in 10 s")

    p = registry.command(
        None,
        "flows",
        cmd_flows,
        "per-flow ACK counters: seen, forwarded, thinned (absorbed by coalescing), RTTmin, last keep reason",
    )
    p.add_argument("--sort", default="acks_seen", help=f"column to sort by ({', '.join(FLOW_COLUMNS)})")
    p.add_argument("--filter", help="only flows whose 'addr:port <> addr:port' contains this text")
