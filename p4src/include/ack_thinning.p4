// Per-flow ACK thinning at ingress: flow records, the facts the safety contract needs, and the
// policies every_d, dynamic_d, tack and acc (with AccDelayFactor). For `filter` it only marks
// candidates; AckFilterDequeue drops them at egress. For `coalesce` (and `acc` on a modelled
// queue) it folds ACKs into the flow's waiting ACK (AckCoalesce).
//
// A flow's record is one register cell per slot (FLOW_SLOTS), found by the hash of the flow's key:
// the key itself, when the slot last saw a packet and whether the flow closed, and two half-flow
// parts, one per sender (direction 0 or 1): the data it sent, and the ACKs it sent about the other
// side's data. A packet reads the cell once and writes it once. A flow whose hash lands on another
// live flow's slot is left untouched and counted; idle or closed records are taken over.
//
// Cost (docs/performance.md): on bmv2 every field an action writes costs about as much as four
// expression operators (a GMP copy, a mask and a byte export), and so does every field of a
// working header made valid (set to zero); register reads write a field too. So the record is one
// cell, the working state is a few wide fields (the cell, this sender's half, the other's), and
// each kind of segment computes its new half in one expression over them.
//
// The control plane reads registers over Thrift, which returns a cell as a signed 64-bit value
// and saturates anything wider: what it reads is in registers of at most 63 bits, which the
// program writes (the key, the slot's word) or reads and writes (the per-half counters); the wide
// cell is the program's own. The layouts are decoded in one Python place,
// control-plane/ackwise/features/thinning.py.
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
#include "ack_filter.p4"

// The record's layout and the stage's working headers: ack_switch_work.p4.

// `queue`: valid for a port the program models (queue_model.p4); `agent`: for a packet from the
// hold-back agent's port (ack_holdback.p4). `hold_ms`, `agent_kind`, `agent_arg`: what travels
// with a copy for the agent (the clone's field list), set where a copy is made. `w`, `a`, `rare`
// (the queue share's too), `coalesce_w`, `acc_w`: the working headers (ack_switch_work.p4),
// invalid when the stage starts.
control AckThinning(in ipv4_h ipv4, in ipv6_h ipv6, in tcp_h tcp, in tcp_options_meta_t opts, in bit<16> payload_len,
                    in time_us_t now, in port_t egress_port, in queue_view_h queue, in agent_h agent,
                    inout ack_policy_params_t params, inout ack_meta_t ack,
                    inout bit<16> hold_ms, inout bit<16> agent_kind, inout bit<32> agent_arg,
                    inout thinning_work_h w, inout thinning_ack_h a, inout thinning_rare_h rare,
                    inout coalesce_work_h coalesce_w, inout acc_work_h acc_w) {
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
    AckFilterEnqueue() ack_filter_enqueue;

    @name(".ack_thinning.stats") counter(THINNING_STATS, CounterType.packets) stats;
    @name(".ack_thinning.config") register<bit<48>>(1) config;   // [0]: reclaim idle (us), 0 = default

    // The program's own: the flow record, one cell per slot (FLOW_BITS, ack_switch_work.p4).
    @name(".ack_thinning.flow") register<bit<FLOW_BITS>>(FLOW_SLOTS) flow_reg;

    // What the control plane reads (at most 63 bits each). Per slot, written by the program only:
    // key_a, key_b: the flow key's addresses (lower endpoint first), when a record is taken;
    // slot: the key's ports [62:31] | last seen, in 1.024 ms ticks [30:1] | closed [0], with every
    // packet of the flow (the record's R_SLOT_WORD).
    @name(".ack_thinning.key_a") register<bit<32>>(FLOW_SLOTS) key_a_reg;
    @name(".ack_thinning.key_b") register<bit<32>>(FLOW_SLOTS) key_b_reg;
    @name(".ack_thinning.slot") register<bit<63>>(FLOW_SLOTS) slot_reg;
    // An IPv6 flow's addresses (its record's key has FLOW_KEY_IPV6 and the ports, flow_key.p4):
    // the program's own copy, lower endpoint's address | the other's (256 bits, in a cell as wide
    // as a half so that it is read into w.oth: a field of its own would be set to zero by every
    // IPv4 packet too), read by IPv6 packets only; and the control plane's, KEY6_WORDS 32-bit
    // words per address at slot * KEY6_WORDS, the highest first, written when a record is taken.
    @name(".ack_thinning.key6") register<bit<HALF_BITS>>(FLOW_SLOTS) key6_reg;
    @name(".ack_thinning.key6_a") register<bit<32>>(FLOW_SLOTS * KEY6_WORDS) key6_a_reg;
    @name(".ack_thinning.key6_b") register<bit<32>>(FLOW_SLOTS * KEY6_WORDS) key6_b_reg;

    // Per half-flow, read by the control plane; read and written by the program:
    //   data:    data_end [62:31] | data segments (31 bits) [30:0]
    //   acks:    ACKs seen [61:31] | ACKs forwarded [30:0]                 (31-bit counts)
    //   outcome: duplicate ACKs [38:8] | the last keep reason [7:0]
    //   rare_counts: ACKs left to the egress filter [61:31] | retransmissions [30:0], read and
    //            written only when one of them counts (63 bits wide so that w.data, 63 bits, can
    //            take it in: a field fewer in the working header)
    // and written by the program only (its own copies are in the record):
    //   rtt:     RTTmin in us (31 bits) [62:32] | when measured (low 32 bits of the us clock) [31:0]
    //   port:    the egress port of the half-flow's last segment (the controller's bottleneck)
    // ACKs thinned are not counted: every pure ACK evaluated is forwarded, thinned (dropped,
    // absorbed or held) or left to the filter, so they are seen - forwarded - left to the filter
    // (control-plane/ackwise/features/thinning.py), and a pure ACK reads and writes one register
    // fewer.
    @name(".ack_thinning.data") register<bit<63>>(HALF_FLOWS) data_reg;
    @name(".ack_thinning.acks") register<bit<62>>(HALF_FLOWS) acks_reg;
    @name(".ack_thinning.rare_counts") register<bit<63>>(HALF_FLOWS) rare_counts_reg;
    @name(".ack_thinning.outcome") register<bit<39>>(HALF_FLOWS) outcome_reg;
    @name(".ack_thinning.rtt") register<bit<63>>(HALF_FLOWS) rtt_reg;
    @name(".ack_thinning.port") register<bit<9>>(HALF_FLOWS) port_reg;

    // Tests, in the conditions that take them (a field would cost a write, and setting to zero with
    // every packet): the record is this packet's flow's (found so, or taken over); the segment
    // acknowledges the other side's RTT probe.
#define OURS (w.flow[R_KEY] == w.key)
// A SYN's window scale as the record keeps it, in 4 bits: a shift above 14 is taken as 14 (RFC
// 7323 2.3). Only SYNs evaluate it (the branch of a ?:).
#define WS_CLAMPED(shift) ((bit<4>)((shift) > 14 ? 8w14 : (shift)))
#define SAMPLED (w.oth & HALF_BIT(HALF_PROBE) != 0 && SEQ_GEQ(tcp.ack_no, w.oth[H_PROBE_END]))

    // The stage's first step on a tracked packet: the working header made valid, the flow key and
    // slot, the record, and whether it is this flow's. Each value after a barrier (headers.p4):
    // p4c would substitute the direction's expression into the key's and the key's into the
    // hash input and the comparison, and bmv2 evaluates every copy. The halves are cut out here
    // once, into fields, for the steps after it.
    action claim_slot() {
        w.setValid();
        w.direction = (bit<14>)FLOW_DIRECTION(ipv4, tcp);
        COPY_BARRIER(w);
        w.key = FLOW_KEY(ipv4, tcp, w.direction);
        COPY_BARRIER(w);
        hash(w.slot, HashAlgorithm.crc32, (bit<32>)0, { w.key }, (bit<32>)FLOW_SLOTS);
        COPY_BARRIER(w);
        w.half = w.slot << 1 | (bit<32>)w.direction;
        flow_reg.read(w.flow, w.slot);
        w.own = w.direction == 0 ? w.flow[R_H0] : w.flow[R_H1];
        w.oth = w.direction == 0 ? w.flow[R_H1] : w.flow[R_H0];
    }

    // claim_slot for an IPv6 packet: the slot from the 288-bit key (FLOW_KEY6, the Python twin's
    // 36 key bytes), and as the key to compare with the record's, FLOW_KEY_IPV6 and the ports if
    // the slot's addresses (key6) are this packet's, FLOW_KEY_IPV6_OTHER (no record's) if not. So
    // OURS holds only for the record of this very flow, as for IPv4. (The hash input is a
    // temporary p4c makes, a metadata field: docs/performance.md, "Issue 40".)
    action claim_slot6() {
        w.setValid();
        w.direction = (bit<14>)FLOW_DIRECTION6(ipv6, tcp);
        COPY_BARRIER(w);
        hash(w.slot, HashAlgorithm.crc32, (bit<32>)0, { FLOW_KEY6(ipv6, tcp, w.direction) }, (bit<32>)FLOW_SLOTS);
        COPY_BARRIER(w);
        w.half = w.slot << 1 | (bit<32>)w.direction;
        key6_reg.read(w.oth, w.slot);
        w.key = FLOW_KEY6_TAG(w.oth == (bit<HALF_BITS>)FLOW_ADDRS6(ipv6, w.direction)
                              ? FLOW_KEY_IPV6 : FLOW_KEY_IPV6_OTHER, FLOW_KEY_PORTS(tcp, w.direction));
        COPY_BARRIER(w);
        flow_reg.read(w.flow, w.slot);
        w.own = w.direction == 0 ? w.flow[R_H0] : w.flow[R_H1];
        w.oth = w.direction == 0 ? w.flow[R_H1] : w.flow[R_H0];
    }

    // A packet whose slot holds another key, or none: may the record be taken over (empty, closed,
    // or idle past the reclaim time)? Else the packet is a collision and passes untouched.
    action claim_other() {
        rare.setValid();
        config.read(rare.reclaim_idle_us, 0);
        bit<30> silent_ticks = (bit<30>)(now >> 10) - w.flow[R_SEEN];
        rare.empty = w.flow[R_KEY] == 0;
        COPY_BARRIER(rare);
        rare.take_over = rare.empty || w.flow & R_CLOSED_BIT != 0
            || rare.reclaim_idle_us != 0 && (bit<48>)silent_ticks > rare.reclaim_idle_us >> 10
            || rare.reclaim_idle_us == 0 && (bit<48>)silent_ticks > RECLAIM_IDLE_DEFAULT_US >> 10;
    }

    action collision() {
        stats.count(STAT_COLLISIONS);
    }

    // An IPv6 flow taking a record over (before take_over): its key with FLOW_KEY_IPV6, and its
    // addresses, into key6 and the control plane's words (each value and index from a field: an
    // expression would be a temporary, a metadata field every packet pays for).
#define KEY6_WORD(i) \
        rare.key_a = w.oth[(255 - 32 * (i)):(224 - 32 * (i))]; \
        rare.key_b = w.oth[(127 - 32 * (i)):(96 - 32 * (i))]; \
        COPY_BARRIER(rare); \
        key6_a_reg.write(rare.other, rare.key_a); \
        key6_b_reg.write(rare.other, rare.key_b); \
        rare.other = rare.other + 1; \
        COPY_BARRIER(rare);
    action take_over6() {
        w.key = FLOW_KEY6_TAG(FLOW_KEY_IPV6, w.key[31:0]);
        w.oth = (bit<HALF_BITS>)FLOW_ADDRS6(ipv6, w.direction);
        rare.other = w.slot * KEY6_WORDS;
        COPY_BARRIER(w);
        COPY_BARRIER(rare);
        key6_reg.write(w.slot, w.oth);
        KEY6_WORD(0)
        KEY6_WORD(1)
        KEY6_WORD(2)
        KEY6_WORD(3)
    }
#if KEY6_WORDS != 4
#error "take_over6 writes 4 words per address: update it with KEY6_WORDS"
#endif

    // A record taken over starts empty on both sides, before anything reads it: the record (with
    // the new key), and the counters and the RTTmin the control plane reads.
    // `counted`: STAT_NEW_FLOWS or STAT_RECLAIMED, a constant of the call (an index computed here
    // would be a temporary, a metadata field every packet pays for).
    action take_over(bit<32> counted) {
        stats.count(counted);
        rare.key_a = w.key[95:64];
        rare.key_b = w.key[63:32];
        rare.other = w.half ^ 1;
        // The key's parts and the index from fields: a register index or value that is an
        // expression gets a temporary of its own (a metadata field).
        COPY_BARRIER(rare);
        key_a_reg.write(w.slot, rare.key_a);
        key_b_reg.write(w.slot, rare.key_b);
        w.flow = (bit<FLOW_BITS>)w.key << R_KEY_LO;
        w.own = 0;
        w.oth = 0;
        data_reg.write(w.half, 0);
        data_reg.write(rare.other, 0);
        acks_reg.write(w.half, 0);
        acks_reg.write(rare.other, 0);
        rare_counts_reg.write(w.half, 0);
        rare_counts_reg.write(rare.other, 0);
        outcome_reg.write(w.half, 0);
        outcome_reg.write(rare.other, 0);
        rtt_reg.write(w.half, 0);
        rtt_reg.write(rare.other, 0);
    }

    // The record back, with this packet's half (w.own) and the other's (w.oth) as they are now,
    // last seen now, and closed once a FIN or RST was seen; and the slot's word for the control
    // plane. Inlined into the last step of each kind of segment.
    action store_flow() {
        w.flow = w.flow & M_R_KEY_CLOSED
            | (bit<FLOW_BITS>)(w.direction == 0 ? w.own ++ w.oth : w.oth ++ w.own) << R_HALVES_LO
            | ((bit<FLOW_BITS>)(now >> 10) << R_SEEN_LO) & ((((bit<FLOW_BITS>)1 << 30) - 1) << R_SEEN_LO)
            | (tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0 ? R_CLOSED_BIT : 0);
        COPY_BARRIER(w);
        w.slot_word = w.flow[R_SLOT_WORD];
        COPY_BARRIER(w);
        flow_reg.write(w.slot, w.flow);
        slot_reg.write(w.slot, w.slot_word);
    }

    // An RTT sample, when a segment acknowledges the other side's probe (SAMPLED): RTTmin over
    // RTT_MIN_WINDOW_US, into the other half (its probe answered) and its control-plane copy.
    // About once per round trip, so a step of its own.
    action rtt_sample() {
        rare.setValid();
        rare.other = w.half ^ 1;
        bit<32> sample = (bit<32>)now - w.oth[H_PROBE_SENT];
        bit<31> rtt_min = w.oth[H_RTT_MIN];
        bool newer_min = rtt_min == 0 || sample <= (bit<32>)rtt_min
            || (bit<32>)now - w.oth[H_RTT_AT] > (bit<32>)RTT_MIN_WINDOW_US;
        rare.rtt = newer_min ? (bit<31>)sample ++ (bit<32>)now : w.oth[H_RTT];
        COPY_BARRIER(rare);
        // A loss repair ends here too: the probe started with new data after the retransmission
        // that began it (Karn), so the ACK that answers it is past the recovery point unless the
        // repair is still going on. (Once a round trip, where a test per ACK would cost every ACK.)
        w.oth = HALF_HIGH(rare.rtt, H_RTT_LO) | w.oth & ~(M_RTT | HALF_BIT(HALF_PROBE))
            & ~(SEQ_GEQ(tcp.ack_no, w.oth[H_RECOVER]) ? HALF_BIT(HALF_RECOVERY) : 0);
        rtt_reg.write(rare.other, rare.rtt);
    }

    // ...after a data segment, whose record is stored already: stored again with the sample.
    action rtt_sample_store() {
        rtt_sample();
        COPY_BARRIER(w);
        store_flow();
    }

    // An acc flow's data segment: egress checks it for the CE it may mark (`ack`), and the other
    // half's index, for acc's signal on this segment's data (a register index that is an
    // expression gets a temporary, a metadata field every packet pays for).
    action acc_data() {
        ack.half = w.half;
        ack.tracked = true;
        acc_w.setValid();
        acc_w.other = w.half ^ 1;
    }

    // ---- data this side sends (with the ACK it carries): data_end, the segment count,
    // retransmissions, the RTT probe, the previous ACK's state ----
    // The new half in one expression over the old: copy propagation substitutes the locals into
    // it, each used once (the retransmission test, used several times, is a field).
    action data_segment() {
        data_reg.read(w.data, w.half);
        bit<32> end = tcp.seq_no + (bit<32>)payload_len;
        w.retransmission = w.own & HALF_BIT(HALF_DATA_VALID) != 0 && SEQ_LEQ(end, w.own[H_DATA_END]);
        COPY_BARRIER(w);
        bool ack_valid = w.own & HALF_BIT(HALF_ACK_VALID) != 0;
        bool ts_known = w.own & HALF_BIT(HALF_TS_VALID) != 0;
        // A probe is running after new data (started now, or before and still unanswered), and
        // cancelled by a retransmission (Karn: no RTT sample across one).
        bool start_probe = !w.retransmission && w.own & HALF_BIT(HALF_PROBE) == 0;
        w.own = HALF_AT(tcp.window ++ tcp.flags[7:6], H_ECE_CWR_LO)
            // A SYN fixes the window scale of this sender's windows from then on (the parser sets
            // ws_shift only with ws_present: 0 without the option).
            | (tcp.flags & TCP_FLAG_SYN != 0 ? HALF_AT(WS_CLAMPED(opts.ws_shift), H_WS_LO) : w.own & M_WS)
            | w.own & M_STATE & ~HALF_BIT(HALF_PROBE) | HALF_BIT(HALF_DATA_VALID | HALF_ACK_VALID)
            | (w.retransmission ? 0 : HALF_BIT(HALF_PROBE))
            | (opts.ts_present ? HALF_BIT(HALF_TS_VALID) : 0)
            | (!ack_valid || SEQ_GT(tcp.ack_no, w.own[H_ACK_LAST]) ? HALF_AT(tcp.ack_no, H_ACK_LAST_LO)
                : w.own & M_ACK_LAST)
            | (ack_valid ? w.own & (M_ACK_BASE | M_FWD)
                : HALF_AT(tcp.ack_no, H_ACK_BASE_LO) | HALF_AT(tcp.ack_no, H_FWD_ACK_LO) | w.own & M_FWD_AT)
            | (opts.ts_present && (!ts_known || SEQ_GT(opts.ts_val, w.own[H_TS_VAL]))
                ? HALF_AT(opts.ts_val, H_TS_VAL_LO) : w.own & M_TS_VAL)
            | (opts.ts_present && (!ts_known || SEQ_GT(opts.ts_ecr, w.own[H_TS_ECR]))
                ? HALF_AT(opts.ts_ecr, H_TS_ECR_LO) : w.own & M_TS_ECR)
            | (start_probe ? HALF_HIGH(end ++ (bit<32>)now, H_PROBE_LO) : w.own & M_PROBE)
            | w.own & (M_SACK | M_HIGH | M_RTT | M_RECOVER)
            | (w.retransmission ? w.own & M_DATA_END : HALF_AT(end, H_DATA_END_LO));
        w.data = (w.retransmission ? w.data[62:31] : end) ++ (w.data[30:0] + 1);
        COPY_BARRIER(w);
        store_flow();
        data_reg.write(w.half, w.data);
        port_reg.write(w.half, egress_port);
    }

    // A retransmission (after data_segment(), which has stored the record) begins a loss repair
    // unless one is going on: its recovery point is the highest data this side has sent (NewReno's
    // "recover", RFC 6582), and until an ACK reaches it the contract keeps every ACK below it
    // (FACT_RECOVERY). A repair is over once the other side has acknowledged its point, even before
    // rtt_sample() has cleared HALF_RECOVERY: a later retransmission begins a new one.
    action start_recovery_store() {
        bool repairing = w.own & HALF_BIT(HALF_RECOVERY) != 0
            && !(w.oth & HALF_BIT(HALF_ACK_VALID) != 0 && SEQ_GEQ(w.oth[H_ACK_LAST], w.own[H_RECOVER]));
        w.own = repairing ? w.own
            : w.own & ~M_RECOVER | HALF_HIGH(w.own[H_DATA_END], H_RECOVER_LO) | HALF_BIT(HALF_RECOVERY);
        COPY_BARRIER(w);
        store_flow();
    }

    // A retransmission counted (after data_segment() or no_ack(), which have written w.data out).
    action count_retransmission() {
        rare_counts_reg.read(w.data, w.half);
        w.data = w.data + 1;
        rare_counts_reg.write(w.half, w.data);
    }

    // A pure ACK left to the egress filter counted (after pure_ack_finish(); a pure ACK does not
    // use w.data).
    action count_left_to_filter() {
        rare_counts_reg.read(w.data, w.half);
        w.data = w.data + (1 << 31);
        rare_counts_reg.write(w.half, w.data);
    }

    // A segment without the ACK flag: a SYN (perhaps with data). Its data as above; the ACK
    // fields stay as they were.
    action no_ack() {
        data_reg.read(w.data, w.half);
        bit<32> end = tcp.seq_no + (bit<32>)payload_len;
        w.retransmission = w.own & HALF_BIT(HALF_DATA_VALID) != 0 && SEQ_LEQ(end, w.own[H_DATA_END]);
        COPY_BARRIER(w);
        bool start_probe = !w.retransmission && w.own & HALF_BIT(HALF_PROBE) == 0;
        w.own = w.own & (M_TS | M_ACK_LAST | M_ECE_CWR_WINDOW | M_FWD | M_ACK_BASE | M_SACK | M_HIGH | M_RTT | M_RECOVER)
            | (tcp.flags & TCP_FLAG_SYN != 0 ? HALF_AT(WS_CLAMPED(opts.ws_shift), H_WS_LO) : w.own & M_WS)
            | w.own & M_STATE & ~HALF_BIT(HALF_PROBE) | HALF_BIT(HALF_DATA_VALID)
            | (w.retransmission ? 0 : HALF_BIT(HALF_PROBE))
            | (start_probe ? HALF_HIGH(end ++ (bit<32>)now, H_PROBE_LO) : w.own & M_PROBE)
            | (w.retransmission ? w.own & M_DATA_END : HALF_AT(end, H_DATA_END_LO));
        w.data = (w.retransmission ? w.data[62:31] : end) ++ (w.data[30:0] + 1);
        COPY_BARRIER(w);
        store_flow();
        data_reg.write(w.half, w.data);
        port_reg.write(w.half, egress_port);
    }

    // ---- pure ACKs: the facts, the contract, the policy ----
    // A pure ACK up to its facts: its counters and the facts (FACT_* in ack_safety.p4, where the
    // contract orders them).
    // The contract keeps the first ACK of a half-flow (rule 4) before any fact that compares it
    // with the previous ACK (rules 5 to 14), and a pure ACK has no payload (rule 3): so without a
    // previous ACK only the flags' fact is computed, and the facts after rule 4 only with one (a
    // ?: evaluates only the branch it takes, where && and || evaluate both sides in bmv2). The
    // reason the table finds is the same; coalescing, which reads the facts too, folds no ACK
    // with FIRST_ACK set either way.
    action pure_ack_facts() {
        a.setValid();
        stats.count(STAT_ACKS_SEEN);
        acks_reg.read(a.acks, w.half);
        outcome_reg.read(a.outcome, w.half);
        bit<32> ack_last = w.own[H_ACK_LAST];
        bit<32> mss = (bit<32>)params.mss;
        bool sack_present = opts.sack_blocks != 0;
        bool flags_keep = tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST | TCP_FLAG_URG | TCP_FLAG_PSH) != 0;
        bool window_changed = tcp.window != w.own[H_WINDOW];
        bool window_update = tcp.ack_no == ack_last && window_changed;
        bool dup_ack = !SEQ_GT(tcp.ack_no, ack_last);
        // The SACK facts only for an ACK with SACK blocks: 35 operators.
        bool dsack = (SEQ_LT(opts.sack_left_0, tcp.ack_no)
            || (opts.sack_blocks >= 2 && SEQ_GEQ(opts.sack_left_0, opts.sack_left_1)
                && SEQ_LEQ(opts.sack_right_0, opts.sack_right_1)));
        bool sack_news = (w.own & HALF_BIT(HALF_SACK_SEEN) == 0
            || SEQ_GT(opts.sack_right_0, w.own[H_HIGH])
            || opts.sack_left_0 ++ opts.sack_right_0 != w.own[H_SACK]);
        bool ece_cwr_change = tcp.flags[7:6] != w.own[H_ECE_CWR];   // CWR | ECE (0x80, 0x40)
        // Only a window that changed can have reopened (a SYN, which may change the scale, is
        // kept by rule 2 anyway): the shifts only then.
        bit<8> ws = (bit<8>)w.own[H_WS];
        bool window_reopen = (bit<32>)w.own[H_WINDOW] << ws < mss && (bit<32>)tcp.window << ws >= mss;
        bool ts_reordered = opts.ts_present && w.own & HALF_BIT(HALF_TS_VALID) != 0
            && (SEQ_LT(opts.ts_val, w.own[H_TS_VAL]) || SEQ_LT(opts.ts_ecr, w.own[H_TS_ECR]));
        bit<30> silent_ticks = (bit<30>)(now >> 10) - w.flow[R_SEEN];
        bool idle = params.idle_us != 0 && (bit<48>)silent_ticks > (bit<48>)(params.idle_us >> 10);
        // The end of a burst (acks_all_data) and an ACK below the recovery point of the other
        // side's loss repair (recovery, start_recovery_store), for the policies that thin by
        // their own count. With `filter`, an ACK is dropped only behind a newer one that
        // acknowledges at least as much, and with `coalesce` its state leaves inside the waiting
        // ACK: neither is at stake. One test of the policy for the two, and a ?: so that filter
        // and coalesce evaluate neither (&& evaluates both sides in bmv2).
        bit<14> end_facts = params.policy != POLICY_FILTER && params.policy != POLICY_COALESCE
            ? (w.oth & HALF_BIT(HALF_DATA_VALID) == 0 || SEQ_GEQ(tcp.ack_no, w.oth[H_DATA_END])
                    ? FACT_ACKS_ALL_DATA : 0)
                | (w.oth & HALF_BIT(HALF_RECOVERY) != 0 && SEQ_LT(tcp.ack_no, w.oth[H_RECOVER])
                    ? FACT_RECOVERY : 0)
            : 0;
        a.fact_bits = (flags_keep ? FACT_FLAGS_KEEP : 0)
            | (w.own & HALF_BIT(HALF_ACK_VALID) == 0 ? FACT_FIRST_ACK
                : (window_update ? FACT_WINDOW_UPDATE : 0)
                | (dup_ack ? FACT_DUP_ACK : 0)
                | (sack_present ? (dsack ? FACT_DSACK : 0) | (sack_news ? FACT_SACK_NEWS : 0) : 0)
                | (ece_cwr_change ? FACT_ECE_CWR_CHANGE : 0)
                | (window_changed ? (window_reopen ? FACT_WINDOW_REOPEN : 0) : 0)
                | (opts.unknown_present ? FACT_UNKNOWN_OPTION : 0)
                | (ts_reordered ? FACT_TS_REORDERED : 0)
                | (idle ? FACT_IDLE : 0)
                | end_facts);
    }

    // The policies' own rules, as values: has the ACK reached the policy's threshold? An action
    // per policy, chosen in apply: bmv2 evaluates every operator of an expression (`&&` and `||`
    // do not short-circuit), and one action for the four evaluated all four rules (77 operators).
    // Sums rather than nested ?: (which p4c lowers into a chain of copies).
    // Each also says the ACK is not absorbed (only coalescing absorbs): one step for the two.
    action rule_every_d() {
        a.absorbed = false;
        a.policy_keep = (tcp.ack_no - w.own[H_FWD_ACK]) >= (bit<32>)params.d * (bit<32>)params.mss;
    }

    // dynamic_d: d = 1, 2, 3, 4 below l1, l2, l3 segments acknowledged, and above
    action rule_dynamic_d() {
        a.absorbed = false;
        bit<32> mss = (bit<32>)params.mss;
        bit<32> acked_total = tcp.ack_no - w.own[H_ACK_BASE];
        bit<32> dynamic_d = 1 + (bit<32>)(bit<1>)(acked_total >= (bit<32>)params.l1 * mss)
            + (bit<32>)(bit<1>)(acked_total >= (bit<32>)params.l2 * mss)
            + (bit<32>)(bit<1>)(acked_total >= (bit<32>)params.l3 * mss);
        a.policy_keep = (tcp.ack_no - w.own[H_FWD_ACK]) >= dynamic_d * mss;
    }

    // tack: L segments and RTTmin / beta since the last forwarded ACK
    action rule_tack() {
        a.absorbed = false;
        bit<32> rtt_min = params.rtt_min_us != 0 ? params.rtt_min_us : (bit<32>)w.oth[H_RTT_MIN];
        bit<48> since_fwd = (bit<48>)((bit<32>)now - w.own[H_FWD_AT]);
        a.policy_keep = (tcp.ack_no - w.own[H_FWD_ACK]) >= (bit<32>)params.tack_l * (bit<32>)params.mss
            && since_fwd * (bit<48>)params.tack_beta >= (bit<48>)rtt_min;
    }

    // filter, coalesce and acc before its d is known: no rule (yet), and nothing absorbed unless
    // coalescing absorbs it.
    action no_rule() {
        a.absorbed = false;
        a.policy_keep = false;
    }

    // The policy's rule: one lookup for every policy, where a test per policy was up to three steps
    // before a rule ran (acc's waits for its d: rule_acc()).
    table policy_rule {
        key = { params.policy: exact; }
        actions = { rule_every_d; rule_dynamic_d; rule_tack; no_rule; }
        const default_action = no_rule();
        const entries = {
            POLICY_EVERY_D: rule_every_d();
            POLICY_DYNAMIC_D: rule_dynamic_d();
            POLICY_TACK: rule_tack();
        }
    }

    // acc: d from AccDelayFactor
    action rule_acc() {
        a.policy_keep = (tcp.ack_no - w.own[H_FWD_ACK]) >= (bit<32>)acc_w.delay * (bit<32>)params.mss;
    }

    // acc's inputs, in an action (locals of the apply block would be metadata fields), into acc's
    // working header (not thinning_rare_h: a pure ACK of acc sets one header to zero, not two).
    action acc_inputs() {
        ack.pure_ack = true;    // egress: the queue signal is for pure ACKs
        ack.half = w.half;
        ack.tracked = true;
        acc_w.setValid();
        acc_w.signal = (ipv4.ecn == 3 ? ACC_SIGNAL_CE : 8w0) | (tcp.flags & TCP_FLAG_ECE != 0 ? ACC_SIGNAL_ECE : 8w0);
        acc_w.rtt = (bit<48>)(params.rtt_min_us != 0 ? params.rtt_min_us : (bit<32>)w.oth[H_RTT_MIN]);
        // The flight: data the switch saw sent beyond the highest ACK.
        bit<32> ack_last = w.own[H_ACK_LAST];
        bit<32> highest_ack = w.own[H_STATE] & HALF_ACK_VALID != 0 && SEQ_GT(ack_last, tcp.ack_no) ? ack_last : tcp.ack_no;
        bit<32> data_end_other = w.oth[H_DATA_END];
        acc_w.flight = w.oth[H_STATE] & HALF_DATA_VALID != 0 && SEQ_GT(data_end_other, highest_ack)
            ? data_end_other - highest_ack : 32w0;
    }

    // Coalescing's inputs: may the ACK be rewritten, folded, or be the waiting ACK others fold
    // into (see apply).
    action coalesce_inputs() {
        ack.half = w.half;      // egress: the waiting ACK's slot
        coalesce_w.setValid();  // AckCoalesce's header (not thinning_rare_h: one header to zero, not two)
        // Never rewritten or folded: options the switch does not interpret, and SACK blocks it
        // cannot rewrite (any layout but Linux's one-step one).
        coalesce_w.rewritable = !opts.unknown_present && (opts.sack_blocks == 0 || opts.sack_one_step);
        // An ACK with SACK blocks whose only news is in them (a duplicate ACK, SACK news) is
        // folded: the waiting ACK leaves with its blocks, and AckCoalesce folds it only if they
        // say all the waiting ACK's blocks said. A SACK sender learns losses from the blocks, not
        // from the number of duplicate ACKs (RFC 6675; Linux counts SACKed segments): without
        // this, every ACK of a recovery took a slot of the slow queue (docs/ack-thinning.md). A
        // window update (same ACK number, another window; not a duplicate ACK for the sender, RFC
        // 5681) is folded too: the waiting ACK leaves with the newest window, and AckCoalesce
        // folds only one whose right edge moves forward. A receiver's window grows with nearly
        // every ACK while it autotunes.
        bool window_update = a.fact_bits & FACT_WINDOW_UPDATE != 0;
        bit<14> foldable_news = FACT_ACKS_ALL_DATA | FACT_WINDOW_UPDATE
            | (window_update || opts.sack_blocks != 0 ? FACT_DUP_ACK : 0)
            | (opts.sack_blocks != 0 ? FACT_SACK_NEWS : 0);
        coalesce_w.foldable = a.fact_bits & ~foldable_news == 0;
        coalesce_w.eligible = a.reason == KEEP_FIRST_ACK || a.reason == KEEP_IDLE
            || a.reason == KEEP_ECE_CWR_CHANGE || a.reason == KEEP_WINDOW_REOPEN;
        bit<8> ws = tcp.flags & TCP_FLAG_SYN != 0 ? opts.ws_shift : (bit<8>)w.own[H_WS];
        coalesce_w.right_edge = tcp.ack_no + ((bit<32>)tcp.window << ws);
        COPY_BARRIER(coalesce_w);
        coalesce_w.eligible = coalesce_w.rewritable && (coalesce_w.foldable || coalesce_w.eligible);
        coalesce_w.foldable = coalesce_w.rewritable && coalesce_w.foldable;
    }

    // What becomes of the ACK, its counters, and the state the next ACK compares with; the record
    // and counters written back.
    action pure_ack_finish() {
        a.reason = a.reason == KEEP_NONE && a.policy_keep ? KEEP_POLICY : a.reason;
        // filter: decided at egress; here only whether it may be dropped there.
        ack.filter_candidate = params.policy == POLICY_FILTER && a.reason == KEEP_NONE;
        a.policy_thinned = a.reason == KEEP_NONE && params.policy != POLICY_FILTER;
        // Fields, each after a barrier: p4c substituted the two tests into each of their uses
        // below (the forwarded test, 12 operators, three times).
        COPY_BARRIER(a);
        a.forwarded = !a.policy_thinned && !a.absorbed && !ack.hold && !ack.filter_candidate;
        ack.drop = a.policy_thinned || ack.hold || a.absorbed;
        COPY_BARRIER(a);
        // (Absorbed and held ACKs count as thinned: seen, neither forwarded nor left to the filter;
        // a held one until it comes back released and is counted forwarded.)
        a.acks = a.acks + (1 << 31) + (a.forwarded ? 62w1 : 62w0);
        a.outcome = (a.outcome[38:8] + (a.reason == KEEP_DUP_ACK ? 31w1 : 31w0))
            ++ (a.forwarded ? a.reason : a.outcome[7:0]);
        // One of four, as a disjunction of exclusive cases (a held ACK is neither absorbed nor
        // thinned): p4c lowers nested ?: into a chain of temporaries.
        a.stat = (a.absorbed ? STAT_ACKS_ABSORBED : 0)
            | (a.policy_thinned && !a.absorbed ? STAT_ACKS_THINNED : 0)
            | (ack.hold ? STAT_ACKS_HELD : 0)
            | (!ack.drop ? STAT_ACKS_PASSED : 0);
        COPY_BARRIER(a);    // the counter's index from the field: an expression would be a temporary
        // The new half: this ACK is the previous ACK now (its window, ECE/CWR, number, timestamps
        // and first SACK block), and the last forwarded one if it is forwarded (the first ACK of
        // a half-flow, which the contract always keeps, sets it too).
        bool ack_valid = w.own & HALF_BIT(HALF_ACK_VALID) != 0;
        bool ts_known = w.own & HALF_BIT(HALF_TS_VALID) != 0;
        bool sack_present = opts.sack_blocks != 0;
        w.own = HALF_AT(tcp.window ++ tcp.flags[7:6], H_ECE_CWR_LO)
            | (tcp.flags & TCP_FLAG_SYN != 0 ? HALF_AT(WS_CLAMPED(opts.ws_shift), H_WS_LO) : w.own & M_WS)
            | w.own & (M_STATE | M_PROBE | M_DATA_END | M_RTT | M_RECOVER) | HALF_BIT(HALF_ACK_VALID)
            | (opts.ts_present ? HALF_BIT(HALF_TS_VALID) : 0)
            | (sack_present ? HALF_BIT(HALF_SACK_SEEN) : 0)
            | (!ack_valid || SEQ_GT(tcp.ack_no, w.own[H_ACK_LAST]) ? HALF_AT(tcp.ack_no, H_ACK_LAST_LO)
                : w.own & M_ACK_LAST)
            | (ack_valid ? w.own & M_ACK_BASE : HALF_AT(tcp.ack_no, H_ACK_BASE_LO))
            | (a.forwarded && (!ack_valid || SEQ_GT(tcp.ack_no, w.own[H_FWD_ACK]))
                    || !a.forwarded && !ack_valid && !ack.drop
                ? HALF_AT(tcp.ack_no, H_FWD_ACK_LO) : w.own & M_FWD_ACK)
            | (a.forwarded ? HALF_AT(now, H_FWD_AT_LO) & M_FWD_AT : w.own & M_FWD_AT)
            | (opts.ts_present && (!ts_known || SEQ_GT(opts.ts_val, w.own[H_TS_VAL]))
                ? HALF_AT(opts.ts_val, H_TS_VAL_LO) : w.own & M_TS_VAL)
            | (opts.ts_present && (!ts_known || SEQ_GT(opts.ts_ecr, w.own[H_TS_ECR]))
                ? HALF_AT(opts.ts_ecr, H_TS_ECR_LO) : w.own & M_TS_ECR)
            | (sack_present ? HALF_HIGH(opts.sack_left_0 ++ opts.sack_right_0, H_SACK_LO) : 0)
            | (sack_present && (w.own & HALF_BIT(HALF_SACK_SEEN) == 0
                                || SEQ_GT(opts.sack_right_0, w.own[H_HIGH]))
                ? HALF_HIGH(opts.sack_right_0, H_HIGH_LO) : w.own & M_HIGH);
        COPY_BARRIER(w);
        store_flow();
        stats.count(a.stat);
        acks_reg.write(w.half, a.acks);
        outcome_reg.write(w.half, a.outcome);
        port_reg.write(w.half, egress_port);
    }

    // Hold-back's count of held ACKs, for a held one only (a register read and write every pure
    // ACK otherwise), and the last ACK number forwarded for its half-flow, which travels with it.
    action count_held() {
        rare.setValid();
        ack.hold_base_ack = w.own[H_FWD_ACK];
        holdback_held.read(rare.held, w.half);
        rare.held = rare.held + 1;
        holdback_held.write(w.half, rare.held);
    }

    // A pure ACK the queue share hands to the agent (to keep, or back to it again): nothing of the
    // flow's record changes but its last seen until it comes back and is taken.
    // `counted`: STAT_ACKS_SHARED or STAT_SHARE_BOUNCED (a constant, as in take_over).
    action to_agent(bit<32> counted) {
        ack.pure_ack = true;
        ack.drop = true;
        stats.count(counted);
        store_flow();
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
        acks_reg.read(a.acks, w.half);
        outcome_reg.read(a.outcome, w.half);
        holdback_released.read(rare.held, w.half);
        share_held.read(rare.share, w.half);
        bit<16> handed = SHARE_HANDED(rare.share);
        bit<16> taken = SHARE_TAKEN(rare.share);
        rare.shared = SHARE_HOLDING(rare.share, now);
        bool pure = payload_len == 0 && tcp.flags & TCP_FLAG_ACK != 0;
        rare.newer = pure && SEQ_GT(tcp.ack_no, w.own[H_FWD_ACK]);
        rare.held_back = rare.newer && !rare.shared;
        ack.drop = pure && !rare.newer && !rare.shared;
        ack.share_kind = rare.shared ? AGENT_KIND_SHARE_TAKEN : 16w0;
        ack.share_wait_us = 0;
        // Each new value goes into the field it was read into, then is written: p4c gives most
        // register writes of an expression a temporary of their own, a metadata field bmv2 resets
        // for every packet (docs/performance.md, "What every packet pays first").
        rare.share = rare.shared ? SHARE_HELD(handed, taken + 1, now) : rare.share;
        w.own = rare.newer ? w.own & ~M_FWD | HALF_AT(tcp.ack_no, H_FWD_ACK_LO) | HALF_AT(now, H_FWD_AT_LO) & M_FWD_AT
            : w.own;
        a.acks = a.acks + (rare.shared ? (62w1 << 31) + 1 : 0) + (rare.newer && !rare.shared ? 62w1 : 0);
        a.outcome = rare.held_back ? a.outcome[38:8] ++ KEEP_RELEASED : a.outcome;
        rare.held = rare.held_back ? rare.held + 1 : rare.held;
        COPY_BARRIER(w);
        store_flow();
        share_held.write(w.half, rare.share);
        acks_reg.write(w.half, a.acks);
        outcome_reg.write(w.half, a.outcome);
        holdback_released.write(w.half, rare.held);
    }

    // A copy of the ACK as it arrived for the agent, with what it is to do with it (hold-back: the
    // hold time and the last ACK number forwarded; the queue share: how long to wait, 0 for one
    // it sent back after the policy stopped being coalesce, which is not a pure ACK here).
    action copy_to_agent() {
        hold_ms = ack.hold ? params.hold_ms : 16w0;
        agent_kind = ack.hold ? AGENT_KIND_HOLD : ack.share_kind;
        agent_arg = ack.hold ? ack.hold_base_ack : ack.share_wait_us;
        clone_preserving_field_list(CloneType.I2E, HOLDBACK_SESSION, HOLDBACK_FIELD_LIST_ID);
    }

    // No `return` below: p4c turns each one into a flag that every later block tests (one bmv2
    // step each), so the cases nest instead. Each test is a bmv2 step: the features' own tests
    // sit in the branches of the policies that use them, so that every_d, dynamic_d, tack and
    // filter pass the tests of acc, coalescing and the queue share as one (`>= POLICY_ACC`).
    apply {
        // The policy tables see the flow from its ACKs' side: data looks them up reversed.
        policy_select.apply(ipv4, ipv6, tcp, payload_len, params, w);
        // What the agent sends back is looked at under any policy: `off` too may find the agent
        // holding a flow's queue-share ACKs (the policy was coalesce when they were handed over).
        if (params.policy != POLICY_OFF || agent.isValid()) {
            if (ipv6.isValid()) {
                claim_slot6();
            } else {
                claim_slot();
            }
            if (!OURS) {
                claim_other();
                if (!rare.take_over) {
                    collision();
                } else {
                    if (ipv6.isValid()) {
                        take_over6();
                    }
                    if (rare.empty) {
                        take_over(STAT_NEW_FLOWS);
                    } else {
                        take_over(STAT_RECLAIMED);
                    }
                }
            }
            if (OURS) {
                if (agent.isValid() && params.policy != POLICY_COALESCE) {
                    released();   // hold-back (the queue share's ACKs come back as pure ACKs, below)
                    if (ack.share_kind != 0) {
                        copy_to_agent();
                    }
                } else if (tcp.flags & TCP_FLAG_ACK == 0) {
                    no_ack();
                    if (w.retransmission) {
                        count_retransmission();
                    }
                    if (params.policy == POLICY_ACC) {
                        acc_data();
                        if (payload_len != 0 && ipv4.ecn == 3) {
                            acc_signal_data.apply(acc_w.other, ACC_SIGNAL_CE, params.acc_signals, acc_w.pending);
                        }
                    }
                } else if (payload_len != 0) {
                    data_segment();
                    // Both rare: one test for the two (every test is a step).
                    if (SAMPLED || w.retransmission || params.policy == POLICY_ACC) {
                        if (SAMPLED) {
                            rtt_sample_store();
                        }
                        if (w.retransmission) {
                            start_recovery_store();
                            count_retransmission();
                        }
                        if (params.policy == POLICY_ACC) {
                            acc_data();
                            if (ipv4.ecn == 3) {
                                acc_signal_data.apply(acc_w.other, ACC_SIGNAL_CE, params.acc_signals, acc_w.pending);
                            }
                        }
                    }
                } else {
                    // ---- a pure ACK (SYN, FIN, RST, URG, PSH: kept by the contract) ----
                    // The queue share first: a fresh ACK of a flow that has its share of the queue,
                    // or whose earlier ACKs the agent holds, goes to the agent untouched (it is
                    // looked at when it comes back, in its flow's order); one coming back too early
                    // goes back to it.
                    // (Not a local: p4c would compute it in a step of its own, into a metadata field.)
                    if (params.policy == POLICY_COALESCE && queue.isValid()) {
                        rare.setValid();
                        share_agent_alive.apply(now, rare.alive_at, rare.agent_alive);
                        ack_share.apply(w.half, now, agent, ack.share_kind, ack.share_wait_us, rare);
                    }
                    if (ack.share_kind == AGENT_KIND_SHARE_KEEP || ack.share_kind == AGENT_KIND_SHARE_BOUNCED) {
                        if (ack.share_kind == AGENT_KIND_SHARE_KEEP) {
                            to_agent(STAT_ACKS_SHARED);
                        } else {
                            to_agent(STAT_SHARE_BOUNCED);
                        }
                        copy_to_agent();
                    } else {
                        pure_ack_facts();
                        if (SAMPLED) {
                            rtt_sample();
                        }
                        policy_rule.apply();
                        safety.apply(a.fact_bits, a.reason);
                        // (The policy's own rule is evaluated also for an ACK only the end-of-burst
                        // rule keeps, which hold-back may then hold instead; pure_ack_finish turns
                        // reason NONE into POLICY when the rule keeps the ACK.)
                        if (params.policy >= POLICY_ACC) {
                            // ---- acc and coalesce ----
                            if (params.policy == POLICY_ACC) {
                                acc_inputs();
                                acc_signal_ack.apply(w.half, acc_w.signal, params.acc_signals, acc_w.pending);
                                acc_delay_factor.apply(w.half, now, params, acc_w);
                                rule_acc();
                            }
                            // Coalescing: fold the ACK into its flow's waiting ACK, or queue it (as the
                            // new waiting ACK if it may be rewritten later). acc thins by its d rule first
                            // (reason NONE and no policy keep: dropped) and coalesces what that rule keeps.
                            if (params.policy == POLICY_COALESCE || (queue.isValid()
                                    && (a.reason != KEEP_NONE || a.policy_keep))) {
                                coalesce_inputs();
                                coalesce.apply(w.half, now, tcp, opts,
                                               queue, a.absorbed, ack.coalesce_serial, coalesce_w);
                                if (a.reason == KEEP_NONE && !a.absorbed) {
                                    a.reason = KEEP_POLICY;   // nothing waiting to fold it into: queued
                                }
                            }
                            // Hold-back (acc; see below).
                            if (!a.absorbed && a.reason == KEEP_ACKS_ALL_DATA && !a.policy_keep && params.hold_ms != 0
                                    && params.policy == POLICY_ACC) {
                                rare.setValid();
                                holdback_agent_alive.apply(now, rare.alive_at, ack.hold);
                            }
                            pure_ack_finish();
                            if (ack.hold) {
                                count_held();
                            }
                            if (params.policy == POLICY_COALESCE && queue.isValid() && !ack.drop && !queue.full) {
                                // Queued: the flow's newest; an ACK the agent sent back is answered with
                                // the time until the flow has room for its next.
                                ack_share_queued.apply(w.half, now, queue.departure_us, ack.share_wait_us, rare);
                            }
                            if (ack.hold || ack.share_kind != 0) {
                                copy_to_agent();
                            }
                        } else if (params.policy == POLICY_FILTER) {
                            // ---- filter: the newest ACK that enters the queue, for AckFilterDequeue ----
                            pure_ack_finish();
                            ack_filter_enqueue.apply(w.half, tcp, opts, ack);
                            if (ack.filter_candidate) {
                                count_left_to_filter();
                            }
                        } else if (a.reason == KEEP_ACKS_ALL_DATA && !a.policy_keep && params.hold_ms != 0) {
                            // ---- every_d, dynamic_d, tack: hold-back ----
                            // An ACK the policy would thin and only the end-of-burst rule keeps goes to
                            // the agent, which sends it back after hold_ms unless superseded.
                            rare.setValid();
                            holdback_agent_alive.apply(now, rare.alive_at, ack.hold);
                            pure_ack_finish();
                            if (ack.hold) {
                                count_held();
                                copy_to_agent();
                            }
                        } else {
                            pure_ack_finish();
                        }
                    }
                }
            }
        }
    }
}

#endif
