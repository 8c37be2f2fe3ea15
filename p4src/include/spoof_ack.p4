// Egress: turn the AP proxy's third copy of a data segment into the pure ACK it spoofs on the
// station's behalf (addresses and ports swapped), or a copy of the station's own ACK into the
// window update it sends the sender: the fields ApProxyFlows chose, NOP NOP Timestamps (when the
// flow uses them) instead of other options, no payload, valid checksums.
#ifndef ACKWISE_SPOOF_ACK_P4
#define ACKWISE_SPOOF_ACK_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

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
            ipv4_addr_t addr = hdr.ipv4.src_addr;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.ipv4.dst_addr = addr;
            bit<16> port = hdr.tcp.src_port;
            hdr.tcp.src_port = hdr.tcp.dst_port;
            hdr.tcp.dst_port = port;
        }
        hdr.ipv4.ihl = 5;
        hdr.ipv4_options.setInvalid();
        hdr.ipv4.ecn = 0;
        hdr.ipv4.ttl = 64;

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
        hdr.ipv4.total_len = 20 + meta.l4_len;
        meta.ipv4_rewritten = true;
        meta.tcp_rewritten_no_payload = true;
        truncate((bit<32>)(14 + 20) + (bit<32>)meta.l4_len);
    }
}

#endif
