// Which ACK policy applies to a packet, with its parameters. Two control-plane tables, keyed on the
// ACK direction's addresses and ports: `flow_policy` (exact: one flow, as the controller sets them,
// thousands of entries at the cost of one hash lookup) and, when it has no entry, `policy`
// (ternary rules by priority, with a settable default, off). Data segments look the tables up with
// source and destination swapped, so that one entry covers a flow's data and its ACKs. Parameters
// are validated by control-plane/ackwise/twins/policies.py.
//
// The key is one 96-bit field, `flow`: source address [95:64] | destination address [63:32] |
// source port [31:16] | destination port [15:0] (packed and unpacked in control-plane/ackwise/
// twins/policies.py, PolicyMatch). Not four fields: on bmv2's default build every lookup formats each key
// field for a log line it does not write, and the two four-field lookups cost every packet about
// 50 thousand instructions more (docs/performance.md).
#ifndef ACKWISE_ACK_POLICY_P4
#define ACKWISE_ACK_POLICY_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

//
// IPv6 packets look up `flow_policy6` and `policy6` instead, whose key is the same over 128-bit
// addresses (288 bits), in the thinning stage's working field `w.own` (made valid here for them):
// a local would be a metadata field, which every packet, IPv4 too, pays for (docs/performance.md).
control AckPolicySelect(in ipv4_h ipv4, in ipv6_h ipv6, in tcp_h tcp, in bit<16> payload_len,
                        inout ack_policy_params_t params, inout thinning_work_h w) {
    bit<96> ack_flow;

    // The tables see the flow from its ACKs' side: data looks them up reversed.
    action orient() {
        ack_flow = payload_len != 0 ? ipv4.dst_addr ++ ipv4.src_addr ++ tcp.dst_port ++ tcp.src_port
                            : ipv4.src_addr ++ ipv4.dst_addr ++ tcp.src_port ++ tcp.dst_port;
    }

    action orient6() {
        w.setValid();
        w.own = (bit<HALF_BITS>)(payload_len != 0
            ? ipv6.dst_addr ++ ipv6.src_addr ++ tcp.dst_port ++ tcp.src_port
            : ipv6.src_addr ++ ipv6.dst_addr ++ tcp.src_port ++ tcp.dst_port);
    }

    @name(".ack_thinning.policy_off")
    action policy_off() {
        params.policy = POLICY_OFF;
    }

    @name(".ack_thinning.policy_every_d")
    action policy_every_d(bit<16> mss, bit<8> d, bit<32> idle_ms, bit<16> hold_ms) {
        params.policy = POLICY_EVERY_D;
        params.hold_ms = hold_ms;
        params.mss = mss;
        params.d = d;
        params.idle_us = idle_ms * 1000;
    }

    @name(".ack_thinning.policy_dynamic_d")
    action policy_dynamic_d(bit<16> mss, bit<8> l1, bit<8> l2, bit<8> l3, bit<32> idle_ms, bit<16> hold_ms) {
        params.policy = POLICY_DYNAMIC_D;
        params.hold_ms = hold_ms;
        params.mss = mss;
        params.l1 = l1;
        params.l2 = l2;
        params.l3 = l3;
        params.idle_us = idle_ms * 1000;
    }

    @name(".ack_thinning.policy_tack")
    action policy_tack(bit<16> mss, bit<8> tack_l, bit<8> beta, bit<32> rtt_min_us, bit<32> idle_ms,
                       bit<16> hold_ms) {
        params.policy = POLICY_TACK;
        params.hold_ms = hold_ms;
        params.mss = mss;
        params.tack_l = tack_l;
        params.tack_beta = beta;
        params.rtt_min_us = rtt_min_us;
        params.idle_us = idle_ms * 1000;
    }

    @name(".ack_thinning.policy_filter")
    action policy_filter(bit<16> mss, bit<32> idle_ms) {
        params.policy = POLICY_FILTER;
        params.mss = mss;
        params.idle_us = idle_ms * 1000;
    }

    @name(".ack_thinning.policy_acc")
    action policy_acc(bit<16> mss, bit<8> d_cap, bit<8> signals, bit<32> rtt_min_us, bit<32> idle_ms,
                      bit<16> hold_ms) {
        params.policy = POLICY_ACC;
        params.hold_ms = hold_ms;
        params.mss = mss;
        params.acc_d_cap = d_cap;
        params.acc_signals = signals;
        params.rtt_min_us = rtt_min_us;
        params.idle_us = idle_ms * 1000;
    }

    @name(".ack_thinning.policy_coalesce")
    action policy_coalesce(bit<16> mss, bit<32> idle_ms) {
        params.policy = POLICY_COALESCE;
        params.mss = mss;
        params.idle_us = idle_ms * 1000;
    }

    @name(".ack_thinning.flow_policy")
    table flow_policy {
        key = {
            ack_flow: exact @name("flow");
        }
        actions = {
            policy_off; policy_every_d; policy_dynamic_d; policy_tack; policy_filter; policy_acc; policy_coalesce;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FLOW_POLICY_TABLE_SIZE;
    }

    @name(".ack_thinning.policy")
    table policy {
        key = {
            ack_flow: ternary @name("flow");
        }
        actions = {
            policy_off; policy_every_d; policy_dynamic_d; policy_tack; policy_filter; policy_acc; policy_coalesce;
        }
        default_action = policy_off();
        size = ACK_POLICY_TABLE_SIZE;
    }

    @name(".ack_thinning.flow_policy6")
    table flow_policy6 {
        key = {
            w.own: exact @name("flow");
        }
        actions = {
            policy_off; policy_every_d; policy_dynamic_d; policy_tack; policy_filter; policy_acc; policy_coalesce;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FLOW_POLICY_TABLE_SIZE;
    }

    @name(".ack_thinning.policy6")
    table policy6 {
        key = {
            w.own: ternary @name("flow");
        }
        actions = {
            policy_off; policy_every_d; policy_dynamic_d; policy_tack; policy_filter; policy_acc; policy_coalesce;
        }
        default_action = policy_off();
        size = ACK_POLICY_TABLE_SIZE;
    }

    apply {
        if (ipv6.isValid()) {
            orient6();
            if (!flow_policy6.apply().hit) {
                policy6.apply();
            }
        } else {
            orient();
            if (!flow_policy.apply().hit) {
                policy.apply();
            }
        }
    }
}

#endif
