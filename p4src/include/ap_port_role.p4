// The AP proxy's ports: wired uplinks, the wireless side (with the CPU port its station ACKs go
// to), and the CPU port of the repair agent. From the control plane.
#ifndef ACKWISE_AP_PORT_ROLE_P4
#define ACKWISE_AP_PORT_ROLE_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

control ApPortRole(in port_t ingress_port, out ap_role_t role, out port_t cpu_port) {
    @name(".ap.uplink")
    action uplink() {
        role = AP_ROLE_UPLINK;
    }

    @name(".ap.wireless")
    action wireless(port_t cpu) {
        role = AP_ROLE_WIRELESS;
        cpu_port = cpu;
    }

    @name(".ap.cpu")
    action cpu() {
        role = AP_ROLE_CPU;
    }

    @name(".ap.port_role")
    table port_role {
        key = { ingress_port: exact @name("port"); }
        actions = { uplink; wireless; cpu; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AP_PORT_ROLE_TABLE_SIZE;
    }

    apply {
        role = AP_ROLE_NONE;
        cpu_port = 0;
        port_role.apply();
    }
}

// Where a packet goes, for the same reason: the proxy acts only for packets crossing between an
// uplink and the wireless side. Traffic between two stations, or between two uplinks, is none of
// its business; taken for a station's ACK to a sender, a station-to-station packet was multicast
// to group (0 << 8) | its egress port, which exists only for uplinks, and dropped.
control ApEgressRole(in port_t egress_port, out ap_role_t role) {
    @name(".ap.egress_uplink")
    action egress_uplink() {
        role = AP_ROLE_UPLINK;
    }

    @name(".ap.egress_wireless")
    action egress_wireless() {
        role = AP_ROLE_WIRELESS;
    }

    @name(".ap.egress_role")
    table egress_role {
        key = { egress_port: exact @name("port"); }
        actions = { egress_uplink; egress_wireless; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AP_PORT_ROLE_TABLE_SIZE;
    }

    apply {
        role = AP_ROLE_NONE;
        egress_role.apply();
    }
}

#endif
