/* The cache of encoded TopicRouteData replies: one entry per (topic, shape)
 * in the topic itself, pointing at a body shared by every entry whose reply
 * has the same bytes, the bodies kept in LRU order within a byte budget.
 * Entries are dropped by the elementary edits of route.c (route_touch_*);
 * this file fills, shares, evicts and serves them. Zone-filtered replies are
 * never cached. What it does not do: cache the other reply bodies, or count
 * the connections' references (a body evicted while a connection still
 * writes it lives on in that reference). */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

/* What one blob costs besides its body (the counts are approximate heap use,
 * so that many small bodies cannot exceed the budget unseen). */
#define BLOB_OVERHEAD (sizeof(struct route_blob) + sizeof(struct ns_rcbuf) + 32)

static int shape_of(const struct ns_route_query *q)
{
    return (q->omit_5x ? 2 : 0) + (q->flavour == NS_JSON_STANDARD ? 1 : 0);
}

/* 64-bit words, multiply and rotate: equal bodies collide by design, others
 * rarely (a match is confirmed with memcmp). */
static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    const uint64_t k1 = 0x9e3779b97f4a7c15u, k2 = 0xc2b2ae3d27d4eb4fu;
    uint64_t h = k1 ^ (uint64_t)n;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h ^= w * k2;
        h = ((h << 31) | (h >> 33)) * k1;
    }
    for (; i < n; i++) {
        h = (h ^ p[i]) * k2;
    }
    h ^= h >> 29;
    h *= k1;
    return h ^ (h >> 32);
}

static size_t cost_of(size_t len)
{
    return len + BLOB_OVERHEAD;
}

size_t ns_route_state_bytes(const struct ns_route *r)
{
    /* Per queue data: the struct with its allocator header, its pointer in the
     * topic and in the reverse index; per topic: struct, name, vectors. */
    return r->n_qds * (sizeof(struct ns_queue_data) + 16 + 2 * sizeof(void *)) +
           r->topics.n * (sizeof(struct topic) + 48) + r->groups.n * 512;
}

static size_t budget_of(const struct ns_route *r)
{
    const struct route_cache *c = &r->stats->cache;
    size_t automatic = ns_route_state_bytes(r) / 8;

    if (c->budget != 0) {
        return c->budget;
    }
    return automatic > NS_ROUTE_CACHE_MIN_BYTES ? automatic
                                                : NS_ROUTE_CACHE_MIN_BYTES;
}

void ns_route_set_cache_budget(struct ns_route *r, size_t bytes)
{
    r->stats->cache.budget = bytes;
}

void ns_route_cache_stats(const struct ns_route *r,
                          struct ns_route_cache_stats *out)
{
    const struct route_cache *c = &r->stats->cache;

    out->hits = c->hits;
    out->misses = c->misses;
    out->shared = c->shared;
    out->uncached = c->uncached;
    out->evictions = c->evictions;
    out->bytes = c->bytes;
    out->budget = budget_of(r);
    out->n_bodies = c->n_blobs;
}

/* --- LRU list and hash table --- */

static void lru_unlink(struct route_cache *c, struct route_blob *b)
{
    if (b->newer != NULL) {
        b->newer->older = b->older;
    } else {
        c->newest = b->older;
    }
    if (b->older != NULL) {
        b->older->newer = b->newer;
    } else {
        c->oldest = b->newer;
    }
    b->newer = b->older = NULL;
}

static void lru_push_newest(struct route_cache *c, struct route_blob *b)
{
    b->older = c->newest;
    b->newer = NULL;
    if (c->newest != NULL) {
        c->newest->newer = b;
    } else {
        c->oldest = b;
    }
    c->newest = b;
}

static void lru_touch(struct route_cache *c, struct route_blob *b)
{
    if (c->newest != b) {
        lru_unlink(c, b);
        lru_push_newest(c, b);
    }
}

static struct route_blob **bucket_of(struct route_cache *c, uint64_t hash)
{
    return &c->buckets[hash & (c->n_buckets - 1)];
}

/* Doubles the table when it is as full as it has chains; without memory the
 * chains just grow longer. */
static void maybe_grow(struct route_cache *c)
{
    size_t n = c->n_buckets == 0 ? 64 : c->n_buckets * 2;
    struct route_blob **fresh;

    if (c->n_blobs < c->n_buckets) {
        return;
    }
    fresh = ns_calloc(n, sizeof(*fresh));
    if (fresh == NULL) {
        return;
    }
    for (size_t i = 0; i < c->n_buckets; i++) {
        struct route_blob *b = c->buckets[i];
        while (b != NULL) {
            struct route_blob *next = b->hnext;
            b->hnext = fresh[b->hash & (n - 1)];
            fresh[b->hash & (n - 1)] = b;
            b = next;
        }
    }
    ns_free(c->buckets);
    c->buckets = fresh;
    c->n_buckets = n;
}

static struct route_blob *find_blob(struct route_cache *c, uint64_t hash,
                                    uint64_t gen, const uint8_t *p, size_t n)
{
    if (c->n_buckets == 0) {
        return NULL;
    }
    for (struct route_blob *b = *bucket_of(c, hash); b != NULL; b = b->hnext) {
        if (b->hash == hash && b->gen == gen && b->body->len == n &&
            memcmp(b->body->data, p, n) == 0) {
            return b;
        }
    }
    return NULL;
}

/* Unlinks and frees b; its users must already be detached. */
static void free_blob(struct route_cache *c, struct route_blob *b)
{
    struct route_blob **pp = bucket_of(c, b->hash);

    while (*pp != b) {
        pp = &(*pp)->hnext;
    }
    *pp = b->hnext;
    lru_unlink(c, b);
    c->n_blobs--;
    c->bytes -= cost_of(b->body->len);
    ns_rcbuf_unref(b->body);
    ns_free(b);
}

/* --- entries --- */

static void attach(struct cached_route *e, struct route_blob *b)
{
    e->blob = b;
    e->prev = NULL;
    e->next = b->users;
    if (b->users != NULL) {
        b->users->prev = e;
    }
    b->users = e;
}

static void detach(struct route_cache *c, struct cached_route *e)
{
    struct route_blob *b = e->blob;

    if (b == NULL) {
        return;
    }
    if (e->prev != NULL) {
        e->prev->next = e->next;
    } else {
        b->users = e->next;
    }
    if (e->next != NULL) {
        e->next->prev = e->prev;
    }
    e->blob = NULL;
    e->prev = e->next = NULL;
    if (b->users == NULL) {
        free_blob(c, b);
    }
}

static void evict(struct route_cache *c, struct route_blob *b)
{
    for (struct cached_route *e = b->users; e != NULL;) {
        struct cached_route *next = e->next;
        e->blob = NULL;
        e->prev = e->next = NULL;
        e = next;
    }
    b->users = NULL;
    c->evictions++;
    free_blob(c, b);
}

void route_cache_drop_topic(struct ns_route *r, struct topic *t)
{
    for (int i = 0; t->cache != NULL && i < ROUTE_CACHE_SHAPES; i++) {
        detach(&r->stats->cache, &t->cache[i]);
    }
}

void route_cache_close(struct ns_route *r)
{
    struct route_cache *c = &r->stats->cache;

    while (c->oldest != NULL) {
        evict(c, c->oldest);
    }
    ns_free(c->buckets);
    ns_rcbuf_unref(c->last_uncached);
    memset(c, 0, sizeof(*c));
}

/* Serves buf (taken) for this call only. */
static int serve_uncached(struct route_cache *c, struct ns_buf *buf,
                          struct ns_rcbuf **body)
{
    struct ns_rcbuf *rc = ns_rcbuf_take(buf);

    if (rc == NULL) {
        ns_buf_close(buf);
        return NS_ENOMEM;
    }
    c->uncached++;
    ns_rcbuf_unref(c->last_uncached);
    c->last_uncached = rc;
    *body = rc;
    return 0;
}

/* Stores buf (taken) as a new blob for e, evicting the oldest bodies until it
 * fits; over the budget or without memory it is served uncached. */
static int store(struct ns_route *r, struct cached_route *e, uint64_t hash,
                 uint64_t gen, struct ns_buf *buf, struct ns_rcbuf **body)
{
    struct route_cache *c = &r->stats->cache;
    size_t cost = cost_of(buf->len);
    size_t budget = budget_of(r);
    struct route_blob *b;

    if (cost > budget) {
        return serve_uncached(c, buf, body);
    }
    while (c->oldest != NULL && c->bytes + cost > budget) {
        evict(c, c->oldest);
    }
    maybe_grow(c);
    b = c->n_buckets > 0 ? ns_calloc(1, sizeof(*b)) : NULL;
    if (b == NULL) {
        return serve_uncached(c, buf, body);
    }
    b->body = ns_rcbuf_take(buf);
    if (b->body == NULL) {
        ns_free(b);
        return serve_uncached(c, buf, body);
    }
    b->hash = hash;
    b->gen = gen;
    b->hnext = *bucket_of(c, hash);
    *bucket_of(c, hash) = b;
    lru_push_newest(c, b);
    c->n_blobs++;
    c->bytes += cost;
    attach(e, b);
    *body = b->body;
    return 0;
}

/* q's route encoded now and served outside the cache. */
static int encode_uncached(struct ns_route *r, const struct ns_route_query *q,
                           struct ns_rcbuf **body)
{
    struct ns_buf buf;
    ns_buf_init(&buf);
    int rv = ns_route_encode_topic_route(r, q, &buf);
    if (rv != 0) {
        ns_buf_close(&buf);
        return rv;
    }
    r->stats->cache.misses++;
    return serve_uncached(&r->stats->cache, &buf, body);
}

int ns_route_cached_topic_route(struct ns_route *r,
                                const struct ns_route_query *q,
                                uint64_t context_gen, struct ns_rcbuf **body)
{
    struct route_cache *c = &r->stats->cache;
    struct topic *t;
    struct cached_route *e;
    struct route_blob *b;
    struct ns_buf buf;
    uint64_t hash;
    int rv;

    if (q->zone_name != NULL) {
        return encode_uncached(r, q, body);
    }
    t = q->topic != NULL ? route_find_topic(r, q->topic) : NULL;
    if (t == NULL) {
        return NS_ENOTFOUND;
    }
    if (t->cache == NULL) {
        t->cache = ns_calloc(ROUTE_CACHE_SHAPES, sizeof(*t->cache));
    }
    if (t->cache == NULL) {
        return encode_uncached(r, q, body);
    }
    e = &t->cache[shape_of(q)];
    if (e->blob != NULL && e->blob->gen == context_gen) {
        c->hits++;
        lru_touch(c, e->blob);
        *body = e->blob->body;
        return 0;
    }
    detach(c, e);
    ns_buf_init(&buf);
    rv = ns_route_encode_topic_route(r, q, &buf);
    if (rv != 0) {
        ns_buf_close(&buf);
        return rv;
    }
    c->misses++;
    hash = hash_bytes(buf.data, buf.len);
    b = find_blob(c, hash, context_gen, buf.data, buf.len);
    if (b != NULL) {
        ns_buf_close(&buf);
        c->shared++;
        attach(e, b);
        lru_touch(c, b);
        *body = b->body;
        return 0;
    }
    return store(r, e, hash, context_gen, &buf, body);
}

uint64_t ns_route_n_route_encodes(const struct ns_route *r)
{
    return r->stats->n_encodes;
}
