// A model, kept at ingress, of simple_switch's rate-limited egress queues: when a packet sent to a
// port now would leave, and whether the queue would tail-drop it.
//
// v1model tells a program about its queue only at egress (enq_qdepth, deq_qdepth), after the
// packet is queued, and bmv2 tail-drops a full queue at enqueue, after ingress is done. Coalescing
// (ack_coalesce.p4) must know at ingress whether the ACK it is about to queue will be there for
// later ACKs to fold into. bmv2's rate limiter (QueueingLogicPriRL) books every packet's departure
// when it is queued: departure = max(now, previous departure + 1 / rate), and refuses a packet
// when the queue already holds `capacity` packets. Ingress sees every packet the queue gets, in
// order (one ingress thread), so it can keep the same books: per port, the last departure booked.
// The packets still queued at time t are the ones booked to leave after t; with a backlog, they
// leave one service time apart, so the count is ceil((last_departure - t) / service).
//
// Ports without a rate are not modelled: their queue drains as fast as the egress thread runs. The
// control plane adds a port's entry, with its service time and depth, when it sets the port's rate
// (control-plane/ackwise/features/queues.py, set_queue_rate and set_queue_depth).
#ifndef ACKWISE_QUEUE_MODEL_P4
#define ACKWISE_QUEUE_MODEL_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// Per port, from the control plane: packets the egress queue holds (0: bmv2's default). The filter
// policy reads it at egress; the model takes its copy from its table entry below.
@name(".queue.capacity_pkts") register<bit<32>>(PORTS) queue_capacity;
// Per port: the departure booked for the last packet the queue accepted.
@name(".queue.last_departure_us") register<bit<48>>(PORTS) queue_last_departure;
// Per port: packets dropped at ingress because the model said the queue was full (modelled ports
// only). The program, not bmv2, keeps a modelled queue to its depth: bmv2's own limit is set a few
// packets deeper (control-plane/ackwise/features/queues.py), so a packet the program lets through is never
// tail-dropped where the model cannot see it, whatever the model's error of one packet.
@name(".queue.dropped_pkts") register<bit<32>>(PORTS) queue_dropped;
// Per port: packets the queue accepted (modelled ports only). Times the service time, over an
// interval, the share of it the port was busy: the controller's measure of a bottleneck's use.
@name(".queue.booked_pkts") register<bit<32>>(PORTS) queue_booked;

// What the queue on `port` would do with a packet sent to it now: `view` made valid and set for a
// port that has an entry in queue.model (the control plane adds it with the port's rate,
// control-plane/ackwise/features/queues.py). Every other port costs one lookup that misses and sets
// nothing.
control QueuePeek(in port_t port, in time_us_t now, inout queue_view_h view) {
    // service_us: the time between two departures (1e6 / rate); capacity_pkts: the queue's depth.
    @name(".queue.modelled")
    action modelled(bit<32> service_us, bit<32> capacity_pkts) {
        view.setValid();
        // QueueCommit indexes the registers with it; the read below from the field (a register
        // index that is an expression gets a temporary, a metadata field every packet pays for).
        view.port_index = (bit<32>)port;
        COPY_BARRIER(view);
        // The departure booked for the last packet the queue accepted, into the field that then
        // holds this packet's (a local would be a metadata field).
        queue_last_departure.read(view.departure_us, view.port_index);
        bit<48> service = (bit<48>)service_us;
        bit<48> backlog_us = view.departure_us > now ? view.departure_us - now : 0;
        // ceil(backlog / service) packets queued: >= capacity means the queue is full and the
        // program drops this one (QueueCommit). The model and bmv2 see time from different points
        // (arrival at ingress, enqueue after it), so near the edge the model may be one packet
        // off: bmv2's own limit has room for that.
        view.full = backlog_us > (bit<48>)(capacity_pkts - 1) * service;
        bit<48> next = view.departure_us + service;
        view.departure_us = next > now ? next : now;
    }

    @name(".queue.model")
    table model {
        key = { port: exact @name("port"); }
        actions = { modelled; @defaultonly NoAction; }
        const default_action = NoAction();
        size = PORTS;
    }

    apply {
        model.apply();
    }
}

// Book a packet that leaves ingress for the port QueuePeek looked at (call only for packets not
// dropped at ingress otherwise), or drop it if the model says the queue is full: the tail drop
// bmv2 would make. Nothing for a port the program does not model (`view` invalid).
control QueueCommit(inout standard_metadata_t standard_metadata, inout queue_view_h view) {
    // Counts incremented in the field they were read into (a register write of an expression gets
    // a temporary).
    action tail_drop() {
        mark_to_drop(standard_metadata);
        queue_dropped.read(view.count, view.port_index);
        view.count = view.count + 1;
        queue_dropped.write(view.port_index, view.count);
    }

    action book() {
        queue_last_departure.write(view.port_index, view.departure_us);
        queue_booked.read(view.count, view.port_index);
        view.count = view.count + 1;
        queue_booked.write(view.port_index, view.count);
    }

    apply {
        if (view.isValid()) {
            if (view.full) {
                tail_drop();
            } else {
                book();
            }
        }
    }
}

#endif
