// The safety contract: what no ACK policy may drop. The facts are computed by the caller from
// its per-flow state; the rules, and their order, are here once. The Python twin (used by the
// end-host agent) is control-plane/ackwise/safety.py.
#ifndef ACKWISE_ACK_SAFETY_P4
#define ACKWISE_ACK_SAFETY_P4

#include "headers.p4"

struct ack_facts_t {
    bool flags_keep;        // SYN, FIN, RST, URG or PSH set
    bool has_payload;
    bool first_ack;         // no earlier ACK of this half-flow
    bool window_update;     // same ACK number as the previous ACK, different window
    bool dup_ack;           // ACK number not advancing
    bool dsack;
    bool sack_news;         // a SACK block the sender has not been told about
    bool ece_cwr_change;    // ECE/CWR differ from the previous ACK's
    bool window_reopen;     // previous window below one MSS, this one not
    bool unknown_option;
    bool ts_reordered;      // TSval or TSecr older than already seen: keeping RTT samples valid
    bool idle;              // first ACK after the flow was idle
    bool acks_all_data;     // acknowledges all data the switch has seen the other side send
}

control AckSafety(in ack_facts_t facts, out keep_reason_t reason) {
    apply {
        if (facts.flags_keep) {
            reason = KEEP_FLAGS;
        } else if (facts.has_payload) {
            reason = KEEP_PAYLOAD;
        } else if (facts.first_ack) {
            reason = KEEP_FIRST_ACK;
        } else if (facts.window_update) {
            reason = KEEP_WINDOW_UPDATE;
        } else if (facts.dup_ack) {
            reason = KEEP_DUP_ACK;
        } else if (facts.dsack) {
            reason = KEEP_DSACK;
        } else if (facts.sack_news) {
            reason = KEEP_SACK_NEWS;
        } else if (facts.ece_cwr_change) {
            reason = KEEP_ECE_CWR_CHANGE;
        } else if (facts.window_reopen) {
            reason = KEEP_WINDOW_REOPEN;
        } else if (facts.unknown_option) {
            reason = KEEP_UNKNOWN_OPTION;
        } else if (facts.ts_reordered) {
            reason = KEEP_TS_REORDERED;
        } else if (facts.idle) {
            reason = KEEP_IDLE;
        } else if (facts.acks_all_data) {
            reason = KEEP_ACKS_ALL_DATA;
        } else {
            reason = KEEP_NONE;
        }
    }
}

#endif
