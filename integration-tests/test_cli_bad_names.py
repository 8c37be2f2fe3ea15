"""Bad input that needs the running program's names to be recognised as bad: exit 2 and one line
on stderr naming it and the fix; a valid request the switch refuses: exit 1. Against real
simple_switch processes (ack_switch and ap_proxy) in a private network namespace.

Rows that need no switch are in control-plane/tests/test_cli_bad_input.py.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Netns

from ackwise.netdev import add_veth

ACK_PORT = "9391"
AP_PORT = "9392"
NOT_UTF8 = os.fsdecode(b"\xff\xfe")


@pytest.fixture
def switches(netns: Netns, cli_env: dict[str, str]) -> Iterator[Netns]:
    for i in (1, 2, 3):
        add_veth(f"rbb{i}", f"rbb{i}h", netns=netns.name, mtu=None, ipv6=True, offloads=True)
    ack = [
        "ackwise",
        "--thrift-port",
        ACK_PORT,
        "switch",
        "start",
        "ack_switch",
        "-i",
        "1@rbb1",
        "-i",
        "2@rbb2",
    ]
    ap = ["ackwise", "--thrift-port", AP_PORT, "switch", "start", "ap_proxy", "-i", "1@rbb3"]
    for argv in (ack, ap):
        netns.run(*argv, env=cli_env)
    try:
        yield netns
    finally:
        for port in (ACK_PORT, AP_PORT):
            netns.run("ackwise", "--thrift-port", port, "switch", "stop", env=cli_env, check=False)


def write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


ROUTE = ["-p", "port=1", "src_mac=00:00:00:00:01:fe", "dst_mac=00:00:00:00:01:01"]


def rows(tmp: Path) -> list[tuple[str, list[str], int, str]]:
    """(Thrift port, argv, exit code, regex for the one stderr line)"""
    late_error = write(
        tmp,
        "late.yaml",
        "tables:\n"
        "  - {table: forwarding.ipv4_lpm, action: route, key: {dst_addr: 10.0.7.0/24},\n"
        "     params: {port: 1, src_mac: '00:00:00:00:01:fe', dst_mac: '00:00:00:00:01:01'}}\n"
        "ports:\n  - {port: 1, rate_pps: 100}\n"
        "policies:\n  - {match: src=10.0.2.0/24, policy: every_d, params: {d: 0}}\n",
    )
    unknown_table = write(
        tmp,
        "unknown.yaml",
        "registers:\n  - {register: queue.capacity_pkts, index: 1, value: 10}\n"
        "tables:\n  - {table: forwarding.nosuch, action: route, key: [1], params: []}\n",
    )
    wide = write(
        tmp, "wide.yaml", "registers:\n  - {register: queue.capacity_pkts, index: 1, value: 99999999999}\n"
    )
    twice = write(
        tmp,
        "twice.yaml",
        "ecn:\n  - {port: 2, k: 10}\n  - {port: 2, k: 20}\n",
    )
    station_on_ack = write(tmp, "station.yaml", "stations:\n  - {prefix: 10.0.0.3/32}\n")
    not_json = write(tmp, "program.json", "{not json")
    return [
        # names the loaded program does not have
        (
            ACK_PORT,
            ["table", "add", "nosuch", "route", "10.0.2.0/24", *ROUTE],
            2,
            r"no table 'nosuch' in the loaded program \(it has: ",
        ),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "nosuch", "10.0.2.0/24"],
            2,
            r"no action of forwarding\.ipv4_lpm 'nosuch'",
        ),
        (ACK_PORT, ["table", "dump", "nosuch"], 2, r"no table 'nosuch'"),
        (ACK_PORT, ["table", "clear", f"t{NOT_UTF8}"], 2, r"no table 't\\xff\\xfe'"),
        (ACK_PORT, ["register", "read", "nosuch"], 2, r"no register 'nosuch'"),
        (ACK_PORT, ["register", "reset", "nosuch"], 2, r"no register 'nosuch'"),
        (ACK_PORT, ["counter", "read", "nosuch"], 2, r"no counter 'nosuch'"),
        (ACK_PORT, ["counter", "reset", "nosuch"], 2, r"no counter 'nosuch'"),
        (
            ACK_PORT,
            ["register", "read", "newest_ack"],
            2,
            r"register 'newest_ack' is ambiguous: ",
        ),
        # keys and parameters that do not fit the table
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "10.0.2.0/33", *ROUTE],
            2,
            r"prefix length 33 outside 0\.\.32",
        ),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "10.0.2.1/24", *ROUTE],
            2,
            r"10\.0\.2\.1/24 has bits set beyond the /24 prefix",
        ),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "10.0.2.0/24", "-p", "1", "0"],
            2,
            r"expected 3 value\(s\) \(port, src_mac, dst_mac\), got 2",
        ),
        (ACK_PORT, ["table", "add", "ipv4_lpm", "route", "10.0.2.0/24", *ROUTE, "x=1"], 2, r"unknown x"),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "10.0.2.0/24", "-p", "999", "0", "0"],
            2,
            r"parameter port: 999 does not fit in 9 bits",
        ),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "10.0.2.0/24", "-p", "1", "00:00:00:00:00:zz", "0"],
            2,
            r"'00:00:00:00:00:zz' is not a number",
        ),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", NOT_UTF8, *ROUTE],
            2,
            r"'\\xff\\xfe' is not a number",
        ),
        (ACK_PORT, ["table", "add", "ipv4_lpm", "route", "-1", *ROUTE], 2, r"-1 does not fit in 32 bits"),
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "1" * 40, *ROUTE],
            2,
            r"1{40} does not fit in 32 bits",
        ),
        (
            ACK_PORT,
            ["table", "add", "ack_thinning.policy", "policy_off", "0&&&0"],  # one key field: flow
            2,
            r"ternary or range keys: give a priority",
        ),
        (
            ACK_PORT,
            ["table", "default", "ipv4_lpm", "NoAction"],
            2,
            r"const default action set by the P4 program",
        ),
        (
            ACK_PORT,
            ["register", "read", "ack_thinning.key_a", "99999"],
            2,
            r"index 99999 outside ack_thinning\.key_a\[0\.\.4095\]",
        ),
        (
            ACK_PORT,
            ["register", "write", "queue.capacity_pkts", "1", str(2**70)],
            2,
            r"does not fit queue\.capacity_pkts: give 0\.\.",
        ),
        (ACK_PORT, ["counter", "read", "parser.malformed", "999"], 2, r"index 999 outside parser\.malformed"),
        # handles, keys and sessions that do not exist
        (
            ACK_PORT,
            ["table", "modify", "ipv4_lpm", "12345", "route", "1", "0", "0"],
            2,
            r"invalid handle: no entry has that handle",
        ),
        (ACK_PORT, ["table", "del", "ipv4_lpm", "--handle", "12345"], 2, r"invalid handle"),
        (ACK_PORT, ["table", "del", "ipv4_lpm", "10.9.9.0/24"], 2, r"no entry has that key"),
        (ACK_PORT, ["mirror", "show", "7"], 2, r"session not found: no such mirroring session"),
        (ACK_PORT, ["policy", "del", "12345"], 2, r"invalid handle"),
        # programs
        (ACK_PORT, ["load", not_json], 2, r"program\.json is not a bmv2 program JSON"),
        (ACK_PORT, ["ap", "serve", "10.0.0.3/32"], 2, r"no table 'ap\.stations' in the loaded program"),
        (
            AP_PORT,
            ["policy", "set", "default", "tack"],
            2,
            r"no table 'ack_thinning\.policy' in the loaded program",
        ),
        (AP_PORT, ["port", "ecn", "1", "5"], 2, r"no table 'ecn\.port_threshold'"),
        (AP_PORT, ["holdback", "setup", "5"], 2, r"has no hold-back: load ack_switch"),
        (AP_PORT, ["ap", "unserve", "10.0.0.9/32"], 2, r"10\.0\.0\.9/32 is not served"),
        # apply: an error anywhere in the file, found before anything is sent
        (ACK_PORT, ["apply", late_error], 2, r"policies item 1: .*d=0: must be an integer in 1\.\.255"),
        (ACK_PORT, ["apply", unknown_table], 2, r"tables item 1: no table 'forwarding\.nosuch'"),
        (ACK_PORT, ["apply", wide], 2, r"registers item 1: value=99999999999: must be 0\.\.4294967295"),
        (
            ACK_PORT,
            ["apply", twice],
            2,
            r"ecn item 2: ecn\.port_threshold already gets an entry with this key from ecn item 1",
        ),
        (ACK_PORT, ["apply", station_on_ack], 2, r"stations item 1: no table 'ap\.stations'"),
        # valid requests the switch's state refuses: exit 1, still one line
        (
            ACK_PORT,
            ["table", "add", "ipv4_lpm", "route", "10.0.1.0/24", *ROUTE],
            1,
            r"duplicate entry: an entry with this key exists",
        ),
    ]


def dump(netns: Netns, env: dict[str, str]) -> str:
    """What the ack_switch holds that these commands could have changed."""
    parts = [
        netns.run("ackwise", "--json", "--thrift-port", ACK_PORT, "table", "dump", t, env=env).stdout
        for t in ("ipv4_lpm", "ack_thinning.policy", "ecn.port_threshold")
    ]
    regs = netns.run(
        "ackwise", "--json", "--thrift-port", ACK_PORT, "register", "read", "queue.capacity_pkts", env=env
    )
    return "".join(parts) + regs.stdout


def test_bad_names_and_values_exit_2_with_one_line(
    switches: Netns, cli_env: dict[str, str], tmp_path: Path
) -> None:
    netns = switches
    # One route, so that a duplicate can be refused by the switch itself.
    netns.run(
        "ackwise",
        "--thrift-port",
        ACK_PORT,
        "table",
        "add",
        "ipv4_lpm",
        "route",
        "10.0.1.0/24",
        *ROUTE,
        env=cli_env,
    )
    before = dump(netns, cli_env)
    failures = []
    for port, argv, code, pattern in rows(tmp_path):
        result = netns.run("ackwise", "--thrift-port", port, *argv, env=cli_env, check=False)
        lines = result.stderr.splitlines()
        if result.returncode != code or len(lines) != 1 or not re.search(pattern, lines[0]):
            failures.append(f"{argv}: exit {result.returncode}, stderr {result.stderr!r}")
            continue
        line = lines[0]
        if "Traceback" in line or re.search(r"\b[A-Z]\w+\(\w+=", line) or "\\udc" in line:
            failures.append(f"{argv}: not in the user's terms: {line!r}")
        if result.stdout:
            failures.append(f"{argv}: printed {result.stdout!r} on stdout as well")
    assert not failures, "\n".join(failures)
    # Nothing was changed by any of them: the refused files were refused whole.
    assert dump(netns, cli_env) == before
    assert json.loads(
        netns.run(
            "ackwise", "--json", "--thrift-port", ACK_PORT, "table", "dump", "ipv4_lpm", env=cli_env
        ).stdout
    )["entries"][0]["key"] == {"dst_addr": "10.0.1.0/24"}
