"""Mininet hosts cannot reach the switches' Thrift servers (docs/security.md).

simple_switch listens on 0.0.0.0:PORT in the root namespace and has no option to bind elsewhere.
The hosts live in their own namespaces: they have no route to any address of the root namespace,
and a host that adds one (a process on a host is root there) still gets nothing through, because
the test bed drops, in the root namespace's INPUT chain, whatever arrives on its interfaces.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from pathlib import Path

from ackwise.topologies.links import FIREWALL_COMMENT, firewall_rules
from ackwise.topologies.testbed import Testbed

CONNECT = (
    "import socket, sys\n"
    "host, port = sys.argv[1], int(sys.argv[2])\n"
    "try:\n"
    "    socket.create_connection((host, port), timeout=1.5).close()\n"
    "    print('CONNECTED')\n"
    "except OSError as exc:\n"
    "    print('FAILED', type(exc).__name__, exc)\n"
)


def root_addresses() -> list[str]:
    """Every address of the root namespace (this test's), IPv4 and IPv6, with a scope id for
    link-local ones."""
    out = json.loads(subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True).stdout)
    found = []
    for link in out:
        for a in link.get("addr_info", []):
            addr = a["local"]
            if ipaddress.ip_address(addr).is_link_local and ":" in addr:
                addr = f"{addr}%{link['ifname']}"
            found.append(addr)
    return found


def try_connect(host: object, script: Path, address: str, port: int) -> str:
    """What a TCP connection from ``host`` to address:port came to: CONNECTED or FAILED why."""
    out = str(host.cmd(f"python3 {script} '{address}' {port}"))  # type: ignore[attr-defined]
    return out.strip().splitlines()[-1] if out.strip() else "no output"


def drop_count(intf: str) -> int:
    """Packets the test bed's INPUT rule for ``intf`` dropped so far."""
    out = subprocess.run(
        ["iptables", "-w", "-L", "INPUT", "-v", "-x", "-n"], capture_output=True, text=True
    ).stdout
    for line in out.splitlines():
        fields = line.split()
        if FIREWALL_COMMENT in line and intf in fields:
            return int(fields[0])
    raise AssertionError(f"no test bed rule for {intf} in the root namespace's INPUT chain")


def test_hosts_cannot_reach_any_thrift_port(tmp_path: Path) -> None:
    script = tmp_path / "connect.py"
    script.write_text(CONNECT)
    with Testbed.create("dumbbell", n_pairs=1, fwd_delay_ms=1, rev_delay_ms=1) as testbed:
        ports = [s.thrift_port for s in testbed.switches]
        addresses = root_addresses()
        assert addresses, "the root namespace shows no address"

        # Every interface of the test bed in the root namespace is closed to its IP stack, and
        # speaks no IPv6 (no link-local address a host could reach).
        rules = firewall_rules()
        for intf in sorted(testbed.isolated_intfs()):
            assert any(f"-i {intf} " in r for r in rules if r.startswith("iptables ")), intf
            assert any(f"-i {intf} " in r for r in rules if r.startswith("ip6tables ")), intf
            assert Path(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6").read_text().strip() == "1", intf

        # As the hosts are: no route to any root address, and no Thrift port answers on any.
        for host in testbed.hosts:
            for address in addresses:
                if ipaddress.ip_address(address.split("%")[0]).is_loopback:
                    continue  # the host's own loopback: its namespace, where nothing listens
                route = host.cmd(f"ip route get {address.split('%')[0]} 2>&1")
                assert "unreachable" in route or "No route" in route or "Network is unreachable" in route, (
                    f"{host.name} has a route to the root namespace's {address}: {route}"
                )
            for address in addresses:
                for port in ports:
                    outcome = try_connect(host, script, address, port)
                    assert outcome.startswith("FAILED"), f"{host.name} reached {address}:{port}: {outcome}"

        # A host that adds a route (and a neighbour entry, so that no ARP is needed): its SYN
        # reaches the root namespace, and is dropped there before TCP sees it.
        h1 = testbed.host("h1")
        s1 = next(s for s in testbed.switches if s.name == "s1")
        peer = s1.intfs[s1.port_to("h1")].name
        mac = Path(f"/sys/class/net/{peer}/address").read_text().strip()
        v4 = [a for a in addresses if ":" not in a and not ipaddress.ip_address(a).is_loopback]
        for address in v4:
            before = drop_count(peer)
            h1.cmd(f"ip route add {address}/32 dev h1-eth0")
            h1.cmd(f"ip neigh replace {address} lladdr {mac} dev h1-eth0 nud permanent")
            outcome = try_connect(h1, script, address, s1.thrift_port)
            h1.cmd(f"ip neigh del {address} dev h1-eth0; ip route del {address}/32 dev h1-eth0")
            assert outcome.startswith("FAILED"), (
                f"h1 reached {address}:{s1.thrift_port} with a route: {outcome}"
            )
            assert drop_count(peer) > before, f"h1's SYN to {address} never reached the root namespace"
    assert not [r for r in firewall_rules() if FIREWALL_COMMENT in r], "the test bed left firewall rules"
