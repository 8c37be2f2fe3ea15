// Per-flow ACK thinning at ingress: flow records, the facts the safety contract needs, and the
// policies every_d, dynamic_d, tack and acc (with AccDelayFactor). For `filter` it only marks
// candidates; AckFilterDequeue drops them at egress. For `coalesce` (and `acc` on a queue the
// program models) it folds ACKs into the flow's waiting ACK (AckCoalesce).
//
// Records live in registers. A slot (FLOW_SLOTS) holds the flow's key, so a flow whose hash lands
// on another live flow's slot is left untouched and counted; idle or closed records are taken
// over. Each slot has two half-flow records (index slot * 2 + direction), one per sender: the
// data it sent, and the ACKs it sent about the other side's data.
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

// Bits of the half_state register.
const bit<8> HALF_DATA_VALID = 0x01;    // data_end holds something
const bit<8> HALF_ACK_VALID = 0x02;     // ack_last, window_last, ... hold the previous ACK
const bit<8> HALF_PROBE = 0x04;         // an RTT probe is waiting for its ACK
const bit<8> HALF_TS_VALID = 0x08;      // ts_val_max / ts_ecr_max are set
const bit<8> HALF_SACK_SEEN = 0x10;     // sack_high is set

control AckThinning(in ipv4_h ipv4, in tcp_h tcp, in tcp_options_meta_t opts, in bit<16> payload_len,
                    in time_us_t now, in queue_view_t queue, in bool from_agent, in bool agent_alive,
                    out bool drop, inout ack_policy_params_t params, out ack_meta_t ack) {
    FlowKey() flow_key;
    AckPolicySelect() policy_select;
    AckSafety() safety;
    AccSignal() acc_signal_data;
    AccSignal() acc_signal_ack;
    AccDelayFactor() acc_delay_factor;
    AckCoalesce() coalesce;

    @name(".ack_thinning.stats") counter(THINNING_STATS, CounterType.packets) stats;
    @name(".ack_thinning.config") register<bit<48>>(1) config;   // [0]: reclaim idle (us), 0 = default

    // Per slot.
    @name(".ack_thinning.key_addrs") register<bit<64>>(FLOW_SLOTS) key_addrs_reg;
    @name(".ack_thinning.key_ports") register<bit<32>>(FLOW_SLOTS) key_ports_reg;
    @name(".ack_thinning.last_seen_us") register<bit<48>>(FLOW_SLOTS) last_seen_reg;
    @name(".ack_thinning.closed") register<bit<8>>(FLOW_SLOTS) closed_reg;

    // Per half-flow: state.
    @name(".ack_thinning.half_state") register<bit<8>>(HALF_FLOWS) half_state_reg;
    @name(".ack_thinning.data_end") register<bit<32>>(HALF_FLOWS) data_end_reg;
    @name(".ack_thinning.ws_shift") register<bit<8>>(HALF_FLOWS) ws_shift_reg;
    @name(".ack_thinning.ack_last") register<bit<32>>(HALF_FLOWS) ack_last_reg;
    @name(".ack_thinning.window_last") register<bit<16>>(HALF_FLOWS) window_last_reg;
    @name(".ack_thinning.ece_cwr_last") register<bit<8>>(HALF_FLOWS) ece_cwr_last_reg;
    @name(".ack_thinning.ack_base") register<bit<32>>(HALF_FLOWS) ack_base_reg;
    @name(".ack_thinning.ack_forwarded") register<bit<32>>(HALF_FLOWS) ack_fwd_reg;
    @name(".ack_thinning.forwarded_at_us") register<bit<48>>(HALF_FLOWS) fwd_time_reg;
    @name(".ack_thinning.ts_val_max") register<bit<32>>(HALF_FLOWS) ts_val_max_reg;
    @name(".ack_thinning.ts_ecr_max") register<bit<32>>(HALF_FLOWS) ts_ecr_max_reg;
    @name(".ack_thinning.sack_left") register<bit<32>>(HALF_FLOWS) sack_left_reg;
    @name(".ack_thinning.sack_right") register<bit<32>>(HALF_FLOWS) sack_right_reg;
    @name(".ack_thinning.sack_high") register<bit<32>>(HALF_FLOWS) sack_high_reg;
    @name(".ack_thinning.probe_seq") register<bit<32>>(HALF_FLOWS) probe_seq_reg;
    @name(".ack_thinning.probe_at_us") register<bit<48>>(HALF_FLOWS) probe_time_reg;
    @name(".ack_thinning.rtt_min_us") register<bit<32>>(HALF_FLOWS) rtt_min_reg;
    @name(".ack_thinning.rtt_min_at_us") register<bit<48>>(HALF_FLOWS) rtt_min_time_reg;
    // Per half-flow: what the operator sees in `ackwise flows`.
    @name(".ack_thinning.acks_seen") register<bit<32>>(HALF_FLOWS) acks_seen_reg;
    @name(".ack_thinning.acks_forwarded") register<bit<32>>(HALF_FLOWS) acks_forwarded_reg;
    @name(".ack_thinning.acks_thinned") register<bit<32>>(HALF_FLOWS) acks_thinned_reg;
    @name(".ack_thinning.data_segments") register<bit<32>>(HALF_FLOWS) data_segments_reg;
    @name(".ack_thinning.last_keep_reason") register<bit<8>>(HALF_FLOWS) keep_reason_reg;
    @name(".ack_thinning.retransmissions") register<bit<32>>(HALF_FLOWS) retransmissions_reg;
    @name(".ack_thinning.dup_acks") register<bit<32>>(HALF_FLOWS) dup_acks_reg;

    action reset_half(bit<32> h) {
        half_state_reg.write(h, 0);
        ws_shift_reg.write(h, 0);
        rtt_min_reg.write(h, 0);
        rtt_min_time_reg.write(h, 0);
        acks_seen_reg.write(h, 0);
        acks_forwarded_reg.write(h, 0);
        acks_thinned_reg.write(h, 0);
        data_segments_reg.write(h, 0);
        keep_reason_reg.write(h, 0);
        retransmissions_reg.write(h, 0);
        dup_acks_reg.write(h, 0);
    }

    apply {
        drop = false;
        ack = { 0, false, false, false, 0, 0, false, 0 };

        bool has_data = payload_len != 0;
        // The policy table sees the flow from its ACKs' side: data looks it up reversed.
        ipv4_addr_t ack_src_addr = ipv4.src_addr;
        ipv4_addr_t ack_dst_addr = ipv4.dst_addr;
        bit<16> ack_src_port = tcp.src_port;
        bit<16> ack_dst_port = tcp.dst_port;
        if (has_data) {
            ack_src_addr = ipv4.dst_addr;
            ack_dst_addr = ipv4.src_addr;
            ack_src_port = tcp.dst_port;
            ack_dst_port = tcp.src_port;
        }
        policy_select.apply(ack_src_addr, ack_dst_addr, ack_src_port, ack_dst_port, params);

        if (params.policy != POLICY_OFF) {
            bit<64> key_addrs;
            bit<32> key_ports;
            bit<32> slot;
            bit<1> direction;
            flow_key.apply(ipv4, tcp, key_addrs, key_ports, slot, direction);
            bit<32> half = slot << 1 | (bit<32>)direction;
            bit<32> other = slot << 1 | (bit<32>)(direction ^ 1);
            ack.half = half;

            // ---- the flow record: ours, taken over, or someone else's ----
            bit<64> stored_addrs;
            bit<32> stored_ports;
            time_us_t last_seen;
            bit<8> closed;
            key_addrs_reg.read(stored_addrs, slot);
            key_ports_reg.read(stored_ports, slot);
            last_seen_reg.read(last_seen, slot);
            closed_reg.read(closed, slot);
            bit<48> reclaim_idle;
            config.read(reclaim_idle, 0);
            if (reclaim_idle == 0) {
                reclaim_idle = RECLAIM_IDLE_DEFAULT_US;
            }
            bool owned = stored_addrs == key_addrs && stored_ports == key_ports;
            bool fresh = false;
            if (!owned) {
                bool empty = stored_addrs == 0 && stored_ports == 0;
                if (empty || closed != 0 || now - last_seen > reclaim_idle) {
                    stats.count(empty ? STAT_NEW_FLOWS : STAT_RECLAIMED);
                    key_addrs_reg.write(slot, key_addrs);
                    key_ports_reg.write(slot, key_ports);
                    closed_reg.write(slot, 0);
                    reset_half(half);
                    reset_half(other);
                    owned = true;
                    fresh = true;
                } else {
                    stats.count(STAT_COLLISIONS);
                }
            }

            if (owned && from_agent) {
                // A held ACK the hold-back agent sent back: forwarded unless an ACK of the flow
                // that acknowledges at least as much has been forwarded since (it was superseded).
                // Its state was recorded when it first arrived.
                if (payload_len == 0 && tcp.flags & TCP_FLAG_ACK != 0) {
                    bit<32> ack_fwd;
                    ack_fwd_reg.read(ack_fwd, half);
                    if (seq_gt(tcp.ack_no, ack_fwd)) {
                        ack_fwd_reg.write(half, tcp.ack_no);
                        fwd_time_reg.write(half, now);
                        keep_reason_reg.write(half, KEEP_RELEASED);
                        bit<32> forwarded;
                        acks_forwarded_reg.read(forwarded, half);
                        acks_forwarded_reg.write(half, forwarded + 1);
                        bit<32> released;
                        holdback_released.read(released, half);
                        holdback_released.write(half, released + 1);
                        bit<32> thinned;
                        acks_thinned_reg.read(thinned, half);
                        acks_thinned_reg.write(half, thinned - 1);
                    } else {
                        drop = true;
                    }
                }
            } else if (owned) {
                ack.tracked = true;
                bool idle = !fresh && params.idle_us != 0 && now - last_seen > (bit<48>)params.idle_us;
                last_seen_reg.write(slot, now);
                if (tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
                    closed_reg.write(slot, 1);
                }
                bit<8> state;
                bit<8> other_state;
                half_state_reg.read(state, half);
                half_state_reg.read(other_state, other);

                if (tcp.flags & TCP_FLAG_SYN != 0) {
                    // Window scale applies to this sender's windows from the SYN on.
                    ws_shift_reg.write(half, opts.ws_present ? opts.ws_shift : 8w0);
                }

                // ---- data this side sends ----
                if (has_data) {
                    bit<32> end = tcp.seq_no + (bit<32>)payload_len;
                    bit<32> data_end;
                    data_end_reg.read(data_end, half);
                    bit<32> segments;
                    data_segments_reg.read(segments, half);
                    data_segments_reg.write(half, segments + 1);
                    bool retransmission = state & HALF_DATA_VALID != 0 && seq_leq(end, data_end);
                    if (state & HALF_DATA_VALID == 0 || seq_gt(end, data_end)) {
                        data_end_reg.write(half, end);
                    }
                    state = state | HALF_DATA_VALID;
                    if (ipv4.ecn == 3 && params.policy == POLICY_ACC) {
                        acc_signal_data.apply(other, ACC_SIGNAL_CE, params.acc_signals);
                    }
                    if (retransmission) {
                        state = state & ~HALF_PROBE;    // Karn: no RTT sample across a retransmission
                        bit<32> retransmissions;
                        retransmissions_reg.read(retransmissions, half);
                        retransmissions_reg.write(half, retransmissions + 1);
                    } else if (state & HALF_PROBE == 0) {
                        probe_seq_reg.write(half, end);
                        probe_time_reg.write(half, now);
                        state = state | HALF_PROBE;
                    }
                }

                // ---- ACKs this side sends, about the other side's data ----
                if (tcp.flags & TCP_FLAG_ACK != 0) {
                    // An RTT sample: the other side's probe is acknowledged.
                    if (other_state & HALF_PROBE != 0) {
                        bit<32> probe_seq;
                        probe_seq_reg.read(probe_seq, other);
                        if (seq_geq(tcp.ack_no, probe_seq)) {
                            bit<48> probe_time;
                            probe_time_reg.read(probe_time, other);
                            bit<32> sample = (bit<32>)(now - probe_time);
                            bit<32> rtt_min;
                            bit<48> rtt_min_time;
                            rtt_min_reg.read(rtt_min, other);
                            rtt_min_time_reg.read(rtt_min_time, other);
                            if (rtt_min == 0 || sample <= rtt_min || now - rtt_min_time > RTT_MIN_WINDOW_US) {
                                rtt_min_reg.write(other, sample);
                                rtt_min_time_reg.write(other, now);
                            }
                            half_state_reg.write(other, other_state & ~HALF_PROBE);
                        }
                    }

                    bit<32> ack_last;
                    bit<16> window_last;
                    bit<8> ece_cwr_last;
                    bit<32> ts_val_max;
                    bit<32> ts_ecr_max;
                    bit<32> sack_left;
                    bit<32> sack_right;
                    bit<32> sack_high;
                    bit<8> ws_shift;
                    ack_last_reg.read(ack_last, half);
                    window_last_reg.read(window_last, half);
                    ece_cwr_last_reg.read(ece_cwr_last, half);
                    ts_val_max_reg.read(ts_val_max, half);
                    ts_ecr_max_reg.read(ts_ecr_max, half);
                    sack_left_reg.read(sack_left, half);
                    sack_right_reg.read(sack_right, half);
                    sack_high_reg.read(sack_high, half);
                    ws_shift_reg.read(ws_shift, half);
                    bit<8> ece_cwr = tcp.flags & (TCP_FLAG_ECE | TCP_FLAG_CWR);
                    bool ack_valid = state & HALF_ACK_VALID != 0;

                    if (payload_len == 0) {
                        // ---- an ACK without data (SYN, FIN, RST, URG, PSH: kept by the contract) ----
                        stats.count(STAT_ACKS_SEEN);
                        ack.pure_ack = true;
                        bit<32> seen;
                        acks_seen_reg.read(seen, half);
                        acks_seen_reg.write(half, seen + 1);

                        bit<32> data_end_other;
                        data_end_reg.read(data_end_other, other);
                        bit<32> mss = (bit<32>)params.mss;
                        bit<32> window_bytes = (bit<32>)tcp.window << ws_shift;
                        bit<32> window_last_bytes = (bit<32>)window_last << ws_shift;
                        bool sack = opts.sack_blocks != 0;

                        ack_facts_t facts;
                        facts.flags_keep = tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST | TCP_FLAG_URG
                            | TCP_FLAG_PSH) != 0;
                        facts.has_payload = false;
                        facts.first_ack = !ack_valid;
                        facts.window_update = ack_valid && tcp.ack_no == ack_last && tcp.window != window_last;
                        facts.dup_ack = ack_valid && !seq_gt(tcp.ack_no, ack_last);
                        facts.dsack = sack && (seq_lt(opts.sack_left_0, tcp.ack_no)
                            || (opts.sack_blocks >= 2 && seq_geq(opts.sack_left_0, opts.sack_left_1)
                                && seq_leq(opts.sack_right_0, opts.sack_right_1)));
                        facts.sack_news = sack && (state & HALF_SACK_SEEN == 0 || seq_gt(opts.sack_right_0, sack_high)
                            || opts.sack_left_0 != sack_left || opts.sack_right_0 != sack_right);
                        facts.ece_cwr_change = ack_valid && ece_cwr != ece_cwr_last;
                        facts.window_reopen = ack_valid && window_last_bytes < mss && window_bytes >= mss;
                        facts.unknown_option = opts.unknown_present;
                        facts.ts_reordered = opts.ts_present && state & HALF_TS_VALID != 0
                            && (seq_lt(opts.ts_val, ts_val_max) || seq_lt(opts.ts_ecr, ts_ecr_max));
                        facts.idle = idle;
                        // With `filter`, an ACK is dropped only behind a newer one that acknowledges
                        // at least as much, and with `coalesce` its state leaves inside the waiting
                        // ACK: the end of a burst is never at stake.
                        facts.acks_all_data = params.policy != POLICY_FILTER && params.policy != POLICY_COALESCE
                            && (other_state & HALF_DATA_VALID == 0 || seq_geq(tcp.ack_no, data_end_other));
                        keep_reason_t reason;
                        safety.apply(facts, reason);
                        if (reason == KEEP_DUP_ACK) {
                            bit<32> dup_acks;
                            dup_acks_reg.read(dup_acks, half);
                            dup_acks_reg.write(half, dup_acks + 1);
                        }

                        bit<32> ack_fwd;
                        ack_fwd_reg.read(ack_fwd, half);
                        bit<32> acked_since_fwd = tcp.ack_no - ack_fwd;

                        bit<32> acc_d = 1;
                        if (params.policy == POLICY_ACC) {
                            bit<8> signal = 0;
                            if (ipv4.ecn == 3) {
                                signal = signal | ACC_SIGNAL_CE;
                            }
                            if (tcp.flags & TCP_FLAG_ECE != 0) {
                                signal = signal | ACC_SIGNAL_ECE;
                            }
                            acc_signal_ack.apply(half, signal, params.acc_signals);
                            bit<32> rtt_min = params.rtt_min_us;
                            if (rtt_min == 0) {
                                rtt_min_reg.read(rtt_min, other);
                            }
                            // The flight: data the switch saw sent beyond the highest ACK.
                            bit<32> highest_ack = ack_valid && seq_gt(ack_last, tcp.ack_no) ? ack_last : tcp.ack_no;
                            bit<32> flight = 0;
                            if (other_state & HALF_DATA_VALID != 0 && seq_gt(data_end_other, highest_ack)) {
                                flight = data_end_other - highest_ack;
                            }
                            acc_delay_factor.apply(half, now, rtt_min, flight, mss, params, acc_d);
                        }
                        // The policy's own rule: reached its threshold? Evaluated also for an ACK only
                        // the end-of-burst rule keeps, which hold-back may then hold instead.
                        bool policy_keep = false;
                        if (reason == KEEP_NONE || reason == KEEP_ACKS_ALL_DATA) {
                            if (params.policy == POLICY_EVERY_D) {
                                if (acked_since_fwd >= (bit<32>)params.d * mss) {
                                    policy_keep = true;
                                }
                            } else if (params.policy == POLICY_DYNAMIC_D) {
                                bit<32> ack_base;
                                ack_base_reg.read(ack_base, half);
                                bit<32> acked_total = tcp.ack_no - ack_base;
                                bit<32> d = 4;
                                if (acked_total < (bit<32>)params.l1 * mss) {
                                    d = 1;
                                } else if (acked_total < (bit<32>)params.l2 * mss) {
                                    d = 2;
                                } else if (acked_total < (bit<32>)params.l3 * mss) {
                                    d = 3;
                                }
                                if (acked_since_fwd >= d * mss) {
                                    policy_keep = true;
                                }
                            } else if (params.policy == POLICY_ACC) {
                                if (acked_since_fwd >= acc_d * mss) {
                                    policy_keep = true;
                                }
                            } else if (params.policy == POLICY_TACK) {
                                bit<32> rtt_min = params.rtt_min_us;
                                if (rtt_min == 0) {
                                    rtt_min_reg.read(rtt_min, other);
                                }
                                bit<48> since_fwd;
                                bit<48> fwd_time;
                                fwd_time_reg.read(fwd_time, half);
                                since_fwd = now - fwd_time;
                                if (acked_since_fwd >= (bit<32>)params.tack_l * mss
                                        && since_fwd * (bit<48>)params.tack_beta >= (bit<48>)rtt_min) {
                                    policy_keep = true;
                                }
                            }
                        }
                        if (reason == KEEP_NONE && policy_keep) {
                            reason = KEEP_POLICY;
                        }

                        // Coalescing: fold the ACK into its flow's waiting ACK, or queue it (as the
                        // new waiting ACK if it may be rewritten later). acc thins by its d rule
                        // first (reason NONE: dropped below) and coalesces what that rule keeps.
                        bool absorbed = false;
                        bool coalescing = params.policy == POLICY_COALESCE
                            || (params.policy == POLICY_ACC && queue.modelled && reason != KEEP_NONE);
                        if (coalescing) {
                            // Never rewritten or folded: SACK blocks (a newer ACK number under an old
                            // block would read as DSACK) and options the switch does not interpret.
                            bool plain = opts.sack_blocks == 0 && !opts.unknown_present;
                            bool foldable = reason == KEEP_NONE || reason == KEEP_POLICY
                                || reason == KEEP_ACKS_ALL_DATA;
                            bool eligible = plain && (foldable || reason == KEEP_FIRST_ACK || reason == KEEP_IDLE
                                || reason == KEEP_ECE_CWR_CHANGE || reason == KEEP_WINDOW_REOPEN);
                            bit<32> right_edge = tcp.ack_no + window_bytes;
                            coalesce.apply(half, now, tcp, opts, right_edge, plain && foldable, eligible, queue,
                                           absorbed, ack.coalesce_serial);
                            if (reason == KEEP_NONE && !absorbed) {
                                reason = KEEP_POLICY;   // nothing waiting to fold it into: queued
                            }
                        }

                        // Hold-back: an ACK the policy would thin and only the end-of-burst rule keeps
                        // goes to the agent, which sends it back after hold_ms unless superseded.
                        bool thinning_policy = params.policy == POLICY_EVERY_D || params.policy == POLICY_DYNAMIC_D
                            || params.policy == POLICY_TACK || params.policy == POLICY_ACC;
                        ack.hold = !absorbed && reason == KEEP_ACKS_ALL_DATA && !policy_keep && thinning_policy
                            && params.hold_ms != 0 && agent_alive;
                        if (ack.hold) {
                            drop = true;
                            ack.hold_base_ack = ack_fwd;
                            stats.count(STAT_ACKS_HELD);
                            bit<32> held;
                            holdback_held.read(held, half);
                            holdback_held.write(half, held + 1);
                            // Counted thinned until it comes back released (then forwarded).
                            bit<32> thinned;
                            acks_thinned_reg.read(thinned, half);
                            acks_thinned_reg.write(half, thinned + 1);
                        } else if (params.policy == POLICY_FILTER) {
                            // Decided at egress; here only whether it may be dropped there.
                            ack.filter_candidate = reason == KEEP_NONE;
                            if (!ack.filter_candidate) {
                                keep_reason_reg.write(half, reason);
                                bit<32> forwarded;
                                acks_forwarded_reg.read(forwarded, half);
                                acks_forwarded_reg.write(half, forwarded + 1);
                            }
                        } else if (reason == KEEP_NONE || absorbed) {
                            drop = true;
                            stats.count(absorbed ? STAT_ACKS_ABSORBED : STAT_ACKS_THINNED);
                            bit<32> thinned;
                            acks_thinned_reg.read(thinned, half);
                            acks_thinned_reg.write(half, thinned + 1);
                        } else {
                            keep_reason_reg.write(half, reason);
                            bit<32> forwarded;
                            acks_forwarded_reg.read(forwarded, half);
                            acks_forwarded_reg.write(half, forwarded + 1);
                            if (!ack_valid || seq_gt(tcp.ack_no, ack_fwd)) {
                                ack_fwd_reg.write(half, tcp.ack_no);
                            }
                            fwd_time_reg.write(half, now);
                        }

                        if (sack) {
                            sack_left_reg.write(half, opts.sack_left_0);
                            sack_right_reg.write(half, opts.sack_right_0);
                            if (state & HALF_SACK_SEEN == 0 || seq_gt(opts.sack_right_0, sack_high)) {
                                sack_high_reg.write(half, opts.sack_right_0);
                            }
                            state = state | HALF_SACK_SEEN;
                        } else {
                            sack_left_reg.write(half, 0);
                            sack_right_reg.write(half, 0);
                        }
                    }

                    // Every ACK-bearing segment updates what "the previous ACK" means.
                    if (!ack_valid) {
                        ack_base_reg.write(half, tcp.ack_no);
                        if (!drop) {
                            ack_fwd_reg.write(half, tcp.ack_no);
                        }
                    }
                    if (!ack_valid || seq_gt(tcp.ack_no, ack_last)) {
                        ack_last_reg.write(half, tcp.ack_no);
                    }
                    window_last_reg.write(half, tcp.window);
                    ece_cwr_last_reg.write(half, ece_cwr);
                    if (opts.ts_present) {
                        if (state & HALF_TS_VALID == 0 || seq_gt(opts.ts_val, ts_val_max)) {
                            ts_val_max_reg.write(half, opts.ts_val);
                        }
                        if (state & HALF_TS_VALID == 0 || seq_gt(opts.ts_ecr, ts_ecr_max)) {
                            ts_ecr_max_reg.write(half, opts.ts_ecr);
                        }
                        state = state | HALF_TS_VALID;
                    }
                    state = state | HALF_ACK_VALID;
                }
                half_state_reg.write(half, state);
            }
        }
    }
}

#endif
