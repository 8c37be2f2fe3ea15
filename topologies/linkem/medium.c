// The 802.11 shared-medium model (medium.h says what it models and who calls it).
//
// An event model. Every PPDU on the air (data or A-MPDU, and the responses: ACK or Block Ack, with
// RTS/CTS also the RTS and the CTS) is a transmission of one station, with a start, an end and
// the set of stations at which it cannot be received (something that interferes there overlapped
// it, or that station was transmitting). The events are: a backoff running out (an exchange
// begins), a transmission that is due to start (a response SIFS after the frame it answers, or the
// data SIFS after a CTS), a transmission ending (its outcome is decided and the next step of its
// exchange scheduled), and a NAV set by an RTS being reset. Everything else is arithmetic on times
// each station keeps: when the medium it senses went idle, its NAV, the end of its own exchange,
// and from those the moment its backoff resumes counting (`resume`). A station counts whole slots
// from `resume`; a transmission it senses freezes the count at the last slot boundary before it is
// sensed.
//
// The transmitter settles a data exchange when its data PPDU ends, as if the response will arrive
// whenever the receiver got the frame (the response cannot be lost in one collision domain: every
// station that could interfere has set its NAV). Where a response is lost after all (hidden
// terminals), the transmitter takes the exchange back when the response ends: its contention
// window doubles and the frames go again, as duplicates the receiver discards. In one collision
// domain without RTS/CTS this keeps linkem 2's arithmetic and random draws exactly (a test compares
// the two models' decisions PPDU by PPDU).
//
// Clause numbers are IEEE 802.11-2016's.
#include "medium.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 32
#define BIT(i) (1u << (i))

struct mpdu {
    struct mpdu *next;
    void *frame;       // NULL for a duplicate (the receiver already has the frame)
    uint32_t len;      // the Ethernet frame's length
    uint32_t seq;      // per transmitter-receiver pair, from 0
    uint32_t attempts; // data transmissions so far
    uint32_t rts_fails;// RTS sent for it without a CTS coming back, since its last CTS
    uint64_t order;    // arrival order over the transmitter's queues (oldest-first service)
    int done;          // acknowledged or given up, to be unlinked
};

enum held_state { RX_EMPTY, RX_HELD, RX_GONE };

struct held {
    enum held_state state;
    void *frame;
    uint32_t len;
};

// One transmitter-receiver pair: the transmitter's queue for that receiver, and the receiver's
// reorder buffer for frames from that transmitter (10.24.7: frames are released in order; a hole
// waits until it is filled or the transmitter gives the frame up).
struct link {
    struct mpdu *head, *tail;
    uint32_t count, next_seq, rx_next;
    struct held ring[MEDIUM_BA_WINDOW];
};

enum station_state { IDLE, TRANSMITTING };
enum air_kind { AIR_DATA, AIR_RTS, AIR_CTS, AIR_RESPONSE };  // response: ACK or Block Ack
// Where a station is in an exchange it started. Without RTS/CTS it is only ever EX_DATA while its
// data is on the air.
enum exchange { EX_NONE, EX_RTS, EX_WAIT_CTS, EX_DATA };

struct air {
    enum air_kind kind;
    int to;
    uint64_t start, end;
    uint64_t nav_until;   // what its Duration field reserves: to the end of the exchange
    uint32_t corrupt_at;  // stations at which it cannot be received
};

struct acked_mpdu {  // what a data exchange delivered, should its response be lost
    uint32_t seq, len, attempts;
};

struct station {
    char name[NAME_LEN];
    struct link links[MEDIUM_MAX_STATIONS];
    uint32_t queued;
    // channel access (10.3.4.3 backoff procedure; 10.22.2 EDCA)
    uint32_t cw, backoff;
    uint64_t resume;    // backoff counts from here in whole slots (meaningful while heard == 0)
    int heard;          // transmissions on the air that this station senses
    int garbled;        // this busy period had a frame it could not decode: EIFS follows
    int sent_during;    // it transmitted in this busy period: what it heard was energy, not frames
    int eifs;           // the last busy period ended undecodable (10.3.2.3.7)
    uint64_t busy_end, nav, own_end;
    // the transmission this station is receiving (-1: none) and when it ends: the first to reach
    // it while it received nothing, or the survivor of a collision (air_start)
    int rx_lock;
    uint64_t rx_lock_end;
    int armed;
    uint64_t expiry;    // when armed: the moment its backoff reaches 0 and it transmits
    enum station_state state;  // TRANSMITTING while a PPDU of its own is on the air
    struct air air;
    enum exchange ex;
    // a transmission due to start: a response, or the data after a CTS
    int pending;
    struct air next;
    // a NAV set by an RTS, reset if no frame follows it (10.3.2.4)
    uint64_t nav_reset_at, nav_before;
    // the exchange's MPDUs
    int cur_rx;
    struct mpdu *cur[MEDIUM_BA_WINDOW];
    uint32_t n_cur, cur_bytes;
    uint64_t data_ns;   // the data PPDU's duration
    // the last data exchange the transmitter settled as acknowledged, until its response ends
    struct acked_mpdu acked[MEDIUM_BA_WINDOW];
    uint32_t n_acked, cw_before;
    int acked_rx;
    struct medium_station_stats st;
};

struct medium {
    struct medium_params p;
    // scaled durations
    uint64_t slot, sifs, aifs, eifs_extra, ack_timeout, detect, ack, block_ack, max_ppdu, rts, cts, nav_reset;
    uint64_t rx_start_delay;  // from a PPDU's start to its PHY-RXSTART.indication: the PHY preamble and header
    struct station sta[MEDIUM_MAX_STATIONS];
    int n;
    // the relations: [listener][talker]; interferes: [receiver][talker]
    uint8_t decodes[MEDIUM_MAX_STATIONS][MEDIUM_MAX_STATIONS];
    uint8_t senses[MEDIUM_MAX_STATIONS][MEDIUM_MAX_STATIONS];
    uint8_t interferes[MEDIUM_MAX_STATIONS][MEDIUM_MAX_STATIONS];
    uint32_t imask[MEDIUM_MAX_STATIONS];  // per talker: the other stations it interferes at
    double x[MEDIUM_MAX_STATIONS], y[MEDIUM_MAX_STATIONS];
    uint8_t placed[MEDIUM_MAX_STATIONS];
    double tx_m, cs_m, if_m;
    double capture;  // medium_set_capture's distance ratio; 0: none
    int ranged;
    uint64_t rng, now, order, busy_total, busy_mark;
};

static uint64_t scaled(const struct medium *m, double ns) { return (uint64_t)llround(ns * m->p.scale); }

static uint64_t rnd(struct medium *m) {  // xorshift64*: reproducible for a given seed
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return m->rng * 0x2545F4914F6CDD1Dull;
}

static double uniform01(struct medium *m) { return (double)(rnd(m) >> 11) / 9007199254740992.0; }

static uint32_t draw_backoff(struct medium *m, uint32_t cw) { return (uint32_t)(rnd(m) % ((uint64_t)cw + 1)); }

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static uint32_t doubled(const struct medium *m, uint32_t cw) {
    // 10.3.4.3: CW = 2 * (CW + 1) - 1, up to CWmax.
    return cw * 2 + 1 > m->p.cw_max ? m->p.cw_max : cw * 2 + 1;
}

struct medium *medium_new(const struct medium_params *p, uint64_t seed, const char **err) {
    static const char *bad = NULL;
    if (p->slot_ns <= 0) bad = "slot_ns must be positive";
    else if (p->detect_ns < 0 || p->detect_ns >= p->slot_ns) bad = "detect_ns must be in [0, slot_ns)";
    else if (p->aifs_ns < p->sifs_ns) bad = "aifs_ns must be at least sifs_ns";
    else if (p->cw_min < 1 || p->cw_max < p->cw_min) bad = "cw_min must be >= 1 and cw_max >= cw_min";
    else if (p->retry_limit < 1) bad = "retry_limit counts attempts: at least 1";
    else if (p->symbol_ns <= 0 || p->bits_per_symbol == 0) bad = "symbol_ns and bits_per_symbol must be positive";
    else if (p->aggregate && (p->max_mpdus < 1 || p->max_mpdus > MEDIUM_BA_WINDOW))
        bad = "max_mpdus must be 1..64 (the Block Ack window)";
    else if (p->aggregate && (p->max_ampdu_bytes == 0 || p->max_ppdu_ns <= 0))
        bad = "an aggregating medium needs max_ampdu_bytes and max_ppdu_ns";
    else if (p->rts_cts && p->aggregate) bad = "rts_cts is modelled for non-aggregating media only";
    else if (p->rts_cts && (p->rts_ns <= 0 || p->cts_ns <= 0)) bad = "rts_cts needs rts_ns and cts_ns";
    else if (p->rts_cts && p->long_retry_limit < 1) bad = "long_retry_limit counts attempts: at least 1";
    else if (p->ack_timeout_ns < p->sifs_ns + p->slot_ns)
        bad = "ack_timeout_ns must be at least sifs_ns + slot_ns (10.3.2.9)";
    else if (p->loss < 0 || p->loss > 1) bad = "loss is a probability (0..1)";
    else if (p->scale <= 0) bad = "scale must be positive";
    else if (p->limit_pkts < 1) bad = "limit_pkts must be at least 1";
    if (bad) {
        if (err) *err = bad;
        return NULL;
    }
    struct medium *m = calloc(1, sizeof *m);
    if (!m) {
        if (err) *err = "out of memory";
        return NULL;
    }
    m->p = *p;
    m->slot = scaled(m, p->slot_ns);
    m->sifs = scaled(m, p->sifs_ns);
    m->aifs = scaled(m, p->aifs_ns);
    m->eifs_extra = scaled(m, p->eifs_extra_ns);
    m->ack_timeout = scaled(m, p->ack_timeout_ns);
    m->detect = scaled(m, p->detect_ns);
    m->ack = scaled(m, p->ack_ns);
    m->block_ack = scaled(m, p->block_ack_ns);
    m->max_ppdu = scaled(m, p->max_ppdu_ns);
    m->rts = scaled(m, p->rts_ns);
    m->cts = scaled(m, p->cts_ns);
    // 10.3.2.4: a NAV set from an RTS may be reset when no PHY-RXSTART follows within
    // 2 x aSIFSTime + CTS_Time + aRxPHYStartDelay + 2 x aSlotTime of its end (aRxPHYStartDelay is
    // the ACK timeout's: aSIFSTime + aSlotTime + aRxPHYStartDelay).
    m->nav_reset = scaled(m, p->sifs_ns + p->cts_ns + p->ack_timeout_ns + p->slot_ns);
    m->rx_start_delay = scaled(m, p->preamble_ns);
    memset(m->decodes, 1, sizeof m->decodes);
    memset(m->senses, 1, sizeof m->senses);
    memset(m->interferes, 1, sizeof m->interferes);
    m->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    return m;
}

void medium_free(struct medium *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++)
        for (int r = 0; r < m->n; r++) {
            struct mpdu *q = m->sta[i].links[r].head;
            while (q) {
                struct mpdu *next = q->next;
                free(q);
                q = next;
            }
        }
    free(m);
}

static void update_imask(struct medium *m, int talker) {
    uint32_t mask = 0;
    for (int r = 0; r < MEDIUM_MAX_STATIONS; r++)
        if (r != talker && m->interferes[r][talker]) mask |= BIT(r);
    m->imask[talker] = mask;
}

int medium_station(struct medium *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (strncmp(m->sta[i].name, name, NAME_LEN) == 0) return i;
    if (m->n == MEDIUM_MAX_STATIONS || strlen(name) >= NAME_LEN) return -1;
    struct station *s = &m->sta[m->n];
    memset(s, 0, sizeof *s);
    strcpy(s->name, name);
    s->cw = m->p.cw_min;
    s->cur_rx = -1;
    s->rx_lock = -1;
    update_imask(m, m->n);
    for (int j = 0; j < m->n; j++) update_imask(m, j);
    return m->n++;
}

const char *medium_station_name(const struct medium *m, int i) { return m->sta[i].name; }
int medium_stations(const struct medium *m) { return m->n; }

void medium_set_hears(struct medium *m, int listener, int talker, int hears) {
    uint8_t v = (uint8_t)(hears != 0);
    m->decodes[listener][talker] = m->senses[listener][talker] = m->interferes[listener][talker] = v;
    update_imask(m, talker);
}

static void apply_geometry(struct medium *m) {
    if (!m->ranged) return;
    for (int a = 0; a < m->n; a++)
        for (int b = 0; b < m->n; b++) {
            if (a == b || !m->placed[a] || !m->placed[b]) continue;
            double d = hypot(m->x[a] - m->x[b], m->y[a] - m->y[b]);
            m->decodes[a][b] = d <= m->tx_m;
            m->senses[a][b] = d <= m->cs_m;
            m->interferes[a][b] = d <= m->if_m;
        }
    for (int j = 0; j < m->n; j++) update_imask(m, j);
}

void medium_set_ranges(struct medium *m, double tx_m, double cs_m, double interference_m) {
    m->tx_m = tx_m, m->cs_m = cs_m, m->if_m = interference_m;
    m->ranged = 1;
    apply_geometry(m);
}

void medium_set_capture(struct medium *m, double ratio) { m->capture = ratio; }

static double distance(const struct medium *m, int a, int b) { return hypot(m->x[a] - m->x[b], m->y[a] - m->y[b]); }

// Whether station r, receiving `held`'s frame, ignores `newcomer`'s (medium_set_capture): all
// three placed, and the newcomer at least `capture` times as far from r as the held frame's
// transmitter. On received power alone, as ns-2 compares them.
static int captures(const struct medium *m, int r, int held, int newcomer) {
    if (m->capture <= 0 || !m->placed[r] || !m->placed[held] || !m->placed[newcomer]) return 0;
    return distance(m, r, newcomer) >= m->capture * distance(m, r, held);
}

void medium_set_position(struct medium *m, int station, double x_m, double y_m) {
    m->x[station] = x_m, m->y[station] = y_m;
    m->placed[station] = 1;
    apply_geometry(m);
}

uint32_t medium_queued(const struct medium *m, int i) { return m->sta[i].queued; }
const struct medium_station_stats *medium_stats(const struct medium *m, int i) { return &m->sta[i].st; }
uint64_t medium_busy_ns(const struct medium *m) { return m->busy_total; }

int medium_decodes(const struct medium *m, int listener, int talker) {
    return listener != talker && m->decodes[listener][talker];
}
int medium_senses(const struct medium *m, int listener, int talker) {
    return listener != talker && m->senses[listener][talker];
}
int medium_interferes(const struct medium *m, int receiver, int talker) {
    return receiver != talker && m->interferes[receiver][talker];
}

uint32_t medium_mpdu_bytes(const struct medium *m, uint32_t len, int in_ampdu) {
    uint32_t mpdu = len + m->p.mac_bytes;
    // 9.7.1 (A-MPDU format): a 4-byte delimiter before each MPDU, padding to a 4-byte boundary.
    return in_ampdu ? (4 + mpdu + 3) / 4 * 4 : mpdu;
}

static uint64_t ppdu_unscaled_ns(const struct medium *m, uint32_t bytes) {
    const struct medium_params *p = &m->p;
    uint64_t bits = (uint64_t)p->service_bits + 8ull * bytes + p->tail_bits;
    uint64_t symbols = (bits + p->bits_per_symbol - 1) / p->bits_per_symbol;
    return (uint64_t)llround(p->preamble_ns + (double)symbols * p->symbol_ns + p->signal_ext_ns);
}

uint64_t medium_ppdu_ns(const struct medium *m, uint32_t bytes) { return scaled(m, (double)ppdu_unscaled_ns(m, bytes)); }

static void add_busy(struct medium *m, uint64_t start, uint64_t end) {  // union of busy intervals
    if (end <= m->busy_mark) return;
    m->busy_total += end - max64(start, m->busy_mark);
    m->busy_mark = end;
}

// The moment a station's backoff may resume: the medium it senses idle (EIFS after a frame it could
// not decode), its NAV over, its own exchange over, then AIFS (DIFS for DCF).
static void recompute_resume(struct medium *m, struct station *s) {
    uint64_t idle = s->busy_end + (s->eifs ? m->eifs_extra : 0);
    s->resume = max64(max64(idle, s->nav), s->own_end) + m->aifs;
}

// Count the idle slots up to t into the backoff (whole slots only: 10.3.4.3 decrements at slot
// boundaries), keeping `resume` on the slot grid.
static void settle(struct medium *m, struct station *s, uint64_t t) {
    if (s->heard || s->state == TRANSMITTING || t <= s->resume) return;
    uint64_t elapsed = (t - s->resume) / m->slot;
    if (elapsed >= s->backoff) elapsed = s->backoff;
    s->backoff -= (uint32_t)elapsed;
    s->resume += elapsed * m->slot;
}

static void try_arm(struct medium *m, struct station *s, uint64_t now) {
    s->armed = 0;
    if (s->state == TRANSMITTING || s->heard || s->queued == 0 || s->ex != EX_NONE || s->pending) return;
    s->armed = 1;
    s->expiry = max64(s->resume + (uint64_t)s->backoff * m->slot, now);
}

// The receiver side of a link: release in order (see struct link).
static void rx_release(struct medium *m, int tx, int rx, uint64_t t, const struct medium_hooks *h) {
    struct link *l = &m->sta[tx].links[rx];
    for (;;) {
        struct held *slot = &l->ring[l->rx_next % MEDIUM_BA_WINDOW];
        if (slot->state == RX_EMPTY) return;
        if (slot->state == RX_HELD) {
            m->sta[tx].st.delivered++;
            m->sta[tx].st.delivered_bytes += slot->len;
            if (h && h->deliver) h->deliver(h->ctx, tx, rx, slot->frame, slot->len, t);
        }
        slot->state = RX_EMPTY;
        slot->frame = NULL;
        l->rx_next++;
    }
}

static void rx_mark(struct medium *m, int tx, int rx, struct mpdu *q, enum held_state state, uint64_t t,
                    const struct medium_hooks *h) {
    if (!q->frame) return;  // a duplicate: the receiver has (or has released) the frame already
    struct link *l = &m->sta[tx].links[rx];
    struct held *slot = &l->ring[q->seq % MEDIUM_BA_WINDOW];
    slot->state = state;
    slot->frame = q->frame;
    slot->len = q->len;
    q->frame = NULL;  // the receiver's now
    rx_release(m, tx, rx, t, h);
}

// The transmitter gave the frame up: the receiver moves past it.
static void rx_mark_gone(struct medium *m, int tx, int rx, const struct mpdu *q, uint64_t t,
                         const struct medium_hooks *h) {
    struct held *slot = &m->sta[tx].links[rx].ring[q->seq % MEDIUM_BA_WINDOW];
    slot->state = RX_GONE;
    slot->frame = NULL;
    slot->len = q->len;
    rx_release(m, tx, rx, t, h);
}

int medium_enqueue(struct medium *m, uint64_t now, int tx, int rx, uint32_t len, void *frame,
                   const struct medium_hooks *h) {
    if (now < m->now) now = m->now;
    struct station *s = &m->sta[tx];
    if (s->queued >= m->p.limit_pkts) {
        s->st.queue_drops++;
        if (h && h->drop) h->drop(h->ctx, tx, rx, frame, len, MEDIUM_DROP_QUEUE_FULL, now);
        return -1;
    }
    struct mpdu *q = calloc(1, sizeof *q);
    if (!q) return -1;
    struct link *l = &s->links[rx];
    q->frame = frame;
    q->len = len;
    q->seq = l->next_seq++;
    q->order = m->order++;
    if (l->tail) l->tail->next = q;
    else l->head = q;
    l->tail = q;
    l->count++;
    s->st.enqueued++;
    // (A station sending a response is not in an exchange of its own: it backs off as linkem 2's
    // did, when the response was no transmission of the receiver's.)
    if (s->queued++ == 0 && s->ex == EX_NONE) {
        settle(m, s, now);
        // A frame that finds the medium busy, with no backoff pending, backs off first (10.3.4.3);
        // one that finds it idle for AIFS and the backoff done goes at once.
        if (s->backoff == 0 && (s->heard || now < s->resume)) s->backoff = draw_backoff(m, s->cw);
        try_arm(m, s, now);
    }
    return 0;
}

uint64_t medium_next_event(const struct medium *m) {
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < m->n; i++) {
        const struct station *s = &m->sta[i];
        if (s->state == TRANSMITTING && s->air.end < next) next = s->air.end;
        else if (s->state == IDLE && s->armed && s->expiry < next) next = s->expiry;
        if (s->pending && s->next.start < next) next = s->next.start;
        if (s->nav_reset_at && s->nav_reset_at < next) next = s->nav_reset_at;
    }
    return next;
}

// The receiver to serve: the one whose oldest frame is the transmitter's oldest (FIFO over the
// transmitter's queue, as ns-3's per-AC queue does; the aggregate then takes that receiver's
// frames behind it).
static int pick_receiver(const struct station *s, int n) {
    int best = -1;
    for (int r = 0; r < n; r++)
        if (s->links[r].head && (best < 0 || s->links[r].head->order < s->links[best].head->order)) best = r;
    return best;
}

// A PPDU goes on the air: who can no longer receive what, and who senses it.
static void air_start(struct medium *m, int i, enum air_kind kind, int to, uint64_t t, uint64_t dur,
                      uint64_t nav_until) {
    struct station *s = &m->sta[i];
    s->air = (struct air){.kind = kind, .to = to, .start = t, .end = t + dur, .nav_until = nav_until};
    s->state = TRANSMITTING;
    s->armed = 0;
    if (s->heard) s->sent_during = 1;
    // A station cannot receive while it transmits.
    for (int j = 0; j < m->n; j++) {
        struct station *o = &m->sta[j];
        if (j == i || o->state != TRANSMITTING) continue;
        o->air.corrupt_at |= BIT(i);
        s->air.corrupt_at |= BIT(j);
    }
    // Collisions, as ns-2's MAC decides them (mac-802_11.cc recv()): a station where this frame
    // interferes and that is receiving nothing locks onto it (even while transmitting, or when
    // it cannot decode it); one already receiving a frame ignores this one if it captures the
    // held frame against it (the newcomer is lost there and forgotten: it disturbs nothing that
    // arrives later), and otherwise both are lost and it goes on receiving the one that ends
    // later. Without capture this is "a frame is lost wherever another one that interferes there
    // overlaps it". Two frames that start at the same moment reach a station nearer one first.
    for (int r = 0; r < m->n; r++) {
        if (!(m->imask[i] & BIT(r))) continue;
        struct station *rs = &m->sta[r];
        if (rs->rx_lock >= 0 && rs->rx_lock_end <= t) rs->rx_lock = -1;
        if (rs->rx_lock < 0) {
            rs->rx_lock = i;
            rs->rx_lock_end = s->air.end;
            continue;
        }
        int held = rs->rx_lock, newcomer = i;
        if (m->sta[held].air.start == t && m->capture > 0 && distance(m, r, i) < distance(m, r, held))
            held = i, newcomer = rs->rx_lock;
        if (captures(m, r, held, newcomer)) {
            m->sta[newcomer].air.corrupt_at |= BIT(r);
            rs->rx_lock = held;
            rs->rx_lock_end = m->sta[held].air.end;
        } else {
            m->sta[held].air.corrupt_at |= BIT(r);
            m->sta[newcomer].air.corrupt_at |= BIT(r);
            if (s->air.end > rs->rx_lock_end) rs->rx_lock = i, rs->rx_lock_end = s->air.end;
        }
    }
    for (int j = 0; j < m->n; j++) {
        struct station *o = &m->sta[j];
        if (!medium_senses(m, j, i)) continue;
        // 10.3.2.4: a frame followed the RTS if its PHY-RXSTART (the end of its PHY preamble and
        // header, aRxPHYStartDelay after it starts) comes within NAVTimeout; one that starts
        // later than that does not stop the reset (ns-3 3.37: FrameExchangeManager::
        // RxStartIndication cancels m_navResetEvent, at PhyRxPayloadBegin).
        if (o->nav_reset_at && t + m->rx_start_delay < o->nav_reset_at) o->nav_reset_at = 0;
        if (o->state == TRANSMITTING) {
            o->sent_during = 1;
        } else if (o->heard == 0) {
            o->garbled = 0;
            o->sent_during = 0;
            // A backoff that runs out before this transmission can be sensed goes ahead: the
            // same-slot collision of 10.3.2 (Bianchi's model).
            if (!(o->armed && o->expiry < t + m->detect)) {
                settle(m, o, t + m->detect);
                o->armed = 0;
            }
        } else {
            o->garbled = 1;
        }
        o->heard++;
    }
    // (A response's air was counted when the exchange was settled, as linkem 2 counted it.)
    if (kind != AIR_RESPONSE) add_busy(m, t, s->air.end);
}

static void schedule(struct medium *m, int i, enum air_kind kind, int to, uint64_t at, uint64_t dur,
                     uint64_t nav_until) {
    struct station *s = &m->sta[i];
    s->pending = 1;
    s->next = (struct air){.kind = kind, .to = to, .start = at, .end = at + dur, .nav_until = nav_until};
    s->armed = 0;
}

static uint64_t response_ns(const struct medium *m, const struct station *s) {
    return s->n_cur > 1 ? m->block_ack : m->ack;
}

static void start_data(struct medium *m, int i, uint64_t t) {
    struct station *s = &m->sta[i];
    s->ex = EX_DATA;
    air_start(m, i, AIR_DATA, s->cur_rx, t, s->data_ns, t + s->data_ns + m->sifs + response_ns(m, s));
    s->st.ppdus++;
    s->st.mpdus_sent += s->n_cur;
    if (s->n_cur > s->st.max_mpdus) s->st.max_mpdus = s->n_cur;
    if (s->n_cur > 1 && s->cur_bytes > s->st.max_ampdu_bytes) s->st.max_ampdu_bytes = s->cur_bytes;
    if (s->data_ns > s->st.max_ppdu_ns) s->st.max_ppdu_ns = s->data_ns;
}

// A backoff ran out: the exchange begins, with the data or with an RTS.
static void begin_exchange(struct medium *m, int i, uint64_t t) {
    struct station *s = &m->sta[i];
    int rx = pick_receiver(s, m->n);
    struct link *l = &s->links[rx];
    s->n_cur = 0;
    s->cur_bytes = 0;
    if (!m->p.aggregate) {
        s->cur[s->n_cur++] = l->head;
        s->cur_bytes = medium_mpdu_bytes(m, l->head->len, 0);
    } else {
        // 10.12 (A-MPDU operation): MPDUs for one receiver, within the Block Ack window that starts
        // at the oldest unacknowledged one (the head), the maximum A-MPDU length and aPPDUMaxTime.
        uint32_t total = 0;
        for (struct mpdu *q = l->head; q && s->n_cur < m->p.max_mpdus; q = q->next) {
            if (q->seq - l->head->seq >= MEDIUM_BA_WINDOW) break;
            uint32_t sub = 4 + q->len + m->p.mac_bytes;  // delimiter + MPDU; padding only between
            uint32_t with = total ? (total + 3) / 4 * 4 + sub : sub;
            if (s->n_cur > 0 && (with > m->p.max_ampdu_bytes || medium_ppdu_ns(m, with) > m->max_ppdu)) break;
            s->cur[s->n_cur++] = q;
            total = with;
        }
        // A lone MPDU goes as a plain MPDU, acknowledged by a normal ACK.
        s->cur_bytes = s->n_cur == 1 ? medium_mpdu_bytes(m, l->head->len, 0) : total;
    }
    s->cur_rx = rx;
    s->data_ns = medium_ppdu_ns(m, s->cur_bytes);
    if (!m->p.rts_cts) {
        start_data(m, i, t);
        return;
    }
    // 10.3.2.6: the RTS's Duration covers CTS, data and ACK with their SIFS.
    uint64_t exchange_end = t + m->rts + 3 * m->sifs + m->cts + s->data_ns + response_ns(m, s);
    s->ex = EX_RTS;
    air_start(m, i, AIR_RTS, rx, t, m->rts, exchange_end);
    s->st.rts_sent++;
    s->st.airtime_ns += m->rts;
}

static void unlink_done(struct link *l) {
    struct mpdu **pp = &l->head;
    l->tail = NULL;
    while (*pp) {
        struct mpdu *q = *pp;
        if (q->done) {
            *pp = q->next;
            free(q);
            l->count--;
        } else {
            l->tail = q;
            pp = &q->next;
        }
    }
}

// Give an MPDU up (retry limit): the receiver moves past it.
static void give_up(struct medium *m, int i, int rx, struct mpdu *q, uint64_t t, const struct medium_hooks *h) {
    struct station *s = &m->sta[i];
    q->done = 1;
    if (!q->frame) return;  // a duplicate the receiver already has: nothing is lost
    s->st.retry_drops++;
    if (h && h->drop) h->drop(h->ctx, i, rx, q->frame, q->len, MEDIUM_DROP_RETRY_LIMIT, t);
    q->frame = NULL;
    rx_mark_gone(m, i, rx, q, t, h);
}

// The exchange ends without the MPDUs delivered (no CTS, or the data not received): the next
// attempt, or the MPDUs given up at their retry limit; the contention window doubles, or returns
// to CWmin once something is given up. `own_end`: when the transmitter knew.
static void exchange_failed(struct medium *m, int i, uint64_t own_end) {
    struct station *s = &m->sta[i];
    int rx = s->cur_rx;
    uint32_t gone = 0;
    for (uint32_t k = 0; k < s->n_cur; k++) gone += s->cur[k]->done;
    s->queued -= gone;
    unlink_done(&s->links[rx]);
    s->own_end = own_end;
    s->cw = doubled(m, s->cw);
    if (gone) s->cw = m->p.cw_min;
    s->ex = EX_NONE;
    s->n_cur = 0;
    s->backoff = draw_backoff(m, s->cw);
    s->eifs = 0;
}

static void rts_failed(struct medium *m, int i, uint64_t own_end, uint64_t t, const struct medium_hooks *h) {
    struct station *s = &m->sta[i];
    s->st.rts_failed++;
    for (uint32_t k = 0; k < s->n_cur; k++) {
        struct mpdu *q = s->cur[k];
        // dot11ShortRetryLimit counts the RTS attempts of a frame (10.3.4.4).
        if (++q->rts_fails >= m->p.retry_limit) give_up(m, i, s->cur_rx, q, t, h);
    }
    exchange_failed(m, i, own_end);
}

// The data PPDU ended: linkem 2's settlement of the exchange (see the top of this file).
static void end_data(struct medium *m, int i, const struct medium_hooks *h) {
    struct station *s = &m->sta[i];
    uint64_t t = s->air.end;
    int rx = s->cur_rx;
    int corrupt = (s->air.corrupt_at & BIT(rx)) || !medium_decodes(m, rx, i);
    uint32_t received = 0;
    s->n_acked = 0;
    for (uint32_t k = 0; k < s->n_cur; k++) {
        struct mpdu *q = s->cur[k];
        q->attempts++;
        s->st.retransmissions += q->attempts > 1;
        int ok = !corrupt && !(m->p.loss > 0 && uniform01(m) < m->p.loss);
        if (ok) {
            received++;
            q->done = 1;
            s->acked[s->n_acked++] = (struct acked_mpdu){q->seq, q->len, q->attempts};
            rx_mark(m, i, rx, q, RX_HELD, t, h);
        } else if (!corrupt) {
            s->st.mpdus_lost++;
        }
    }
    // The response: an ACK for a lone MPDU, one Block Ack for an A-MPDU (10.24.7.5); none when
    // nothing arrived, and the transmitter learns it when the ACK timeout expires (10.3.2.9).
    uint64_t resp = response_ns(m, s);
    int acked = received > 0;
    enum medium_outcome outcome = corrupt                ? MEDIUM_COLLIDED
                                  : received == s->n_cur ? MEDIUM_OK
                                  : received             ? MEDIUM_PARTIAL
                                                         : MEDIUM_LOST;
    // dot11ShortRetryLimit counts attempts (10.3.4.4); after an RTS/CTS, dot11LongRetryLimit.
    uint32_t limit = m->p.rts_cts ? m->p.long_retry_limit : m->p.retry_limit;
    for (uint32_t k = 0; k < s->n_cur; k++) {
        struct mpdu *q = s->cur[k];
        if (!q->done && q->attempts >= limit) give_up(m, i, rx, q, t, h);
    }
    uint32_t gone = 0;
    for (uint32_t k = 0; k < s->n_cur; k++) gone += s->cur[k]->done;
    s->queued -= gone;
    unlink_done(&s->links[rx]);
    if (outcome == MEDIUM_COLLIDED) s->st.ppdus_collided++;
    else if (outcome == MEDIUM_LOST) s->st.ppdus_lost++;
    else s->st.ppdus_ok++;
    if (h && h->ppdu) h->ppdu(h->ctx, i, rx, s->n_cur, s->cur_bytes, s->air.start, t - s->air.start, outcome, received);
    s->st.airtime_ns += t - s->air.start;
    s->cw_before = s->cw;
    s->acked_rx = rx;
    if (acked) {
        s->own_end = t + m->sifs + resp;
        s->st.airtime_ns += m->sifs + resp;
        add_busy(m, t + m->sifs, s->own_end);
        s->cw = m->p.cw_min;
        schedule(m, rx, AIR_RESPONSE, i, t + m->sifs, resp, t + m->sifs + resp);
    } else {
        s->own_end = t + m->ack_timeout;
        s->cw = doubled(m, s->cw);
        if (gone) s->cw = m->p.cw_min;
    }
    s->ex = EX_NONE;
    s->state = IDLE;
    s->n_cur = 0;
    // A fresh backoff after every exchange: the next attempt's, or the post-backoff (10.3.4.3).
    s->backoff = draw_backoff(m, s->cw);
    s->eifs = 0;
}

// The response to a data exchange did not reach its transmitter, which had settled the exchange
// as delivered: the frames go again (the receiver discards them), with the window doubled.
static void response_lost(struct medium *m, int i, uint64_t t) {
    struct station *s = &m->sta[i];
    s->st.responses_lost++;
    struct link *l = &s->links[s->acked_rx];
    uint32_t limit = m->p.rts_cts ? m->p.long_retry_limit : m->p.retry_limit;
    uint32_t again = 0;
    for (uint32_t k = 0; k < s->n_acked; k++) {  // back into the queue, in sequence order
        if (s->acked[k].attempts >= limit) continue;
        struct mpdu *q = calloc(1, sizeof *q);
        if (!q) continue;
        q->len = s->acked[k].len;
        q->seq = s->acked[k].seq;
        q->attempts = s->acked[k].attempts;
        struct mpdu **pp = &l->head;
        while (*pp && (int32_t)((*pp)->seq - q->seq) < 0) pp = &(*pp)->next;
        q->next = *pp;
        *pp = q;
        if (!q->next) l->tail = q;
        l->count++;
        s->queued++;
        again++;
    }
    s->n_acked = 0;
    s->cw = again ? doubled(m, s->cw_before) : m->p.cw_min;
    s->backoff = draw_backoff(m, s->cw);
    s->own_end = max64(s->own_end, t);
}

static void end_rts(struct medium *m, int i, const struct medium_hooks *h) {
    struct station *s = &m->sta[i];
    uint64_t t = s->air.end;
    int r = s->air.to;
    struct station *rs = &m->sta[r];
    s->state = IDLE;
    // 10.3.2.6: the addressee answers SIFS later if it received the RTS and its NAV is idle.
    int heard = !(s->air.corrupt_at & BIT(r)) && medium_decodes(m, r, i);
    if (heard && rs->state == IDLE && !rs->pending && rs->ex == EX_NONE && rs->nav <= t) {
        schedule(m, r, AIR_CTS, i, t + m->sifs, m->cts, s->air.nav_until);
        s->ex = EX_WAIT_CTS;
    } else {
        rts_failed(m, i, t + m->ack_timeout, t, h);  // CTSTimeout is ACKTimeout's (10.3.2.7)
    }
}

static void end_cts(struct medium *m, int r, const struct medium_hooks *h) {
    struct station *rs = &m->sta[r];
    uint64_t t = rs->air.end;
    int i = rs->air.to;
    struct station *s = &m->sta[i];
    rs->state = IDLE;
    rs->own_end = max64(rs->own_end, t);
    if (s->ex != EX_WAIT_CTS) return;
    if (!(rs->air.corrupt_at & BIT(i)) && medium_decodes(m, i, r)) {
        for (uint32_t k = 0; k < s->n_cur; k++) s->cur[k]->rts_fails = 0;  // 10.3.4.4: SRC reset
        s->ex = EX_DATA;
        schedule(m, i, AIR_DATA, r, t + m->sifs, s->data_ns, t + m->sifs + s->data_ns + m->sifs + response_ns(m, s));
        s->st.airtime_ns += m->sifs + m->cts + m->sifs;
    } else {
        rts_failed(m, i, t, t, h);  // a CTS that arrived garbled: the station knows at its end
    }
}

static void end_response(struct medium *m, int r) {
    struct station *rs = &m->sta[r];
    uint64_t t = rs->air.end;
    int i = rs->air.to;
    rs->state = IDLE;
    rs->own_end = max64(rs->own_end, t);
    if ((rs->air.corrupt_at & BIT(i)) || !medium_decodes(m, i, r)) response_lost(m, i, t);
    else m->sta[i].n_acked = 0;
}

// Every station that sensed the PPDU that just ended: the medium idle again, the NAV from its
// Duration where it was decoded (not from an RTS or CTS addressed to the station itself), EIFS
// where it was not.
static void sensed_end(struct medium *m, int i, uint64_t t) {
    const struct air *a = &m->sta[i].air;
    for (int j = 0; j < m->n; j++) {
        struct station *o = &m->sta[j];
        if (!medium_senses(m, j, i)) continue;
        o->heard--;
        o->busy_end = max64(o->busy_end, t);
        int decoded = !(a->corrupt_at & BIT(j)) && medium_decodes(m, j, i);
        if (!decoded) o->garbled = 1;
        int own = j == a->to && (a->kind == AIR_RTS || a->kind == AIR_CTS);
        // A frame it decoded sets the NAV even when the busy period also had one it could not (a
        // later transmission it captured against): EIFS still follows that period.
        if (decoded && !o->sent_during && o->state == IDLE && !own) {
            if (a->kind == AIR_RTS && a->nav_until > o->nav) {
                o->nav_before = o->nav;
                o->nav_reset_at = t + m->nav_reset;
            }
            o->nav = max64(o->nav, a->nav_until);
        }
        if (o->heard == 0 && o->state == IDLE) {
            o->eifs = o->garbled && !o->sent_during;
            o->garbled = o->sent_during = 0;
            recompute_resume(m, o);
            try_arm(m, o, t);
        }
    }
}

static void end_air(struct medium *m, int i, const struct medium_hooks *h) {
    struct station *s = &m->sta[i];
    uint64_t t = s->air.end;
    switch (s->air.kind) {
    case AIR_DATA: end_data(m, i, h); break;
    case AIR_RTS: end_rts(m, i, h); break;
    case AIR_CTS: end_cts(m, i, h); break;
    case AIR_RESPONSE: end_response(m, i); break;
    }
    sensed_end(m, i, t);
    if (s->heard == 0) {
        s->sent_during = s->garbled = 0;
        recompute_resume(m, s);
        try_arm(m, s, t);
    }
}

static void start_pending(struct medium *m, int i) {
    struct station *s = &m->sta[i];
    struct air a = s->next;
    s->pending = 0;
    if (a.kind == AIR_DATA) {
        start_data(m, i, a.start);
        return;
    }
    air_start(m, i, a.kind, a.to, a.start, a.end - a.start, a.nav_until);
}

static void nav_reset(struct medium *m, int j) {
    struct station *o = &m->sta[j];
    uint64_t t = o->nav_reset_at;
    o->nav = o->nav_before;
    o->nav_reset_at = 0;
    if (o->heard == 0 && o->state == IDLE) {
        recompute_resume(m, o);
        try_arm(m, o, t);
    }
}

void medium_run(struct medium *m, uint64_t now, const struct medium_hooks *h) {
    enum { END, PENDING, NAV_RESET, EXPIRY, NONE } what;
    for (;;) {
        // The earliest event; at the same moment PPDU ends go first, then transmissions due to
        // start, NAV resets, and backoffs that run out.
        int who = -1;
        what = NONE;
        uint64_t at = UINT64_MAX;
        for (int i = 0; i < m->n; i++) {
            struct station *s = &m->sta[i];
            if (s->state == TRANSMITTING && (s->air.end < at || (s->air.end == at && what > END)))
                who = i, at = s->air.end, what = END;
            if (s->pending && (s->next.start < at || (s->next.start == at && what > PENDING)))
                who = i, at = s->next.start, what = PENDING;
            if (s->nav_reset_at && (s->nav_reset_at < at || (s->nav_reset_at == at && what > NAV_RESET)))
                who = i, at = s->nav_reset_at, what = NAV_RESET;
            if (s->state == IDLE && s->armed && s->expiry < at) who = i, at = s->expiry, what = EXPIRY;
        }
        if (who < 0 || at > now) break;
        if (at > m->now) m->now = at;
        switch (what) {
        case END: end_air(m, who, h); break;
        case PENDING: start_pending(m, who); break;
        case NAV_RESET: nav_reset(m, who); break;
        case EXPIRY: begin_exchange(m, who, at); break;
        case NONE: break;
        }
    }
    if (now > m->now) m->now = now;
}
