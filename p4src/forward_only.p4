// Baseline for `make bench`: the same parser, verdict, forwarding and checksums as ack_switch,
// without the ACK thinning stage.
#include <core.p4>
#include <v1model.p4>

// IPv6 parsed and routed (headers.p4: the programs that define ACKWISE_IPV6).
#define ACKWISE_IPV6
#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/parser_verdict.p4"
#include "include/forwarding.p4"
#include "include/checksums.p4"

control ForwardOnlyIngress(inout headers_t hdr, inout local_metadata_t meta,
                           inout standard_metadata_t standard_metadata) {
    ParserVerdict() parser_verdict;
    Forwarding() forwarding;

    apply {
        bool malformed;
        bool drop_malformed;
        parser_verdict.apply(standard_metadata.parser_error, meta.parser_meta.malformed_reason,
                             malformed, drop_malformed);
        bool drop_forwarding;
        forwarding.apply(hdr.ethernet, hdr.ipv4, hdr.ipv6, standard_metadata.checksum_error == 0,
                         standard_metadata.egress_spec, drop_forwarding, meta.ipv4_rewritten);
        if (drop_malformed || drop_forwarding) {
            mark_to_drop(standard_metadata);
        }
    }
}

control ForwardOnlyEgress(inout headers_t hdr, inout local_metadata_t meta,
                          inout standard_metadata_t standard_metadata) {
    apply { }
}

V1Switch(AckwiseParser(), AckwiseVerifyChecksum(), ForwardOnlyIngress(), ForwardOnlyEgress(),
         AckwiseComputeChecksum(), AckwiseDeparser()) main;
