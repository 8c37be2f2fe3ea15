// Serial-number arithmetic on 32-bit sequence and ACK numbers (RFC 1982), correct across the
// wrap. The Python twin is control-plane/ackwise/serial.py.
#ifndef ACKWISE_SERIAL_P4
#define ACKWISE_SERIAL_P4

bool seq_lt(in bit<32> a, in bit<32> b) {
    return (int<32>)(a - b) < 0;
}

bool seq_leq(in bit<32> a, in bit<32> b) {
    return (int<32>)(a - b) <= 0;
}

bool seq_gt(in bit<32> a, in bit<32> b) {
    return (int<32>)(a - b) > 0;
}

bool seq_geq(in bit<32> a, in bit<32> b) {
    return (int<32>)(a - b) >= 0;
}

#endif
