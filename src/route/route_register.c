/* REGISTER_BROKER's table update (docs/protocol.md §5.2, 5.x behaviour with
 * the 4.9.x compatibility points of route.h) and the exact "would change
 * nothing" test behind the heartbeat short-cut. Request decoding and replies
 * are not here. */
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/sorted.h"
#include "route_internal.h"

static bool is_old_broker(const struct ns_register *req)
{
    return req->acting_master == -1;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted array of the request's topic names (borrowed strings), for membership
 * tests. */
static const char **sorted_topic_names(const struct ns_register *req)
{
    const char **names = ns_malloc((req->n_topics + 1) * sizeof(*names));

    if (names == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < req->n_topics; i++) {
        names[i] = req->topics[i].name;
    }
    qsort(names, req->n_topics, sizeof(*names), cmp_strp);
    return names;
}

static bool has_name(const char **names, size_t n, const char *name)
{
    bool found;
    ns_sorted_search(names, n, sizeof(*names), 0, name, &found);
    return found;
}

/* 10a: deleteTopicWithBrokerRegistration. */
static int delete_missing(struct ns_route *r, const struct ns_register *req)
{
    const char **names = sorted_topic_names(req);
    struct named_set *b;

    if (names == NULL) {
        return NS_ENOMEM;
    }
    b = route_find_bidx(r, req->broker_name);
    struct svec emptied = {0};
    /* Backwards, because removing a name only shifts the entries after it. The
     * set may be freed when it empties, so it is looked up again on every turn.
     */
    for (size_t i = b != NULL ? b->items.n : 0; i > 0; i--) {
        const char *topic;
        b = route_find_bidx(r, req->broker_name);
        if (b == NULL || i > b->items.n) {
            break;
        }
        topic = b->items.items[i - 1];
        struct topic *t = route_find_topic(r, topic);
        if (t != NULL && !has_name(names, req->n_topics, topic)) {
            route_remove_qd_later(r, t, req->broker_name, &emptied);
        }
    }
    route_drop_topics(r, &emptied);
    ns_free(names);
    return 0;
}

static bool topic_changed(const struct ns_route *r, bool dv_changed,
                          const char *topic, const char *bname, size_t *hint)
{
    if (dv_changed) {
        return true;
    }
    bool found;
    size_t pos =
        svec_search_near(&r->topics, topic, svec_cmp_named, hint, &found);
    const struct topic *t = found ? r->topics.items[pos] : NULL;
    return t == NULL || svec_find(&t->qds, bname, svec_cmp_named) == NULL;
}

/* The topics of a registration not yet in the table, with their queue data:
 * created together after the pass (route_put_qds_new). */
struct new_topics {
    struct route_new_topic *items;
    size_t n, cap;
    struct route_new_topic first[4]; /* most registrations bring a few */
};

static int defer_new_topic(struct new_topics *nt, const char *name,
                           const struct ns_queue_data *qd)
{
    if (nt->items == NULL) {
        nt->items = nt->first;
        nt->cap = sizeof nt->first / sizeof nt->first[0];
    }
    if (nt->n == nt->cap) {
        struct route_new_topic *more =
            ns_malloc(2 * nt->cap * sizeof(*nt->items));
        if (more == NULL) {
            return NS_ENOMEM;
        }
        memcpy(more, nt->items, nt->n * sizeof(*nt->items));
        if (nt->items != nt->first) {
            ns_free(nt->items);
        }
        nt->items = more;
        nt->cap *= 2;
    }
    nt->items[nt->n] = (struct route_new_topic){name, *qd, nt->n};
    nt->n++;
    return 0;
}

static int cmp_new_topic(const void *a, const void *b)
{
    const struct route_new_topic *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sorted by name, each name once with its last queue data (as putting them
 * one after the other would leave it). Decoded requests come sorted and
 * distinct; built ones need not. */
static void new_topics_settle(struct new_topics *nt)
{
    bool sorted = true;
    for (size_t i = 1; i < nt->n && sorted; i++) {
        sorted = strcmp(nt->items[i - 1].name, nt->items[i].name) < 0;
    }
    if (sorted) {
        return;
    }
    qsort(nt->items, nt->n, sizeof(*nt->items), cmp_new_topic);
    size_t w = 0;
    for (size_t i = 0; i < nt->n; i++) {
        if (i + 1 < nt->n &&
            strcmp(nt->items[i].name, nt->items[i + 1].name) == 0) {
            continue;
        }
        nt->items[w++] = nt->items[i];
    }
    nt->n = w;
}

/* Steps 10b and 10c. A full pass (changed DataVersion or a first
 * registration) writes every topic, except those g's memo shows unchanged
 * (route_memo.c), and leaves a memo of what it wrote; any other pass writes
 * only topics without queue data for this broker, which no memo names. */
static int update_routes(struct ns_route *r, const struct ns_register *req,
                         struct group *g, bool register_first, bool prime_slave)
{
    const struct live *l = route_find_live(r, req->cluster, req->broker_addr);
    bool dv_changed = l == NULL || !ns_data_version_equal(&l->dv, &req->dv);
    bool full = dv_changed || register_first;
    int32_t perm_mask =
        prime_slave && g->acting_master ? ~(int32_t)NS_PERM_WRITE : ~0;
    struct route_memo *memo = route_memo_take(g);
    size_t cursor = 0;
    int rv = 0;
    /* The topics come sorted by name (ns_register_decode_body), as the topic
     * table is: each search starts where the previous one ended, and the
     * table does not change until the new topics are merged in. */
    size_t hint = 0;
    struct new_topics fresh = {0};

    for (size_t i = 0; i < req->n_topics; i++) {
        const struct ns_topic_config *tc = &req->topics[i];
        struct ns_queue_data qd = {
            .broker_name = req->broker_name,
            .read_queues = tc->read_queues,
            .write_queues = tc->write_queues,
            .perm = tc->perm & perm_mask,
            .sys_flag = tc->sys_flag,
        };
        if (!full &&
            !topic_changed(r, dv_changed, tc->name, req->broker_name, &hint)) {
            continue;
        }
        if (route_memo_holds(memo, &cursor, tc->name, &qd)) {
            continue;
        }
        bool found;
        size_t pos = svec_search_near(&r->topics, tc->name, svec_cmp_named,
                                      &hint, &found);
        rv = found ? route_put_qd_in(r, r->topics.items[pos], &qd, NULL)
                   : defer_new_topic(&fresh, tc->name, &qd);
        if (rv != 0) {
            break;
        }
    }
    if (rv == 0) {
        new_topics_settle(&fresh);
        rv = route_put_qds_new(r, fresh.items, fresh.n);
    }
    if (fresh.items != fresh.first) {
        ns_free(fresh.items);
    }
    if (rv != 0) {
        route_memo_free(r, memo);
        return rv;
    }
    if (full) {
        route_memo_free(r, memo);
        route_memo_record(r, g, req, perm_mask);
        for (size_t i = 0; i < req->n_mappings; i++) {
            rv = route_merge_mapping(r, &req->mappings[i]);
            if (rv != 0) {
                return rv;
            }
        }
    } else {
        route_memo_put_back(r, g, memo);
    }
    return 0;
}

/* Step 5: an address moving to another id (role switch) must appear once. */
static void dedup_address(struct ns_route *r, struct group *g,
                          const struct ns_register *req)
{
    bool touched = false;

    for (size_t i = g->n_addrs; i > 0; i--) {
        if (g->addrs[i - 1].id != req->broker_id &&
            strcmp(g->addrs[i - 1].addr, req->broker_addr) == 0) {
            group_remove_addr_at(g, i - 1);
            touched = true;
        }
    }
    if (touched) {
        route_touch_group(r, g->name);
    }
}

/* Steps 2-3: the group and its flags. */
static int prepare_group(struct ns_route *r, const struct ns_register *req,
                         struct group **out, bool *register_first)
{
    struct group *g = route_find_group(r, req->broker_name);
    bool acting = !is_old_broker(req) && req->acting_master == 1;
    char *zone;

    *register_first = false;
    if (g == NULL) {
        g = route_create_group(r, req->broker_name, req->cluster);
        if (g == NULL) {
            return NS_ENOMEM;
        }
        *register_first = true;
    }
    if (!route_equal_str(g->zone, req->zone)) {
        zone = NULL;
        if (req->zone != NULL) {
            zone = ns_strdup(req->zone);
            if (zone == NULL) {
                return NS_ENOMEM;
            }
        }
        ns_free(g->zone);
        g->zone = zone;
        route_touch_group(r, g->name);
    }
    if (g->acting_master != acting) {
        g->acting_master = acting;
        route_touch_group(r, g->name);
    }
    *out = g;
    return 0;
}

static int fill_master(const struct ns_route *r, const struct ns_register *req,
                       const struct group *g, struct ns_register_result *res)
{
    const char *master = group_find_addr(g, 0);
    const struct live *ml;

    if (req->broker_id == 0 || master == NULL) {
        return 0;
    }
    ml = route_find_live(r, req->cluster, master);
    if (ml == NULL) {
        return 0;
    }
    res->master_addr = ns_strdup(master);
    if (res->master_addr == NULL) {
        return NS_ENOMEM;
    }
    if (ml->ha_addr != NULL) {
        res->ha_addr = ns_strdup(ml->ha_addr);
        if (res->ha_addr == NULL) {
            return NS_ENOMEM;
        }
    }
    return 0;
}

int ns_route_find_master(const struct ns_route *route,
                         const struct ns_register *req,
                         struct ns_register_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = NS_REGISTER_OK;
    const struct group *g = route_find_group(route, req->broker_name);
    if (g == NULL) {
        return 0;
    }
    int rv = fill_master(route, req, g, res);
    if (rv != 0) {
        ns_register_result_close(res);
    }
    return rv;
}

static int update_filter_servers(struct ns_route *r,
                                 const struct ns_register *req)
{
    if (!req->has_filter_servers) {
        return 0;
    }
    if (req->n_filter_servers == 0) {
        route_remove_filter(r, req->cluster, req->broker_addr);
        return 0;
    }
    return route_put_filter(r, req->cluster, req->broker_addr,
                            req->filter_servers, req->n_filter_servers);
}

int ns_route_register_broker(struct ns_route *r, const struct ns_register *req,
                             bool delete_missing_topics,
                             struct ns_register_result *res)
{
    route_bump_epoch(r);
    struct group *g;
    const char *prev;
    bool register_first;
    bool changed;
    bool is_master;
    bool prime_slave;
    int rv;

    memset(res, 0, sizeof(*res));
    res->status = NS_REGISTER_OK;
    rv = route_add_cluster_name(r, req->cluster, req->broker_name);
    if (rv != 0) {
        goto err;
    }
    rv = prepare_group(r, req, &g, &register_first);
    if (rv != 0) {
        goto err;
    }
    dedup_address(r, g, req);

    prev = group_find_addr(g, req->broker_id);
    if (prev != NULL && strcmp(prev, req->broker_addr) != 0) {
        const struct live *old = route_find_live(r, req->cluster, prev);
        if (old != NULL && old->dv.state_version > req->dv.state_version) {
            route_remove_live(r, req->cluster, req->broker_addr);
            res->status = NS_REGISTER_CONFLICT;
            return 0;
        }
    }
    if (prev == NULL && req->n_topics == 1 && !is_old_broker(req)) {
        res->status = NS_REGISTER_FAILED;
        return 0;
    }
    if (prev == NULL) {
        register_first = true;
    }
    rv = group_put_addr(g, req->broker_id, req->broker_addr, &changed);
    if (rv != 0) {
        goto err;
    }
    if (changed) {
        route_touch_group(r, g->name);
    }

    is_master = req->broker_id == 0;
    prime_slave =
        !is_old_broker(req) && !is_master && g->addrs[0].id == req->broker_id;
    if (is_master || prime_slave) {
        if (delete_missing_topics && req->n_mappings == 0) {
            rv = delete_missing(r, req);
            if (rv != 0) {
                goto err;
            }
        }
        rv = update_routes(r, req, g, register_first, prime_slave);
        if (rv != 0) {
            goto err;
        }
    }
    rv = route_put_live(r, req->cluster, req->broker_addr, &req->dv,
                        req->ha_addr, req->heartbeat_timeout_ms);
    if (rv != 0) {
        goto err;
    }
    rv = update_filter_servers(r, req);
    if (rv != 0) {
        goto err;
    }
    rv = fill_master(r, req, g, res);
    if (rv != 0) {
        goto err_after_result;
    }
    return 0;

err_after_result:
    ns_register_result_close(res);
err:
    return rv;
}

/* --- the heartbeat short-cut --- */

static bool same_filter_servers(const struct ns_route *r,
                                const struct ns_register *req)
{
    const struct filter *f;

    if (!req->has_filter_servers) {
        return true;
    }
    f = route_find_filter(r, req->cluster, req->broker_addr);
    if (req->n_filter_servers == 0) {
        return f == NULL;
    }
    if (f == NULL || f->n != req->n_filter_servers) {
        return false;
    }
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->servers[i], req->filter_servers[i]) != 0) {
            return false;
        }
    }
    return true;
}

/* With an unchanged DataVersion and a known address, only topics without queue
 * data for this broker name are written (10b), and 10a removes topics the
 * request lacks. */
static bool same_routes(const struct ns_route *r, const struct ns_register *req,
                        bool delete_missing_topics)
{
    const struct named_set *b = route_find_bidx(r, req->broker_name);
    const char **names;
    size_t n_distinct = 0;
    size_t hint = 0;

    for (size_t i = 0; i < req->n_topics; i++) {
        if (topic_changed(r, false, req->topics[i].name, req->broker_name,
                          &hint)) {
            return false;
        }
    }
    if (!delete_missing_topics || b == NULL) {
        return true;
    }
    /* Every request topic is in the index; equal distinct counts make the sets
     * equal. */
    names = sorted_topic_names(req);
    if (names == NULL) {
        return false; /* no memory: "changed" is the safe answer */
    }
    for (size_t i = 0; i < req->n_topics; i++) {
        if (i == 0 || strcmp(names[i - 1], names[i]) != 0) {
            n_distinct++;
        }
    }
    ns_free(names);
    return n_distinct == b->items.n;
}

bool ns_route_is_unchanged_registration(const struct ns_route *r,
                                        const struct ns_register *req,
                                        bool delete_missing_topics)
{
    const struct named_set *c =
        svec_find(&r->clusters, req->cluster, svec_cmp_named);
    const struct group *g = route_find_group(r, req->broker_name);
    const struct live *l = route_find_live(r, req->cluster, req->broker_addr);
    const char *addr;
    bool acting = !is_old_broker(req) && req->acting_master == 1;

    if (c == NULL ||
        svec_find(&c->items, req->broker_name, svec_cmp_str) == NULL ||
        g == NULL || l == NULL || req->n_mappings != 0) {
        return false;
    }
    if (g->acting_master != acting || !route_equal_str(g->zone, req->zone)) {
        return false;
    }
    addr = group_find_addr(g, req->broker_id);
    if (addr == NULL || strcmp(addr, req->broker_addr) != 0) {
        return false;
    }
    for (size_t i = 0; i < g->n_addrs; i++) {
        if (g->addrs[i].id != req->broker_id &&
            strcmp(g->addrs[i].addr, req->broker_addr) == 0) {
            return false;
        }
    }
    if (!ns_data_version_equal(&l->dv, &req->dv) ||
        !route_equal_str(l->ha_addr, req->ha_addr) ||
        l->timeout_ms != req->heartbeat_timeout_ms ||
        !same_filter_servers(r, req)) {
        return false;
    }
    if (req->broker_id == 0 ||
        (!is_old_broker(req) && g->addrs[0].id == req->broker_id)) {
        return same_routes(r, req, delete_missing_topics);
    }
    return true;
}
