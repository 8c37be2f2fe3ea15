// Turns what the parser recorded into one verdict: counted by reason, and dropped only when the
// IPv4 or IPv6 header itself is unreadable. Every other malformed packet is forwarded unmodified and is
// left alone by the ACK policies.
#ifndef ACKWISE_PARSER_VERDICT_P4
#define ACKWISE_PARSER_VERDICT_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

control ParserVerdict(in error parser_error, inout malformed_reason_t reason, out bool malformed,
                      out bool drop) {
    @name(".parser.malformed") counter(MALFORMED_REASONS, CounterType.packets) malformed_packets;

    apply {
        if (reason == MALFORMED_NONE) {
            if (parser_error == error.PacketTooShort) {
                reason = MALFORMED_TRUNCATED;
            } else if (parser_error != error.NoError) {
                reason = MALFORMED_OTHER_PARSER_ERROR;
            }
        }
        malformed = reason != MALFORMED_NONE;
        drop = reason == MALFORMED_IPV4_IHL || reason == MALFORMED_IPV4_HEADER
#ifdef ACKWISE_IPV6
            || reason == MALFORMED_IPV6_HEADER
#endif
            ;
        if (malformed) {
            malformed_packets.count((bit<32>)reason);
        }
    }
}

#endif
