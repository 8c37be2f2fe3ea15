// linkem: a userspace link emulator for kernels without netem, and the 802.11 medium model's
// virtual-time driver.
//
// It reads Ethernet frames from interfaces through AF_PACKET sockets, passes each through the
// path configured for the interface it arrived on, and writes it out of that path's output
// interface:
//
//   wire   a one-way wired link: random loss on arrival, a drop-tail queue (limit in packets and,
//          optionally, in bytes: a frame that would take it past either is dropped),
//          serialisation at a rate, then a propagation delay. Two wires make a full-duplex link.
//   air    a frame sent over a shared half-duplex 802.11 medium: medium.c decides when it is sent,
//          whether it collides or is lost, how it is aggregated and when the receiver gets it
//          (DCF/EDCA contention, collisions, A-MPDU with Block Ack; medium.h). The medium's
//          delay_us is added to every delivery.
//
// Configuration, one directive per line ('#' starts a comment):
//
//   seed N
//   stats PATH                       (JSON counters written on SIGUSR1 and on exit)
//   wire IN OUT rate_bps=R delay_us=D loss=P limit_pkts=Q limit_bytes=B
//                                    (R = 0: no rate limit; B = 0, the default: no byte limit)
//   medium NAME key=value...         (every field of struct medium_params, and delay_us; all of
//                                     them required but loss, limit_pkts, scale and delay_us;
//                                     topologies/wireless.py writes them from the parameter table)
//   air IN OUT MEDIUM TRANSMITTER RECEIVER
//   hears MEDIUM LISTENER TALKER 0|1 (LISTENER decodes, senses and is interfered with by TALKER;
//                                     everyone hears everyone by default)
//   ranges MEDIUM tx_m=T cs_m=C interference_m=I capture=R
//   position MEDIUM STATION x_m=X y_m=Y
//                                    (stations with positions decode a talker within T metres,
//                                     sense it within C, and are interfered with by it within I:
//                                     a multihop chain; a later hears line overrides a pair; a
//                                     frame being received survives a later interferer R times
//                                     as far away, ns-2's capture; R = 0: none)
//
// Virtual time (linkem --virtual CONFIG): no sockets and no clock; the model runs on its own
// events as fast as it can, from these directives (with seed, medium and hears above):
//
//   saturate MEDIUM TX RX len=BYTES          TX always has frames of BYTES for RX
//   offer MEDIUM TX RX rate_pps=R len=BYTES  frames of BYTES from TX to RX at a constant rate, as a
//                                            paced sender offers them (queue drops beyond limit_pkts)
//   reply MEDIUM STATION PEER every=L len=BYTES
//                                            STATION sends one frame of BYTES to PEER for every
//                                            L frames it receives from PEER
//   relay MEDIUM STATION FROM TO              STATION sends every frame it receives from FROM on to
//                                            TO (a multihop route: static, as the test bed's)
//   frame MEDIUM T_US TX RX len=BYTES        one frame offered at T_US (a trace, one per line)
//   run seconds=S warmup=W                   simulate S seconds, count deliveries after W
//   events PATH                              one line per PPDU: start_ns tx rx mpdus bytes
//                                            duration_ns outcome received
//   deliveries PATH                          one line per frame received: t_ns tx rx n (the
//                                            frame's number in its pair's offered order)
//   probe MEDIUM len=BYTES                   report the PPDU duration of one such frame
//
// and prints a JSON summary on stdout (per station: what the model counted, and frames and bytes
// delivered per receiver inside the measured window).
//
// Usage: linkem CONFIG | linkem --virtual CONFIG | linkem --version. The real-time mode prints
// "ready" on stdout once every socket is bound; exits 0 on SIGTERM or SIGINT after writing the
// stats. When an interface it serves disappears, or a socket fails for any other reason, it writes
// the stats, says which interface and why on stderr, and exits 3: a packet socket whose device is
// gone reports POLLERR on every poll, so carrying on would spin.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "medium.h"

// The link model's version, recorded with every experiment run (its provenance): raise it with
// any change to what a wire or the medium does to frames, so that runs of two models never mix.
#define LINKEM_MODEL_VERSION                                                                              \
    "6 (wire: loss, drop-tail in packets or bytes, rate, delay; air: DCF/EDCA contention and collisions, A-MPDU with Block Ack, " \
    "responses as transmissions, positions and ranges, RTS/CTS, capture, NAV reset at PHY-RXSTART)"

#define MAX_IFACES 64
#define MAX_WIRES 64
#define MAX_MEDIA 8
#define FRAME_MAX 65536
#define MAX_RULES 64

struct frame {
    struct frame *next;
    uint64_t arrival_ns;
    uint64_t due_ns;  // wire: end of serialisation, then delivery time; air: delivery time
    int out;          // output interface index into ifaces[]
    int medium, tx, rx;
    uint32_t len;
    unsigned char data[];
};

struct queue {
    struct frame *head, *tail;
    uint32_t count;
    uint64_t bytes;
};

struct counters {
    uint64_t rx, rx_bytes, loss_drops, queue_drops, delivered, delivered_bytes, send_errors;
};

struct wire {
    int in, out;
    uint64_t rate_bps, delay_ns;
    double loss;
    uint32_t limit;        // frames
    uint64_t limit_bytes;  // 0: none
    uint64_t busy_until;
    struct queue serialising;  // frames in the queue or on the wire (due_ns = end of serialisation)
    struct queue propagating;  // frames serialised, waiting out the delay (due_ns = delivery time)
    struct counters c;
};

// Virtual time: the traffic rules of one medium.
struct rule {
    enum { SATURATE, REPLY, OFFER, RELAY } kind;
    int tx, rx, to;  // RELAY: tx passes what it receives from rx on to `to`
    uint32_t len, every, count;
    uint64_t interval_ns, next_ns;  // OFFER: one frame every interval_ns, the next at next_ns
};

struct medium_slot {
    char name[32];
    struct medium *model;
    uint64_t delay_ns;
    uint32_t limit_pkts;
    struct counters c[MEDIUM_MAX_STATIONS];  // per transmitter: what reached linkem and left it
    struct queue delivering;                 // frames received, waiting out delay_ns
    struct rule rules[MAX_RULES];
    int n_rules;
    // virtual time: frames and bytes delivered per transmitter and receiver in the measured window
    uint64_t win_frames[MEDIUM_MAX_STATIONS][MEDIUM_MAX_STATIONS];
    uint64_t win_bytes[MEDIUM_MAX_STATIONS][MEDIUM_MAX_STATIONS];
    uint32_t probe_len[16];
    int n_probes;
};

struct route {  // what happens to a frame read on an interface
    int is_air;
    int wire;              // index into wires[]
    int medium, tx, rx, out;  // for air
};

struct iface {
    char name[IFNAMSIZ];
    int fd;
    int has_route;
    struct route route;
};

static struct iface ifaces[MAX_IFACES];
static int n_ifaces;
static struct wire wires[MAX_WIRES];
static int n_wires;
static struct medium_slot media[MAX_MEDIA];
static int n_media;
static char stats_path[4096];
static volatile sig_atomic_t stop_requested, stats_requested;
static uint64_t seed = 1;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
// virtual time
static double run_seconds, warmup_seconds;
static uint64_t warmup_ns;
static FILE *events_out, *deliveries_out;
// Virtual frames carry only their number in their transmitter-receiver pair's offered order, so
// that the deliveries can show the order they arrive in.
struct vframe {
    uint64_t id;
};
static uint64_t offered[MAX_MEDIA][MEDIUM_MAX_STATIONS][MEDIUM_MAX_STATIONS];
struct trace_frame {
    uint64_t t_ns;
    int medium, tx, rx;
    uint32_t len;
};
static struct trace_frame *trace;
static size_t n_trace, cap_trace;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("linkem: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double uniform01(void) {  // xorshift64*: reproducible for a given seed
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static void push(struct queue *q, struct frame *f) {
    f->next = NULL;
    if (q->tail) q->tail->next = f; else q->head = f;
    q->tail = f;
    q->count++;
    q->bytes += f->len;
}

static struct frame *pop(struct queue *q) {
    struct frame *f = q->head;
    if (!f) return NULL;
    q->head = f->next;
    if (!q->head) q->tail = NULL;
    q->count--;
    q->bytes -= f->len;
    return f;
}

static int iface_index(const char *name) {
    for (int i = 0; i < n_ifaces; i++)
        if (strcmp(ifaces[i].name, name) == 0) return i;
    if (n_ifaces == MAX_IFACES) die("too many interfaces (max %d)", MAX_IFACES);
    if (strlen(name) >= IFNAMSIZ) die("interface name too long: %s", name);
    strcpy(ifaces[n_ifaces].name, name);
    ifaces[n_ifaces].fd = -1;
    return n_ifaces++;
}

static struct iface *claim_input(const char *name) {
    struct iface *in = &ifaces[iface_index(name)];
    if (in->has_route) die("interface %s is the input of two paths", name);
    in->has_route = 1;
    return in;
}

static int medium_index(const char *name, int line) {
    for (int i = 0; i < n_media; i++)
        if (strcmp(media[i].name, name) == 0) return i;
    die("line %d names medium %s before it is defined: put its 'medium' line first", line, name);
    return -1;
}

static int station_index(int medium, const char *name, int line) {
    int i = medium_station(media[medium].model, name);
    if (i < 0) die("line %d: medium %s: too many stations (max %d) or name too long: %s", line,
                   media[medium].name, MEDIUM_MAX_STATIONS, name);
    return i;
}

// key=value arguments of a directive
static const char *kv(char **tokens, int n, const char *key) {
    size_t k = strlen(key);
    for (int i = 0; i < n; i++)
        if (strncmp(tokens[i], key, k) == 0 && tokens[i][k] == '=') return tokens[i] + k + 1;
    return NULL;
}

static double kv_num(char **tokens, int n, const char *key, double dflt, int line) {
    const char *v = kv(tokens, n, key);
    if (!v) return dflt;
    char *end;
    double d = strtod(v, &end);
    if (*end || d < 0) die("line %d: %s=%s is not a non-negative number", line, key, v);
    return d;
}

// A parameter the medium cannot do without: no default, so that a configuration written for
// another model version fails here, naming what it lacks, instead of running a different model.
static double kv_need(char **tokens, int n, const char *key, int line) {
    if (!kv(tokens, n, key))
        die("line %d: the medium needs %s= (topologies/wireless.py writes every parameter of the table)",
            line, key);
    return kv_num(tokens, n, key, 0, line);
}

static void parse_medium(char **tokens, int n, int line) {
    if (n_media == MAX_MEDIA) die("too many media (max %d)", MAX_MEDIA);
    struct medium_slot *ms = &media[n_media];
    snprintf(ms->name, sizeof ms->name, "%s", tokens[1]);
    char **t = tokens + 2;
    int k = n - 2;
    struct medium_params p = {
        .slot_ns = kv_need(t, k, "slot_ns", line),
        .sifs_ns = kv_need(t, k, "sifs_ns", line),
        .aifs_ns = kv_need(t, k, "aifs_ns", line),
        .eifs_extra_ns = kv_need(t, k, "eifs_extra_ns", line),
        .ack_timeout_ns = kv_need(t, k, "ack_timeout_ns", line),
        .detect_ns = kv_need(t, k, "detect_ns", line),
        .cw_min = (uint32_t)kv_need(t, k, "cw_min", line),
        .cw_max = (uint32_t)kv_need(t, k, "cw_max", line),
        .retry_limit = (uint32_t)kv_need(t, k, "retry_limit", line),
        .preamble_ns = kv_need(t, k, "preamble_ns", line),
        .symbol_ns = kv_need(t, k, "symbol_ns", line),
        .signal_ext_ns = kv_need(t, k, "signal_ext_ns", line),
        .bits_per_symbol = (uint32_t)kv_need(t, k, "bits_per_symbol", line),
        .service_bits = (uint32_t)kv_need(t, k, "service_bits", line),
        .tail_bits = (uint32_t)kv_need(t, k, "tail_bits", line),
        .ack_ns = kv_need(t, k, "ack_ns", line),
        .block_ack_ns = kv_need(t, k, "block_ack_ns", line),
        .rts_cts = (int)kv_need(t, k, "rts_cts", line),
        .rts_ns = kv_need(t, k, "rts_ns", line),
        .cts_ns = kv_need(t, k, "cts_ns", line),
        .long_retry_limit = (uint32_t)kv_need(t, k, "long_retry_limit", line),
        .mac_bytes = (uint32_t)kv_need(t, k, "mac_bytes", line),
        .aggregate = (int)kv_need(t, k, "aggregate", line),
        .max_ampdu_bytes = (uint32_t)kv_need(t, k, "max_ampdu_bytes", line),
        .max_mpdus = (uint32_t)kv_need(t, k, "max_mpdus", line),
        .max_ppdu_ns = kv_need(t, k, "max_ppdu_ns", line),
        .loss = kv_num(t, k, "loss", 0, line),
        .limit_pkts = (uint32_t)kv_num(t, k, "limit_pkts", 1000, line),
        .scale = kv_num(t, k, "scale", 1, line),
    };
    ms->delay_ns = (uint64_t)(kv_num(t, k, "delay_us", 0, line) * 1000.0);
    ms->limit_pkts = p.limit_pkts;
    const char *err = NULL;
    ms->model = medium_new(&p, seed + (uint64_t)n_media, &err);
    if (!ms->model) die("line %d: medium %s: %s", line, ms->name, err);
    n_media++;
}

static void add_trace(uint64_t t_ns, int medium, int tx, int rx, uint32_t len) {
    if (n_trace == cap_trace) {
        cap_trace = cap_trace ? cap_trace * 2 : 1024;
        trace = realloc(trace, cap_trace * sizeof *trace);
        if (!trace) die("out of memory");
    }
    trace[n_trace++] = (struct trace_frame){t_ns, medium, tx, rx, len};
}

static void parse_config(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open %s: %s", path, strerror(errno));
    char buf[2048];
    int line = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        char *tokens[64];
        int n = 0;
        for (char *t = strtok(buf, " \t\r\n"); t && n < 64; t = strtok(NULL, " \t\r\n")) tokens[n++] = t;
        if (n == 0) continue;
        if (strcmp(tokens[0], "seed") == 0 && n == 2) {
            seed = strtoull(tokens[1], NULL, 10);
            rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
        } else if (strcmp(tokens[0], "stats") == 0 && n == 2) {
            snprintf(stats_path, sizeof stats_path, "%s", tokens[1]);
        } else if (strcmp(tokens[0], "wire") == 0 && n >= 3) {
            if (n_wires == MAX_WIRES) die("too many wires (max %d)", MAX_WIRES);
            struct wire *w = &wires[n_wires];
            struct iface *in = claim_input(tokens[1]);
            w->in = (int)(in - ifaces);
            w->out = iface_index(tokens[2]);
            w->rate_bps = (uint64_t)kv_num(tokens + 3, n - 3, "rate_bps", 0, line);
            w->delay_ns = (uint64_t)(kv_num(tokens + 3, n - 3, "delay_us", 0, line) * 1000.0);
            w->loss = kv_num(tokens + 3, n - 3, "loss", 0, line);
            w->limit = (uint32_t)kv_num(tokens + 3, n - 3, "limit_pkts", 1000, line);
            w->limit_bytes = (uint64_t)kv_num(tokens + 3, n - 3, "limit_bytes", 0, line);
            if (w->loss > 1) die("line %d: loss is a probability (0..1)", line);
            in->route.is_air = 0;
            in->route.wire = n_wires++;
        } else if (strcmp(tokens[0], "medium") == 0 && n >= 2) {
            parse_medium(tokens, n, line);
        } else if (strcmp(tokens[0], "air") == 0 && n == 6) {
            struct iface *in = claim_input(tokens[1]);
            in->route.is_air = 1;
            in->route.out = iface_index(tokens[2]);
            in->route.medium = medium_index(tokens[3], line);
            in->route.tx = station_index(in->route.medium, tokens[4], line);
            in->route.rx = station_index(in->route.medium, tokens[5], line);
        } else if (strcmp(tokens[0], "air") == 0) {
            die("line %d: air IN OUT MEDIUM TRANSMITTER RECEIVER (linkem 2 needs the receiver)", line);
        } else if (strcmp(tokens[0], "hears") == 0 && n == 5) {
            int m = medium_index(tokens[1], line);
            int a = station_index(m, tokens[2], line), b = station_index(m, tokens[3], line);
            medium_set_hears(media[m].model, a, b, atoi(tokens[4]));
        } else if (strcmp(tokens[0], "ranges") == 0 && n == 6) {
            int m = medium_index(tokens[1], line);
            medium_set_ranges(media[m].model, kv_need(tokens + 2, n - 2, "tx_m", line),
                              kv_need(tokens + 2, n - 2, "cs_m", line), kv_need(tokens + 2, n - 2, "interference_m", line));
            medium_set_capture(media[m].model, kv_need(tokens + 2, n - 2, "capture", line));
        } else if (strcmp(tokens[0], "position") == 0 && n == 5) {
            int m = medium_index(tokens[1], line);
            medium_set_position(media[m].model, station_index(m, tokens[2], line), kv_need(tokens + 3, n - 3, "x_m", line),
                                kv_need(tokens + 3, n - 3, "y_m", line));
        } else if (strcmp(tokens[0], "saturate") == 0 && n >= 4) {
            int m = medium_index(tokens[1], line);
            struct medium_slot *ms = &media[m];
            if (ms->n_rules == MAX_RULES) die("line %d: too many traffic rules (max %d)", line, MAX_RULES);
            ms->rules[ms->n_rules++] = (struct rule){.kind = SATURATE, .tx = station_index(m, tokens[2], line),
                .rx = station_index(m, tokens[3], line), .len = (uint32_t)kv_need(tokens + 4, n - 4, "len", line)};
        } else if (strcmp(tokens[0], "offer") == 0 && n >= 4) {
            int m = medium_index(tokens[1], line);
            struct medium_slot *ms = &media[m];
            if (ms->n_rules == MAX_RULES) die("line %d: too many traffic rules (max %d)", line, MAX_RULES);
            double pps = kv_need(tokens + 4, n - 4, "rate_pps", line);
            if (pps <= 0) die("line %d: rate_pps= must be positive", line);
            ms->rules[ms->n_rules++] = (struct rule){.kind = OFFER, .tx = station_index(m, tokens[2], line),
                .rx = station_index(m, tokens[3], line), .len = (uint32_t)kv_need(tokens + 4, n - 4, "len", line),
                .interval_ns = (uint64_t)(1e9 / pps)};
        } else if (strcmp(tokens[0], "reply") == 0 && n >= 4) {
            int m = medium_index(tokens[1], line);
            struct medium_slot *ms = &media[m];
            if (ms->n_rules == MAX_RULES) die("line %d: too many traffic rules (max %d)", line, MAX_RULES);
            uint32_t every = (uint32_t)kv_need(tokens + 4, n - 4, "every", line);
            if (every < 1) die("line %d: every= must be at least 1", line);
            ms->rules[ms->n_rules++] = (struct rule){.kind = REPLY, .tx = station_index(m, tokens[2], line),
                .rx = station_index(m, tokens[3], line), .every = every,
                .len = (uint32_t)kv_need(tokens + 4, n - 4, "len", line)};
        } else if (strcmp(tokens[0], "relay") == 0 && n == 5) {
            int m = medium_index(tokens[1], line);
            struct medium_slot *ms = &media[m];
            if (ms->n_rules == MAX_RULES) die("line %d: too many traffic rules (max %d)", line, MAX_RULES);
            ms->rules[ms->n_rules++] = (struct rule){.kind = RELAY, .tx = station_index(m, tokens[2], line),
                .rx = station_index(m, tokens[3], line), .to = station_index(m, tokens[4], line)};
        } else if (strcmp(tokens[0], "frame") == 0 && n >= 6) {
            int m = medium_index(tokens[1], line);
            char *end;
            double t_us = strtod(tokens[2], &end);
            if (*end || t_us < 0) die("line %d: frame time %s is not a non-negative number of us", line, tokens[2]);
            add_trace((uint64_t)(t_us * 1000.0), m, station_index(m, tokens[3], line),
                      station_index(m, tokens[4], line), (uint32_t)kv_need(tokens + 5, n - 5, "len", line));
        } else if (strcmp(tokens[0], "run") == 0 && n >= 2) {
            run_seconds = kv_need(tokens + 1, n - 1, "seconds", line);
            warmup_seconds = kv_num(tokens + 1, n - 1, "warmup", 0, line);
            if (warmup_seconds >= run_seconds) die("line %d: warmup must be shorter than the run", line);
        } else if (strcmp(tokens[0], "deliveries") == 0 && n == 2) {
            deliveries_out = fopen(tokens[1], "w");
            if (!deliveries_out) die("cannot write %s: %s", tokens[1], strerror(errno));
        } else if (strcmp(tokens[0], "events") == 0 && n == 2) {
            events_out = fopen(tokens[1], "w");
            if (!events_out) die("cannot write %s: %s", tokens[1], strerror(errno));
        } else if (strcmp(tokens[0], "probe") == 0 && n == 3) {
            struct medium_slot *ms = &media[medium_index(tokens[1], line)];
            if (ms->n_probes == 16) die("line %d: at most 16 probes per medium", line);
            ms->probe_len[ms->n_probes++] = (uint32_t)kv_need(tokens + 2, n - 2, "len", line);
        } else {
            die("%s line %d: cannot read '%s'", path, line, tokens[0]);
        }
    }
    fclose(f);
}

static void open_socket(struct iface *ifc) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0) die("socket: %s (linkem needs root)", strerror(errno));
    unsigned idx = if_nametoindex(ifc->name);
    if (idx == 0) die("no interface %s", ifc->name);
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = (int)idx};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) die("bind %s: %s", ifc->name, strerror(errno));
    int one = 1;
    // Frames this process sends out of an interface must not come back in as input.
    if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        die("PACKET_IGNORE_OUTGOING on %s: %s (needs Linux 4.20+)", ifc->name, strerror(errno));
    struct packet_mreq mr = {.mr_ifindex = (int)idx, .mr_type = PACKET_MR_PROMISC};
    if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
        die("promiscuous mode on %s: %s", ifc->name, strerror(errno));
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    ifc->fd = fd;
}

static void write_stats(void);

// A socket failed: the interface is gone or down, or the socket broke. Never retried (see above).
static void socket_failed(const struct iface *ifc, const char *what, int err) {
    write_stats();
    if (if_nametoindex(ifc->name) == 0)
        fprintf(stderr, "linkem: interface %s disappeared (%s: %s); exiting\n", ifc->name, what, strerror(err));
    else
        fprintf(stderr, "linkem: socket on %s failed (%s: %s); exiting\n", ifc->name, what, strerror(err));
    exit(3);
}

// Errors that say the device itself is gone or down, as opposed to a momentarily full buffer.
static int device_error(int err) { return err == ENETDOWN || err == ENXIO || err == ENODEV; }

// How late frames leave against when the model meant them to (its due time): the emulator's own
// lag, which a run record keeps to tell a result from an overloaded machine (experiments' report).
static struct {
    uint64_t frames, sum_ns, max_ns, over_1ms, over_10ms;
} lateness;

static void note_lateness(uint64_t now, uint64_t due_ns) {
    uint64_t late = now > due_ns ? now - due_ns : 0;
    lateness.frames++;
    lateness.sum_ns += late;
    if (late > lateness.max_ns) lateness.max_ns = late;
    if (late > 1000000ull) lateness.over_1ms++;
    if (late > 10000000ull) lateness.over_10ms++;
}

static void transmit(struct frame *f, struct counters *c, uint64_t now) {
    note_lateness(now, f->due_ns);
    if (send(ifaces[f->out].fd, f->data, f->len, 0) < 0) {
        int err = errno;
        if (device_error(err)) socket_failed(&ifaces[f->out], "send", err);
        c->send_errors++;
    } else {
        c->delivered++;
        c->delivered_bytes += f->len;
    }
    free(f);
}

// The medium's decisions, in real time: a received frame waits out the medium's delay, then leaves.
static void rt_deliver(void *ctx, int tx, int rx, void *frame, uint32_t len, uint64_t t_ns) {
    (void)tx, (void)rx, (void)len;
    struct medium_slot *ms = ctx;
    struct frame *f = frame;
    f->due_ns = t_ns + ms->delay_ns;
    push(&ms->delivering, f);
}

static void rt_drop(void *ctx, int tx, int rx, void *frame, uint32_t len, enum medium_drop_reason why, uint64_t t_ns) {
    (void)rx, (void)len, (void)t_ns;
    struct medium_slot *ms = ctx;
    if (why == MEDIUM_DROP_RETRY_LIMIT) ms->c[tx].loss_drops++;
    else ms->c[tx].queue_drops++;
    free(frame);
}

static struct medium_hooks rt_hooks(struct medium_slot *ms) {
    return (struct medium_hooks){.ctx = ms, .deliver = rt_deliver, .drop = rt_drop};
}

static void admit(struct iface *in, struct frame *f) {
    struct route *r = &in->route;
    if (!r->is_air) {
        struct wire *w = &wires[r->wire];
        w->c.rx++;
        w->c.rx_bytes += f->len;
        f->out = w->out;
        if (w->loss > 0 && uniform01() < w->loss) { w->c.loss_drops++; free(f); return; }
        if (w->serialising.count >= w->limit ||
            (w->limit_bytes && w->serialising.bytes + f->len > w->limit_bytes)) {
            w->c.queue_drops++;
            free(f);
            return;
        }
        uint64_t start = f->arrival_ns > w->busy_until ? f->arrival_ns : w->busy_until;
        uint64_t ser_ns = w->rate_bps ? (uint64_t)f->len * 8ull * 1000000000ull / w->rate_bps : 0;
        w->busy_until = start + ser_ns;
        f->due_ns = w->busy_until;
        push(&w->serialising, f);
    } else {
        struct medium_slot *ms = &media[r->medium];
        ms->c[r->tx].rx++;
        ms->c[r->tx].rx_bytes += f->len;
        f->out = r->out;
        f->medium = r->medium;
        f->tx = r->tx;
        f->rx = r->rx;
        struct medium_hooks h = rt_hooks(ms);
        // The model first catches up to the frame's arrival, so that it decides in model time
        // whatever was due before it, however late this loop woke.
        medium_run(ms->model, f->arrival_ns, &h);
        medium_enqueue(ms->model, f->arrival_ns, r->tx, r->rx, f->len, f, &h);
    }
}

// Advance every path to `now`; return the next time anything is due (UINT64_MAX: nothing).
static uint64_t run_due(uint64_t now) {
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < n_wires; i++) {
        struct wire *w = &wires[i];
        while (w->serialising.head && w->serialising.head->due_ns <= now) {
            struct frame *f = pop(&w->serialising);
            f->due_ns += w->delay_ns;
            push(&w->propagating, f);
        }
        while (w->propagating.head && w->propagating.head->due_ns <= now) transmit(pop(&w->propagating), &w->c, now);
        if (w->serialising.head && w->serialising.head->due_ns < next) next = w->serialising.head->due_ns;
        if (w->propagating.head && w->propagating.head->due_ns < next) next = w->propagating.head->due_ns;
    }
    for (int i = 0; i < n_media; i++) {
        struct medium_slot *ms = &media[i];
        struct medium_hooks h = rt_hooks(ms);
        medium_run(ms->model, now, &h);
        while (ms->delivering.head && ms->delivering.head->due_ns <= now) {
            struct frame *f = pop(&ms->delivering);
            transmit(f, &ms->c[f->tx], now);
        }
        uint64_t due = medium_next_event(ms->model);
        if (due < next) next = due;
        if (ms->delivering.head && ms->delivering.head->due_ns < next) next = ms->delivering.head->due_ns;
    }
    return next;
}

static void write_counters(FILE *f, const struct counters *c) {
    fprintf(f, "\"rx\": %llu, \"rx_bytes\": %llu, \"loss_drops\": %llu, \"queue_drops\": %llu, "
               "\"delivered\": %llu, \"delivered_bytes\": %llu, \"send_errors\": %llu",
            (unsigned long long)c->rx, (unsigned long long)c->rx_bytes, (unsigned long long)c->loss_drops,
            (unsigned long long)c->queue_drops, (unsigned long long)c->delivered,
            (unsigned long long)c->delivered_bytes, (unsigned long long)c->send_errors);
}

static void write_model_stats(FILE *f, const struct medium_station_stats *a, const struct medium_station_stats *b) {
    // b - a: the counters over a window (a = NULL: since the start)
    static const struct medium_station_stats zero;
    if (!a) a = &zero;
#define D(field) (unsigned long long)(b->field - a->field)
    fprintf(f, "\"enqueued\": %llu, \"queue_drops\": %llu, \"retry_drops\": %llu, \"delivered\": %llu, "
               "\"delivered_bytes\": %llu, \"ppdus\": %llu, \"ppdus_ok\": %llu, \"ppdus_collided\": %llu, "
               "\"ppdus_lost\": %llu, \"mpdus_sent\": %llu, \"mpdus_lost\": %llu, \"retransmissions\": %llu, "
               "\"airtime_ns\": %llu, \"rts_sent\": %llu, \"rts_failed\": %llu, \"responses_lost\": %llu, "
               "\"max_mpdus\": %u, \"max_ampdu_bytes\": %u, \"max_ppdu_ns\": %llu",
            D(enqueued), D(queue_drops), D(retry_drops), D(delivered), D(delivered_bytes), D(ppdus), D(ppdus_ok),
            D(ppdus_collided), D(ppdus_lost), D(mpdus_sent), D(mpdus_lost), D(retransmissions), D(airtime_ns),
            D(rts_sent), D(rts_failed), D(responses_lost),
            b->max_mpdus, b->max_ampdu_bytes, (unsigned long long)b->max_ppdu_ns);
#undef D
}

static void write_stats(void) {
    if (!stats_path[0]) return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "{\"model\": \"%s\", \"wires\": [", LINKEM_MODEL_VERSION);
    for (int i = 0; i < n_wires; i++) {
        fprintf(f, "%s{\"in\": \"%s\", \"out\": \"%s\", \"queued\": %u, ", i ? ", " : "", ifaces[wires[i].in].name,
                ifaces[wires[i].out].name, wires[i].serialising.count);
        write_counters(f, &wires[i].c);
        fputc('}', f);
    }
    fprintf(f, "], \"media\": [");
    for (int i = 0; i < n_media; i++) {
        struct medium_slot *ms = &media[i];
        fprintf(f, "%s{\"name\": \"%s\", \"busy_ns\": %llu, \"transmitters\": [", i ? ", " : "", ms->name,
                (unsigned long long)medium_busy_ns(ms->model));
        for (int j = 0; j < medium_stations(ms->model); j++) {
            fprintf(f, "%s{\"name\": \"%s\", \"queued\": %u, ", j ? ", " : "", medium_station_name(ms->model, j),
                    medium_queued(ms->model, j));
            write_counters(f, &ms->c[j]);
            fprintf(f, ", \"model\": {");
            write_model_stats(f, NULL, medium_stats(ms->model, j));
            fprintf(f, "}}");
        }
        fprintf(f, "]}");
    }
    fprintf(f, "], \"lateness\": {\"frames\": %llu, \"mean_us\": %.1f, \"max_us\": %.1f, \"over_1ms\": %llu, "
               "\"over_10ms\": %llu}}\n",
            (unsigned long long)lateness.frames,
            lateness.frames ? (double)lateness.sum_ns / (double)lateness.frames / 1000.0 : 0.0,
            (double)lateness.max_ns / 1000.0, (unsigned long long)lateness.over_1ms,
            (unsigned long long)lateness.over_10ms);
    fclose(f);
    rename(tmp, stats_path);
}

// ---- virtual time ----

struct reply_due {
    int medium, tx, rx;
    uint32_t len;
};
static struct reply_due *replies;
static size_t n_replies, cap_replies;

static void v_ppdu(void *ctx, int tx, int rx, uint32_t mpdus, uint32_t bytes, uint64_t start_ns, uint64_t dur_ns,
                   enum medium_outcome outcome, uint32_t received);

static void v_deliver(void *ctx, int tx, int rx, void *frame, uint32_t len, uint64_t t_ns) {
    struct medium_slot *ms = ctx;
    struct vframe *vf = frame;
    if (deliveries_out)
        fprintf(deliveries_out, "%llu %s %s %llu\n", (unsigned long long)t_ns, medium_station_name(ms->model, tx),
                medium_station_name(ms->model, rx), (unsigned long long)vf->id);
    free(vf);
    if (t_ns >= warmup_ns) {
        ms->win_frames[tx][rx]++;
        ms->win_bytes[tx][rx] += len;
    }
    for (int k = 0; k < ms->n_rules; k++) {
        struct rule *r = &ms->rules[k];
        if ((r->kind != REPLY && r->kind != RELAY) || r->tx != rx || r->rx != tx) continue;
        if (r->kind == REPLY && ++r->count % r->every) continue;
        // Enqueued once the model has finished this step: the hooks run inside medium_run.
        if (n_replies == cap_replies) {
            cap_replies = cap_replies ? cap_replies * 2 : 64;
            replies = realloc(replies, cap_replies * sizeof *replies);
            if (!replies) die("out of memory");
        }
        replies[n_replies++] = r->kind == REPLY ? (struct reply_due){(int)(ms - media), r->tx, r->rx, r->len}
                                                : (struct reply_due){(int)(ms - media), r->tx, r->to, len};
    }
}

static void v_drop(void *ctx, int tx, int rx, void *frame, uint32_t len, enum medium_drop_reason why, uint64_t t_ns) {
    (void)ctx, (void)tx, (void)rx, (void)len, (void)why, (void)t_ns;
    free(frame);
}

static void v_enqueue(int medium, uint64_t t, int tx, int rx, uint32_t len) {
    struct medium_slot *ms = &media[medium];
    struct medium_hooks h = {.ctx = ms, .deliver = v_deliver, .drop = v_drop, .ppdu = v_ppdu};
    struct vframe *vf = malloc(sizeof *vf);
    if (!vf) die("out of memory");
    vf->id = offered[medium][tx][rx]++;
    medium_enqueue(ms->model, t, tx, rx, len, vf, &h);
}

static void v_ppdu(void *ctx, int tx, int rx, uint32_t mpdus, uint32_t bytes, uint64_t start_ns, uint64_t dur_ns,
                   enum medium_outcome outcome, uint32_t received) {
    static const char *names[] = {"ok", "partial", "collided", "lost"};
    struct medium_slot *ms = ctx;
    if (events_out)
        fprintf(events_out, "%llu %s %s %u %u %llu %s %u\n", (unsigned long long)start_ns,
                medium_station_name(ms->model, tx), medium_station_name(ms->model, rx), mpdus, bytes,
                (unsigned long long)dur_ns, names[outcome], received);
}

static int by_time(const void *a, const void *b) {
    const struct trace_frame *x = a, *y = b;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static void top_up(uint64_t t) {
    // Saturated transmitters: a full queue, always (limit_pkts frames). A transmitter with several
    // saturate rules gets their frames in turn: the rule after the one that filled the last slot
    // goes first, so that no receiver's share depends on the order of the rules.
    static int next_rule[MAX_MEDIA];
    for (int i = 0; i < n_media; i++) {
        struct medium_slot *ms = &media[i];
        for (int progress = 1; progress;) {
            progress = 0;
            for (int j = 0; j < ms->n_rules; j++) {
                int k = (next_rule[i] + j) % ms->n_rules;
                struct rule *r = &ms->rules[k];
                if (r->kind != SATURATE || medium_queued(ms->model, r->tx) >= ms->limit_pkts) continue;
                v_enqueue(i, t, r->tx, r->rx, r->len);
                next_rule[i] = (k + 1) % ms->n_rules;
                progress = 1;
            }
        }
    }
}

static int run_virtual(void) {
    if (run_seconds <= 0) die("--virtual needs a 'run seconds=S' line");
    uint64_t end_ns = (uint64_t)(run_seconds * 1e9);
    warmup_ns = (uint64_t)(warmup_seconds * 1e9);
    qsort(trace, n_trace, sizeof *trace, by_time);
    struct medium_station_stats snap[MAX_MEDIA][MEDIUM_MAX_STATIONS];
    uint64_t busy_snap[MAX_MEDIA] = {0};
    int snapped = warmup_ns == 0;
    memset(snap, 0, sizeof snap);
    size_t ti = 0;
    top_up(0);
    for (;;) {
        uint64_t t = UINT64_MAX;
        for (int i = 0; i < n_media; i++) {
            uint64_t e = medium_next_event(media[i].model);
            if (e < t) t = e;
        }
        if (ti < n_trace && trace[ti].t_ns < t) t = trace[ti].t_ns;
        for (int i = 0; i < n_media; i++)
            for (int k = 0; k < media[i].n_rules; k++)
                if (media[i].rules[k].kind == OFFER && media[i].rules[k].next_ns < t) t = media[i].rules[k].next_ns;
        if (t == UINT64_MAX || t > end_ns) break;
        if (!snapped && t >= warmup_ns) {
            for (int i = 0; i < n_media; i++) {
                for (int j = 0; j < medium_stations(media[i].model); j++) snap[i][j] = *medium_stats(media[i].model, j);
                busy_snap[i] = medium_busy_ns(media[i].model);
            }
            snapped = 1;
        }
        for (int i = 0; i < n_media; i++) {
            struct medium_hooks h = {.ctx = &media[i], .deliver = v_deliver, .drop = v_drop, .ppdu = v_ppdu};
            medium_run(media[i].model, t, &h);
        }
        for (; ti < n_trace && trace[ti].t_ns <= t; ti++) {
            struct trace_frame *f = &trace[ti];
            v_enqueue(f->medium, f->t_ns, f->tx, f->rx, f->len);
        }
        for (size_t k = 0; k < n_replies; k++) v_enqueue(replies[k].medium, t, replies[k].tx, replies[k].rx, replies[k].len);
        for (int i = 0; i < n_media; i++)
            for (int k = 0; k < media[i].n_rules; k++) {
                struct rule *r = &media[i].rules[k];
                for (; r->kind == OFFER && r->next_ns <= t; r->next_ns += r->interval_ns) v_enqueue(i, t, r->tx, r->rx, r->len);
            }
        n_replies = 0;
        top_up(t);
    }
    double window_s = run_seconds - warmup_seconds;
    printf("{\"model\": \"%s\", \"seconds\": %g, \"warmup\": %g, \"media\": [", LINKEM_MODEL_VERSION, run_seconds,
           warmup_seconds);
    for (int i = 0; i < n_media; i++) {
        struct medium_slot *ms = &media[i];
        uint64_t busy = medium_busy_ns(ms->model) - busy_snap[i];
        printf("%s{\"name\": \"%s\", \"busy_ns\": %llu, \"busy_share\": %.6f, \"probes\": [", i ? ", " : "", ms->name,
               (unsigned long long)busy, (double)busy / (window_s * 1e9));
        for (int k = 0; k < ms->n_probes; k++)
            printf("%s{\"len\": %u, \"mpdu_bytes\": %u, \"ppdu_ns\": %llu}", k ? ", " : "", ms->probe_len[k],
                   medium_mpdu_bytes(ms->model, ms->probe_len[k], 0),
                   (unsigned long long)medium_ppdu_ns(ms->model, medium_mpdu_bytes(ms->model, ms->probe_len[k], 0)));
        printf("], \"stations\": [");
        int n = medium_stations(ms->model);
        for (int j = 0; j < n; j++) {
            printf("%s{\"name\": \"%s\", ", j ? ", " : "", medium_station_name(ms->model, j));
            write_model_stats(stdout, &snap[i][j], medium_stats(ms->model, j));
            // The relations in force (from hears lines or positions), for the Python twin's tests.
            static const char *relation[] = {"decodes", "senses", "interfered_by"};
            for (int rel = 0; rel < 3; rel++) {
                printf(", \"%s\": [", relation[rel]);
                for (int r = 0, first = 1; r < n; r++) {
                    int in = rel == 0 ? medium_decodes(ms->model, j, r)
                           : rel == 1 ? medium_senses(ms->model, j, r)
                                      : medium_interferes(ms->model, j, r);
                    if (!in) continue;
                    printf("%s\"%s\"", first ? "" : ", ", medium_station_name(ms->model, r));
                    first = 0;
                }
                printf("]");
            }
            printf(", \"to\": {");
            int first = 1;
            for (int r = 0; r < n; r++) {
                if (!ms->win_frames[j][r]) continue;
                printf("%s\"%s\": {\"frames\": %llu, \"bytes\": %llu}", first ? "" : ", ",
                       medium_station_name(ms->model, r), (unsigned long long)ms->win_frames[j][r],
                       (unsigned long long)ms->win_bytes[j][r]);
                first = 0;
            }
            printf("}}");
        }
        printf("]}");
    }
    printf("]}\n");
    if (events_out) fclose(events_out);
    if (deliveries_out) fclose(deliveries_out);
    for (int i = 0; i < n_media; i++) medium_free(media[i].model);
    free(trace);
    free(replies);
    return 0;
}

static void on_stop(int sig) { (void)sig; stop_requested = 1; }
static void on_stats(int sig) { (void)sig; stats_requested = 1; }

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("linkem %s\n", LINKEM_MODEL_VERSION);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--virtual") == 0) {
        parse_config(argv[2]);
        if (n_media == 0) die("%s defines no medium to run", argv[2]);
        return run_virtual();
    }
    if (argc != 2) {
        fprintf(stderr, "usage: linkem CONFIG | linkem --virtual CONFIG | linkem --version\n");
        return 2;
    }
    parse_config(argv[1]);
    if (n_ifaces == 0) die("%s configures no path", argv[1]);
    for (int i = 0; i < n_ifaces; i++) open_socket(&ifaces[i]);
    prctl(PR_SET_TIMERSLACK, 1UL);  // wake-ups within a microsecond, not the default 50
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_stats;
    sigaction(SIGUSR1, &sa, NULL);

    struct pollfd pfds[MAX_IFACES];
    int inputs[MAX_IFACES], n_inputs = 0;
    for (int i = 0; i < n_ifaces; i++) {
        if (!ifaces[i].has_route) continue;
        pfds[n_inputs] = (struct pollfd){.fd = ifaces[i].fd, .events = POLLIN};
        inputs[n_inputs++] = i;
    }
    printf("ready\n");
    fflush(stdout);

    static unsigned char buf[FRAME_MAX];
    while (!stop_requested) {
        if (stats_requested) { stats_requested = 0; write_stats(); }
        uint64_t next = run_due(now_ns());
        struct timespec timeout, *tp = NULL;
        if (next != UINT64_MAX) {
            uint64_t now = now_ns();
            uint64_t wait = next > now ? next - now : 0;
            timeout.tv_sec = (time_t)(wait / 1000000000ull);
            timeout.tv_nsec = (long)(wait % 1000000000ull);
            tp = &timeout;
        }
        int ready = ppoll(pfds, (nfds_t)n_inputs, tp, NULL);
        if (ready < 0) {
            if (errno == EINTR) continue;
            die("ppoll: %s", strerror(errno));
        }
        for (int k = 0; k < n_inputs && ready > 0; k++) {
            struct iface *in = &ifaces[inputs[k]];
            if (pfds[k].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                int err = 0;
                socklen_t len = sizeof err;
                if (getsockopt(in->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err == 0)
                    err = (pfds[k].revents & POLLNVAL) ? EBADF : ENETDOWN;
                socket_failed(in, "poll", err);
            }
            if (!(pfds[k].revents & POLLIN)) continue;
            for (;;) {  // drain the socket
                ssize_t len = recv(in->fd, buf, sizeof buf, 0);
                if (len < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                    socket_failed(in, "recv", errno);
                if (len <= 0) break;
                struct frame *f = malloc(sizeof *f + (size_t)len);
                if (!f) die("out of memory");
                f->arrival_ns = now_ns();
                f->len = (uint32_t)len;
                memcpy(f->data, buf, (size_t)len);
                admit(in, f);
            }
        }
    }
    write_stats();
    return 0;
}
