// Coalescing pure ACKs at the egress queue (policy `coalesce`; `acc` uses it too). See
// docs/ack-thinning.md, "Coalescing at the queue".
//
// When a pure ACK of a half-flow arrives while an earlier ACK of the same half-flow still waits in
// the egress queue, ingress absorbs the new ACK (it never takes a queue slot) and records its
// cumulative state: ACK number, right window edge, window, timestamps, SACK blocks. When the waiting ACK reaches
// egress, it leaves carrying that newest state (TCP checksum recomputed). Nothing the receiver said
// is lost, and the queue carries about one ACK per flow at a time.
//
// Which ACKs may be absorbed, and which may be the waiting ACK others fold into, is decided by the
// caller from the safety contract (AckThinning). An ACK that is queued instead of absorbed (one
// with news the contract keeps, or one folding would misstate) ends the waiting ACK's intake, so a
// rewritten ACK never overtakes anything of its flow; the state the waiting ACK took in leaves
// inside it, or in the queued ACK when that one says all of it.
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
const bit<8> COALESCE_CLOSED = 0x04;    // ...and takes no more ACKs in: one of its flow is queued behind it
const bit<8> COALESCE_FOLDED = 0x08;    // ...and has taken ACKs in: it must leave with their state
const bit<8> COALESCE_SACK_MASK = 0x30; // ...and this many SACK blocks (0 to 3), in bits 5:4

// Per half-flow. state: deadline (low 32 bits of the us clock) | serial of the waiting ACK (16) |
// flags (8). newest_ack: ACK number | right window edge. newest_ts: TSval | TSecr. counts: absorbed
// (31 bits) | rewritten on departure (31 bits). newest_sack: the newest SACK blocks, left_0 |
// right_0 | left_1 | right_1 | left_2 | right_2 (as many as the flags say). state and counts, which
// the control plane reads, stay within 63 bits (Thrift saturates wider values); decoded by
// control-plane/ackwise/thinning.py.
@name(".coalesce.state") register<bit<56>>(HALF_FLOWS) coalesce_state;
@name(".coalesce.newest_ack") register<bit<64>>(HALF_FLOWS) coalesce_newest_ack;
@name(".coalesce.newest_ts") register<bit<64>>(HALF_FLOWS) coalesce_newest_ts;
@name(".coalesce.newest_window") register<bit<16>>(HALF_FLOWS) coalesce_newest_window;
@name(".coalesce.counts") register<bit<62>>(HALF_FLOWS) coalesce_counts;
@name(".coalesce.newest_sack") register<bit<192>>(HALF_FLOWS) coalesce_newest_sack;
// A second slot, for a waiting ACK that has taken ACKs in and is closed (an ACK of its flow that
// does not say all of its state is queued behind it): it keeps that state here until it leaves,
// and the first slot takes the next waiting ACK. Same layouts as the first slot.
@name(".coalesce.frozen_state") register<bit<56>>(HALF_FLOWS) coalesce_frozen_state;
@name(".coalesce.frozen_ack") register<bit<64>>(HALF_FLOWS) coalesce_frozen_ack;
@name(".coalesce.frozen_ts") register<bit<64>>(HALF_FLOWS) coalesce_frozen_ts;
@name(".coalesce.frozen_window") register<bit<16>>(HALF_FLOWS) coalesce_frozen_window;
@name(".coalesce.frozen_sack") register<bit<192>>(HALF_FLOWS) coalesce_frozen_sack;

// A block (left, right) of the waiting ACK's newest state is still said by an ACK that has these
// blocks and ACK number: it lies at or below the ACK number, or inside one of the ACK's blocks.
#define SACK_BLOCK_COVERED(l, r) (SEQ_LEQ(r, tcp.ack_no) \
    || (SEQ_LEQ(opts.sack_left_0, l) && SEQ_LEQ(r, opts.sack_right_0)) \
    || (opts.sack_blocks >= 2 && SEQ_LEQ(opts.sack_left_1, l) && SEQ_LEQ(r, opts.sack_right_1)) \
    || (opts.sack_blocks >= 3 && SEQ_LEQ(opts.sack_left_2, l) && SEQ_LEQ(r, opts.sack_right_2)))

// Ingress, for a pure ACK of a coalescing flow. `absorbable`: the contract lets it be folded into
// the waiting ACK. `eligible`: if it is queued, later ACKs may be folded into it. `serial` is
// non-zero when this ACK becomes the waiting ACK (egress needs it to recognise it).
//
// SACK: the waiting ACK leaves with the newest blocks as well, so an ACK with SACK blocks may be
// folded only into a waiting ACK with as many blocks (the option keeps its length), and only if
// its blocks and ACK number still say everything the waiting ACK's newest blocks say: nothing the
// receiver said is lost, and a block never ends up below the ACK number it leaves with (which the
// sender would read as DSACK). Whether an ACK with SACK may be folded at all is the caller's.
control AckCoalesce(in bit<32> half, in time_us_t now, in tcp_h tcp, in tcp_options_meta_t opts,
                    in bit<32> right_edge, in bool absorbable, in bool eligible, in queue_view_t queue,
                    out bool absorb, out bit<16> serial) {
    action decide() {
        bit<56> state;
        bit<64> newest_ack;
        bit<64> newest_ts;
        bit<16> newest_window;
        bit<62> counts;
        bit<192> newest_sack;
        bit<56> frozen_state;
        coalesce_state.read(state, half);
        coalesce_newest_ack.read(newest_ack, half);
        coalesce_newest_ts.read(newest_ts, half);
        coalesce_newest_window.read(newest_window, half);
        coalesce_counts.read(counts, half);
        coalesce_newest_sack.read(newest_sack, half);
        coalesce_frozen_state.read(frozen_state, half);

        bit<32> deadline = state[55:24];
        bit<16> waiting_serial = state[23:8];
        bit<8> flags = state[7:0];
        bool waiting = flags & COALESCE_WAITING != 0;
        bool expired = SEQ_GEQ((bit<32>)now, deadline);
        bool pending = waiting && !expired;
        bool folded = flags & COALESCE_FOLDED != 0;
        bool ts_matches = (flags & COALESCE_HAS_TS != 0) == opts.ts_present;
        bit<8> sack_count = (flags & COALESCE_SACK_MASK) >> 4;
        bool sack_covered = (sack_count < 1 || SACK_BLOCK_COVERED(newest_sack[191:160], newest_sack[159:128]))
            && (sack_count < 2 || SACK_BLOCK_COVERED(newest_sack[127:96], newest_sack[95:64]))
            && (sack_count < 3 || SACK_BLOCK_COVERED(newest_sack[63:32], newest_sack[31:0]));
        // Only ever forward: a newer ACK number, right edge and timestamps than the waiting ACK
        // will carry already.
        bool forward = SEQ_GEQ(tcp.ack_no, newest_ack[63:32]) && SEQ_GEQ(right_edge, newest_ack[31:0])
            && (!opts.ts_present || (SEQ_GEQ(opts.ts_val, newest_ts[63:32])
                                     && SEQ_GEQ(opts.ts_ecr, newest_ts[31:0])));
        // It says everything the waiting ACK will say, and more.
        bool supersedes = ts_matches && sack_covered && forward;
        absorb = absorbable && pending && flags & COALESCE_CLOSED == 0 && sack_count == opts.sack_blocks
            && supersedes;
        // Queued: it becomes the waiting ACK if it may be rewritten and the queue will keep it. The
        // state the waiting ACK took in then follows in this ACK, unless this ACK does not say all
        // of it (a SACK block the receiver no longer reports): then the waiting ACK keeps the state
        // and leaves with it, and takes nothing more in (a rewritten ACK never overtakes anything
        // of its flow). It keeps it in the second slot (frozen), if that is free, and this ACK
        // becomes the next waiting ACK; else in the first, and this ACK is queued as it is. With
        // one slot, a flow whose closed waiting ACK sat deep in a slow queue had every ACK queued
        // one by one until it left (seconds; docs/ack-thinning.md).
        bool frozen_busy = frozen_state[7:0] & COALESCE_WAITING != 0
            && !SEQ_GEQ((bit<32>)now, frozen_state[55:24]);
        bool conflict = pending && folded && !supersedes;
        bool may_start = !absorb && eligible && !queue.full;
        bool freeze = may_start && conflict && !frozen_busy;
        bool start = may_start && (!conflict || freeze);
        bool stays = !absorb && !start && pending && folded;
        bit<16> next_serial = waiting_serial + 1 == 0 ? 16w1 : waiting_serial + 1;
        serial = start ? next_serial : 0;

        bit<8> ts_flag = opts.ts_present ? COALESCE_HAS_TS : 8w0;
        bit<8> sack_flag = (opts.sack_blocks << 4) & COALESCE_SACK_MASK;
        bit<8> new_flags = absorb ? flags | COALESCE_FOLDED
            : (start ? COALESCE_WAITING | ts_flag | sack_flag : (stays ? flags | COALESCE_CLOSED : 8w0));
        bit<32> new_deadline = start ? (bit<32>)queue.departure_us + COALESCE_SLACK_US : deadline;
        bit<16> new_serial = start ? next_serial : waiting_serial;
        coalesce_state.write(half, new_deadline ++ new_serial ++ new_flags);
        bool record = absorb || start;
        coalesce_newest_ack.write(half, record ? tcp.ack_no ++ right_edge : newest_ack);
        coalesce_newest_ts.write(half, record ? opts.ts_val ++ opts.ts_ecr : newest_ts);
        coalesce_newest_window.write(half, record ? tcp.window : newest_window);
        coalesce_newest_sack.write(half, record ? opts.sack_left_0 ++ opts.sack_right_0 ++ opts.sack_left_1
            ++ opts.sack_right_1 ++ opts.sack_left_2 ++ opts.sack_right_2 : newest_sack);
        coalesce_counts.write(half, absorb ? counts + (1 << 31) : counts);
        // The waiting ACK that keeps its state moves to the second slot, closed.
        coalesce_frozen_state.write(half, freeze ? state[55:8] ++ (flags | COALESCE_CLOSED) : frozen_state);
        bit<64> frozen_ack;
        bit<64> frozen_ts;
        bit<16> frozen_window;
        bit<192> frozen_sack;
        coalesce_frozen_ack.read(frozen_ack, half);
        coalesce_frozen_ts.read(frozen_ts, half);
        coalesce_frozen_window.read(frozen_window, half);
        coalesce_frozen_sack.read(frozen_sack, half);
        coalesce_frozen_ack.write(half, freeze ? newest_ack : frozen_ack);
        coalesce_frozen_ts.write(half, freeze ? newest_ts : frozen_ts);
        coalesce_frozen_window.write(half, freeze ? newest_window : frozen_window);
        coalesce_frozen_sack.write(half, freeze ? newest_sack : frozen_sack);
    }

    apply {
        decide();
    }
}

// Egress, for an ACK that was queued as its half-flow's waiting ACK (serial != 0): if it still is,
// it ends the wait and `rewrite` says whether absorbed ACKs moved its state on.
control AckCoalesceDeparture(in bit<32> half, in bit<16> serial, in tcp_h tcp, in tcp_options_meta_t opts,
                             out bool rewrite, out bit<32> ack_no, out bit<16> window, out bit<32> ts_val,
                             out bit<32> ts_ecr, out bit<192> sack) {
    action depart() {
        bit<56> state;
        bit<64> newest_ack;
        bit<64> newest_ts;
        bit<16> newest_window;
        bit<62> counts;
        bit<192> newest_sack;
        bit<56> frozen_state;
        bit<64> frozen_ack;
        bit<64> frozen_ts;
        bit<16> frozen_window;
        bit<192> frozen_sack;
        coalesce_state.read(state, half);
        coalesce_newest_ack.read(newest_ack, half);
        coalesce_newest_ts.read(newest_ts, half);
        coalesce_newest_window.read(newest_window, half);
        coalesce_counts.read(counts, half);
        coalesce_newest_sack.read(newest_sack, half);
        coalesce_frozen_state.read(frozen_state, half);
        coalesce_frozen_ack.read(frozen_ack, half);
        coalesce_frozen_ts.read(frozen_ts, half);
        coalesce_frozen_window.read(frozen_window, half);
        coalesce_frozen_sack.read(frozen_sack, half);

        // The waiting ACK in the first slot, or the closed one in the second.
        bool mine_first = state[7:0] & COALESCE_WAITING != 0 && state[23:8] == serial;
        bool mine_frozen = !mine_first && frozen_state[7:0] & COALESCE_WAITING != 0 && frozen_state[23:8] == serial;
        bool mine = mine_first || mine_frozen;
        coalesce_state.write(half, mine_first ? state[55:8] ++ 8w0 : state);
        coalesce_frozen_state.write(half, mine_frozen ? frozen_state[55:8] ++ 8w0 : frozen_state);
        ack_no = mine_frozen ? frozen_ack[63:32] : newest_ack[63:32];
        window = mine_frozen ? frozen_window : newest_window;
        ts_val = mine_frozen ? frozen_ts[63:32] : newest_ts[63:32];
        ts_ecr = mine_frozen ? frozen_ts[31:0] : newest_ts[31:0];
        sack = mine_frozen ? frozen_sack : newest_sack;
        bit<192> own_sack = opts.sack_left_0 ++ opts.sack_right_0 ++ opts.sack_left_1 ++ opts.sack_right_1
            ++ opts.sack_left_2 ++ opts.sack_right_2;
        rewrite = mine && (ack_no != tcp.ack_no || window != tcp.window
            || (opts.ts_present && (ts_val != opts.ts_val || ts_ecr != opts.ts_ecr))
            || (opts.sack_blocks != 0 && sack != own_sack));
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

// Write the waiting ACK's newest SACK blocks (left_0 | right_0 | ... as in coalesce.newest_sack)
// into its one-step SACK option; its block count is the newest state's (AckCoalesce).
control SetSackBlocks(inout headers_t hdr, in bit<192> sack) {
    apply {
        if (hdr.tcp_nnsack1.isValid()) {
            hdr.tcp_nnsack1.left_0 = sack[191:160];
            hdr.tcp_nnsack1.right_0 = sack[159:128];
        } else if (hdr.tcp_nnsack2.isValid()) {
            hdr.tcp_nnsack2.left_0 = sack[191:160];
            hdr.tcp_nnsack2.right_0 = sack[159:128];
            hdr.tcp_nnsack2.left_1 = sack[127:96];
            hdr.tcp_nnsack2.right_1 = sack[95:64];
        } else if (hdr.tcp_nnsack3.isValid()) {
            hdr.tcp_nnsack3.left_0 = sack[191:160];
            hdr.tcp_nnsack3.right_0 = sack[159:128];
            hdr.tcp_nnsack3.left_1 = sack[127:96];
            hdr.tcp_nnsack3.right_1 = sack[95:64];
            hdr.tcp_nnsack3.left_2 = sack[63:32];
            hdr.tcp_nnsack3.right_2 = sack[31:0];
        }
    }
}

#endif
