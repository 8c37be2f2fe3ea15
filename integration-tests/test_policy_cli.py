"""ackwise policy and ackwise flows against a running switch, with traffic sent through it; over
IPv6 too: ``flows`` and ``watch`` show an IPv6 flow, and ``controller run`` gives it a per-flow rule
(ack_thinning.flow_policy6) that the switch then applies to its ACKs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from conftest import Netns

from ackwise.netdev import add_veth

PORT = "9092"

# 16 data segments host1 -> host2 and their ACKs, segments FIRST..LAST-1 (argv), over IP VERSION
# (argv: 4, 10.0.N.1; 6, fd00:0:0:N::1).
SEND = r"""
import sys
from scapy.all import Ether, IP, IPv6, TCP, Raw, sendp
version, first, last = (int(a) for a in sys.argv[1:4])
mac = lambda p: f"00:00:00:00:0{p}:fe"
ip = (lambda s, d: IP(src=f"10.0.{s}.1", dst=f"10.0.{d}.1")) if version == 4 else (
    lambda s, d: IPv6(src=f"fd00:0:0:{s}::1", dst=f"fd00:0:0:{d}::1"))
def seg(src, dst, sport, dport, seq, ack, payload=b""):
    pkt = Ether(dst=mac(src)) / ip(src, dst) / TCP(
        sport=sport, dport=dport, seq=seq, ack=ack, flags="A",
        options=[("NOP", None), ("NOP", None), ("Timestamp", (seq % 2**32, ack % 2**32))])
    return pkt / Raw(load=payload) if payload else pkt
data = [seg(1, 2, 40000, 5001, 1000 + k * 1448, 1, b"x" * 1448) for k in range(first, last)]
acks = [seg(2, 1, 5001, 40000, 1, 1000 + k * 1448) for k in range(first + 1, last + 1)]
sendp(data, iface="host1", verbose=False)
sendp(acks, iface="host2", verbose=False, inter=0.002)
"""


def test_policy_and_flows(netns: Netns, cli_env: dict[str, str]) -> None:
    def ackwise(*args: str, check: bool = True):
        return netns.run("ackwise", "--thrift-port", PORT, *args, env=cli_env, check=check)

    for i in (1, 2):
        # A jumbo MTU: IPv6's full-sized segments are 20 bytes longer than IPv4's 1500.
        add_veth(f"sw-p{i}", f"host{i}", netns=netns.name, ipv6=True, offloads=True)
    ackwise("switch", "start", "ack_switch", "-i", "1@sw-p1", "-i", "2@sw-p2")
    try:
        for i in (1, 2):
            ackwise(
                "table",
                "add",
                "ipv4_lpm",
                "route",
                f"10.0.{i}.0/24",
                "-p",
                f"port={i}",
                f"src_mac=00:00:00:00:0{i}:fe",
                f"dst_mac=00:00:00:00:0{i}:01",
            )

        out = ackwise("policy", "set", "src=10.0.2.1", "dport=40000", "every_d", "d=4").stdout
        assert "rule 0: src=10.0.2.1/32 dport=40000 -> every_d mss=1448 d=4 idle_ms=1000 hold_ms=200" in out
        ackwise("policy", "set", "default", "tack", "beta=8")
        listed = json.loads(ackwise("--json", "policy", "list").stdout)
        assert listed["rules"][0]["policy"] == {
            "policy": "every_d",
            "mss": 1448,
            "d": 4,
            "idle_ms": 1000,
            "hold_ms": 200,
        }
        assert listed["default"]["beta"] == 8

        bad = ackwise("policy", "set", "src=10.0.2.1", "every_d", "d=0", check=False)
        assert bad.returncode == 2 and "d=0: must be an integer in 1..255" in bad.stderr
        bad = ackwise("policy", "set", "src=10.0.2.1", "sometimes", check=False)
        assert bad.returncode == 2 and "no policy named" in bad.stderr

        assert ackwise("flows").stdout.strip() == "no flows"
        netns.run(sys.executable, "-c", SEND, "4", "0", "16", env=cli_env)
        rows = json.loads(ackwise("--json", "flows").stdout)
        acks = next(r for r in rows if r["sender"] == "10.0.2.1:5001")
        data = next(r for r in rows if r["sender"] == "10.0.1.1:40000")
        assert (acks["acks_seen"], acks["acks_forwarded"], acks["acks_thinned"]) == (16, 5, 11)
        assert data["data"] == 16 and acks["last_keep_reason"] == "acks_all_data"
        table = ackwise("flows", "--sort", "acks_thinned").stdout
        assert "10.0.2.1:5001" in table.splitlines()[1] and "68.8" in table
        assert ackwise("flows", "--filter", "10.0.9.").stdout.strip() == "no flows"

        out = ackwise("port", "ecn", "1", "20").stdout
        assert "port 1: CE when more than 20 packets are queued (marked so far: 0)" in out
        out = ackwise("port", "ecn", "1", "5", "30", "10").stdout
        assert "between 5 and 30 packets" in out
        entries = json.loads(ackwise("--json", "table", "dump", "ecn.port_threshold").stdout)["entries"]
        assert [(e["action"], e["params"]) for e in entries] == [
            ("ecn.red", {"k_min_pkts": 5, "k_max_pkts": 30, "p_max": 10})
        ]
        bad = ackwise("port", "ecn", "1", "30", "5", "10", check=False)
        assert bad.returncode == 2 and "k_min < k_max" in bad.stderr
        ackwise("port", "ecn", "1", "off")
        assert json.loads(ackwise("--json", "table", "dump", "ecn.port_threshold").stdout)["entries"] == []
        out = ackwise("policy", "set", "dst=10.0.1.0/24", "acc", "d_cap=16", "signals=ce,queue").stdout
        assert "acc mss=1448 d_cap=16 signals=ce,queue rtt_min_us=0 idle_ms=1000 hold_ms=200" in out

        ackwise("policy", "del", "0")
        assert [r["handle"] for r in json.loads(ackwise("--json", "policy", "list").stdout)["rules"]] == [1]
        check_ipv6_flows(netns, cli_env, ackwise)
    finally:
        ackwise("switch", "stop", check=False)  # also when a check failed: its files go with it


def check_ipv6_flows(netns: Netns, cli_env: dict[str, str], ackwise: Any) -> None:
    """An IPv6 flow under an IPv6 rule (every_d d=4): 'flows' and 'watch' show it by its
    [address]:port; the controller gives its ACKs a per-flow rule (every_d d=1, a new flow's) in
    flow_policy6, under which the next 16 ACKs all pass; stopped with --remove-rules-on-exit, it
    deletes that rule from flow_policy6."""
    for i in (1, 2):
        ackwise(
            "table",
            "add",
            "ipv6_lpm",
            "route",
            f"fd00:0:0:{i}::/64",
            "-p",
            f"port={i}",
            f"src_mac=00:00:00:00:0{i}:fe",
            f"dst_mac=00:00:00:00:0{i}:01",
        )
    ackwise("policy", "set", "src=fd00:0:0:2::/64", "every_d", "d=4")
    netns.run(sys.executable, "-c", SEND, "6", "0", "16", env=cli_env)
    rows = json.loads(ackwise("--json", "flows").stdout)
    acks = next(r for r in rows if r["sender"] == "[fd00:0:0:2::1]:5001")
    assert (acks["acks_seen"], acks["acks_forwarded"], acks["acks_thinned"]) == (16, 5, 11)
    assert "[fd00:0:0:2::1]:5001" in ackwise("flows").stdout
    lines = [json.loads(line) for line in ackwise("watch", "--json", "--count", "1").stdout.splitlines()]
    assert [(x["policy"], x["d"]) for x in lines if x["sender"] == "[fd00:0:0:1::1]:40000"] == [
        ("every_d", 4)
    ]

    config = Path(cli_env["ACKWISE_STATE_DIR"]).parent / "controller6.yaml"
    config.write_text('rules: [{name: lab6, match: {src: "fd00:0:0:2::/64"}}]\n')
    controller = subprocess.Popen(
        [
            *("ip", "netns", "exec", netns.name, "ackwise", "--thrift-port", PORT),
            *("controller", "run", "--config", str(config), "--remove-rules-on-exit"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env,
    )
    lines = []
    reader = threading.Thread(
        target=lambda: lines.extend(map(json.loads, controller.stdout or [])), daemon=True
    )
    reader.start()
    try:
        deadline = time.monotonic() + 20
        while not any(x["event"] == "set" for x in lines) and controller.poll() is None:
            assert time.monotonic() < deadline, f"no rule written in 20 s: {lines}"
            time.sleep(0.05)
        written = next(x for x in lines if x["event"] == "set")
        assert written["acks"] == "src=fd00:0:0:2::1/128 dst=fd00:0:0:1::1/128 sport=5001 dport=40000"
        assert written["new"].startswith("every_d mss=1448 d=1 "), written
        flow_rules = json.loads(ackwise("--json", "policy", "list").stdout)["flow_rules"]
        assert [(r["ip_version"], r["match"]) for r in flow_rules] == [(6, written["acks"])]
        netns.run(sys.executable, "-c", SEND, "6", "16", "32", env=cli_env)
        rows = json.loads(ackwise("--json", "flows").stdout)
        after = next(r for r in rows if r["sender"] == "[fd00:0:0:2::1]:5001")
        assert (after["acks_seen"], after["acks_forwarded"]) == (32, 5 + 16)  # the flow's rule: d=1
    finally:
        controller.send_signal(signal.SIGINT)
        try:
            controller.wait(timeout=10)
        except subprocess.TimeoutExpired:
            controller.kill()
            controller.wait()
        reader.join(timeout=5)
    assert [x["event"] for x in lines if x["event"] == "remove"] == ["remove"], lines
    assert json.loads(ackwise("--json", "policy", "list").stdout)["flow_rules"] == []
