// The queue share: a flow's share of a slow ACK queue, with the agent on the CPU port as a second
// queue (policy `coalesce` on a modelled port, with the hold-back agent running). See
// docs/ack-thinning.md, "Two flows: the queue share".
//
// bmv2 serves a port from one FIFO. When one flow's receiver sends ACKs the contract keeps (a loss
// recovery: each ACK has SACK blocks no other ACK says), they fill the slow queue, and another
// flow's ACKs wait behind all of them, longer than that flow's retransmission timeout. The share
// bounds it: a flow has at most SHARE_PKTS (2) pure ACKs in the queue. A fresh ACK of a flow that
// has them goes to the agent instead (a copy, with the time until the older of the two leaves),
// and so does every later ACK of the flow while the agent holds any (their order is kept). The
// agent sends the flow's oldest back when that time has passed; the switch takes it (it is then
// coalesced or queued as if it had just arrived) and answers with the time until the flow has room
// again, or, if the flow has no room yet, sends it back to the agent with the time to wait. Another
// flow's ACK then waits behind at most two of this flow's, whatever its receiver sends.
//
// Fail-open: without the agent's heartbeat (HOLDBACK_AGENT_TIMEOUT_US) nothing goes to the agent,
// and what it sends back is taken as it comes. A flow from whose ACKs nothing came back or went to
// the agent for SHARE_STALL_US is treated as holding none (a copy lost on the way to the agent).
// Only ingress reads and writes these registers (one thread, in packet order).
#ifndef ACKWISE_ACK_SHARE_P4
#define ACKWISE_ACK_SHARE_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

#if SHARE_PKTS != 2
#error "share.queued_us keeps two departures: update AckShare with SHARE_PKTS"
#endif

// Per half-flow. queued_us: the departures booked for its two newest queued pure ACKs (the 48-bit
// us clock, which does not wrap in practice), older | newer. held: ACKs handed to the agent (16-bit
// count, wraps) | ACKs taken back (16) | when either last changed (us). counts: ACKs handed to the
// agent (31 bits) | ACKs sent back to it again, too early (31 bits), read by the control plane.
@name(".share.queued_us") register<bit<96>>(HALF_FLOWS) share_queued;
@name(".share.held") register<bit<80>>(HALF_FLOWS) share_held;
@name(".share.counts") register<bit<62>>(HALF_FLOWS) share_counts;

// share.held's layout, read and written here and by released() in ack_thinning.p4.
#define SHARE_HANDED(held) ((held)[79:64])
#define SHARE_TAKEN(held) ((held)[63:48])
#define SHARE_CHANGED(held) ((held)[47:0])
#define SHARE_HELD(handed, taken, changed) ((handed) ++ (taken) ++ (changed))

// Whether the agent holds ACKs of the flow whose share.held is `held`: more handed over than taken
// back, within SHARE_STALL_US of the last change (above). Asked by AckShare and by released().
#define SHARE_HOLDING(held, now) \
    (SHARE_HANDED(held) != SHARE_TAKEN(held) && (now) - SHARE_CHANGED(held) < SHARE_STALL_US)

// Their working fields: in the thinning stage's thinning_rare_h (ack_switch_work.p4), which the
// queue share's path has valid already for HoldbackAgentAlive (a header instance fewer for every
// packet to invalidate). `w.agent_alive`: the agent has been heard from lately.

// Ingress, for a pure ACK of a sharing flow, before anything else looks at it. `kind`:
// AGENT_KIND_SHARE_KEEP (a fresh ACK goes to the agent), AGENT_KIND_SHARE_BOUNCED (one the agent
// sent back goes back to it), AGENT_KIND_SHARE_TAKEN (one the agent sent back is taken: the
// caller sets the wait with AckShareQueued), or 0 (a fresh ACK that stays, or the agent is gone).
// `agent`: valid for an ACK the agent sent back (HoldbackPort).
control AckShare(in bit<32> half, in time_us_t now, in agent_h agent, out bit<16> kind, out bit<32> wait_us,
                 inout thinning_rare_h w) {

    action check() {
        bool agent_alive = w.agent_alive;
        share_queued.read(w.queued, half);
        share_held.read(w.share, half);
        share_counts.read(w.counts, half);
        bit<48> older = w.queued[95:48];
        // The older of the flow's two newest queued ACKs has not left: the flow has its share.
        bool full = older > now;
        bit<16> handed = SHARE_HANDED(w.share);
        bit<16> taken = SHARE_TAKEN(w.share);
        bit<48> changed = SHARE_CHANGED(w.share);
        bool holding = agent_alive && SHARE_HOLDING(w.share, now);
        bool from_agent = agent.isValid();
        w.keep = !from_agent && agent_alive && (holding || full);
        bool bounce = from_agent && agent_alive && full;
        bool take = from_agent && !bounce;
        // Exclusive cases (keep is for a fresh ACK, bounce and take for one sent back), as a
        // disjunction: p4c lowers nested ?: into a chain of temporaries, metadata fields.
        kind = (w.keep ? AGENT_KIND_SHARE_KEEP : 16w0) | (bounce ? AGENT_KIND_SHARE_BOUNCED : 16w0)
            | (take && agent_alive ? AGENT_KIND_SHARE_TAKEN : 16w0);
        wait_us = full ? (bit<32>)(older - now) : 32w0;
        // Not holding (the agent gone, or stalled): what was handed over counts as taken back.
        bit<16> base = holding ? taken : handed;
        bit<16> new_taken = take && holding ? base + 1 : base;
        // New values into the fields they were read from, then written (a register write of an
        // expression gets a temporary, a metadata field).
        w.share = SHARE_HELD(w.keep ? handed + 1 : handed, new_taken, w.keep || take ? now : changed);
        w.counts = w.counts + (w.keep ? 62w1 << 31 : 62w0) + (bounce ? 62w1 : 62w0);
        share_held.write(half, w.share);
        share_counts.write(half, w.counts);
    }

    apply {
        check();
    }
}

// Ingress, for a pure ACK of a sharing flow that goes into the queue (not absorbed, not dropped):
// its departure becomes the flow's newest. `wait_us`: until the flow has room again (the older of
// its two newest, the one queued before this, leaves).
control AckShareQueued(in bit<32> half, in time_us_t now, in time_us_t departure_us, out bit<32> wait_us,
                       inout thinning_rare_h w) {

    action queued() {
        share_queued.read(w.queued, half);
        bit<48> newer = w.queued[47:0];
        wait_us = newer > now ? (bit<32>)(newer - now) : 32w0;
        w.queued = w.queued[47:0] ++ departure_us;     // as in check()
        share_queued.write(half, w.queued);
    }

    apply {
        queued();
    }
}

#endif
