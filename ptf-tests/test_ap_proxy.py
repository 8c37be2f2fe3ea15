"""The AP proxy (ap_proxy.p4): spoofed ACKs byte for byte, when not to spoof, what happens to the
station's own ACKs, packet-outs, window scale, timestamps and ECN, the agent's heartbeat, stalls,
and the repair agent's resend. Each test runs over IPv4 and, in its subclass named ...6, over IPv6
(the same segments; the sender's data with one flow label, the station's packets with another).

Port 1 is the wired uplink (the sender, host 1), port 2 the wireless side (the station, host 2),
port 3 the CPU port. Frames are switched on MAC addresses, as in the test bed."""

from __future__ import annotations

import time

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from ackwise.features.ap import StationParams, configure_ap, read_flows
from ackwise.twins.flowkey import FlowKey
from ackwise.twins.p4names import COUNTER_AP_STATS, TABLE_FORWARDING_L2_EXACT, ApMode, ApStat
from ackwise.twins.packets import fix_tcp_checksum
from base_test import (
    AckwiseTest,
    CpuAgentTest,
    host_ip,
    host_mac,
    host_prefix,
    param,
    tcp_segment,
)

UPLINK, STATION, CPU = 1, 2, 3
SERVER_PORT, STATION_PORT = 5001, 40000
S_ISN, A_ISN = 100_000, 900_000  # sender's and station's initial sequence numbers
MSS = 1448
WS = 7  # the station's window scale
SYNACK_WINDOW = 64000  # unscaled, as in every SYN-ACK
ACK_WINDOW = 500  # scaled by 2**7: 64000 bytes
# IPv6 flow labels: the sender's on its data and SYNs, the station's on its own packets.
SENDER_LABEL, STATION_LABEL = 0xABCDE, 0x12345


def labelled(frame: bytes, label: int) -> bytes:
    """An Ethernet/IPv6 frame with this flow label (not in the TCP checksum); IPv4 unchanged."""
    if frame[12:14] != b"\x86\xdd":
        return frame
    raw = bytearray(frame)
    first = int.from_bytes(raw[14:18], "big") & ~0xFFFFF | label
    raw[14:18] = first.to_bytes(4, "big")
    return bytes(raw)


def reply_ip(pkt: Packet, src: str, dst: str, label: int | None = None) -> Packet:
    """The IP header of an ACK the proxy makes from ``pkt`` (the data, or the station's ACK), from
    src to dst: IPv4 with the data's identification, flags and DSCP, TTL 64, not ECN-capable;
    IPv6 with its DSCP and flow label (``label`` if given), hop limit 64, not ECN-capable, no
    extension headers."""
    if IPv6 in pkt:
        ip6 = pkt[IPv6]
        return IPv6(src=src, dst=dst, hlim=64, tc=ip6.tc & 0xFC, fl=ip6.fl if label is None else label)
    ip = pkt[IP]
    return IP(src=src, dst=dst, ttl=64, id=ip.id, flags=ip.flags, tos=ip.tos & 0xFC)


class ApProxyTest(AckwiseTest):
    program = "ap_proxy"
    s_isn = S_ISN
    ip_version = 4
    cpu = CPU
    station_params = StationParams(
        budget_bytes=64 * 1024, fast_after_segments=2, stall_timeout_ms=10_000, holdoff_ms=0
    )

    def install_entries(self) -> None:
        assert self.client is not None
        for port in (UPLINK, STATION):
            self.client.table_add(
                TABLE_FORWARDING_L2_EXACT, "l2_forward", {"dst_addr": host_mac(port)}, {"port": port}
            )
        station = host_prefix(STATION, self.ip_version)  # 10.0.2.0/24 or fd00:0:0:2::/64
        configure_ap(self.client, [UPLINK], [STATION], self.cpu, [(station, self.station_params)])
        self.heartbeat()

    def segment(self, from_station: bool, label: int | None = None, **kwargs: object) -> bytes:
        """A TCP segment from the sender to the station or back, over the test's IP version (the
        sender's IPv6 packets with SENDER_LABEL, the station's with STATION_LABEL)."""
        src, dst = (STATION, UPLINK) if from_station else (UPLINK, STATION)
        ports = (STATION_PORT, SERVER_PORT) if from_station else (SERVER_PORT, STATION_PORT)
        frame = bytes(
            tcp_segment(src, dst, *ports, eth_dst=host_mac(dst), ip_version=self.ip_version, **kwargs)  # type: ignore[arg-type]
        )
        if label is None:
            label = STATION_LABEL if from_station else SENDER_LABEL
        return labelled(frame, label)

    def heartbeat(self) -> None:
        self.send(self.cpu, b"\xff" * 6 + bytes.fromhex("000000000301") + b"\x88\xb5" + bytes(46))

    # ---- the flow ----

    def data(
        self, k: int, flags: str = "A", ecn: int = 0, length: int = MSS, seq: int | None = None
    ) -> bytes:
        return self.segment(
            False,
            seq=self.s_isn + 1 + k * MSS if seq is None else seq,
            ack=A_ISN + 1,
            flags=flags,
            options=[("NOP", None), ("NOP", None), ("Timestamp", (7000 + k, 3000))],
            payload=bytes([k % 250]) * length,
            ecn=ecn,
            ip_id=k,
        )

    def station_ack(self, k: int, window: int = ACK_WINDOW, flags: str = "A", ts: int | None = None) -> bytes:
        return self.segment(
            True,
            seq=A_ISN + 1,
            ack=self.s_isn + 1 + k * MSS,
            flags=flags,
            window=window,
            options=[("NOP", None), ("NOP", None), ("Timestamp", (3100 + k if ts is None else ts, 7000 + k))],
        )

    def sender_syn(self, flags: str, ack: int = 0, ts_ecr: int = 0) -> bytes:
        """The sender's SYN (flags "S") or SYN-ACK ("SA"): window scale 7, TSval 6999."""
        return self.segment(
            False,
            seq=self.s_isn,
            ack=ack,
            flags=flags,
            options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (6999, ts_ecr)), ("WScale", 7)],
        )

    def station_syn(self, flags: str, ack: int = 0, ts_ecr: int = 0) -> bytes:
        """The station's SYN or SYN-ACK: window 64000 unscaled, window scale WS, TSval 3000."""
        return self.segment(
            True,
            seq=A_ISN,
            ack=ack,
            flags=flags,
            window=SYNACK_WINDOW,
            options=[
                ("MSS", 1460),
                ("SAckOK", b""),
                ("Timestamp", (3000, ts_ecr)),
                ("NOP", None),
                ("WScale", WS),
            ],
        )

    def handshake(self, agent: bool = True) -> None:
        """The sender opens the connection. With the agent there, it gets the SYN (to resend should
        the air lose it or the answer) and the station's SYN-ACK (the answer)."""
        syn = self.sender_syn("S")
        synack = self.station_syn("SA", ack=self.s_isn + 1, ts_ecr=6999)
        self.send(UPLINK, syn)
        self.expect_next(syn, STATION)
        if agent:
            self.expect_next(syn, CPU)
        self.send(STATION, synack)
        if agent:
            self.expect_next(synack, CPU)
        self.expect_next(synack, UPLINK)

    def open_fast_mode(self) -> tuple[int, int]:
        """Handshake, two segments through, the station's ACK of both (fast mode needs everything
        before the first spoofed segment acknowledged by the station: the agent only holds what
        was spoofed). Returns the station's right edge and TSval for the spoofed ACKs that follow."""
        self.handshake()
        self.pass_through(0)
        self.pass_through(1)
        self.station_ack_passes(self.station_ack(2))
        return self.s_isn + 1 + 2 * MSS + ACK_WINDOW * 2**WS, 3102

    def station_ack_passes(self, pkt: bytes) -> None:
        """A station ACK above the spoofed point goes to the sender unchanged, and to the agent,
        which holds copies from the handshake on and frees them by it."""
        self.send(STATION, pkt)
        self.expect_next(pkt, CPU)
        self.expect_next(pkt, UPLINK)

    def pass_through(self, k: int, copied: bool = True) -> None:
        """Data segment k goes to the station without a spoofed ACK; the agent gets a copy of it
        (in-order data from the handshake on, while the agent is there and nothing is missing)."""
        pkt = self.data(k)
        self.send(UPLINK, pkt)
        self.expect_next(pkt, STATION)
        if copied:
            self.expect_next(pkt, CPU)

    def spoofed(
        self, k: int, right_edge: int, station_ts: int, ece: bool = False, data: bytes | None = None
    ) -> bytes:
        """The ACK the proxy should send the sender for data segment k."""
        seg = Ether(data if data is not None else self.data(k))
        end = seg[TCP].seq + len(seg[TCP].payload)
        window = (right_edge - end) >> WS
        ack = (
            Ether(src=host_mac(STATION), dst=host_mac(UPLINK))
            / reply_ip(seg, host_ip(STATION, self.ip_version), host_ip(UPLINK, self.ip_version))
            / TCP(
                sport=STATION_PORT,
                dport=SERVER_PORT,
                seq=A_ISN + 1,
                ack=end,
                flags="AE" if ece else "A",
                window=window,
                options=[
                    ("NOP", None),
                    ("NOP", None),
                    ("Timestamp", (station_ts, dict(seg[TCP].options)["Timestamp"][0])),
                ],
            )
        )
        return bytes(ack)

    def expect_spoof(
        self, k: int, right_edge: int, station_ts: int, ece: bool = False, data: bytes | None = None
    ) -> None:
        pkt = data if data is not None else self.data(k)
        self.send(UPLINK, pkt)
        self.expect_next(pkt, STATION)
        self.expect_next(pkt, CPU)  # the agent's copy
        self.expect_next(self.spoofed(k, right_edge, station_ts, ece, data=pkt), UPLINK)

    def window_update(self, station_ack: bytes, ack: int, window: int) -> bytes:
        """The ACK the proxy makes from a consumed station ACK when the budget had closed the
        sender's window: the station's addresses, seq and timestamps, ack = the spoofed point."""
        pkt = Ether(station_ack)
        opts = dict(pkt[TCP].options)["Timestamp"]
        ip = pkt[IPv6] if IPv6 in pkt else pkt[IP]
        out = (
            Ether(src=pkt.src, dst=pkt.dst)
            / reply_ip(pkt, ip.src, ip.dst)
            / TCP(
                sport=pkt[TCP].sport,
                dport=pkt[TCP].dport,
                seq=pkt[TCP].seq,
                ack=ack,
                flags="A",
                window=window,
                options=[("NOP", None), ("NOP", None), ("Timestamp", opts)],
            )
        )
        return bytes(out)

    def stat(self, s: ApStat) -> int:
        return self.counter(COUNTER_AP_STATS, s)


SYNACK_EDGE = S_ISN + 1 + SYNACK_WINDOW  # the station's right edge from its SYN-ACK


class SpoofedAckTest(ApProxyTest):
    """After the handshake, two in-order segments and the station's ACK of them, each in-order segment
    goes to the station and
    the agent, and the sender gets an ACK on the station's behalf: addresses and ports swapped, the
    station's sequence number, ack = end of the segment, the station's right edge minus that,
    scaled, its last TSval with the data's TSval echoed, valid checksums."""

    def runTest(self) -> None:
        edge, ts = self.open_fast_mode()
        for k in (2, 3, 4):
            self.expect_spoof(k, edge, station_ts=ts)
        self.expect_nothing_else()
        raw = self.spoofed(4, edge, ts)
        self.assertEqual(len(raw), 66 if self.ip_version == 4 else 86)
        fixed = bytearray(raw)  # the TCP checksum recomputed from the bytes alone, not by scapy
        fix_tcp_checksum(fixed)
        self.assertEqual(bytes(fixed), raw)
        if self.ip_version == 4:
            check = IP(bytes(Ether(raw)[IP]))
            del check.chksum
            self.assertEqual(IP(bytes(check)).chksum, Ether(raw)[IP].chksum)
        self.assertEqual(self.stat(ApStat.SPOOFED), 3)
        assert self.client is not None
        (flow,) = read_flows(self.client)
        self.assertEqual((flow.mode, flow.spoofed_acks, flow.outstanding_bytes), ("fast", 3, 3 * MSS))
        key, _ = FlowKey.of(
            host_ip(UPLINK, self.ip_version), host_ip(STATION, self.ip_version), SERVER_PORT, STATION_PORT
        )
        self.assertEqual((flow.key, flow.slot), (key, key.slot))


class StationOpensTest(ApProxyTest):
    """The usual WLAN case: the station opens the connection (it downloads from the server). The
    station's SYN carries its window scale; its first ACK is the handshake's third packet, and from
    there the flow is proxied as when the sender opens. Regression: station_ack was taken only from
    a SYN-ACK, so with the station's SYN it kept whatever the slot held before (0 here), and with a
    sender ISN at or above 2**31 no ACK of the station's ever counted as progress: every segment
    stalled on the budget."""

    s_isn = 3_000_000_000

    def runTest(self) -> None:
        syn = self.station_syn("S")
        synack = self.sender_syn("SA", ack=A_ISN + 1, ts_ecr=3000)
        # The agent sees the whole handshake: it holds the sender's SYN-ACK until the station's
        # ACK answers it.
        self.send(STATION, syn)
        self.expect_next(syn, CPU)
        self.expect_next(syn, UPLINK)
        self.send(UPLINK, synack)
        self.expect_next(synack, STATION)
        self.expect_next(synack, CPU)
        third = self.station_ack(0)
        self.send(STATION, third)
        self.expect_next(third, CPU)
        self.expect_next(third, UPLINK)
        self.pass_through(0)
        self.pass_through(1)
        self.station_ack_passes(self.station_ack(2))
        edge = self.s_isn + 1 + 2 * MSS + ACK_WINDOW * 2**WS
        for k in (2, 3):
            self.expect_spoof(k, edge, station_ts=3102)
        self.expect_nothing_else()
        self.assertEqual((self.stat(ApStat.SPOOFED), self.stat(ApStat.BUDGET_STALLS)), (2, 0))


class NoSpoofTest(ApProxyTest):
    """No spoofed ACK for out-of-order data, FIN, RST, URG, a flow to a non-station, or past the
    budget (three segments here). The spoofed window stops at the budget too: the sender may not
    send beyond what the proxy would spoof."""

    station_params = StationParams(budget_bytes=3 * MSS, fast_after_segments=0, stall_timeout_ms=10_000)

    def runTest(self) -> None:
        self.handshake()
        self.expect_spoof(0, S_ISN + 1 + 3 * MSS, 3000)  # the budget, not the station's 64000 bytes
        gap = self.data(5)
        self.send(UPLINK, gap)  # out of order: neither spoofed nor copied
        self.expect_next(gap, STATION)
        urgent = self.data(1, flags="PAU")  # in order: copied, not spoofed
        self.send(UPLINK, urgent)
        self.expect_next(urgent, STATION)
        self.expect_next(urgent, CPU)
        self.station_ack_passes(self.station_ack(2))
        budget_edge = S_ISN + 1 + 5 * MSS  # station ACK + budget
        for k in (2, 3, 4):
            self.expect_spoof(k, budget_edge, 3102)
        self.pass_through(5)  # 4 segments unacknowledged by the station > the budget of 3: copied only
        self.assertEqual(self.stat(ApStat.BUDGET_STALLS), 1)
        other = bytes(
            tcp_segment(
                UPLINK,
                0,
                SERVER_PORT,
                STATION_PORT,
                seq=1,
                payload=b"x" * 100,
                eth_dst=host_mac(STATION),
                ip_version=self.ip_version,
            )
        )
        self.send(UPLINK, other)  # to 10.0.0.1 (fd00:0:0:0::1): not a station this AP serves
        self.expect_next(other, STATION)
        consumed = self.station_ack(5)
        self.send(STATION, consumed)
        self.expect_next(consumed, CPU)
        # The budget had closed the sender's window (it was told ack +5 MSS, window 0); the
        # station's progress reopens it up to ack + budget: the proxy says so.
        self.expect_next(self.window_update(consumed, S_ISN + 1 + 5 * MSS, (3 * MSS) >> WS), UPLINK)
        fin = self.data(6, flags="FA")  # in order: copied, not spoofed
        self.send(UPLINK, fin)
        self.expect_next(fin, STATION)
        self.expect_next(fin, CPU)
        rst = self.data(6, flags="RA")
        self.send(UPLINK, rst)
        self.expect_next(rst, STATION)
        self.expect_nothing_else()
        self.assertEqual(self.stat(ApStat.SPOOFED), 4)


class StationAckTest(ApProxyTest):
    """The station's ACKs at or below the spoofed point go to the agent, not the sender (counted
    as consumed, or as duplicates: a wireless loss); above it, and with SYN, FIN or RST, they pass."""

    def runTest(self) -> None:
        edge, ts = self.open_fast_mode()  # the station's ACK of 2 segments passed: nothing spoofed yet
        for k in (2, 3, 4):
            self.expect_spoof(k, edge, station_ts=ts)
        for pkt in (self.station_ack(3), self.station_ack(3, ts=3104), self.station_ack(5)):
            self.send(STATION, pkt)
            self.expect_next(pkt, CPU)
        self.station_ack_passes(self.station_ack(5, flags="FA"))
        self.expect_nothing_else()
        self.assertEqual((self.stat(ApStat.CONSUMED), self.stat(ApStat.DUP_TO_AGENT)), (2, 1))


class PacketOutTest(ApProxyTest):
    """A frame the agent sends on the CPU port reaches the station unchanged, counted as a repair."""

    def runTest(self) -> None:
        pkt = self.data(3)
        self.send(CPU, pkt)
        self.expect_next(pkt, STATION)
        self.expect_nothing_else()
        self.assertEqual(self.counter("ap.repairs", 0), 1)


class WindowTimestampEcnTest(ApProxyTest):
    """The spoofed window follows the station's latest scaled window; the TSval is the station's
    latest; CE on the data sets ECE on spoofed ACKs until the sender's CWR."""

    def runTest(self) -> None:
        self.handshake()
        self.pass_through(0)
        self.pass_through(1)
        self.station_ack_passes(self.station_ack(2, window=100, ts=4242))  # 12800 bytes, scaled by 2**7
        edge = S_ISN + 1 + 2 * MSS + 100 * 2**WS
        self.expect_spoof(2, edge, station_ts=4242)
        self.expect_spoof(3, edge, station_ts=4242, ece=True, data=self.data(3, ecn=3))
        self.expect_spoof(4, edge, station_ts=4242, ece=True)
        self.expect_spoof(5, edge, station_ts=4242, data=self.data(5, flags="AC"))  # CWR: ECE ends
        self.expect_nothing_else()


class ZeroWindowTest(ApProxyTest):
    """No spoofed ACK when the station's window is closed."""

    def runTest(self) -> None:
        self.handshake()
        self.pass_through(0)
        self.pass_through(1)
        self.station_ack_passes(self.station_ack(2, window=0))
        self.pass_through(2)
        self.expect_nothing_else()
        self.assertEqual(self.stat(ApStat.SPOOFED), 0)


class StationWindowReopensTest(ApProxyTest):
    """The station's window closes (its application stopped reading) just as the sender has been
    told everything up to it, so the sender sees window 0. When the application reads, the
    station's window update has the same ACK number and a larger window, and so has its answer to
    each of the sender's zero-window probes: both are at the spoofed point and consumed, so the
    proxy tells the sender the new edge itself, once. Regression: it made an update only from an
    ACK that advanced, and a WLAN transfer waited 600 s with its window closed."""

    def runTest(self) -> None:
        self.handshake()
        self.pass_through(0)
        self.pass_through(1)
        self.station_ack_passes(self.station_ack(2, window=23))  # 23 * 2**7 = 2944 bytes: 2 segments
        edge = S_ISN + 1 + 2 * MSS + 23 * 2**WS
        self.expect_spoof(2, edge, station_ts=3102)
        self.expect_spoof(3, edge, station_ts=3102)  # window (2944 - 2896) >> 7 = 0
        full = self.station_ack(4, window=0)  # everything read by the station, its buffer full
        self.send(STATION, full)
        self.expect_next(full, CPU)  # consumed; the edge did not move: nothing to tell
        reopened = self.station_ack(4, window=100, ts=3110)  # the application read: 12800 bytes
        self.send(STATION, reopened)
        self.expect_next(reopened, CPU)
        self.expect_next(self.window_update(reopened, S_ISN + 1 + 4 * MSS, 100), UPLINK)
        probe_answer = self.station_ack(4, window=100, ts=3111)  # the same edge: said already
        self.send(STATION, probe_answer)
        self.expect_next(probe_answer, CPU)
        self.expect_nothing_else()
        self.assertEqual(self.stat(ApStat.CONSUMED), 3)
        (flow,) = read_flows(self.client)
        self.assertEqual(flow.window_updates, 1)


class AgentGoneTest(ApProxyTest):
    """Without a heartbeat for half a second the proxy stops spoofing (fail-safe). When heartbeats
    come back, it resumes only once the station has acknowledged the segment that went by
    unspoofed meanwhile: the agent never held it, so no spoofed ACK may cover it."""

    def runTest(self) -> None:
        edge, ts = self.open_fast_mode()
        self.expect_spoof(2, edge, ts)
        time.sleep(0.6)
        self.pass_through(3, copied=False)  # the agent is gone: neither spoofed nor copied
        self.heartbeat()
        self.pass_through(4, copied=False)  # in order, but the agent never got segment 3
        self.station_ack_passes(self.station_ack(5))  # above the spoofed point (end of segment 2)
        self.expect_spoof(5, S_ISN + 1 + 5 * MSS + ACK_WINDOW * 2**WS, 3105)
        self.expect_nothing_else()


class StallTest(ApProxyTest):
    """When the station's ACK stops advancing with spoofed data outstanding longer than the stall
    timeout, the flow leaves fast mode (here for good): no more spoofing, no more copies."""

    station_params = StationParams(
        budget_bytes=64 * 1024, fast_after_segments=0, stall_timeout_ms=200, holdoff_ms=0
    )

    def runTest(self) -> None:
        self.handshake()
        self.expect_spoof(0, SYNACK_EDGE, 3000)
        time.sleep(0.3)
        self.heartbeat()
        self.pass_through(1, copied=False)
        self.expect_nothing_else()
        self.assertEqual(self.stat(ApStat.STALL_EXITS), 1)
        assert self.client is not None
        self.assertEqual(read_flows(self.client)[0].mode, ApMode.OFF.name.lower())


class NoAgentTest(ApProxyTest):
    """With no agent from the start, the AP is a plain forwarder for station flows: no copies, no
    spoofed ACKs, and the station's ACKs go to the sender only."""

    def runTest(self) -> None:
        time.sleep(0.6)  # the heartbeat from install_entries is stale
        self.handshake(agent=False)
        for k in range(4):
            self.pass_through(k, copied=False)
        ack = self.station_ack(4)
        self.send(STATION, ack)
        self.expect_next(ack, UPLINK)
        self.expect_nothing_else()
        self.assertEqual(self.stat(ApStat.SPOOFED), 0)
        assert self.client is not None
        self.assertEqual(read_flows(self.client)[0].mode, ApMode.PASS.name.lower())


class HighAddressesTest(ApProxyTest):
    """A flow between addresses from 128.0.0.0 up (a 192.168/16 WLAN, a 172.16/12 server) reads back
    with its own key. Regression: the slot's two addresses were one 64-bit register cell, which
    Thrift saturates at 2**63 - 1, so `ackwise ap flows` showed 127.255.255.255 for such flows.
    (Over IPv6: an address with its top bit set, read back from ap.key6_a/_b's 32-bit words.)"""

    station_net, station_ip, server_ip = "192.168.2.0/24", "192.168.2.7", "172.16.1.9"

    def install_entries(self) -> None:
        assert self.client is not None
        for port in (UPLINK, STATION):
            self.client.table_add(
                TABLE_FORWARDING_L2_EXACT, "l2_forward", {"dst_addr": host_mac(port)}, {"port": port}
            )
        configure_ap(self.client, [UPLINK], [STATION], CPU, [(self.station_net, self.station_params)])
        self.heartbeat()

    def runTest(self) -> None:
        ip = IPv6 if self.ip_version == 6 else IP
        syn = bytes(
            Ether(src=host_mac(STATION), dst=host_mac(UPLINK))
            / ip(src=self.station_ip, dst=self.server_ip)
            / TCP(sport=STATION_PORT, dport=SERVER_PORT, flags="S", seq=A_ISN, window=SYNACK_WINDOW)
        )
        self.send(STATION, syn)
        self.expect_next(syn, CPU)
        self.expect_next(syn, UPLINK)
        self.expect_nothing_else()
        assert self.client is not None
        (flow,) = read_flows(self.client)
        key, _ = FlowKey.of(self.station_ip, self.server_ip, STATION_PORT, SERVER_PORT)
        self.assertEqual((flow.key, flow.slot), (key, key.slot))
        if self.ip_version == 4:
            self.assertEqual(
                str(flow.key), f"{self.server_ip}:{SERVER_PORT} <> {self.station_ip}:{STATION_PORT}"
            )


class ExtensionHeaderSpoofTest6(ApProxyTest):
    """IPv6 data behind a Destination Options header (which the parser follows) is proxied like any
    other: the station and the agent get it unchanged, and the ACK spoofed for it has no extension
    header (as an IPv4 one has no options), its payload length and checksum its own."""

    ip_version = 6

    def runTest(self) -> None:
        edge, ts = self.open_fast_mode()
        plain = Ether(self.data(2))
        opts = IPv6ExtHdrDestOpt(options=[])  # 8 bytes: PadN
        pkt = bytes(
            Ether(src=plain.src, dst=plain.dst)
            / IPv6(src=plain[IPv6].src, dst=plain[IPv6].dst, hlim=64, fl=SENDER_LABEL)
            / opts
            / plain[TCP]
        )
        self.assertEqual(Ether(pkt)[IPv6].plen, len(bytes(plain[TCP])) + 8)
        self.expect_spoof(2, edge, ts, data=pkt)
        self.expect_nothing_else()
        self.assertEqual(len(self.spoofed(2, edge, ts, data=pkt)), 86)


class RoutingHeaderUntouchedTest6(ApProxyTest):
    """IPv6 data behind a Routing header is not proxied, whatever its segments left (the parser
    does not read them; with segments left, the final destination is another node's): it reaches
    the station unchanged, with no copy and no spoofed ACK, and leaves the flow's state as it was:
    the same segment without the header, after it, is spoofed (the positive control)."""

    ip_version = 6

    def runTest(self) -> None:
        edge, ts = self.open_fast_mode()
        plain = Ether(self.data(2))
        routed_pkt = bytes(
            Ether(src=plain.src, dst=plain.dst)
            / IPv6(src=plain[IPv6].src, dst=plain[IPv6].dst, hlim=64, fl=SENDER_LABEL)
            / IPv6ExtHdrRouting(type=4, segleft=0, addresses=[])
            / plain[TCP]
        )
        self.send(UPLINK, routed_pkt)
        self.expect_next(routed_pkt, STATION)
        self.expect_nothing_else()
        self.expect_spoof(2, edge, ts)
        self.expect_nothing_else()
        self.assertEqual(self.stat(ApStat.SPOOFED), 1)


class RepairAgentTest(CpuAgentTest, ApProxyTest):
    """The repair agent itself (ackwise.daemons.ap_agent) on the CPU port: it holds the copies of
    the spoofed segments, and when the station, which lost segment 3 on the air, acknowledges
    segment 2 and then sends three duplicates, it resends its copy of segment 3 through the switch:
    the station gets it again, byte for byte as the sender sent it (its timer may resend the
    segment at the station's ACK too: whatever the station gets is one of the sender's segments,
    unchanged). The spoofed ACKs are what the tests above check."""

    cpu = 64  # the agent's veth (run_ptf.py), not a PTF port
    agent_module = "ackwise.daemons.ap_agent"
    agent_name = "repair agent"

    def switch_ports(self) -> dict[int, str]:
        return super().switch_ports() | {self.cpu: param("agent_switch_iface")}

    def heartbeat(self) -> None:
        pass  # the agent's own

    def install_entries(self) -> None:
        super().install_entries()
        self.launch_agent()

    def wait_for(self, port: int, pkt: bytes, allowed: list[bytes]) -> None:
        """Read ``port`` until ``pkt`` comes, each packet before it one of ``allowed`` (the agent's
        timer may resend a held segment at any time: one of the sender's segments, unchanged)."""
        while (got := self.next_packet(port)) != pkt:
            self.assertIsNotNone(got, f"nothing more on port {port}")
            self.assertIn(got, allowed, f"port {port}: an unexpected packet")

    def runTest(self) -> None:
        data = [self.data(k) for k in range(5)]
        syn, synack = self.sender_syn("S"), self.station_syn("SA", ack=self.s_isn + 1, ts_ecr=6999)
        self.send(UPLINK, syn)
        self.wait_for(STATION, syn, [])
        self.send(STATION, synack)
        self.wait_for(UPLINK, synack, [])
        for k in (0, 1):
            self.send(UPLINK, data[k])
            self.wait_for(STATION, data[k], data)
        ack2 = self.station_ack(2)
        self.send(STATION, ack2)
        self.wait_for(UPLINK, ack2, [])
        edge = self.s_isn + 1 + 2 * MSS + ACK_WINDOW * 2**WS
        for k in (2, 3, 4):
            self.send(UPLINK, data[k])
            self.wait_for(STATION, data[k], data)
            self.wait_for(UPLINK, self.spoofed(k, edge, 3102), [])
        for n in range(4):  # segment 3 lost on the air: the station acknowledges 2, and again
            self.send(STATION, self.station_ack(3, ts=3103 + n))
        self.wait_for(STATION, data[3], data)  # the agent's copy, resent through the switch
        self.assertEqual(self.collect(UPLINK, 0.1), [])  # the station's ACKs were consumed
        self.assertGreaterEqual(self.counter("ap.repairs", 0), 1)


# ---- the same over IPv6 ----


class SpoofedAckTest6(SpoofedAckTest):
    ip_version = 6


class StationOpensTest6(StationOpensTest):
    ip_version = 6


class NoSpoofTest6(NoSpoofTest):
    ip_version = 6


class StationAckTest6(StationAckTest):
    ip_version = 6


class PacketOutTest6(PacketOutTest):
    ip_version = 6


class WindowTimestampEcnTest6(WindowTimestampEcnTest):
    ip_version = 6


class ZeroWindowTest6(ZeroWindowTest):
    ip_version = 6


class StationWindowReopensTest6(StationWindowReopensTest):
    ip_version = 6


class AgentGoneTest6(AgentGoneTest):
    ip_version = 6


class StallTest6(StallTest):
    ip_version = 6


class NoAgentTest6(NoAgentTest):
    ip_version = 6


class HighAddressesTest6(HighAddressesTest):
    ip_version = 6
    station_net, station_ip, server_ip = "2001:db8:ff02::/64", "2001:db8:ff02::7", "fdff:ffff::9"


class RepairAgentTest6(RepairAgentTest):
    ip_version = 6
