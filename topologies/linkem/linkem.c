// linkem: a userspace link emulator for kernels without netem.
//
// It reads Ethernet frames from interfaces through AF_PACKET sockets, passes each through the
// path configured for the interface it arrived on, and writes it out of that path's output
// interface:
//
//   wire   a one-way wired link: random loss on arrival, a drop-tail queue (limit in packets),
//          serialisation at a rate, then a propagation delay. Two wires make a full-duplex link.
//   air    a frame sent over a shared half-duplex medium (802.11-style). Every transmitter has its
//          own queue; the medium serves the non-empty queues round robin, one frame at a time,
//          each frame costing airtime = (overhead + (frame + mac_bytes) * 8 / phy_bps) * scale.
//          Random loss still costs the airtime (the frame was sent, and not received).
//
// Configuration, one directive per line ('#' starts a comment):
//
//   seed N
//   stats PATH                       (JSON counters written on SIGUSR1 and on exit)
//   wire IN OUT rate_bps=R delay_us=D loss=P limit_pkts=Q       (R = 0: no rate limit)
//   medium NAME phy_bps=R overhead_ns=O mac_bytes=B scale=S loss=P limit_pkts=Q delay_us=D
//   air IN OUT MEDIUM TRANSMITTER
//
// Usage: linkem CONFIG (or linkem --version). Prints "ready" on stdout once every socket is bound; exits 0 on SIGTERM or
// SIGINT after writing the stats. When an interface it serves disappears, or a socket fails for
// any other reason, it writes the stats, says which interface and why on stderr, and exits 3:
// a packet socket whose device is gone reports POLLERR on every poll, so carrying on would spin.
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

// The link model's version, recorded with every experiment run (its provenance): raise it with
// any change to what a wire or the medium does to frames, so that runs of two models never mix.
#define LINKEM_MODEL_VERSION "1 (wire: loss, drop-tail, rate, delay; air: round-robin turns, no contention)"

#define MAX_IFACES 64
#define MAX_WIRES 64
#define MAX_MEDIA 8
#define MAX_TXS 32
#define FRAME_MAX 65536
#define NAME_MAX_LEN 32

struct frame {
    struct frame *next;
    uint64_t arrival_ns;
    uint64_t due_ns;  // wire: end of serialisation, then delivery time; air: delivery time
    int out;          // output interface index into ifaces[]
    int tx;           // air: the transmitter that sent it
    uint32_t len;
    unsigned char data[];
};

struct queue {
    struct frame *head, *tail;
    uint32_t count;
};

struct counters {
    uint64_t rx, rx_bytes, loss_drops, queue_drops, delivered, delivered_bytes, send_errors;
};

struct wire {
    int in, out;
    uint64_t rate_bps, delay_ns;
    double loss;
    uint32_t limit;
    uint64_t busy_until;
    struct queue serialising;  // frames in the queue or on the wire (due_ns = end of serialisation)
    struct queue propagating;  // frames serialised, waiting out the delay (due_ns = delivery time)
    struct counters c;
};

struct tx {
    char name[NAME_MAX_LEN];
    struct queue q;
    struct counters c;
};

struct medium {
    char name[NAME_MAX_LEN];
    uint64_t phy_bps, overhead_ns, delay_ns;
    uint32_t mac_bytes, limit;
    double scale, loss;
    struct tx txs[MAX_TXS];
    int n_txs, next_tx;
    struct frame *on_air;
    int on_air_tx;
    int on_air_lost;
    uint64_t busy_until, busy_total_ns;
    struct queue delivering;
};

struct route {  // what happens to a frame read on an interface
    int is_air;
    int wire;            // index into wires[]
    int medium, tx, out; // for air
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
static struct medium media[MAX_MEDIA];
static int n_media;
static char stats_path[4096];
static volatile sig_atomic_t stop_requested, stats_requested;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

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
}

static struct frame *pop(struct queue *q) {
    struct frame *f = q->head;
    if (!f) return NULL;
    q->head = f->next;
    if (!q->head) q->tail = NULL;
    q->count--;
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

static int medium_index(const char *name) {
    for (int i = 0; i < n_media; i++)
        if (strcmp(media[i].name, name) == 0) return i;
    die("air path names medium %s before it is defined", name);
    return -1;
}

static int tx_index(struct medium *m, const char *name) {
    for (int i = 0; i < m->n_txs; i++)
        if (strcmp(m->txs[i].name, name) == 0) return i;
    if (m->n_txs == MAX_TXS) die("medium %s: too many transmitters (max %d)", m->name, MAX_TXS);
    if (strlen(name) >= NAME_MAX_LEN) die("transmitter name too long: %s", name);
    strcpy(m->txs[m->n_txs].name, name);
    return m->n_txs++;
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

static void parse_config(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open %s: %s", path, strerror(errno));
    char buf[1024];
    int line = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        char *tokens[32];
        int n = 0;
        for (char *t = strtok(buf, " \t\r\n"); t && n < 32; t = strtok(NULL, " \t\r\n")) tokens[n++] = t;
        if (n == 0) continue;
        if (strcmp(tokens[0], "seed") == 0 && n == 2) {
            rng_state = strtoull(tokens[1], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
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
            if (w->loss > 1) die("line %d: loss is a probability (0..1)", line);
            in->route.is_air = 0;
            in->route.wire = n_wires++;
        } else if (strcmp(tokens[0], "medium") == 0 && n >= 2) {
            if (n_media == MAX_MEDIA) die("too many media (max %d)", MAX_MEDIA);
            struct medium *m = &media[n_media++];
            snprintf(m->name, sizeof m->name, "%s", tokens[1]);
            m->phy_bps = (uint64_t)kv_num(tokens + 2, n - 2, "phy_bps", 0, line);
            m->overhead_ns = (uint64_t)kv_num(tokens + 2, n - 2, "overhead_ns", 0, line);
            m->mac_bytes = (uint32_t)kv_num(tokens + 2, n - 2, "mac_bytes", 0, line);
            m->scale = kv_num(tokens + 2, n - 2, "scale", 1, line);
            m->loss = kv_num(tokens + 2, n - 2, "loss", 0, line);
            m->limit = (uint32_t)kv_num(tokens + 2, n - 2, "limit_pkts", 1000, line);
            m->delay_ns = (uint64_t)(kv_num(tokens + 2, n - 2, "delay_us", 0, line) * 1000.0);
            if (m->phy_bps == 0) die("line %d: medium %s needs phy_bps", line, m->name);
            if (m->loss > 1) die("line %d: loss is a probability (0..1)", line);
        } else if (strcmp(tokens[0], "air") == 0 && n == 5) {
            struct iface *in = claim_input(tokens[1]);
            in->route.is_air = 1;
            in->route.out = iface_index(tokens[2]);
            in->route.medium = medium_index(tokens[3]);
            in->route.tx = tx_index(&media[in->route.medium], tokens[4]);
        } else {
            die("%s line %d: cannot read '%s'", path, line, tokens[0]);
        }
    }
    fclose(f);
    if (n_ifaces == 0) die("%s configures no path", path);
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

static void admit(struct iface *in, struct frame *f) {
    struct route *r = &in->route;
    if (!r->is_air) {
        struct wire *w = &wires[r->wire];
        w->c.rx++;
        w->c.rx_bytes += f->len;
        f->out = w->out;
        if (w->loss > 0 && uniform01() < w->loss) { w->c.loss_drops++; free(f); return; }
        if (w->serialising.count >= w->limit) { w->c.queue_drops++; free(f); return; }
        uint64_t start = f->arrival_ns > w->busy_until ? f->arrival_ns : w->busy_until;
        uint64_t ser_ns = w->rate_bps ? (uint64_t)f->len * 8ull * 1000000000ull / w->rate_bps : 0;
        w->busy_until = start + ser_ns;
        f->due_ns = w->busy_until;
        push(&w->serialising, f);
    } else {
        struct medium *m = &media[r->medium];
        struct tx *t = &m->txs[r->tx];
        t->c.rx++;
        t->c.rx_bytes += f->len;
        f->out = r->out;
        f->tx = r->tx;
        if (t->q.count >= m->limit) { t->c.queue_drops++; free(f); return; }
        push(&t->q, f);
    }
}

static uint64_t airtime_ns(const struct medium *m, uint32_t len) {
    double bits = (double)(len + m->mac_bytes) * 8.0;
    return (uint64_t)(((double)m->overhead_ns + bits * 1e9 / (double)m->phy_bps) * m->scale);
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
        struct medium *m = &media[i];
        for (;;) {
            if (m->on_air) {
                if (m->busy_until > now) break;
                struct frame *f = m->on_air;
                struct tx *t = &m->txs[m->on_air_tx];
                m->on_air = NULL;
                if (m->on_air_lost) {
                    t->c.loss_drops++;
                    free(f);
                } else {
                    f->due_ns = m->busy_until + m->delay_ns;
                    push(&m->delivering, f);
                }
            }
            // Round robin over the transmitters with something queued: DCF's per-frame fairness.
            int chosen = -1;
            for (int k = 0; k < m->n_txs; k++) {
                int j = (m->next_tx + k) % m->n_txs;
                if (m->txs[j].q.head) { chosen = j; break; }
            }
            if (chosen < 0) break;
            struct frame *f = pop(&m->txs[chosen].q);
            uint64_t start = f->arrival_ns > m->busy_until ? f->arrival_ns : m->busy_until;
            uint64_t air = airtime_ns(m, f->len);
            m->on_air = f;
            m->on_air_tx = chosen;
            m->on_air_lost = m->loss > 0 && uniform01() < m->loss;
            m->busy_until = start + air;
            m->busy_total_ns += air;
            m->next_tx = (chosen + 1) % m->n_txs;
        }
        while (m->delivering.head && m->delivering.head->due_ns <= now) {
            struct frame *f = pop(&m->delivering);
            transmit(f, &m->txs[f->tx].c, now);
        }
        if (m->on_air && m->busy_until < next) next = m->busy_until;
        if (m->delivering.head && m->delivering.head->due_ns < next) next = m->delivering.head->due_ns;
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

static void write_stats(void) {
    if (!stats_path[0]) return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "{\"wires\": [");
    for (int i = 0; i < n_wires; i++) {
        fprintf(f, "%s{\"in\": \"%s\", \"out\": \"%s\", \"queued\": %u, ", i ? ", " : "", ifaces[wires[i].in].name,
                ifaces[wires[i].out].name, wires[i].serialising.count);
        write_counters(f, &wires[i].c);
        fputc('}', f);
    }
    fprintf(f, "], \"media\": [");
    for (int i = 0; i < n_media; i++) {
        struct medium *m = &media[i];
        fprintf(f, "%s{\"name\": \"%s\", \"busy_ns\": %llu, \"transmitters\": [", i ? ", " : "", m->name,
                (unsigned long long)m->busy_total_ns);
        for (int j = 0; j < m->n_txs; j++) {
            fprintf(f, "%s{\"name\": \"%s\", \"queued\": %u, ", j ? ", " : "", m->txs[j].name, m->txs[j].q.count);
            write_counters(f, &m->txs[j].c);
            fputc('}', f);
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

static void on_stop(int sig) { (void)sig; stop_requested = 1; }
static void on_stats(int sig) { (void)sig; stats_requested = 1; }

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("linkem %s\n", LINKEM_MODEL_VERSION);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: linkem CONFIG | linkem --version\n");
        return 2;
    }
    parse_config(argv[1]);
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
