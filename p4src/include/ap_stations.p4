// The stations an AP proxy serves, by prefix, with their proxy parameters. Flows to anything else
// are forwarded untouched.
#ifndef ACKWISE_AP_STATIONS_P4
#define ACKWISE_AP_STATIONS_P4

#include <core.p4>
#include <v1model.p4>
#include "headers.p4"

struct ap_station_params_t {
    bool served;
    bit<32> budget_bytes;       // spoofed - station-acknowledged never exceeds this
    bit<32> fast_after;         // in-order segments after the handshake before fast mode
    bit<48> stall_timeout_us;   // station ACK not advancing with data outstanding this long: leave
    bit<48> holdoff_us;         // then stay out of fast mode this long (0: for good)
}

control ApStationSelect(in ipv4_addr_t station_addr, out ap_station_params_t params) {
    @name(".ap.serve")
    action serve(bit<32> budget_bytes, bit<32> fast_after_segments, bit<32> stall_timeout_ms,
                 bit<32> holdoff_ms) {
        params.served = true;
        params.budget_bytes = budget_bytes;
        params.fast_after = fast_after_segments;
        params.stall_timeout_us = (bit<48>)stall_timeout_ms * 1000;
        params.holdoff_us = (bit<48>)holdoff_ms * 1000;
    }

    @name(".ap.stations")
    table stations {
        key = { station_addr: lpm @name("station"); }
        actions = { serve; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AP_STATIONS_TABLE_SIZE;
    }

    apply {
        params = { false, 0, 0, 0, 0 };
        stations.apply();
    }
}

#endif
