"""A host's TCP settings: the commands that apply them and the check of what the kernel took."""

from __future__ import annotations

import pytest

from ackwise.experiments.harness.runner import requested_tcp
from ackwise.topologies.tcp_settings import (
    TcpSettings,
    check_connection_options,
    check_readback,
    route_initcwnd_commands,
    route_initcwnds,
)

ROUTES = "10.0.0.0/16 dev h1-eth0 proto kernel scope link src 10.0.0.1 \n"
NEWRENO = TcpSettings(cc="reno", ecn=False, sack=False, timestamps=True, initcwnd=2)


def test_the_sysctls_and_their_readback_are_in_one_order() -> None:
    assert NEWRENO.sysctl_command() == (
        "sysctl -qw net.ipv4.tcp_congestion_control=reno net.ipv4.tcp_ecn=0 net.ipv4.tcp_sack=0 "
        "net.ipv4.tcp_timestamps=1"
    )
    assert NEWRENO.readback_command() == (
        "sysctl -n net.ipv4.tcp_congestion_control net.ipv4.tcp_ecn net.ipv4.tcp_sack net.ipv4.tcp_timestamps"
    )


def test_initcwnd_goes_on_every_route_and_replaces_an_earlier_one() -> None:
    routes = ROUTES + "default via 10.0.0.254 dev h1-eth0 initcwnd 10 quickack 1\n"
    assert route_initcwnd_commands(routes, 2) == [
        "ip route change 10.0.0.0/16 dev h1-eth0 proto kernel scope link src 10.0.0.1 initcwnd 2",
        "ip route change default via 10.0.0.254 dev h1-eth0 quickack 1 initcwnd 2",
    ]
    assert route_initcwnds(routes) == [None, 10]


def test_a_readback_that_matches_passes() -> None:
    routes = ROUTES.strip() + " initcwnd 2\n"
    assert check_readback("h1", NEWRENO, "reno\n0\n0\n1\n", routes) == []
    # initcwnd 0 means the kernel's default: a route without one is right
    assert check_readback("h1", TcpSettings(), "cubic\n1\n1\n1\n", ROUTES) == []


def test_a_refused_congestion_control_names_the_allowed_list_and_the_fix() -> None:
    (problem,) = check_readback("h1", TcpSettings(cc="cubic"), "bbr 1 1 1", ROUTES, allowed_cc="reno bbr")
    assert "asked for congestion control cubic, its namespace has bbr" in problem
    assert 'sysctl -w net.ipv4.tcp_allowed_congestion_control="reno bbr cubic"' in problem


def test_sack_timestamps_and_ecn_not_taken_are_each_reported() -> None:
    problems = check_readback("h1", NEWRENO, "reno 1 1 0", ROUTES.strip() + " initcwnd 2")
    assert len(problems) == 3
    assert any("net.ipv4.tcp_ecn reads '1', not 0" in p for p in problems)
    assert any("net.ipv4.tcp_sack reads '1', not 0" in p for p in problems)
    assert any("net.ipv4.tcp_timestamps reads '0', not 1" in p for p in problems)


def test_a_route_without_the_initcwnd_asked_for_fails() -> None:
    (problem,) = check_readback("h1", NEWRENO, "reno 0 0 1", ROUTES)
    assert "1 of 1 routes do not set initcwnd 2 (they read none)" in problem
    (problem,) = check_readback("h1", NEWRENO, "reno 0 0 1", "")
    assert "no IPv4 route" in problem


def test_a_short_readback_is_a_problem_not_a_crash() -> None:
    problems = check_readback("h1", NEWRENO, "reno", ROUTES.strip() + " initcwnd 2")
    assert len(problems) == 3 and all("reads 'nothing'" in p for p in problems)


def test_settings_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="cc=vegas"):
        TcpSettings(cc="vegas")
    with pytest.raises(ValueError, match="initcwnd=-1"):
        TcpSettings(initcwnd=-1)
    assert TcpSettings().effective_initcwnd == 10 and NEWRENO.effective_initcwnd == 2


def test_the_connection_must_have_negotiated_what_the_hosts_were_set_to() -> None:
    assert check_connection_options("h1", NEWRENO, {"ts"}) == []
    assert check_connection_options("h1", TcpSettings(), {"ts", "sack", "ecn", "ecnseen"}) == []
    problems = check_connection_options("h1", NEWRENO, {"ts", "sack", "ecn"})
    assert len(problems) == 2
    assert "the connection has sack" in problems[0] and "net.ipv4.tcp_sack" in problems[0]
    assert "ECN negotiated though the hosts were set to ecn=off" in problems[1]
    assert check_connection_options("h1", NEWRENO, set()) == []  # never seen: reported elsewhere


def test_a_run_asks_for_the_tcp_its_topology_parameters_name() -> None:
    assert requested_tcp({"fwd_rate_mbps": 1, "cc": "reno", "initcwnd": 2, "sack": False}) == TcpSettings(
        cc="reno", sack=False, initcwnd=2
    )
    assert requested_tcp({}) == TcpSettings()
