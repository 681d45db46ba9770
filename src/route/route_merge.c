/* Topics new to the table, created in one merge (route_internal.h,
 * route_put_qds_new). Inserting them one by one moves the table's tail once
 * per topic: a broker joining with 10,000 topics whose names fall among
 * 100,000 others would move gigabytes. */
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

static void free_unlisted(struct ns_route *r, struct topic **fresh, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (fresh[i] != NULL) {
            route_free_topic(r, fresh[i]);
        }
    }
}

int route_put_qds_new(struct ns_route *r, const struct route_new_topic *add,
                      size_t k)
{
    if (k == 0) {
        return 0;
    }
    struct topic **fresh = ns_calloc(k, sizeof(*fresh));
    if (fresh == NULL) {
        return NS_ENOMEM;
    }
    int rv = 0;
    for (size_t i = 0; i < k && rv == 0; i++) {
        fresh[i] = route_topic_new(r, add[i].name);
        if (fresh[i] == NULL) {
            rv = NS_ENOMEM;
        }
    }
    if (rv == 0) {
        rv = svec_merge_named(&r->topics, (void *const *)fresh, k);
    }
    if (rv != 0) {
        free_unlisted(r, fresh, k);
        ns_free(fresh);
        return rv;
    }
    size_t i = 0;
    for (; i < k && rv == 0; i++) {
        rv = route_put_qd_in(r, fresh[i], &add[i].qd, NULL);
    }
    if (rv == 0) {
        ns_free(fresh);
        return 0;
    }
    /* A failed put dropped its own topic; the ones after it are empty. */
    struct svec emptied = {0};
    for (; i < k; i++) {
        if (svec_insert(&emptied, emptied.n, fresh[i]) != 0) {
            route_drop_topic_if_empty(r, fresh[i]);
        }
    }
    route_drop_topics(r, &emptied);
    ns_free(fresh);
    return rv;
}
