// Per-flow ACK thinning at ingress: flow records, the facts the safety contract needs, and the
// policies every_d, dynamic_d, tack and acc (with AccDelayFactor). For `filter` it only marks
// candidates; AckFilterDequeue drops them at egress. For `coalesce` (and `acc` on a queue the
// program models) it folds ACKs into the flow's waiting ACK (AckCoalesce).
//
// Records live in registers. A slot (FLOW_SLOTS) holds the flow's key, so a flow whose hash lands
// on another live flow's slot is left untouched and counted; idle or closed records are taken
// over. Each slot has two half-flow records (index slot * 2 + direction), one per sender: the
// data it sent, and the ACKs it sent about the other side's data.
//
// Cost (docs/performance.md): bmv2 runs each table, condition and primitive as a step of its own,
// and p4c makes a table of every run of statements between two conditions. So a half-flow record
// is packed into a few registers, read in one action and written back in one action, and the
// decisions are values computed inside actions rather than chains of if-statements. The working
// state lives in a header (thinning_work_h) so that the actions can share it.
//
// Thrift reads a register cell as a signed 64-bit value and saturates anything wider or larger, so
// every register the control plane reads is at most 63 bits wide; the others (read only here) use
// all 64. The layout is decoded in one Python place, control-plane/ackwise/features/thinning.py.
#ifndef ACKWISE_ACK_THINNING_P4
#define ACKWISE_ACK_THINNING_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "serial.p4"
#include "flow_key.p4"
#include "ack_policy.p4"
#include "ack_safety.p4"
#include "acc.p4"
#include "ack_coalesce.p4"
#include "ack_holdback.p4"
#include "ack_share.p4"

// Bits of a half-flow's state (the low byte of its flags).
const bit<8> HALF_DATA_VALID = 0x01;    // data_end holds something
const bit<8> HALF_ACK_VALID = 0x02;     // ack_last, window_last, ... hold the previous ACK
const bit<8> HALF_PROBE = 0x04;         // an RTT probe is waiting for its ACK
const bit<8> HALF_TS_VALID = 0x08;      // ts_val_max / ts_ecr_max are set
const bit<8> HALF_SACK_SEEN = 0x10;     // sack_high is set

// The internal record of a half-flow (ack_thinning.record): flags | seq | fwd | ts | probe | sack | high.
#define RECORD_BITS 392
#define REC_FLAGS 391:352
#define REC_STATE 359:352
#define REC_SEQ 351:288
#define REC_FWD 287:224
#define REC_TS 223:160
#define REC_PROBE 159:96
#define REC_PROBE_END 159:128
#define REC_PROBE_SENT 127:96
#define REC_SACK 95:32
#define REC_HIGH 31:0
#define REC_SACK_HIGH 95:0
#define REC_BELOW_FLAGS 351:0
#define REC_ABOVE_STATE 391:360
#define REC_ABOVE_FWD 391:288
#define REC_BELOW_FWD 223:0

// The stage's working state for one packet: its flow record, loaded once and stored once, and
// what the steps hand each other. A header made valid where the stage starts on a packet, not
// metadata: simple_switch sets every metadata field to zero for every packet it receives, so
// under `off` (and in every program sharing the metadata) each field cost every packet; a
// header's fields are set to zero only when it is made valid (bmv2's add_header), by the packets
// the stage looks at. What only pure ACKs use is in thinning_ack_h, made valid on their path, so
// that data segments do not zero it.
// Action locals live here too: p4c makes a metadata field of each (docs/performance.md, "What
// every packet pays first"). Never emitted; bmv2 adds its size to the packet length register,
// which nothing in the programs reads.
header thinning_work_h {
    bit<32> key_a;
    bit<32> key_b;
    bit<32> key_ports;
    bit<32> slot;
    bit<32> half;
    bit<32> other;
    bit<63> stored;             // the slot word as claim() read it, for claim_write()
    bit<32> stored_a;
    bit<32> stored_b;
    bit<48> reclaim_idle_us;
    bit<30> silent_ticks;       // since the slot's last packet, in 1.024 ms ticks
    bit<63> data;
    bit<62> thinned;
    bit<63> rtt_other;          // read by rtt_sample(), rule_tack() and acc_inputs() only
    bit<40> flags;
    bit<64> seq;
    bit<64> fwd;
    bit<64> ts;
    bit<64> sack;
    bit<32> high;
    bit<64> probe;
    bit<RECORD_BITS> record;        // this half's internal record as read, and as written back
    bit<RECORD_BITS> record_other;  // the other half's internal record as read
    bit<32> ack_last;
    bit<8> ece_cwr;
    bit<1> direction;
    bool ours;                  // the slot holds this packet's flow
    bool take_over;             // ...or a flow whose record may be taken over
    bool owned;                 // ours or taken over (else a collision: the packet passes untouched)
    bool empty;
    bool ack_valid;
    bool retransmission;
    bool sampled;               // the segment acknowledges the other side's RTT probe
    bit<7> unused;
}

// What only a pure ACK (and released()) uses, made valid on that path.
header thinning_ack_h {
    bit<63> data_other;
    bit<62> acks;
    bit<39> outcome;
    bit<32> window_bytes;
    bit<32> window_last_bytes;
    bit<13> fact_bits;          // the safety contract's facts (FACT_* in ack_safety.p4)
    keep_reason_t reason;
    bit<32> acked_since_fwd;
    bit<32> data_end_other;
    bit<32> mss;
    bit<32> acc_d;              // acc's delay factor for this ACK (set only for acc)
    bit<32> held;               // hold-back's count of held ACKs
    bit<32> stat;               // the ack_thinning.stats cell of a pure ACK's outcome
    bit<32> acc_rtt_min;        // acc's inputs: RTTmin (configured or measured), the flight, the signal
    bit<32> acc_flight;
    bit<8> acc_signal;
    bool policy_keep;
    bool absorbed;              // folded into the flow's waiting ACK (coalescing)
    bool policy_thinned;        // ack_outcome(): thinned by the policy here (reason NONE, not filter)
    bool forwarded;             // ack_outcome(): neither thinned, absorbed, held nor left to filter
    bit<3> unused;
}

// What only an ACK the agent sends back (released()) or a coalescing ACK uses: a header of its
// own, made valid on those paths, so that the common ones do not pay for its fields.
header thinning_rare_h {
    bit<80> share;              // the queue share's record (ack_share.p4)
    bit<32> held_released;
    bool shared;
    bool newer;
    bool held_back;
    bool agent_alive;
    bool rewritable;
    bool foldable;
    bool eligible;
    bit<1> unused;
}

control AckThinning(in ipv4_h ipv4, in tcp_h tcp, in tcp_options_meta_t opts, in bit<16> payload_len,
                    in time_us_t now, in port_t egress_port, in queue_view_t queue, in bool from_agent,
                    inout ack_policy_params_t params, inout ack_meta_t ack) {
    AckPolicySelect() policy_select;
    AckSafety() safety;
    AccSignal() acc_signal_data;
    AccSignal() acc_signal_ack;
    AccDelayFactor() acc_delay_factor;
    AckCoalesce() coalesce;
    HoldbackAgentAlive() holdback_agent_alive;
    HoldbackAgentAlive() share_agent_alive;
    AckShare() ack_share;
    AckShareQueued() ack_share_queued;

    @name(".ack_thinning.stats") counter(THINNING_STATS, CounterType.packets) stats;
    @name(".ack_thinning.config") register<bit<48>>(1) config;   // [0]: reclaim idle (us), 0 = default

    // Per slot. key_a, key_b: the flow key's addresses (lower endpoint first). slot: the key's
    // ports [62:31] | last seen, in 1.024 ms ticks (30 bits: wraps after 12.7 days) [30:1] | closed [0].
    @name(".ack_thinning.key_a") register<bit<32>>(FLOW_SLOTS) key_a_reg;
    @name(".ack_thinning.key_b") register<bit<32>>(FLOW_SLOTS) key_b_reg;
    @name(".ack_thinning.slot") register<bit<63>>(FLOW_SLOTS) slot_reg;

    // Per half-flow. Read by the control plane (at most 63 bits):
    //   data:    data_end [62:31] | data segments (31 bits) [30:0]
    //   acks:    ACKs seen [61:31] | ACKs forwarded [30:0]                 (31-bit counts)
    //   thinned: ACKs thinned [61:31] | retransmissions [30:0]             (31-bit counts)
    //   outcome: duplicate ACKs [38:8] | the last keep reason [7:0]
    //   rtt:     RTTmin in us (31 bits) [62:32] | when measured (low 32 bits of the us clock) [31:0]
    //   port:    the egress port of the half-flow's last segment (the controller's bottleneck)
    @name(".ack_thinning.data") register<bit<63>>(HALF_FLOWS) data_reg;
    @name(".ack_thinning.acks") register<bit<62>>(HALF_FLOWS) acks_reg;
    @name(".ack_thinning.thinned") register<bit<62>>(HALF_FLOWS) thinned_reg;
    @name(".ack_thinning.outcome") register<bit<39>>(HALF_FLOWS) outcome_reg;
    @name(".ack_thinning.rtt") register<bit<63>>(HALF_FLOWS) rtt_reg;
    @name(".ack_thinning.port") register<bit<9>>(HALF_FLOWS) port_reg;
    // Per half-flow, read only here, in one wide cell (one register read and one write per packet):
    //   flags: window_last [39:24] | ece_cwr_last [23:16] | ws_shift [15:8] | state [7:0]
    //   seq:   the previous ACK number [63:32] | the flow's first ACK number (dynamic_d) [31:0]
    //   fwd:   the last forwarded ACK number [63:32] | when (low 32 bits of the us clock) [31:0]
    //   ts:    the newest TSval [63:32] | TSecr [31:0]
    //   probe: the RTT probe's end sequence [63:32] | when it was sent (low 32 bits) [31:0]
    //   sack:  the previous ACK's first SACK block, left [63:32] | right [31:0]
    //   high:  the highest SACK right edge reported
    @name(".ack_thinning.record") register<bit<RECORD_BITS>>(HALF_FLOWS) record_reg;

    // The packet's flow record: ours, taken over (empty, closed or idle past the reclaim time), or
    // another live flow's (a collision: the packet passes untouched). A taken-over slot gets its
    // new key in reset_records().
    thinning_work_h w;
    thinning_ack_h a;
    thinning_rare_h rare;

    // The slot is read by claim() and written by claim_write(), one step with a barrier between
    // (claim_slot()), so that p4c does not substitute the ownership test into each of the slot's
    // new fields and of the outcomes that follow from it.
    action claim() {
        w.half = w.slot << 1 | (bit<32>)w.direction;
        w.other = w.slot << 1 | (bit<32>)(w.direction ^ 1);
        key_a_reg.read(w.stored_a, w.slot);
        key_b_reg.read(w.stored_b, w.slot);
        slot_reg.read(w.stored, w.slot);
        config.read(w.reclaim_idle_us, 0);
        w.silent_ticks = (bit<30>)(now >> 10) - w.stored[30:1];
        w.ours = w.stored_a == w.key_a && w.stored_b == w.key_b && w.stored[62:31] == w.key_ports;
        COPY_BARRIER(w);
        // What only a packet of another flow needs, in the branch of a ?: that bmv2 evaluates only
        // then (its && and || evaluate both sides). Each after a barrier: p4c would substitute
        // empty's ?: into take_over's, and a nested ?: becomes predicated temporaries.
        w.empty = w.ours ? false : w.stored_a == 0 && w.stored_b == 0 && w.stored[62:31] == 0;
        COPY_BARRIER(w);
        w.take_over = w.ours ? false : w.empty || w.stored[0:0] == 1
            || w.reclaim_idle_us != 0 && (bit<48>)w.silent_ticks > w.reclaim_idle_us >> 10
            || w.reclaim_idle_us == 0 && (bit<48>)w.silent_ticks > RECLAIM_IDLE_DEFAULT_US >> 10;
    }

    // The slot's ports, last seen and closed bit, for a record this packet owns.
    // What follows from ours and take_over, after the barrier: before it p4c substituted the
    // ownership test into each of owned and idle and the outcomes derived from them (claim() had
    // 173 expression operators). A taken-over record (take_over) is reset; one not owned is a
    // collision.
    action claim_write() {
        w.owned = w.ours || w.take_over;
        COPY_BARRIER(w);    // else p4c substitutes `ours || take_over` into each use of owned
        bool closing = tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0;
        bit<1> closed_now = (bit<1>)(w.owned && (closing || (w.ours && w.stored[0:0] == 1)));
        w.stored = w.owned ? w.key_ports ++ (bit<30>)(now >> 10) ++ closed_now : w.stored;
        slot_reg.write(w.slot, w.stored);
    }

    // The stage's first step on a tracked packet: the working header made valid, the flow key
    // and slot (flow_key.p4's expressions, each part after a barrier), the claim. As FlowKey's
    // two actions and a setValid of their own, they were three more steps, each about 6 thousand
    // instructions on bmv2's default build (docs/performance.md).
    action claim_slot() {
        w.setValid();
        w.direction = FLOW_DIRECTION(ipv4, tcp);
        COPY_BARRIER(w);
        w.key_a = FLOW_KEY_A(ipv4, w.direction);
        w.key_b = FLOW_KEY_B(ipv4, w.direction);
        w.key_ports = FLOW_KEY_PORTS(tcp, w.direction);
        COPY_BARRIER(w);
        FLOW_SLOT(w.slot, w.key_a, w.key_b, w.key_ports);
        claim();
        COPY_BARRIER(w);
        claim_write();
    }

    // A record taken over starts empty on both sides, before anything reads it: the internal
    // records (whose state bits guard every other word), the counters and the RTTmin. data_end
    // stays (guarded by its state bit too); the segment count restarts.
    // `counted`: STAT_NEW_FLOWS or STAT_RECLAIMED, a constant of the call (an index computed here
    // would be a temporary, a metadata field every packet pays for).
    action reset_records(bit<32> counted) {
        stats.count(counted);
        key_a_reg.write(w.slot, w.key_a);
        key_b_reg.write(w.slot, w.key_b);
        data_reg.read(w.data, w.other);
        w.data = w.data[62:31] ++ 31w0;
        data_reg.write(w.other, w.data);
        data_reg.read(w.data, w.half);
        w.data = w.data[62:31] ++ 31w0;
        data_reg.write(w.half, w.data);
        record_reg.write(w.half, 0);
        record_reg.write(w.other, 0);
        acks_reg.write(w.half, 0);
        acks_reg.write(w.other, 0);
        thinned_reg.write(w.half, 0);
        thinned_reg.write(w.other, 0);
        outcome_reg.write(w.half, 0);
        outcome_reg.write(w.other, 0);
        rtt_reg.write(w.half, 0);
        rtt_reg.write(w.other, 0);
    }

    // ---- the record in and out, each in one step (p4c inlines these into the step actions) ----
    // What every segment uses; only a pure ACK reads and changes the SACK words (load_sack()).
    action load_record() {
        ack.half = w.half;
        ack.tracked = true;
        record_reg.read(w.record, w.half);
        w.flags = w.record[REC_FLAGS];
        w.seq = w.record[REC_SEQ];
        w.fwd = w.record[REC_FWD];
        w.ts = w.record[REC_TS];
        w.probe = w.record[REC_PROBE];
    }

    action load_sack() {
        w.sack = w.record[REC_SACK];
        w.high = w.record[REC_HIGH];
    }

    // Packed in a step before the one that writes it: in one action, p4c substituted the packing
    // into the register write and evaluated it twice, once into w.record and once into a
    // temporary (a metadata field) for the write.
    action pack_record() {
        w.record = w.flags ++ w.seq ++ w.fwd ++ w.ts ++ w.probe ++ w.sack ++ w.high;
    }

    // A segment that is not a pure ACK leaves the SACK words as they were.
    action pack_record_no_sack() {
        w.record = w.flags ++ w.seq ++ w.fwd ++ w.ts ++ w.probe ++ w.record[REC_SACK_HIGH];
    }

    action store_record() {
        record_reg.write(w.half, w.record);
    }

    // An RTT sample, when a segment acknowledges the other side's probe (w.sampled, in
    // ack_state()); RTTmin over RTT_MIN_WINDOW_US. Its own step, applied only then: the other
    // side's record changes only here (its probe answered), and its RTTmin is read only here and
    // by the rules that use it.
    action rtt_sample() {
        rtt_reg.read(w.rtt_other, w.other);
        bit<32> sample = (bit<32>)now - w.record_other[REC_PROBE_SENT];
        bit<31> rtt_min = w.rtt_other[62:32];
        bool newer_min = rtt_min == 0 || sample <= (bit<32>)rtt_min
            || (bit<32>)now - w.rtt_other[31:0] > (bit<32>)RTT_MIN_WINDOW_US;
        w.rtt_other = newer_min ? (bit<31>)sample ++ (bit<32>)now : w.rtt_other;
        w.record_other = w.record_other[REC_ABOVE_STATE] ++ (w.record_other[REC_STATE] & ~HALF_PROBE)
            ++ w.record_other[REC_BELOW_FLAGS];
        record_reg.write(w.other, w.record_other);
        rtt_reg.write(w.other, w.rtt_other);
    }

    // An ACK the agent sent back while the flow's policy is not coalesce. Usually a held ACK of
    // hold-back: forwarded unless an ACK of the flow that acknowledges at least as much has been
    // forwarded since (it was superseded). Its state was recorded when it first arrived; only the
    // forwarding counts change. But while the agent holds the flow's queue-share ACKs (the policy
    // was coalesce when they were handed over), it is one of those: any pure ACK, a duplicate with
    // SACK blocks or a FIN among them. It is forwarded whatever it acknowledges, counted as seen,
    // and answered as taken with no wait, so the agent sends the flow's next at once and hands
    // back everything it holds, in order (no answer would leave it resending the oldest forever).
    action released() {
        rare.setValid();
        a.setValid();
        record_reg.read(w.record, w.half);
        acks_reg.read(a.acks, w.half);
        thinned_reg.read(w.thinned, w.half);
        outcome_reg.read(a.outcome, w.half);
        holdback_released.read(rare.held_released, w.half);
        share_held.read(rare.share, w.half);
        bit<16> handed = SHARE_HANDED(rare.share);
        bit<16> taken = SHARE_TAKEN(rare.share);
        rare.shared = SHARE_HOLDING(rare.share, now);
        bit<64> forwarded = w.record[REC_FWD];
        bool pure = payload_len == 0 && tcp.flags & TCP_FLAG_ACK != 0;
        rare.newer = pure && SEQ_GT(tcp.ack_no, forwarded[63:32]);
        rare.held_back = rare.newer && !rare.shared;
        ack.drop = pure && !rare.newer && !rare.shared;
        ack.share_kind = rare.shared ? AGENT_KIND_SHARE_TAKEN : 16w0;
        ack.share_wait_us = 0;
        // Each new value goes into the field it was read into, then is written: p4c gives most
        // register writes of an expression a temporary of their own, a metadata field bmv2 resets
        // for every packet (docs/performance.md, "What every packet pays first").
        rare.share = rare.shared ? SHARE_HELD(handed, taken + 1, now) : rare.share;
        w.record = rare.newer ? w.record[REC_ABOVE_FWD] ++ tcp.ack_no ++ (bit<32>)now ++ w.record[REC_BELOW_FWD]
                         : w.record;
        a.acks = a.acks + (rare.shared ? (62w1 << 31) + 1 : 0) + (rare.newer && !rare.shared ? 62w1 : 0);
        w.thinned = rare.held_back ? w.thinned - (1 << 31) : w.thinned;
        a.outcome = rare.held_back ? a.outcome[38:8] ++ KEEP_RELEASED : a.outcome;
        rare.held_released = rare.held_back ? rare.held_released + 1 : rare.held_released;
        share_held.write(w.half, rare.share);
        record_reg.write(w.half, w.record);
        acks_reg.write(w.half, a.acks);
        thinned_reg.write(w.half, w.thinned);
        outcome_reg.write(w.half, a.outcome);
        holdback_released.write(w.half, rare.held_released);
    }

    // ---- data this side sends: data_end, the segment count, retransmissions, the RTT probe ----
    action track_data() {
        bit<32> end = tcp.seq_no + (bit<32>)payload_len;
        w.retransmission = w.flags[7:0] & HALF_DATA_VALID != 0 && SEQ_LEQ(end, w.data[62:31]);
        // After the barrier the uses below read the field: p4c had substituted the test into each
        // of them (and the newest end is the data end unless the segment is a retransmission).
        COPY_BARRIER(w);
        w.data = (w.retransmission ? w.data[62:31] : end) ++ (w.data[30:0] + 1);
        w.thinned = w.retransmission ? w.thinned + 1 : w.thinned;
        bool start_probe = !w.retransmission && w.flags[7:0] & HALF_PROBE == 0;
        w.probe = start_probe ? end ++ (bit<32>)now : w.probe;
        // A probe is running after new data (started now or before), and cancelled by a
        // retransmission (Karn: no RTT sample across one).
        w.flags = w.flags[39:8]
            ++ (w.flags[7:0] & ~HALF_PROBE | HALF_DATA_VALID | (w.retransmission ? 8w0 : HALF_PROBE));
    }

    // ---- every segment with an ACK: whether it samples the RTT, what "the previous ACK" means ----
    action ack_state() {
        w.sampled = w.record_other[REC_STATE] & HALF_PROBE != 0
            && SEQ_GEQ(tcp.ack_no, w.record_other[REC_PROBE_END]);
        w.ack_valid = w.flags[7:0] & HALF_ACK_VALID != 0;
        w.ack_last = w.seq[63:32];
        w.ece_cwr = tcp.flags & (TCP_FLAG_ECE | TCP_FLAG_CWR);
    }

    action ack_remember() {
        bit<8> state = w.flags[7:0];
        bit<32> ack_base = w.ack_valid ? w.seq[31:0] : tcp.ack_no;
        bit<32> ack_last = !w.ack_valid || SEQ_GT(tcp.ack_no, w.ack_last) ? tcp.ack_no : w.ack_last;
        w.seq = ack_last ++ ack_base;
        w.fwd = w.ack_valid || ack.drop ? w.fwd : tcp.ack_no ++ w.fwd[31:0];
        bool ts_known = state & HALF_TS_VALID != 0;
        bit<32> ts_val = ts_known && !SEQ_GT(opts.ts_val, w.ts[63:32]) ? w.ts[63:32] : opts.ts_val;
        bit<32> ts_ecr = ts_known && !SEQ_GT(opts.ts_ecr, w.ts[31:0]) ? w.ts[31:0] : opts.ts_ecr;
        w.ts = opts.ts_present ? ts_val ++ ts_ecr : w.ts;
        state = opts.ts_present ? state | HALF_TS_VALID : state;
        state = state | HALF_ACK_VALID;
        w.flags = tcp.window ++ w.ece_cwr ++ w.flags[15:8] ++ state;
    }

    // ---- pure ACKs: the facts, the contract, the policy ----
    // The window, scaled, and the previous ACK's (after window_scale(): a SYN may set the scale).
    action ack_windows() {
        bit<8> ws_shift = w.flags[15:8];
        a.window_bytes = (bit<32>)tcp.window << ws_shift;
        a.window_last_bytes = (bit<32>)w.flags[39:24] << ws_shift;
    }

    // Each fact is a bit of a.fact_bits (FACT_* in ack_safety.p4, where the contract orders them).
    action ack_facts() {
        bit<8> state = w.flags[7:0];
        bit<8> other_state = w.record_other[REC_STATE];
        bool sack_present = opts.sack_blocks != 0;
        a.mss = (bit<32>)params.mss;
        a.data_end_other = a.data_other[62:31];
        bool flags_keep = tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST | TCP_FLAG_URG | TCP_FLAG_PSH) != 0;
        bool has_payload = payload_len != 0;
        bool first_ack = !w.ack_valid;
        bool window_update = w.ack_valid && tcp.ack_no == w.ack_last && tcp.window != w.flags[39:24];
        bool dup_ack = w.ack_valid && !SEQ_GT(tcp.ack_no, w.ack_last);
        // The SACK facts are evaluated only for an ACK with SACK blocks (a ?: evaluates only the
        // branch it takes; && and || evaluate both sides in bmv2): 35 operators.
        bool dsack = (SEQ_LT(opts.sack_left_0, tcp.ack_no)
            || (opts.sack_blocks >= 2 && SEQ_GEQ(opts.sack_left_0, opts.sack_left_1)
                && SEQ_LEQ(opts.sack_right_0, opts.sack_right_1)));
        bool sack_news = (state & HALF_SACK_SEEN == 0 || SEQ_GT(opts.sack_right_0, w.high)
            || opts.sack_left_0 != w.sack[63:32] || opts.sack_right_0 != w.sack[31:0]);
        bool ece_cwr_change = w.ack_valid && w.ece_cwr != w.flags[23:16];
        bool window_reopen = w.ack_valid && a.window_last_bytes < a.mss && a.window_bytes >= a.mss;
        bool unknown_option = opts.unknown_present;
        bool ts_reordered = opts.ts_present && state & HALF_TS_VALID != 0
            && (SEQ_LT(opts.ts_val, w.ts[63:32]) || SEQ_LT(opts.ts_ecr, w.ts[31:0]));
        bool idle = w.ours && params.idle_us != 0 && (bit<48>)w.silent_ticks > (bit<48>)(params.idle_us >> 10);
        // With `filter`, an ACK is dropped only behind a newer one that acknowledges at least as
        // much, and with `coalesce` its state leaves inside the waiting ACK: the end of a burst is
        // never at stake.
        bool acks_all_data = params.policy != POLICY_FILTER && params.policy != POLICY_COALESCE
            && (other_state & HALF_DATA_VALID == 0 || SEQ_GEQ(tcp.ack_no, a.data_end_other));
        a.fact_bits = (flags_keep ? FACT_FLAGS_KEEP : 0)
            | (has_payload ? FACT_HAS_PAYLOAD : 0)
            | (first_ack ? FACT_FIRST_ACK : 0)
            | (window_update ? FACT_WINDOW_UPDATE : 0)
            | (dup_ack ? FACT_DUP_ACK : 0)
            | (sack_present ? (dsack ? FACT_DSACK : 0) | (sack_news ? FACT_SACK_NEWS : 0) : 0)
            | (ece_cwr_change ? FACT_ECE_CWR_CHANGE : 0)
            | (window_reopen ? FACT_WINDOW_REOPEN : 0)
            | (unknown_option ? FACT_UNKNOWN_OPTION : 0)
            | (ts_reordered ? FACT_TS_REORDERED : 0)
            | (idle ? FACT_IDLE : 0)
            | (acks_all_data ? FACT_ACKS_ALL_DATA : 0);
        a.acked_since_fwd = tcp.ack_no - w.fwd[63:32];
    }

    // The policies' own rules, as values: has the ACK reached the policy's threshold? An action
    // per policy, chosen in apply: bmv2 evaluates every operator of an expression (`&&` and `||`
    // do not short-circuit), and one action for the four evaluated all four rules (77 operators).
    // Sums rather than nested ?: (which p4c lowers into a chain of copies).
    action rule_every_d() {
        a.policy_keep = a.acked_since_fwd >= (bit<32>)params.d * a.mss;
    }

    // dynamic_d: d = 1, 2, 3, 4 below l1, l2, l3 segments acknowledged, and above
    action rule_dynamic_d() {
        bit<32> acked_total = tcp.ack_no - w.seq[31:0];
        bit<32> dynamic_d = 1 + (bit<32>)(bit<1>)(acked_total >= (bit<32>)params.l1 * a.mss)
            + (bit<32>)(bit<1>)(acked_total >= (bit<32>)params.l2 * a.mss)
            + (bit<32>)(bit<1>)(acked_total >= (bit<32>)params.l3 * a.mss);
        a.policy_keep = a.acked_since_fwd >= dynamic_d * a.mss;
    }

    // tack: L segments and RTTmin / beta since the last forwarded ACK
    action rule_tack() {
        rtt_reg.read(w.rtt_other, w.other);
        bit<32> rtt_min = params.rtt_min_us != 0 ? params.rtt_min_us : (bit<32>)w.rtt_other[62:32];
        bit<48> since_fwd = (bit<48>)((bit<32>)now - w.fwd[31:0]);
        a.policy_keep = a.acked_since_fwd >= (bit<32>)params.tack_l * a.mss
            && since_fwd * (bit<48>)params.tack_beta >= (bit<48>)rtt_min;
    }

    // acc: d from AccDelayFactor
    action rule_acc() {
        a.policy_keep = a.acked_since_fwd >= a.acc_d * a.mss;
    }

    // acc's inputs, in an action (locals of the apply block would be metadata fields).
    action acc_inputs() {
        rtt_reg.read(w.rtt_other, w.other);
        a.acc_signal = (ipv4.ecn == 3 ? ACC_SIGNAL_CE : 8w0) | (tcp.flags & TCP_FLAG_ECE != 0 ? ACC_SIGNAL_ECE : 8w0);
        a.acc_rtt_min = params.rtt_min_us != 0 ? params.rtt_min_us : (bit<32>)w.rtt_other[62:32];
        // The flight: data the switch saw sent beyond the highest ACK.
        bit<32> highest_ack = w.ack_valid && SEQ_GT(w.ack_last, tcp.ack_no) ? w.ack_last : tcp.ack_no;
        a.acc_flight = w.record_other[REC_STATE] & HALF_DATA_VALID != 0 && SEQ_GT(a.data_end_other, highest_ack)
            ? a.data_end_other - highest_ack : 32w0;
    }

    // What becomes of the ACK, its counters, and the state the next ACK compares with.
    action ack_outcome() {
        a.reason = a.reason == KEEP_NONE && a.policy_keep ? KEEP_POLICY : a.reason;
        // filter: decided at egress; here only whether it may be dropped there.
        ack.filter_candidate = params.policy == POLICY_FILTER && a.reason == KEEP_NONE;
        ack.hold_base_ack = w.fwd[63:32];
        a.policy_thinned = a.reason == KEEP_NONE && params.policy != POLICY_FILTER;
        // Fields, each after a barrier: p4c substituted the two tests into each of their uses
        // below (the forwarded test, 12 operators, three times).
        COPY_BARRIER(a);
        a.forwarded = !a.policy_thinned && !a.absorbed && !ack.hold && !ack.filter_candidate;
        ack.drop = a.policy_thinned || ack.hold || a.absorbed;
        COPY_BARRIER(a);
        bit<8> state = w.flags[7:0];
        bool sack_present = opts.sack_blocks != 0;
        a.acks = a.acks + (1 << 31) + (a.forwarded ? 62w1 : 62w0);
        // Absorbed and held ACKs count as thinned (a held one until it comes back released).
        w.thinned = ack.drop ? w.thinned + (1 << 31) : w.thinned;
        bit<31> dup_acks = a.outcome[38:8] + (a.reason == KEEP_DUP_ACK ? 31w1 : 31w0);
        a.outcome = dup_acks ++ (a.forwarded ? a.reason : a.outcome[7:0]);
        w.fwd = a.forwarded
            ? (!w.ack_valid || SEQ_GT(tcp.ack_no, w.fwd[63:32]) ? tcp.ack_no : w.fwd[63:32]) ++ (bit<32>)now
            : w.fwd;
        w.sack = sack_present ? opts.sack_left_0 ++ opts.sack_right_0 : 64w0;
        bool higher = state & HALF_SACK_SEEN == 0 || SEQ_GT(opts.sack_right_0, w.high);
        w.high = sack_present && higher ? opts.sack_right_0 : w.high;
        state = sack_present ? state | HALF_SACK_SEEN : state;
        w.flags = w.flags[39:8] ++ state;
        // Counted in pure_ack_store: an index computed in the action that counts is a temporary.
        // One of four, as a disjunction of exclusive cases (a held ACK is neither absorbed nor
        // thinned): p4c lowers nested ?: into a chain of temporaries.
        a.stat = (a.absorbed ? STAT_ACKS_ABSORBED : 0)
            | (a.policy_thinned && !a.absorbed ? STAT_ACKS_THINNED : 0)
            | (ack.hold ? STAT_ACKS_HELD : 0)
            | (!ack.drop ? STAT_ACKS_PASSED : 0);
    }

    // Hold-back's count of held ACKs, for a held one only (a register read and write every pure
    // ACK otherwise).
    action count_held() {
        holdback_held.read(a.held, w.half);
        a.held = a.held + 1;
        holdback_held.write(w.half, a.held);
    }

    // A pure ACK the queue share hands to the agent (to keep, or back to it again): nothing of the
    // flow's record changes until it comes back and is taken.
    // `counted`: STAT_ACKS_SHARED or STAT_SHARE_BOUNCED (a constant, as in reset_records).
    action to_agent(bit<32> counted) {
        ack.pure_ack = true;
        ack.drop = true;
        stats.count(counted);
    }

    // A SYN fixes the window scale of this sender's windows from then on.
    action window_scale() {
        bit<8> ws_shift = opts.ws_present ? opts.ws_shift : 8w0;
        w.flags = tcp.flags & TCP_FLAG_SYN != 0 ? w.flags[39:16] ++ ws_shift ++ w.flags[7:0] : w.flags;
    }

    // The steps of each kind of segment. A step is an action: bmv2 runs each as one step, and p4c
    // inlines the actions it calls. Between the parts of a step, COPY_BARRIER(w) (headers.p4):
    // each part reads what the one before left in the working header (thinning_work_h), not p4c's
    // copy of the expression that computed it. Without barriers, one action for the whole data
    // segment wrote its record back as one expression of 414 operators and had 1 335; cut into
    // five steps instead, it paid five bmv2 steps (docs/performance.md, "Steps against operators",
    // "A barrier inside an action"). Each kind reads and writes only the registers it uses; the
    // other side's record is read for its probe and written back only by rtt_sample(), when the
    // segment acknowledges that probe (about once per round trip).
    action data_segment() {
        load_record();
        record_reg.read(w.record_other, w.other);
        data_reg.read(w.data, w.half);
        thinned_reg.read(w.thinned, w.half);
        window_scale();
        COPY_BARRIER(w);
        track_data();
        COPY_BARRIER(w);
        ack_state();
        COPY_BARRIER(w);
        ack_remember();
        COPY_BARRIER(w);
        pack_record_no_sack();
        COPY_BARRIER(w);
        store_record();
        data_reg.write(w.half, w.data);
        thinned_reg.write(w.half, w.thinned);
        port_reg.write(w.half, egress_port);
    }

    // A segment without the ACK flag: a SYN (perhaps with data).
    action no_ack() {
        load_record();
        data_reg.read(w.data, w.half);
        thinned_reg.read(w.thinned, w.half);
        window_scale();
        COPY_BARRIER(w);
        track_data();
        COPY_BARRIER(w);
        pack_record_no_sack();
        COPY_BARRIER(w);
        store_record();
        data_reg.write(w.half, w.data);
        thinned_reg.write(w.half, w.thinned);
        port_reg.write(w.half, egress_port);
    }

    // A pure ACK up to its facts: its record, the other side's, and the counters. Its own working
    // header (thinning_ack_h) is made valid here.
    action pure_ack_load() {
        a.setValid();
        stats.count(STAT_ACKS_SEEN);
        ack.pure_ack = true;
        a.acc_d = 0;            // set by acc's delay factor only
        a.absorbed = false;     // set by coalescing only
        a.policy_keep = false;  // set by the rule of every_d, dynamic_d, tack or acc only
        load_record();
        load_sack();
        record_reg.read(w.record_other, w.other);
        data_reg.read(a.data_other, w.other);
        acks_reg.read(a.acks, w.half);
        thinned_reg.read(w.thinned, w.half);
        outcome_reg.read(a.outcome, w.half);
        window_scale();
    }

    // ...and after the contract and the policy's rule (acc's once its d is known): the record
    // and counters written back.
    action pure_ack_store() {
        stats.count(a.stat);
        store_record();
        acks_reg.write(w.half, a.acks);
        thinned_reg.write(w.half, w.thinned);
        outcome_reg.write(w.half, a.outcome);
        port_reg.write(w.half, egress_port);
    }

    // The two steps of a pure ACK: up to its facts, and after the contract and the policy.
    action pure_ack_facts() {
        pure_ack_load();
        COPY_BARRIER(w);
        ack_state();
        ack_windows();
        COPY_BARRIER(w);
        COPY_BARRIER(a);
        ack_facts();
    }

    action pure_ack_finish() {
        ack_outcome();
        COPY_BARRIER(w);
        COPY_BARRIER(a);
        ack_remember();
        COPY_BARRIER(w);
        pack_record();
        COPY_BARRIER(w);
        pure_ack_store();
    }

    // No `return` below: p4c turns each one into a flag that every later block tests (one bmv2
    // step each), so the cases nest instead.
    apply {
        // The policy tables see the flow from its ACKs' side: data looks them up reversed.
        bool has_data;
        policy_select.apply(ipv4, tcp, payload_len, has_data, params);
        // What the agent sends back is looked at under any policy: `off` too may find the agent
        // holding a flow's queue-share ACKs (the policy was coalesce when they were handed over).
        if (params.policy != POLICY_OFF || from_agent) {
            claim_slot();
            if (!w.owned) {
                stats.count(STAT_COLLISIONS);
            } else {
                if (w.take_over) {
                    if (w.empty) {
                        reset_records(STAT_NEW_FLOWS);
                    } else {
                        reset_records(STAT_RECLAIMED);
                    }
                }
                if (from_agent && params.policy != POLICY_COALESCE) {
                    released();   // hold-back (the queue share's ACKs come back as pure ACKs, below)
                } else if (tcp.flags & TCP_FLAG_ACK == 0) {
                    no_ack();
                    if (has_data && ipv4.ecn == 3 && params.policy == POLICY_ACC) {
                        acc_signal_data.apply(w.other, ACC_SIGNAL_CE, params.acc_signals);
                    }
                } else if (has_data) {
                    data_segment();
                    if (w.sampled) {
                        rtt_sample();
                    }
                    if (ipv4.ecn == 3 && params.policy == POLICY_ACC) {
                        acc_signal_data.apply(w.other, ACC_SIGNAL_CE, params.acc_signals);
                    }
                } else {
                    // ---- a pure ACK (SYN, FIN, RST, URG, PSH: kept by the contract) ----
                    // The queue share first: a fresh ACK of a flow that has its share of the queue,
                    // or whose earlier ACKs the agent holds, goes to the agent untouched (it is
                    // looked at when it comes back, in its flow's order); one coming back too early
                    // goes back to it.
                    bool share = params.policy == POLICY_COALESCE && queue.modelled;
                    if (share) {
                        rare.setValid();
                        share_agent_alive.apply(now, rare.agent_alive);
                        ack_share.apply(w.half, now, from_agent, rare.agent_alive, ack.share_kind, ack.share_wait_us);
                    }
                    if (ack.share_kind == AGENT_KIND_SHARE_KEEP) {
                        to_agent(STAT_ACKS_SHARED);
                    } else if (ack.share_kind == AGENT_KIND_SHARE_BOUNCED) {
                        to_agent(STAT_SHARE_BOUNCED);
                    } else {
                        pure_ack_facts();
                        if (w.sampled) {
                            rtt_sample();
                        }
                        if (params.policy == POLICY_EVERY_D) {
                            rule_every_d();
                        } else if (params.policy == POLICY_DYNAMIC_D) {
                            rule_dynamic_d();
                        } else if (params.policy == POLICY_TACK) {
                            rule_tack();
                        }
                        safety.apply(a.fact_bits, a.reason);
                        if (params.policy == POLICY_ACC) {
                            acc_inputs();
                            acc_signal_ack.apply(w.half, a.acc_signal, params.acc_signals);
                            acc_delay_factor.apply(w.half, now, a.acc_rtt_min, a.acc_flight, a.mss, params, a.acc_d);
                            rule_acc();
                        }
                        // (The policy's own rule is evaluated also for an ACK only the end-of-burst
                        // rule keeps, which hold-back may then hold instead; ack_outcome turns reason
                        // NONE into POLICY when the rule keeps the ACK.)

                        // Coalescing: fold the ACK into its flow's waiting ACK, or queue it (as the new
                        // waiting ACK if it may be rewritten later). acc thins by its d rule first
                        // (reason NONE and no policy keep: dropped) and coalesces what that rule keeps.
                        if (params.policy == POLICY_COALESCE || (params.policy == POLICY_ACC && queue.modelled
                                && (a.reason != KEEP_NONE || a.policy_keep))) {
                            // Never rewritten or folded: options the switch does not interpret, and
                            // SACK blocks it cannot rewrite (any layout but Linux's one-step one).
                            rare.setValid();
                            rare.rewritable = !opts.unknown_present && (opts.sack_blocks == 0 || opts.sack_one_step);
                            // An ACK with SACK blocks whose only news is in them (a duplicate ACK, SACK
                            // news) is folded: the waiting ACK leaves with its blocks, and
                            // AckCoalesce folds it only if they say all the waiting ACK's blocks said.
                            // A SACK sender learns losses from the blocks, not from the number of
                            // duplicate ACKs (RFC 6675; Linux counts SACKed segments): without this,
                            // every ACK of a recovery took a slot of the slow queue (docs/ack-thinning.md).
                            // A window update (same ACK number, another window; not a duplicate ACK for
                            // the sender, RFC 5681) is folded too: the waiting ACK leaves with the newest
                            // window, and AckCoalesce folds only one whose right edge moves forward. A
                            // receiver's window grows with nearly every ACK while it autotunes.
                            bool window_update = a.fact_bits & FACT_WINDOW_UPDATE != 0;
                            bit<13> foldable_news = FACT_ACKS_ALL_DATA | FACT_WINDOW_UPDATE
                                | (window_update || opts.sack_blocks != 0 ? FACT_DUP_ACK : 0)
                                | (opts.sack_blocks != 0 ? FACT_SACK_NEWS : 0);
                            rare.foldable = a.fact_bits & ~foldable_news == 0;
                            rare.eligible = rare.rewritable && (rare.foldable || a.reason == KEEP_FIRST_ACK || a.reason == KEEP_IDLE
                                || a.reason == KEEP_ECE_CWR_CHANGE || a.reason == KEEP_WINDOW_REOPEN);
                            coalesce.apply(w.half, now, tcp, opts, tcp.ack_no + a.window_bytes, rare.rewritable && rare.foldable,
                                           rare.eligible, queue, a.absorbed, ack.coalesce_serial);
                            if (a.reason == KEEP_NONE && !a.absorbed) {
                                a.reason = KEEP_POLICY;   // nothing waiting to fold it into: queued
                            }
                        }

                        // Hold-back: an ACK the policy would thin and only the end-of-burst rule keeps
                        // goes to the agent, which sends it back after hold_ms unless superseded.
                        if (!a.absorbed && a.reason == KEEP_ACKS_ALL_DATA && !a.policy_keep && params.hold_ms != 0
                                && (params.policy == POLICY_EVERY_D || params.policy == POLICY_DYNAMIC_D
                                    || params.policy == POLICY_TACK || params.policy == POLICY_ACC)) {
                            holdback_agent_alive.apply(now, ack.hold);
                        }
                        pure_ack_finish();
                        if (ack.hold) {
                            count_held();
                        }
                        if (share && !ack.drop && !queue.full) {
                            // Queued: the flow's newest; an ACK the agent sent back is answered with
                            // the time until the flow has room for its next.
                            ack_share_queued.apply(w.half, now, queue.departure_us, ack.share_wait_us);
                        }
                    }
                }
            }
        }
    }
}

#endif
