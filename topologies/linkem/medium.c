// The 802.11 shared-medium model (medium.h says what it models and who calls it).
//
// An event model: the only events are a backoff running out (a transmission starts) and a PPDU
// ending (its outcome is decided, the response or the ACK timeout follows). Everything else is
// arithmetic on times each station keeps: when the medium it hears went idle, its NAV, the end of
// its own exchange, and from those the moment its backoff resumes counting (`resume`). A station
// counts whole slots from `resume`; a transmission it hears freezes the count at the last slot
// boundary before it is sensed.
//
// Clause numbers are IEEE 802.11-2016's.
#include "medium.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 32

struct mpdu {
    struct mpdu *next;
    void *frame;
    uint32_t len;      // the Ethernet frame's length
    uint32_t seq;      // per transmitter-receiver pair, from 0
    uint32_t attempts; // transmissions so far
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

struct station {
    char name[NAME_LEN];
    struct link links[MEDIUM_MAX_STATIONS];
    uint8_t hears[MEDIUM_MAX_STATIONS];
    uint32_t queued;
    // channel access (10.3.4.3 backoff procedure; 10.22.2 EDCA)
    uint32_t cw, backoff;
    uint64_t resume;    // backoff counts from here in whole slots (meaningful while heard == 0)
    int heard;          // transmissions on the air that this station hears
    int garbled;        // this busy period had overlapping frames: nothing decoded, EIFS follows
    int sent_during;    // it transmitted in this busy period: what it heard was energy, not frames
    int eifs;           // the last busy period ended undecodable (10.3.2.3.7)
    uint64_t busy_end, nav, own_end;
    int armed;
    uint64_t expiry;    // when armed: the moment its backoff reaches 0 and it transmits
    enum station_state state;
    // the PPDU on the air
    int cur_rx, corrupt;
    struct mpdu *cur[MEDIUM_BA_WINDOW];
    uint32_t n_cur, cur_bytes;
    uint64_t tx_start, tx_end;
    struct medium_station_stats st;
};

struct medium {
    struct medium_params p;
    // scaled durations
    uint64_t slot, sifs, aifs, eifs_extra, ack_timeout, detect, ack, block_ack, max_ppdu;
    struct station sta[MEDIUM_MAX_STATIONS];
    int n;
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

int medium_station(struct medium *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (strncmp(m->sta[i].name, name, NAME_LEN) == 0) return i;
    if (m->n == MEDIUM_MAX_STATIONS || strlen(name) >= NAME_LEN) return -1;
    struct station *s = &m->sta[m->n];
    memset(s, 0, sizeof *s);
    strcpy(s->name, name);
    s->cw = m->p.cw_min;
    s->cur_rx = -1;
    for (int j = 0; j < MEDIUM_MAX_STATIONS; j++) s->hears[j] = 1;
    return m->n++;
}

const char *medium_station_name(const struct medium *m, int i) { return m->sta[i].name; }
int medium_stations(const struct medium *m) { return m->n; }
void medium_set_hears(struct medium *m, int listener, int talker, int hears) {
    m->sta[listener].hears[talker] = (uint8_t)(hears != 0);
}
uint32_t medium_queued(const struct medium *m, int i) { return m->sta[i].queued; }
const struct medium_station_stats *medium_stats(const struct medium *m, int i) { return &m->sta[i].st; }
uint64_t medium_busy_ns(const struct medium *m) { return m->busy_total; }

static int hears(const struct medium *m, int listener, int talker) {
    return listener != talker && m->sta[listener].hears[talker];
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

// The moment a station's backoff may resume: the medium it hears idle (EIFS after a frame it could
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
    if (s->state == TRANSMITTING || s->heard || s->queued == 0) return;
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
    struct link *l = &m->sta[tx].links[rx];
    struct held *slot = &l->ring[q->seq % MEDIUM_BA_WINDOW];
    slot->state = state;
    slot->frame = q->frame;
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
    if (s->queued++ == 0 && s->state == IDLE) {
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
        if (s->state == TRANSMITTING && s->tx_end < next) next = s->tx_end;
        else if (s->state == IDLE && s->armed && s->expiry < next) next = s->expiry;
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

static void start_tx(struct medium *m, int i, uint64_t t) {
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
    s->corrupt = 0;
    s->tx_start = t;
    s->tx_end = t + medium_ppdu_ns(m, s->cur_bytes);
    s->state = TRANSMITTING;
    s->armed = 0;
    if (s->heard) s->sent_during = 1;
    // Collisions: a frame is lost where another one that its receiver hears (or its receiver's
    // own transmission) overlaps it.
    for (int j = 0; j < m->n; j++) {
        struct station *o = &m->sta[j];
        if (j == i || o->state != TRANSMITTING) continue;
        if (o->cur_rx == i || hears(m, o->cur_rx, i)) o->corrupt = 1;
        if (rx == j || hears(m, rx, j)) s->corrupt = 1;
    }
    for (int j = 0; j < m->n; j++) {
        struct station *o = &m->sta[j];
        if (!hears(m, j, i)) continue;
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
    add_busy(m, t, s->tx_end);
    s->st.ppdus++;
    s->st.mpdus_sent += s->n_cur;
    if (s->n_cur > s->st.max_mpdus) s->st.max_mpdus = s->n_cur;
    if (s->n_cur > 1 && s->cur_bytes > s->st.max_ampdu_bytes) s->st.max_ampdu_bytes = s->cur_bytes;
    if (s->tx_end - t > s->st.max_ppdu_ns) s->st.max_ppdu_ns = s->tx_end - t;
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

static void end_tx(struct medium *m, int i, const struct medium_hooks *h) {
    struct station *s = &m->sta[i];
    uint64_t t = s->tx_end;
    int rx = s->cur_rx;
    uint32_t received = 0;
    for (uint32_t k = 0; k < s->n_cur; k++) {
        struct mpdu *q = s->cur[k];
        q->attempts++;
        s->st.retransmissions += q->attempts > 1;
        int ok = !s->corrupt && !(m->p.loss > 0 && uniform01(m) < m->p.loss);
        if (ok) {
            received++;
            q->done = 1;
            rx_mark(m, i, rx, q, RX_HELD, t, h);
        } else if (!s->corrupt) {
            s->st.mpdus_lost++;
        }
    }
    // The response: an ACK for a lone MPDU, one Block Ack for an A-MPDU (10.24.7.5); none when
    // nothing arrived, and the transmitter learns it when the ACK timeout expires (10.3.2.9).
    uint64_t resp = s->n_cur > 1 ? m->block_ack : m->ack;
    int acked = received > 0;
    enum medium_outcome outcome = s->corrupt ? MEDIUM_COLLIDED
                                  : received == s->n_cur ? MEDIUM_OK
                                  : received ? MEDIUM_PARTIAL
                                             : MEDIUM_LOST;
    for (uint32_t k = 0; k < s->n_cur; k++) {
        struct mpdu *q = s->cur[k];
        if (q->done) continue;
        // dot11ShortRetryLimit counts attempts (10.3.4.4): give the MPDU up once it is reached.
        if (q->attempts >= m->p.retry_limit) {
            q->done = 1;
            s->st.retry_drops++;
            if (h && h->drop) h->drop(h->ctx, i, rx, q->frame, q->len, MEDIUM_DROP_RETRY_LIMIT, t);
            q->frame = NULL;
            rx_mark(m, i, rx, q, RX_GONE, t, h);
        }
    }
    uint32_t gone = 0;
    for (uint32_t k = 0; k < s->n_cur; k++) gone += s->cur[k]->done;
    s->queued -= gone;
    unlink_done(&s->links[rx]);
    if (outcome == MEDIUM_COLLIDED) s->st.ppdus_collided++;
    else if (outcome == MEDIUM_LOST) s->st.ppdus_lost++;
    else s->st.ppdus_ok++;
    if (h && h->ppdu) h->ppdu(h->ctx, i, rx, s->n_cur, s->cur_bytes, s->tx_start, t - s->tx_start, outcome, received);
    s->st.airtime_ns += t - s->tx_start;
    if (acked) {
        s->own_end = t + m->sifs + resp;
        s->st.airtime_ns += m->sifs + resp;
        add_busy(m, t + m->sifs, s->own_end);
        s->cw = m->p.cw_min;
    } else {
        s->own_end = t + m->ack_timeout;
        // 10.3.4.3: CW = 2 * (CW + 1) - 1, up to CWmax; back to CWmin once a frame is given up.
        s->cw = s->cw * 2 + 1 > m->p.cw_max ? m->p.cw_max : s->cw * 2 + 1;
        if (gone) s->cw = m->p.cw_min;
    }
    s->state = IDLE;
    s->n_cur = 0;
    // A fresh backoff after every exchange: the next attempt's, or the post-backoff (10.3.4.3).
    s->backoff = draw_backoff(m, s->cw);
    s->eifs = 0;
    uint64_t nav_end = t + m->sifs + resp;  // the Duration field reserves the response
    for (int j = 0; j < m->n; j++) {
        struct station *o = &m->sta[j];
        if (j == i) continue;
        if (hears(m, j, i)) {
            o->heard--;
            o->busy_end = max64(o->busy_end, t);
            if (!o->garbled && !o->sent_during && o->state == IDLE) o->nav = max64(o->nav, nav_end);
            if (o->heard == 0 && o->state == IDLE) {
                o->eifs = o->garbled && !o->sent_during;
                o->garbled = o->sent_during = 0;
                recompute_resume(m, o);
                try_arm(m, o, t);
            }
        } else if (acked && hears(m, j, rx) && o->state == IDLE) {
            // Hears only the receiver: its response is busy air. (Responses are not themselves
            // collided: with every station in range the NAV protects them.)
            settle(m, o, t + m->sifs);
            o->busy_end = max64(o->busy_end, s->own_end);
            if (o->heard == 0) {
                recompute_resume(m, o);
                try_arm(m, o, t);
            }
        }
    }
    if (s->heard == 0) {
        s->sent_during = s->garbled = 0;
        recompute_resume(m, s);
        try_arm(m, s, t);
    }
}

void medium_run(struct medium *m, uint64_t now, const struct medium_hooks *h) {
    for (;;) {
        // The earliest event; PPDU ends before transmissions starting at the same moment.
        int who = -1, is_end = 0;
        uint64_t at = UINT64_MAX;
        for (int i = 0; i < m->n; i++) {
            struct station *s = &m->sta[i];
            if (s->state == TRANSMITTING && (s->tx_end < at || (s->tx_end == at && !is_end))) {
                who = i, at = s->tx_end, is_end = 1;
            } else if (s->state == IDLE && s->armed && s->expiry < at) {
                who = i, at = s->expiry, is_end = 0;
            }
        }
        if (who < 0 || at > now) break;
        if (at > m->now) m->now = at;
        if (is_end) end_tx(m, who, h);
        else start_tx(m, who, at);
    }
    if (now > m->now) m->now = now;
}
