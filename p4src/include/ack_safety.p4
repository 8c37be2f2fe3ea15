// The safety contract: what no ACK policy may drop. The facts are computed by the caller from
// its per-flow state; the rules, and their order, are here once. The Python twin (used by the
// end-host agent) is control-plane/ackwise/twins/safety.py.
#ifndef ACKWISE_ACK_SAFETY_P4
#define ACKWISE_ACK_SAFETY_P4

#include "headers.p4"

// The facts, one bit each in the fact_bits the caller computes from its per-flow state (the
// thinning stage, ack_thinning.p4 ack_facts). Their names are the Python twin's AckFacts fields.
typedef bit<14> safety_fact_t;
const safety_fact_t FACT_FLAGS_KEEP = 1 << 12;        // SYN, FIN, RST, URG or PSH set
const safety_fact_t FACT_HAS_PAYLOAD = 1 << 11;
const safety_fact_t FACT_FIRST_ACK = 1 << 10;         // no earlier ACK of this half-flow
const safety_fact_t FACT_WINDOW_UPDATE = 1 << 9;      // same ACK number as the previous ACK, different window
const safety_fact_t FACT_DUP_ACK = 1 << 8;            // ACK number not advancing
const safety_fact_t FACT_DSACK = 1 << 7;
const safety_fact_t FACT_SACK_NEWS = 1 << 6;          // a SACK block the sender has not been told about
const safety_fact_t FACT_ECE_CWR_CHANGE = 1 << 5;     // ECE/CWR differ from the previous ACK's
const safety_fact_t FACT_WINDOW_REOPEN = 1 << 4;      // previous window below one MSS, this one not
const safety_fact_t FACT_UNKNOWN_OPTION = 1 << 3;
const safety_fact_t FACT_TS_REORDERED = 1 << 2;       // TSval or TSecr older than already seen: RTT samples stay valid
const safety_fact_t FACT_IDLE = 1 << 1;               // first ACK after the flow was idle
const safety_fact_t FACT_ACKS_ALL_DATA = 1 << 0;      // acknowledges all data the switch has seen the other side send
// Below the recovery point of a loss the other side is repairing: NewReno's partial ACKs (RFC
// 6582: each one makes the sender retransmit the next hole) and the ACKs of the slow start after a
// timeout. Without SACK, and in a window smaller than a policy's threshold, nothing else would
// reach the sender: acks_all_data holds only at the highest data sent, which a repair does not
// reach. docs/ack-thinning.md, "Loss recovery".
const safety_fact_t FACT_RECOVERY = 1 << 13;

control AckSafety(in bit<14> fact_bits, out keep_reason_t reason) {
    action keep(keep_reason_t why) {
        reason = why;
    }

    // The first rule whose fact holds names the reason. A table of constant entries rather than a
    // chain of conditions: bmv2 looks it up in one step, where p4c lowers a 13-deep ?: chain into
    // 25 primitives (docs/performance.md).
    table rules {
        key = {
            fact_bits: ternary;
        }
        actions = {
            keep;
        }
        const default_action = keep(KEEP_NONE);
        const entries = {
            FACT_FLAGS_KEEP &&& FACT_FLAGS_KEEP : keep(KEEP_FLAGS);
            FACT_HAS_PAYLOAD &&& FACT_HAS_PAYLOAD : keep(KEEP_PAYLOAD);
            FACT_FIRST_ACK &&& FACT_FIRST_ACK : keep(KEEP_FIRST_ACK);
            FACT_WINDOW_UPDATE &&& FACT_WINDOW_UPDATE : keep(KEEP_WINDOW_UPDATE);
            FACT_DUP_ACK &&& FACT_DUP_ACK : keep(KEEP_DUP_ACK);
            FACT_DSACK &&& FACT_DSACK : keep(KEEP_DSACK);
            FACT_SACK_NEWS &&& FACT_SACK_NEWS : keep(KEEP_SACK_NEWS);
            FACT_ECE_CWR_CHANGE &&& FACT_ECE_CWR_CHANGE : keep(KEEP_ECE_CWR_CHANGE);
            FACT_WINDOW_REOPEN &&& FACT_WINDOW_REOPEN : keep(KEEP_WINDOW_REOPEN);
            FACT_UNKNOWN_OPTION &&& FACT_UNKNOWN_OPTION : keep(KEEP_UNKNOWN_OPTION);
            FACT_TS_REORDERED &&& FACT_TS_REORDERED : keep(KEEP_TS_REORDERED);
            FACT_IDLE &&& FACT_IDLE : keep(KEEP_IDLE);
            FACT_RECOVERY &&& FACT_RECOVERY : keep(KEEP_RECOVERY);
            FACT_ACKS_ALL_DATA &&& FACT_ACKS_ALL_DATA : keep(KEEP_ACKS_ALL_DATA);
        }
    }

    apply {
        rules.apply();
    }
}

#endif
