// Packet headers and the metadata the parser fills. One definition for every ackwise program.
#ifndef ACKWISE_HEADERS_P4
#define ACKWISE_HEADERS_P4

#include "constants.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

// IPv4 options are not interpreted, only carried (and covered by the header checksum).
header ipv4_options_h {
    varbit<320> data;
}

header ipv6_h {
    bit<4> version;
    bit<6> dscp;
    bit<2> ecn;
    bit<20> flow_label;
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

// A Hop-by-Hop, Routing or Destination Options header (RFC 8200 4.3, 4.4, 4.6): not interpreted,
// only carried. It is (hdr_ext_len + 1) * 8 bytes long.
header ipv6_ext_h {
    bit<8> next_hdr;
    bit<8> hdr_ext_len;
    varbit<(((IPV6_EXT_LEN_MAX + 1) * 8 - 2) * 8)> data;
}

header tcp_h {
    bit<16> src_port;
    bit<16> dst_port;
    tcp_seq_t seq_no;
    tcp_seq_t ack_no;
    bit<4> data_offset;
    bit<4> reserved;    // three reserved bits and AE (formerly NS)
    bit<8> flags;       // CWR ECE URG ACK PSH RST SYN FIN, see TCP_FLAG_*
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// ---- TCP options ----
// Each option is one element of a header-union stack, so the deparser re-emits them in the order
// they arrived (separate per-kind headers would reorder them). The pipeline reads option values
// from tcp_options_meta_t, which the parser fills as it walks the options.

header tcp_opt_byte_h {         // EOL, NOP
    bit<8> kind;
}

header tcp_opt_mss_h {
    bit<8> kind;
    bit<8> len;
    bit<16> mss;
}

header tcp_opt_ws_h {
    bit<8> kind;
    bit<8> len;
    bit<8> shift;
}

header tcp_opt_sack_permitted_h {
    bit<8> kind;
    bit<8> len;
}

header tcp_opt_timestamps_h {
    bit<8> kind;
    bit<8> len;
    bit<32> ts_val;
    bit<32> ts_ecr;
}

header tcp_opt_sack_h {
    bit<8> kind;
    bit<8> len;
    varbit<256> blocks;     // 1 to 4 blocks of (left, right)
}

header tcp_opt_other_h {        // any kind not interpreted, or a known kind with an odd length
    bit<8> kind;
    bit<8> len;
    varbit<304> data;
}

header_union tcp_option_u {
    tcp_opt_byte_h byte;
    tcp_opt_mss_h mss;
    tcp_opt_ws_h ws;
    tcp_opt_sack_permitted_h sack_permitted;
    tcp_opt_timestamps_h timestamps;
    tcp_opt_sack_h sack;
    tcp_opt_other_h other;
}

// The bytes after an EOL up to the data offset.
header tcp_opt_padding_h {
    varbit<312> data;
}

// Views used only with lookahead, to read an option's fields before extracting it.
header tcp_opt_kind_len_h {
    bit<8> kind;
    bit<8> len;
}

header tcp_opt_sack_1_h {
    bit<16> kind_len;
    bit<32> left_0;
    bit<32> right_0;
}

header tcp_opt_sack_2_h {
    bit<16> kind_len;
    bit<32> left_0;
    bit<32> right_0;
    bit<32> left_1;
    bit<32> right_1;
}

header tcp_opt_sack_3_h {
    bit<16> kind_len;
    bit<32> left_0;
    bit<32> right_0;
    bit<32> left_1;
    bit<32> right_1;
    bit<32> left_2;
    bit<32> right_2;
}

header tcp_opt_sack_4_h {
    bit<16> kind_len;
    bit<32> left_0;
    bit<32> right_0;
    bit<32> left_1;
    bit<32> right_1;
    bit<32> left_2;
    bit<32> right_2;
    bit<32> left_3;
    bit<32> right_3;
}

// NOP NOP Timestamps: the options of nearly every segment Linux sends with timestamps on (its
// data segments and ACKs without SACK), parsed in one step instead of walking the option loop
// (hdr.tcp_nnts), and the options of an ACK the AP proxy writes on a station's behalf
// (hdr.spoof_ts).
header tcp_spoof_ts_h {
    bit<8> nop_1;
    bit<8> nop_2;
    bit<8> kind;
    bit<8> len;
    bit<32> ts_val;
    bit<32> ts_ecr;
}

// NOP NOP SACK after NOP NOP Timestamps: the options of a Linux ACK with 1, 2 or 3 SACK blocks
// (24, 32 or 40 bytes), parsed in one step (hdr.tcp_nnts, then one of these) so that coalescing can
// rewrite the blocks of a waiting ACK (ack_coalesce.p4).
header tcp_nn_sack_1_h {
    bit<32> nop_nop_kind_len;
    bit<32> left_0;
    bit<32> right_0;
}

header tcp_nn_sack_2_h {
    bit<32> nop_nop_kind_len;
    bit<32> left_0;
    bit<32> right_0;
    bit<32> left_1;
    bit<32> right_1;
}

header tcp_nn_sack_3_h {
    bit<32> nop_nop_kind_len;
    bit<32> left_0;
    bit<32> right_0;
    bit<32> left_1;
    bit<32> right_1;
    bit<32> left_2;
    bit<32> right_2;
}

// What the switch puts before a copy of an ACK for the agent on its CPU port (AGENT_KIND_* in
// constants.p4). A held ACK (hold-back, ack_holdback.p4): how long to hold it, and in `arg` the
// last ACK number the switch forwarded for the flow (a copy with a newer one starts a new hold:
// the ACK held before it was superseded). The queue share (ack_share.p4): hold_ms is 0 and `arg`
// the microseconds until the flow's queue has room for the next of its ACKs. The agent strips it
// and sends the frame back unchanged.
header holdback_h {
    bit<16> hold_ms;
    bit<16> kind;
    bit<32> arg;
}

struct headers_t {
    holdback_h holdback;
    ethernet_h ethernet;
    ipv4_h ipv4;
    ipv4_options_h ipv4_options;
#ifdef ACKWISE_IPV6
    // Only in the programs that handle IPv6 (they define ACKWISE_IPV6): thinning_floor, the
    // yardstick of issue 35's bounds, stays the IPv4 program it was measured as, without the
    // header instances every packet would pay for.
    ipv6_h ipv6;
    ipv6_ext_h[IPV6_EXT_HEADERS_MAX] ipv6_ext;
#endif
    tcp_h tcp;
    tcp_spoof_ts_h tcp_nnts;     // the options when they are exactly NOP NOP Timestamps (12 bytes)
    tcp_nn_sack_1_h tcp_nnsack1; // ...or NOP NOP Timestamps NOP NOP SACK with 1, 2 or 3 blocks
    tcp_nn_sack_2_h tcp_nnsack2;
    tcp_nn_sack_3_h tcp_nnsack3;
    tcp_option_u[TCP_OPTIONS_MAX] tcp_options;
    tcp_opt_padding_h tcp_padding;
    tcp_spoof_ts_h spoof_ts;
    udp_h udp;
}

// What the parser learnt from a segment's TCP options.
struct tcp_options_meta_t {
    bool mss_present;
    bit<16> mss;
    bool ws_present;
    bit<8> ws_shift;
    bool sack_permitted;
    bool ts_present;
    bit<32> ts_val;
    bit<32> ts_ecr;
    bit<8> ts_index;        // position of the Timestamps option in hdr.tcp_options
    bit<8> sack_blocks;     // 0 to 4
    bit<32> sack_left_0;
    bit<32> sack_right_0;
    bit<32> sack_left_1;
    bit<32> sack_right_1;
    bit<32> sack_left_2;
    bit<32> sack_right_2;
    bit<32> sack_left_3;
    bit<32> sack_right_3;
    bool sack_one_step;     // the blocks are in hdr.tcp_nnsack1/2/3 (Linux's layout): rewritable
    // An option of a kind the pipeline does not interpret, a known kind with an unexpected length,
    // or more options than TCP_OPTIONS_MAX: policies must treat the segment as carrying news.
    bool unknown_present;
}

// Parser bookkeeping, and the verdict on the packet's shape.
struct parser_meta_t {
    bit<8> opt_bytes_left;
    bit<8> opt_len;
    bit<8> opt_count;
    malformed_reason_t malformed_reason;
}

// Per-flow ACK policy, as the ack_thinning.policy table set it for this packet.
struct ack_policy_params_t {
    ack_policy_t policy;
    bit<16> mss;            // bytes; thresholds count segments of this size
    bit<8> d;               // every_d: one ACK per d segments acknowledged
    bit<8> l1;              // dynamic_d: d = 1, 2, 3, 4 below l1, l2, l3 segments acknowledged, and above
    bit<8> l2;
    bit<8> l3;
    bit<8> tack_l;          // tack: one ACK per L segments...
    bit<8> tack_beta;       // ...and at most beta ACKs per RTTmin
    bit<32> rtt_min_us;     // tack, acc: RTTmin override; 0 = measured by the switch
    bit<8> acc_d_cap;       // acc: the control plane's bound on d
    bit<8> acc_signals;     // acc: ACC_SIGNAL_* the flow reacts to
    bit<32> idle_us;        // the first ACK after this much silence is always kept
    bit<16> hold_ms;        // every_d, dynamic_d, tack, acc: hold back a burst's end this long (0: never)
}

// What the thinning stage hands to egress (and to the agent's copy). ack_switch sets half, tracked
// and pure_ack only where egress reads them: each is a field write (docs/performance.md).
struct ack_meta_t {
    bit<32> half;               // half-flow record: slot * 2 + direction (coalescing, filter, acc)
    bool tracked;               // an acc flow's packet that owns its record (its ECN and acc signals)
    bool pure_ack;              // ...and is a pure ACK the thinning stage evaluated
    bool filter_candidate;      // carries no news: the filter may drop it if superseded in the queue
    bit<32> filter_serial;      // its place among the half-flow's ACKs that entered the queue
    bit<16> coalesce_serial;    // non-zero: queued as its half-flow's waiting ACK (ack_coalesce.p4)
    bool hold;                  // held back: a copy goes to the hold-back agent (ack_holdback.p4)
    bit<32> hold_base_ack;      // ...with the last ACK number forwarded for its half-flow
    bit<16> share_kind;         // non-zero: a copy goes to the agent for the queue share (ack_share.p4)
    bit<32> share_wait_us;      // ...with the time until the flow's queue has room for its next ACK
    bool drop;                  // thinned, absorbed, held, handed to the agent, or a released copy superseded
}

// What the AP proxy decided at ingress, for the egress copies of a packet.
struct ap_meta_t {
    bool spoof;                 // a copy of this packet becomes an ACK to the sender (multicast rid 2)
    bool window_update;         // ...made from the station's own ACK (no address swap), not from data
    mac_addr_t sender_mac;      // the data's Ethernet addresses as it arrived (before any routing):
    mac_addr_t receiver_mac;    // the spoofed ACK goes back between them
    bit<32> ack_seq;            // the spoofed ACK's fields
    bit<32> ack_ack;
    bit<16> ack_window;
    bit<8> ack_flags;
    bool ack_has_ts;
    bit<32> ack_ts_val;
    bit<32> ack_ts_ecr;
}

// The AP proxy's key of a packet's flow (ap_stations.p4), as ApProxyFlows keeps the flow's state:
// key_a, key_b, key_ports and the slot as FlowKey computes them for IPv4; for IPv6, (FLOW_KEY_IPV6 or FLOW_KEY_IPV6_OTHER, 0, the ports) as in ack_thinning
// (flow_key.p4's FLOW_KEY6_TAG: FLOW_KEY_IPV6 when the slot's addresses in ap.key6 are this
// flow's), the slot from the 36 key bytes, and addrs6 the slot's addresses as read.
struct ap_flow_key_t {
    bit<32> key_a;
    bit<32> key_b;
    bit<32> key_ports;
    bit<32> slot;
    bit<256> addrs6;
}

// Working headers (a control's working state in a header made valid where it starts; see
// docs/performance.md, "What every packet pays first"). Within one action p4c substitutes the
// expression that computed each field into every later use of the field (copy propagation), and
// bmv2 evaluates every copy. COPY_BARRIER(w) inside an action stops that: `setValid()` on a header
// that is already valid leaves its fields as they are (bmv2's add_header does nothing then), but
// p4c forgets the values it knew for them, and later statements read the fields. It does what
// cutting the action in two did, without a step (docs/performance.md, "A barrier inside an
// action"). Only for a header the action's control has made valid.
#define COPY_BARRIER(h) h.setValid()

#ifdef ACKWISE_ACK_SWITCH
#include "ack_switch_work.p4"
#endif

// Metadata shared by every ackwise program (one struct, as v1model requires one type per pipeline).
struct local_metadata_t {
    parser_meta_t parser_meta;
    tcp_options_meta_t tcp_opts;
    // IPv4 total length minus the IPv4 header, or IPv6 payload length minus the extension headers:
    // the TCP pseudo-header length
    bit<16> l4_len;
    bit<16> tcp_payload_len;    // bytes of TCP payload (l4_len minus the data offset)
    bool ipv4_rewritten;        // a header field changed: recompute the IPv4 checksum (IPv6 has none)
    bool tcp_rewritten;         // a TCP field changed: recompute the TCP checksum
#ifndef ACKWISE_AP_PROXY
    // ack_switch's (the ACK policy, what its thinning stage hands to egress), kept in the programs
    // measured with them (the yardsticks forward_only and thinning_floor); the AP proxy does
    // without: each field is a reset every packet pays for (docs/ap-proxy.md, "IPv6").
    ack_policy_params_t ack_policy;
    ack_meta_t ack;
#endif
    ap_meta_t ap;
    bool tcp_rewritten_no_payload;  // a TCP header rewritten for a packet whose payload is cut off
    // A pure ACK's header and options rewritten (coalescing): the checksum covers them and nothing
    // after, and the frame is cut at the IPv4 total length. bmv2's payload would include an
    // Ethernet trailer (bytes after the IPv4 packet), which the checksum must not cover.
    bool tcp_rewritten_header_only;
#ifndef ACKWISE_AP_PROXY
    // Travel with a copy for the agent to egress (the clone keeps only the fields of this list).
    @field_list(HOLDBACK_FIELD_LIST)
    bit<16> hold_ms;
    @field_list(HOLDBACK_FIELD_LIST)
    bit<16> agent_kind;
    @field_list(HOLDBACK_FIELD_LIST)
    bit<32> agent_arg;
#endif
#ifdef ACKWISE_AP_PROXY
    // The AP proxy's flow key (a field of the metadata, not a local: a local passed to the control
    // that sets it for a served station only would be an uninitialised read to p4c). Only there.
    ap_flow_key_t ap_flow;
#endif
#ifdef ACKWISE_ACK_SWITCH
    // ack_switch's working headers (ack_switch_work.p4). Only there: the other programs, among them
    // the yardsticks forward_only and thinning_floor, keep the metadata they were measured with.
    ack_switch_work_t work;
#endif
}

#endif
