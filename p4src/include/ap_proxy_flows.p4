// The AP proxy's per-flow state and decisions (FastACK-style): for a flow from a wired sender to a
// station it serves, in fast mode, each in-order data segment goes to the station, a copy goes to
// the repair agent, and a spoofed ACK goes back to the sender (the three copies of multicast group
// (station port << 8) | uplink port). The station's own ACKs at or below the spoofed point are
// consumed: they go to the agent, not to the sender; the agent sees the others too.
#ifndef ACKWISE_AP_PROXY_FLOWS_P4
#define ACKWISE_AP_PROXY_FLOWS_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"
#include "serial.p4"
#include "flow_key.p4"
#include "ap_stations.p4"

// Written by the agent's heartbeats (ingress, CPU port), read by every spoofing decision.
@name(".ap.agent_alive_at_us") register<bit<48>>(1) ap_agent_alive_at;

// Bits of ap.state.
typedef bit<8> ap_flow_state_t;
const ap_flow_state_t AP_ESTABLISHED = 0x01;     // the station's SYN or SYN-ACK was seen
const ap_flow_state_t AP_RCV_VALID = 0x02;       // rcv_nxt holds the in-order point
const ap_flow_state_t AP_SPOOF_VALID = 0x04;     // spoofed holds the highest spoofed ACK
const ap_flow_state_t AP_ECE_PENDING = 0x08;     // CE seen on the data, CWR not yet
const ap_flow_state_t AP_COPIED_VALID = 0x10;    // copied_to holds the end of the data the agent has a copy of
const ap_flow_state_t AP_STATION_ACK_VALID = 0x20;  // station_ack holds this connection's highest station ACK

// `flow`: the flow's (ApStationSelect); `ipv4.ecn` is the ECN field of either IP version (Forwarding
// copies IPv6's into the invalid IPv4 header's).
control ApProxyFlows(in ipv4_h ipv4, in ipv6_h ipv6, in tcp_h tcp, in tcp_options_meta_t opts,
                     in bit<16> payload_len, in time_us_t now, in ap_role_t role, in ap_station_params_t station,
                     inout ap_flow_key_t flow, in port_t ingress_port, in port_t cpu_port,
                     inout port_t egress_port, out bit<16> mcast_grp, inout ap_meta_t ap) {

    @name(".ap.stats") counter(AP_STATS, CounterType.packets) stats;
    @name(".ap.key_a") register<bit<32>>(FLOW_SLOTS) key_a_reg;
    @name(".ap.key_b") register<bit<32>>(FLOW_SLOTS) key_b_reg;
    @name(".ap.key_ports") register<bit<32>>(FLOW_SLOTS) key_ports_reg;
    // An IPv6 flow's addresses for the control plane (key_a, key_b: FLOW_KEY_IPV6, 0): KEY6_WORDS
    // 32-bit words per address at slot * KEY6_WORDS, the highest first, as ack_thinning's.
    @name(".ap.key6_a") register<bit<32>>(FLOW_SLOTS * KEY6_WORDS) key6_a_reg;
    @name(".ap.key6_b") register<bit<32>>(FLOW_SLOTS * KEY6_WORDS) key6_b_reg;
    @name(".ap.last_seen_us") register<bit<48>>(FLOW_SLOTS) last_seen_reg;
    @name(".ap.closed") register<bit<8>>(FLOW_SLOTS) closed_reg;
    @name(".ap.mode") register<bit<8>>(FLOW_SLOTS) mode_reg;
    @name(".ap.holdoff_until_us") register<bit<48>>(FLOW_SLOTS) holdoff_until_reg;
    @name(".ap.state") register<bit<8>>(FLOW_SLOTS) state_reg;
    @name(".ap.rcv_nxt") register<bit<32>>(FLOW_SLOTS) rcv_nxt_reg;
    @name(".ap.in_order") register<bit<32>>(FLOW_SLOTS) in_order_reg;
    @name(".ap.spoofed") register<bit<32>>(FLOW_SLOTS) spoofed_reg;
    @name(".ap.station_ack") register<bit<32>>(FLOW_SLOTS) station_ack_reg;
    @name(".ap.station_ack_at_us") register<bit<48>>(FLOW_SLOTS) station_ack_at_reg;
    @name(".ap.station_window") register<bit<32>>(FLOW_SLOTS) station_window_reg;  // bytes
    @name(".ap.station_ws") register<bit<8>>(FLOW_SLOTS) station_ws_reg;
    @name(".ap.station_ts") register<bit<32>>(FLOW_SLOTS) station_ts_reg;
    @name(".ap.station_seq") register<bit<32>>(FLOW_SLOTS) station_seq_reg;
    @name(".ap.spoofed_acks") register<bit<32>>(FLOW_SLOTS) spoofed_acks_reg;
    @name(".ap.consumed_acks") register<bit<32>>(FLOW_SLOTS) consumed_acks_reg;
    @name(".ap.dup_acks_to_agent") register<bit<32>>(FLOW_SLOTS) dup_to_agent_reg;
    @name(".ap.budget_stalls") register<bit<32>>(FLOW_SLOTS) budget_stalls_reg;
    @name(".ap.advertised_edge") register<bit<32>>(FLOW_SLOTS) advertised_edge_reg;  // last told the sender
    @name(".ap.copied_to") register<bit<32>>(FLOW_SLOTS) copied_to_reg;
    @name(".ap.window_updates") register<bit<32>>(FLOW_SLOTS) window_updates_reg;

    // An IPv6 flow taking a slot: its tag (FLOW_KEY_IPV6, whichever the packet's key has), its
    // addresses (ap.key6), and the control plane's words of them, KEY6_WORDS per address, the
    // highest first. Each value and index written is a field, set in an action before the one
    // that writes it: an expression there would be a temporary, a metadata field every packet
    // pays for. The key's key_a and key_b, no longer needed, hold the word's index and value.
    action take_over6_addrs() {
        flow.addrs6 = FLOW_ADDRS6(ipv6, FLOW_DIRECTION6(ipv6, tcp));
        flow.key_a = flow.slot * KEY6_WORDS;
    }

    action take_over6() {
        key_a_reg.write(flow.slot, FLOW_KEY_IPV6);
        key_b_reg.write(flow.slot, 0);
        ap_key6.write(flow.slot, flow.addrs6);
        flow.key_b = flow.addrs6[255:224];
    }

    // One word of each address: the lower endpoint's at the top of addrs6, the other's 128 bits
    // below; then the next word up.
    action key6_word_a() {
        key6_a_reg.write(flow.key_a, flow.key_b);
        flow.key_b = flow.addrs6[127:96];
    }

    action key6_word_b() {
        key6_b_reg.write(flow.key_a, flow.key_b);
        flow.key_a = flow.key_a + 1;
        flow.addrs6 = flow.addrs6 << 32;
        flow.key_b = flow.addrs6[255:224];
    }

    apply {
        mcast_grp = 0;
        ap.spoof = false;
        ap.window_update = false;

        bit<32> stored_a;
        bit<32> stored_b;
        bit<32> stored_ports;
        bit<48> last_seen;
        bit<8> closed;
        key_a_reg.read(stored_a, flow.slot);
        key_b_reg.read(stored_b, flow.slot);
        key_ports_reg.read(stored_ports, flow.slot);
        last_seen_reg.read(last_seen, flow.slot);
        closed_reg.read(closed, flow.slot);
        bool owned = stored_a == flow.key_a && stored_b == flow.key_b && stored_ports == flow.key_ports;
        if (!owned && ((stored_a == 0 && stored_b == 0 && stored_ports == 0) || closed != 0
                       || now - last_seen > RECLAIM_IDLE_DEFAULT_US)) {
            if (ipv6.isValid()) {
                take_over6_addrs();
                take_over6();
                key6_word_a(); key6_word_b();
                key6_word_a(); key6_word_b();
                key6_word_a(); key6_word_b();
                key6_word_a(); key6_word_b();
#if KEY6_WORDS != 4
#error "an IPv6 flow taking a slot writes 4 words per address: update it with KEY6_WORDS"
#endif
            } else {
                key_a_reg.write(flow.slot, flow.key_a);
                key_b_reg.write(flow.slot, flow.key_b);
            }
            key_ports_reg.write(flow.slot, flow.key_ports);
            closed_reg.write(flow.slot, 0);
            mode_reg.write(flow.slot, AP_MODE_PASS);
            state_reg.write(flow.slot, 0);
            in_order_reg.write(flow.slot, 0);
            spoofed_acks_reg.write(flow.slot, 0);
            consumed_acks_reg.write(flow.slot, 0);
            dup_to_agent_reg.write(flow.slot, 0);
            budget_stalls_reg.write(flow.slot, 0);
            owned = true;
        } else if (!owned) {
            stats.count(AP_STAT_COLLISIONS);
        }

        if (owned) {
            last_seen_reg.write(flow.slot, now);
            if (tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
                closed_reg.write(flow.slot, 1);
            }
            bit<8> state;
            bit<8> mode;
            bit<32> station_ack;
            bit<32> station_window;
            bit<8> station_ws;
            bit<32> spoofed;
            state_reg.read(state, flow.slot);
            mode_reg.read(mode, flow.slot);
            station_ack_reg.read(station_ack, flow.slot);
            station_window_reg.read(station_window, flow.slot);
            station_ws_reg.read(station_ws, flow.slot);
            spoofed_reg.read(spoofed, flow.slot);
            bit<48> alive_at;
            ap_agent_alive_at.read(alive_at, 0);
            bool agent_alive = alive_at != 0 && now - alive_at < AP_AGENT_TIMEOUT_US;

            if (role == AP_ROLE_UPLINK) {
                // ---- from the sender to the station ----
                if (tcp.flags & TCP_FLAG_SYN != 0) {
                    // A new connection (SYN, or SYN-ACK when the station opened it): keep only
                    // what the station's own SYN may already have told.
                    state = (state & AP_ESTABLISHED) | AP_RCV_VALID;
                    rcv_nxt_reg.write(flow.slot, tcp.seq_no + 1);
                    mode = AP_MODE_PASS;
                    in_order_reg.write(flow.slot, 0);
                    // The agent holds it until the station answers, and resends it when the air
                    // loses it or the answer: else a lost handshake costs the sender's 1 s SYN timeout.
                    if (agent_alive) {
                        mcast_grp = (bit<16>)egress_port << 8;  // the station and the agent
                    }
                } else if (payload_len != 0) {
                    bit<32> end = tcp.seq_no + (bit<32>)payload_len;
                    bit<32> rcv_nxt;
                    rcv_nxt_reg.read(rcv_nxt, flow.slot);
                    bool in_order = state & AP_RCV_VALID != 0 && tcp.seq_no == rcv_nxt;
                    bit<32> in_order_count;  // before this segment: it is spoofed after N have passed
                    in_order_reg.read(in_order_count, flow.slot);
                    if (in_order) {
                        rcv_nxt_reg.write(flow.slot, end);
                    }
                    if (ipv4.ecn == 3) {
                        state = state | AP_ECE_PENDING;
                    }
                    if (tcp.flags & TCP_FLAG_CWR != 0) {
                        state = state & ~AP_ECE_PENDING;
                    }

                    // Mode: back from a hold-off, out on a stall, in after N in-order segments.
                    bit<48> holdoff_until;
                    holdoff_until_reg.read(holdoff_until, flow.slot);
                    if (mode == AP_MODE_HOLDOFF && now >= holdoff_until) {
                        mode = AP_MODE_PASS;
                        in_order_count = 0;
                    }
                    bit<48> station_ack_at;
                    station_ack_at_reg.read(station_ack_at, flow.slot);
                    if (mode == AP_MODE_FAST && state & AP_SPOOF_VALID != 0 && SEQ_LT(station_ack, spoofed)
                            && now - station_ack_at > station.stall_timeout_us) {
                        stats.count(AP_STAT_STALL_EXITS);
                        if (station.holdoff_us == 0) {
                            mode = AP_MODE_OFF;
                        } else {
                            mode = AP_MODE_HOLDOFF;
                            holdoff_until_reg.write(flow.slot, now + station.holdoff_us);
                        }
                    }
                    bool station_known = state & (AP_ESTABLISHED | AP_STATION_ACK_VALID)
                        == (AP_ESTABLISHED | AP_STATION_ACK_VALID);
                    if (mode == AP_MODE_PASS && station_known && in_order_count >= station.fast_after
                            && agent_alive) {
                        mode = AP_MODE_FAST;
                    }
                    in_order_reg.write(flow.slot, in_order ? in_order_count + 1 : in_order_count);

                    // Every byte below a spoofed ACK must be acknowledged by the station or held
                    // by the agent. From the handshake on, while the agent is there, it gets a copy
                    // of each in-order segment; coverage is how far that (or the station's ACK)
                    // reaches without a gap. A segment that went by uncopied (the agent briefly
                    // gone) stops spoofing until the station has acknowledged it.
                    bit<32> copied_to;
                    copied_to_reg.read(copied_to, flow.slot);
                    bit<32> coverage = state & AP_COPIED_VALID != 0 && SEQ_GT(copied_to, station_ack)
                        ? copied_to : station_ack;
                    bool contiguous = SEQ_LEQ(tcp.seq_no, coverage);
                    bool copy = in_order && agent_alive && station_known
                        && (mode == AP_MODE_PASS || mode == AP_MODE_FAST);
                    if (copy && contiguous) {
                        copied_to_reg.write(flow.slot, end);
                        state = state | AP_COPIED_VALID;
                    }

                    if (mode == AP_MODE_FAST && agent_alive) {
                        // The sender may send up to the station's right edge, but no further than
                        // the budget lets the proxy spoof: the pipe to the station then never
                        // holds more than the budget, however large the sender's window grows.
                        bit<32> right_edge = station_ack + station_window;
                        bit<32> budget_edge = station_ack + station.budget_bytes;
                        bit<32> advertised_edge = SEQ_LT(budget_edge, right_edge) ? budget_edge : right_edge;
                        bool flags_ok = tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST | TCP_FLAG_URG | TCP_FLAG_SYN) == 0;
                        bool window_ok = station_window != 0 && SEQ_GEQ(right_edge, end);
                        bool budget_ok = end - station_ack <= station.budget_bytes;
                        if (in_order && flags_ok && window_ok && budget_ok && contiguous) {
                            ap.spoof = true;
                            spoofed_reg.write(flow.slot, end);
                            advertised_edge_reg.write(flow.slot, advertised_edge);
                            state = state | AP_SPOOF_VALID;
                            station_seq_reg.read(ap.ack_seq, flow.slot);
                            ap.ack_ack = end;
                            ap.ack_window = (bit<16>)((advertised_edge - end) >> station_ws);
                            ap.ack_flags = TCP_FLAG_ACK | (state & AP_ECE_PENDING != 0 ? TCP_FLAG_ECE : 8w0);
                            ap.ack_has_ts = opts.ts_present;
                            station_ts_reg.read(ap.ack_ts_val, flow.slot);
                            ap.ack_ts_ecr = opts.ts_val;
                            stats.count(AP_STAT_SPOOFED);
                            bit<32> n;
                            spoofed_acks_reg.read(n, flow.slot);
                            spoofed_acks_reg.write(flow.slot, n + 1);
                        } else if (in_order && flags_ok && window_ok && contiguous) {
                            stats.count(AP_STAT_BUDGET_STALLS);
                            bit<32> n;
                            budget_stalls_reg.read(n, flow.slot);
                            budget_stalls_reg.write(flow.slot, n + 1);
                        } else {
                            stats.count(AP_STAT_NOT_SPOOFED);
                        }
                    }
                    // Group (station port << 8) | uplink: station, agent, spoofed ACK;
                    // (station port << 8) | 0: station and agent.
                    if (ap.spoof) {
                        mcast_grp = (bit<16>)egress_port << 8 | (bit<16>)ingress_port;
                    } else if (copy && contiguous) {
                        mcast_grp = (bit<16>)egress_port << 8;
                    }
                }
            } else {
                // ---- from the station to the sender ----
                // A SYN-ACK starts the station's ACKs afresh; when the station opens the
                // connection, its first ACK comes after its SYN, so until then there is none to
                // compare with (a flow.slot's station_ack may still hold an earlier connection's).
                bool advanced = state & AP_STATION_ACK_VALID == 0 || SEQ_GT(tcp.ack_no, station_ack)
                    || tcp.flags & TCP_FLAG_SYN != 0;
                if (tcp.flags & TCP_FLAG_SYN != 0) {
                    // The station's SYN or SYN-ACK: its window scale, its (unscaled) window, its clock.
                    station_ws_reg.write(flow.slot, opts.ws_present ? opts.ws_shift : 8w0);
                    station_window_reg.write(flow.slot, (bit<32>)tcp.window);
                    station_seq_reg.write(flow.slot, tcp.seq_no + 1);
                    state = (state | AP_ESTABLISHED) & ~AP_STATION_ACK_VALID;
                } else {
                    station_window_reg.write(flow.slot, (bit<32>)tcp.window << station_ws);
                    station_seq_reg.write(flow.slot, tcp.seq_no + (bit<32>)payload_len);
                }
                if (advanced && tcp.flags & TCP_FLAG_ACK != 0) {
                    station_ack_reg.write(flow.slot, tcp.ack_no);
                    station_ack_at_reg.write(flow.slot, now);
                    state = state | AP_STATION_ACK_VALID;
                }
                if (opts.ts_present) {
                    station_ts_reg.write(flow.slot, opts.ts_val);
                }
                bool connection_control = tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_FIN | TCP_FLAG_RST) != 0;
                if (!connection_control && payload_len == 0 && state & AP_SPOOF_VALID != 0 && SEQ_LEQ(tcp.ack_no, spoofed)) {
                    // Already acknowledged to the sender: to the agent, which frees its buffer
                    // and repairs what a duplicate says is lost.
                    bit<16> uplink = (bit<16>)egress_port;
                    egress_port = cpu_port;
                    if (!advanced && SEQ_LT(tcp.ack_no, spoofed)) {
                        stats.count(AP_STAT_DUP_TO_AGENT);
                        bit<32> n;
                        dup_to_agent_reg.read(n, flow.slot);
                        dup_to_agent_reg.write(flow.slot, n + 1);
                    } else {
                        stats.count(AP_STAT_CONSUMED);
                        bit<32> n;
                        consumed_acks_reg.read(n, flow.slot);
                        consumed_acks_reg.write(flow.slot, n + 1);
                    }
                    // The budget or the station's window capped the edge the sender was told;
                    // the station's progress, or its window reopening (same ACK number, larger
                    // window: its application read), moves it on. Spoofed ACKs come only with
                    // new data, and the sender's zero-window probes are answered by ACKs that
                    // are consumed here, so a sender that used up its window would wait
                    // forever: tell it, on the station's behalf.
                    bit<32> window_bytes = (bit<32>)tcp.window << station_ws;
                    bit<32> right_edge = tcp.ack_no + window_bytes;
                    bit<32> budget_edge = tcp.ack_no + station.budget_bytes;
                    bit<32> edge = SEQ_LT(budget_edge, right_edge) ? budget_edge : right_edge;
                    bit<32> advertised;
                    advertised_edge_reg.read(advertised, flow.slot);
                    if (SEQ_GT(edge, advertised) && advertised - spoofed < station.budget_bytes >> 1) {
                        advertised_edge_reg.write(flow.slot, edge);
                        ap.spoof = true;
                        ap.window_update = true;
                        ap.ack_seq = tcp.seq_no;
                        ap.ack_ack = spoofed;
                        ap.ack_window = (bit<16>)((edge - spoofed) >> station_ws);
                        ap.ack_flags = TCP_FLAG_ACK | (state & AP_ECE_PENDING != 0 ? TCP_FLAG_ECE : 8w0);
                        ap.ack_has_ts = opts.ts_present;
                        ap.ack_ts_val = opts.ts_val;
                        ap.ack_ts_ecr = opts.ts_ecr;
                        mcast_grp = uplink;  // group (0 << 8) | uplink: the agent and the sender
                        bit<32> n;
                        window_updates_reg.read(n, flow.slot);
                        window_updates_reg.write(flow.slot, n + 1);
                    }
                } else if (tcp.flags & (TCP_FLAG_ACK | TCP_FLAG_SYN) != 0
                           && (agent_alive || state & AP_COPIED_VALID != 0)) {
                    // Passes to the sender (above the spoofed point, or connection control); the
                    // agent sees it too: it answers a held SYN or SYN-ACK, and frees held copies.
                    mcast_grp = (bit<16>)egress_port;  // group (0 << 8) | uplink, nothing spoofed
                }
            }
            state_reg.write(flow.slot, state);
            mode_reg.write(flow.slot, mode);
        }
    }
}

#endif
