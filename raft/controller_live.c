/* The controller's heartbeat table (docs/controller.md §6) and the election
 * policy (§5.4). Each node keeps its own table from the 904s it receives;
 * nothing here is replicated, and the table does not know elections (the
 * caller acts on what ns_ctl_live_expire removed). A linear table: groups
 * have a handful of replicas and a node serves few groups. Pure. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/controller.h"
#include "raftns/err.h"

static void beat_close(struct ns_ctl_beat *b)
{
    ns_free(b->cluster);
    ns_free(b->broker_name);
    ns_free(b->addr);
}

void ns_ctl_live_close(struct ns_ctl_live *l)
{
    for (size_t i = 0; i < l->n; i++) {
        beat_close(&l->items[i]);
    }
    ns_free(l->items);
    memset(l, 0, sizeof *l);
}

static bool same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static struct ns_ctl_beat *find(const struct ns_ctl_live *l,
                                const char *cluster, const char *broker_name,
                                int64_t id)
{
    for (size_t i = 0; i < l->n; i++) {
        struct ns_ctl_beat *b = &l->items[i];
        if (b->id == id && same(b->cluster, cluster) &&
            same(b->broker_name, broker_name)) {
            return b;
        }
    }
    return NULL;
}

const struct ns_ctl_beat *ns_ctl_live_find(const struct ns_ctl_live *l,
                                           const char *cluster,
                                           const char *broker_name, int64_t id)
{
    return find(l, cluster, broker_name, id);
}

bool ns_ctl_live_alive(const struct ns_ctl_live *l, const char *cluster,
                       const char *broker_name, int64_t id, int64_t now_ms)
{
    const struct ns_ctl_beat *b = find(l, cluster, broker_name, id);
    return b != NULL && b->last_ms + b->timeout_ms >= now_ms;
}

static int copy_str(char **dst, const char *src)
{
    char *c = ns_strdup(src ? src : "");
    if (c == NULL) {
        return NS_ENOMEM;
    }
    ns_free(*dst);
    *dst = c;
    return 0;
}

int ns_ctl_live_beat(struct ns_ctl_live *l, const struct ns_ctl_beat_in *in,
                     int64_t now_ms)
{
    struct ns_ctl_beat *b = find(l, in->cluster, in->broker_name, in->id);
    if (b == NULL && l->n >= NS_CTL_MAX_BEATS) {
        return NS_ETOOBIG;
    }
    if (b == NULL) {
        struct ns_ctl_beat fresh = {0};
        if (copy_str(&fresh.cluster, in->cluster) != 0 ||
            copy_str(&fresh.broker_name, in->broker_name) != 0 ||
            copy_str(&fresh.addr, in->addr) != 0) {
            beat_close(&fresh);
            return NS_ENOMEM;
        }
        struct ns_ctl_beat *arr =
            ns_realloc(l->items, (l->n + 1) * sizeof *arr);
        if (arr == NULL) {
            beat_close(&fresh);
            return NS_ENOMEM;
        }
        l->items = arr;
        fresh.id = in->id;
        fresh.epoch = in->epoch;
        fresh.max_offset = in->max_offset;
        fresh.confirm_offset = in->confirm_offset;
        arr[l->n] = fresh;
        b = &arr[l->n++];
    } else {
        if (in->addr != NULL && !same(b->addr, in->addr) &&
            copy_str(&b->addr, in->addr) != 0) {
            return NS_ENOMEM;
        }
        if (in->epoch > b->epoch ||
            (in->epoch == b->epoch && in->max_offset > b->max_offset)) {
            b->epoch = in->epoch;
            b->max_offset = in->max_offset;
            b->confirm_offset = in->confirm_offset;
        }
    }
    b->last_ms = now_ms;
#ifdef RAFTNS_BREAK_NO_HEARTBEAT_TIMEOUT
    /* TEST-ONLY MUTANT (JEPSEN.md): the broker's heartbeat timeout is
     * ignored, an entry lives until its connection closes. */
    b->timeout_ms = INT64_C(1) << 40;
#else
    b->timeout_ms = in->timeout_ms;
#endif
    b->priority = in->priority;
    b->conn_id = in->conn_id;
    return 0;
}

int ns_ctl_live_expire(struct ns_ctl_live *l, int64_t now_ms, uint64_t conn_id,
                       struct ns_ctl_live *gone)
{
    memset(gone, 0, sizeof *gone);
    size_t n_gone = 0;
    for (size_t i = 0; i < l->n; i++) {
        const struct ns_ctl_beat *b = &l->items[i];
        n_gone += conn_id != 0 ? b->conn_id == conn_id
                               : now_ms - b->last_ms > b->timeout_ms;
    }
    if (n_gone == 0) {
        return 0;
    }
    gone->items = ns_malloc(n_gone * sizeof *gone->items);
    if (gone->items == NULL) {
        return NS_ENOMEM;
    }
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct ns_ctl_beat *b = &l->items[i];
        bool out = conn_id != 0 ? b->conn_id == conn_id
                                : now_ms - b->last_ms > b->timeout_ms;
        if (out) {
            gone->items[gone->n++] = *b; /* moved: the strings go along */
        } else {
            l->items[kept++] = *b;
        }
    }
    l->n = kept;
    return 0;
}

/* --- election policy --- */

/* a ranks before b: higher epoch, higher maxOffset, lower priority, then the
 * lower id (Java keeps the first of an exact tie in set order;
 * docs/controller.md §9). */
static bool ranks_before(const struct ns_ctl_candidate *a,
                         const struct ns_ctl_candidate *b)
{
    if (a->epoch != b->epoch) {
        return a->epoch > b->epoch;
    }
    if (a->max_offset != b->max_offset) {
        return a->max_offset > b->max_offset;
    }
    if (a->priority != b->priority) {
        return a->priority < b->priority;
    }
    return a->id < b->id;
}

static bool in_ids(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == id) {
            return true;
        }
    }
    return false;
}

/* tryElect over the candidates in ids (or all of them). */
static bool try_elect(const struct ns_ctl_candidate *cands, size_t n, bool all,
                      const int64_t *ids, size_t n_ids, bool has_master,
                      int64_t master, bool has_preferred, int64_t preferred,
                      int64_t *out)
{
    const struct ns_ctl_candidate *best = NULL;
    bool master_alive = false, preferred_alive = false;
    for (size_t i = 0; i < n; i++) {
        const struct ns_ctl_candidate *c = &cands[i];
        if (!c->alive || (!all && !in_ids(ids, n_ids, c->id))) {
            continue;
        }
        master_alive |= has_master && c->id == master;
        preferred_alive |= has_preferred && c->id == preferred;
        if (best == NULL || ranks_before(c, best)) {
            best = c;
        }
    }
    if (best == NULL) {
        return false;
    }
    if (master_alive && (!has_preferred || preferred == master)) {
        *out = master;
        return true;
    }
    if (has_preferred) {
        *out = preferred;
        return preferred_alive;
    }
    *out = best->id;
    return true;
}

bool ns_ctl_policy_elect(const struct ns_ctl_candidate *cands, size_t n,
                         const int64_t *sync, size_t n_sync, bool unclean,
                         bool has_master, int64_t master, bool has_preferred,
                         int64_t preferred, int64_t *out)
{
#ifdef RAFTNS_BREAK_ELECT_NO_SYNC
    /* TEST-ONLY MUTANT (JEPSEN.md): the SyncStateSet is ignored, every alive
     * member is a candidate (as if unclean election were always on). */
    n_sync = 0;
    unclean = true;
#endif
    if (try_elect(cands, n, false, sync, n_sync, has_master, master,
                  has_preferred, preferred, out)) {
        return true;
    }
    return unclean && try_elect(cands, n, true, NULL, 0, has_master, master,
                                has_preferred, preferred, out);
}
