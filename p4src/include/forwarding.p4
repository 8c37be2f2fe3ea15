// IPv4 and IPv6 LPM routing with an L2 exact-match fallback. Entries come from the control plane.
//
// A packet whose IPv4 destination matches a route is routed: new MAC addresses, TTL decremented,
// dropped when it would leave with TTL 0 or arrived with a bad header checksum. An IPv6 packet
// whose destination matches an IPv6 route likewise, its hop limit for the TTL (IPv6 has no header
// checksum). Anything else, IP without a route or any other EtherType, is switched on its
// destination MAC; a miss drops.
#ifndef ACKWISE_FORWARDING_P4
#define ACKWISE_FORWARDING_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// IPv6 in the programs that define ACKWISE_IPV6 (headers.p4 says why not all): there the IPv6
// header is the third parameter; thinning_floor calls the IPv4 control as it was measured.
control Forwarding(inout ethernet_h ethernet, inout ipv4_h ipv4,
#ifdef ACKWISE_IPV6
                   inout ipv6_h ipv6,
#endif
                   in bool ipv4_checksum_ok,
                   inout port_t egress_port, out bool drop, out bool ipv4_rewritten) {
    @name(".forwarding.drops") counter(DROP_REASONS, CounterType.packets) drops;

    bool routed = false;

    @name(".forwarding.route")
    action route(port_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        egress_port = port;
        ethernet.src_addr = src_mac;
        ethernet.dst_addr = dst_mac;
        routed = true;
    }

    @name(".forwarding.l2_forward")
    action l2_forward(port_t port) {
        egress_port = port;
    }

    @name(".forwarding.ipv4_lpm")
    table ipv4_lpm {
        key = { ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { route; @defaultonly NoAction; }
        const default_action = NoAction();
        size = IPV4_LPM_TABLE_SIZE;
    }

#ifdef ACKWISE_IPV6
    @name(".forwarding.ipv6_lpm")
    table ipv6_lpm {
        key = { ipv6.dst_addr: lpm @name("dst_addr"); }
        actions = { route; @defaultonly NoAction; }
        const default_action = NoAction();
        size = IPV6_LPM_TABLE_SIZE;
    }
#endif

    @name(".forwarding.l2_exact")
    table l2_exact {
        key = { ethernet.dst_addr: exact @name("dst_addr"); }
        actions = { l2_forward; @defaultonly NoAction; }
        const default_action = NoAction();
        size = L2_EXACT_TABLE_SIZE;
    }

    apply {
        drop_reason_t reason = DROP_NONE;
        ipv4_rewritten = false;
        if (ipv4.isValid()) {
            ipv4_lpm.apply();
        }
        // IPv6 after IPv4's branch: a routed IPv4 packet evaluates nothing more than before it.
        if (routed) {
            if (!ipv4_checksum_ok) {
                reason = DROP_IPV4_CHECKSUM;
            } else if (ipv4.ttl <= 1) {
                reason = DROP_TTL_EXPIRED;
            } else {
                ipv4.ttl = ipv4.ttl - 1;
                ipv4_rewritten = true;
            }
        } else {
#ifdef ACKWISE_IPV6
            // A test of `routed`, not of the table's hit: that would be a temporary, a metadata
            // field every packet pays for.
            if (ipv6.isValid()) {
                // The ECN field where IPv4's is read (ack_switch's ECN marking, acc's CE signal):
                // the IPv4 header stays invalid, so this is not emitted. A write for IPv6 packets,
                // where a test of which header is valid at each use would be steps every packet
                // pays for.
                ipv4.ecn = ipv6.ecn;
                ipv6_lpm.apply();
            }
            if (routed) {
                if (ipv6.hop_limit <= 1) {
                    reason = DROP_TTL_EXPIRED;
                } else {
                    ipv6.hop_limit = ipv6.hop_limit - 1;
                }
            } else
#endif
            if (!l2_exact.apply().hit) {
                reason = DROP_NO_ENTRY;
            }
        }
        drop = reason != DROP_NONE;
        if (drop) {
            drops.count((bit<32>)reason);
        }
    }
}

#endif
