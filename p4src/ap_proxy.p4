// ackwise AP proxy (FastACK-style): at a Wi-Fi access point, acknowledge in-order data to the wired
// sender on the station's behalf, consume the station's own ACKs, and let the repair agent on the
// CPU port resend what the air lost. See docs/ap-proxy.md.
#include <core.p4>
#include <v1model.p4>

// IPv6 parsed and routed (headers.p4: the programs that define ACKWISE_IPV6).
#define ACKWISE_IPV6
// The AP proxy's metadata (headers.p4: its flow key).
#define ACKWISE_AP_PROXY
#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/parser_verdict.p4"
#include "include/forwarding.p4"
#include "include/ap_port_role.p4"
#include "include/ap_stations.p4"
#include "include/ap_proxy_flows.p4"
#include "include/spoof_ack.p4"
#include "include/checksums.p4"

control ApProxyIngress(inout headers_t hdr, inout local_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    ParserVerdict() parser_verdict;
    Forwarding() forwarding;
    ApPortRole() port_role;
    ApEgressRole() egress_role;
    ApStationSelect() station_select;
    ApProxyFlows() proxy;

    @name(".ap.repairs") counter(1, CounterType.packets) repairs;

    apply {
        bool malformed;
        bool drop_malformed;
        parser_verdict.apply(standard_metadata.parser_error, meta.parser_meta.malformed_reason,
                             malformed, drop_malformed);
        ap_role_t role;
        port_t cpu_port;
        port_role.apply(standard_metadata.ingress_port, role, cpu_port);

        if (role == AP_ROLE_CPU && hdr.ethernet.ether_type == ETHERTYPE_AGENT_HEARTBEAT) {
            ap_agent_alive_at.write(0, standard_metadata.ingress_global_timestamp);
            mark_to_drop(standard_metadata);
        } else {
            meta.ap.sender_mac = hdr.ethernet.src_addr;
            meta.ap.receiver_mac = hdr.ethernet.dst_addr;
            bool drop_forwarding;
            forwarding.apply(hdr.ethernet, hdr.ipv4, hdr.ipv6, standard_metadata.checksum_error == 0,
                             standard_metadata.egress_spec, drop_forwarding, meta.ipv4_rewritten);
            if (role == AP_ROLE_CPU) {
                repairs.count(0);   // a packet-out: the agent's repair, straight to the station
            } else if (!malformed && !drop_forwarding && hdr.tcp.isValid()  // over IPv4 or IPv6
                       && (role == AP_ROLE_UPLINK || role == AP_ROLE_WIRELESS)) {
                ap_role_t out_role;
                egress_role.apply(standard_metadata.egress_spec, out_role);
                bool crossing = (role == AP_ROLE_UPLINK && out_role == AP_ROLE_WIRELESS)
                    || (role == AP_ROLE_WIRELESS && out_role == AP_ROLE_UPLINK);
                ap_station_params_t station;
                station_select.apply(role, hdr.ipv4, hdr.ipv6, hdr.ipv6_ext[0], hdr.tcp, station, meta.ap_flow);
                if (station.served && crossing) {
                    proxy.apply(hdr.ipv4, hdr.ipv6, hdr.tcp, meta.tcp_opts, meta.tcp_payload_len,
                                standard_metadata.ingress_global_timestamp, role, station, meta.ap_flow,
                                standard_metadata.ingress_port, cpu_port, standard_metadata.egress_spec,
                                standard_metadata.mcast_grp, meta.ap);
                }
            }
            if (drop_malformed || drop_forwarding) {
                mark_to_drop(standard_metadata);
            }
        }
    }
}

control ApProxyEgress(inout headers_t hdr, inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    SpoofAck() spoof_ack;

    apply {
        if (meta.ap.spoof && standard_metadata.egress_rid == AP_RID_SPOOF) {
            spoof_ack.apply(hdr, meta);
        }
    }
}

V1Switch(AckwiseParser(), AckwiseVerifyChecksum(), ApProxyIngress(), ApProxyEgress(),
         AckwiseComputeChecksum(), AckwiseDeparser()) main;
