// Coalescing pure ACKs at the egress queue (policy `coalesce`; `acc` uses it too). See
// docs/ack-thinning.md, "Coalescing at the queue".
//
// When a pure ACK of a half-flow arrives while an earlier ACK of the same half-flow still waits in
// the egress queue, ingress absorbs the new ACK (it never takes a queue slot) and records its
// cumulative state: ACK number, right window edge, window, timestamps. When the waiting ACK reaches
// egress, it leaves carrying that newest state (TCP checksum recomputed). Nothing the receiver said
// is lost, and the queue carries about one ACK per flow at a time.
//
// Which ACKs may be absorbed, and which may be the waiting ACK others fold into, is decided by the
// caller from the safety contract (AckThinning). The waiting ACK is always the half-flow's newest
// queued ACK: an ACK that is queued but may not be rewritten (a duplicate ACK, SACK blocks, ...)
// ends the wait, so a rewritten ACK never overtakes anything of its flow.
//
// Ingress and egress run in different bmv2 threads. Each side's check and update is one action,
// and bmv2 runs an action's register accesses under the locks of the registers it uses, so an ACK
// is either absorbed before the waiting ACK leaves (and leaves inside it) or finds nothing waiting.
// The wait is bounded: a waiting ACK that has not left by its deadline (it was tail-dropped after
// all, or its queue stalled) no longer takes ACKs in.
#ifndef ACKWISE_ACK_COALESCE_P4
#define ACKWISE_ACK_COALESCE_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "serial.p4"

// Bits of the coalescing state's flags.
const bit<8> COALESCE_WAITING = 0x01;   // an ACK of this half-flow waits in the queue
const bit<8> COALESCE_HAS_TS = 0x02;    // ...and carries the Timestamps option

// Per half-flow. state: deadline (low 32 bits of the us clock) | serial of the waiting ACK (16) |
// flags (8). newest_ack: ACK number | right window edge. newest_ts: TSval | TSecr. counts: absorbed
// (31 bits) | rewritten on departure (31 bits). state and counts, which the control plane reads,
// stay within 63 bits (Thrift saturates wider values); decoded by control-plane/ackwise/thinning.py.
@name(".coalesce.state") register<bit<56>>(HALF_FLOWS) coalesce_state;
@name(".coalesce.newest_ack") register<bit<64>>(HALF_FLOWS) coalesce_newest_ack;
@name(".coalesce.newest_ts") register<bit<64>>(HALF_FLOWS) coalesce_newest_ts;
@name(".coalesce.newest_window") register<bit<16>>(HALF_FLOWS) coalesce_newest_window;
@name(".coalesce.counts") register<bit<62>>(HALF_FLOWS) coalesce_counts;

// Ingress, for a pure ACK of a coalescing flow. `absorbable`: the contract lets it be folded into
// the waiting ACK. `eligible`: if it is queued, later ACKs may be folded into it. `serial` is
// non-zero when this ACK becomes the waiting ACK (egress needs it to recognise it).
control AckCoalesce(in bit<32> half, in time_us_t now, in tcp_h tcp, in tcp_options_meta_t opts,
                    in bit<32> right_edge, in bool absorbable, in bool eligible, in queue_view_t queue,
                    out bool absorb, out bit<16> serial) {
    action decide() {
        bit<56> state;
        bit<64> newest_ack;
        bit<64> newest_ts;
        bit<16> newest_window;
        bit<62> counts;
        coalesce_state.read(state, half);
        coalesce_newest_ack.read(newest_ack, half);
        coalesce_newest_ts.read(newest_ts, half);
        coalesce_newest_window.read(newest_window, half);
        coalesce_counts.read(counts, half);

        bit<32> deadline = state[55:24];
        bit<16> waiting_serial = state[23:8];
        bit<8> flags = state[7:0];
        bool waiting = flags & COALESCE_WAITING != 0;
        bool expired = SEQ_GEQ((bit<32>)now, deadline);
        bool ts_matches = (flags & COALESCE_HAS_TS != 0) == opts.ts_present;
        // Only ever forward: a newer ACK number, right edge and timestamps than the waiting ACK
        // will carry already.
        bool forward = SEQ_GEQ(tcp.ack_no, newest_ack[63:32]) && SEQ_GEQ(right_edge, newest_ack[31:0])
            && (!opts.ts_present || (SEQ_GEQ(opts.ts_val, newest_ts[63:32])
                                     && SEQ_GEQ(opts.ts_ecr, newest_ts[31:0])));
        absorb = absorbable && waiting && !expired && ts_matches && forward;
        // Queued: it becomes the waiting ACK if it may be rewritten and the queue will keep it.
        bool start = !absorb && eligible && !queue.may_drop;
        bit<16> next_serial = waiting_serial + 1 == 0 ? 16w1 : waiting_serial + 1;
        serial = start ? next_serial : 0;

        bit<8> ts_flag = opts.ts_present ? COALESCE_HAS_TS : 8w0;
        bit<8> new_flags = absorb ? flags : (start ? COALESCE_WAITING | ts_flag : 8w0);
        bit<32> new_deadline = start ? (bit<32>)queue.departure_us + COALESCE_SLACK_US : deadline;
        bit<16> new_serial = start ? next_serial : waiting_serial;
        coalesce_state.write(half, new_deadline ++ new_serial ++ new_flags);
        bool record = absorb || start;
        coalesce_newest_ack.write(half, record ? tcp.ack_no ++ right_edge : newest_ack);
        coalesce_newest_ts.write(half, record ? opts.ts_val ++ opts.ts_ecr : newest_ts);
        coalesce_newest_window.write(half, record ? tcp.window : newest_window);
        coalesce_counts.write(half, absorb ? counts + (1 << 31) : counts);
    }

    apply {
        decide();
    }
}

// Egress, for an ACK that was queued as its half-flow's waiting ACK (serial != 0): if it still is,
// it ends the wait and `rewrite` says whether absorbed ACKs moved its state on.
control AckCoalesceDeparture(in bit<32> half, in bit<16> serial, in tcp_h tcp, in tcp_options_meta_t opts,
                             out bool rewrite, out bit<32> ack_no, out bit<16> window, out bit<32> ts_val,
                             out bit<32> ts_ecr) {
    action depart() {
        bit<56> state;
        bit<64> newest_ack;
        bit<64> newest_ts;
        bit<16> newest_window;
        bit<62> counts;
        coalesce_state.read(state, half);
        coalesce_newest_ack.read(newest_ack, half);
        coalesce_newest_ts.read(newest_ts, half);
        coalesce_newest_window.read(newest_window, half);
        coalesce_counts.read(counts, half);

        bool mine = state[7:0] & COALESCE_WAITING != 0 && state[23:8] == serial;
        coalesce_state.write(half, mine ? state[55:8] ++ 8w0 : state);
        ack_no = newest_ack[63:32];
        window = newest_window;
        ts_val = newest_ts[63:32];
        ts_ecr = newest_ts[31:0];
        rewrite = mine && (ack_no != tcp.ack_no || window != tcp.window
            || (opts.ts_present && (ts_val != opts.ts_val || ts_ecr != opts.ts_ecr)));
        coalesce_counts.write(half, rewrite ? counts + 1 : counts);
    }

    apply {
        depart();
    }
}

// Write the Timestamps option found at position `index` of the option stack.
#define SET_TIMESTAMPS_AT(i) \
    if (index == i) { \
        hdr.tcp_options[i].timestamps.ts_val = ts_val; \
        hdr.tcp_options[i].timestamps.ts_ecr = ts_ecr; \
    }

control SetTimestamps(inout headers_t hdr, in bit<8> index, in bit<32> ts_val, in bit<32> ts_ecr) {
    apply {
        if (hdr.tcp_nnts.isValid()) {   // the one-step NOP NOP Timestamps layout
            hdr.tcp_nnts.ts_val = ts_val;
            hdr.tcp_nnts.ts_ecr = ts_ecr;
            return;
        }
#if TCP_OPTIONS_MAX != 10
#error "SetTimestamps lists 10 option positions: update it with TCP_OPTIONS_MAX"
#endif
        SET_TIMESTAMPS_AT(0) SET_TIMESTAMPS_AT(1) SET_TIMESTAMPS_AT(2) SET_TIMESTAMPS_AT(3)
        SET_TIMESTAMPS_AT(4) SET_TIMESTAMPS_AT(5) SET_TIMESTAMPS_AT(6) SET_TIMESTAMPS_AT(7)
        SET_TIMESTAMPS_AT(8) SET_TIMESTAMPS_AT(9)
    }
}

#endif
