/* Helpers shared by the route unit tests (tests/unit/test_route_*.c): building
 * registration requests by hand and reading reply bodies back as strings. Test
 * code only. */
#ifndef RAFTNS_TEST_ROUTE_UTIL_H
#define RAFTNS_TEST_ROUTE_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/route.h"

#define T0 1700000000000LL

/* A registration of (cluster, name, id, addr, ha) with DataVersion {counter, 0,
 * T0}. acting: -1 old broker, 0 or 1. */
static inline void reg_init(struct ns_register *r, const char *cluster,
                            const char *name, int64_t id, const char *addr,
                            const char *ha, int acting, int64_t counter)
{
    ns_register_init(r);
    r->cluster = ns_strdup(cluster);
    r->broker_name = ns_strdup(name);
    r->broker_addr = ns_strdup(addr);
    r->ha_addr = ha != NULL ? ns_strdup(ha) : NULL;
    r->broker_id = id;
    r->acting_master = (int8_t)acting;
    r->dv.counter = counter;
    r->dv.timestamp = T0;
}

static inline void reg_topic(struct ns_register *r, const char *name,
                             int32_t rq, int32_t wq, int32_t perm,
                             int32_t sys_flag)
{
    r->topics = ns_realloc(r->topics, (r->n_topics + 1) * sizeof(*r->topics));
    assert_non_null(r->topics);
    r->topics[r->n_topics].name = ns_strdup(name);
    r->topics[r->n_topics].read_queues = rq;
    r->topics[r->n_topics].write_queues = wq;
    r->topics[r->n_topics].perm = perm;
    r->topics[r->n_topics].sys_flag = sys_flag;
    r->n_topics++;
}

static inline void reg_zone(struct ns_register *r, const char *zone)
{
    ns_free(r->zone);
    r->zone = ns_strdup(zone);
}

/* Registers and returns the status; master/ha copied into the out strings (may
 * be NULL). */
static inline enum ns_register_status do_register(struct ns_route *route,
                                                  const struct ns_register *req,
                                                  bool delete_missing,
                                                  char *master, char *ha)
{
    struct ns_register_result res;

    assert_int_equal(ns_route_register_broker(route, req, delete_missing, &res),
                     0);
    if (master != NULL) {
        strcpy(master, res.master_addr != NULL ? res.master_addr : "(null)");
    }
    if (ha != NULL) {
        strcpy(ha, res.ha_addr != NULL ? res.ha_addr : "(null)");
    }
    enum ns_register_status st = res.status;
    ns_register_result_close(&res);
    return st;
}

/* The §8 notation: A0, A1, B0 in cluster c1 with topics TopicA and TopicB. */
static inline void reg_a0(struct ns_register *r, int acting)
{
    reg_init(r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912",
             acting, 1);
    reg_topic(r, "TopicA", 4, 4, 6, 0);
    reg_topic(r, "TopicB", 4, 4, 6, 0);
}

static inline void reg_a1(struct ns_register *r, int acting)
{
    reg_init(r, "c1", "broker-a", 1, "127.0.0.1:10921", "127.0.0.1:10922",
             acting, 1);
    reg_topic(r, "TopicA", 4, 4, 6, 0);
    reg_topic(r, "TopicB", 4, 4, 6, 0);
}

static inline void reg_b0(struct ns_register *r, int acting)
{
    reg_init(r, "c1", "broker-b", 0, "127.0.0.1:20911", "127.0.0.1:20912",
             acting, 1);
    reg_topic(r, "TopicA", 4, 4, 6, 0);
    reg_topic(r, "TopicB", 4, 4, 6, 0);
}

/* Builds, registers and closes one of the requests above. */
static inline enum ns_register_status
register_with(struct ns_route *route, void (*build)(struct ns_register *, int),
              int acting)
{
    struct ns_register r;
    enum ns_register_status st;

    build(&r, acting);
    st = do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    return st;
}

/* Owned NUL-terminated copy of a buffer (frees it). */
static inline char *buf_string(struct ns_buf *b)
{
    char *s = ns_malloc(b->len + 1);

    assert_non_null(s);
    if (b->len > 0) {
        memcpy(s, b->data, b->len);
    }
    s[b->len] = '\0';
    ns_buf_close(b);
    return s;
}

/* Route JSON of topic, or NULL when not found. Caller frees with ns_free. */
static inline char *route_json_q(const struct ns_route *route,
                                 const struct ns_route_query *q)
{
    struct ns_buf b;
    int rv;

    ns_buf_init(&b);
    rv = ns_route_encode_topic_route(route, q, &b);
    if (rv == NS_ENOTFOUND) {
        assert_int_equal(b.len, 0);
        ns_buf_close(&b);
        return NULL;
    }
    assert_int_equal(rv, 0);
    return buf_string(&b);
}

/* ns_route_cached_topic_route with the body as bytes (borrowed like it). */
static inline int cached_route_body(struct ns_route *route,
                                    const struct ns_route_query *q,
                                    uint64_t gen, const uint8_t **body,
                                    size_t *len)
{
    struct ns_rcbuf *rc = NULL;
    int rv = ns_route_cached_topic_route(route, q, gen, &rc);

    *body = rv == 0 ? rc->data : NULL;
    *len = rv == 0 ? rc->len : 0;
    return rv;
}

static inline char *route_json(const struct ns_route *route, const char *topic,
                               enum ns_json_flavour flavour)
{
    struct ns_route_query q = {.topic = topic, .flavour = flavour};

    return route_json_q(route, &q);
}

static inline void assert_route(const struct ns_route *route, const char *topic,
                                enum ns_json_flavour flavour,
                                const char *expected)
{
    char *s = route_json(route, topic, flavour);

    if (expected == NULL) {
        assert_null(s);
        return;
    }
    assert_non_null(s);
    assert_string_equal(s, expected);
    ns_free(s);
}

static inline void assert_routable(const struct ns_route *route,
                                   const char *topic)
{
    char *s = route_json(route, topic, NS_JSON_STANDARD);

    assert_non_null(s);
    ns_free(s);
}

typedef int (*encode_fn)(const struct ns_route *, struct ns_buf *);

static inline void assert_body(const struct ns_route *route, encode_fn fn,
                               const char *expected)
{
    struct ns_buf b;
    char *s;

    ns_buf_init(&b);
    assert_int_equal(fn(route, &b), 0);
    s = buf_string(&b);
    assert_string_equal(s, expected);
    ns_free(s);
}

static inline void assert_cluster_info(const struct ns_route *route,
                                       const char *expected)
{
    assert_body(route, ns_route_encode_cluster_info, expected);
}

/* Encoded state as an owned buffer. */
static inline void state_of(const struct ns_route *route, struct ns_buf *out)
{
    ns_buf_init(out);
    assert_int_equal(ns_route_encode_state(route, out), 0);
}

static inline bool same_state(const struct ns_buf *a, const struct ns_buf *b)
{
    return a->len == b->len &&
           (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static inline void unregister_one(struct ns_route *route, const char *cluster,
                                  const char *addr, const char *name,
                                  int64_t id)
{
    struct ns_broker_ref ref = {(char *)cluster, (char *)addr, (char *)name,
                                id};

    assert_int_equal(ns_route_unregister_brokers(route, &ref, 1), 0);
}

/* Common fragments of expected bodies. */
#define QD_A(perm)                                                             \
    "{\"brokerName\":\"broker-a\",\"perm\":" #perm                             \
    ",\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}"
#define QD_B(perm)                                                             \
    "{\"brokerName\":\"broker-b\",\"perm\":" #perm                             \
    ",\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}"

#endif
