/* Broker liveness, local to this node (DESIGN.md §5): last-seen deadlines per
 * (cluster, addr) in a hash table plus an indexed min-heap on the deadline, so
 * a scan costs O(expired log n); the registering connection of each broker; and
 * the expiry policy (one EXPIRE_BROKERS proposal per scan, expiry on connection
 * close). Never replicated. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/route.h"
#include "server_int.h"

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

int ns_liveness_init(struct ns_liveness *lv)
{
    memset(lv, 0, sizeof *lv);
    lv->buckets = ns_calloc(INITIAL_BUCKETS, sizeof *lv->buckets);
    if (lv->buckets == NULL) {
        return NS_ENOMEM;
    }
    lv->n_buckets = INITIAL_BUCKETS;
    return 0;
}

static void conn_unlink(struct ns_live *e)
{
    if (e->conn == NULL) {
        return;
    }
    if (e->conn_prev != NULL) {
        e->conn_prev->conn_next = e->conn_next;
    } else {
        e->conn->brokers = e->conn_next;
    }
    if (e->conn_next != NULL) {
        e->conn_next->conn_prev = e->conn_prev;
    }
    e->conn = NULL;
    e->conn_prev = e->conn_next = NULL;
}

static void conn_link(struct ns_live *e, struct ns_conn *c)
{
    if (e->conn == c) {
        return;
    }
    conn_unlink(e);
    if (c == NULL || c->closing) {
        return;
    }
    e->conn = c;
    e->conn_next = c->brokers;
    if (e->conn_next != NULL) {
        e->conn_next->conn_prev = e;
    }
    c->brokers = e;
}

static void free_entry(struct ns_live *e)
{
    conn_unlink(e);
    ns_free(e->cluster);
    ns_free(e->addr);
    ns_free(e);
}

void ns_liveness_close(struct ns_liveness *lv)
{
    for (size_t i = 0; i < lv->n_buckets; i++) {
        struct ns_live *e = lv->buckets[i];
        while (e != NULL) {
            struct ns_live *next = e->hnext;
            free_entry(e);
            e = next;
        }
    }
    ns_free(lv->buckets);
    ns_free(lv->heap);
    memset(lv, 0, sizeof *lv);
}

/* --- heap --- */

static void heap_set(struct ns_liveness *lv, size_t i, struct ns_live *e)
{
    lv->heap[i] = e;
    e->heap_idx = i;
}

static void sift_up(struct ns_liveness *lv, size_t i)
{
    struct ns_live *e = lv->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (lv->heap[parent]->deadline <= e->deadline) {
            break;
        }
        heap_set(lv, i, lv->heap[parent]);
        i = parent;
    }
    heap_set(lv, i, e);
}

static void sift_down(struct ns_liveness *lv, size_t i)
{
    struct ns_live *e = lv->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        uint64_t best = e->deadline;
        if (l < lv->n && lv->heap[l]->deadline < best) {
            m = l;
            best = lv->heap[l]->deadline;
        }
        if (l + 1 < lv->n && lv->heap[l + 1]->deadline < best) {
            m = l + 1;
        }
        if (m == i) {
            break;
        }
        heap_set(lv, i, lv->heap[m]);
        i = m;
    }
    heap_set(lv, i, e);
}

static void heap_fix(struct ns_liveness *lv, size_t i)
{
    struct ns_live *e = lv->heap[i];
    sift_up(lv, i);
    sift_down(lv, e->heap_idx);
}

/* --- table --- */

static struct ns_live **find_slot(struct ns_liveness *lv, const char *cluster,
                                  const char *addr)
{
    struct ns_live **pp = &lv->buckets[hash_key(cluster, addr) % lv->n_buckets];
    while (*pp != NULL && (strcmp((*pp)->cluster, cluster) != 0 ||
                           strcmp((*pp)->addr, addr) != 0)) {
        pp = &(*pp)->hnext;
    }
    return pp;
}

static int grow(struct ns_liveness *lv)
{
    if (lv->n + 1 > lv->heap_cap) {
        size_t cap = lv->heap_cap ? lv->heap_cap * 2 : 64;
        struct ns_live **heap = ns_realloc(lv->heap, cap * sizeof *heap);
        if (heap == NULL) {
            return NS_ENOMEM;
        }
        lv->heap = heap;
        lv->heap_cap = cap;
    }
    if (lv->n + 1 > lv->n_buckets) {
        size_t nb = lv->n_buckets * 2;
        struct ns_live **b = ns_calloc(nb, sizeof *b);
        if (b == NULL) {
            return NS_ENOMEM;
        }
        for (size_t i = 0; i < lv->n_buckets; i++) {
            struct ns_live *e = lv->buckets[i];
            while (e != NULL) {
                struct ns_live *next = e->hnext;
                size_t j = hash_key(e->cluster, e->addr) % nb;
                e->hnext = b[j];
                b[j] = e;
                e = next;
            }
        }
        ns_free(lv->buckets);
        lv->buckets = b;
        lv->n_buckets = nb;
    }
    return 0;
}

static struct ns_live *upsert(struct ns_liveness *lv, const char *cluster,
                              const char *addr, uint64_t deadline)
{
    struct ns_live **pp = find_slot(lv, cluster, addr);
    if (*pp != NULL) {
        (*pp)->deadline = deadline;
        heap_fix(lv, (*pp)->heap_idx);
        return *pp;
    }
    if (grow(lv) != 0) {
        return NULL;
    }
    struct ns_live *e = ns_calloc(1, sizeof *e);
    if (e == NULL) {
        return NULL;
    }
    e->cluster = ns_strdup(cluster);
    e->addr = ns_strdup(addr);
    if (e->cluster == NULL || e->addr == NULL) {
        free_entry(e);
        return NULL;
    }
    e->deadline = deadline;
    pp = find_slot(lv, cluster, addr); /* the table may have been resized */
    *pp = e;
    heap_set(lv, lv->n, e);
    lv->n++;
    sift_up(lv, e->heap_idx);
    return e;
}

/* Unlinks e from the table and the heap and frees it. */
static void remove_entry(struct ns_liveness *lv, struct ns_live *e)
{
    struct ns_live **pp = find_slot(lv, e->cluster, e->addr);
    *pp = e->hnext;
    size_t i = e->heap_idx;
    lv->n--;
    if (i != lv->n) {
        heap_set(lv, i, lv->heap[lv->n]);
        heap_fix(lv, i);
    }
    lv->heap[lv->n] = NULL;
    free_entry(e);
}

int ns_liveness_register(struct ns_liveness *lv, const char *cluster,
                         const char *addr, uint64_t now, uint64_t timeout_ms,
                         struct ns_conn *conn)
{
    struct ns_live *e = upsert(lv, cluster, addr, now + timeout_ms);
    if (e == NULL) {
        return NS_ENOMEM;
    }
    e->timeout_ms = timeout_ms;
    conn_link(e, conn);
    return 0;
}

bool ns_liveness_touch(struct ns_liveness *lv, const char *cluster,
                       const char *addr, uint64_t now)
{
    struct ns_live *e = *find_slot(lv, cluster, addr);
    if (e == NULL) {
        return false;
    }
    e->deadline = now + e->timeout_ms;
    heap_fix(lv, e->heap_idx);
    return true;
}

void ns_liveness_remove(struct ns_liveness *lv, const char *cluster,
                        const char *addr)
{
    struct ns_live *e = *find_slot(lv, cluster, addr);
    if (e != NULL) {
        remove_entry(lv, e);
    }
}

void ns_liveness_reset_all(struct ns_liveness *lv, uint64_t now)
{
    for (size_t i = 0; i < lv->n; i++) {
        lv->heap[i]->deadline = now + lv->heap[i]->timeout_ms;
    }
    for (size_t i = lv->n / 2 + 1; i-- > 0;) {
        if (i < lv->n) {
            sift_down(lv, i);
        }
    }
}

struct seed_ctx {
    struct ns_liveness *lv;
    uint64_t now;
    int rv;
};

static void seed_one(void *arg, const char *cluster, const char *addr,
                     int64_t timeout_ms)
{
    struct seed_ctx *ctx = arg;
    if (ctx->rv != 0 || *find_slot(ctx->lv, cluster, addr) != NULL) {
        return;
    }
    uint64_t t =
        timeout_ms > 0 ? (uint64_t)timeout_ms : NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    ctx->rv = ns_liveness_register(ctx->lv, cluster, addr, ctx->now, t, NULL);
}

int ns_liveness_seed(struct ns_liveness *lv, const struct ns_route *route,
                     uint64_t now)
{
    struct seed_ctx ctx = {lv, now, 0};
    ns_route_foreach_broker(route, seed_one, &ctx);
    return ctx.rv;
}

/* --- policy --- */

/* Proposes one EXPIRE_BROKERS with refs[0..n) (taken). */
static void propose_expire(struct ns_server *srv, struct ns_broker_ref *refs,
                           size_t n, const char *why)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_EXPIRE_BROKERS);
    c.leader_time_ms = ns_wall_ms();
    c.u.brokers.refs = refs;
    c.u.brokers.n = n;
    for (size_t i = 0; i < n; i++) {
        NS_LOG(NS_LOG_INFO, "liveness: expiring broker %s (cluster %s): %s",
               refs[i].broker_addr, refs[i].cluster, why);
    }
    int rv = ns_propose_internal(srv, &c);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "liveness: expiry of %zu brokers not proposed: %s",
               n, ns_strerror(rv));
    }
    ns_command_close(&c);
}

static int add_ref(struct ns_broker_ref **refs, size_t *n, size_t *cap,
                   const struct ns_live *e)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct ns_broker_ref *r = ns_realloc(*refs, nc * sizeof *r);
        if (r == NULL) {
            return NS_ENOMEM;
        }
        *refs = r;
        *cap = nc;
    }
    struct ns_broker_ref *r = &(*refs)[*n];
    memset(r, 0, sizeof *r);
    r->cluster = ns_strdup(e->cluster);
    r->broker_addr = ns_strdup(e->addr);
    if (r->cluster == NULL || r->broker_addr == NULL) {
        ns_free(r->cluster);
        ns_free(r->broker_addr);
        return NS_ENOMEM;
    }
    (*n)++;
    return 0;
}

void ns_liveness_scan(struct ns_server *srv)
{
    struct ns_liveness *lv = &srv->live;
    uint64_t now = uv_now(srv->loop);
    struct ns_broker_ref *refs = NULL;
    size_t n = 0, cap = 0;
    if (!ns_node_is_leader(srv->node)) {
        return; /* expiry is leader-driven */
    }
    while (lv->n > 0 && lv->heap[0]->deadline < now) {
        struct ns_live *e = lv->heap[0];
        struct ns_conn *conn = e->conn;
        if (ns_route_broker_timeout(srv->state->route, e->cluster, e->addr) >=
            0) {
            if (add_ref(&refs, &n, &cap, e) != 0) {
                NS_LOG(NS_LOG_ERROR, "liveness: out of memory during the scan");
                break;
            }
        }
        remove_entry(lv, e);
        if (conn != NULL && conn->brokers == NULL) {
            ns_conn_close(conn, "broker heartbeat timed out");
        }
    }
    if (n > 0) {
        propose_expire(srv, refs, n, "no heartbeat within its timeout");
    } else {
        ns_free(refs);
    }
}

void ns_liveness_conn_closed(struct ns_server *srv, struct ns_conn *conn)
{
    struct ns_broker_ref *refs = NULL;
    size_t n = 0, cap = 0;
    while (conn->brokers != NULL) {
        struct ns_live *e = conn->brokers;
        if (!srv->stopping && add_ref(&refs, &n, &cap, e) != 0) {
            NS_LOG(NS_LOG_ERROR, "liveness: out of memory on connection close");
        }
        remove_entry(&srv->live, e);
    }
    if (n > 0) {
        propose_expire(srv, refs, n, "its connection closed");
    } else {
        ns_free(refs);
    }
}
