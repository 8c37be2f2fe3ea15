// Egress: turn the AP proxy's third copy of a data segment into the pure ACK it spoofs on the
// station's behalf (addresses and ports swapped), or a copy of the station's own ACK into the
// window update it sends the sender: the fields ApProxyFlows chose, NOP NOP Timestamps (when the
// flow uses them) instead of other options, no payload, valid checksums.
#ifndef ACKWISE_SPOOF_ACK_P4
#define ACKWISE_SPOOF_ACK_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "checksums.p4"

#define INVALIDATE_OPTION(i) hdr.tcp_options[i].byte.setInvalid(); hdr.tcp_options[i].mss.setInvalid(); \
    hdr.tcp_options[i].ws.setInvalid(); hdr.tcp_options[i].sack_permitted.setInvalid(); \
    hdr.tcp_options[i].timestamps.setInvalid(); hdr.tcp_options[i].sack.setInvalid(); \
    hdr.tcp_options[i].other.setInvalid();

control SpoofAck(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        if (!meta.ap.window_update) {
            // Made from the sender's data: turn it round. (A window update is the station's own
            // ACK, already on its way to the sender.)
            hdr.ethernet.src_addr = meta.ap.receiver_mac;
            hdr.ethernet.dst_addr = meta.ap.sender_mac;
            bit<16> port = hdr.tcp.src_port;
            hdr.tcp.src_port = hdr.tcp.dst_port;
            hdr.tcp.dst_port = port;
            if (hdr.ipv6.isValid()) {
                // Through the flow key's addrs6, free in egress (a local would be a metadata field).
                meta.ap_flow.addrs6 = hdr.ipv6.src_addr ++ hdr.ipv6.dst_addr;
                hdr.ipv6.src_addr = meta.ap_flow.addrs6[127:0];
                hdr.ipv6.dst_addr = meta.ap_flow.addrs6[255:128];
            } else {
                ipv4_addr_t addr = hdr.ipv4.src_addr;
                hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                hdr.ipv4.dst_addr = addr;
            }
        }
        // IPv4: the data's DSCP, identification and flags; no options, not ECN-capable, TTL 64.
        // IPv6 likewise: the data's DSCP and flow label (the sender's label of this flow: the
        // station's own is not known), no extension headers, not ECN-capable, hop limit 64
        // (Linux's default for both). Writes to the IP header a packet does not have are not emitted.
        hdr.ipv4.ihl = 5;
        hdr.ipv4_options.setInvalid();
        hdr.ipv4.ecn = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv6.ecn = 0;
        hdr.ipv6.hop_limit = 64;
        hdr.ipv6.next_hdr = IP_PROTO_TCP;
        hdr.ipv6_ext[0].setInvalid();
        hdr.ipv6_ext[1].setInvalid();
#if IPV6_EXT_HEADERS_MAX != 2
#error "SpoofAck drops 2 IPv6 extension headers: update it with IPV6_EXT_HEADERS_MAX"
#endif

        hdr.tcp.seq_no = meta.ap.ack_seq;
        hdr.tcp.ack_no = meta.ap.ack_ack;
        hdr.tcp.reserved = 0;
        hdr.tcp.flags = meta.ap.ack_flags;
        hdr.tcp.window = meta.ap.ack_window;
        hdr.tcp.urgent_ptr = 0;

#if TCP_OPTIONS_MAX != 10
#error "SpoofAck invalidates 10 options: update it with TCP_OPTIONS_MAX"
#endif
        INVALIDATE_OPTION(0) INVALIDATE_OPTION(1) INVALIDATE_OPTION(2) INVALIDATE_OPTION(3)
        INVALIDATE_OPTION(4) INVALIDATE_OPTION(5) INVALIDATE_OPTION(6) INVALIDATE_OPTION(7)
        INVALIDATE_OPTION(8) INVALIDATE_OPTION(9)
        hdr.tcp_nnts.setInvalid();
        hdr.tcp_nnsack1.setInvalid();
        hdr.tcp_nnsack2.setInvalid();
        hdr.tcp_nnsack3.setInvalid();
        hdr.tcp_padding.setInvalid();
        if (meta.ap.ack_has_ts) {
            hdr.spoof_ts.setValid();
            hdr.spoof_ts = { TCP_OPT_NOP, TCP_OPT_NOP, TCP_OPT_TIMESTAMPS, 10, meta.ap.ack_ts_val,
                             meta.ap.ack_ts_ecr };
            hdr.tcp.data_offset = 8;
            meta.l4_len = 32;
        } else {
            hdr.tcp.data_offset = 5;
            meta.l4_len = 20;
        }
        meta.tcp_rewritten_no_payload = true;
        hdr.ipv4.total_len = 20 + meta.l4_len;
        meta.ipv4_rewritten = true;
        hdr.ipv6.payload_len = meta.l4_len;
        // One call (each call's length is a temporary, a metadata field every packet pays for).
        truncate((bit<32>)(hdr.ipv6.isValid() ? 16w14 + 40 : 16w14 + 20) + (bit<32>)meta.l4_len);
        if (hdr.ipv6.isValid()) {
            // The checksum's calculation (checksums.p4) leaves the invalid IPv4 header's addresses
            // out: IPv6's go into l4_len, as ones'-complement words (IPV6_PSEUDO_HEADER).
            meta.l4_len = IPV6_PSEUDO_HEADER(hdr.ipv6, meta.l4_len);
        }
    }
}

#endif
