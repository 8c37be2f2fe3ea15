// The flow key: the TCP 5-tuple with both directions mapped to one record. The endpoint with the
// lower (address, port) comes first; `direction` says whether this packet comes from it (0) or
// goes to it (1). The Python twin is control-plane/ackwise/flowkey.py.
#ifndef ACKWISE_FLOW_KEY_P4
#define ACKWISE_FLOW_KEY_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// key_a, key_b: the lower endpoint's address, then the other's. Two 32-bit values, not one 64-bit
// one: the control plane reads stored keys over Thrift, which saturates cells of 2^63 and up.
control FlowKey(in ipv4_h ipv4, in tcp_h tcp, out bit<32> key_a, out bit<32> key_b, out bit<32> key_ports,
                out bit<32> slot, out bit<1> direction) {
    // Values, not branches (a branch would be a pipeline step of its own in bmv2). The hash in an
    // action of its own: in the same action, p4c substitutes each key's expression into the hash's
    // inputs and evaluates it a second time. p4c copies each input of a hash into a temporary, a
    // metadata field every packet pays for: one 96-bit input, not three of 32 (the same 12 bytes,
    // so the same slot).
    action orient() {
        bool lower = ipv4.src_addr < ipv4.dst_addr
            || (ipv4.src_addr == ipv4.dst_addr && tcp.src_port <= tcp.dst_port);
        key_a = lower ? ipv4.src_addr : ipv4.dst_addr;
        key_b = lower ? ipv4.dst_addr : ipv4.src_addr;
        key_ports = lower ? tcp.src_port ++ tcp.dst_port : tcp.dst_port ++ tcp.src_port;
        direction = lower ? 1w0 : 1w1;
    }

    action slot_of() {
        hash(slot, HashAlgorithm.crc32, (bit<32>)0, { key_a ++ key_b ++ key_ports }, (bit<32>)FLOW_SLOTS);
    }

    apply {
        orient();
        slot_of();
    }
}

#endif
