"""Issue 40, the host side over IPv6: the agent's parser and rules, the kernel's quickack on both
families' routes, capture counting, the topology parameter and its addresses, a transfer over
IPv6 on the loopback."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from ackwise.experiments.harness.scenario import ScenarioError, load
from ackwise.experiments.measure.listen import listen
from ackwise.experiments.measure.pcapstats import direction_stats, read_segments
from ackwise.hosts import agent as agent_module
from ackwise.hosts.agent import FIREWALLS, Agent
from ackwise.hosts.kernel import set_quickack
from ackwise.topologies.catalog import (
    Dumbbell,
    HostAddressing,
    TopologyParamError,
    check_params,
    mss_for_mtu,
    window_clamp_bytes,
)
from ackwise.topologies.hosts import ipv6_sysctls
from ackwise.topologies.tcp_settings import route_initcwnd_commands
from ackwise.twins.packets import ACK, parse_frame_tcp, parse_ip_tcp

TCP_ACK = TCP(sport=5001, dport=40000, seq=8, ack=1449, flags="A", window=9, options=[("Timestamp", (5, 6))])


def test_an_ip_packet_of_either_version_is_parsed_as_its_frame_is() -> None:
    """NFQUEUE hands the agent IP packets without a link-layer header: IPv6 ones are read as
    parse_frame_tcp reads their frames (the old agent read IPv4 only: IPv6 came back None)."""
    v6 = IPv6(src="fd00:ac::2", dst="fd00:ac::1", tc=2) / TCP_ACK / Raw(b"abc")
    v4 = IP(src="10.0.0.2", dst="10.0.0.1", tos=2) / TCP_ACK / Raw(b"abc")
    for packet in (v6, v4):
        seg = parse_ip_tcp(bytes(packet), 1.5)
        assert seg is not None
        assert seg == parse_frame_tcp(bytes(Ether() / packet), 1.5)
        assert (seg.ack, seg.flags, seg.payload_len, seg.ecn, seg.ts_val, seg.time) == (
            1449,
            ACK,
            3,
            2,
            5,
            1.5,
        )
    assert parse_ip_tcp(bytes(v6)).src == "fd00:ac::2"  # type: ignore[union-attr]
    assert parse_ip_tcp(bytes(IPv6(nh=17) / Raw(b"\0" * 8))) is None
    assert parse_ip_tcp(bytes(v6)[:50]) is None  # cut short inside TCP
    assert parse_ip_tcp(b"") is None


def test_the_agent_queues_both_ip_versions_and_removes_exactly_its_rules(monkeypatch: Any) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(agent_module.subprocess, "run", lambda cmd, **kw: calls.append(list(cmd)))
    agent = Agent("every_d", {"d": "2"}, [5001], 10, 1.0)
    agent.install_rules()
    inserted = [c for c in calls if c[1] == "-I"]
    assert {c[0] for c in inserted} == set(FIREWALLS) == {"iptables", "ip6tables"}
    assert len(inserted) == 4  # INPUT and OUTPUT, in each
    for firewall in FIREWALLS:
        rules = [c[2:] for c in inserted if c[0] == firewall]
        assert [
            "INPUT",
            "-p",
            "tcp",
            "--dport",
            "5001",
            "-j",
            "NFQUEUE",
            "--queue-num",
            "10",
            "--queue-bypass",
        ] in rules
        assert [
            "OUTPUT",
            "-p",
            "tcp",
            "--sport",
            "5001",
            "-j",
            "NFQUEUE",
            "--queue-num",
            "11",
            "--queue-bypass",
        ] in rules
    calls.clear()
    agent.remove_rules()
    assert sorted((c[0], c[2:]) for c in calls) == sorted((c[0], c[2:]) for c in inserted)
    assert all(c[1] == "-D" for c in calls) and not agent.rules


def test_quickack_covers_ipv6_routes_and_hands_them_back() -> None:
    shown = {
        "ip -4 route show": "10.0.0.0/16 dev h1-eth0 proto kernel scope link src 10.0.0.2\n",
        "ip -6 route show": "fd00:ac::/64 dev h1-eth0 proto kernel metric 256 pref medium\n",
    }
    ran: list[str] = []

    def run(command: str) -> str:
        ran.append(command)
        return shown.get(command, "")

    routes = set_quickack(True, run=run)
    assert routes == [shown["ip -4 route show"].strip(), shown["ip -6 route show"].strip()]
    assert "ip route change fd00:ac::/64 dev h1-eth0 proto kernel metric 256 pref medium quickack 1" in ran
    ran.clear()
    set_quickack(False, routes, run=run)
    assert ran[-1].endswith("pref medium quickack 0")


def test_initcwnd_is_set_on_ipv6_routes_too() -> None:
    text = (
        "10.0.0.0/16 dev h1-eth0 proto kernel\nfd00:ac::/64 dev h1-eth0 proto kernel metric 256 pref medium\n"
    )
    assert route_initcwnd_commands(text, 2)[1] == (
        "ip route change fd00:ac::/64 dev h1-eth0 proto kernel metric 256 pref medium initcwnd 2"
    )


def test_captures_count_ipv6_tcp(tmp_path: Path) -> None:
    """An IPv6 capture's directions and counts, as an IPv4 one's (pcapstats read IPv4 only)."""
    a, b = "fd00:ac::1", "fd00:ac::2"
    data = [
        Ether()
        / IPv6(src=a, dst=b)
        / TCP(sport=40000, dport=5001, seq=1 + i * 1428, flags="A")
        / Raw(b"x" * 1428)
        for i in range(3)
    ]
    acks = [Ether() / IPv6(src=b, dst=a) / TCP(sport=5001, dport=40000, ack=1 + 3 * 1428, flags="A")]
    wrpcap(str(tmp_path / "v6.pcap"), data + acks)
    stats = direction_stats(tmp_path / "v6.pcap")
    assert stats["fd00:ac::1:40000 > fd00:ac::2:5001"].data_segments == 3
    assert stats["fd00:ac::1:40000 > fd00:ac::2:5001"].data_bytes == 3 * 1428
    assert stats["fd00:ac::2:5001 > fd00:ac::1:40000"].pure_acks == 1


def test_an_nflog_record_of_an_ipv6_packet_is_read(tmp_path: Path) -> None:
    packet = bytes(IPv6(src="fd00:ac::2", dst="fd00:ac::1") / TCP(sport=5001, dport=40000, ack=99, flags="A"))
    record = b"\x0a\x00\x00\x07" + struct.pack("=HH", 4 + len(packet), 9) + packet  # AF_INET6, group 7
    pcap = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 239)
    pcap += struct.pack("<IIII", 10, 0, len(record), len(record)) + record
    (tmp_path / "n.pcap").write_bytes(pcap)
    (seg,) = list(read_segments(tmp_path / "n.pcap"))
    assert (seg.src, seg.ack) == ("fd00:ac::2", 99)


def test_ip_version_is_a_parameter_of_every_topology() -> None:
    for topology in ("dumbbell", "parking-lot", "wlan", "chain"):
        check_params(topology, {"ip_version": 6})
    with pytest.raises(TopologyParamError, match="ip_version=5: give one of 4, 6"):
        check_params("dumbbell", {"ip_version": 5})
    with pytest.raises(TopologyParamError, match=r"mtu_bytes=1040: IPv6 .* needs at least 1280"):
        check_params("chain", {"ip_version": 6, "mtu_bytes": 1040})


def test_ipv6_addresses_and_segment_size() -> None:
    addressing = HostAddressing()
    assert "ip6" not in addressing.take()
    assert addressing.take(6) == {"ip": "10.0.0.3/16", "mac": "00:00:00:00:00:02", "ip6": "fd00:ac::2/64"}
    assert mss_for_mtu(1500, 6) == 1428 and mss_for_mtu(1500) == 1448
    assert window_clamp_bytes(3, 1500, 6) == 3 * 1428
    topo = Dumbbell(ip_version=6)
    assert topo.ip_version == 6 and topo.mss_bytes == 1428
    assert topo.nodeInfo("r1")["ip6"] == "fd00:ac::2/64"
    assert "ip6" not in Dumbbell().nodeInfo("r1")


def test_ipv6_sysctls() -> None:
    assert "all.disable_ipv6=1" in ipv6_sysctls(False)
    on = ipv6_sysctls(True)
    assert "all.disable_ipv6=0" in on and "all.accept_dad=0" in on and "default.accept_ra=0" in on


def test_transfer_over_ipv6_on_loopback() -> None:
    try:
        listen(0, 6).close()
    except OSError:
        pytest.skip("no IPv6 on this machine's loopback")
    with socket.socket(socket.AF_INET6) as sock:
        sock.bind(("::1", 0))
        port = sock.getsockname()[1]
    module = [sys.executable, "-m", "ackwise.experiments.measure.transfer"]
    recv = subprocess.Popen(
        [*module, "recv", "--port", str(port), "--timeout", "20", "--ip-version", "6"],
        stdout=subprocess.PIPE,
        text=True,
    )
    send = subprocess.run(
        [*module, "send", "--host", "::1", "--port", str(port), "--size", "100000"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    received = json.loads(recv.communicate(timeout=30)[0])
    assert json.loads(send.stdout)["byte_exact"] is True
    assert received["bytes"] == 100000 and received["peer"] == "::1"


def test_a_scenario_takes_its_base_set_up() -> None:
    """asymmetric-ipv6 is asymmetric's set-up at two points, IPv4 and IPv6, with the same frames/s."""
    base, variant = load("asymmetric"), load("asymmetric-ipv6")
    for key in ("topology", "params", "traffic", "capture", "metrics", "switch_ecn", "scale"):
        assert getattr(variant, key) == getattr(base, key), key
    assert [p.params for p in variant.points] == [
        {"rev_queue_pps": 19, "ip_version": 4},
        {"rev_queue_pps": 19, "ip_version": 6},
    ]
    assert base.point("10 kbit/s").params == {"rev_queue_pps": 19}
    assert variant.source_sha256 != base.source_sha256


def test_a_base_is_checked(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: a\nbase: b\n")
    with pytest.raises(ScenarioError, match=r"base 'b': no b\.yaml beside it"):
        load(tmp_path / "a.yaml")
    (tmp_path / "b.yaml").write_text("name: b\nbase: c\n")
    with pytest.raises(ScenarioError, match="without a base of its own"):
        load(tmp_path / "a.yaml")
