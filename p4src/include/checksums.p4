// IPv4 header checksum (verified on arrival, recomputed when the header changed) and the TCP
// checksum over pseudo-header, header, options and payload (recomputed when a program rewrote the
// segment; over IPv6's pseudo-header in programs that define ACKWISE_IPV6_TCP_REWRITE). Neither is
// touched on packets the program did not change.
#ifndef ACKWISE_CHECKSUMS_P4
#define ACKWISE_CHECKSUMS_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// bmv2 cannot take a header-union stack as a whole in a checksum, so the options are listed
// member by member; members that are not valid contribute nothing.
#define TCP_OPTION(i) hdr.tcp_options[i].byte, hdr.tcp_options[i].mss, hdr.tcp_options[i].ws, \
    hdr.tcp_options[i].sack_permitted, hdr.tcp_options[i].timestamps, hdr.tcp_options[i].sack, \
    hdr.tcp_options[i].other

// TCP over IPv6 through IPv4's calculations: bmv2 leaves the invalid IPv4 header's fields out of a
// checksum, so a control that rewrites a segment over IPv6 puts the ones'-complement sum of the
// IPv6 pseudo-header's addresses into `len` (the upper-layer length, l4_len), folded to 16 bits:
// IPV6_PSEUDO_HEADER(ipv6, len) is that value (RFC 8200 8.1: both addresses, the length, Next
// Header TCP's, the last taken as a constant by the calculation). An expression, twice folded
// (17 words of 16 bits sum to under 2^21), so that it needs no local (a metadata field).
#define WORDS8(a) ((bit<32>)a[127:112] + (bit<32>)a[111:96] + (bit<32>)a[95:80] + (bit<32>)a[79:64] \
    + (bit<32>)a[63:48] + (bit<32>)a[47:32] + (bit<32>)a[31:16] + (bit<32>)a[15:0])
#define IPV6_PSEUDO_SUM(ipv6, len) (WORDS8(ipv6.src_addr) + WORDS8(ipv6.dst_addr) + (bit<32>)(len))
#define FOLD16(s) ((bit<32>)(s)[15:0] + ((s) >> 16))
#define IPV6_PSEUDO_HEADER(ipv6, len) (FOLD16(FOLD16(IPV6_PSEUDO_SUM(ipv6, len))))[15:0]

control AckwiseVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl >= 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.data },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

#if TCP_OPTIONS_MAX != 10
#error "TCP_OPTIONS_IN_ORDER lists 10 options: update it with TCP_OPTIONS_MAX"
#endif
#define TCP_OPTIONS_IN_ORDER TCP_OPTION(0), TCP_OPTION(1), TCP_OPTION(2), TCP_OPTION(3), TCP_OPTION(4), \
    TCP_OPTION(5), TCP_OPTION(6), TCP_OPTION(7), TCP_OPTION(8), TCP_OPTION(9)

control AckwiseComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && meta.ipv4_rewritten,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.data },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.tcp.isValid() && meta.tcp_rewritten,
            { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, hdr.ipv4.protocol, meta.l4_len,
              hdr.tcp.src_port, hdr.tcp.dst_port, hdr.tcp.seq_no, hdr.tcp.ack_no,
              hdr.tcp.data_offset, hdr.tcp.reserved, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgent_ptr, hdr.tcp_nnts, hdr.tcp_nnsack1, hdr.tcp_nnsack2, hdr.tcp_nnsack3,
              TCP_OPTIONS_IN_ORDER, hdr.tcp_padding, hdr.spoof_ts },
            hdr.tcp.checksum, HashAlgorithm.csum16);
#ifdef ACKWISE_IPV6_TCP_REWRITE
        // TCP over IPv6 (RFC 8200 8.1): the pseudo-header is both addresses, the upper-layer
        // length (l4_len: the payload length less the extension headers, as a 32-bit word) and
        // Next Header TCP's (not the IPv6 header's, which may name an extension header). After
        // the IPv4 calculation, which with tcp_rewritten runs too and writes a word over the
        // invalid IPv4 header's fields: this one, last, is what leaves. Only in programs that
        // rewrite TCP over IPv6 (they define ACKWISE_IPV6_TCP_REWRITE): its condition is a step
        // every packet, IPv4 too, pays for (docs/performance.md, "Issue 40").
        update_checksum_with_payload(hdr.ipv6.isValid() && hdr.tcp.isValid() && meta.tcp_rewritten,
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, 16w0, meta.l4_len, 24w0, IP_PROTO_TCP,
              hdr.tcp.src_port, hdr.tcp.dst_port, hdr.tcp.seq_no, hdr.tcp.ack_no,
              hdr.tcp.data_offset, hdr.tcp.reserved, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgent_ptr, hdr.tcp_nnts, hdr.tcp_nnsack1, hdr.tcp_nnsack2, hdr.tcp_nnsack3,
              TCP_OPTIONS_IN_ORDER, hdr.tcp_padding, hdr.spoof_ts },
            hdr.tcp.checksum, HashAlgorithm.csum16);
#endif
        // Over IPv6 too (ack_switch's coalescing): bmv2 leaves out the fields of the invalid IPv4
        // header, and the rewriting control has folded IPv6's pseudo-header's addresses into
        // l4_len (ack_coalesce.p4, pseudo_header6); TCP's protocol number as a constant, so that
        // the words stay aligned without the IPv4 header (TCP is parsed behind protocol 6 only). A
        // calculation of its own would be a condition every packet pays for.
        update_checksum(hdr.tcp.isValid() && meta.tcp_rewritten_header_only,
            { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, IP_PROTO_TCP, meta.l4_len,
              hdr.tcp.src_port, hdr.tcp.dst_port, hdr.tcp.seq_no, hdr.tcp.ack_no,
              hdr.tcp.data_offset, hdr.tcp.reserved, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgent_ptr, hdr.tcp_nnts, hdr.tcp_nnsack1, hdr.tcp_nnsack2, hdr.tcp_nnsack3,
              TCP_OPTIONS_IN_ORDER, hdr.tcp_padding },
            hdr.tcp.checksum, HashAlgorithm.csum16);
        // A segment that leaves without its payload (truncate()): the checksum must not cover
        // the payload bmv2 still holds when it computes it. Over IPv6 too (the AP proxy's spoofed
        // ACK): as the header-only calculation, TCP's protocol number a constant and IPv6's
        // addresses in l4_len (IPV6_PSEUDO_HEADER).
        update_checksum(hdr.tcp.isValid() && meta.tcp_rewritten_no_payload,
            { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, IP_PROTO_TCP, meta.l4_len,
              hdr.tcp.src_port, hdr.tcp.dst_port, hdr.tcp.seq_no, hdr.tcp.ack_no,
              hdr.tcp.data_offset, hdr.tcp.reserved, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgent_ptr, hdr.spoof_ts },
            hdr.tcp.checksum, HashAlgorithm.csum16);
    }
}

#endif
