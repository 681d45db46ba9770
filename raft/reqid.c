/* The replicated table of applied request ids (include/raftns/reqid.h). Pure:
 * every node records the same ids in the same order and evicts the same
 * origin, so the table is part of the state and of its digest. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/reqid.h"
#include "raftns/sorted.h"

#define N_WORDS (NS_REQID_WINDOW / 64)

void ns_reqid_table_close(struct ns_reqid_table *t)
{
    ns_free(t->items);
    t->items = NULL;
    t->n = 0;
}

/* Index of origin, or of where it would be inserted (*found false). */
static size_t reqid_find(const struct ns_reqid_table *t, uint64_t origin,
                         bool *found)
{
    return ns_sorted_search_u64(t->items, t->n, sizeof *t->items,
                                offsetof(struct ns_reqid_origin, origin),
                                origin, found);
}

static bool reqid_bit(const struct ns_reqid_origin *o, uint64_t k)
{
    return (o->bits[k / 64] >> (k % 64)) & 1u;
}

static void reqid_set_bit(struct ns_reqid_origin *o, uint64_t k)
{
    o->bits[k / 64] |= (uint64_t)1 << (k % 64);
}

/* Every recorded seq moves s places further from high. */
static void reqid_shift(struct ns_reqid_origin *o, uint64_t s)
{
    if (s >= NS_REQID_WINDOW) {
        memset(o->bits, 0, sizeof o->bits);
        return;
    }
    size_t ws = (size_t)(s / 64);
    unsigned bs = (unsigned)(s % 64);
    for (size_t i = N_WORDS; i-- > 0;) {
        uint64_t v = 0;
        if (i >= ws) {
            v = o->bits[i - ws] << bs;
            if (bs != 0 && i > ws) {
                v |= o->bits[i - ws - 1] >> (64 - bs);
            }
        }
        o->bits[i] = v;
    }
}

const struct ns_reqid_origin *ns_reqid_find(const struct ns_reqid_table *t,
                                            uint64_t origin)
{
    bool found;
    size_t i = reqid_find(t, origin, &found);
    return found ? &t->items[i] : NULL;
}

enum ns_reqid_verdict ns_reqid_check(const struct ns_reqid_table *t,
                                     const struct ns_reqid *id)
{
    if (id->seq == 0) {
        return NS_REQID_STALE; /* no origin sends it */
    }
    bool found;
    size_t i = reqid_find(t, id->origin, &found);
    if (!found) {
        return NS_REQID_NEW;
    }
    const struct ns_reqid_origin *o = &t->items[i];
    if (id->run != o->run) {
        return id->run > o->run ? NS_REQID_NEW : NS_REQID_STALE;
    }
    if (id->seq > o->high) {
        return NS_REQID_NEW;
    }
    uint64_t k = o->high - id->seq;
    if (k >= NS_REQID_WINDOW) {
        return NS_REQID_STALE;
    }
    return reqid_bit(o, k) ? NS_REQID_DUPLICATE : NS_REQID_NEW;
}

/* The origin whose last record is oldest (the smallest id among equals). */
static size_t reqid_least_recent(const struct ns_reqid_table *t)
{
    size_t best = 0;
    for (size_t i = 1; i < t->n; i++) {
        if (t->items[i].last_time_ms < t->items[best].last_time_ms) {
            best = i;
        }
    }
    return best;
}

static int reqid_insert(struct ns_reqid_table *t, uint64_t origin, size_t *at)
{
    if (t->n == NS_REQID_MAX_ORIGINS) {
        size_t gone = reqid_least_recent(t);
        memmove(&t->items[gone], &t->items[gone + 1],
                (t->n - gone - 1) * sizeof *t->items);
        t->n--;
    } else {
        struct ns_reqid_origin *arr =
            ns_realloc(t->items, (t->n + 1) * sizeof *arr);
        if (arr == NULL) {
            return NS_ENOMEM;
        }
        t->items = arr;
    }
    bool found;
    size_t i = reqid_find(t, origin, &found);
    memmove(&t->items[i + 1], &t->items[i], (t->n - i) * sizeof *t->items);
    memset(&t->items[i], 0, sizeof t->items[i]);
    t->items[i].origin = origin;
    t->n++;
    *at = i;
    return 0;
}

int ns_reqid_record(struct ns_reqid_table *t, const struct ns_reqid *id,
                    int64_t leader_time_ms)
{
    bool found;
    size_t i = reqid_find(t, id->origin, &found);
    if (!found) {
        int rv = reqid_insert(t, id->origin, &i);
        if (rv != 0) {
            return rv;
        }
    }
    struct ns_reqid_origin *o = &t->items[i];
    if (found && (id->run < o->run || (id->run == o->run && id->seq < o->high &&
                                       o->high - id->seq >= NS_REQID_WINDOW))) {
        return 0; /* STALE: nothing to record (the caller checked first) */
    }
    if (!found || id->run > o->run) {
        o->run = id->run;
        o->high = id->seq;
        memset(o->bits, 0, sizeof o->bits);
    } else if (id->seq > o->high) {
        reqid_shift(o, id->seq - o->high);
        o->high = id->seq;
    }
    reqid_set_bit(o, o->high - id->seq);
    if (!found || leader_time_ms > o->last_time_ms) {
        o->last_time_ms = leader_time_ms;
    }
    return 0;
}

void ns_reqid_encode_state(const struct ns_reqid_table *t, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct ns_reqid_origin *o = &t->items[i];
        ns_buf_put_u64(out, o->origin);
        ns_buf_put_u64(out, o->run);
        ns_buf_put_u64(out, o->high);
        ns_buf_put_u64(out, (uint64_t)o->last_time_ms);
        for (size_t w = 0; w < N_WORDS; w++) {
            ns_buf_put_u64(out, o->bits[w]);
        }
    }
}

int ns_reqid_decode_state(struct ns_reqid_table *t, struct ns_rd *in)
{
    uint32_t n = ns_rd_u32(in);
    size_t each = 8 * (4 + N_WORDS);
    if (in->err || n > NS_REQID_MAX_ORIGINS || n > ns_rd_left(in) / each) {
        return NS_EPROTO;
    }
    if (n == 0) {
        return 0;
    }
    t->items = ns_calloc(n, sizeof *t->items);
    if (t->items == NULL) {
        return NS_ENOMEM;
    }
    for (; t->n < n; t->n++) {
        struct ns_reqid_origin *o = &t->items[t->n];
        o->origin = ns_rd_u64(in);
        o->run = ns_rd_u64(in);
        o->high = ns_rd_u64(in);
        o->last_time_ms = (int64_t)ns_rd_u64(in);
        for (size_t w = 0; w < N_WORDS; w++) {
            o->bits[w] = ns_rd_u64(in);
        }
        bool sorted = t->n == 0 || t->items[t->n - 1].origin < o->origin;
        if (in->err || o->origin == 0 || o->high == 0 || !sorted) {
            ns_reqid_table_close(t);
            return NS_EPROTO;
        }
    }
    return 0;
}
