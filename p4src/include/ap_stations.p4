// The stations an AP proxy serves, by prefix, with their proxy parameters: IPv4 prefixes in
// ap.stations, IPv6 prefixes in ap.stations6 (the programs that define ACKWISE_IPV6). Flows to
// anything else are forwarded untouched. For a packet of a station served, the key of its flow
// (flow_key.p4), which ApProxyFlows keeps its state under.
#ifndef ACKWISE_AP_STATIONS_P4
#define ACKWISE_AP_STATIONS_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "flow_key.p4"

struct ap_station_params_t {
    bool served;
    bit<32> budget_bytes;       // spoofed - station-acknowledged never exceeds this
    bit<32> fast_after;         // in-order segments after the handshake before fast mode
    bit<48> stall_timeout_us;   // station ACK not advancing with data outstanding this long: leave
    bit<48> holdoff_us;         // then stay out of fast mode this long (0: for good)
}

#ifndef ACKWISE_IPV6
#error "the AP proxy handles IPv6: its program defines ACKWISE_IPV6 (headers.p4)"
#endif

// An IPv6 flow's addresses, lower endpoint's first (FLOW_ADDRS6), per slot: the program's own,
// read by IPv6 packets only; written (with the control plane's words, ap.key6_a and ap.key6_b)
// when an IPv6 flow takes a slot (ApProxyFlows).
@name(".ap.key6") register<bit<256>>(FLOW_SLOTS) ap_key6;

// `ext0`: the first IPv6 extension header the parser followed (if any).
control ApStationSelect(in ap_role_t role, in ipv4_h ipv4, in ipv6_h ipv6, in ipv6_ext_h ext0, in tcp_h tcp, out ap_station_params_t params,
                        inout ap_flow_key_t flow) {
    FlowKey() flow_key;
    ipv4_addr_t station_addr;
    bit<1> direction;  // IPv4's, within FlowKey (p4c substitutes it: no field)

    @name(".ap.serve")
    action serve(bit<32> budget_bytes, bit<32> fast_after_segments, bit<32> stall_timeout_ms,
                 bit<32> holdoff_ms) {
        params.served = true;
        params.budget_bytes = budget_bytes;
        params.fast_after = fast_after_segments;
        params.stall_timeout_us = (bit<48>)stall_timeout_ms * 1000;
        params.holdoff_us = (bit<48>)holdoff_ms * 1000;
    }

    @name(".ap.stations")
    table stations {
        key = { station_addr: lpm @name("station"); }
        actions = { serve; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AP_STATIONS_TABLE_SIZE;
    }

    @name(".ap.stations6")
    table stations6 {
        key = { (role == AP_ROLE_UPLINK ? ipv6.dst_addr : ipv6.src_addr): lpm @name("station"); }
        actions = { serve; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AP_STATIONS_TABLE_SIZE;
    }

    // An IPv6 flow's key (flow_key.p4's FLOW_DIRECTION6, FLOW_KEY6, FLOW_ADDRS6): the direction in
    // an action of its own (p4c would substitute its expression into every use), held in key_b
    // (0 once the key is known: a field fewer), then the slot, the slot's addresses and the tag.
    action orient6() {
        flow.key_b = (bit<32>)FLOW_DIRECTION6(ipv6, tcp);
    }

    action slot6() {
        flow.key_ports = FLOW_KEY_PORTS(tcp, flow.key_b);
        hash(flow.slot, HashAlgorithm.crc32, (bit<32>)0, { FLOW_KEY6(ipv6, tcp, flow.key_b) },
             (bit<32>)FLOW_SLOTS);
        ap_key6.read(flow.addrs6, flow.slot);
        flow.key_a = flow.addrs6 == FLOW_ADDRS6(ipv6, flow.key_b) ? FLOW_KEY_IPV6 : FLOW_KEY_IPV6_OTHER;
        flow.key_b = 0;
    }

    apply {
        params = { false, 0, 0, 0, 0 };
        station_addr = role == AP_ROLE_UPLINK ? ipv4.dst_addr : ipv4.src_addr;
        // One test of the version for both the station and the key; the key only for a station
        // served (the table's hit is its next step, not a condition).
        if (ipv6.isValid()) {
            // Not behind a Routing header (the first or second extension header followed): with
            // segments left, the final destination is another node's, the pseudo-header is the
            // final one's (docs/architecture.md), and the agent could not hold the copy. Its data
            // in the varbit is not read, so any Routing header: the packet passes untouched, as
            // for a station not served.
#if IPV6_EXT_HEADERS_MAX != 2
#error "ApStationSelect looks for a Routing header among 2 extension headers: update it with IPV6_EXT_HEADERS_MAX"
#endif
            if (ipv6.next_hdr != IPV6_EXT_ROUTING && !(ext0.isValid() && ext0.next_hdr == IPV6_EXT_ROUTING)) {
                if (stations6.apply().hit) {
                    orient6();
                    slot6();
                }
            }
        } else if (stations.apply().hit) {
            flow_key.apply(ipv4, tcp, flow.key_a, flow.key_b, flow.key_ports, flow.slot, direction);
        }
    }
}

#endif
