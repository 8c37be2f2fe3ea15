// RFC 3449 / CAKE-style ACK filtering for the `filter` policy. Ingress records, per half-flow,
// the newest pure ACK that entered the egress queue (AckFilterEnqueue); egress drops a candidate
// ACK when a newer ACK of the same half-flow entered the queue behind it and supersedes it
// (AckFilterDequeue). Only ACKs made redundant inside a standing queue are removed.
//
// The two controls share the registers below, which is why they sit in one file. Note that bmv2
// books a packet's departure slot on a rate-limited port when it is enqueued: an ACK dropped at
// egress has used its slot on this switch, and saves capacity only on the links after it.
#ifndef ACKWISE_ACK_FILTER_P4
#define ACKWISE_ACK_FILTER_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "serial.p4"
#include "queue_model.p4"

@name(".ack_filter.serial") register<bit<32>>(HALF_FLOWS) filter_serial;
@name(".ack_filter.newest_ack") register<bit<32>>(HALF_FLOWS) filter_newest_ack;
@name(".ack_filter.newest_ts_val") register<bit<32>>(HALF_FLOWS) filter_newest_ts_val;
// The newest ACK's TCP flags, of which the filter compares ECE and CWR (the whole byte: a register
// write of `flags & mask` would get a temporary, a metadata field every packet pays for).
@name(".ack_filter.newest_flags") register<bit<8>>(HALF_FLOWS) filter_newest_flags;
@name(".ack_filter.forwarded") register<bit<32>>(HALF_FLOWS) filter_forwarded;
@name(".ack_filter.filtered") register<bit<32>>(HALF_FLOWS) filter_filtered;

// `half`: the ACK's half-flow, which egress finds in ack.half.
control AckFilterEnqueue(in bit<32> half, in tcp_h tcp, in tcp_options_meta_t opts, inout ack_meta_t ack) {
    apply {
        ack.half = half;
        filter_serial.read(ack.filter_serial, ack.half);
        ack.filter_serial = ack.filter_serial + 1;
        filter_serial.write(ack.half, ack.filter_serial);
        filter_newest_ack.write(ack.half, tcp.ack_no);
        filter_newest_ts_val.write(ack.half, opts.ts_val);
        filter_newest_flags.write(ack.half, tcp.flags);
    }
}

// AckFilterDequeue's working fields: filter_work_h, in ack_switch_work.p4 (ack_switch's metadata).

control AckFilterDequeue(in tcp_h tcp, in tcp_options_meta_t opts, in ack_meta_t ack, in port_t port,
                         in bit<19> enq_qdepth, in bit<19> deq_qdepth, out bool drop, inout filter_work_h w) {
    @name(".ack_filter.stats") counter(FILTER_STATS, CounterType.packets) stats;    // FILTER_STAT_*

    apply {
        w.setValid();
        filter_serial.read(w.newest_serial, ack.half);
        filter_newest_ack.read(w.newest_ack, ack.half);
        filter_newest_ts_val.read(w.newest_ts_val, ack.half);
        filter_newest_flags.read(w.newest_flags, ack.half);
        // The newer ACK must really be in the queue: bmv2 tail-drops at enqueue, after ingress
        // recorded it. While this ACK waited, the queue held at most enq_qdepth packets ahead of
        // it, itself, and deq_qdepth behind it (all of which entered after it); if that stayed
        // below the capacity, no packet that arrived meanwhile was tail-dropped.
        // The index from a field (an expression would be a temporary, a metadata field every
        // packet pays for).
        w.n = (bit<32>)port;
        COPY_BARRIER(w);
        queue_capacity.read(w.capacity, w.n);
        if (w.capacity == 0) {
            w.capacity = BMV2_DEFAULT_QUEUE_DEPTH_PKTS;
        }
        bool no_tail_drop = (bit<32>)enq_qdepth + 1 + (bit<32>)deq_qdepth < w.capacity;
        drop = no_tail_drop && w.newest_serial != ack.filter_serial
            && SEQ_GEQ(w.newest_ack, tcp.ack_no)
            && (!opts.ts_present || SEQ_GEQ(w.newest_ts_val, opts.ts_val))
            && w.newest_flags & (TCP_FLAG_ECE | TCP_FLAG_CWR) == tcp.flags & (TCP_FLAG_ECE | TCP_FLAG_CWR);
        if (drop) {
            stats.count(FILTER_STAT_FILTERED);
            filter_filtered.read(w.n, ack.half);
            w.n = w.n + 1;      // in the field read (a register write of an expression: a temporary)
            filter_filtered.write(ack.half, w.n);
        } else {
            if (!no_tail_drop && w.newest_serial != ack.filter_serial) {
                stats.count(FILTER_STAT_KEPT_QUEUE_FULL);
            }
            stats.count(FILTER_STAT_FORWARDED);
            filter_forwarded.read(w.n, ack.half);
            w.n = w.n + 1;
            filter_forwarded.write(ack.half, w.n);
        }
    }
}

#endif
