"""Whom the AP proxy (ap_proxy.p4) acts for: only flows between an uplink and a station whose
prefix is served, never traffic between two stations on the wireless side, never a station that
was removed. Each case checks every port: exactly the packets expected, byte for byte.

Ports: 1 the wired uplink (host 1, 10.0.1.1), 2 and 3 wireless (stations 10.0.2.1 and 10.0.3.1),
0 the agent's CPU port (port 0 cannot be a data port of the AP: multicast group ids use it). Each
test runs over IPv4 and, in its subclass named ...6, over IPv6 (fd00:0:0:N::1, the stations served
as /128s)."""

from __future__ import annotations

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ackwise.features.ap import StationParams, configure_ap, list_stations, read_flows, remove_station
from ackwise.twins.p4names import COUNTER_AP_STATS, TABLE_FORWARDING_L2_EXACT, ApStat
from base_test import AckwiseTest, host_ip, host_mac, tcp_segment

UPLINK, STA_A, STA_B, CPU = 1, 2, 3, 0
ALL_PORTS = (UPLINK, STA_A, STA_B, CPU)
MSS = 1448
PARAMS = StationParams(budget_bytes=64 * 1024, fast_after_segments=2, stall_timeout_ms=10_000, holdoff_ms=0)


class ApScopeTest(AckwiseTest):
    program = "ap_proxy"
    served = (STA_A, STA_B)  # the stations (host addresses) served
    ip_version = 4

    def install_entries(self) -> None:
        assert self.client is not None
        for port in (UPLINK, STA_A, STA_B):
            self.client.table_add(
                TABLE_FORWARDING_L2_EXACT, "l2_forward", {"dst_addr": host_mac(port)}, {"port": port}
            )
        configure_ap(
            self.client, [UPLINK], [STA_A, STA_B], CPU, [(self.address(p), PARAMS) for p in self.served]
        )
        self.heartbeat()

    def address(self, port: int) -> str:
        """Host ``port``'s address as a prefix of one address (/32, /128)."""
        return f"{host_ip(port, self.ip_version)}/{32 if self.ip_version == 4 else 128}"

    def other_host(self, port: int) -> str:
        """Another host behind the same port: 10.0.N.7, fd00:0:0:N::7."""
        return host_ip(port, self.ip_version)[:-1] + "7"

    def heartbeat(self) -> None:
        self.send(CPU, b"\xff" * 6 + bytes.fromhex("000000000001") + b"\x88\xb5" + bytes(46))

    def segment(
        self,
        src: int,
        dst: int,
        seq: int,
        ack: int,
        flags: str = "A",
        n: int = 0,
        dst_ip: str | None = None,
        sport: int = 5001,
        dport: int = 40000,
    ) -> bytes:
        pkt = tcp_segment(
            src,
            dst,
            sport,
            dport,
            seq=seq,
            ack=ack,
            flags=flags,
            window=2000,
            payload=bytes([seq % 251]) * n,
            eth_dst=host_mac(dst),
            ip_version=self.ip_version,
            dst_ip=dst_ip,  # another host behind the same port: same MACs, another address
        )
        return bytes(pkt)

    def through(self, src: int, dst: int, pkt: bytes) -> None:
        """``pkt`` sent on ``src`` leaves on ``dst`` unchanged, and on no other port. (A heartbeat
        first: the agent stays alive throughout, as it is when the proxy acts.)"""
        self.heartbeat()
        self.send(src, pkt)
        self.expect_next(pkt, dst)
        for port in ALL_PORTS:
            if port != dst:
                got = self.next_packet(port, timeout=0.05)
                self.assertIsNone(got, f"a packet on port {port} as well: {got!r}")

    def run_flow(self, station: int, dst_ip: str | None = None, segments: int = 6) -> None:
        """The uplink sender opens a connection to ``station`` and sends data the station ACKs
        after every second segment; each packet goes through exactly to its destination."""
        s_isn, a_isn = 1000, 9000
        self.through(UPLINK, station, self.segment(UPLINK, station, s_isn, 0, "S", dst_ip=dst_ip))
        synack = self.segment(station, UPLINK, a_isn, s_isn + 1, "SA", sport=40000, dport=5001)
        if dst_ip is not None:
            synack = self.segment(station, UPLINK, a_isn, s_isn + 1, "SA", sport=40000, dport=5001)
        self.through(station, UPLINK, synack if dst_ip is None else self._from(dst_ip, synack))
        for k in range(segments):
            seq = s_isn + 1 + k * MSS
            self.through(UPLINK, station, self.segment(UPLINK, station, seq, a_isn + 1, n=MSS, dst_ip=dst_ip))
            if k % 2:
                ack = self.segment(station, UPLINK, a_isn + 1, seq + MSS, sport=40000, dport=5001)
                self.through(station, UPLINK, ack if dst_ip is None else self._from(dst_ip, ack))

    @staticmethod
    def _from(src_ip: str, pkt: bytes) -> bytes:
        frame = Ether(pkt)
        ip = frame[IPv6] if IPv6 in frame else frame[IP]
        ip.src = src_ip
        if IP in frame:
            del frame[IP].chksum
        del ip.payload.chksum
        return bytes(frame)

    def spoofed(self) -> int:
        return self.counter(COUNTER_AP_STATS, ApStat.SPOOFED)


class ServedPrefixOnlyTest(ApScopeTest):
    """Only 10.0.2.1/32 is served. A flow to 10.0.2.7 (fd00:0:0:2::7), behind the same wireless
    port, is forwarded exactly as a plain switch would: no spoofed ACK, no copy to the agent, no
    state. The served station's flow, run the same way after it, is spoofed (the positive control)."""

    served = (STA_A,)

    def runTest(self) -> None:
        self.run_flow(STA_A, dst_ip=self.other_host(STA_A))
        self.assertEqual(self.spoofed(), 0)
        assert self.client is not None
        self.assertEqual(read_flows(self.client), [])
        # The served station: its SYN goes to the agent as well (the proxy acts for it).
        self.heartbeat()
        self.send(UPLINK, self.segment(UPLINK, STA_A, 1000, 0, "S"))
        self.expect_next(self.segment(UPLINK, STA_A, 1000, 0, "S"), STA_A)
        self.assertIsNotNone(self.next_packet(CPU), "the served station's SYN did not reach the agent")
        self.dataplane.flush()
        self.assertEqual(len(read_flows(self.client)), 1)


class StationToStationTest(ApScopeTest):
    """Both stations are served. A connection from station A to station B, entirely on the
    wireless side, is not the proxy's business: every packet reaches the other station unchanged,
    once, and nothing goes to the uplink or the agent; no ACK is spoofed or consumed. Regression:
    the proxy took station A's SYN and ACKs for packets towards a sender on the uplink and
    multicast them to group (0 << 8) | B's port, which does not exist: they were dropped, so two
    stations could not talk while the agent was alive."""

    def runTest(self) -> None:
        a_isn, b_isn = 5000, 7000
        self.through(STA_A, STA_B, self.segment(STA_A, STA_B, a_isn, 0, "S"))
        self.through(
            STA_B, STA_A, self.segment(STA_B, STA_A, b_isn, a_isn + 1, "SA", sport=40000, dport=5001)
        )
        self.through(STA_A, STA_B, self.segment(STA_A, STA_B, a_isn + 1, b_isn + 1))
        for k in range(6):
            seq = a_isn + 1 + k * MSS
            self.through(STA_A, STA_B, self.segment(STA_A, STA_B, seq, b_isn + 1, n=MSS))
            ack = self.segment(STA_B, STA_A, b_isn + 1, seq + MSS, sport=40000, dport=5001)
            self.through(STA_B, STA_A, ack)
        self.assertEqual(self.spoofed(), 0)
        self.assertEqual(self.counter(COUNTER_AP_STATS, ApStat.CONSUMED), 0)
        assert self.client is not None
        self.assertEqual(read_flows(self.client), [])


class RemovedStationTest(ApScopeTest):
    """A station served and in fast mode, then removed (``ackwise ap unserve``): from the next
    segment on nothing is spoofed and nothing copied, its ACKs go to the sender; a new connection
    to it is never proxied either."""

    served = (STA_A,)

    def runTest(self) -> None:
        s_isn, a_isn = 1000, 9000
        syn = self.segment(UPLINK, STA_A, s_isn, 0, "S")
        self.send(UPLINK, syn)
        self.expect_next(syn, STA_A)
        self.expect_next(syn, CPU)
        synack = self.segment(STA_A, UPLINK, a_isn, s_isn + 1, "SA", sport=40000, dport=5001)
        self.send(STA_A, synack)
        self.expect_next(synack, CPU)
        self.expect_next(synack, UPLINK)
        for k in (0, 1):  # two segments in pass mode, copied to the agent
            seg = self.segment(UPLINK, STA_A, s_isn + 1 + k * MSS, a_isn + 1, n=MSS)
            self.send(UPLINK, seg)
            self.expect_next(seg, STA_A)
            self.expect_next(seg, CPU)
        ack = self.segment(STA_A, UPLINK, a_isn + 1, s_isn + 1 + 2 * MSS, sport=40000, dport=5001)
        self.send(STA_A, ack)
        self.expect_next(ack, CPU)
        self.expect_next(ack, UPLINK)
        seg = self.segment(UPLINK, STA_A, s_isn + 1 + 2 * MSS, a_isn + 1, n=MSS)
        self.send(UPLINK, seg)
        self.expect_next(seg, STA_A)
        self.expect_next(seg, CPU)
        self.assertIsNotNone(self.next_packet(UPLINK), "no spoofed ACK while served (the control)")
        self.assertEqual(self.spoofed(), 1)

        assert self.client is not None
        (station,) = list_stations(self.client)
        self.assertEqual(remove_station(self.client, station["station"]), 1)
        self.heartbeat()
        for k in (3, 4, 5):
            self.through(UPLINK, STA_A, self.segment(UPLINK, STA_A, s_isn + 1 + k * MSS, a_isn + 1, n=MSS))
        # Its ACKs, even those at or below the spoofed point, go to the sender: nothing consumes them.
        for acked in (3, 6):
            self.through(
                STA_A,
                UPLINK,
                self.segment(STA_A, UPLINK, a_isn + 1, s_isn + 1 + acked * MSS, sport=40000, dport=5001),
            )
        self.assertEqual(self.spoofed(), 1)
        # A new connection to the removed station is a plain one.
        self.run_flow(STA_A)
        self.assertEqual(self.spoofed(), 1)


# ---- the same over IPv6 ----


class ServedPrefixOnlyTest6(ServedPrefixOnlyTest):
    ip_version = 6


class StationToStationTest6(StationToStationTest):
    ip_version = 6


class RemovedStationTest6(RemovedStationTest):
    ip_version = 6
