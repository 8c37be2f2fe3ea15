// Serial-number arithmetic on 32-bit sequence and ACK numbers (RFC 1982), correct across the
// wrap. The Python twin is control-plane/ackwise/twins/serial.py.
//
// Macros, not functions: p4c inlines a function call inside an action through temporaries and
// turns the surrounding && and || into predicated copies (five extra bmv2 primitives per call,
// measured in docs/performance.md); a macro stays inside the one expression that uses it.
#ifndef ACKWISE_SERIAL_P4
#define ACKWISE_SERIAL_P4

#define SEQ_LT(a, b) ((int<32>)((a) - (b)) < 0)
#define SEQ_LEQ(a, b) ((int<32>)((a) - (b)) <= 0)
#define SEQ_GT(a, b) ((int<32>)((a) - (b)) > 0)
#define SEQ_GEQ(a, b) ((int<32>)((a) - (b)) >= 0)

#endif
