/* Route tables (docs/protocol.md §5.1): creation, lookups and the elementary
 * edits every operation is built from, which keep the broker-name reverse index
 * and the route cache consistent. The §5 operations themselves live in
 * route_register.c, route_unregister.c and route_admin.c; reply bodies in
 * route_encode.c. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/sorted.h"
#include "route_internal.h"

bool route_equal_str(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

int route_cmp_pair(const void *item, const void *key)
{
    const struct pair_key *a = item;
    const struct pair_key *b = key;
    int c = strcmp(a->cluster, b->cluster);

    return c != 0 ? c : strcmp(a->addr, b->addr);
}

int route_cmp_mapping(const void *item, const void *key)
{
    const struct ns_mapping_info *m = item;

    return strcmp(m->bname, key);
}

void route_bump_epoch(struct ns_route *r)
{
    r->epoch++;
}

uint64_t ns_route_epoch(const struct ns_route *r)
{
    return r->epoch;
}

void ns_route_continue_epoch(struct ns_route *r, const struct ns_route *before)
{
    const struct route_cache *old = &before->stats->cache;
    struct route_cache *c = &r->stats->cache;

    if (before->epoch >= r->epoch) {
        r->epoch = before->epoch;
    }
    route_bump_epoch(r);
    /* The cache's settings and counters are this node's, not the state's. */
    c->budget = old->budget;
    c->hits += old->hits;
    c->misses += old->misses;
    c->shared += old->shared;
    c->uncached += old->uncached;
    c->evictions += old->evictions;
    r->stats->n_encodes += before->stats->n_encodes;
}

struct ns_route *ns_route_create(void)
{
    struct ns_route *r = ns_calloc(1, sizeof(*r));

    if (r == NULL) {
        goto err;
    }
    r->epoch = 1;
    r->stats = ns_calloc(1, sizeof(*r->stats));
    if (r->stats == NULL) {
        goto err_after_route;
    }
    return r;

err_after_route:
    ns_free(r);
err:
    return NULL;
}

static void free_group(struct ns_route *r, struct group *g)
{
    route_memo_free(r, g->memo);
    for (size_t i = 0; i < g->n_addrs; i++) {
        ns_free(g->addrs[i].addr);
    }
    ns_free(g->addrs);
    ns_free(g->name);
    ns_free(g->cluster);
    ns_free(g->zone);
    ns_free(g);
}

static void free_live(struct live *l)
{
    ns_free(l->key.cluster);
    ns_free(l->key.addr);
    ns_free(l->ha_addr);
    ns_free(l);
}

static void free_filter(struct filter *f)
{
    for (size_t i = 0; i < f->n; i++) {
        ns_free(f->servers[i]);
    }
    ns_free(f->servers);
    ns_free(f->key.cluster);
    ns_free(f->key.addr);
    ns_free(f);
}

void route_free_mapping(struct ns_mapping_info *m)
{
    ns_free(m->topic);
    ns_free(m->bname);
    ns_free(m->scope);
    ns_free(m->curr_ids);
    ns_free(m);
}

static void free_tmap(struct tmap *tm)
{
    for (size_t i = 0; i < tm->infos.n; i++) {
        route_free_mapping(tm->infos.items[i]);
    }
    svec_close(&tm->infos);
    ns_free(tm->name);
    ns_free(tm);
}

static void free_named_set(struct named_set *b)
{
    svec_close_strs(&b->items);
    ns_free(b->name);
    ns_free(b);
}

/* A reverse-index entry: its items are borrowed topic names. */
static void free_index_set(struct named_set *b)
{
    svec_close(&b->items);
    ns_free(b->name);
    ns_free(b);
}

void ns_route_destroy(struct ns_route *r)
{
    if (r == NULL) {
        return;
    }
    for (unsigned i = 0; i < ROUTE_CAPTURES; i++) {
        ns_route_capture_end(r, r->captures[i]);
    }
    for (size_t i = 0; i < r->topics.n; i++) {
        route_free_topic(r, r->topics.items[i]);
    }
    route_cache_close(r);
    for (size_t i = 0; i < r->groups.n; i++) {
        free_group(r, r->groups.items[i]);
    }
    for (size_t i = 0; i < r->clusters.n; i++) {
        free_named_set(r->clusters.items[i]);
    }
    for (size_t i = 0; i < r->lives.n; i++) {
        free_live(r->lives.items[i]);
    }
    for (size_t i = 0; i < r->filters.n; i++) {
        free_filter(r->filters.items[i]);
    }
    for (size_t i = 0; i < r->tmaps.n; i++) {
        free_tmap(r->tmaps.items[i]);
    }
    for (size_t i = 0; i < r->bidx.n; i++) {
        free_index_set(r->bidx.items[i]);
    }
    svec_close(&r->topics);
    svec_close(&r->groups);
    svec_close(&r->clusters);
    svec_close(&r->lives);
    svec_close(&r->filters);
    svec_close(&r->tmaps);
    svec_close(&r->bidx);
    ns_free(r->stats);
    ns_free(r);
}

struct group *route_find_group(const struct ns_route *r, const char *name)
{
    return svec_find(&r->groups, name, svec_cmp_named);
}

struct topic *route_find_topic(const struct ns_route *r, const char *name)
{
    return svec_find(&r->topics, name, svec_cmp_named);
}

struct live *route_find_live(const struct ns_route *r, const char *cluster,
                             const char *addr)
{
    struct pair_key k = {(char *)cluster, (char *)addr};

    return svec_find(&r->lives, &k, route_cmp_pair);
}

struct filter *route_find_filter(const struct ns_route *r, const char *cluster,
                                 const char *addr)
{
    struct pair_key k = {(char *)cluster, (char *)addr};

    return svec_find(&r->filters, &k, route_cmp_pair);
}

struct named_set *route_find_bidx(const struct ns_route *r, const char *bname)
{
    return svec_find(&r->bidx, bname, svec_cmp_named);
}

struct tmap *route_find_tmap(const struct ns_route *r, const char *topic)
{
    return svec_find(&r->tmaps, topic, svec_cmp_named);
}

/* --- groups and clusters --- */

static size_t find_addr_pos(const struct group *g, int64_t id, bool *found)
{
    return ns_sorted_search_i64(g->addrs, g->n_addrs, sizeof *g->addrs,
                                offsetof(struct addr_entry, id), id, found);
}

const char *group_find_addr(const struct group *g, int64_t id)
{
    bool found;
    size_t pos = find_addr_pos(g, id, &found);

    return found ? g->addrs[pos].addr : NULL;
}

int group_put_addr(struct group *g, int64_t id, const char *addr, bool *changed)
{
    bool found;
    size_t pos = find_addr_pos(g, id, &found);
    char *copy;
    struct addr_entry *addrs;

    if (changed != NULL) {
        *changed = false;
    }
    if (found && strcmp(g->addrs[pos].addr, addr) == 0) {
        return 0;
    }
    copy = ns_strdup(addr);
    if (copy == NULL) {
        return NS_ENOMEM;
    }
    if (found) {
        ns_free(g->addrs[pos].addr);
        g->addrs[pos].addr = copy;
    } else {
        addrs = ns_realloc(g->addrs, (g->n_addrs + 1) * sizeof(*addrs));
        if (addrs == NULL) {
            ns_free(copy);
            return NS_ENOMEM;
        }
        g->addrs = addrs;
        memmove(&addrs[pos + 1], &addrs[pos],
                (g->n_addrs - pos) * sizeof(*addrs));
        addrs[pos].id = id;
        addrs[pos].addr = copy;
        g->n_addrs++;
    }
    if (changed != NULL) {
        *changed = true;
    }
    return 0;
}

void group_remove_addr_at(struct group *g, size_t i)
{
    ns_free(g->addrs[i].addr);
    memmove(&g->addrs[i], &g->addrs[i + 1],
            (g->n_addrs - i - 1) * sizeof(*g->addrs));
    g->n_addrs--;
}

struct group *route_create_group(struct ns_route *r, const char *name,
                                 const char *cluster)
{
    bool found;
    size_t pos = svec_search(&r->groups, name, svec_cmp_named, &found);
    struct group *g;

    if (found) {
        return r->groups.items[pos];
    }
    g = ns_calloc(1, sizeof(*g));
    if (g == NULL) {
        goto err;
    }
    g->name = ns_strdup(name);
    g->cluster = ns_strdup(cluster);
    if (g->name == NULL || g->cluster == NULL) {
        goto err_after_group;
    }
    if (svec_insert(&r->groups, pos, g) != 0) {
        goto err_after_group;
    }
    route_touch_group(r, name);
    return g;

err_after_group:
    free_group(r, g);
err:
    return NULL;
}

void route_remove_group(struct ns_route *r, const char *name)
{
    bool found;
    size_t pos = svec_search(&r->groups, name, svec_cmp_named, &found);

    if (!found) {
        return;
    }
    free_group(r, svec_remove_at(&r->groups, pos));
    route_touch_group(r, name);
}

int route_add_cluster_name(struct ns_route *r, const char *cluster,
                           const char *bname)
{
    bool found;
    size_t pos = svec_search(&r->clusters, cluster, svec_cmp_named, &found);
    struct named_set *c;

    if (!found) {
        c = ns_calloc(1, sizeof(*c));
        if (c == NULL) {
            return NS_ENOMEM;
        }
        c->name = ns_strdup(cluster);
        if (c->name == NULL || svec_insert(&r->clusters, pos, c) != 0) {
            ns_free(c->name);
            ns_free(c);
            return NS_ENOMEM;
        }
    }
    c = r->clusters.items[pos];
    if (svec_add_str(&c->items, bname, NULL) != 0) {
        if (c->items.n == 0) {
            free_named_set(svec_remove_at(&r->clusters, pos));
        }
        return NS_ENOMEM;
    }
    return 0;
}

void route_remove_cluster_name(struct ns_route *r, const char *cluster,
                               const char *bname)
{
    bool found;
    size_t pos = svec_search(&r->clusters, cluster, svec_cmp_named, &found);
    struct named_set *c;

    if (!found) {
        return;
    }
    c = r->clusters.items[pos];
    svec_remove_str(&c->items, bname);
    if (c->items.n == 0) {
        free_named_set(svec_remove_at(&r->clusters, pos));
    }
}

/* --- queue data and the reverse index --- */

/* Records that topic (t->name, borrowed: it outlives the entry) has queue
 * data of bname. *name gets the index's copy of bname, which the queue data
 * borrows. 0 or NS_ENOMEM. */
static int index_add(struct ns_route *r, const char *bname, char *topic,
                     const char **name)
{
    bool found;
    size_t pos = svec_search(&r->bidx, bname, svec_cmp_named, &found);
    struct named_set *b;
    size_t tpos;

    if (!found) {
        b = ns_calloc(1, sizeof(*b));
        if (b == NULL) {
            return NS_ENOMEM;
        }
        b->name = ns_strdup(bname);
        if (b->name == NULL || svec_insert(&r->bidx, pos, b) != 0) {
            ns_free(b->name);
            ns_free(b);
            return NS_ENOMEM;
        }
    }
    b = r->bidx.items[pos];
    tpos = svec_search(&b->items, topic, svec_cmp_str, &found);
    if (!found && svec_insert(&b->items, tpos, topic) != 0) {
        if (b->items.n == 0) {
            free_index_set(svec_remove_at(&r->bidx, pos));
        }
        return NS_ENOMEM;
    }
    *name = b->name;
    return 0;
}

/* Forgets topic under bname; frees the entry (and with it the name the queue
 * data borrowed) when it empties, so bname must not be used afterwards if it
 * is a queue data's broker_name. */
static void index_remove(struct ns_route *r, const char *bname,
                         const char *topic)
{
    bool found;
    size_t pos = svec_search(&r->bidx, bname, svec_cmp_named, &found);
    struct named_set *b;
    size_t tpos;

    if (!found) {
        return;
    }
    b = r->bidx.items[pos];
    tpos = svec_search(&b->items, topic, svec_cmp_str, &found);
    if (found) {
        svec_remove_at(&b->items, tpos);
    }
    if (b->items.n == 0) {
        free_index_set(svec_remove_at(&r->bidx, pos));
    }
}

static bool equal_qd(const struct ns_queue_data *a,
                     const struct ns_queue_data *b)
{
    return a->read_queues == b->read_queues &&
           a->write_queues == b->write_queues && a->perm == b->perm &&
           a->sys_flag == b->sys_flag &&
           strcmp(a->broker_name, b->broker_name) == 0;
}

static struct topic *create_topic(struct ns_route *r, size_t pos,
                                  const char *name)
{
    struct topic *t = route_topic_new(r, name);

    if (t == NULL || svec_insert(&r->topics, pos, t) != 0) {
        ns_free(t);
        return NULL;
    }
    return t;
}

void route_drop_topic_if_empty(struct ns_route *r, struct topic *t)
{
    bool found;
    size_t pos;

    if (t->qds.n != 0) {
        return;
    }
    pos = svec_search(&r->topics, t->name, svec_cmp_named, &found);
    if (found) {
        svec_remove_at(&r->topics, pos);
    }
    route_free_topic(r, t);
}

int route_put_qd_in(struct ns_route *r, struct topic *t,
                    const struct ns_queue_data *qd, bool *changed)
{
    struct ns_queue_data *cur;
    struct ns_queue_data *copy = NULL;
    int rv = NS_ENOMEM;
    bool found;

    if (changed != NULL) {
        *changed = false;
    }
    size_t pos = svec_search(&t->qds, qd->broker_name, svec_cmp_named, &found);
    if (found) {
        cur = t->qds.items[pos];
        if (!equal_qd(cur, qd)) {
            route_capture_save(r, t);
            route_memo_forget(r, qd->broker_name);
            cur->read_queues = qd->read_queues;
            cur->write_queues = qd->write_queues;
            cur->perm = qd->perm;
            cur->sys_flag = qd->sys_flag;
            route_touch_topic(r, t);
            if (changed != NULL) {
                *changed = true;
            }
        }
        return 0;
    }
    copy = route_topic_qd_new(t);
    if (copy == NULL) {
        goto err_after_topic;
    }
    *copy = *qd;
    if (index_add(r, qd->broker_name, t->name,
                  (const char **)&copy->broker_name) != 0) {
        goto err_after_copy;
    }
    route_capture_save(r, t);
    if (route_topic_qds_insert(t, pos, copy) != 0) {
        index_remove(r, qd->broker_name, t->name);
        goto err_after_copy;
    }
    r->n_qds++;
    route_memo_forget(r, qd->broker_name);
    route_touch_topic(r, t);
    if (changed != NULL) {
        *changed = true;
    }
    return 0;

err_after_copy:
    route_topic_qd_free(t, copy);
err_after_topic:
    route_drop_topic_if_empty(r, t);
    return rv;
}

/* route_put_qd with the topic's slot in the topic table already searched. */
static int put_qd_at(struct ns_route *r, size_t pos, bool found,
                     const char *topic, const struct ns_queue_data *qd,
                     bool *changed)
{
    struct topic *t =
        found ? r->topics.items[pos] : create_topic(r, pos, topic);
    if (t == NULL) {
        if (changed != NULL) {
            *changed = false;
        }
        return NS_ENOMEM;
    }
    return route_put_qd_in(r, t, qd, changed);
}

int route_put_qd(struct ns_route *r, const char *topic,
                 const struct ns_queue_data *qd, bool *changed)
{
    bool found;
    size_t pos = svec_search(&r->topics, topic, svec_cmp_named, &found);
    return put_qd_at(r, pos, found, topic, qd, changed);
}

static void remove_qd(struct ns_route *r, struct topic *t, const char *bname)
{
    bool found;
    size_t pos = svec_search(&t->qds, bname, svec_cmp_named, &found);
    struct ns_queue_data *qd;

    if (found) {
        route_capture_save(r, t);
        route_memo_forget(r, bname);
        qd = svec_remove_at(&t->qds, pos);
        r->n_qds--;
        route_topic_qd_free(t, qd);
        route_touch_topic(r, t);
        /* Last: bname may be the name the index frees here. */
        index_remove(r, bname, t->name);
    }
}

void route_remove_qd(struct ns_route *r, struct topic *t, const char *bname)
{
    remove_qd(r, t, bname);
    route_drop_topic_if_empty(r, t);
}

void route_remove_qd_later(struct ns_route *r, struct topic *t,
                           const char *bname, struct svec *emptied)
{
    remove_qd(r, t, bname);
    if (t->qds.n == 0 && svec_insert(emptied, emptied->n, t) != 0) {
        route_drop_topic_if_empty(r, t); /* out of memory: the slow way */
    }
}

void route_set_perm(struct ns_route *r, struct topic *t,
                    struct ns_queue_data *qd, int32_t perm)
{
    if (qd->perm != perm) {
        route_capture_save(r, t);
#ifndef RAFTNS_BREAK_MEMO_STALE
        route_memo_forget(r, qd->broker_name);
#endif /* else TEST-ONLY MUTANT: a wiped perm leaves the memo in place */
        qd->perm = perm;
        route_touch_topic(r, t);
    }
}

/* --- live and filter-server tables --- */

int route_put_live(struct ns_route *r, const char *cluster, const char *addr,
                   const struct ns_data_version *dv, const char *ha_addr,
                   int64_t timeout)
{
    struct pair_key k = {(char *)cluster, (char *)addr};
    bool found;
    size_t pos = svec_search(&r->lives, &k, route_cmp_pair, &found);
    struct live *l;
    char *ha = NULL;

    if (ha_addr != NULL) {
        ha = ns_strdup(ha_addr);
        if (ha == NULL) {
            return NS_ENOMEM;
        }
    }
    if (found) {
        l = r->lives.items[pos];
        l->regs++;
    } else {
        l = ns_calloc(1, sizeof(*l));
        if (l == NULL) {
            goto err_after_ha;
        }
        l->key.cluster = ns_strdup(cluster);
        l->key.addr = ns_strdup(addr);
        if (l->key.cluster == NULL || l->key.addr == NULL ||
            svec_insert(&r->lives, pos, l) != 0) {
            free_live(l);
            goto err_after_ha;
        }
    }
    ns_free(l->ha_addr);
    l->ha_addr = ha;
    l->dv = *dv;
    l->timeout_ms = timeout;
    return 0;

err_after_ha:
    ns_free(ha);
    return NS_ENOMEM;
}

void route_remove_live(struct ns_route *r, const char *cluster,
                       const char *addr)
{
    struct pair_key k = {(char *)cluster, (char *)addr};
    bool found;
    size_t pos = svec_search(&r->lives, &k, route_cmp_pair, &found);

    if (found) {
        free_live(svec_remove_at(&r->lives, pos));
    }
}

int route_put_filter(struct ns_route *r, const char *cluster, const char *addr,
                     char *const *servers, size_t n)
{
    struct pair_key k = {(char *)cluster, (char *)addr};
    bool found;
    size_t pos = svec_search(&r->filters, &k, route_cmp_pair, &found);
    struct filter *f = ns_calloc(1, sizeof(*f));

    if (f == NULL) {
        return NS_ENOMEM;
    }
    f->key.cluster = ns_strdup(cluster);
    f->key.addr = ns_strdup(addr);
    f->servers = ns_calloc(n, sizeof(*f->servers));
    if (f->key.cluster == NULL || f->key.addr == NULL || f->servers == NULL) {
        goto err_after_filter;
    }
    for (; f->n < n; f->n++) {
        f->servers[f->n] = ns_strdup(servers[f->n]);
        if (f->servers[f->n] == NULL) {
            goto err_after_filter;
        }
    }
    if (found) {
        free_filter(r->filters.items[pos]);
        r->filters.items[pos] = f;
    } else if (svec_insert(&r->filters, pos, f) != 0) {
        goto err_after_filter;
    }
    route_touch_all(r);
    return 0;

err_after_filter:
    free_filter(f);
    return NS_ENOMEM;
}

void route_remove_filter(struct ns_route *r, const char *cluster,
                         const char *addr)
{
    struct pair_key k = {(char *)cluster, (char *)addr};
    bool found;
    size_t pos = svec_search(&r->filters, &k, route_cmp_pair, &found);

    if (found) {
        free_filter(svec_remove_at(&r->filters, pos));
        route_touch_all(r);
    }
}

/* --- static-topic mappings --- */

int route_copy_mapping(const struct ns_mapping_info *src,
                       struct ns_mapping_info **out)
{
    struct ns_mapping_info *m = ns_calloc(1, sizeof(*m));

    if (m == NULL) {
        return NS_ENOMEM;
    }
    *m = *src;
    m->topic = ns_strdup(src->topic);
    m->bname = ns_strdup(src->bname);
    m->scope = src->scope != NULL ? ns_strdup(src->scope) : NULL;
    m->curr_ids = NULL;
    if (src->n_curr_ids > 0) {
        m->curr_ids = ns_malloc(src->n_curr_ids * sizeof(*m->curr_ids));
        if (m->curr_ids != NULL) {
            memcpy(m->curr_ids, src->curr_ids,
                   src->n_curr_ids * sizeof(*m->curr_ids));
        }
    }
    if (m->topic == NULL || m->bname == NULL ||
        (src->scope != NULL && m->scope == NULL) ||
        (src->n_curr_ids > 0 && m->curr_ids == NULL)) {
        route_free_mapping(m);
        return NS_ENOMEM;
    }
    *out = m;
    return 0;
}

int route_merge_mapping(struct ns_route *r, const struct ns_mapping_info *info)
{
    bool found;
    size_t pos = svec_search(&r->tmaps, info->topic, svec_cmp_named, &found);
    struct tmap *tm;
    struct ns_mapping_info *copy;
    struct topic *t;

    if (!found) {
        tm = ns_calloc(1, sizeof(*tm));
        if (tm == NULL) {
            return NS_ENOMEM;
        }
        tm->name = ns_strdup(info->topic);
        if (tm->name == NULL || svec_insert(&r->tmaps, pos, tm) != 0) {
            ns_free(tm->name);
            ns_free(tm);
            return NS_ENOMEM;
        }
    }
    tm = r->tmaps.items[pos];
    if (route_copy_mapping(info, &copy) != 0) {
        goto err_after_tmap;
    }
    pos = svec_search(&tm->infos, info->bname, route_cmp_mapping, &found);
    if (found) {
        route_free_mapping(tm->infos.items[pos]);
        tm->infos.items[pos] = copy;
    } else if (svec_insert(&tm->infos, pos, copy) != 0) {
        route_free_mapping(copy);
        goto err_after_tmap;
    }
    t = route_find_topic(r, info->topic);
    if (t != NULL) {
        route_touch_topic(r, t);
    }
    return 0;

err_after_tmap:
    if (tm->infos.n == 0) {
        bool f2;
        size_t p2 = svec_search(&r->tmaps, info->topic, svec_cmp_named, &f2);
        free_tmap(svec_remove_at(&r->tmaps, p2));
    }
    return NS_ENOMEM;
}

/* --- cache invalidation --- */

void route_touch_topic(struct ns_route *r, struct topic *t)
{
    route_cache_drop_topic(r, t);
}

void route_touch_group(struct ns_route *r, const char *bname)
{
    struct named_set *b = route_find_bidx(r, bname);

    if (b == NULL) {
        return;
    }
    for (size_t i = 0; i < b->items.n; i++) {
        struct topic *t = route_find_topic(r, b->items.items[i]);
        if (t != NULL) {
            route_touch_topic(r, t);
        }
    }
}

void route_touch_all(struct ns_route *r)
{
    for (size_t i = 0; i < r->topics.n; i++) {
        route_touch_topic(r, r->topics.items[i]);
    }
}

/* --- small reads --- */

const struct ns_data_version *
ns_route_find_data_version(const struct ns_route *r, const char *cluster,
                           const char *addr)
{
    const struct live *l = route_find_live(r, cluster, addr);

    return l != NULL ? &l->dv : NULL;
}

int64_t ns_route_broker_timeout(const struct ns_route *r, const char *cluster,
                                const char *addr)
{
    const struct live *l = route_find_live(r, cluster, addr);

    return l != NULL ? l->timeout_ms : -1;
}

bool ns_route_broker_regs(const struct ns_route *r, const char *cluster,
                          const char *addr, uint64_t *regs)
{
    const struct live *l = route_find_live(r, cluster, addr);

    if (l != NULL) {
        *regs = l->regs;
    }
    return l != NULL;
}

void ns_route_foreach_broker(const struct ns_route *r, ns_route_broker_cb cb,
                             void *arg)
{
    for (size_t i = 0; i < r->lives.n; i++) {
        const struct live *l = r->lives.items[i];
        cb(arg, l->key.cluster, l->key.addr, l->timeout_ms);
    }
}

size_t ns_route_n_brokers(const struct ns_route *r)
{
    return r->lives.n;
}

size_t ns_route_n_topics(const struct ns_route *r)
{
    return r->topics.n;
}
