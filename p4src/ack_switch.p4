// ackwise ACK switch: forwards IPv4 (LPM routing, L2 fallback), marks ECN on deep egress queues
// and, per flow, thins the pure ACKs that carry no news under the safety contract (every_d,
// dynamic_d, tack, acc at ingress; filter at egress) or coalesces them at the egress queue
// (coalesce, and acc on a modelled queue). See docs/ack-thinning.md and docs/acc.md.
#include <core.p4>
#include <v1model.p4>

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
    AckFilterEnqueue() ack_filter_enqueue;

    // In an action: in the apply block p4c turns each ?: into a branch with a temporary, a
    // metadata field every packet pays for.
    action copy_to_agent() {
        meta.hold_ms = meta.ack.hold ? meta.ack_policy.hold_ms : 16w0;
        meta.agent_kind = meta.ack.hold ? AGENT_KIND_HOLD : meta.ack.share_kind;
        meta.agent_arg = meta.ack.hold ? meta.ack.hold_base_ack : meta.ack.share_wait_us;
        clone_preserving_field_list(CloneType.I2E, HOLDBACK_SESSION, HOLDBACK_FIELD_LIST_ID);
    }

    apply {
        bool from_agent;
        bool heartbeat;
        holdback_port.apply(standard_metadata.ingress_port, hdr.ethernet.ether_type,
                            standard_metadata.ingress_global_timestamp, from_agent, heartbeat);
        bool malformed;
        bool drop_malformed;
        parser_verdict.apply(standard_metadata.parser_error, meta.parser_meta.malformed_reason,
                             malformed, drop_malformed);
        bool drop_forwarding;
        if (heartbeat) {
            drop_forwarding = true;     // the agent's heartbeat ends here
        } else {
            forwarding.apply(hdr.ethernet, hdr.ipv4, hdr.ipv6, standard_metadata.checksum_error == 0,
                             standard_metadata.egress_spec, drop_forwarding, meta.ipv4_rewritten);
        }
        queue_view_t queue;
        queue_peek.apply(standard_metadata.egress_spec, standard_metadata.ingress_global_timestamp, queue);
        // IPv4 only until the flow key and the policy tables cover IPv6 (issue 40): TCP over IPv6
        // is parsed, and passes every policy untouched.
        if (!malformed && !drop_forwarding && hdr.tcp.isValid() && hdr.ipv4.isValid()) {
            ack_thinning.apply(hdr.ipv4, hdr.tcp, meta.tcp_opts, meta.tcp_payload_len,
                               standard_metadata.ingress_global_timestamp, standard_metadata.egress_spec,
                               queue, from_agent,
                               meta.ack_policy, meta.ack);
            if (meta.ack.hold || meta.ack.share_kind != 0) {
                // The agent gets a copy of the ACK as it arrived; what it is to do with it travels
                // with it (hold-back: the hold time; the queue share: how long to wait, 0 for one
                // it sent back after the policy stopped being coalesce, which is not a pure ACK
                // here).
                copy_to_agent();
            }
            if (meta.ack.pure_ack && meta.ack_policy.policy == POLICY_FILTER) {
                ack_filter_enqueue.apply(hdr.tcp, meta.tcp_opts, meta.ack);
            }
        }
        if (drop_malformed || drop_forwarding || meta.ack.drop) {
            mark_to_drop(standard_metadata);
        } else {
            queue_commit.apply(standard_metadata, queue);
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
        if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2
                || (meta.ack.tracked && meta.ack_policy.policy == POLICY_ACC))) {
            bool queue_above_k;
            bool marked;
            ecn_marking.apply(hdr.ipv4, standard_metadata.egress_port, standard_metadata.enq_qdepth,
                              queue_above_k, marked);
            if (marked) {
                meta.ipv4_rewritten = true;
            }
            if (meta.ack.tracked && meta.ack_policy.policy == POLICY_ACC) {
                if (marked && meta.tcp_payload_len != 0) {
                    // CE this switch put on the flow's data: a signal for the flow's ACKs.
                    acc_signal_marked.apply(meta.ack.half ^ 1, ACC_SIGNAL_CE, meta.ack_policy.acc_signals);
                }
                if (meta.ack.pure_ack && queue_above_k) {
                    acc_signal_queue.apply(meta.ack.half, ACC_SIGNAL_QUEUE, meta.ack_policy.acc_signals);
                }
            }
        }
        // The rest is about pure ACKs the thinning stage evaluated.
        if (meta.ack.pure_ack) {
            if (meta.ack.coalesce_serial != 0) {
                coalesce_departure.apply(meta.ack.half, meta.ack.coalesce_serial,
                                         standard_metadata.egress_global_timestamp, hdr, meta.tcp_opts,
                                         meta.tcp_rewritten_header_only);
            }
            if (meta.ack.filter_candidate) {
                bool drop;
                ack_filter_dequeue.apply(hdr.tcp, meta.tcp_opts, meta.ack, standard_metadata.egress_port,
                                         standard_metadata.enq_qdepth, standard_metadata.deq_qdepth, drop);
                if (drop) {
                    mark_to_drop(standard_metadata);
                }
            }
        }
    }
}

V1Switch(AckwiseParser(), AckwiseVerifyChecksum(), AckSwitchIngress(), AckSwitchEgress(),
         AckwiseComputeChecksum(), AckwiseDeparser()) main;
