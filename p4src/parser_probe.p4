// Test fixture: the shared parser, forwarding and checksums, plus registers that expose what the
// parser learnt from the last TCP segment, so that PTF tests can check the parsed option values.
// Not meant for deployment.
#include <core.p4>
#include <v1model.p4>

// IPv6 parsed and routed (headers.p4: the programs that define ACKWISE_IPV6).
#define ACKWISE_IPV6
// Its window rewrite covers TCP over IPv6: the TCP checksum over IPv6's pseudo-header (checksums.p4).
#define ACKWISE_IPV6_TCP_REWRITE
#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/parser_verdict.p4"
#include "include/forwarding.p4"
#include "include/checksums.p4"

// Cells of the probe.parsed register (ptf-tests/test_tcp_options.py reads them).
typedef bit<32> probe_cell_t;
const probe_cell_t PROBE_MSS_PRESENT = 0;
const probe_cell_t PROBE_MSS = 1;
const probe_cell_t PROBE_WS_PRESENT = 2;
const probe_cell_t PROBE_WS_SHIFT = 3;
const probe_cell_t PROBE_SACK_PERMITTED = 4;
const probe_cell_t PROBE_TS_PRESENT = 5;
const probe_cell_t PROBE_TS_VAL = 6;
const probe_cell_t PROBE_TS_ECR = 7;
const probe_cell_t PROBE_SACK_BLOCKS = 8;
const probe_cell_t PROBE_SACK_LEFT_0 = 9;    // left_i at 9 + 2i, right_i at 10 + 2i
const probe_cell_t PROBE_UNKNOWN_PRESENT = 17;
const probe_cell_t PROBE_MALFORMED_REASON = 18;
const probe_cell_t PROBE_PAYLOAD_LEN = 19;
const probe_cell_t PROBE_OPTION_COUNT = 20;
const probe_cell_t PROBE_SEGMENTS = 21;      // TCP segments probed so far
#define PROBE_CELLS 22

control ParserProbe(in tcp_options_meta_t opts, in parser_meta_t parser_meta, in bit<16> payload_len) {
    @name(".probe.parsed") register<bit<32>>(PROBE_CELLS) parsed;

    apply {
        parsed.write(PROBE_MSS_PRESENT, (bit<32>)(bit<1>)opts.mss_present);
        parsed.write(PROBE_MSS, (bit<32>)opts.mss);
        parsed.write(PROBE_WS_PRESENT, (bit<32>)(bit<1>)opts.ws_present);
        parsed.write(PROBE_WS_SHIFT, (bit<32>)opts.ws_shift);
        parsed.write(PROBE_SACK_PERMITTED, (bit<32>)(bit<1>)opts.sack_permitted);
        parsed.write(PROBE_TS_PRESENT, (bit<32>)(bit<1>)opts.ts_present);
        parsed.write(PROBE_TS_VAL, opts.ts_val);
        parsed.write(PROBE_TS_ECR, opts.ts_ecr);
        parsed.write(PROBE_SACK_BLOCKS, (bit<32>)opts.sack_blocks);
        parsed.write(PROBE_SACK_LEFT_0, opts.sack_left_0);
        parsed.write(PROBE_SACK_LEFT_0 + 1, opts.sack_right_0);
        parsed.write(PROBE_SACK_LEFT_0 + 2, opts.sack_left_1);
        parsed.write(PROBE_SACK_LEFT_0 + 3, opts.sack_right_1);
        parsed.write(PROBE_SACK_LEFT_0 + 4, opts.sack_left_2);
        parsed.write(PROBE_SACK_LEFT_0 + 5, opts.sack_right_2);
        parsed.write(PROBE_SACK_LEFT_0 + 6, opts.sack_left_3);
        parsed.write(PROBE_SACK_LEFT_0 + 7, opts.sack_right_3);
        parsed.write(PROBE_UNKNOWN_PRESENT, (bit<32>)(bit<1>)opts.unknown_present);
        parsed.write(PROBE_MALFORMED_REASON, (bit<32>)parser_meta.malformed_reason);
        parsed.write(PROBE_PAYLOAD_LEN, (bit<32>)payload_len);
        parsed.write(PROBE_OPTION_COUNT, (bit<32>)parser_meta.opt_count);
        bit<32> segments;
        parsed.read(segments, PROBE_SEGMENTS);
        parsed.write(PROBE_SEGMENTS, segments + 1);
    }
}

// When probe.rewrite_window[0] is non-zero, TCP segments leave with that window, so the tests can
// check the TCP checksum that checksums.p4 recomputes over options and payload.
control WindowRewrite(inout tcp_h tcp, out bool tcp_rewritten) {
    @name(".probe.rewrite_window") register<bit<32>>(1) rewrite_window;

    apply {
        bit<32> window;
        rewrite_window.read(window, 0);
        tcp_rewritten = window != 0;
        if (tcp_rewritten) {
            tcp.window = window[15:0];
        }
    }
}

control ProbeIngress(inout headers_t hdr, inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    ParserVerdict() parser_verdict;
    Forwarding() forwarding;
    ParserProbe() probe;
    WindowRewrite() window_rewrite;

    apply {
        bool malformed;
        bool drop_malformed;
        parser_verdict.apply(standard_metadata.parser_error, meta.parser_meta.malformed_reason,
                             malformed, drop_malformed);
        if (hdr.tcp.isValid()) {
            probe.apply(meta.tcp_opts, meta.parser_meta, meta.tcp_payload_len);
            if (!malformed) {
                window_rewrite.apply(hdr.tcp, meta.tcp_rewritten);
            }
        }
        bool drop_forwarding;
        forwarding.apply(hdr.ethernet, hdr.ipv4, hdr.ipv6, standard_metadata.checksum_error == 0,
                         standard_metadata.egress_spec, drop_forwarding, meta.ipv4_rewritten);
        if (drop_malformed || drop_forwarding) {
            mark_to_drop(standard_metadata);
        }
    }
}

control ProbeEgress(inout headers_t hdr, inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

V1Switch(AckwiseParser(), AckwiseVerifyChecksum(), ProbeIngress(), ProbeEgress(),
         AckwiseComputeChecksum(), AckwiseDeparser()) main;
