// ECN marking at egress: CE on ECT(0)/ECT(1) packets whose egress queue was deeper than the port's
// threshold K when they were enqueued, or, between two thresholds, with a probability that rises
// linearly to p_max (RED-like). Not-ECT packets are never marked; CE stays CE. Thresholds per port
// come from the control plane (`ackwise port ecn`); a port without an entry never marks.
#ifndef ACKWISE_ECN_MARKING_P4
#define ACKWISE_ECN_MARKING_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

control EcnMarking(inout ipv4_h ipv4, in port_t egress_port, in bit<19> enq_qdepth,
                   out bool queue_above_k, out bool marked) {
    @name(".ecn.marks") counter(PORTS, CounterType.packets) marks;

    bit<19> k_min = 0;
    bit<19> k_max = 0;
    bit<8> p_max_pct = 100;
    bool configured = false;

    @name(".ecn.threshold")
    action threshold(bit<19> k) {
        k_min = k;
        k_max = k;
        configured = true;
    }

    @name(".ecn.red")
    action red(bit<19> k_min_pkts, bit<19> k_max_pkts, bit<8> p_max) {
        k_min = k_min_pkts;
        k_max = k_max_pkts;
        p_max_pct = p_max;
        configured = true;
    }

    @name(".ecn.port_threshold")
    table port_threshold {
        key = { egress_port: exact @name("port"); }
        actions = { threshold; red; @defaultonly NoAction; }
        const default_action = NoAction();
        size = ECN_PORT_TABLE_SIZE;
    }

    apply {
        queue_above_k = false;
        marked = false;
        port_threshold.apply();
        if (configured) {
            queue_above_k = enq_qdepth > k_min;
            bool mark = enq_qdepth > k_max;
            if (!mark && queue_above_k) {
                // P(mark) = p_max * (q - k_min) / (k_max - k_min), without a division.
                bit<32> r;
                random(r, 0, (bit<32>)(k_max - k_min) * 100 - 1);
                mark = r < (bit<32>)p_max_pct * (bit<32>)(enq_qdepth - k_min);
            }
            if (mark && ipv4.isValid() && (ipv4.ecn == 1 || ipv4.ecn == 2)) {
                ipv4.ecn = 3;
                marked = true;
                marks.count((bit<32>)egress_port);
            }
        }
    }
}

#endif
