// ECN-driven ACK Congestion Control (RFC 3449 section 5.2.2, moved into the switch): a per-flow
// delay factor d that doubles on a congestion signal, at most once per RTTmin, and shrinks by one
// for each RTTmin without one. AckThinning then forwards at most one pure ACK per d segments
// acknowledged, under the unchanged safety contract.
//
// Signals reach a flow's ACK half-flow in the acc.pending register: from ingress (CE on the flow's
// data or ACKs, ECE on its ACKs) and from egress (CE this switch put on the flow's data, the flow's
// ACK entering a queue deeper than its port's K). Both controls share it, hence one file.
#ifndef ACKWISE_ACC_P4
#define ACKWISE_ACC_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

@name(".acc.pending") register<bit<8>>(HALF_FLOWS) acc_pending;

// Records a signal for the ACKs of `ack_half` (signals the flow does not react to are ignored).
// `pending`: a field of the caller's working header to read the half's signals into (a local would
// be a metadata field every packet pays for).
control AccSignal(in bit<32> ack_half, in bit<8> signal, in bit<8> reacts_to, inout bit<8> pending) {
    apply {
        if (signal & reacts_to != 0) {
            acc_pending.read(pending, ack_half);
            pending = pending | (signal & reacts_to);   // into the field read: see ack_thinning.p4, released()
            acc_pending.write(ack_half, pending);
        }
    }
}

// AccDelayFactor's working fields: acc_work_h, in ack_switch_work.p4 (ack_switch's metadata).

// Its inputs (RTTmin, configured or measured, 0 if none yet; the flight) in w.rtt and w.flight,
// and d out in w.delay: acc's working header (ack_switch_work.p4), valid already.
control AccDelayFactor(in bit<32> half, in time_us_t now, in ack_policy_params_t params, inout acc_work_h w) {
    @name(".acc.d") register<bit<8>>(HALF_FLOWS) d_reg;
    @name(".acc.d_max") register<bit<8>>(HALF_FLOWS) d_max_reg;
    @name(".acc.changed_at_us") register<bit<48>>(HALF_FLOWS) changed_at_reg;
    @name(".acc.signals") register<bit<32>>(HALF_FLOWS) signals_reg;

    // The ?: below in actions: in an apply block p4c turns each into a branch with a temporary,
    // a metadata field every packet pays for.
    // (With what d_max's search below starts from: one step for the two.)
    action start() {
        d_reg.read(w.delay, half);
        changed_at_reg.read(w.changed_at, half);
        acc_pending.read(w.pending, half);
        w.delay = w.delay == 0 ? 8w1 : w.delay;
        w.rtt = w.rtt == 0 ? (bit<48>)ACC_RTT_DEFAULT_US : w.rtt;
        // changed_at 0: d never changed (the switch's clock starts at 0 when it starts).
        w.rtt_passed = (bit<8>)(bit<1>)(w.changed_at == 0 || now - w.changed_at >= w.rtt);
        w.cap = params.acc_d_cap > ACC_D_CAP_MAX ? ACC_D_CAP_MAX : params.acc_d_cap;
        w.d_max = 0;
        w.two_mss = (bit<32>)params.mss << 1;
    }

    // d_max at least 1, d at most d_max, both written back: values in one step (each test in the
    // apply block would be a step of its own, each body another), each after a barrier.
    action finish() {
        w.d_max = w.d_max == 0 ? 8w1 : w.d_max;
        COPY_BARRIER(w);
        w.delay = w.delay > w.d_max ? w.d_max : w.delay;
        COPY_BARRIER(w);
        d_reg.write(half, w.delay);
        d_max_reg.write(half, w.d_max);
    }

    apply {
        start();

        if (w.pending != 0) {
            // Signals within an RTT of the last change count once.
            acc_pending.write(half, 0);
            if (w.rtt_passed == 1) {
                w.delay = w.delay << 1;
                changed_at_reg.write(half, now);
                signals_reg.read(w.signals, half);
                w.signals = w.signals + 1;
                signals_reg.write(half, w.signals);
            }
        } else if (w.rtt_passed == 1 && w.delay > 1) {
            w.delay = w.delay - 1;
            // One RTT at a time, so that ACKs after a long quiet spell keep stepping d down.
            w.changed_at = w.changed_at + w.rtt;
            changed_at_reg.write(half, w.changed_at);
        }

        // d_max = min(cap, max(1, flight / 2 segments)): the largest x <= cap with 2 x MSS <= flight.
        if (w.d_max + 64 <= w.cap && (bit<32>)(w.d_max + 64) * w.two_mss <= w.flight) { w.d_max = w.d_max + 64; }
        if (w.d_max + 32 <= w.cap && (bit<32>)(w.d_max + 32) * w.two_mss <= w.flight) { w.d_max = w.d_max + 32; }
        if (w.d_max + 16 <= w.cap && (bit<32>)(w.d_max + 16) * w.two_mss <= w.flight) { w.d_max = w.d_max + 16; }
        if (w.d_max + 8 <= w.cap && (bit<32>)(w.d_max + 8) * w.two_mss <= w.flight) { w.d_max = w.d_max + 8; }
        if (w.d_max + 4 <= w.cap && (bit<32>)(w.d_max + 4) * w.two_mss <= w.flight) { w.d_max = w.d_max + 4; }
        if (w.d_max + 2 <= w.cap && (bit<32>)(w.d_max + 2) * w.two_mss <= w.flight) { w.d_max = w.d_max + 2; }
        if (w.d_max + 1 <= w.cap && (bit<32>)(w.d_max + 1) * w.two_mss <= w.flight) { w.d_max = w.d_max + 1; }
        finish();
    }
}

#endif
