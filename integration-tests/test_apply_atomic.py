"""``ackwise apply FILE`` against real switches: all or nothing when the switch refuses a change
half-way, idempotent, and enough to restore a restarted switch.

(A file with an error anywhere is refused before anything is sent: test_cli_bad_names.py checks
that the switch is unchanged after each such file.)
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, Netns

from ackwise.netdev import add_veth

ACK_PORT = "9393"
AP_PORT = "9394"

# The state a configuration can touch, read through ackwise's client, without entry handles
# (an entry put back by a rollback gets a new one) and with tables sorted by content.
SNAPSHOT = """
import json, sys
from ackwise.bmv2.client import SwitchClient
c = SwitchClient("localhost", int(sys.argv[1])).connect()
p = c.program
out = {"tables": {}, "defaults": {}, "registers": {}, "mirroring": {}, "multicast": {}}
for t in sorted(p.tables):
    rows = [dict(e.to_dict(), handle=None) for e in c.table_entries(t)]
    out["tables"][t] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    d = c.table_default(t)
    out["defaults"][t] = [d.action, d.params]
for r in ("queue.service_us", "queue.capacity_pkts", "ack_thinning.config"):
    if r in p.registers:
        out["registers"][r] = c.register_read_all(r)
for s in (1, 5):
    try:
        out["mirroring"][s] = c.mirroring_get(s)
    except Exception:
        out["mirroring"][s] = None
out["multicast"] = {str(k): v for k, v in sorted(c.mc_groups().items())}
print(json.dumps(out, sort_keys=True))
"""


def snapshot(netns: Netns, port: str) -> dict[str, Any]:
    result = netns.run(str(REPO / ".venv/bin/python"), "-c", SNAPSHOT, port)
    return json.loads(result.stdout)


def apply(netns: Netns, env: dict[str, str], port: str, path: Path) -> Any:
    return netns.run("ackwise", "--json", "--thrift-port", port, "apply", str(path), env=env, check=False)


def start(netns: Netns, env: dict[str, str], port: str, program: str, ifaces: list[str]) -> int:
    argv = ["ackwise", "--json", "--thrift-port", port, "switch", "start", program]
    for i, iface in enumerate(ifaces, 1):
        argv += ["-i", f"{i}@{iface}"]
    return int(json.loads(netns.run(*argv, env=env).stdout)["pid"])


@pytest.fixture
def ns(netns: Netns, cli_env: dict[str, str]) -> Iterator[Netns]:
    for i in (1, 2, 3, 4):
        add_veth(f"rba{i}", f"rba{i}h", netns=netns.name, mtu=None, ipv6=True, offloads=True)
    try:
        yield netns
    finally:
        for port in (ACK_PORT, AP_PORT):
            netns.run("ackwise", "--thrift-port", port, "switch", "stop", env=cli_env, check=False)


def route(prefix: str, port: int) -> dict[str, Any]:
    return {
        "table": "forwarding.ipv4_lpm",
        "action": "route",
        "key": {"dst_addr": prefix},
        "params": {"port": port, "src_mac": f"00:00:00:00:0{port}:fe", "dst_mac": f"00:00:00:00:0{port}:01"},
    }


ACK_CONFIG: dict[str, Any] = {
    "tables": [
        route("10.0.1.0/24", 1),
        route("10.0.2.0/24", 2),
        {"table": "forwarding.l2_exact", "action": "l2_forward", "key": ["00:00:00:00:01:01"], "params": [1]},
    ],
    "registers": [{"register": "ack_thinning.config", "index": 0, "value": 2_000_000}],
    "ports": [{"port": 2, "rate_pps": 500, "depth_pkts": 32}, {"port": 1, "depth_pkts": 100}],
    "mirroring": [{"session": 5, "port": 2}],
    "policies": [
        {"match": "src=10.0.2.0/24", "policy": "every_d", "params": {"d": 8}},
        {"match": "src=10.0.2.0/24 sport=5001", "policy": "acc", "params": {"signals": "ce,queue"}},
        {"match": "default", "policy": "tack", "params": {"beta": 8}},
    ],
    "ecn": [{"port": 2, "k": 20}, {"port": 1, "k_min": 10, "k_max": 40, "p_max": 20}],
}

AP_CONFIG: dict[str, Any] = {
    "tables": [route("10.0.0.0/24", 2), route("10.0.9.0/24", 1)],
    "ap": {"uplink": [1], "wireless": [2, 3], "cpu": 4},
    "stations": [
        {"prefix": "10.0.0.3/32", "budget_bytes": 32768},
        {"prefix": "10.0.0.4/32", "budget_bytes": 16384, "holdoff_ms": 0},
    ],
}


def write(tmp: Path, name: str, doc: dict[str, Any]) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_apply_twice_changes_nothing_the_second_time(
    ns: Netns, cli_env: dict[str, str], tmp_path: Path
) -> None:
    start(ns, cli_env, ACK_PORT, "ack_switch", ["rba1", "rba2"])
    path = write(tmp_path, "ack.yaml", ACK_CONFIG)
    first = apply(ns, cli_env, ACK_PORT, path)
    assert first.returncode == 0, first.stderr
    # 3 entries, 1 register, 2 ports, 1 session, 2 policy rules (IPv4: both have IPv4 addresses),
    # the default in each IP version's table (ack_switch thins IPv4 and IPv6), 2 ECN thresholds
    applied = json.loads(first.stdout)["applied"]
    ops = 13
    assert len(applied) == ops
    assert sum(": default " in op and "ack_thinning.policy" in op for op in applied) == 2
    after_first = snapshot(ns, ACK_PORT)
    handles = ns.run(
        "ackwise", "--json", "--thrift-port", ACK_PORT, "table", "dump", "ipv4_lpm", env=cli_env
    ).stdout
    second = apply(ns, cli_env, ACK_PORT, path)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == {"applied": [], "unchanged": ops}
    assert snapshot(ns, ACK_PORT) == after_first
    # Not deleted and re-added: the entries kept their handles.
    assert (
        ns.run(
            "ackwise", "--json", "--thrift-port", ACK_PORT, "table", "dump", "ipv4_lpm", env=cli_env
        ).stdout
        == handles
    )

    # A changed file changes only what differs: one route's port (modified in place), one ECN threshold.
    changed = json.loads(json.dumps(ACK_CONFIG))
    changed["tables"][1] = route("10.0.2.0/24", 3)
    changed["ecn"][0]["k"] = 30
    third = apply(ns, cli_env, ACK_PORT, write(tmp_path, "changed.yaml", changed))
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["unchanged"] == ops - 2
    assert len(json.loads(third.stdout)["applied"]) == 2


def test_a_change_the_switch_refuses_undoes_everything_before_it(
    ns: Netns, cli_env: dict[str, str], tmp_path: Path
) -> None:
    start(ns, cli_env, ACK_PORT, "ack_switch", ["rba1", "rba2"])
    base = dict(ACK_CONFIG)
    # The policy table holds 256 rules: fill it to two short of full.
    base["policies"] = [
        {"match": f"dst=10.1.{i // 250}.{i % 250}/32", "policy": "every_d", "params": {"d": 4}}
        for i in range(252)
    ] + ACK_CONFIG["policies"]
    assert apply(ns, cli_env, ACK_PORT, write(tmp_path, "base.yaml", base)).returncode == 0
    before = snapshot(ns, ACK_PORT)
    assert len(before["tables"]["ack_thinning.policy"]) == 254

    # Every kind of change first, then three new rules where two fit: the switch refuses the third.
    doc = {
        "clear": ["forwarding.l2_exact"],
        "tables": [route("10.0.3.0/24", 2), route("10.0.1.0/24", 2)],  # one new, one modified
        "defaults": [
            {"table": "ack_thinning.policy", "action": "policy_every_d", "params": [1448, 3, 1000, 200]}
        ],
        "registers": [{"register": "ack_thinning.config", "index": 0, "value": 5_000_000}],
        "ports": [{"port": 2, "rate_pps": 80, "depth_pkts": 10}, {"port": 3, "rate_pps": 40}],
        "mirroring": [{"session": 5, "port": 1}, {"session": 1, "port": 2}],
        "ecn": [{"port": 2, "k": 5}],
        "policies": [
            {"match": f"dst=10.2.0.{i}/32", "policy": "tack", "params": {"beta": 2}} for i in range(3)
        ],
    }
    result = apply(ns, cli_env, ACK_PORT, write(tmp_path, "too-much.yaml", doc))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert "policies item 3" in lines[0] and "table full" in lines[0]
    assert "undid the" in lines[0] and "the switch is as it was" in lines[0]
    assert snapshot(ns, ACK_PORT) == before


def test_apply_restores_a_restarted_switch(ns: Netns, cli_env: dict[str, str], tmp_path: Path) -> None:
    ack_file, ap_file = write(tmp_path, "ack.yaml", ACK_CONFIG), write(tmp_path, "ap.yaml", AP_CONFIG)
    pids = {
        ACK_PORT: start(ns, cli_env, ACK_PORT, "ack_switch", ["rba1", "rba2"]),
        AP_PORT: start(ns, cli_env, AP_PORT, "ap_proxy", ["rba3", "rba4", "rba3h", "rba4h"]),
    }
    configured = {}
    for port, path in ((ACK_PORT, ack_file), (AP_PORT, ap_file)):
        assert apply(ns, cli_env, port, path).returncode == 0
        configured[port] = snapshot(ns, port)
    assert configured[AP_PORT]["multicast"], "ap: made no multicast groups"
    assert len(configured[AP_PORT]["tables"]["ap.stations"]) == 2

    for port, pid in pids.items():  # a crash, not a clean stop
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.05)
        ns.run(
            "ackwise", "--thrift-port", port, "switch", "stop", env=cli_env, check=False
        )  # forget the dead one
    start(ns, cli_env, ACK_PORT, "ack_switch", ["rba1", "rba2"])
    start(ns, cli_env, AP_PORT, "ap_proxy", ["rba3", "rba4", "rba3h", "rba4h"])
    assert snapshot(ns, ACK_PORT) != configured[ACK_PORT]  # the restart lost it all

    for port, path in ((ACK_PORT, ack_file), (AP_PORT, ap_file)):
        result = apply(ns, cli_env, port, path)
        assert result.returncode == 0, result.stderr
        assert snapshot(ns, port) == configured[port]
