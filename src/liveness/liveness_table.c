/* The broker liveness table: a hash table on (cluster, addr), an indexed
 * min-heap on the expiry deadline (exact keys, fixed on every change, so a scan
 * only visits what expires), per-connection lists and a list of brokers to
 * report. Pure: time comes in as now_ms; the policy is in
 * src/liveness/liveness.c. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/liveness_table.h"

#define INITIAL_BUCKETS 64

static uint64_t hash_key(const char *cluster, const char *addr)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = cluster; *p; p++) {
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    }
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *p = addr; *p; p++) {
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    }
    return h;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

int ns_liveness_table_init(struct ns_liveness_table *t, uint64_t self_id)
{
    memset(t, 0, sizeof *t);
    t->buckets = ns_calloc(INITIAL_BUCKETS, sizeof *t->buckets);
    if (t->buckets == NULL) {
        return NS_ENOMEM;
    }
    t->n_buckets = INITIAL_BUCKETS;
    t->self_id = self_id;
    return 0;
}

void ns_liveness_table_set_self(struct ns_liveness_table *t, uint64_t self_id)
{
    t->self_id = self_id;
}

static void conn_unlink(struct ns_live *e)
{
    if (e->conn_head == NULL) {
        return;
    }
    if (e->conn_prev != NULL) {
        e->conn_prev->conn_next = e->conn_next;
    } else {
        *e->conn_head = e->conn_next;
    }
    if (e->conn_next != NULL) {
        e->conn_next->conn_prev = e->conn_prev;
    }
    e->conn_head = NULL;
    e->conn = NULL;
    e->conn_prev = e->conn_next = NULL;
}

static void conn_link(struct ns_live *e, struct ns_live **head, void *conn)
{
    if (e->conn_head == head) {
        return;
    }
    conn_unlink(e);
    e->conn_head = head;
    e->conn = conn;
    e->conn_next = *head;
    if (e->conn_next != NULL) {
        e->conn_next->conn_prev = e;
    }
    *head = e;
}

static void dirty_mark(struct ns_liveness_table *t, struct ns_live *e)
{
    if (e->dirty) {
        return;
    }
    e->dirty = true;
    e->dirty_prev = NULL;
    e->dirty_next = t->dirty_head;
    if (t->dirty_head != NULL) {
        t->dirty_head->dirty_prev = e;
    }
    t->dirty_head = e;
    t->n_dirty++;
}

static void dirty_clear(struct ns_liveness_table *t, struct ns_live *e)
{
    if (!e->dirty) {
        return;
    }
    if (e->dirty_prev != NULL) {
        e->dirty_prev->dirty_next = e->dirty_next;
    } else {
        t->dirty_head = e->dirty_next;
    }
    if (e->dirty_next != NULL) {
        e->dirty_next->dirty_prev = e->dirty_prev;
    }
    e->dirty = false;
    e->dirty_prev = e->dirty_next = NULL;
    t->n_dirty--;
}

static void free_entry(struct ns_live *e)
{
    conn_unlink(e);
    ns_free(e->cluster);
    ns_free(e->addr);
    ns_free(e);
}

void ns_liveness_table_close(struct ns_liveness_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free_entry(t->heap[i]);
    }
    ns_free(t->buckets);
    ns_free(t->heap);
    memset(t, 0, sizeof *t);
}

/* --- holders --- */

static bool is_fast(const struct ns_live *e)
{
    return e->had_holder && e->n_holders == 0 && !e->holders_overflow;
}

static bool holder_has(const struct ns_live *e, uint64_t id)
{
    for (uint8_t i = 0; i < e->n_holders; i++) {
        if (e->holders[i] == id) {
            return true;
        }
    }
    return false;
}

/* Returns true when id was not a holder before. */
static bool holder_add(struct ns_live *e, uint64_t id)
{
    if (holder_has(e, id)) {
        return false;
    }
    if (e->n_holders < NS_LIVENESS_TABLE_MAX_HOLDERS) {
        e->holders[e->n_holders++] = id;
    } else {
        e->holders_overflow = true;
    }
    e->had_holder = true;
    return true;
}

/* Returns true when id was a holder. */
static bool holder_del(struct ns_live *e, uint64_t id, uint64_t now_ms)
{
    for (uint8_t i = 0; i < e->n_holders; i++) {
        if (e->holders[i] == id) {
            e->holders[i] = e->holders[--e->n_holders];
            if (e->n_holders == 0) {
                e->fast_at_ms = now_ms;
            }
            return true;
        }
    }
    return false;
}

/* --- heap --- */

static uint64_t compute_deadline(const struct ns_liveness_table *t,
                                 const struct ns_live *e)
{
    if (is_fast(e)) {
        return max_u64(e->fast_at_ms,
                       t->leader_since_ms + NS_LIVENESS_TABLE_FAST_SETTLE_MS);
    }
#ifdef RAFTNS_BREAK_SLOW_EXPIRY
    return max_u64(e->seen_ms, t->leader_since_ms) + 3 * e->timeout_ms;
#endif
    return max_u64(e->seen_ms, t->leader_since_ms) + e->timeout_ms;
}

static void heap_set(struct ns_liveness_table *t, size_t i, struct ns_live *e)
{
    t->heap[i] = e;
    e->heap_idx = i;
}

static void sift_up(struct ns_liveness_table *t, size_t i)
{
    struct ns_live *e = t->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (t->heap[parent]->deadline <= e->deadline) {
            break;
        }
        heap_set(t, i, t->heap[parent]);
        i = parent;
    }
    heap_set(t, i, e);
}

static void sift_down(struct ns_liveness_table *t, size_t i)
{
    struct ns_live *e = t->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        uint64_t best = e->deadline;
        if (l < t->n && t->heap[l]->deadline < best) {
            m = l;
            best = t->heap[l]->deadline;
        }
        if (l + 1 < t->n && t->heap[l + 1]->deadline < best) {
            m = l + 1;
        }
        if (m == i) {
            break;
        }
        heap_set(t, i, t->heap[m]);
        i = m;
    }
    heap_set(t, i, e);
}

/* Recomputes e's deadline and restores the heap order. */
static void update(struct ns_liveness_table *t, struct ns_live *e)
{
    uint64_t d = compute_deadline(t, e);
    if (d == e->deadline) {
        return;
    }
    e->deadline = d;
    sift_up(t, e->heap_idx);
    sift_down(t, e->heap_idx);
}

/* --- table --- */

static struct ns_live **find_slot(const struct ns_liveness_table *t,
                                  const char *cluster, const char *addr)
{
    struct ns_live **pp = &t->buckets[hash_key(cluster, addr) % t->n_buckets];
    while (*pp != NULL && (strcmp((*pp)->cluster, cluster) != 0 ||
                           strcmp((*pp)->addr, addr) != 0)) {
        pp = &(*pp)->hnext;
    }
    return pp;
}

struct ns_live *ns_liveness_table_find(const struct ns_liveness_table *t,
                                       const char *cluster, const char *addr)
{
    return *find_slot(t, cluster, addr);
}

static int grow(struct ns_liveness_table *t)
{
    if (t->n + 1 > t->heap_cap) {
        size_t cap = t->heap_cap ? t->heap_cap * 2 : 64;
        struct ns_live **heap = ns_realloc(t->heap, cap * sizeof *heap);
        if (heap == NULL) {
            return NS_ENOMEM;
        }
        t->heap = heap;
        t->heap_cap = cap;
    }
    if (t->n + 1 > t->n_buckets) {
        size_t nb = t->n_buckets * 2;
        struct ns_live **b = ns_calloc(nb, sizeof *b);
        if (b == NULL) {
            return NS_ENOMEM;
        }
        for (size_t i = 0; i < t->n_buckets; i++) {
            struct ns_live *e = t->buckets[i];
            while (e != NULL) {
                struct ns_live *next = e->hnext;
                size_t j = hash_key(e->cluster, e->addr) % nb;
                e->hnext = b[j];
                b[j] = e;
                e = next;
            }
        }
        ns_free(t->buckets);
        t->buckets = b;
        t->n_buckets = nb;
    }
    return 0;
}

/* Finds or creates (seen_ms = now_ms, timeout) the broker; NULL on NS_ENOMEM.
 */
static struct ns_live *get(struct ns_liveness_table *t, const char *cluster,
                           const char *addr, uint64_t timeout_ms,
                           uint64_t now_ms)
{
    struct ns_live *e = *find_slot(t, cluster, addr);
    if (e != NULL) {
        return e;
    }
    if (grow(t) != 0) {
        return NULL;
    }
    e = ns_calloc(1, sizeof *e);
    if (e == NULL) {
        return NULL;
    }
    e->cluster = ns_strdup(cluster);
    e->addr = ns_strdup(addr);
    if (e->cluster == NULL || e->addr == NULL) {
        free_entry(e);
        return NULL;
    }
    e->timeout_ms = timeout_ms;
    e->seen_ms = now_ms;
    e->deadline = compute_deadline(t, e);
    struct ns_live **pp = find_slot(t, cluster, addr);
    *pp = e;
    heap_set(t, t->n, e);
    t->n++;
    sift_up(t, e->heap_idx);
    return e;
}

/* Unlinks e from the table, the heap and the lists; the caller frees it. */
static void detach(struct ns_liveness_table *t, struct ns_live *e)
{
    struct ns_live **pp = find_slot(t, e->cluster, e->addr);
    *pp = e->hnext;
    size_t i = e->heap_idx;
    t->n--;
    if (i != t->n) {
        struct ns_live *moved = t->heap[t->n];
        heap_set(t, i, moved);
        sift_up(t, i);
        sift_down(t, moved->heap_idx);
    }
    t->heap[t->n] = NULL;
    dirty_clear(t, e);
    conn_unlink(e);
}

int ns_liveness_table_register(struct ns_liveness_table *t, const char *cluster,
                               const char *addr, uint64_t now_ms,
                               uint64_t timeout_ms, struct ns_live **conn_head,
                               void *conn)
{
    struct ns_live *e = get(t, cluster, addr, timeout_ms, now_ms);
    if (e == NULL) {
        return NS_ENOMEM;
    }
    e->timeout_ms = timeout_ms;
    e->local_seen_ms = now_ms;
    e->heard = true;
    e->seen_ms = max_u64(e->seen_ms, now_ms);
    if (conn_head != NULL) {
        conn_link(e, conn_head, conn);
        if (holder_add(e, t->self_id)) {
            t->urgent = true;
        }
    }
    dirty_mark(t, e);
    update(t, e);
    return 0;
}

bool ns_liveness_table_touch(struct ns_liveness_table *t, const char *cluster,
                             const char *addr, uint64_t now_ms)
{
    struct ns_live *e = *find_slot(t, cluster, addr);
    if (e == NULL) {
        return false;
    }
    e->local_seen_ms = now_ms;
    e->heard = true;
    e->seen_ms = max_u64(e->seen_ms, now_ms);
    dirty_mark(t, e);
    update(t, e);
    return true;
}

size_t ns_liveness_table_conn_closed(struct ns_liveness_table *t,
                                     struct ns_live **conn_head,
                                     uint64_t now_ms)
{
    size_t n = 0;
    while (*conn_head != NULL) {
        struct ns_live *e = *conn_head;
        conn_unlink(e);
        holder_del(e, t->self_id, now_ms);
        dirty_mark(t, e);
        update(t, e);
        t->urgent = true;
        n++;
    }
    return n;
}

void ns_liveness_table_remove(struct ns_liveness_table *t, const char *cluster,
                              const char *addr)
{
    struct ns_live *e = *find_slot(t, cluster, addr);
    if (e != NULL) {
        detach(t, e);
        free_entry(e);
    }
}

int ns_liveness_table_seed(struct ns_liveness_table *t, const char *cluster,
                           const char *addr, uint64_t timeout_ms,
                           uint64_t now_ms)
{
    return get(t, cluster, addr, timeout_ms, now_ms) != NULL ? 0 : NS_ENOMEM;
}

int ns_liveness_table_merge(struct ns_liveness_table *t, uint64_t from,
                            const char *cluster, const char *addr,
                            uint32_t ms_since, bool held, uint64_t timeout_ms,
                            uint64_t now_ms)
{
    uint64_t seen = ms_since <= now_ms ? now_ms - ms_since : 0;
    struct ns_live *e = get(t, cluster, addr, timeout_ms, seen);
    if (e == NULL) {
        return NS_ENOMEM;
    }
    if (timeout_ms > 0) {
        e->timeout_ms = timeout_ms;
    }
    e->seen_ms = max_u64(e->seen_ms, seen);
    if (held) {
        holder_add(e, from);
    } else {
        holder_del(e, from, now_ms);
    }
    t->n_merged++;
    update(t, e);
    return 0;
}

void ns_liveness_table_take_leadership(struct ns_liveness_table *t,
                                       uint64_t now_ms)
{
    t->leader_since_ms = now_ms;
    for (size_t i = 0; i < t->n; i++) {
        struct ns_live *e = t->heap[i];
        bool self = e->conn_head != NULL;
        e->n_holders = 0;
        e->holders_overflow = false;
        if (self) {
            e->holders[e->n_holders++] = t->self_id;
        }
        e->had_holder = self;
        e->deadline = compute_deadline(t, e);
    }
    for (size_t i = t->n / 2 + 1; i-- > 0;) {
        if (i < t->n) {
            sift_down(t, i);
        }
    }
}

size_t ns_liveness_table_expire(struct ns_liveness_table *t, uint64_t now_ms,
                                ns_liveness_table_expired_cb cb, void *arg)
{
    size_t n = 0;
    while (t->n > 0) {
        t->n_visits++;
        struct ns_live *e = t->heap[0];
        if (e->deadline > now_ms) {
            break;
        }
        bool fast = is_fast(e);
        void *conn = e->conn;
        detach(t, e);
        e->conn = conn;
        t->n_expired++;
        if (fast) {
            t->n_fast_expired++;
        }
        n++;
        if (cb != NULL) {
            cb(arg, e, fast);
        }
        free_entry(e);
    }
    return n;
}

uint64_t ns_liveness_table_next_deadline(const struct ns_liveness_table *t)
{
    return t->n > 0 ? t->heap[0]->deadline : UINT64_MAX;
}

size_t ns_liveness_table_take_reports(struct ns_liveness_table *t,
                                      uint64_t now_ms, size_t max,
                                      ns_liveness_table_report_cb cb, void *arg)
{
    size_t n = 0;
    while (t->dirty_head != NULL && n < max) {
        struct ns_live *e = t->dirty_head;
        if (!e->heard) {
            dirty_clear(t, e); /* never heard here: nothing to say */
            continue;
        }
        uint64_t since =
            now_ms > e->local_seen_ms ? now_ms - e->local_seen_ms : 0;
        if (since > UINT32_MAX) {
            since = UINT32_MAX;
        }
        if (cb(arg, e->cluster, e->addr, (uint32_t)since,
               e->conn_head != NULL) != 0) {
            break;
        }
        dirty_clear(t, e);
        n++;
    }
    if (t->dirty_head == NULL) {
        t->urgent = false;
    }
    return n;
}

void ns_liveness_table_mark_all_dirty(struct ns_liveness_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->heap[i]->heard) {
            dirty_mark(t, t->heap[i]);
        }
    }
}

void ns_liveness_table_each(const struct ns_liveness_table *t,
                            void (*cb)(void *arg, const struct ns_live *e),
                            void *arg)
{
    for (size_t i = 0; i < t->n_buckets; i++) {
        for (const struct ns_live *e = t->buckets[i]; e != NULL; e = e->hnext) {
            cb(arg, e);
        }
    }
}
