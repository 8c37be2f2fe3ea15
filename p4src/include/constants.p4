// Sizes, widths and protocol numbers shared by every ackwise program.
// Anything the control plane must agree on (counter indices, reason codes) is defined here once;
// `make constants` generates its Python side, control-plane/ackwise/twins/p4names.py.
#ifndef ACKWISE_CONSTANTS_P4
#define ACKWISE_CONSTANTS_P4

// ---- Sizes (preprocessor constants: header stacks and tables need literal sizes) ----

// TCP options the parser walks per segment. Linux puts at most 6 on a segment (NOP NOP TS NOP NOP
// SACK); anything past this depth stays in the payload, unparsed and byte-exact, and is treated as
// an unknown option.
#define TCP_OPTIONS_MAX 10
#define IPV4_LPM_TABLE_SIZE 1024
#define IPV6_LPM_TABLE_SIZE 1024
// IPv6 extension headers the parser follows per packet (Hop-by-Hop, Routing, Destination Options:
// RFC 8200's order has at most four of them before the upper layer; two, e.g. Hop-by-Hop and
// Destination Options, are what is met in practice). A packet with more, or with one longer than
// IPV6_EXT_LEN_MAX, is forwarded untouched and counted (MALFORMED_IPV6_EXT_SKIPPED). Two, not four:
// each header instance is 0.7 thousand instructions every packet, IPv4 too, pays (bmv2 marks it
// invalid), which IPv4's bounds cannot afford (docs/performance.md, "Issue 40").
#define IPV6_EXT_HEADERS_MAX 2
// The longest extension header followed, in its own Hdr Ext Len units (8 bytes beyond the first
// 8): 31, 256 bytes, e.g. a segment routing header with 15 segments.
#define IPV6_EXT_LEN_MAX 31
// Hdr Ext Len's bits above IPV6_EXT_LEN_MAX in an extension header's first 4 bytes (any set: longer).
#define IPV6_EXT_LEN_ABOVE_MAX_MASK 0x00E00000
#if IPV6_EXT_LEN_MAX != 31
#error "IPV6_EXT_LEN_ABOVE_MAX_MASK is for IPV6_EXT_LEN_MAX 31: update it with it"
#endif
#define L2_EXACT_TABLE_SIZE 1024
// Flow records: one per slot, two half-flow records (one per direction) per slot.
#define FLOW_SLOTS 4096
#define HALF_FLOWS 8192
#define THINNING_STATS 11
#define KEEP_REASONS 17
#define ACK_POLICY_TABLE_SIZE 256
#define FLOW_POLICY_TABLE_SIZE 8192   // per-flow rules (the controller's): two per flow slot
#define PORTS 512               // port_t is 9 bits
#define ECN_PORT_TABLE_SIZE 64
#define AP_PORT_ROLE_TABLE_SIZE 64
#define AP_STATIONS_TABLE_SIZE 256
const bit<32> BMV2_DEFAULT_QUEUE_DEPTH_PKTS = 64;   // simple_switch's egress queue

// One slot per malformed_reason_t / drop_reason_t value below.
#define MALFORMED_REASONS 10
#define DROP_REASONS 8

// ---- Widths ----
typedef bit<9> port_t;
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;
typedef bit<32> tcp_seq_t;
typedef bit<48> time_us_t;     // bmv2's ingress_global_timestamp: microseconds since start

// ---- Protocol numbers ----
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_IPV6 = 0x86DD;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;
// IPv6 Next Header values of extension headers (RFC 8200 4; IANA's IPv6 Extension Header Types).
// Followed: Hop-by-Hop, Routing and Destination Options share one layout (next header, length,
// data). Not followed (forwarded untouched, counted): a Fragment header (like an IPv4 fragment,
// only the whole segment's TCP header is read), ESP (encrypted), AH, and the rest, whose upper
// layer the switch does not look for.
const bit<8> IPV6_EXT_HOP_BY_HOP = 0;
const bit<8> IPV6_EXT_ROUTING = 43;
const bit<8> IPV6_EXT_FRAGMENT = 44;
const bit<8> IPV6_EXT_ESP = 50;
const bit<8> IPV6_EXT_AH = 51;
const bit<8> IPV6_NO_NEXT_HEADER = 59;
const bit<8> IPV6_EXT_DEST_OPTIONS = 60;
const bit<8> IPV6_EXT_MOBILITY = 135;
const bit<8> IPV6_EXT_HIP = 139;
const bit<8> IPV6_EXT_SHIM6 = 140;
const bit<8> IPV6_EXT_EXPERIMENTAL_1 = 253;
const bit<8> IPV6_EXT_EXPERIMENTAL_2 = 254;

const bit<8> TCP_FLAG_FIN = 0x01;
const bit<8> TCP_FLAG_SYN = 0x02;
const bit<8> TCP_FLAG_RST = 0x04;
const bit<8> TCP_FLAG_PSH = 0x08;
const bit<8> TCP_FLAG_ACK = 0x10;
const bit<8> TCP_FLAG_URG = 0x20;
const bit<8> TCP_FLAG_ECE = 0x40;
const bit<8> TCP_FLAG_CWR = 0x80;

const bit<8> TCP_OPT_EOL = 0;
const bit<8> TCP_OPT_NOP = 1;
const bit<8> TCP_OPT_MSS = 2;
const bit<8> TCP_OPT_WS = 3;
const bit<8> TCP_OPT_SACK_PERMITTED = 4;
const bit<8> TCP_OPT_SACK = 5;
const bit<8> TCP_OPT_TIMESTAMPS = 8;

// ---- Why the parser gave up on a packet (index into the `malformed` counter) ----
typedef bit<8> malformed_reason_t;
const malformed_reason_t MALFORMED_NONE = 0;
const malformed_reason_t MALFORMED_TCP_OPTION_LENGTH = 1;    // option length 0 or 1
const malformed_reason_t MALFORMED_TCP_OPTION_OVERRUN = 2;   // option runs past the data offset
const malformed_reason_t MALFORMED_TCP_DATA_OFFSET = 3;      // data offset below 5
const malformed_reason_t MALFORMED_TRUNCATED = 4;            // packet ends inside a header
const malformed_reason_t MALFORMED_IPV4_IHL = 5;             // IHL below 5: dropped, as RFC 1812 asks
const malformed_reason_t MALFORMED_OTHER_PARSER_ERROR = 6;   // any other parser_error
// Version not 4, total length below the header length, or the header (with its options) cut short
// by the end of the packet: dropped, as RFC 1812 5.2.2 asks of a router. (Found by the fuzzer:
// such packets were routed on their first 20 bytes, their checksum verified over those alone.)
const malformed_reason_t MALFORMED_IPV4_HEADER = 7;
// Version not 6, a payload length shorter than the extension headers, or the fixed header or an
// extension header cut short by the end of the packet: dropped, as MALFORMED_IPV4_HEADER.
const malformed_reason_t MALFORMED_IPV6_HEADER = 8;
// An extension header the parser does not follow (see IPV6_EXT_*), more than IPV6_EXT_HEADERS_MAX
// of them, or one longer than IPV6_EXT_LEN_MAX: not malformed, but the upper layer is not read, so
// the packet is forwarded untouched and left alone by the ACK policies; counted here.
const malformed_reason_t MALFORMED_IPV6_EXT_SKIPPED = 9;

// ---- Why the forwarding stage dropped a packet (index into the `drops` counter) ----
typedef bit<8> drop_reason_t;
const drop_reason_t DROP_NONE = 0;
const drop_reason_t DROP_NO_ENTRY = 1;          // no IPv4 or IPv6 route and no L2 entry
const drop_reason_t DROP_TTL_EXPIRED = 2;       // routed with TTL (IPv6: hop limit) 0 or 1
const drop_reason_t DROP_IPV4_CHECKSUM = 3;     // routed with a bad IPv4 header checksum
const drop_reason_t DROP_MALFORMED_IPV4 = 4;    // IPv4 header the parser could not read

// ---- ACK thinning ----

// The policy a flow's ACKs are under (ack_policy.p4 sets it; ackwise.twins.policies names
// them).
typedef bit<8> ack_policy_t;
const ack_policy_t POLICY_OFF = 0;
const ack_policy_t POLICY_EVERY_D = 1;
const ack_policy_t POLICY_DYNAMIC_D = 2;
const ack_policy_t POLICY_TACK = 3;
const ack_policy_t POLICY_FILTER = 4;
const ack_policy_t POLICY_ACC = 5;
const ack_policy_t POLICY_COALESCE = 6;

// ACC congestion signals (a bitmask: which ones a flow reacts to is per-flow policy).
typedef bit<8> acc_signal_t;
const acc_signal_t ACC_SIGNAL_CE = 0x01;      // CE on the flow's data or ACKs, seen or applied here
const acc_signal_t ACC_SIGNAL_ECE = 0x02;     // ECE on the flow's ACKs
const acc_signal_t ACC_SIGNAL_QUEUE = 0x04;   // the flow's ACK entered a queue deeper than its port's K
// ACC's RTT until the switch has measured one (and no override is set).
const bit<32> ACC_RTT_DEFAULT_US = 100000;
// d_cap is at most this (the flight bound is computed by a 7-step search).
const bit<8> ACC_D_CAP_MAX = 127;

// Why a pure ACK was kept: the first rule of the safety contract that holds, or the policy.
typedef bit<8> keep_reason_t;
const keep_reason_t KEEP_NONE = 0;              // not kept: the policy thinned it
const keep_reason_t KEEP_POLICY = 1;            // the policy's own threshold was reached
const keep_reason_t KEEP_FLAGS = 2;             // SYN, FIN, RST, URG or PSH
const keep_reason_t KEEP_PAYLOAD = 3;           // carries data
const keep_reason_t KEEP_FIRST_ACK = 4;         // no earlier ACK of this half-flow to compare with
const keep_reason_t KEEP_WINDOW_UPDATE = 5;     // same ACK number, different window
const keep_reason_t KEEP_DUP_ACK = 6;           // ACK number not advancing
const keep_reason_t KEEP_DSACK = 7;
const keep_reason_t KEEP_SACK_NEWS = 8;
const keep_reason_t KEEP_ECE_CWR_CHANGE = 9;
const keep_reason_t KEEP_WINDOW_REOPEN = 10;    // window was below one MSS, now is not
const keep_reason_t KEEP_UNKNOWN_OPTION = 11;
const keep_reason_t KEEP_TS_REORDERED = 12;     // timestamps older than ones already seen
const keep_reason_t KEEP_IDLE = 13;             // first ACK after the flow was idle
const keep_reason_t KEEP_ACKS_ALL_DATA = 14;    // acknowledges everything the switch saw sent
const keep_reason_t KEEP_RELEASED = 15;         // held by the hold-back agent, released: nothing newer passed
const keep_reason_t KEEP_RECOVERY = 16;         // below the recovery point of a loss being repaired

// Global counters of the thinning stage (index into ack_thinning.stats, THINNING_STATS cells).
typedef bit<32> thinning_stat_t;
const thinning_stat_t STAT_COLLISIONS = 0;      // packet's slot held another live flow: passed untouched
const thinning_stat_t STAT_RECLAIMED = 1;       // a record taken over from an idle or closed flow
const thinning_stat_t STAT_NEW_FLOWS = 2;       // a record created in an empty slot
const thinning_stat_t STAT_ACKS_SEEN = 3;
const thinning_stat_t STAT_ACKS_THINNED = 4;
const thinning_stat_t STAT_ACKS_FILTERED = 5;   // dropped at egress by the filter policy
const thinning_stat_t STAT_ACKS_ABSORBED = 6;   // folded into the flow's waiting ACK (coalescing)
const thinning_stat_t STAT_ACKS_HELD = 7;       // handed to the hold-back agent instead of forwarded
const thinning_stat_t STAT_ACKS_PASSED = 8;     // passed on by ingress (forwarded, queued, or left to the filter)
const thinning_stat_t STAT_ACKS_SHARED = 9;     // handed to the agent by the queue share (ack_share.p4), to come back later
const thinning_stat_t STAT_SHARE_BOUNCED = 10;  // came back from the agent too early: sent back to it again

// Counters of the filter policy at egress (index into ack_filter.stats, FILTER_STATS cells).
typedef bit<32> filter_stat_t;
const filter_stat_t FILTER_STAT_FORWARDED = 0;
const filter_stat_t FILTER_STAT_FILTERED = 1;
// Forwarded (and counted so) although a newer ACK entered the queue behind it: the queue may have
// been full, so the newer one may have been tail-dropped.
const filter_stat_t FILTER_STAT_KEPT_QUEUE_FULL = 2;
#define FILTER_STATS 3

// Coalescing: a waiting ACK that has not left this long after the departure the queue model
// booked for it no longer takes ACKs in (it was tail-dropped after all, or its queue stalled).
const bit<32> COALESCE_SLACK_US = 10000;
// Coalescing keeps a ring of this many waiting-ACK slots per half-flow (a power of two: a slot is
// the low COALESCE_SLOT_BITS bits of its ACK's serial). Each closed waiting ACK holds its slot
// until it leaves; during a recovery with a new hole per ACK, a slot takes about three ACKs in.
#define COALESCE_SLOT_BITS 3
const bit<32> COALESCE_SLOTS = 1 << COALESCE_SLOT_BITS;
// A waiting ACK that has left says its SACK blocks to the sender; for this long after it left,
// the next waiting ACK may drop a block it said (a bound against a later flow in the same record).
const bit<32> COALESCE_SAID_US = 1000000;

// Hold-back (ack_holdback.p4): the mirroring session that copies held ACKs to the agent's CPU
// port, the clone field list that carries the hold time with the copy, and how long the agent may
// be silent before the switch stops holding ACKs back (fail-open).
const bit<32> HOLDBACK_SESSION = 1;
#define HOLDBACK_FIELD_LIST 1
const bit<8> HOLDBACK_FIELD_LIST_ID = HOLDBACK_FIELD_LIST;
const bit<48> HOLDBACK_AGENT_TIMEOUT_US = 500000;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;    // standard_metadata.instance_type
// What a copy to the agent is (holdback_h.kind): a held ACK (hold-back), or one of the queue
// share's (ack_share.p4): an ACK to keep in its flow's order, or the switch's answer about an ACK
// the agent sent back (it was too early: try again; it was taken: the next may follow).
typedef bit<16> agent_kind_t;
const agent_kind_t AGENT_KIND_HOLD = 0;
const agent_kind_t AGENT_KIND_SHARE_KEEP = 1;
const agent_kind_t AGENT_KIND_SHARE_BOUNCED = 2;
const agent_kind_t AGENT_KIND_SHARE_TAKEN = 3;
// The queue share: a flow's pure ACKs beyond its two newest in a modelled queue wait in the agent,
// so another flow's ACK waits behind at most two of its ACKs. The switch keeps the departures of a
// flow's two newest queued ACKs (SHARE_PKTS is that ring's size, not a parameter). A flow whose
// ACKs the agent holds and of which nothing came back or went to the agent for SHARE_STALL_US is
// treated as holding nothing (a copy lost on the way to the agent; a bound, not a timer).
#define SHARE_PKTS 2
const bit<48> SHARE_STALL_US = 1000000;

// An IPv6 flow's record (flow_key.p4, ack_thinning.p4): its key's first address word, where an
// IPv4 key has its lower address, and ack_thinning.key_a's value; ack_thinning.key_b is 0, so that
// (key_a, key_b) is never an IPv4 key's (lower address first). The addresses are in
// ack_thinning.key6_a and key6_b, KEY6_WORDS 32-bit words per slot, the highest first.
const bit<32> FLOW_KEY_IPV6 = 1;
// ...and what an IPv6 packet's key has there when the slot's addresses are not its own: no record's.
const bit<32> FLOW_KEY_IPV6_OTHER = 2;
#define KEY6_WORDS 4

// Records idle this long may be taken over by another flow (ack_thinning.config[0] overrides).
const bit<48> RECLAIM_IDLE_DEFAULT_US = 10000000;
// RTTmin is a windowed minimum over this long.
const bit<48> RTT_MIN_WINDOW_US = 10000000;

// ---- AP proxy ----
// IEEE local experimental: an agent's heartbeat on its CPU port (the AP's repair agent, the hold-back agent)
const bit<16> ETHERTYPE_AGENT_HEARTBEAT = 0x88B5;
// What the AP proxy does with a flow (ap.mode).
typedef bit<8> ap_mode_t;
const ap_mode_t AP_MODE_PASS = 0;       // forward untouched (not yet fast, or back to it)
const ap_mode_t AP_MODE_FAST = 1;       // spoof ACKs for in-order data
const ap_mode_t AP_MODE_HOLDOFF = 2;    // left fast mode until ap.holdoff_until_us
const ap_mode_t AP_MODE_OFF = 3;        // left fast mode for good
// What a port is to the AP proxy (ap.port_role, ap.egress_role).
typedef bit<8> ap_role_t;
const ap_role_t AP_ROLE_NONE = 0;
const ap_role_t AP_ROLE_UPLINK = 1;
const ap_role_t AP_ROLE_WIRELESS = 2;
const ap_role_t AP_ROLE_CPU = 3;
// Multicast copies of a spoofed segment (their egress_rid).
typedef bit<16> ap_rid_t;
const ap_rid_t AP_RID_STATION = 0;
const ap_rid_t AP_RID_CPU = 1;
const ap_rid_t AP_RID_SPOOF = 2;
// The agent counts as gone after this long without a heartbeat.
const bit<48> AP_AGENT_TIMEOUT_US = 500000;
// Index into the ap.stats counter (AP_STATS cells).
typedef bit<32> ap_stat_t;
const ap_stat_t AP_STAT_SPOOFED = 0;
const ap_stat_t AP_STAT_CONSUMED = 1;         // station ACKs at or below the spoofed point
const ap_stat_t AP_STAT_DUP_TO_AGENT = 2;     // duplicates among them: a wireless loss
const ap_stat_t AP_STAT_BUDGET_STALLS = 3;    // in-order data not spoofed: over budget
const ap_stat_t AP_STAT_NOT_SPOOFED = 4;      // in fast mode but out of order, FIN/RST/URG, or no window
const ap_stat_t AP_STAT_STALL_EXITS = 5;      // left fast mode: the station stopped advancing
const ap_stat_t AP_STAT_COLLISIONS = 6;
#define AP_STATS 7
// Packet-outs from the agent to stations (local repairs) are counted in ap.repairs.

#endif
