// The flow key: the TCP 5-tuple with both directions mapped to one record. The endpoint with the
// lower (address, port) comes first; `direction` says whether this packet comes from it (0) or
// goes to it (1). The Python twin is control-plane/ackwise/flowkey.py.
#ifndef ACKWISE_FLOW_KEY_P4
#define ACKWISE_FLOW_KEY_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

control FlowKey(in ipv4_h ipv4, in tcp_h tcp, out bit<64> key_addrs, out bit<32> key_ports,
                out bit<32> slot, out bit<1> direction) {
    apply {
        if (ipv4.src_addr < ipv4.dst_addr
                || (ipv4.src_addr == ipv4.dst_addr && tcp.src_port <= tcp.dst_port)) {
            key_addrs = ipv4.src_addr ++ ipv4.dst_addr;
            key_ports = tcp.src_port ++ tcp.dst_port;
            direction = 0;
        } else {
            key_addrs = ipv4.dst_addr ++ ipv4.src_addr;
            key_ports = tcp.dst_port ++ tcp.src_port;
            direction = 1;
        }
        hash(slot, HashAlgorithm.crc32, (bit<32>)0, { key_addrs, key_ports }, (bit<32>)FLOW_SLOTS);
    }
}

#endif
