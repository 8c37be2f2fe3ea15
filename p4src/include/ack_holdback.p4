// Hold-back: the in-network counterpart of the receiver's delayed-ACK timer, for a switch that
// has no ACK queue to coalesce into (next to the receiver, every ACK may be the last of a burst).
// See docs/ack-thinning.md, "Holding back the end of a burst".
//
// An ACK that a thinning policy (every_d, dynamic_d, tack, acc) would drop, and that only the
// contract's end-of-burst rule keeps, is not forwarded: a copy goes to the hold-back agent on the
// CPU port, preceded by a 4-byte header with the policy's hold time. The agent keeps the newest
// copy per flow and sends it back when the hold time since the first held copy has passed. The
// switch forwards a copy coming back only if no ACK of the flow acknowledging at least as much was
// forwarded meanwhile; otherwise the ACK it held was superseded and is dropped.
//
// The agent sends a heartbeat to the CPU port; without one for HOLDBACK_AGENT_TIMEOUT_US the
// switch holds nothing (fail-open: the end-of-burst rule keeps those ACKs again).
#ifndef ACKWISE_ACK_HOLDBACK_P4
#define ACKWISE_ACK_HOLDBACK_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

// [0]: when the agent's last heartbeat arrived.
@name(".holdback.agent_alive_at_us") register<bit<48>>(1) holdback_alive_at;
// Per half-flow: ACKs held, and held ACKs released (forwarded when they came back).
@name(".holdback.held") register<bit<32>>(HALF_FLOWS) holdback_held;
@name(".holdback.released") register<bit<32>>(HALF_FLOWS) holdback_released;

// Where a packet comes from, as hold-back sees it: the agent's CPU port has an entry in
// holdback.ports (the control plane adds it, ackwise holdback setup); every other port costs one
// lookup that misses and sets nothing. `agent`: made valid for a packet from the agent's port
// (ack_switch_work.p4), so that no other packet writes anything here, nor has a field set to zero
// for it.
control HoldbackPort(in port_t ingress_port, in bit<16> ether_type, in time_us_t now, inout agent_h agent) {
    @name(".holdback.agent_port")
    action agent_port() {
        agent.setValid();
        agent.heartbeat = ether_type == ETHERTYPE_AGENT_HEARTBEAT;
    }

    // A step of its own, for a heartbeat only: written in the agent's action as `heartbeat ? now :
    // alive_at`, the value and the local read for it were metadata fields every packet paid for.
    action heard() {
        holdback_alive_at.write(0, now);
    }

    @name(".holdback.ports")
    table ports {
        key = { ingress_port: exact @name("port"); }
        actions = { agent_port; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 8;
    }

    apply {
        if (ports.apply().hit) {
            if (agent.heartbeat) {
                heard();
            }
        }
    }
}

// Whether the agent has been heard from lately (asked only for an ACK it could hold). `alive_at`:
// a field of the caller's working header to read the time into (a local would be a metadata
// field every packet pays for).
control HoldbackAgentAlive(in time_us_t now, inout bit<48> alive_at, out bool alive) {
    action check() {
        holdback_alive_at.read(alive_at, 0);
        alive = alive_at != 0 && now - alive_at < HOLDBACK_AGENT_TIMEOUT_US;
    }

    apply {
        check();
    }
}

#endif
