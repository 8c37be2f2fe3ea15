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

#endif
