"""The controller's YAML configuration: the example passes, every mistake names its key and fix,
and a flow no rule matches is never managed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ackwise.cli import app as cli
from ackwise.cli.args import EXIT_USAGE
from ackwise.controller.config import (
    EXAMPLE,
    ControllerConfigError,
    load_config,
    parse_config,
    with_interval,
)
from ackwise.controller.decision import AckStream, Thresholds
from ackwise.twins.p4names import FLOW_POLICY_TABLE_SIZE, RECLAIM_IDLE_DEFAULT_US
from ackwise.twins.policies import Policy

GOOD: dict[str, Any] = {"rules": [{"name": "r", "match": {"src": "10.0.2.0/24"}}]}


def problems(doc: Any) -> list[str]:
    with pytest.raises(ControllerConfigError) as info:
        parse_config(doc, "c.yaml")
    return info.value.problems


def test_the_example_passes_and_says_what_it_means() -> None:
    config = load_config(EXAMPLE)
    assert config.interval_ms == 100
    assert [r.name for r in config.rules] == ["hands-off", "bulk", "dumbbell"]
    iperf = config.rules[1]
    assert iperf.decision.limits.max_d == 32
    assert iperf.decision.limits.policies == frozenset({Policy.EVERY_D, Policy.TACK})
    assert iperf.decision.thresholds.congestion_backlog_pkts == 8  # from the defaults section
    assert config.rules[2].decision.limits.policies == frozenset(
        {Policy.EVERY_D, Policy.TACK, Policy.ACC, Policy.COALESCE}
    )


def test_first_match_wins_and_unmatched_flows_are_not_managed() -> None:
    config = load_config(EXAMPLE)
    ignored = AckStream.parse("10.0.0.5", 5001, "10.0.0.4", 40000)  # r2's ACKs to h2
    bulk = AckStream.parse("10.0.0.3", 5001, "10.0.0.2", 40000)  # r1's ACKs of a transfer to 5001
    other = AckStream.parse("10.0.0.3", 22, "10.0.0.2", 40000)
    elsewhere = AckStream.parse("10.1.0.3", 5001, "10.0.0.2", 40000)
    rule = config.rule_for(ignored)
    assert rule is not None and rule.name == "hands-off" and config.managed(ignored) is None
    assert [config.managed(s).name for s in (bulk, other)] == ["bulk", "dumbbell"]  # type: ignore[union-attr]
    assert config.managed(elsewhere) is None


def test_rules_match_the_ip_version_of_their_addresses() -> None:
    """An IPv6 prefix matches IPv6 streams only, an IPv4 prefix IPv4 ones only (::a00:3 is the number
    of 10.0.0.3), and a rule without addresses matches both."""
    config = parse_config(
        {
            "rules": [
                {"name": "v6", "match": {"src": "2001:db8:2::/48", "sport": 5001}},
                {"name": "v4", "match": {"src": "10.0.0.0/24"}},
                {"name": "ports", "match": {"sport": 5001}},
            ]
        },
        "c.yaml",
    )
    v6 = AckStream.parse("2001:db8:2::3", 5001, "2001:db8:1::2", 40000)
    v6_elsewhere = AckStream.parse("2001:db8:9::3", 5001, "2001:db8:1::2", 40000)
    v4 = AckStream.parse("10.0.0.3", 5001, "10.0.0.2", 40000)
    same_number = AckStream.parse("::a00:3", 22, "::a00:2", 40000)
    assert [config.managed(s).name for s in (v6, v6_elsewhere, v4)] == ["v6", "ports", "v4"]  # type: ignore[union-attr]
    assert config.managed(same_number) is None


def test_defaults_apply_where_the_file_is_silent() -> None:
    config = parse_config(GOOD)
    # The whole per-flow table, and the switch's own reclaim time.
    assert (config.interval_ms, config.max_rules_per_switch) == (100, FLOW_POLICY_TABLE_SIZE)
    assert config.forget_after_s == RECLAIM_IDLE_DEFAULT_US / 1e6 == 10.0
    assert config.rules[0].decision.thresholds == Thresholds()


def test_a_rule_overrides_the_defaults_section_key_by_key() -> None:
    config = parse_config(
        {
            "defaults": {"thresholds": {"dwell_s": 1.0, "safe_d": 1}},
            "rules": [{"name": "r", "match": {}, "thresholds": {"dwell_s": 0.25}}],
        }
    )
    th = config.rules[0].decision.thresholds
    assert (th.dwell_s, th.safe_d, th.hold_off_s) == (0.25, 1, 2.0)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (None, "the file is empty: it needs at least 'rules'"),
        ([1], "top level: must be a mapping"),
        ({}, "rules: missing: without rules the controller touches no flow"),
        ({"rules": []}, "rules: empty: the controller would touch no flow"),
        ({"rules": {"a": 1}}, "rules: must be a list of rules, not a mapping"),
        ({**GOOD, "intervl_ms": 100}, "top level: unknown key 'intervl_ms' (known: interval_ms,"),
        ({**GOOD, "interval_ms": 5}, "interval_ms: 5 is outside 10..10000"),
        ({**GOOD, "interval_ms": 100.5}, "interval_ms: 100.5 is not an integer: give milliseconds"),
        ({**GOOD, "max_rules_per_switch": 0}, "max_rules_per_switch: 0 is outside 1..65536"),
        ({"rules": [{"name": "r"}]}, "rules[0] (r): no 'match': write match: {src: PREFIX"),
        ({"rules": [{"name": "r", "match": {"src": "10.0.2.1/24"}}]}, "write its network, 10.0.2.0/24"),
        ({"rules": [{"name": "r", "match": {"dst": "ten"}}]}, "rules[0] (r).match.dst: 'ten': "),
        (
            {"rules": [{"name": "r", "match": {"src": "2001:db8:2::1/48"}}]},
            "write its network, 2001:db8:2::/48",
        ),
        (
            {"rules": [{"name": "r", "match": {"src": "10.0.2.0/24", "dst": "2001:db8::/32"}}]},
            "rules[0] (r).match: match src=10.0.2.0/24 dst=2001:db8::/32: an IPv4 and an IPv6 prefix; a "
            "rule's addresses are of one IP version (write one rule per version)",
        ),
        ({"rules": [{"name": "r", "match": {"dport": 70000}}]}, "match.dport: 70000 is outside 0..65535"),
        ({"rules": [{"name": "r", "match": {"proto": 6}}]}, "match: unknown key 'proto' (known: src, dst,"),
        ({"rules": [{"match": "src=10.0.0.0/8"}]}, "rules[0].match: must be a mapping of src, dst"),
        ({"rules": [{"name": 3, "match": {}}]}, "rules[0].name: 3: give a name as text"),
        ({"rules": [{"name": "a", "match": {}}, {"name": "a", "match": {}}]}, "'a' is used twice"),
        ({"rules": [{"name": "r", "match": {}, "ignore": "no"}]}, "rules[0] (r).ignore: 'no': write true"),
        (
            {"rules": [{"name": "r", "match": {}, "ignore": True, "limits": {"max_d": 4}}]},
            "an ignore rule takes no limits or thresholds",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "limits": {"max_d": 300}}]},
            "limits.max_d: 300 is outside 1..255",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "limits": {"max_d": 200}}]},
            "limits.max_d: 200: acc's d_cap goes up to 127; lower max_d or remove acc",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "limits": {"min_d": 8, "max_d": 4}}]},
            "min_d 8 is above max_d 4: make min_d <= max_d",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "limits": {"policies": ["every_d", "filter"]}}]},
            "'filter': the controller does not choose it; use some of: every_d, tack, acc",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "limits": {"policies": ["every_d", "fast"]}}]},
            "'fast': no such policy",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "limits": {"policies": ["tack"]}}]},
            "every_d must be allowed: ramp-up and the safe policy use it; add every_d",
        ),
        ({"rules": [{"name": "r", "match": {}, "limits": {"policies": []}}]}, "give a list of policies"),
        ({"rules": [{"name": "r", "match": {}, "limits": {"maxd": 4}}]}, "unknown key 'maxd' (known: min_d,"),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"dwell": 1}}]},
            "thresholds: unknown key 'dwell'",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"dwell_s": "1s"}}]},
            "thresholds.dwell_s: '1s' is not a number: give seconds",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"ramp_up_growth": 1.0}}]},
            "ramp_up_growth: 1.0 is outside 1.01..100 (a growth factor per interval, e.g. 1.25",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"steady_growth": 1.3}}]},
            "steady_growth 1.3 must be below ramp_up_growth 1.25: the gap is the hysteresis",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"congestion_clear_pkts": 8}}]},
            "congestion_clear_pkts 8 must be below congestion_backlog_pkts 8",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"hold_off_max_s": 1}}]},
            "hold_off_max_s 1 is below hold_off_s 2: make it at least hold_off_s",
        ),
        (
            {"rules": [{"name": "r", "match": {}, "thresholds": {"safe_d": True}}]},
            "safe_d: True is not an integer",
        ),
        ({**GOOD, "defaults": {"limit": {}}}, "defaults: unknown key 'limit' (known: limits, thresholds)"),
    ],
)
def test_each_mistake_names_its_key_and_the_fix(doc: Any, expected: str) -> None:
    found = problems(doc)
    assert any(expected in p for p in found), found


def test_every_problem_is_listed_not_only_the_first() -> None:
    found = problems(
        {
            "interval_ms": 1,
            "rules": [{"name": "r", "match": {"sport": -1}, "limits": {"min_d": 0}}],
        }
    )
    assert len(found) == 3
    with pytest.raises(ControllerConfigError, match=r"\(and 2 more: 'ackwise controller check c.yaml'"):
        parse_config(
            {"interval_ms": 1, "rules": [{"name": "r", "match": {"sport": -1}, "limits": {"min_d": 0}}]},
            "c.yaml",
        )


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ControllerConfigError, match="cannot read it"):
        load_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules:\n  - name: [unclosed\n")
    with pytest.raises(ControllerConfigError, match=r"broken.yaml: line \d+: not valid YAML"):
        load_config(broken)


def test_interval_override_is_checked() -> None:
    config = parse_config(GOOD)
    assert with_interval(config, 250).interval_ms == 250
    with pytest.raises(ControllerConfigError, match=r"--interval-ms: 5 is outside 10..10000"):
        with_interval(config, 5)


# ---- ackwise controller check ----


def test_check_command_on_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["controller", "check", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "OK: 3 rules (2 managed, 1 ignore), every 100 ms" in out
    assert "src=10.0.0.0/16 dst=10.0.0.0/16 sport=5001" in out
    assert cli.main(["controller", "check", str(EXAMPLE), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and [r["name"] for r in data["rules"]] == ["hands-off", "bulk", "dumbbell"]


def test_check_command_lists_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"interval_ms": 1, "rules": [{"name": "r", "match": {"src": "x"}}]}))
    assert cli.main(["controller", "check", str(bad)]) == EXIT_USAGE
    captured = capsys.readouterr()
    report = captured.out.splitlines()
    assert len(report) == 2
    assert all(line.startswith(f"{bad}: ") for line in report)
    assert captured.err.splitlines() == [f"ackwise: {bad}: 2 problems (listed above): fix them"]
    assert cli.main(["controller", "check", str(bad), "--json"]) == EXIT_USAGE
    assert len(json.loads(capsys.readouterr().out)["problems"]) == 2


def test_run_without_a_valid_config_fails_before_any_switch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: []\n")
    assert cli.main(["controller", "run", "--config", str(bad), "--switch", "localhost:1"]) == EXIT_USAGE
    assert "rules: empty" in capsys.readouterr().err
    assert cli.main(["controller", "run"]) == EXIT_USAGE  # --config is required
    assert "--config" in capsys.readouterr().err


def test_the_example_manages_the_dumbbells_flows() -> None:
    """The walk-through's example names the test bed it is for: on `ackwise topo up dumbbell`
    (1-3 pairs), every transfer's ACKs (receiver:5001 -> sender) fall under a rule, r2's under the
    hands-off one, and every rule of the file matches some flow (none is dead). It once described
    10.0.1.0/24 -> 10.0.2.0/24 while the dumbbell's hosts are in 10.0.0.0/16: it managed no flow."""
    from ackwise.controller.config import EXAMPLE, load_config
    from ackwise.controller.decision import AckStream
    from ackwise.topologies.catalog import TOPOLOGIES

    config = load_config(EXAMPLE)
    used = set()
    for n_pairs in (1, 2, 3):
        topo = TOPOLOGIES["dumbbell"](n_pairs=n_pairs)
        ip = {h: topo.nodeInfo(h)["ip"].split("/")[0] for h in topo.hosts()}
        for sender, receiver in topo.meta.flows:
            for sport, dport in ((5001, 40000), (40001, 41000)):  # a transfer to 5001, and anything else
                stream = AckStream.parse(ip[receiver], sport, ip[sender], dport)
                rule = config.rule_for(stream)
                assert rule is not None, (n_pairs, sender, receiver, sport)
                used.add(rule.name)
                if receiver == "r2":
                    assert rule.ignore and config.managed(stream) is None
                else:
                    assert config.managed(stream) is rule
                    assert rule.name == ("bulk" if sport == 5001 else "dumbbell")
    assert used == {rule.name for rule in config.rules}
