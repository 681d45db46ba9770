/* A topic's block (route_internal.h, struct topic): the entry, its name, its
 * first queue data and a one-slot queue-data list in one allocation, and the
 * queue data that do not fit. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

/* The queue data's broker names borrow the reverse index: not freed here. */
void route_free_topic(struct ns_route *r, struct topic *t)
{
    for (size_t i = 0; i < t->qds.n; i++) {
        route_topic_qd_free(t, t->qds.items[i]);
    }
    r->n_qds -= t->qds.n;
    if (t->qds.items != t->qds_inline) {
        svec_close(&t->qds);
    }
    route_cache_drop_topic(r, t);
    ns_free(t->cache);
    ns_free(t);
}

struct topic *route_topic_new(const struct ns_route *r, const char *name)
{
    size_t len = strlen(name);
    struct topic *t = ns_malloc(sizeof(*t) + len + 1);
    if (t == NULL) {
        return NULL;
    }
    memset(t, 0, sizeof(*t));
    memcpy(t->name_bytes, name, len + 1);
    t->name = t->name_bytes;
    t->qds.items = t->qds_inline;
    t->qds.cap = 1;
    t->born = r->capture_seq;
    return t;
}

struct ns_queue_data *route_topic_qd_new(struct topic *t)
{
    if (t->qd0.broker_name == NULL) {
        return &t->qd0; /* the caller sets broker_name */
    }
    return ns_malloc(sizeof(struct ns_queue_data));
}

int route_topic_qds_insert(struct topic *t, size_t pos,
                           struct ns_queue_data *qd)
{
    if (t->qds.items == t->qds_inline && t->qds.n == 1) {
        void **items = ns_malloc(4 * sizeof(*items));
        if (items == NULL) {
            return NS_ENOMEM;
        }
        items[0] = t->qds_inline[0];
        t->qds.items = items;
        t->qds.cap = 4;
    }
    return svec_insert(&t->qds, pos, qd);
}

void route_topic_qd_free(struct topic *t, struct ns_queue_data *qd)
{
    if (qd == &t->qd0) {
        t->qd0.broker_name = NULL;
    } else {
        ns_free(qd);
    }
}
