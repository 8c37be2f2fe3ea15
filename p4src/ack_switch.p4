// ackwise ACK switch: forwards IPv4 and IPv6 (LPM routing, L2 fallback), marks ECN on deep egress
// queues and, per flow, thins the pure ACKs that carry no news under the safety contract (every_d,
// dynamic_d, tack, acc at ingress; filter at egress) or coalesces them at the egress queue
// (coalesce, and acc on a modelled queue). See docs/ack-thinning.md and docs/acc.md.
#include <core.p4>
#include <v1model.p4>

// The metadata with ack_switch's working headers (headers.p4, ack_switch_work.p4).
#define ACKWISE_ACK_SWITCH
// IPv6 parsed and routed (headers.p4: the programs that define ACKWISE_IPV6).
#define ACKWISE_IPV6
#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/parser_verdict.p4"
#include "include/forwarding.p4"
#include "include/queue_model.p4"
#include "include/ack_thinning.p4"
#include "include/ack_filter.p4"
#include "include/acc.p4"
#include "include/ack_coalesce.p4"
#include "include/ack_holdback.p4"
#include "include/ecn_marking.p4"
#include "include/checksums.p4"

control AckSwitchIngress(inout headers_t hdr, inout local_metadata_t meta,
                         inout standard_metadata_t standard_metadata) {
    ParserVerdict() parser_verdict;
    Forwarding() forwarding;
    HoldbackPort() holdback_port;
    QueuePeek() queue_peek;
    QueueCommit() queue_commit;
    AckThinning() ack_thinning;

    apply {
        holdback_port.apply(standard_metadata.ingress_port, hdr.ethernet.ether_type,
                            standard_metadata.ingress_global_timestamp, meta.work.agent);
        bool malformed;
        bool drop_malformed;
        parser_verdict.apply(standard_metadata.parser_error, meta.parser_meta.malformed_reason,
                             malformed, drop_malformed);
        bool drop_forwarding;
        if (meta.work.agent.isValid() && meta.work.agent.heartbeat) {
            drop_forwarding = true;     // the agent's heartbeat ends here
        } else {
            forwarding.apply(hdr.ethernet, hdr.ipv4, hdr.ipv6, standard_metadata.checksum_error == 0,
                             standard_metadata.egress_spec, drop_forwarding, meta.ipv4_rewritten);
        }
        queue_peek.apply(standard_metadata.egress_spec, standard_metadata.ingress_global_timestamp, meta.work.queue);
        // TCP over IPv4 or IPv6 (the parser reads TCP behind nothing else).
        if (!malformed && !drop_forwarding && hdr.tcp.isValid()) {
            // Held ACKs and the queue share's get a copy for the agent (made inside: tests here
            // would be steps every packet pays for), and filter's pure ACKs are recorded there
            // as the newest in the queue.
            ack_thinning.apply(hdr.ipv4, hdr.ipv6, hdr.tcp, meta.tcp_opts, meta.tcp_payload_len,
                               standard_metadata.ingress_global_timestamp, standard_metadata.egress_spec,
                               meta.work.queue, meta.work.agent,
                               meta.ack_policy, meta.ack, meta.hold_ms, meta.agent_kind, meta.agent_arg,
                               meta.work.thinning, meta.work.ack, meta.work.rare,
                               meta.work.coalesce, meta.work.acc);
        }
        if (drop_malformed || drop_forwarding || meta.ack.drop) {
            mark_to_drop(standard_metadata);
        } else {
            queue_commit.apply(standard_metadata, meta.work.queue);
        }
    }
}

control AckSwitchEgress(inout headers_t hdr, inout local_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    AckFilterDequeue() ack_filter_dequeue;
    EcnMarking() ecn_marking;
    AccSignal() acc_signal_marked;
    AccSignal() acc_signal_queue;
    AckCoalesceDeparture() coalesce_departure;

    // The working header of the ECN and acc part (ack_switch_work.p4), and the other half's index
    // for acc's signal (a register index that is an expression gets a temporary, a metadata field
    // every packet pays for).
    action ecn_work() {
        meta.work.ecn.setValid();
        meta.work.ecn.other = meta.ack.half ^ 1;
    }

    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            // A copy for the agent: what it is in front, the rest untouched.
            hdr.holdback.setValid();
            hdr.holdback.hold_ms = meta.hold_ms;
            hdr.holdback.kind = meta.agent_kind;
            hdr.holdback.arg = meta.agent_arg;
            exit;
        }
        // Only ECT packets can be marked, and only acc flows' ACKs need the queue signal: others
        // skip the lookup.
        // (meta.ack.tracked: an acc flow's packet, ack_thinning.p4.) IPv4 or IPv6 with a payload
        // (l4_len, 0 for any other packet), its ECN field in hdr.ipv4.ecn (parser.p4: the parser
        // copies IPv6's there): a test of either header's validity and both fields would be steps
        // every IPv4 packet pays for.
        if (meta.l4_len != 0 && (hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2 || meta.ack.tracked)) {
            ecn_work();
            ecn_marking.apply(hdr.ipv4, hdr.ipv6, standard_metadata.egress_port, standard_metadata.enq_qdepth,
                              meta.work.ecn);
            if (meta.work.ecn.marked) {
                meta.ipv4_rewritten = true;
            }
            if (meta.ack.tracked) {
                if (meta.work.ecn.marked && meta.tcp_payload_len != 0) {
                    // CE this switch put on the flow's data: a signal for the flow's ACKs.
                    acc_signal_marked.apply(meta.work.ecn.other, ACC_SIGNAL_CE, meta.ack_policy.acc_signals,
                                            meta.work.ecn.pending);
                }
                if (meta.ack.pure_ack && meta.work.ecn.queue_above_k) {
                    acc_signal_queue.apply(meta.ack.half, ACC_SIGNAL_QUEUE, meta.ack_policy.acc_signals,
                                           meta.work.ecn.pending);
                }
            }
        }
        // The rest is about pure ACKs the thinning stage queued as a waiting ACK or left to the
        // filter (one test for the others: every test is a step).
        if (meta.ack.coalesce_serial != 0 || meta.ack.filter_candidate) {
            if (meta.ack.coalesce_serial != 0) {
                coalesce_departure.apply(meta.ack.half, meta.ack.coalesce_serial,
                                         standard_metadata.egress_global_timestamp, hdr, meta.tcp_opts,
                                         meta.tcp_rewritten_header_only, meta.l4_len, meta.work.coalesce);
            }
            if (meta.ack.filter_candidate) {
                bool drop;
                ack_filter_dequeue.apply(hdr.tcp, meta.tcp_opts, meta.ack, standard_metadata.egress_port,
                                         standard_metadata.enq_qdepth, standard_metadata.deq_qdepth, drop,
                                         meta.work.filter);
                if (drop) {
                    mark_to_drop(standard_metadata);
                }
            }
        }
    }
}

V1Switch(AckwiseParser(), AckwiseVerifyChecksum(), AckSwitchIngress(), AckSwitchEgress(),
         AckwiseComputeChecksum(), AckwiseDeparser()) main;
