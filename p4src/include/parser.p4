// Parser and deparser shared by every ackwise program.
//
// The parser never rejects a packet. When a header is malformed it records why in
// meta.parser_meta.malformed_reason and accepts: whatever it has not extracted stays in the payload and
// is re-emitted unchanged, so a malformed segment leaves the switch exactly as it came in.
#ifndef ACKWISE_PARSER_P4
#define ACKWISE_PARSER_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

parser AckwiseParser(packet_in packet, out headers_t hdr, inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
#ifdef ACKWISE_IPV6
    // An IPv6 extension header's first 4 bytes, then its length in bits, then 1 if the payload
    // length ends inside the extension headers so far.
    bit<32> ext_word;
#endif
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
#ifdef ACKWISE_IPV6
            ETHERTYPE_IPV6: parse_ipv6;
#endif
            default: accept;
        }
    }

    state parse_ipv4 {
        // Until the whole header is read and found sound, the packet has a bad IPv4 header: one
        // that ends inside the header (fixed part or options) keeps this reason.
        meta.parser_meta.malformed_reason = MALFORMED_IPV4_HEADER;
        packet.extract(hdr.ipv4);
        meta.l4_len = hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2);
        // RFC 1812 5.2.2: version 4, and a total length that holds at least the header.
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.total_len) {
            (_, 0 .. 4, _): ipv4_ihl_short;
            (4, 5, 20 .. 0xffff): ipv4_header_read;
            (4, 6, 24 .. 0xffff): parse_ipv4_options;
            (4, 7, 28 .. 0xffff): parse_ipv4_options;
            (4, 8, 32 .. 0xffff): parse_ipv4_options;
            (4, 9, 36 .. 0xffff): parse_ipv4_options;
            (4, 10, 40 .. 0xffff): parse_ipv4_options;
            (4, 11, 44 .. 0xffff): parse_ipv4_options;
            (4, 12, 48 .. 0xffff): parse_ipv4_options;
            (4, 13, 52 .. 0xffff): parse_ipv4_options;
            (4, 14, 56 .. 0xffff): parse_ipv4_options;
            (4, 15, 60 .. 0xffff): parse_ipv4_options;
            default: accept;  // MALFORMED_IPV4_HEADER
        }
    }

    state ipv4_ihl_short {
        meta.parser_meta.malformed_reason = MALFORMED_IPV4_IHL;
        transition accept;
    }

    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) << 5);
        transition ipv4_header_read;
    }

    state ipv4_header_read {
        meta.parser_meta.malformed_reason = MALFORMED_NONE;
        transition parse_ipv4_payload;
    }

    state parse_ipv4_payload {
        // Only a first fragment carries the transport header. TCP is read only from a segment that
        // is not fragmented at all: the first fragment of one (more fragments set) holds only part
        // of it, and its total length says nothing of the payload in the others; taken for a pure
        // ACK, it was thinned, and the segment's data with it (found by the fuzzer).
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.flags[0:0], hdr.ipv4.protocol) {
            (0, 0, IP_PROTO_TCP): parse_tcp;
            (0, _, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    // ---- IPv6 (programs that define ACKWISE_IPV6; headers.p4 says why not all) ----
#ifdef ACKWISE_IPV6
    // The fixed header, then the extension headers it chains, one per pass.
    // An IPv4 packet pays nothing for these states (the EtherType's select has one case more), and
    // they add as few fields as they can: each temporary p4c makes is a metadata field that every
    // packet, IPv4 too, pays for (docs/performance.md). Hence one word for the extension header's
    // first bytes and then its length (ext_word), the depth in the state (one set of states per
    // extension header), and selects on fields.

    state parse_ipv6 {
        // As parse_ipv4: a header cut short, or of another version, keeps this reason.
        meta.parser_meta.malformed_reason = MALFORMED_IPV6_HEADER;
        packet.extract(hdr.ipv6);
        meta.l4_len = hdr.ipv6.payload_len;
        transition select(hdr.ipv6.version) {
            6: ipv6_header_read;
            default: accept;  // MALFORMED_IPV6_HEADER
        }
    }

    // What follows a header whose Next Header is `next`: an extension header followed (in the
    // states of the next depth, `ext`), one not followed (counted), or the upper layer.
#define IPV6_NEXT_HEADER(next, ext) select(next) { \
            IP_PROTO_TCP: parse_tcp; \
            IP_PROTO_UDP: parse_udp; \
            IPV6_EXT_HOP_BY_HOP: ext; \
            IPV6_EXT_ROUTING: ext; \
            IPV6_EXT_DEST_OPTIONS: ext; \
            IPV6_EXT_FRAGMENT: ipv6_ext_skipped; \
            IPV6_EXT_ESP: ipv6_ext_skipped; \
            IPV6_EXT_AH: ipv6_ext_skipped; \
            IPV6_EXT_MOBILITY: ipv6_ext_skipped; \
            IPV6_EXT_HIP: ipv6_ext_skipped; \
            IPV6_EXT_SHIM6: ipv6_ext_skipped; \
            IPV6_EXT_EXPERIMENTAL_1: ipv6_ext_skipped; \
            IPV6_EXT_EXPERIMENTAL_2: ipv6_ext_skipped; \
            default: accept; \
        }

    state ipv6_header_read {
        meta.parser_meta.malformed_reason = MALFORMED_NONE;
        transition IPV6_NEXT_HEADER(hdr.ipv6.next_hdr, parse_ipv6_ext_1)
    }

    // The k-th extension header: its first word (next header, length, two data bytes) looked at,
    // one longer than IPV6_EXT_LEN_MAX skipped, else extracted ((hdr_ext_len + 1) * 8 bytes) and
    // taken off l4_len (ext_word: whether that took it past the payload length); then the next
    // one, or the end of the chain.
#define IPV6_EXT_DEPTH(k, next_ext) \
    state parse_ipv6_ext_##k { \
        meta.parser_meta.malformed_reason = MALFORMED_IPV6_HEADER; \
        ext_word = packet.lookahead<bit<32>>(); \
        transition select(ext_word) { \
            0 &&& IPV6_EXT_LEN_ABOVE_MAX_MASK: extract_ipv6_ext_##k; \
            default: ipv6_ext_skipped; \
        } \
    } \
    state extract_ipv6_ext_##k { \
        ext_word = ((bit<32>)ext_word[23:16] << 6) + 48; \
        packet.extract(hdr.ipv6_ext.next, ext_word); \
        meta.l4_len = meta.l4_len - (((bit<16>)hdr.ipv6_ext.last.hdr_ext_len + 1) << 3); \
        ext_word = (bit<32>)(bit<1>)(meta.l4_len > hdr.ipv6.payload_len); \
        transition select(hdr.ipv6_ext.last.next_hdr) { \
            IPV6_EXT_HOP_BY_HOP: next_ext; \
            IPV6_EXT_ROUTING: next_ext; \
            IPV6_EXT_DEST_OPTIONS: next_ext; \
            default: ipv6_ext_end; \
        } \
    }

    IPV6_EXT_DEPTH(1, parse_ipv6_ext_2)
    IPV6_EXT_DEPTH(2, ipv6_ext_end)
#if IPV6_EXT_HEADERS_MAX != 2
#error "IPV6_EXT_DEPTH is applied 2 times: update it with IPV6_EXT_HEADERS_MAX"
#endif

    // The chain's end, checked once: a payload length that ends inside the extension headers made
    // l4_len wrap round, larger than the payload length (the headers followed are at most 2 * 256
    // bytes, so it cannot exceed it otherwise): MALFORMED_IPV6_HEADER. Then what follows the last
    // one; an extension header here is a fifth.
    // (The test is in ext_word, computed in the state before: a select on the comparison, or on
    // ext_word computed in this state, would be a temporary.)
    state ipv6_ext_end {
        transition select(ext_word) {
            0: ipv6_ext_read;
            default: accept;   // MALFORMED_IPV6_HEADER
        }
    }

    state ipv6_ext_read {
        meta.parser_meta.malformed_reason = MALFORMED_NONE;
        transition IPV6_NEXT_HEADER(hdr.ipv6_ext.last.next_hdr, ipv6_ext_skipped)
    }

    state ipv6_ext_skipped {
        meta.parser_meta.malformed_reason = MALFORMED_IPV6_EXT_SKIPPED;
        transition accept;
    }

#endif

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.tcp_payload_len = meta.l4_len - ((bit<16>)hdr.tcp.data_offset << 2);
        meta.parser_meta.opt_bytes_left = ((bit<8>)hdr.tcp.data_offset << 2) - 20;
        transition select(hdr.tcp.data_offset) {
            0 .. 4: tcp_data_offset_short;
            5: accept;
            8: check_tcp_nop_nop_ts;
            11: check_tcp_nop_nop_ts_sack;
            13: check_tcp_nop_nop_ts_sack;
            15: check_tcp_nop_nop_ts_sack;
            default: parse_tcp_options;
        }
    }

    // The common case in one step: 12 bytes of options that are NOP NOP Timestamps, as Linux
    // puts on its data segments and on its ACKs without SACK. Anything else walks the loop.
    state check_tcp_nop_nop_ts {
        transition select(packet.lookahead<bit<32>>()) {
            0x0101080A: parse_tcp_nop_nop_ts;
            default: parse_tcp_options;
        }
    }

    state parse_tcp_nop_nop_ts {
        packet.extract(hdr.tcp_nnts);
        meta.tcp_opts.ts_present = true;
        meta.tcp_opts.ts_val = hdr.tcp_nnts.ts_val;
        meta.tcp_opts.ts_ecr = hdr.tcp_nnts.ts_ecr;
        meta.tcp_opts.ts_index = 2;     // where the loop would have put it (after two NOPs)
        meta.parser_meta.opt_count = 3;
        meta.parser_meta.opt_bytes_left = 0;
        transition accept;
    }

    // A Linux ACK with SACK blocks, in one step: NOP NOP Timestamps NOP NOP SACK, the SACK option
    // filling the rest of the data offset (11, 13, 15: 1, 2, 3 blocks). The metadata is what the
    // loop would have produced; the blocks are headers, so coalescing can rewrite them.
    state check_tcp_nop_nop_ts_sack {
        transition select(hdr.tcp.data_offset, packet.lookahead<bit<128>>()) {
            (11, 0x0101080A_00000000_00000000_0101050A &&& 0xFFFFFFFF_00000000_00000000_FFFFFFFF):
                parse_tcp_nop_nop_ts_sack_1;
            (13, 0x0101080A_00000000_00000000_01010512 &&& 0xFFFFFFFF_00000000_00000000_FFFFFFFF):
                parse_tcp_nop_nop_ts_sack_2;
            (15, 0x0101080A_00000000_00000000_0101051A &&& 0xFFFFFFFF_00000000_00000000_FFFFFFFF):
                parse_tcp_nop_nop_ts_sack_3;
            default: parse_tcp_options;
        }
    }

    state parse_tcp_nop_nop_ts_sack {
        packet.extract(hdr.tcp_nnts);
        meta.tcp_opts.ts_present = true;
        meta.tcp_opts.ts_val = hdr.tcp_nnts.ts_val;
        meta.tcp_opts.ts_ecr = hdr.tcp_nnts.ts_ecr;
        meta.tcp_opts.ts_index = 2;
        meta.tcp_opts.sack_one_step = true;
        meta.parser_meta.opt_count = 6;     // NOP NOP Timestamps NOP NOP SACK
        meta.parser_meta.opt_bytes_left = 0;
        transition select(hdr.tcp.data_offset) {
            11: extract_tcp_nnsack_1;
            13: extract_tcp_nnsack_2;
            default: extract_tcp_nnsack_3;
        }
    }

    state parse_tcp_nop_nop_ts_sack_1 {
        transition parse_tcp_nop_nop_ts_sack;
    }

    state parse_tcp_nop_nop_ts_sack_2 {
        transition parse_tcp_nop_nop_ts_sack;
    }

    state parse_tcp_nop_nop_ts_sack_3 {
        transition parse_tcp_nop_nop_ts_sack;
    }

    state extract_tcp_nnsack_1 {
        packet.extract(hdr.tcp_nnsack1);
        meta.tcp_opts.sack_blocks = 1;
        meta.tcp_opts.sack_left_0 = hdr.tcp_nnsack1.left_0;
        meta.tcp_opts.sack_right_0 = hdr.tcp_nnsack1.right_0;
        transition accept;
    }

    state extract_tcp_nnsack_2 {
        packet.extract(hdr.tcp_nnsack2);
        meta.tcp_opts.sack_blocks = 2;
        meta.tcp_opts.sack_left_0 = hdr.tcp_nnsack2.left_0;
        meta.tcp_opts.sack_right_0 = hdr.tcp_nnsack2.right_0;
        meta.tcp_opts.sack_left_1 = hdr.tcp_nnsack2.left_1;
        meta.tcp_opts.sack_right_1 = hdr.tcp_nnsack2.right_1;
        transition accept;
    }

    state extract_tcp_nnsack_3 {
        packet.extract(hdr.tcp_nnsack3);
        meta.tcp_opts.sack_blocks = 3;
        meta.tcp_opts.sack_left_0 = hdr.tcp_nnsack3.left_0;
        meta.tcp_opts.sack_right_0 = hdr.tcp_nnsack3.right_0;
        meta.tcp_opts.sack_left_1 = hdr.tcp_nnsack3.left_1;
        meta.tcp_opts.sack_right_1 = hdr.tcp_nnsack3.right_1;
        meta.tcp_opts.sack_left_2 = hdr.tcp_nnsack3.left_2;
        meta.tcp_opts.sack_right_2 = hdr.tcp_nnsack3.right_2;
        transition accept;
    }

    state tcp_data_offset_short {
        meta.parser_meta.malformed_reason = MALFORMED_TCP_DATA_OFFSET;
        transition accept;
    }

    // ---- The option loop: one option per pass, until the data offset or the stack runs out ----

    state parse_tcp_options {
        transition select(meta.parser_meta.opt_bytes_left, meta.parser_meta.opt_count) {
            (0, _): accept;
            (_, TCP_OPTIONS_MAX): tcp_options_too_many;
            default: parse_tcp_option;
        }
    }

    state tcp_options_too_many {
        // The rest of the options stay in the payload, unparsed and unchanged.
        meta.tcp_opts.unknown_present = true;
        transition accept;
    }

    state parse_tcp_option {
        transition select(packet.lookahead<bit<8>>()) {
            TCP_OPT_EOL: parse_tcp_opt_eol;
            TCP_OPT_NOP: parse_tcp_opt_nop;
            default: parse_tcp_opt_length;
        }
    }

    state parse_tcp_opt_eol {
        packet.extract(hdr.tcp_options.next.byte);
        meta.parser_meta.opt_bytes_left = meta.parser_meta.opt_bytes_left - 1;
        transition select(meta.parser_meta.opt_bytes_left) {
            0: accept;
            default: parse_tcp_padding;
        }
    }

    state parse_tcp_padding {
        packet.extract(hdr.tcp_padding, (bit<32>)meta.parser_meta.opt_bytes_left << 3);
        transition accept;
    }

    state parse_tcp_opt_nop {
        packet.extract(hdr.tcp_options.next.byte);
        meta.parser_meta.opt_bytes_left = meta.parser_meta.opt_bytes_left - 1;
        meta.parser_meta.opt_count = meta.parser_meta.opt_count + 1;
        transition parse_tcp_options;
    }

    state parse_tcp_opt_length {
        // A kind byte in the last byte of the option space has no room for its length.
        transition select(meta.parser_meta.opt_bytes_left) {
            1: tcp_option_overrun;
            default: check_tcp_opt_length;
        }
    }

    state check_tcp_opt_length {
        meta.parser_meta.opt_len = packet.lookahead<tcp_opt_kind_len_h>().len;
        transition select(meta.parser_meta.opt_len) {
            0: tcp_option_length_short;
            1: tcp_option_length_short;
            default: check_tcp_opt_fits;
        }
    }

    state check_tcp_opt_fits {
        transition select(meta.parser_meta.opt_len > meta.parser_meta.opt_bytes_left) {
            true: tcp_option_overrun;
            false: parse_tcp_opt_by_kind;
        }
    }

    state tcp_option_length_short {
        meta.parser_meta.malformed_reason = MALFORMED_TCP_OPTION_LENGTH;
        transition accept;
    }

    state tcp_option_overrun {
        meta.parser_meta.malformed_reason = MALFORMED_TCP_OPTION_OVERRUN;
        transition accept;
    }

    state parse_tcp_opt_by_kind {
        transition select(packet.lookahead<bit<8>>(), meta.parser_meta.opt_len) {
            (TCP_OPT_MSS, 4): parse_tcp_opt_mss;
            (TCP_OPT_WS, 3): parse_tcp_opt_ws;
            (TCP_OPT_SACK_PERMITTED, 2): parse_tcp_opt_sack_permitted;
            (TCP_OPT_TIMESTAMPS, 10): parse_tcp_opt_timestamps;
            (TCP_OPT_SACK, 10): parse_tcp_opt_sack_1;
            (TCP_OPT_SACK, 18): parse_tcp_opt_sack_2;
            (TCP_OPT_SACK, 26): parse_tcp_opt_sack_3;
            (TCP_OPT_SACK, 34): parse_tcp_opt_sack_4;
            default: parse_tcp_opt_other;
        }
    }

    state parse_tcp_opt_mss {
        meta.tcp_opts.mss_present = true;
        meta.tcp_opts.mss = packet.lookahead<tcp_opt_mss_h>().mss;
        packet.extract(hdr.tcp_options.next.mss);
        transition tcp_option_done;
    }

    state parse_tcp_opt_ws {
        meta.tcp_opts.ws_present = true;
        meta.tcp_opts.ws_shift = packet.lookahead<tcp_opt_ws_h>().shift;
        packet.extract(hdr.tcp_options.next.ws);
        transition tcp_option_done;
    }

    state parse_tcp_opt_sack_permitted {
        meta.tcp_opts.sack_permitted = true;
        packet.extract(hdr.tcp_options.next.sack_permitted);
        transition tcp_option_done;
    }

    state parse_tcp_opt_timestamps {
        tcp_opt_timestamps_h ts = packet.lookahead<tcp_opt_timestamps_h>();
        meta.tcp_opts.ts_present = true;
        meta.tcp_opts.ts_val = ts.ts_val;
        meta.tcp_opts.ts_ecr = ts.ts_ecr;
        meta.tcp_opts.ts_index = meta.parser_meta.opt_count;
        packet.extract(hdr.tcp_options.next.timestamps);
        transition tcp_option_done;
    }

    state parse_tcp_opt_sack_1 {
        tcp_opt_sack_1_h s = packet.lookahead<tcp_opt_sack_1_h>();
        meta.tcp_opts.sack_blocks = 1;
        meta.tcp_opts.sack_left_0 = s.left_0;
        meta.tcp_opts.sack_right_0 = s.right_0;
        transition extract_tcp_opt_sack;
    }

    state parse_tcp_opt_sack_2 {
        tcp_opt_sack_2_h s = packet.lookahead<tcp_opt_sack_2_h>();
        meta.tcp_opts.sack_blocks = 2;
        meta.tcp_opts.sack_left_0 = s.left_0;
        meta.tcp_opts.sack_right_0 = s.right_0;
        meta.tcp_opts.sack_left_1 = s.left_1;
        meta.tcp_opts.sack_right_1 = s.right_1;
        transition extract_tcp_opt_sack;
    }

    state parse_tcp_opt_sack_3 {
        tcp_opt_sack_3_h s = packet.lookahead<tcp_opt_sack_3_h>();
        meta.tcp_opts.sack_blocks = 3;
        meta.tcp_opts.sack_left_0 = s.left_0;
        meta.tcp_opts.sack_right_0 = s.right_0;
        meta.tcp_opts.sack_left_1 = s.left_1;
        meta.tcp_opts.sack_right_1 = s.right_1;
        meta.tcp_opts.sack_left_2 = s.left_2;
        meta.tcp_opts.sack_right_2 = s.right_2;
        transition extract_tcp_opt_sack;
    }

    state parse_tcp_opt_sack_4 {
        tcp_opt_sack_4_h s = packet.lookahead<tcp_opt_sack_4_h>();
        meta.tcp_opts.sack_blocks = 4;
        meta.tcp_opts.sack_left_0 = s.left_0;
        meta.tcp_opts.sack_right_0 = s.right_0;
        meta.tcp_opts.sack_left_1 = s.left_1;
        meta.tcp_opts.sack_right_1 = s.right_1;
        meta.tcp_opts.sack_left_2 = s.left_2;
        meta.tcp_opts.sack_right_2 = s.right_2;
        meta.tcp_opts.sack_left_3 = s.left_3;
        meta.tcp_opts.sack_right_3 = s.right_3;
        transition extract_tcp_opt_sack;
    }

    state extract_tcp_opt_sack {
        packet.extract(hdr.tcp_options.next.sack, ((bit<32>)meta.parser_meta.opt_len - 2) << 3);
        transition tcp_option_done;
    }

    state parse_tcp_opt_other {
        meta.tcp_opts.unknown_present = true;
        packet.extract(hdr.tcp_options.next.other, ((bit<32>)meta.parser_meta.opt_len - 2) << 3);
        transition tcp_option_done;
    }

    state tcp_option_done {
        meta.parser_meta.opt_bytes_left = meta.parser_meta.opt_bytes_left - meta.parser_meta.opt_len;
        meta.parser_meta.opt_count = meta.parser_meta.opt_count + 1;
        transition parse_tcp_options;
    }
}

control AckwiseDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.holdback);     // valid only on a held ACK's copy to the hold-back agent
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
#ifdef ACKWISE_IPV6
        packet.emit(hdr.ipv6);
        packet.emit(hdr.ipv6_ext);
#endif
        packet.emit(hdr.tcp);
        packet.emit(hdr.tcp_nnts);
        packet.emit(hdr.tcp_nnsack1);
        packet.emit(hdr.tcp_nnsack2);
        packet.emit(hdr.tcp_nnsack3);
        packet.emit(hdr.tcp_options);
        packet.emit(hdr.tcp_padding);
        packet.emit(hdr.spoof_ts);
        packet.emit(hdr.udp);
    }
}

#endif
