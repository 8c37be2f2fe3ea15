// medium: the 802.11 shared-medium model, with no sockets and no clock.
//
// Both of linkem's drivers call it: the real-time loop (frames from AF_PACKET sockets, time from
// CLOCK_MONOTONIC) and the virtual-time driver (linkem --virtual: frames from a trace and from
// traffic rules, time from the model's own events). So the model that the unit tests and the ns-3
// validation exercise is the emulator's model, not a copy of it.
//
// What it models (docs/testbed.md, "The wireless medium"):
//   - DCF (802.11b/g) and EDCA best effort (802.11n/ac) channel access for every transmitter on
//     the medium: AIFS/DIFS, a backoff drawn from [0, CW], counted down in idle slots and frozen
//     while the medium is busy, binary exponential backoff after a failure, retry limits, EIFS
//     after a frame that could not be decoded;
//   - collisions: a frame is lost at a station where another transmission that interferes there
//     overlaps it (with capture, medium_set_capture: ns-2's receiver, which locks onto the first
//     frame and ignores a later one that is weak enough). Three relations per pair of stations say who decodes, who senses (carrier
//     sense) and who interferes with whom: everyone with everyone by default (one collision
//     domain), per pair (medium_set_hears), or from positions and ranges (medium_set_position,
//     medium_set_ranges: a multihop chain with hidden terminals and spatial reuse), where a
//     station receiving a frame may capture it against a weaker later one (medium_set_capture,
//     ns-2's rule). Transmitters
//     whose backoffs end within the carrier-detect time of each other cannot defer to each other
//     and collide; a station that senses a frame it cannot decode waits EIFS after it, one that
//     decodes it sets its NAV from the frame's Duration;
//   - responses as transmissions of their own: the ACK (or Block Ack), and with RTS/CTS the CTS,
//     are sent by the receiver, sensed by its neighbours and lost where something interferes with
//     them; a lost ACK makes the transmitter send the frame again, which the receiver discards;
//   - RTS/CTS (rts_cts): every frame is preceded by RTS and CTS, a receiver whose NAV is set does
//     not answer, a missing CTS counts against dot11ShortRetryLimit and a missing ACK against
//     dot11LongRetryLimit; third parties that set their NAV from an RTS reset it when no frame
//     follows (10.3.2.4);
//   - A-MPDU with Block Ack where the preset aggregates (802.11n/ac): per-destination queues, an
//     aggregate bounded by the Block Ack window, the maximum A-MPDU length and the maximum PPDU
//     duration, one Block Ack per aggregate, per-MPDU random loss with selective retransmission
//     of the MPDUs the Block Ack did not acknowledge, and in-order release at the receiver;
//   - per-frame random loss (the whole PPDU for non-aggregating presets).
//
// Times are nanoseconds of model time. Every duration is multiplied by the medium's time scale.
#ifndef LINKEM_MEDIUM_H
#define LINKEM_MEDIUM_H

#include <stdint.h>

#define MEDIUM_MAX_STATIONS 32
// The Block Ack window, and with it the most MPDUs in one A-MPDU (IEEE 802.11-2016 10.24.7.2:
// the compressed Block Ack bitmap covers 64 MPDUs). Also the receiver's reorder ring.
#define MEDIUM_BA_WINDOW 64

// Everything the model needs, in unscaled nanoseconds; linkem's configuration lines set each one
// (topologies/wireless.py writes them from topologies/wifi_params.toml, the one parameter table).
struct medium_params {
    // channel access
    double slot_ns, sifs_ns, aifs_ns;  // aifs = SIFS + AIFSN * slot (DIFS for DCF)
    double eifs_extra_ns;              // EIFS - DIFS: SIFS + an ACK at the lowest basic rate
    double ack_timeout_ns;             // from the end of a PPDU until a missing ACK counts as lost
    double detect_ns;                  // a transmission is sensed this long after it starts
    uint32_t cw_min, cw_max, retry_limit;
    // the data PPDU: preamble + ceil((service + 8 * bytes + tail) / bits per symbol) symbols
    double preamble_ns, symbol_ns, signal_ext_ns;
    uint32_t bits_per_symbol, service_bits, tail_bits;
    // responses; with RTS/CTS also the RTS and CTS PPDUs (unused without)
    double ack_ns, block_ack_ns;
    int rts_cts;                 // every frame preceded by RTS/CTS (non-aggregating media only)
    double rts_ns, cts_ns;
    uint32_t long_retry_limit;   // data attempts after a CTS (dot11LongRetryLimit); RTS: retry_limit
    // framing: bytes an Ethernet frame grows by to become an MPDU (MAC header, LLC/SNAP, FCS,
    // less the Ethernet header); in an A-MPDU each MPDU also gets a 4-byte delimiter and padding
    uint32_t mac_bytes;
    int aggregate;  // A-MPDU with Block Ack
    uint32_t max_ampdu_bytes, max_mpdus;
    double max_ppdu_ns;
    // the emulated channel
    double loss;         // per MPDU, independent
    uint32_t limit_pkts; // per transmitter, all its destinations together
    double scale;        // every duration is multiplied by it
};

enum medium_drop_reason { MEDIUM_DROP_QUEUE_FULL, MEDIUM_DROP_RETRY_LIMIT };

// What happened to a PPDU, for traces and counters.
enum medium_outcome { MEDIUM_OK, MEDIUM_PARTIAL, MEDIUM_COLLIDED, MEDIUM_LOST };

struct medium_hooks {
    void *ctx;
    // an MPDU released to the receiver, in order, at model time t_ns
    void (*deliver)(void *ctx, int tx, int rx, void *frame, uint32_t len, uint64_t t_ns);
    // an MPDU given up (queue full on arrival, or retry limit)
    void (*drop)(void *ctx, int tx, int rx, void *frame, uint32_t len, enum medium_drop_reason why, uint64_t t_ns);
    // a PPDU ended (optional): its transmitter, receiver, MPDUs, bytes, start, duration, outcome,
    // and how many of its MPDUs the receiver got
    void (*ppdu)(void *ctx, int tx, int rx, uint32_t mpdus, uint32_t bytes, uint64_t start_ns, uint64_t dur_ns,
                 enum medium_outcome outcome, uint32_t received);
};

struct medium_station_stats {
    uint64_t enqueued, queue_drops, retry_drops, delivered, delivered_bytes;
    uint64_t ppdus, ppdus_ok, ppdus_collided, ppdus_lost, mpdus_sent, mpdus_lost, retransmissions;
    uint64_t rts_sent, rts_failed;  // RTS without a CTS that arrived (no answer, or lost)
    uint64_t responses_lost;        // ACKs or Block Acks that did not reach the transmitter
    uint64_t airtime_ns;  // PPDUs and the responses to them
    uint32_t max_mpdus, max_ampdu_bytes;
    uint64_t max_ppdu_ns;
};

struct medium;

// NULL with *err set when the parameters cannot work (the message names the parameter).
struct medium *medium_new(const struct medium_params *p, uint64_t seed, const char **err);
void medium_free(struct medium *m);
// A station's index (added on first use), or -1 when there are MEDIUM_MAX_STATIONS already.
int medium_station(struct medium *m, const char *name);
const char *medium_station_name(const struct medium *m, int station);
int medium_stations(const struct medium *m);
// One direction of a pair: whether `listener` hears `talker` (decodes its frames, senses them, and
// is interfered with by them: all three relations at once). Every station hears every other one
// until told otherwise.
void medium_set_hears(struct medium *m, int listener, int talker, int hears);
// Positions in metres and the three ranges: a station decodes a talker within tx_m, senses it
// within cs_m, and a talker within interference_m corrupts what the station receives. Every pair
// of stations that both have a position takes its relations from their distance (a later
// medium_set_hears overrides one direction of a pair).
void medium_set_ranges(struct medium *m, double tx_m, double cs_m, double interference_m);
void medium_set_position(struct medium *m, int station, double x_m, double y_m);
// Capture, as ns-2's 802.11 has it (mac-802_11.cc recv()): a station locks onto the first frame
// that reaches it while it receives nothing (even one it cannot decode, even while it transmits);
// a frame that arrives while it receives another is ignored, and forgotten, when the one it
// receives is at least CPThresh (10 dB) stronger, otherwise both are lost and it goes on with the
// one that ends later. Between placed stations "10 dB stronger" is "the newcomer at least `ratio`
// times as far away" (10^(10/40) = 1.78 under ns-2's two-ray ground path loss, d^-4 beyond
// 86 m). 0 (the default, and always between stations without positions): no capture, and the
// rule is "a frame is lost wherever another one that interferes there overlaps it".
void medium_set_capture(struct medium *m, double ratio);
// Whether `listener` decodes / senses `talker` (the relations in force; never itself).
int medium_decodes(const struct medium *m, int listener, int talker);
int medium_senses(const struct medium *m, int listener, int talker);
// Whether a transmission of `talker` corrupts what `receiver` receives at the same time.
int medium_interferes(const struct medium *m, int receiver, int talker);
// A frame of `len` bytes (an Ethernet frame) from tx to rx at model time now_ns (no earlier than
// the last time the model ran to). 0: queued; -1: dropped, queue full (the drop hook is called).
int medium_enqueue(struct medium *m, uint64_t now_ns, int tx, int rx, uint32_t len, void *frame,
                   const struct medium_hooks *h);
// The model time of the next thing the medium will do, UINT64_MAX when nothing is pending.
uint64_t medium_next_event(const struct medium *m);
// Carry out everything due at or before now_ns, calling the hooks.
void medium_run(struct medium *m, uint64_t now_ns, const struct medium_hooks *h);
uint32_t medium_queued(const struct medium *m, int station);
const struct medium_station_stats *medium_stats(const struct medium *m, int station);
uint64_t medium_busy_ns(const struct medium *m);
// The scaled duration of a data PPDU carrying `ampdu_bytes` (an MPDU, or a whole A-MPDU).
uint64_t medium_ppdu_ns(const struct medium *m, uint32_t ampdu_bytes);
// The bytes an Ethernet frame of `len` occupies in a PPDU: the MPDU, and in an A-MPDU its
// delimiter and padding.
uint32_t medium_mpdu_bytes(const struct medium *m, uint32_t len, int in_ampdu);

#endif
