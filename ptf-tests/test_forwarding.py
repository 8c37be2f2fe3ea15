"""IPv4 and IPv6 LPM routing, TTL and hop-limit handling, IPv4 checksums and options, L2 switching
and non-IP traffic. The routing tests run for IPv4 and, as their ...6 subclasses, for IPv6."""

from __future__ import annotations

from scapy.layers.inet import IP, IPOption_Router_Alert, IPOption_RR
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from ackwise.twins.p4names import (
    COUNTER_FORWARDING_DROPS,
    TABLE_FORWARDING_IPV4_LPM,
    TABLE_FORWARDING_IPV6_LPM,
    TABLE_FORWARDING_L2_EXACT,
    DropReason,
)
from base_test import (
    AckwiseTest,
    host_ip,
    host_mac,
    routed,
    switch_mac,
    tcp_segment,
    udp_datagram,
)


class RouteTest(AckwiseTest):
    """A routed segment leaves on the route's port with new MACs, TTL - 1 and a valid checksum
    (IPv6: hop limit - 1, nothing else changed)."""

    ip_version = 4

    def runTest(self) -> None:
        pkt = tcp_segment(1, 2, payload=b"data" * 100, flags="PA", ip_version=self.ip_version)
        self.send(1, pkt)
        out = routed(pkt, 2)
        self.expect(out, 2)
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_FORWARDING_DROPS, DropReason.NO_ENTRY), 0)
        # Independent check of the expected bytes: scapy recomputes the checksum from scratch.
        parsed = Ether(out)
        if self.ip_version == 6:
            self.assertEqual(parsed[IPv6].hlim, 63)
            self.assertEqual(bytes(parsed[IPv6])[8:], bytes(pkt[IPv6])[8:])
            return
        self.assertEqual(parsed[IP].ttl, 63)
        recomputed = IP(bytes(parsed[IP]))
        del recomputed.chksum
        self.assertEqual(IP(bytes(recomputed)).chksum, parsed[IP].chksum)


class RouteTest6(RouteTest):
    ip_version = 6


class LongestPrefixTest(AckwiseTest):
    """The longest matching prefix wins; a shorter covering route catches the rest."""

    ip_version = 4

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        self.client.table_add(
            TABLE_FORWARDING_IPV4_LPM if self.ip_version == 4 else TABLE_FORWARDING_IPV6_LPM,
            "route",
            {"dst_addr": "10.0.0.0/16" if self.ip_version == 4 else "fd00::/48"},
            {"port": 3, "src_mac": switch_mac(3), "dst_mac": "00:00:00:00:09:01"},
        )

    def runTest(self) -> None:
        to_host2 = tcp_segment(1, 2, ip_version=self.ip_version)
        self.send(1, to_host2)
        self.expect(routed(to_host2, 2), 2)
        far = tcp_segment(1, 9, ip_version=self.ip_version)
        self.send(1, far)
        out = bytearray(routed(far, 3))
        out[0:6] = bytes.fromhex("000000000901")
        self.expect(bytes(out), 3)
        self.expect_nothing_else()


class LongestPrefixTest6(LongestPrefixTest):
    ip_version = 6


class TtlExpiryTest(AckwiseTest):
    """TTL (IPv6: hop limit) 0 and 1 are dropped and counted; 2 leaves with 1."""

    ip_version = 4

    def runTest(self) -> None:
        for ttl in (0, 1):
            self.send(1, tcp_segment(1, 2, ttl=ttl, ip_version=self.ip_version))
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_FORWARDING_DROPS, DropReason.TTL_EXPIRED), 2)
        pkt = tcp_segment(1, 2, ttl=2, ip_version=self.ip_version)
        self.send(1, pkt)
        self.expect(routed(pkt, 2), 2)
        out = Ether(routed(pkt, 2))
        self.assertEqual(out[IP].ttl if self.ip_version == 4 else out[IPv6].hlim, 1)


class TtlExpiryTest6(TtlExpiryTest):
    ip_version = 6


class BadIpv4ChecksumTest(AckwiseTest):
    """A routed packet with a corrupt IPv4 header checksum is dropped, as RFC 1812 asks."""

    def runTest(self) -> None:
        raw = bytearray(bytes(tcp_segment(1, 2)))
        raw[24] ^= 0xFF
        self.send(1, bytes(raw))
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_FORWARDING_DROPS, DropReason.IPV4_CHECKSUM), 1)


class Ipv4OptionsTest(AckwiseTest):
    """IPv4 options are carried unchanged and covered by the recomputed header checksum."""

    def runTest(self) -> None:
        pkt = (
            Ether(src=host_mac(1), dst=switch_mac(1))
            / IP(
                src=host_ip(1),
                dst=host_ip(2),
                options=[IPOption_Router_Alert(), IPOption_RR(routers=["0.0.0.0"])],
            )
            / Raw(load=b"x" * 40)
        )
        pkt = Ether(bytes(pkt))
        self.assertGreater(pkt[IP].ihl, 5)
        self.send(1, pkt)
        self.expect(routed(pkt, 2), 2)
        self.expect_nothing_else()


class UdpRouteTest(AckwiseTest):
    """UDP is routed like anything else; its checksum does not cover the TTL and stays as is."""

    ip_version = 4

    def runTest(self) -> None:
        pkt = udp_datagram(1, 3, ip_version=self.ip_version)
        self.send(1, pkt)
        self.expect(routed(pkt, 3), 3)
        self.expect_nothing_else()


class UdpRouteTest6(UdpRouteTest):
    ip_version = 6


class L2SwitchTest(AckwiseTest):
    """IPv4 without a route is switched on its destination MAC, unmodified (no TTL change)."""

    def install_entries(self) -> None:
        assert self.client is not None
        self.client.table_add(TABLE_FORWARDING_L2_EXACT, "l2_forward", {"dst_addr": host_mac(2)}, {"port": 2})

    def runTest(self) -> None:
        pkt = tcp_segment(1, 2, eth_dst=host_mac(2), payload=b"abc")
        self.send(1, pkt)
        self.expect(bytes(pkt), 2)
        self.expect_nothing_else()


class NonIpv4Test(AckwiseTest):
    """Non-IP frames (ARP), and IPv6 without a route, are switched on their destination MAC and
    never modified; a frame without an L2 entry is dropped and counted."""

    def install_entries(self) -> None:
        self.install_routes()
        assert self.client is not None
        self.client.table_add(TABLE_FORWARDING_L2_EXACT, "l2_forward", {"dst_addr": host_mac(3)}, {"port": 3})

    def runTest(self) -> None:
        arp = Ether(src=host_mac(1), dst=host_mac(3)) / ARP(
            op=2, hwsrc=host_mac(1), psrc=host_ip(1), hwdst=host_mac(3), pdst=host_ip(3)
        )
        ipv6 = (
            Ether(src=host_mac(1), dst=host_mac(3))
            / IPv6(src="fd09::1", dst="fd09::3", hlim=5)  # no route: the hosts are fd00:0:0:N::/64
            / Raw(load=b"y" * 30)
        )
        for frame in (arp, ipv6):
            self.send(1, frame)
            self.expect(bytes(frame), 3)
        unknown = Ether(src=host_mac(1), dst="00:00:00:00:0a:0a") / ARP(
            op=1, psrc=host_ip(1), pdst="10.0.9.9"
        )
        self.send(1, unknown)
        self.expect_nothing_else()
        self.assertEqual(self.counter(COUNTER_FORWARDING_DROPS, DropReason.NO_ENTRY), 1)
