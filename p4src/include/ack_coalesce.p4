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
#include "checksums.p4"  // WORDS8

// Bits of the coalescing state's flags.
const bit<8> COALESCE_WAITING = 0x01;   // an ACK of this half-flow waits in the queue
const bit<8> COALESCE_HAS_TS = 0x02;    // ...and carries the Timestamps option
const bit<8> COALESCE_CLOSED = 0x04;    // ...and takes no more ACKs in: one of its flow is queued behind it
const bit<8> COALESCE_FOLDED = 0x08;    // ...and has taken ACKs in: it must leave with their state
const bit<8> COALESCE_SACK_MASK = 0x30; // ...and this many SACK blocks (0 to 3), in bits 5:4
const bit<8> COALESCE_SAID = 0x40;      // the slot's ACK has left with this state (until the deadline)

// A ring of COALESCE_SLOTS waiting-ACK slots per half-flow; cell = half << COALESCE_SLOT_BITS |
// slot, and an ACK's serial carries its slot in its low bits. One slot is open (takes ACKs in):
// the slot of the serial in coalesce.last_serial. A waiting ACK that must keep the state it took
// in while another ACK of its flow is queued behind it keeps its slot until it leaves, and the
// queued ACK becomes the waiting ACK of the next slot, if that one is free.
//
// Per cell. state: deadline (low 32 bits of the us clock; for a slot whose ACK has left, the end
// of COALESCE_SAID_US) | serial of the slot's ACK (16) | flags (8). newest_ack: ACK number | right
// window edge. newest_ts: TSval | TSecr. newest_sack: the newest SACK blocks, left_0 | right_0 |
// left_1 | right_1 | left_2 | right_2 (as many as the flags say). Per half-flow: last_serial, and
// counts: absorbed (31 bits) | rewritten on departure (31 bits), which the control plane reads
// (within 63 bits: Thrift saturates wider values; decoded by control-plane/ackwise/features/thinning.py).
#define COALESCE_CELLS (HALF_FLOWS << COALESCE_SLOT_BITS)
#define COALESCE_SLOT_OF(serial) ((bit<32>)((serial) & (bit<16>)(COALESCE_SLOTS - 1)))
@name(".coalesce.last_serial") register<bit<16>>(HALF_FLOWS) coalesce_last_serial;
@name(".coalesce.counts") register<bit<62>>(HALF_FLOWS) coalesce_counts;
@name(".coalesce.state") register<bit<56>>(COALESCE_CELLS) coalesce_state;
@name(".coalesce.newest_ack") register<bit<64>>(COALESCE_CELLS) coalesce_newest_ack;
@name(".coalesce.newest_ts") register<bit<64>>(COALESCE_CELLS) coalesce_newest_ts;
@name(".coalesce.newest_window") register<bit<16>>(COALESCE_CELLS) coalesce_newest_window;
@name(".coalesce.newest_sack") register<bit<192>>(COALESCE_CELLS) coalesce_newest_sack;

// A block (left, right) of the waiting ACK's newest state is still said by an ACK that has these
// blocks and ACK number: it lies at or below the ACK number, or inside one of the ACK's blocks.
#define SACK_BLOCK_COVERED(l, r) (SEQ_LEQ(r, tcp.ack_no) \
    || (SEQ_LEQ(opts.sack_left_0, l) && SEQ_LEQ(r, opts.sack_right_0)) \
    || (opts.sack_blocks >= 2 && SEQ_LEQ(opts.sack_left_1, l) && SEQ_LEQ(r, opts.sack_right_1)) \
    || (opts.sack_blocks >= 3 && SEQ_LEQ(opts.sack_left_2, l) && SEQ_LEQ(r, opts.sack_right_2)))
// ...or it lies inside a block of the ACK queued ahead of the waiting ACK (the previous slot's),
// which reaches the sender first.
#define SACK_BLOCK_SAID_AHEAD(l, r) ( \
    (w.ahead_count >= 1 && SEQ_LEQ(w.ahead_sack[191:160], l) && SEQ_LEQ(r, w.ahead_sack[159:128])) \
    || (w.ahead_count >= 2 && SEQ_LEQ(w.ahead_sack[127:96], l) && SEQ_LEQ(r, w.ahead_sack[95:64])) \
    || (w.ahead_count >= 3 && SEQ_LEQ(w.ahead_sack[63:32], l) && SEQ_LEQ(r, w.ahead_sack[31:0])))
#define SACK_BLOCK_KEPT(l, r) (SACK_BLOCK_COVERED(l, r) || SACK_BLOCK_SAID_AHEAD(l, r))

// Ingress, for a pure ACK of a coalescing flow, with w.foldable (the contract lets it be folded
// into the waiting ACK), w.eligible (if it is queued, later ACKs may be folded into it) and
// w.right_edge set by the caller in the working header (its fields, not parameters: an argument
// that is a field of a header also passed inout is copied into a temporary, a metadata field every
// packet pays for). `serial` is
// non-zero when this ACK becomes a waiting ACK (egress needs it to find its slot).
//
// SACK: the waiting ACK leaves with the newest blocks as well, so an ACK with SACK blocks may be
// folded only into a waiting ACK with as many blocks (the option keeps its length), and only if
// nothing the waiting ACK's newest blocks say is lost: each is said by this ACK (its ACK number or
// a block), or by the ACK queued just ahead of the waiting ACK, the previous slot's, which leaves
// (or has left) with its own newest blocks first. A receiver with more holes than blocks drops its
// oldest block with each new hole; the ACK ahead still says it, so two such ACKs fold into each
// waiting ACK before one drops a block only the waiting ACK said. A block never ends up below the
// ACK number it leaves with (which the sender would read as DSACK): the blocks that leave are
// those of one ACK the receiver sent. Whether an ACK with SACK may be folded at all is the caller's.
// Their working fields: coalesce_work_h, in ack_switch_work.p4 (ack_switch's metadata).

control AckCoalesce(in bit<32> half, in time_us_t now, in tcp_h tcp, in tcp_options_meta_t opts,
                    in queue_view_h queue,
                    out bool absorb, out bit<16> serial, inout coalesce_work_h w) {
    // What look() found, for decide(). Two actions, not one: within one action p4c substitutes
    // every local's expression into each use (LocalCopyPropagation), and the SACK and forward
    // checks went into every later decision and write: one action of 73 590 operators, which
    // bmv2 evaluated one by one (docs/performance.md). Across actions these are fields.
    // look() reads only what ingress alone writes (the serial, the slots' newest state) and the
    // slot ahead, whose departure does not change what it says; decide() reads the slots' state,
    // which egress changes when a waiting ACK leaves, and writes, in one action (see `Ingress and
    // egress` in docs/ack-thinning.md).

    // The ring's cells, in an action of their own: p4c substitutes a cell's expression into each
    // register index of the action that computes it, and gives each such index a temporary, a
    // metadata field every packet pays for (docs/performance.md).
    action slots() {
        w.setValid();   // valid already (the caller set w.foldable...): here, not a step of its own
        coalesce_last_serial.read(w.last_serial, half);
        bit<32> ring = half << COALESCE_SLOT_BITS;
        w.open = ring | COALESCE_SLOT_OF(w.last_serial);
        COPY_BARRIER(w);
        // Whether the open slot's ACK still waits, a peek for the test below (decide() reads the
        // state again, in one action with its writes: see `Ingress and egress` above). Egress only
        // ends a wait, so if this finds none, decide() finds none either.
        coalesce_state.read(w.state, w.open);
        w.pending = w.state[7:0] & COALESCE_WAITING != 0 && !SEQ_GEQ((bit<32>)now, w.state[55:24]);
        // `queue` is valid only for a port the program models (queue_model.p4).
        w.queue_full = queue.isValid() && queue.full;
        w.departure = (bit<32>)(queue.isValid() ? queue.departure_us : now);
        w.prev = ring | COALESCE_SLOT_OF(w.last_serial - 1);
        w.next = ring | COALESCE_SLOT_OF(w.last_serial + 1);
    }

    action look() {
        coalesce_state.read(w.state, w.open);
        coalesce_newest_ack.read(w.newest_ack, w.open);
        coalesce_newest_ts.read(w.newest_ts, w.open);
        coalesce_newest_window.read(w.newest_window, w.open);
        coalesce_newest_sack.read(w.newest_sack, w.open);
        coalesce_state.read(w.ahead_state, w.prev);
        coalesce_newest_ack.read(w.ahead_ack, w.prev);
        coalesce_newest_sack.read(w.ahead_sack, w.prev);

        // The open slot's timestamp and SACK flags: set by ingress when its ACK is queued, and what
        // matters only while it waits (decide() checks that it still does).
        bit<8> flags = w.state[7:0];
        bool ts_matches = (flags & COALESCE_HAS_TS != 0) == opts.ts_present;
        w.sack_count = (flags & COALESCE_SACK_MASK) >> 4;
        // The previous slot's ACK is queued ahead (its newest state is final: only the open slot
        // takes ACKs in) or has just left, and it is of this flow (not older than this ACK).
        bit<32> now32 = (bit<32>)now;
        bool ahead = w.ahead_state[7:0] & (COALESCE_WAITING | COALESCE_SAID) != 0
            && !SEQ_GEQ(now32, w.ahead_state[55:24]) && SEQ_LEQ(w.ahead_ack[63:32], tcp.ack_no);
        w.ahead_count = ahead ? (w.ahead_state[7:0] & COALESCE_SACK_MASK) >> 4 : 8w0;
        // Only ever forward: a newer ACK number, right edge and timestamps than the waiting ACK
        // will carry already.
        bool forward = SEQ_GEQ(tcp.ack_no, w.newest_ack[63:32]) && SEQ_GEQ(w.right_edge, w.newest_ack[31:0])
            && (!opts.ts_present || (SEQ_GEQ(opts.ts_val, w.newest_ts[63:32])
                                     && SEQ_GEQ(opts.ts_ecr, w.newest_ts[31:0])));
        // With the ACK ahead, it says everything the waiting ACK will say, and more (the SACK
        // blocks in look_sack()).
        w.supersedes = (bit<1>)(ts_matches && forward);
    }

    // ...and the waiting ACK's SACK blocks, when it has any (most ACKs have none): an action of
    // its own, skipped without them, since bmv2 evaluates every operator of an expression
    // (`&&` and `||` do not short-circuit), and the three SACK_BLOCK_KEPT are most of look's.
    action look_sack() {
        bool sack_kept = (w.sack_count < 1 || SACK_BLOCK_KEPT(w.newest_sack[191:160], w.newest_sack[159:128]))
            && (w.sack_count < 2 || SACK_BLOCK_KEPT(w.newest_sack[127:96], w.newest_sack[95:64]))
            && (w.sack_count < 3 || SACK_BLOCK_KEPT(w.newest_sack[63:32], w.newest_sack[31:0]));
        w.supersedes = sack_kept ? w.supersedes : 1w0;
    }

    // p4c's copy propagation put the waiting ACK's state tests into every decision and write of
    // the action (1 100 operators). decide() must stay one action (it reads and writes the slots'
    // state atomically with egress), so barriers stop the substitution inside it (COPY_BARRIER in
    // headers.p4).
    action decide() {
        coalesce_counts.read(w.counts, half);
        coalesce_state.read(w.state, w.open);
        coalesce_state.read(w.next_state, w.next);
        bit<32> now32 = (bit<32>)now;
        w.flags = w.state[7:0];
        w.pending = w.state[7:0] & COALESCE_WAITING != 0 && !SEQ_GEQ(now32, w.state[55:24]);
        w.next_free = w.next_state[7:0] & COALESCE_WAITING == 0 || SEQ_GEQ(now32, w.next_state[55:24]);
        COPY_BARRIER(w);
        w.absorb = w.foldable && w.pending && w.flags & COALESCE_CLOSED == 0
            && (w.flags & COALESCE_SACK_MASK) >> 4 == opts.sack_blocks && w.supersedes == 1;
        COPY_BARRIER(w);
        absorb = w.absorb;
        // Queued: it becomes a waiting ACK if it may be rewritten and the queue will keep it. It
        // takes the next slot if that one is free, and the open slot's ACK, no longer open, leaves
        // with the state it took in. Else it takes the open slot over, if that slot's ACK has taken
        // nothing in that this ACK (with the ACK ahead) does not say (that ACK then leaves as it
        // came, and the state it took in follows in this one). Else (the ring is full of closed
        // waiting ACKs) it is queued as it is, and the open slot's ACK takes nothing more in: a
        // rewritten ACK never overtakes anything of its flow. With one slot, a flow whose closed
        // waiting ACK sat deep in a slow queue had every ACK queued one by one until it left
        // (seconds; docs/ack-thinning.md).
        // (No locals across a barrier: one whose value uses the header would become a metadata
        // field.)
        bool conflict = w.pending && w.flags & COALESCE_FOLDED != 0 && w.supersedes == 0;
        w.start = !w.absorb && w.eligible && !w.queue_full && (w.next_free || !conflict);
        COPY_BARRIER(w);
        // It advances to the next slot when it starts a waiting ACK there; what is written goes to
        // that slot then, else to the open one.
        bit<16> serial_count = (w.last_serial >> COALESCE_SLOT_BITS) + 1;
        bit<16> count_nonzero = serial_count << COALESCE_SLOT_BITS == 0 ? 16w1 : serial_count;
        bit<16> slot = w.start && w.next_free ? w.last_serial + 1 : w.last_serial;
        w.new_serial = count_nonzero << COALESCE_SLOT_BITS
            | (slot & (bit<16>)(COALESCE_SLOTS - 1));
        w.cell = w.start && w.next_free ? w.next : w.open;
        COPY_BARRIER(w);
        serial = w.start ? w.new_serial : 0;
        // Each new value goes into the field it was read into, then is written (a write of an
        // expression gets a temporary: a metadata field).
        w.last_serial = w.start ? w.new_serial : w.last_serial;
        coalesce_last_serial.write(half, w.last_serial);

        bool stays = !w.absorb && !w.start && w.pending && w.flags & COALESCE_FOLDED != 0;
        bit<8> ts_flag = opts.ts_present ? COALESCE_HAS_TS : 8w0;
        bit<8> sack_flag = (opts.sack_blocks << 4) & COALESCE_SACK_MASK;
        // Exclusive cases (a new waiting ACK is not absorbed, one that stays neither), as a
        // disjunction: p4c lowers nested ?: into a chain of temporaries.
        bit<8> new_flags = (w.absorb ? w.flags | COALESCE_FOLDED : 8w0)
            | (w.start ? COALESCE_WAITING | ts_flag | sack_flag : 8w0)
            | (stays ? w.flags | COALESCE_CLOSED : 8w0);
        bit<32> new_deadline = w.start ? w.departure + COALESCE_SLACK_US : w.state[55:24];
        w.state = new_deadline ++ (w.start ? w.new_serial : w.state[23:8]) ++ new_flags;
        coalesce_state.write(w.cell, w.state);
        bool record = w.absorb || w.start;
        w.newest_ack = record ? tcp.ack_no ++ w.right_edge : w.newest_ack;
        w.newest_ts = record ? opts.ts_val ++ opts.ts_ecr : w.newest_ts;
        w.newest_window = record ? tcp.window : w.newest_window;
        w.newest_sack = record ? opts.sack_left_0 ++ opts.sack_right_0 ++ opts.sack_left_1
            ++ opts.sack_right_1 ++ opts.sack_left_2 ++ opts.sack_right_2 : w.newest_sack;
        w.counts = w.absorb ? w.counts + (1 << 31) : w.counts;
        coalesce_newest_ack.write(w.cell, w.newest_ack);
        coalesce_newest_ts.write(w.cell, w.newest_ts);
        coalesce_newest_window.write(w.cell, w.newest_window);
        coalesce_newest_sack.write(w.cell, w.newest_sack);
        coalesce_counts.write(half, w.counts);
    }

    // ...for an ACK that may be neither absorbed nor become a waiting ACK, while the open slot's
    // ACK waits: decide() writes the slot's newest state back as it was (it may close the waiting
    // ACK, which then leaves with that state), so it is read, but nothing else look() reads.
    action keep_newest() {
        coalesce_newest_ack.read(w.newest_ack, w.open);
        coalesce_newest_ts.read(w.newest_ts, w.open);
        coalesce_newest_window.read(w.newest_window, w.open);
        coalesce_newest_sack.read(w.newest_sack, w.open);
    }

    // look() only while the open slot's ACK waits: without one, decide() absorbs nothing, finds
    // no conflict and writes no state but for that slot's flags (cleared) or a new waiting ACK's,
    // and look's eight register reads are skipped (supersedes, sack_count and the newest state
    // are then not read). Of what look() finds, an ACK that may be neither absorbed (foldable)
    // nor become a waiting ACK (eligible) needs only the newest state (keep_newest()).
    apply {
        slots();
        if (w.pending) {
            if (w.foldable || w.eligible) {
                look();
                if (w.sack_count != 0) {
                    look_sack();
                }
            } else {
                keep_newest();
            }
        }
        decide();
    }
}

// Write the Timestamps option found at position `index` of the option stack.
#define SET_TIMESTAMPS_AT(i) \
    if (index == i) { \
        hdr.tcp_options[i].timestamps.ts_val = ts[63:32]; \
        hdr.tcp_options[i].timestamps.ts_ecr = ts[31:0]; \
    }

// ts: TSval [63:32] | TSecr [31:0].
control SetTimestamps(inout headers_t hdr, in bit<8> index, in bit<64> ts) {
    apply {
        if (hdr.tcp_nnts.isValid()) {   // the one-step NOP NOP Timestamps layout
            hdr.tcp_nnts.ts_val = ts[63:32];
            hdr.tcp_nnts.ts_ecr = ts[31:0];
        } else {    // no `return` above: p4c makes it a metadata flag every packet pays for
#if TCP_OPTIONS_MAX != 10
#error "SetTimestamps lists 10 option positions: update it with TCP_OPTIONS_MAX"
#endif
            SET_TIMESTAMPS_AT(0) SET_TIMESTAMPS_AT(1) SET_TIMESTAMPS_AT(2) SET_TIMESTAMPS_AT(3)
            SET_TIMESTAMPS_AT(4) SET_TIMESTAMPS_AT(5) SET_TIMESTAMPS_AT(6) SET_TIMESTAMPS_AT(7)
            SET_TIMESTAMPS_AT(8) SET_TIMESTAMPS_AT(9)
        }
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

// Egress, for an ACK that was queued as a waiting ACK (serial != 0): if its slot is still its
// own, it ends the wait, and if absorbed ACKs moved its state on, it leaves carrying the newest
// state of the ACKs folded into it. The slot then says, for COALESCE_SAID_US, that its state has
// left (the next slot's waiting ACK may rely on it). The rewrite is done here, from this control's
// working header: values handed out to the caller would be metadata fields every packet pays for.
// `l4_len`: the TCP pseudo-header's length (meta.l4_len), which an IPv6 ACK's rewrite folds its
// pseudo-header's sum into (pseudo_header6).
control AckCoalesceDeparture(in bit<32> half, in bit<16> serial, in time_us_t now, inout headers_t hdr,
                             in tcp_options_meta_t opts, inout bool tcp_rewritten_header_only,
                             inout bit<16> l4_len, inout coalesce_work_h w) {
    SetTimestamps() set_timestamps;
    SetSackBlocks() set_sack_blocks;

    // The departing ACK's cell, in an action of its own (see AckCoalesce.slots()).
    action departing_slot() {
        w.open = half << COALESCE_SLOT_BITS | COALESCE_SLOT_OF(serial);
    }

    action depart() {
        bit<32> cell = w.open;
        coalesce_state.read(w.state, cell);
        coalesce_newest_ack.read(w.newest_ack, cell);
        coalesce_newest_ts.read(w.newest_ts, cell);
        coalesce_newest_window.read(w.newest_window, cell);
        coalesce_newest_sack.read(w.newest_sack, cell);
        coalesce_counts.read(w.counts, half);

        w.mine = w.state[7:0] & COALESCE_WAITING != 0 && w.state[23:8] == serial;
        w.state = w.mine ? ((bit<32>)now + COALESCE_SAID_US) ++ serial
            ++ (COALESCE_SAID | (w.state[7:0] & COALESCE_SACK_MASK)) : w.state;
        coalesce_state.write(cell, w.state);
        bit<192> own_sack = opts.sack_left_0 ++ opts.sack_right_0 ++ opts.sack_left_1 ++ opts.sack_right_1
            ++ opts.sack_left_2 ++ opts.sack_right_2;
        bool rewrite = w.mine && (w.newest_ack[63:32] != hdr.tcp.ack_no || w.newest_window != hdr.tcp.window
            || (opts.ts_present && w.newest_ts != opts.ts_val ++ opts.ts_ecr)
            || (opts.sack_blocks != 0 && w.newest_sack != own_sack));
        w.rewrite = (bit<1>)rewrite;
        w.counts = rewrite ? w.counts + 1 : w.counts;
        coalesce_counts.write(half, w.counts);
        w.frame_bytes = (bit<32>)hdr.ipv4.total_len + 14;
    }

    // A pure ACK: nothing of TCP follows its options. Bytes after the IPv4 packet (an Ethernet
    // trailer) go, and the checksum covers the header and options only: over bmv2's payload it
    // took in a non-zero trailer and came out wrong (the fuzzer's "extend" mutation,
    // ptf-tests/test_fuzz_findings.py).
    action rewrite_header() {
        hdr.tcp.ack_no = w.newest_ack[63:32];
        hdr.tcp.window = w.newest_window;
        tcp_rewritten_header_only = true;
        truncate(w.frame_bytes);
    }

    // ...over IPv6: the frame is the fixed header and the payload length (depart() took IPv4's
    // total length); and IPv4's header-only TCP checksum (checksums.p4), whose pseudo-header
    // fields of the invalid IPv4 header bmv2 leaves out, is made IPv6's (RFC 8200 8.1: both
    // addresses, the upper-layer length, Next Header TCP, a constant there) by folding the
    // addresses into the one field of it that counts, l4_len: their 16 words and the length summed
    // with end-around carry (the same ones'-complement sum as the words themselves). Nothing reads
    // l4_len after this.
    action pseudo_header6() {
        w.frame_bytes = (bit<32>)hdr.ipv6.payload_len + 54;
        bit<32> sum = WORDS8(hdr.ipv6.src_addr) + WORDS8(hdr.ipv6.dst_addr) + (bit<32>)l4_len;
        sum = (bit<32>)sum[15:0] + (sum >> 16);
        l4_len = sum[15:0] + (bit<16>)(sum >> 16);
    }

    apply {
        w.setValid();
        departing_slot();
        depart();
        if (w.rewrite == 1) {
            if (hdr.ipv6.isValid()) {
                pseudo_header6();
            }
            rewrite_header();
            if (opts.ts_present) {
                set_timestamps.apply(hdr, opts.ts_index, w.newest_ts);
            }
            if (opts.sack_blocks != 0) {
                set_sack_blocks.apply(hdr, w.newest_sack);
            }
        }
    }
}

#endif
