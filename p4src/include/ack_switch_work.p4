// ack_switch's working state: headers in its metadata (local_metadata_t.work; headers.p4 includes
// this file, and adds the member, only where ACKWISE_ACK_SWITCH is defined, so that the other
// programs' metadata stays as it was).
//
// Headers, not metadata fields: simple_switch sets every metadata field to zero for every packet
// it receives, so a field used on one path costs every packet; a header's fields are set to zero
// only when it is made valid (bmv2's add_header), by the packets that take that path. In the
// metadata, not in the controls: p4c makes a header declared in a control invalid in a step of its
// own each time the control is applied, where one in the metadata starts invalid with every packet
// at no cost (bmv2 marks every header invalid anyway). Never emitted; bmv2 adds a header's size to
// the packet length register when it is made valid, which nothing in the program reads.
// docs/performance.md, "What every packet pays first".
#ifndef ACKWISE_ACK_SWITCH_WORK_P4
#define ACKWISE_ACK_SWITCH_WORK_P4

#include "constants.p4"

// Bits of a half-flow's state (H_STATE).
const bit<8> HALF_DATA_VALID = 0x01;    // data_end holds something
const bit<8> HALF_ACK_VALID = 0x02;     // the ACK fields (H_ACK_LAST, H_WINDOW, ...) hold the previous ACK
const bit<8> HALF_PROBE = 0x04;         // an RTT probe is waiting for its ACK
const bit<8> HALF_TS_VALID = 0x08;      // H_TS_VAL and H_TS_ECR are set
const bit<8> HALF_SACK_SEEN = 0x10;     // H_HIGH is set
const bit<8> HALF_RECOVERY = 0x20;      // this side retransmitted: H_RECOVER holds its recovery point

// A half-flow's part of the record (HALF_BITS), from the lowest bit: what a pure ACK or a data
// segment changes every time lowest, what changes rarely (the first ACK number, the RTT probe,
// SACK, RTTmin, the recovery point) highest, the pieces from bit 254 up moved there with
// HALF_HIGH, since p4c lets an expression shift by at most 256 (below). At most 512 bits: bmv2
// computes on a half in 64-bit limbs, and a ninth limb cost every packet (2026-11-28).
//   ts:       the newest TSecr | TSval
//   ack_last: the previous ACK number
//   data_end: the end of the highest data segment this side sent
//   flags:    the previous ACK's ECE and CWR bits (the flags' top two) | its window | state
//             (HALF_*) | window scale (4 bits: at most 14, RFC 7323 2.3)
//   fwd:      when the last ACK was forwarded (low 32 bits of the us clock) | its ACK number
//   ack_base: the half-flow's first ACK number (dynamic_d)
//   probe:    the RTT probe: when it was sent (low 32 bits) | its end sequence
//   sack:     the previous ACK's first SACK block: right | left
//   high:     the highest SACK right edge reported
//   rtt:      when measured (low 32 bits) | RTTmin in us (31 bits), from this side's data to the
//             other's ACKs (and its copy for the control plane in ack_thinning.rtt)
//   recover:  the recovery point of this side's loss repair: data_end when it retransmitted first
//             (with HALF_RECOVERY; NewReno's "recover", RFC 6582)
#define HALF_BITS 509
#define H_TS_ECR 31:0
#define H_TS_VAL 63:32
#define H_ACK_LAST 95:64
#define H_DATA_END 127:96
#define H_ECE_CWR 129:128
#define H_WINDOW 145:130
#define H_STATE 153:146
#define H_WS 157:154
#define H_FWD_AT 189:158
#define H_FWD_ACK 221:190
#define H_ACK_BASE 253:222
#define H_PROBE_SENT 285:254
#define H_PROBE_END 317:286
#define H_SACK_RIGHT 349:318
#define H_SACK_LEFT 381:350
#define H_SACK 381:318
#define H_HIGH 413:382
#define H_RTT_AT 445:414
#define H_RTT_MIN 476:446
#define H_RTT 476:414
#define H_RECOVER 508:477
#define H_TS_ECR_LO 0
#define H_TS_VAL_LO 32
#define H_ACK_LAST_LO 64
#define H_DATA_END_LO 96
#define H_ECE_CWR_LO 128
#define H_WINDOW_LO 130
#define H_STATE_LO 146
#define H_WS_LO 154
#define H_FWD_AT_LO 158
#define H_FWD_ACK_LO 190
#define H_ACK_BASE_LO 222
#define H_PROBE_LO 254
#define H_SACK_LO 318
#define H_HIGH_LO 382
#define H_RTT_LO 414
#define H_RECOVER_LO 477

// A new half is built in place, as an OR of its pieces: each either the old half masked where the
// piece lies (one operator) or a new value moved there, never cut out and concatenated again
// (p4c emits a slice as a shift and two masks, and a concatenation as shifts, masks and an OR for
// each piece; bmv2 evaluates every operator: docs/performance.md). HALF_AT moves a value with a
// cast and a shift; p4c refuses a shift by more than 256 on bmv2, so HALF_HIGH moves one to bit
// 256 or above with a concatenation (a shift p4c makes itself, one operator more), used only for
// the pieces there, which change rarely.
#define HALF_AT(v, lo) ((bit<HALF_BITS>)(v) << (lo))
#define HALF_HIGH(v, lo) ((bit<(HALF_BITS - (lo))>)(v) ++ (bit<(lo)>)0)
#define HALF_MASK(hi, lo) (((((bit<HALF_BITS>)1) << ((hi) - (lo) + 1)) - 1) << (lo))
#define HALF_BIT(b) HALF_AT(b, H_STATE_LO)     // a state bit in place: tested with one AND
#define M_TS_ECR HALF_MASK(31, 0)
#define M_TS_VAL HALF_MASK(63, 32)
#define M_TS HALF_MASK(63, 0)
#define M_ACK_LAST HALF_MASK(95, 64)
#define M_DATA_END HALF_MASK(127, 96)
#define M_ECE_CWR_WINDOW HALF_MASK(145, 128)
#define M_STATE HALF_MASK(153, 146)
#define M_WS HALF_MASK(157, 154)
#define M_FWD_AT HALF_MASK(189, 158)
#define M_FWD_ACK HALF_MASK(221, 190)
#define M_FWD HALF_MASK(221, 158)
#define M_ACK_BASE HALF_MASK(253, 222)
#define M_PROBE HALF_MASK(317, 254)
#define M_SACK HALF_MASK(381, 318)
#define M_HIGH HALF_MASK(413, 382)
#define M_RTT HALF_MASK(476, 414)
#define M_RECOVER HALF_MASK(508, 477)

// The flow record (ack_thinning.flow, per slot): the half of direction 0 | the half of direction 1
// | the key (key_a | key_b | ports, as FLOW_KEY) | last seen, in 1.024 ms ticks (30 bits: wraps
// after 12.7 days) | closed by FIN or RST. Its lowest 63 bits, the key's ports, last seen and
// closed, are the slot's word the control plane reads (ack_thinning.slot), and the key's addresses
// are in key_a and key_b. The halves start at bit 127 (a shift p4c allows), and what every packet
// changes, last seen, is in the lowest bits.
#define FLOW_BITS 1145
#define R_H0 1144:636
#define R_H1 635:127
#define R_KEY 126:31
#define R_SLOT_WORD 62:0
#define R_SEEN 30:1
#define R_HALVES_LO 127
#define R_KEY_LO 31
#define R_SEEN_LO 1
#define M_R_KEY_CLOSED ((((((bit<FLOW_BITS>)1) << 96) - 1) << R_KEY_LO) | 1)
#define R_CLOSED_BIT ((bit<FLOW_BITS>)1)

// The thinning stage's working state for one packet: the record, loaded once and stored once,
// and what the steps hand each other. What only pure ACKs use is in thinning_ack_h, made valid on
// their path, and what only rarer paths use in thinning_rare_h, so that a data segment sets none
// of it to zero.
header thinning_work_h {
    bit<FLOW_BITS> flow;        // the slot's record as read, and as written back
    bit<HALF_BITS> own;         // this sender's half of it, and its new value
    bit<HALF_BITS> oth;         // the other sender's half
    bit<96> key;                // this packet's flow key (FLOW_KEY)
    bit<32> slot;
    bit<32> half;               // slot * 2 + direction: the index of the per-half registers
    bit<63> slot_word;          // the record's ports | last seen | closed, for ack_thinning.slot
    bit<63> data;               // ack_thinning.data of this half (data segments), or its rare_counts
    bit<14> direction;          // 0 or 1 (wider: the header's padding, one field fewer to zero)
    bool retransmission;        // a data segment that does not go beyond data_end
}

// What only a pure ACK uses, made valid on that path.
header thinning_ack_h {
    bit<62> acks;
    bit<39> outcome;
    bit<32> stat;               // the ack_thinning.stats cell of the ACK's outcome
    bit<14> fact_bits;          // the safety contract's facts (FACT_* in ack_safety.p4)
    keep_reason_t reason;
    bool policy_keep;           // the policy's own rule keeps it
    bool absorbed;              // folded into the flow's waiting ACK (coalescing)
    bool policy_thinned;        // thinned by the policy here (reason NONE, not filter)
    bool forwarded;             // neither thinned, absorbed, held nor left to filter
    bit<9> unused;
}

// What only rarer paths use: taking a record over, an RTT sample, an ACK the agent sends back,
// hold-back, the queue share. Made valid on those paths only.
header thinning_rare_h {
    bit<80> share;              // the queue share's share.held (ack_share.p4)
    bit<96> queued;             // ...its share.queued_us
    bit<62> counts;             // ...its share.counts
    bit<48> reclaim_idle_us;
    bit<63> rtt;                // the other half's new RTTmin | when
    bit<32> other;              // the other half's index (slot * 2 + the other direction)
    bit<32> key_a;
    bit<32> key_b;
    bit<32> held;               // hold-back's count of held ACKs, and of released ones
    bit<48> alive_at;           // when the agent was last heard from (HoldbackAgentAlive)
    bool empty;                 // a packet of another flow: the slot is empty...
    bool take_over;             // ...or its record may be taken over
    bool shared;
    bool newer;
    bool held_back;
    bool agent_alive;
    bool keep;                  // AckShare: a fresh ACK goes to the agent
    bit<4> unused;
}

// Valid for a packet from the hold-back agent's port (HoldbackPort, ack_holdback.p4): an ACK it
// sends back, or its heartbeat.
header agent_h {
    bool heartbeat;
    bit<7> unused;
}

// What an egress queue would do with a packet sent to it now (queue_model.p4): valid only for a
// port the program models (one with a rate). Every other packet sets none of it, and leaves now
// without a tail drop.
header queue_view_h {
    time_us_t departure_us;     // when the packet would leave
    bit<32> port_index;         // the port, as the queue registers' index
    bit<32> count;              // a count read and written back (QueueCommit)
    bool full;                  // the queue holds its depth: the packet is tail-dropped (at ingress)
    bit<7> unused;
}

// The working fields of AckCoalesce (ingress) and AckCoalesceDeparture (egress, where the ACK
// finds the header as its ingress left it, made valid again at no cost) (ack_coalesce.p4).
header coalesce_work_h {
    bit<16> last_serial;
    bit<32> open;           // the open slot's cell
    bit<32> next;           // the next slot's cell
    bit<32> prev;           // the previous slot's cell (the ACK ahead)
    bit<64> newest_ack;     // the open (at egress: the departing) slot's newest state
    bit<64> newest_ts;
    bit<16> newest_window;
    bit<192> newest_sack;
    bit<56> state;          // the open (departing) slot's state
    bit<56> ahead_state;    // the slot ahead
    bit<64> ahead_ack;
    bit<192> ahead_sack;
    bit<56> next_state;
    bit<62> counts;
    bit<8> sack_count;      // look(): the open slot's SACK blocks
    bit<8> ahead_count;     // look(): the SACK blocks of the ACK ahead, 0 if none is
    bit<8> flags;           // decide(): the open slot's flags as read
    bit<1> supersedes;      // look() for decide(): with the ACK ahead, this ACK says all the waiting one will
    bit<1> rewrite;         // at egress: the departing ACK leaves with the newest state folded into it
    bit<32> frame_bytes;    // at egress: the departing ACK's Ethernet frame without any trailer
    bit<32> cell;           // decide(): the cell written (the next slot's or the open one's)
    bit<16> new_serial;     // decide(): the serial of a new waiting ACK
    bool start;             // decide(): this ACK becomes a waiting ACK
    bool absorb;            // decide(): this ACK is folded into the waiting ACK
    bool pending;           // decide(): the open slot's ACK still waits
    bool next_free;         // decide(): the next slot takes a new waiting ACK
    bool mine;              // at egress: the departing ACK's slot is still its own
    bool queue_full;        // slots(): the model says the queue is full (never for a port it does not model)
    bit<32> right_edge;     // coalesce_inputs() (ack_thinning.p4): the ACK number plus the scaled window
    bool rewritable;        // ...: the ACK's options can be rewritten
    bool foldable;          // ...: may be folded into the waiting ACK
    bool eligible;          // ...: may become a waiting ACK
    bit<32> departure;      // slots(): when the ACK would leave (now, for a port the model does not know)
    bit<7> unused;
}

// acc's working fields: AccDelayFactor's (acc.p4), and the thinning stage's inputs to it and to
// AccSignal (ack_thinning.p4).
header acc_work_h {
    bit<32> flight;         // acc_inputs(): data the switch saw sent beyond the highest ACK
    bit<32> other;          // acc_data(): the other half's index
    bit<8> signal;          // acc_inputs(): the signals this ACK carries (ACC_SIGNAL_*)
    bit<48> changed_at;     // when d last changed (us)
    bit<8> pending;         // signals since (AccSignal's, then AccDelayFactor's)
    bit<8> delay;           // d as stored, then the new d: this ACK's
    bit<48> rtt;            // acc_inputs(): RTTmin, configured or measured; then ACC_RTT_DEFAULT_US if 0
    bit<32> signals;
    bit<8> cap;
    bit<8> d_max;
    bit<32> two_mss;
    bit<8> rtt_passed;      // 1: an RTT since the last change (eight bits: the header's padding)
}

// AckFilterDequeue's working fields (ack_filter.p4).
header filter_work_h {
    bit<32> newest_serial;  // the half-flow's newest ACK: its serial, ACK number, TSval, ECE/CWR
    bit<32> newest_ack;
    bit<32> newest_ts_val;
    bit<8> newest_flags;
    bit<32> capacity;       // the egress queue's, in packets
    bit<32> n;              // a count read and written back
}

// Egress, for the packets that take the ECN path (ECT, or an acc flow's): EcnMarking's working
// fields (ecn_marking.p4), what it tells the caller, and acc's signals (AccSignal).
header ecn_work_h {
    bit<32> random_max;     // the draw's upper bound, (k_max - k_min) * 100 - 1
    bit<32> r;
    bit<32> port_index;     // the egress port, as the marks counter's index
    bit<19> k_min;
    bit<19> k_max;
    bit<8> p_max_pct;
    bool configured;
    bool mark;
    bool queue_above_k;         // EcnMarking's outputs
    bool marked;
    bit<32> other;              // the other half's index (CE this switch put on the flow's data)
    bit<8> pending;             // AccSignal's
    bit<6> unused;
}

// One instance of each (bmv2 marks every header instance invalid for every packet: an instance
// per control that uses one would cost each packet its own).
struct ack_switch_work_t {
    agent_h agent;
    thinning_work_h thinning;
    thinning_ack_h ack;
    thinning_rare_h rare;
    queue_view_h queue;
    coalesce_work_h coalesce;
    acc_work_h acc;
    filter_work_h filter;
    ecn_work_h ecn;
}

#endif
