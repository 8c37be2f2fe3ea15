// A yardstick for `make bench`, not a program to deploy: the least a switch does to thin ACKs with
// every_d. The same parser, verdict, forwarding and checksums as forward_only and ack_switch; one
// policy lookup; per flow one record, found by a hash and read once and written once, in one
// action per segment. It keeps an ACK for the core of ack_switch's contract only: the first ACK of
// a record, SYN/FIN/RST/URG/PSH, a duplicate or a window update, a changed ECE/CWR, any SACK block or
// option the parser does not interpret, an ACK of all data the switch has seen, and d segments
// since the last ACK it forwarded. It has none of ack_switch's per-flow counters, RTT sample,
// idle and reclaim times, timestamp and SACK news checks, hold-back, filter, ACC or coalescing, and
// a flow whose hash lands on another flow's record takes the record over. docs/performance.md says
// what it measures.
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/parser_verdict.p4"
#include "include/forwarding.p4"
#include "include/checksums.p4"
#include "include/serial.p4"

// A record (per data direction): the flow's key, then its data and ACK state.
#define FLOOR_RECORD_BITS 224
#define FLOOR_KEY 223:128        // data sender's address, receiver's address, their ports
#define FLOOR_DATA_END 127:96    // the end of the highest data segment seen
#define FLOOR_ACK_LAST 95:64     // the highest ACK number seen
#define FLOOR_ACK_FWD 63:32      // the ACK number last forwarded
#define FLOOR_WINDOW 31:16       // the previous ACK's window
#define FLOOR_ECE_CWR 15:8       // the previous ACK's ECE and CWR bits
#define FLOOR_ACK_VALID 1:1      // the ACK fields are set
#define FLOOR_DATA_VALID 0:0     // data_end is set

control FloorIngress(inout headers_t hdr, inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    ParserVerdict() parser_verdict;
    Forwarding() forwarding;

    @name(".floor.record") register<bit<FLOOR_RECORD_BITS>>(FLOW_SLOTS) record_reg;
    // Named as ack_switch's, so that the bench reads the thinned count the same way.
    @name(".ack_thinning.stats") counter(THINNING_STATS, CounterType.packets) stats;

    bit<32> slot;
    bit<96> flow;
    bit<FLOOR_RECORD_BITS> record;
    bool drop_ack = false;
    bit<8> d = 0;
    bit<32> mss = 0;

    @name(".floor.every_d")
    action every_d(bit<8> d_segments, bit<32> mss_bytes) {
        d = d_segments;
        mss = mss_bytes;
    }

    @name(".floor.off")
    action off() {
        d = 0;
    }

    @name(".floor.policy")
    table policy {
        key = { hdr.ipv4.dst_addr: ternary @name("dst_addr"); }
        actions = { every_d; off; }
        const default_action = off();
        size = 64;
    }

    action data_segment() {
        flow = hdr.ipv4.src_addr ++ hdr.ipv4.dst_addr ++ hdr.tcp.src_port ++ hdr.tcp.dst_port;
        hash(slot, HashAlgorithm.crc32, (bit<32>)0, { flow }, (bit<32>)FLOW_SLOTS);
        record_reg.read(record, slot);
        bool ours = record[FLOOR_KEY] == flow;
        bit<32> end = hdr.tcp.seq_no + (bit<32>)meta.tcp_payload_len;
        bool known = ours && record[FLOOR_DATA_VALID] == 1;
        bit<32> data_end = !known || SEQ_GT(end, record[FLOOR_DATA_END]) ? end : record[FLOOR_DATA_END];
        record = flow ++ data_end ++ (ours ? record[95:1] : 95w0) ++ 1w1;
        record_reg.write(slot, record);
    }

    // The ACK's record is its data's: the key reversed.
    action pure_ack() {
        flow = hdr.ipv4.dst_addr ++ hdr.ipv4.src_addr ++ hdr.tcp.dst_port ++ hdr.tcp.src_port;
        hash(slot, HashAlgorithm.crc32, (bit<32>)0, { flow }, (bit<32>)FLOW_SLOTS);
        record_reg.read(record, slot);
        bool ours = record[FLOOR_KEY] == flow;
        bool valid = ours && record[FLOOR_ACK_VALID] == 1;
        bit<32> ack_no = hdr.tcp.ack_no;
        bit<8> ece_cwr = hdr.tcp.flags & (TCP_FLAG_ECE | TCP_FLAG_CWR);
        bool keep = !valid
            || hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST | TCP_FLAG_URG | TCP_FLAG_PSH) != 0
            || !SEQ_GT(ack_no, record[FLOOR_ACK_LAST])
            || hdr.tcp.window != record[FLOOR_WINDOW]
            || ece_cwr != record[FLOOR_ECE_CWR]
            || meta.tcp_opts.sack_blocks != 0
            || meta.tcp_opts.unknown_present
            || (record[FLOOR_DATA_VALID] == 1 && SEQ_GEQ(ack_no, record[FLOOR_DATA_END]))
            || ack_no - record[FLOOR_ACK_FWD] >= (bit<32>)d * mss;
        drop_ack = !keep;
        bit<32> ack_last = !valid || SEQ_GT(ack_no, record[FLOOR_ACK_LAST]) ? ack_no : record[FLOOR_ACK_LAST];
        bit<32> data_end = ours ? record[FLOOR_DATA_END] : 32w0;
        bit<1> data_valid = ours ? record[FLOOR_DATA_VALID] : 1w0;
        record = flow ++ data_end ++ ack_last ++ (keep ? ack_no : record[FLOOR_ACK_FWD])
            ++ hdr.tcp.window ++ ece_cwr ++ 6w0 ++ 1w1 ++ data_valid;
        record_reg.write(slot, record);
        stats.count(keep ? STAT_ACKS_PASSED : STAT_ACKS_THINNED);
    }

    apply {
        bool malformed;
        bool drop_malformed;
        parser_verdict.apply(standard_metadata.parser_error, meta.parser_meta.malformed_reason,
                             malformed, drop_malformed);
        bool drop_forwarding;
        forwarding.apply(hdr.ethernet, hdr.ipv4, standard_metadata.checksum_error == 0,
                         standard_metadata.egress_spec, drop_forwarding, meta.ipv4_rewritten);
        if (!malformed && !drop_forwarding && hdr.tcp.isValid()) {
            policy.apply();
            if (d != 0) {
                if (meta.tcp_payload_len != 0) {
                    data_segment();
                } else if (hdr.tcp.flags & TCP_FLAG_ACK != 0) {
                    pure_ack();
                }
            }
        }
        if (drop_malformed || drop_forwarding || drop_ack) {
            mark_to_drop(standard_metadata);
        }
    }
}

control FloorEgress(inout headers_t hdr, inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

V1Switch(AckwiseParser(), AckwiseVerifyChecksum(), FloorIngress(), FloorEgress(),
         AckwiseComputeChecksum(), AckwiseDeparser()) main;
