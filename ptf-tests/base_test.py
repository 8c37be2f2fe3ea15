"""Base class and packet builders for ackwise's PTF tests.

Each test starts its own simple_switch (through ackwise's launcher) on the switch side of the veth
pairs that run_ptf.py created, installs entries through ackwise's Thrift client, and stops the
switch by pid in tearDown, also when the test failed.

Addressing: switch port N faces host N, with MAC 00:00:00:00:0N:01, IPv4 10.0.N.1 and IPv6
fd00:0:0:N::1; the switch's own MAC on port N is 00:00:00:00:0N:fe. Builders take ``ip_version``
(4 or 6): a test parametrised over both is a class with ``ip_version`` and a subclass that sets it
to 6, its bytes built the same way in either.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from ackwise.bmv2.client import SwitchClient
from ackwise.bmv2.launcher import RunningSwitch, SwitchSpec, start_switch, state_dir
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import TABLE_FORWARDING_IPV4_LPM, TABLE_FORWARDING_IPV6_LPM
from ackwise.twins.packets import checksum

PORTS = (0, 1, 2, 3)


def host_mac(port: int) -> str:
    return f"00:00:00:00:0{port}:01"


def switch_mac(port: int) -> str:
    return f"00:00:00:00:0{port}:fe"


def host_ip(port: int, ip_version: int = 4) -> str:
    return f"10.0.{port}.1" if ip_version == 4 else f"fd00:0:0:{port}::1"


def host_prefix(port: int, ip_version: int = 4) -> str:
    """The prefix of host ``port``'s network, routed to port ``port``."""
    return f"10.0.{port}.0/24" if ip_version == 4 else f"fd00:0:0:{port}::/64"


def ip_header(
    src_port_id: int,
    dst_port_id: int,
    ip_version: int,
    ttl: int = 64,
    ecn: int = 0,
    ip_id: int = 1,
    src_ip: str | None = None,
    dst_ip: str | None = None,
) -> Packet:
    """The IP header from host src_port_id to host dst_port_id (or from src_ip to dst_ip): IPv4,
    or IPv6 with the TTL as its hop limit and the ECN bits in its traffic class."""
    src = src_ip or host_ip(src_port_id, ip_version)
    dst = dst_ip or host_ip(dst_port_id, ip_version)
    if ip_version == 6:
        return IPv6(src=src, dst=dst, hlim=ttl, tc=ecn)
    return IP(src=src, dst=dst, ttl=ttl, tos=ecn, id=ip_id)


def param(name: str, default: str | None = None) -> str:
    params = tu.test_params_get()
    if name in params:
        return str(params[name])
    if default is None:
        raise RuntimeError(f"PTF test parameter {name!r} missing: run the tests with 'make ptf'")
    return default


# ---- packet builders ----


def tcp_segment(
    src_port_id: int = 1,
    dst_port_id: int = 2,
    sport: int = 40000,
    dport: int = 5001,
    seq: int = 1000,
    ack: int = 0,
    flags: str = "A",
    window: int = 502,
    options: list[tuple[str, Any]] | None = None,
    raw_options: bytes | None = None,
    payload: bytes = b"",
    ecn: int = 0,
    ttl: int = 64,
    ip_id: int = 1,
    dataofs: int | None = None,
    eth_dst: str | None = None,
    ip_version: int = 4,
    src_ip: str | None = None,
    dst_ip: str | None = None,
) -> Packet:
    """A TCP segment from host src_port_id to host dst_port_id, addressed to the switch (routed).

    ``options`` uses scapy's option list; ``raw_options`` puts exact bytes after the 20-byte header
    (with ``dataofs`` set to cover them unless given), for options scapy would not build.
    """
    tcp_kwargs: dict[str, Any] = {
        "sport": sport,
        "dport": dport,
        "seq": seq,
        "ack": ack,
        "flags": flags,
        "window": window,
    }
    if raw_options is not None:
        tcp_kwargs["dataofs"] = dataofs if dataofs is not None else 5 + (len(raw_options) + 3) // 4
        tcp = TCP(**tcp_kwargs) / Raw(load=raw_options + payload)
    else:
        if dataofs is not None:
            tcp_kwargs["dataofs"] = dataofs
        tcp = TCP(options=options or [], **tcp_kwargs)
        if payload:
            tcp = tcp / Raw(load=payload)
    pkt = (
        Ether(src=host_mac(src_port_id), dst=eth_dst or switch_mac(src_port_id))
        / ip_header(src_port_id, dst_port_id, ip_version, ttl, ecn, ip_id, src_ip, dst_ip)
        / tcp
    )
    return Ether(bytes(pkt))  # freeze lengths and checksums


def pure_ack(
    src_port_id: int = 2,
    dst_port_id: int = 1,
    sport: int = 5001,
    dport: int = 40000,
    seq: int = 5000,
    ack: int = 1000,
    ts: tuple[int, int] | None = (100, 200),
    sack: list[tuple[int, int]] | None = None,
    **kwargs: Any,
) -> Packet:
    """A pure ACK from the data receiver, with Linux's option layout (NOP NOP TS [NOP NOP SACK])."""
    options: list[tuple[str, Any]] = []
    if ts is not None:
        options += [("NOP", None), ("NOP", None), ("Timestamp", ts)]
    if sack:
        options += [("NOP", None), ("NOP", None), ("SAck", tuple(x for block in sack for x in block))]
    return tcp_segment(src_port_id, dst_port_id, sport, dport, seq, ack, "A", options=options, **kwargs)


class TcpFlow:
    """A crafted TCP flow: data from host ``data_port`` to host ``ack_port``, ACKs back.

    ``data(k)`` is the k-th full-sized segment (from 0); ``ack(k)`` acknowledges the first k
    segments. Timestamps advance with k unless given. Sequence numbers wrap like TCP's. Over IPv4
    or IPv6 (``ip_version``), between the hosts' addresses unless ``data_ip``/``ack_ip`` give
    others (in the same prefixes, so routed alike).
    """

    def __init__(
        self,
        data_port: int = 1,
        ack_port: int = 2,
        sport: int = 40000,
        dport: int = 5001,
        isn: int = 1000,
        irs: int = 5000,
        mss: int = 1448,
        ts_base: int = 1_000_000,
        ip_version: int = 4,
        data_ip: str | None = None,
        ack_ip: str | None = None,
    ) -> None:
        self.data_port, self.ack_port, self.sport, self.dport = data_port, ack_port, sport, dport
        self.isn, self.irs, self.mss, self.ts_base = isn, irs, mss, ts_base
        self.ip_version = ip_version
        self.data_ip = data_ip or host_ip(data_port, ip_version)
        self.ack_ip = ack_ip or host_ip(ack_port, ip_version)

    def key(self) -> tuple[FlowKey, int]:
        """The flow's key and the direction of its ACKs (the half-flow that sends them)."""
        key, data_direction = FlowKey.of(self.data_ip, self.ack_ip, self.sport, self.dport)
        return key, 1 - data_direction

    def data_sender(self) -> str:
        """The data sender as flow records name it (address:port, [address]:port for IPv6)."""
        key, ack_direction = self.key()
        return key.endpoint(1 - ack_direction)

    def ack_sender(self) -> str:
        key, ack_direction = self.key()
        return key.endpoint(ack_direction)

    def seq(self, k: int) -> int:
        return (self.isn + k * self.mss) % 2**32

    def ts(self, offset: int) -> int:
        return (self.ts_base + offset) % 2**32

    def data(self, k: int, flags: str = "A", payload_len: int | None = None, **kwargs: Any) -> bytes:
        n = self.mss if payload_len is None else payload_len
        options = [("NOP", None), ("NOP", None), ("Timestamp", (self.ts(k), self.ts(500 + k)))]
        return bytes(
            tcp_segment(
                self.data_port,
                self.ack_port,
                self.sport,
                self.dport,
                seq=self.seq(k),
                ack=self.irs,
                flags=flags,
                options=options,
                payload=bytes([k % 251]) * n,
                ip_version=self.ip_version,
                src_ip=self.data_ip,
                dst_ip=self.ack_ip,
                **kwargs,
            )
        )

    def ack(
        self,
        k: int,
        ts: tuple[int, int] | None = None,
        sack: list[tuple[int, int]] | None = None,
        window: int = 502,
        flags: str = "A",
        ecn: int = 0,
        raw_options: bytes | None = None,
    ) -> bytes:
        """A pure ACK of the first k segments; ``sack`` blocks are in segment numbers."""
        if ts is None:
            ts = (self.ts(500 + k), self.ts(k))
        options: list[tuple[str, Any]] = [("NOP", None), ("NOP", None), ("Timestamp", ts)]
        if sack:
            edges = tuple(self.seq(x) for block in sack for x in block)
            options += [("NOP", None), ("NOP", None), ("SAck", edges)]
        return bytes(
            tcp_segment(
                self.ack_port,
                self.data_port,
                self.dport,
                self.sport,
                seq=self.irs,
                ack=self.seq(k),
                flags=flags,
                window=window,
                options=options,
                raw_options=raw_options,  # when given, these bytes instead of ``options``
                ecn=ecn,
                ip_version=self.ip_version,
                src_ip=self.ack_ip,
                dst_ip=self.data_ip,
            )
        )


def udp_datagram(
    src_port_id: int = 1, dst_port_id: int = 2, payload: bytes = b"x" * 32, ip_version: int = 4
) -> Packet:
    pkt = (
        Ether(src=host_mac(src_port_id), dst=switch_mac(src_port_id))
        / ip_header(src_port_id, dst_port_id, ip_version)
        / UDP(sport=1234, dport=5678)
        / Raw(load=payload)
    )
    return Ether(bytes(pkt))


def routed(pkt: Packet | bytes, out_port: int) -> bytes:
    """What the switch should emit for ``pkt`` routed out of ``out_port``: new MACs, TTL - 1 and
    the IPv4 header checksum recomputed; every byte after the IPv4 header unchanged. For IPv6: new
    MACs and hop limit - 1, every other byte unchanged."""
    raw = bytearray(bytes(pkt))
    raw[0:6] = bytes.fromhex(host_mac(out_port).replace(":", ""))
    raw[6:12] = bytes.fromhex(switch_mac(out_port).replace(":", ""))
    if raw[12:14] == b"\x86\xdd":
        raw[14 + 7] -= 1  # hop limit
        return bytes(raw)
    ihl_bytes = (raw[14] & 0x0F) * 4
    raw[14 + 8] -= 1  # TTL
    raw[14 + 10 : 14 + 12] = b"\0\0"
    raw[14 + 10 : 14 + 12] = checksum(bytes(raw[14 : 14 + ihl_bytes])).to_bytes(2, "big")
    return bytes(raw)


class CpuAgentTest(BaseTest):
    """Mixed in before a switch test whose switch talks to one of ackwise's CPU-port agents
    (``python -m agent_module``) on run_ptf.py's agent veth: ``launch_agent`` starts it and awaits its
    "ready"; tearDown stops it (one stuck is killed: it must not outlive the test either way) and
    removes its stats file (``self.stats``), which lives in the run's state directory, which
    run_ptf.py removes however the run ends (a run stopped by SIGTERM kills ptf, and tearDown never
    runs: a file in /tmp stayed behind)."""

    agent_module = ""
    agent_name = ""  # what a failure to start calls it

    def setUp(self) -> None:
        self.agent: subprocess.Popen[str] | None = None
        state = state_dir()
        state.mkdir(parents=True, exist_ok=True)
        self.stats = Path(tempfile.mkstemp(prefix="agent-stats-", suffix=".json", dir=state)[1])
        super().setUp()

    def launch_agent(self, *args: str) -> None:
        cmd = [sys.executable, "-m", self.agent_module, "--iface", param("agent_iface")]
        cmd += ["--thrift-port", param("thrift_port", "9190"), "--stats", str(self.stats), *args]
        self.agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.agent.stdout is not None
        line = self.agent.stdout.readline().strip()
        if line != "ready":
            self.agent.kill()
            _, err = self.agent.communicate()
            self.fail(f"the {self.agent_name} did not start: {err.strip() or line}")
        time.sleep(0.15)  # its first heartbeat reached the switch

    def tearDown(self) -> None:
        try:
            if self.agent is not None:
                if self.agent.poll() is None:
                    self.agent.terminate()
                try:
                    self.agent.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    self.agent.kill()
                    self.agent.communicate()
                    raise
                finally:
                    self.agent = None
        finally:
            self.stats.unlink(missing_ok=True)
            self.stats.with_suffix(".tmp").unlink(missing_ok=True)
            super().tearDown()


class AckwiseTest(BaseTest):
    """Starts a switch running ``program`` for each test and stops it afterwards."""

    program = "ack_switch"
    cpu_port: int | None = None
    # The program handles IPv6 (defines ACKWISE_IPV6: every program but thinning_floor).
    ipv6 = True

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.switch: RunningSwitch | None = None
        self.client: SwitchClient | None = None
        build_dir = Path(param("build_dir"))
        ports = self.switch_ports()
        log_dir = param("log_dir", "")
        log_file = None
        if log_dir:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            log_file = os.path.join(log_dir, f"{type(self).__module__}.{type(self).__name__}.log")
            for old in Path(log_dir).glob(f"{Path(log_file).name}*.txt"):  # bmv2 appends .txt, rotates
                old.unlink()
        spec = SwitchSpec(
            program_json=str(build_dir / f"{self.program}.json"),
            ports=ports,
            thrift_port=int(param("thrift_port", "9190")),
            log_file=log_file,
            cpu_port=self.cpu_port,
        )
        self.switch = start_switch(spec)
        self.switch.save()  # lets run_ptf.py stop it should this process die before tearDown
        try:
            self.client = self.switch.client()
            self.install_entries()
            # Give bmv2 a moment to bring its ports up before the first packet.
            time.sleep(0.1)
            self.dataplane.flush()
        except BaseException:
            self.tearDown()
            raise

    def switch_ports(self) -> dict[int, str]:
        """The switch's ports: run_ptf.py's veths (override to add the agent's)."""
        return {int(p): iface for p, iface in (item.split("@") for item in param("switch_ifaces").split(","))}

    def tearDown(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.switch is not None:
            self.switch.stop()
            self.switch.forget()
            self.switch = None
        BaseTest.tearDown(self)

    # ---- entries ----

    def install_entries(self) -> None:
        """Routes to every host; override to add more."""
        self.install_routes()

    def install_routes(self) -> None:
        """A route to each host's IPv4 /24 and, where the program handles IPv6, its IPv6 /64."""
        assert self.client is not None
        for port in PORTS:
            routes = [(TABLE_FORWARDING_IPV4_LPM, host_prefix(port))]
            if self.ipv6:
                routes.append((TABLE_FORWARDING_IPV6_LPM, host_prefix(port, 6)))
            for table, prefix in routes:
                self.client.table_add(
                    table,
                    "route",
                    {"dst_addr": prefix},
                    {"port": port, "src_mac": switch_mac(port), "dst_mac": host_mac(port)},
                )

    # ---- helpers ----

    def send(self, port: int, pkt: Packet | bytes) -> None:
        tu.send_packet(self, port, bytes(pkt))

    def expect(self, pkt: Packet | bytes, port: int) -> None:
        tu.verify_packet(self, bytes(pkt), port)

    def expect_nothing_else(self, timeout: float = 0.3) -> None:
        tu.verify_no_other_packets(self, timeout=timeout)

    def next_packet(self, port: int, timeout: float = 2.0) -> bytes | None:
        """The next packet to arrive on ``port``, whatever it is (PTF's verify_packet would skip
        unexpected packets on the way to the expected one)."""
        result = self.dataplane.poll(port_number=port, timeout=timeout)
        if isinstance(result, self.dataplane.PollFailure):
            return None
        return bytes(result.packet)

    def expect_next(self, pkt: Packet | bytes, port: int, timeout: float = 2.0) -> None:
        got = self.next_packet(port, timeout)
        self.assertIsNotNone(got, f"nothing arrived on port {port}")
        self.assertEqual(got, bytes(pkt), f"port {port}: not the packet expected next")

    def collect(self, port: int, quiet_s: float = 0.3) -> list[bytes]:
        """Every packet arriving on ``port`` until it has been quiet for ``quiet_s``."""
        packets = []
        while (pkt := self.next_packet(port, quiet_s)) is not None:
            packets.append(pkt)
        return packets

    def counter(self, name: str, index: int) -> int:
        assert self.client is not None
        return self.client.counter_read(name, index).packets

    def register(self, name: str, index: int = 0) -> int:
        assert self.client is not None
        return self.client.register_read(name, index)
