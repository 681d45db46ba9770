/* Administrative route edits (docs/protocol.md §5.8): wipe/add write permission
 * of a broker name, DELETE_TOPIC_IN_NAMESRV and REGISTER_TOPIC_IN_NAMESRV.
 * Request gating (config switches, secrets) is not here. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

static int operate_write_perm(struct ns_route *r, const char *bname, bool add,
                              int32_t *count)
{
    const struct named_set *b = route_find_bidx(r, bname);
    int32_t n = 0;

    for (size_t i = 0; b != NULL && i < b->items.n; i++) {
        struct topic *t = route_find_topic(r, b->items.items[i]);
        struct ns_queue_data *qd;
        if (t == NULL) {
            continue;
        }
        qd = svec_find(&t->qds, bname, svec_cmp_named);
        if (qd == NULL) {
            continue;
        }
        route_set_perm(r, t, qd,
                       add ? (NS_PERM_READ | NS_PERM_WRITE)
                           : (qd->perm & ~NS_PERM_WRITE));
        n++;
    }
    if (count != NULL) {
        *count = n;
    }
    return 0;
}

int32_t ns_route_count_broker_topics(const struct ns_route *r,
                                     const char *broker_name)
{
    const struct named_set *b = route_find_bidx(r, broker_name);
    int32_t n = 0;
    for (size_t i = 0; b != NULL && i < b->items.n; i++) {
        struct topic *t = route_find_topic(r, b->items.items[i]);
        if (t != NULL && svec_find(&t->qds, broker_name, svec_cmp_named)) {
            n++;
        }
    }
    return n;
}

int ns_route_wipe_write_perm(struct ns_route *r, const char *broker_name,
                             int32_t *count)
{
    route_bump_epoch(r);
    return operate_write_perm(r, broker_name, false, count);
}

int ns_route_add_write_perm(struct ns_route *r, const char *broker_name,
                            int32_t *count)
{
    route_bump_epoch(r);
    return operate_write_perm(r, broker_name, true, count);
}

int ns_route_delete_topic(struct ns_route *r, const char *topic,
                          const char *cluster)
{
    route_bump_epoch(r);
    struct topic *t = route_find_topic(r, topic);
    const struct named_set *c;

    if (t == NULL) {
        return 0;
    }
    if (cluster == NULL || cluster[0] == '\0') {
        while (t != NULL && t->qds.n > 0) {
            const struct ns_queue_data *qd = t->qds.items[t->qds.n - 1];
            bool last = t->qds.n == 1;
            route_remove_qd(r, t, qd->broker_name);
            if (last) {
                t = NULL; /* freed with its last queue data */
            }
        }
        return 0;
    }
    c = svec_find(&r->clusters, cluster, svec_cmp_named);
    if (c == NULL) {
        return 0;
    }
    /* Walk the topic's queue data (usually fewer than the cluster's names),
     * backwards. */
    for (size_t i = t->qds.n; i > 0; i--) {
        const struct ns_queue_data *qd = t->qds.items[i - 1];
        bool last = t->qds.n == 1;
        if (svec_find(&c->items, qd->broker_name, svec_cmp_str) == NULL) {
            continue;
        }
        route_remove_qd(r, t, qd->broker_name);
        if (last) {
            break;
        }
    }
    return 0;
}

int ns_route_register_topic(struct ns_route *r, const char *topic,
                            const struct ns_queue_data *qds, size_t n)
{
    route_bump_epoch(r);
    int rv;

    if (n == 0) {
        return 0;
    }
    if (route_find_topic(r, topic) == NULL) {
        /* A new topic is created only when every broker name is known. */
        for (size_t i = 0; i < n; i++) {
            if (route_find_group(r, qds[i].broker_name) == NULL) {
                return 0;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (route_find_group(r, qds[i].broker_name) == NULL) {
            return 0; /* earlier entries stay applied, as upstream */
        }
        rv = route_put_qd(r, topic, &qds[i], NULL);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}
