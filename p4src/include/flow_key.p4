// The flow key: the TCP 5-tuple with both directions mapped to one record. The endpoint with the
// lower (address, port) comes first; `direction` says whether this packet comes from it (0) or
// goes to it (1). The Python twin is control-plane/ackwise/twins/flowkey.py.
#ifndef ACKWISE_FLOW_KEY_P4
#define ACKWISE_FLOW_KEY_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// key_a, key_b: the lower endpoint's address, then the other's. Two 32-bit values, not one 64-bit
// one: the control plane reads stored keys over Thrift, which saturates cells of 2^63 and up.
// Expressions, so that a control's own step computes the key (AckThinning's claim_slot): in bmv2
// each action applied from a control block is a step of its own (docs/performance.md), and an
// action with header parameters called from another action copies the headers in. Values, not
// branches (a branch would be a step of its own too). The key's parts from `direction`, a field
// assigned before them: p4c substitutes a local's expression into each use.
#define FLOW_DIRECTION(ipv4, tcp) (ipv4.src_addr < ipv4.dst_addr \
    || (ipv4.src_addr == ipv4.dst_addr && tcp.src_port <= tcp.dst_port) ? 1w0 : 1w1)
#define FLOW_KEY_A(ipv4, direction) (direction == 0 ? ipv4.src_addr : ipv4.dst_addr)
#define FLOW_KEY_B(ipv4, direction) (direction == 0 ? ipv4.dst_addr : ipv4.src_addr)
#define FLOW_KEY_PORTS(tcp, direction) (direction == 0 ? tcp.src_port ++ tcp.dst_port : tcp.dst_port ++ tcp.src_port)
// The whole key as one 96-bit value, key_a ++ key_b ++ key_ports (AckThinning keeps it so, inside
// its flow record: one field and one comparison instead of three).
#define FLOW_KEY(ipv4, tcp, direction) (direction == 0 \
    ? ipv4.src_addr ++ ipv4.dst_addr ++ tcp.src_port ++ tcp.dst_port \
    : ipv4.dst_addr ++ ipv4.src_addr ++ tcp.dst_port ++ tcp.src_port)
// IPv6 (the programs that define ACKWISE_IPV6): the same key over 128-bit addresses, 288 bits,
// key_a ++ key_b ++ key_ports as FLOW_KEY, whose 36 bytes are what the slot hashes (the Python
// twin's FlowKey.key_bytes). AckThinning keeps the addresses in a register of their own and the
// ports, with FLOW_KEY_IPV6 in place of the addresses, in the record's 96-bit key (ack_thinning.p4).
#define FLOW_DIRECTION6(ipv6, tcp) FLOW_DIRECTION(ipv6, tcp)
#define FLOW_ADDRS6(ipv6, direction) (direction == 0 ? ipv6.src_addr ++ ipv6.dst_addr \
    : ipv6.dst_addr ++ ipv6.src_addr)
#define FLOW_KEY6(ipv6, tcp, direction) (direction == 0 \
    ? ipv6.src_addr ++ ipv6.dst_addr ++ tcp.src_port ++ tcp.dst_port \
    : ipv6.dst_addr ++ ipv6.src_addr ++ tcp.dst_port ++ tcp.src_port)
// An IPv6 flow's 96-bit key in the record: FLOW_KEY_IPV6 ++ 32w0 ++ the ports, which no IPv4 key
// is (an IPv4 key's first address is at most its second); FLOW_KEY_IPV6_OTHER in place of
// FLOW_KEY_IPV6 when the register's addresses are another flow's, which no record holds.
#define FLOW_KEY6_TAG(tag, ports) ((tag) ++ 32w0 ++ (ports))

// The slot of a key, after the key is known (a step, or a barrier, between: else p4c substitutes
// each key's expression into the hash's inputs and evaluates it a second time). p4c copies each
// input of a hash into a temporary, a metadata field every packet pays for: one 96-bit input, not
// three of 32 (the same 12 bytes, so the same slot).
#define FLOW_SLOT(slot, key_a, key_b, key_ports) \
    hash(slot, HashAlgorithm.crc32, (bit<32>)0, { key_a ++ key_b ++ key_ports }, (bit<32>)FLOW_SLOTS)

control FlowKey(in ipv4_h ipv4, in tcp_h tcp, out bit<32> key_a, out bit<32> key_b, out bit<32> key_ports,
                out bit<32> slot, out bit<1> direction) {
    action orient() {
        direction = FLOW_DIRECTION(ipv4, tcp);
        key_a = FLOW_KEY_A(ipv4, direction);
        key_b = FLOW_KEY_B(ipv4, direction);
        key_ports = FLOW_KEY_PORTS(tcp, direction);
    }

    action slot_of() {
        FLOW_SLOT(slot, key_a, key_b, key_ports);
    }

    apply {
        orient();
        slot_of();
    }
}

#endif
