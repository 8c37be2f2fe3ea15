// ECN marking at egress: CE on ECT(0)/ECT(1) packets whose egress queue was deeper than the port's
// threshold K when they were enqueued, or, between two thresholds, with a probability that rises
// linearly to p_max (RED-like). Not-ECT packets are never marked; CE stays CE. Thresholds per port
// come from the control plane (`ackwise port ecn`); a port without an entry never marks. IPv4's ECN
// field, or IPv6's (the traffic class's low two bits): the caller applies it to IP packets only, and
// for IPv6 the parser has copied the field into the invalid IPv4 header's (parser.p4), which is read
// here; a mark is written into both (the invalid one is not emitted).
#ifndef ACKWISE_ECN_MARKING_P4
#define ACKWISE_ECN_MARKING_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// EcnMarking's working fields: ecn_work_h, in ack_switch_work.p4 (ack_switch's metadata).

// What it found in w.queue_above_k and w.marked (`w`: the egress working header, ack_switch_work.p4).
control EcnMarking(inout ipv4_h ipv4, inout ipv6_h ipv6, in port_t egress_port, in bit<19> enq_qdepth, inout ecn_work_h w) {
    @name(".ecn.marks") counter(PORTS, CounterType.packets) marks;


    @name(".ecn.threshold")
    action threshold(bit<19> k) {
        w.k_min = k;
        w.k_max = k;
        w.configured = true;
    }

    @name(".ecn.red")
    action red(bit<19> k_min_pkts, bit<19> k_max_pkts, bit<8> p_max) {
        w.k_min = k_min_pkts;
        w.k_max = k_max_pkts;
        w.p_max_pct = p_max;
        w.configured = true;
    }

    @name(".ecn.port_threshold")
    table port_threshold {
        key = { egress_port: exact @name("port"); }
        actions = { threshold; red; @defaultonly NoAction; }
        const default_action = NoAction();
        size = ECN_PORT_TABLE_SIZE;
    }

    // The values the extern calls below take, computed in an action before theirs: an expression
    // as an extern's argument is a temporary, a metadata field every packet pays for.
    action start() {
        w.setValid();
        w.k_min = 0;
        w.k_max = 0;
        w.p_max_pct = 100;
        w.configured = false;
        w.queue_above_k = false;
        w.marked = false;
    }

    action compare() {
        w.queue_above_k = enq_qdepth > w.k_min;
        w.mark = enq_qdepth > w.k_max;
        w.random_max = (bit<32>)(w.k_max - w.k_min) * 100 - 1;
        w.port_index = (bit<32>)egress_port;
    }

    action draw() {
        // P(mark) = p_max * (q - k_min) / (k_max - k_min), without a division.
        random(w.r, 0, w.random_max);
        w.mark = w.r < (bit<32>)w.p_max_pct * (bit<32>)(enq_qdepth - w.k_min);
    }

    // Both fields: the invalid header's is not emitted (a test would be a step).
    action mark_ce() {
        ipv4.ecn = 3;
        ipv6.ecn = 3;
        w.marked = true;
        marks.count(w.port_index);
    }

    apply {
        start();
        port_threshold.apply();
        if (w.configured) {
            compare();
            if (!w.mark && w.queue_above_k) {
                draw();
            }
            if (w.mark && (ipv4.ecn == 1 || ipv4.ecn == 2)) {
                mark_ce();
            }
        }
    }
}

#endif
