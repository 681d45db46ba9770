/* The per-(topic, flavour) cache of encoded TopicRouteData replies. Entries
 * live in the topic itself and are dropped by the elementary edits of route.c
 * (route_touch_*); this file only fills and serves them. Zone-filtered replies
 * are never cached. */
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

int ns_route_cached_topic_route(struct ns_route *r,
                                const struct ns_route_query *q,
                                uint64_t context_gen, const uint8_t **body,
                                size_t *len)
{
    struct topic *t;
    struct cached_route *c;
    struct ns_buf buf;
    int rv;

    if (q->zone_name != NULL) {
        ns_buf_reset(&r->stats->scratch);
        rv = ns_route_encode_topic_route(r, q, &r->stats->scratch);
        if (rv == 0) {
            *body = r->stats->scratch.data;
            *len = r->stats->scratch.len;
        }
        return rv;
    }
    t = q->topic != NULL ? route_find_topic(r, q->topic) : NULL;
    if (t == NULL) {
        return NS_ENOTFOUND;
    }
    c = &t->cache[q->flavour == NS_JSON_STANDARD ? 1 : 0];
    if (c->valid && c->gen == context_gen) {
        *body = c->body;
        *len = c->len;
        return 0;
    }
    ns_buf_init(&buf);
    rv = ns_route_encode_topic_route(r, q, &buf);
    if (rv != 0) {
        ns_buf_close(&buf);
        return rv;
    }
    ns_free(c->body);
    c->body = ns_buf_take(&buf, &c->len);
    c->gen = context_gen;
    c->valid = true;
    *body = c->body;
    *len = c->len;
    return 0;
}

uint64_t ns_route_n_route_encodes(const struct ns_route *r)
{
    return r->stats->n_encodes;
}
