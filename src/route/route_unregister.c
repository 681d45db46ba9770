/* Broker removal (docs/protocol.md §5.3 batch unregister, §5.5/§5.6 expiry and
 * connection close): addresses are removed by value, emptied groups and
 * clusters go, their topics are cleaned, and acting-master groups left without
 * a master lose the write permission. Deciding WHEN a broker expires is not
 * here (src/liveness/liveness.c). */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

/* Removes every queue data of bname; topics left empty join emptied. */
static void clean_removed(struct ns_route *r, const char *bname,
                          struct svec *emptied)
{
    struct named_set *b;

    while ((b = route_find_bidx(r, bname)) != NULL && b->items.n > 0) {
        const char *topic = b->items.items[b->items.n - 1];
        struct topic *t = route_find_topic(r, topic);
        if (t == NULL) {
            /* cannot happen: the index is exact (its names are borrowed) */
            svec_remove_at(&b->items, b->items.n - 1);
            continue;
        }
        route_remove_qd_later(r, t, bname, emptied);
    }
}

static bool no_master_exists(const struct group *g)
{
    return g == NULL || g->n_addrs == 0 || g->addrs[0].id > 0;
}

/* The surviving slaves of an acting-master group become read-only. */
static void wipe_reduced(struct ns_route *r, const char *bname)
{
    const struct group *g = route_find_group(r, bname);
    const struct named_set *b = route_find_bidx(r, bname);

    /* Upstream dereferences the group without a check; a missing group is
     * skipped. */
    if (g == NULL || b == NULL || !g->acting_master || !no_master_exists(g)) {
        return;
    }
    for (size_t i = 0; i < b->items.n; i++) {
        struct topic *t = route_find_topic(r, b->items.items[i]);
        struct ns_queue_data *qd;
        if (t == NULL) {
            continue;
        }
        qd = svec_find(&t->qds, bname, svec_cmp_named);
        if (qd != NULL) {
            route_set_perm(r, t, qd, qd->perm & ~NS_PERM_WRITE);
        }
    }
}

/* Steps 1-3 for one request; *removed tells whether the group went away. */
static void unregister_one(struct ns_route *r, const char *cluster,
                           const char *addr, const char *bname, bool *removed)
{
    struct group *g;
    bool touched = false;

    *removed = false;
    route_remove_live(r, cluster, addr);
    route_remove_filter(r, cluster, addr);
    g = bname != NULL ? route_find_group(r, bname) : NULL;
    if (g == NULL) {
        return;
    }
    for (size_t i = g->n_addrs; i > 0; i--) {
        if (strcmp(g->addrs[i - 1].addr, addr) == 0) {
            group_remove_addr_at(g, i - 1);
            touched = true;
        }
    }
    if (touched) {
        route_touch_group(r, bname);
    }
    if (g->n_addrs == 0) {
        route_remove_group(r, bname);
        route_remove_cluster_name(r, cluster, bname);
        *removed = true;
    }
}

/* Applies one batch: names[i] are the requests' broker names (NULL = unknown).
 */
static int unregister_batch(struct ns_route *r,
                            const struct ns_broker_ref *refs,
                            const char *const *names, size_t n)
{
    struct svec removed = {0};
    struct svec reduced = {0};
    int rv = 0;

    for (size_t i = 0; i < n; i++) {
        bool gone;
        unregister_one(r, refs[i].cluster, refs[i].broker_addr, names[i],
                       &gone);
        if (names[i] == NULL) {
            continue;
        }
        rv = svec_add_str(gone ? &removed : &reduced, names[i], NULL);
        if (rv != 0) {
            goto out;
        }
    }
    struct svec emptied = {0};
    for (size_t i = 0; i < removed.n; i++) {
        clean_removed(r, removed.items[i], &emptied);
    }
    route_drop_topics(r, &emptied);
    for (size_t i = 0; i < reduced.n; i++) {
        wipe_reduced(r, reduced.items[i]);
    }

out:
    svec_close_strs(&removed);
    svec_close_strs(&reduced);
    return rv;
}

int ns_route_unregister_brokers(struct ns_route *r,
                                const struct ns_broker_ref *refs, size_t n)
{
    route_bump_epoch(r);
    const char **names = ns_malloc((n + 1) * sizeof(*names));
    int rv;

    if (names == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = refs[i].broker_name;
    }
    rv = unregister_batch(r, refs, names, n);
    ns_free(names);
    return rv;
}

/* The group of cluster holding addr (5.6 lookup); its name is borrowed. */
static const struct group *find_holder(const struct ns_route *r,
                                       const char *cluster, const char *addr)
{
    const struct named_set *c =
        svec_find(&r->clusters, cluster, svec_cmp_named);

    if (c == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < c->items.n; i++) {
        const struct group *g = route_find_group(r, c->items.items[i]);
        if (g == NULL || strcmp(g->cluster, cluster) != 0) {
            continue;
        }
        for (size_t j = 0; j < g->n_addrs; j++) {
            if (strcmp(g->addrs[j].addr, addr) == 0) {
                return g;
            }
        }
    }
    return NULL;
}

int ns_route_expire_brokers(struct ns_route *r,
                            const struct ns_broker_ref *refs, size_t n)
{
    route_bump_epoch(r);
    char **names = ns_calloc(n + 1, sizeof(*names));
    int rv = NS_ENOMEM;

    if (names == NULL) {
        goto err;
    }
    /* Names are looked up before anything is removed, as upstream submits them.
     */
    for (size_t i = 0; i < n; i++) {
        const struct group *g =
            find_holder(r, refs[i].cluster, refs[i].broker_addr);
        if (g != NULL) {
            names[i] = ns_strdup(g->name);
            if (names[i] == NULL) {
                goto err_after_names;
            }
        }
    }
    rv = unregister_batch(r, refs, (const char *const *)names, n);

err_after_names:
    for (size_t i = 0; i < n; i++) {
        ns_free(names[i]);
    }
    ns_free(names);
err:
    return rv;
}

int ns_route_expire_brokers_seen(struct ns_route *r,
                                 const struct ns_broker_ref *refs,
                                 const uint64_t *regs_seen, size_t n)
{
    struct ns_broker_ref *due = ns_calloc(n + 1, sizeof(*due));
    size_t n_due = 0;
    int rv;

    if (due == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct live *l =
            route_find_live(r, refs[i].cluster, refs[i].broker_addr);
        /* Left meanwhile, or registered again since the leader decided: not
         * the registration the decision was about. (Unregistered and
         * registered anew in between restarts the count: not told apart.) */
        if (l != NULL && l->regs == regs_seen[i]) {
            due[n_due++] = refs[i]; /* borrowed strings */
        }
    }
    rv = ns_route_expire_brokers(r, due, n_due);
    ns_free(due);
    return rv;
}
