/* Helpers for the cluster tests (tests/cluster/test_fixture_*.c): a
 * raft_fixture cluster whose servers run the production FSM adapter
 * (raft/fsm_adapter.c: the raft_fsm callbacks over the real state machine and
 * raft/diverge.c, and the entry framing the node proposes with), the leader
 * barrier (docs/design.md §7), command builders and a seeded generator.
 * Header-only (each test is its own executable); test code, not a second
 * implementation of the node. */
#ifndef RAFTNS_TEST_FIXTURE_UTIL_H
#define RAFTNS_TEST_FIXTURE_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <raft.h>
#include <raft/fixture.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/command.h"
#include "raftns/diverge.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/fsm_adapter.h"
#include "raftns/log.h"

#define FX_MAX RAFT_FIXTURE_MAX_SERVERS
#define FX_T0 1700000000000LL

struct fx;

struct fx_server {
    struct ns_state state;
    struct ns_diverge dv; /* as struct ns_node's */
    /* The node's FSM over state and dv, without the node's hooks: its
     * counters (n_applies, n_snapshots, ...) and first_error are what the
     * tests read. */
    struct ns_fsm_adapter fa;
};

struct fx_barrier {
    struct raft_barrier req;
    struct fx *fx;
    unsigned index;
    raft_term term;
};

struct fx {
    struct raft_fixture f; /* first member: the hook casts back */
    struct fx_server s[FX_MAX];
    unsigned n;
    bool mitigate;                  /* leader barrier before client commands */
    raft_term barrier_term[FX_MAX]; /* term of the last leader barrier issued */
    raft_term ready_term[FX_MAX];   /* term whose leader barrier completed */
    unsigned n_barriers_lost;
};

/* --- leader barrier (the server's P1 mitigation) --- */

static inline void fx_barrier_cb(struct raft_barrier *req, int status)
{
    struct fx_barrier *b = req->data;
    if (status == 0) {
        if (b->term > b->fx->ready_term[b->index]) {
            b->fx->ready_term[b->index] = b->term;
        }
    } else {
        b->fx->n_barriers_lost++;
    }
    ns_free(b);
}

/* Fixture hook, run after every event: a server that is leader in a term it has
 * not issued a barrier for issues one at once (node.c polls from uv_check). */
static inline void fx_hook(struct raft_fixture *f,
                           struct raft_fixture_event *event)
{
    struct fx *x = (struct fx *)f;
    (void)event;
    if (!x->mitigate) {
        return;
    }
    for (unsigned i = 0; i < x->n; i++) {
        struct raft *r = raft_fixture_get(f, i);
        if (raft_state(r) != RAFT_LEADER ||
            x->barrier_term[i] == r->current_term) {
            continue;
        }
        struct fx_barrier *b = ns_calloc(1, sizeof *b);
        assert_non_null(b);
        b->fx = x;
        b->index = i;
        b->term = r->current_term;
        b->req.data = b;
        if (raft_barrier(r, &b->req, fx_barrier_cb) != 0) {
            ns_free(b);
            continue; /* retried after the next event */
        }
        x->barrier_term[i] = r->current_term;
    }
}

/* Zeroes x (P6), grows n servers with the real FSM, bootstraps n voters and
 * starts them. */
static inline void fx_setup(struct fx *x, unsigned n, bool mitigate)
{
    struct raft_configuration conf;
    memset(x, 0, sizeof *x);
    /* The adapter logs every snapshot and restore at INFO. */
    ns_log_threshold = NS_LOG_WARN;
    x->n = n;
    x->mitigate = mitigate;
    assert_int_equal(raft_fixture_initialize(&x->f), 0);
    for (unsigned i = 0; i < n; i++) {
        struct fx_server *s = &x->s[i];
        assert_int_equal(ns_state_init(&s->state), 0);
        ns_fsm_adapter_init(&s->fa, &s->state, &s->dv, NULL);
        assert_int_equal(raft_fixture_grow(&x->f, &s->fa.fsm), 0);
        ns_fsm_adapter_bind(&s->fa, raft_fixture_get(&x->f, i));
    }
    assert_int_equal(raft_fixture_configuration(&x->f, n, &conf), 0);
    assert_int_equal(raft_fixture_bootstrap(&x->f, &conf), 0);
    raft_configuration_close(&conf);
    assert_int_equal(raft_fixture_start(&x->f), 0);
    raft_fixture_hook(&x->f, fx_hook);
}

static inline void fx_teardown(struct fx *x)
{
    raft_fixture_close(&x->f); /* fires pending callbacks */
    for (unsigned i = 0; i < x->n; i++) {
        ns_state_close(&x->s[i].state);
    }
}

static inline struct raft *fx_raft(struct fx *x, unsigned i)
{
    return raft_fixture_get(&x->f, i);
}

/* True when server i is leader and (mitigated) its barrier of this term has
 * completed: the only state in which the test acts as a client of i. */
static inline bool fx_is_ready_leader(struct fx *x, unsigned i)
{
    struct raft *r = fx_raft(x, i);
    if (!raft_fixture_alive(&x->f, i) || raft_state(r) != RAFT_LEADER) {
        return false;
    }
    return !x->mitigate || x->ready_term[i] == r->current_term;
}

static inline bool fx_stop_ready(struct raft_fixture *f, void *arg)
{
    struct fx *x = (struct fx *)f;
    (void)arg;
    for (unsigned i = 0; i < x->n; i++) {
        if (fx_is_ready_leader(x, i)) {
            return true;
        }
    }
    return false;
}

/* The ready leader of the highest term (a revived deposed leader may still
 * think it leads), or x->n. */
static inline unsigned fx_ready_leader(struct fx *x)
{
    unsigned l = x->n;
    for (unsigned i = 0; i < x->n; i++) {
        if (fx_is_ready_leader(x, i) &&
            (l == x->n ||
             fx_raft(x, i)->current_term > fx_raft(x, l)->current_term)) {
            l = i;
        }
    }
    return l;
}

/* Steps until some server is a ready leader; returns its index or x->n. */
static inline unsigned fx_wait_leader(struct fx *x, unsigned max_ms)
{
    raft_fixture_step_until(&x->f, fx_stop_ready, NULL, max_ms);
    return fx_ready_leader(x);
}

/* --- client requests --- */

struct fx_req {
    struct raft_apply req;
    bool pending, done;
    int status;
};

static inline void fx_apply_cb(struct raft_apply *req, int status, void *result)
{
    struct fx_req *r = req->data;
    (void)result;
    r->pending = false;
    r->done = true;
    r->status = status;
}

/* raft_apply()s the entry rb (raft_malloc'd; taken) on server i. Returns
 * raft's code (rb freed); on 0, r->done turns true exactly once (status in
 * r->status). */
static inline int fx_submit_entry(struct fx *x, unsigned i,
                                  struct raft_buffer rb, struct fx_req *r)
{
    memset(r, 0, sizeof *r);
    r->req.data = r;
    int rv = raft_apply(fx_raft(x, i), &r->req, &rb, 1, fx_apply_cb);
    if (rv != 0) {
        raft_free(rb.base);
        return rv;
    }
    r->pending = true;
    return 0;
}

/* Frames c as the node does (ns_fsm_adapter_entry_encode) and submits it on
 * server i: as fx_submit_entry. */
static inline int fx_submit(struct fx *x, unsigned i,
                            const struct ns_command *c, struct fx_req *r)
{
    struct ns_buf b;
    struct raft_buffer rb;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(c, &b), 0);
    assert_int_equal(ns_fsm_adapter_entry_encode(b.data, b.len, &rb), 0);
    ns_buf_close(&b);
    return fx_submit_entry(x, i, rb, r);
}

static inline bool fx_stop_done(struct raft_fixture *f, void *arg)
{
    (void)f;
    return ((struct fx_req *)arg)->done;
}

/* Submits c on the ready leader and waits for its callback; returns the
 * status (RAFT_NOTLEADER when there was no ready leader). */
static inline int fx_apply_sync(struct fx *x, const struct ns_command *c,
                                unsigned max_ms)
{
    struct fx_req r;
    unsigned l = fx_wait_leader(x, max_ms);
    if (l == x->n) {
        return RAFT_NOTLEADER;
    }
    int rv = fx_submit(x, l, c, &r);
    if (rv != 0) {
        return rv;
    }
    /* r lives on this stack: a request still pending here is a failure. */
    assert_true(raft_fixture_step_until(&x->f, fx_stop_done, &r, max_ms));
    return r.status;
}

/* Steps until every server applied index; true on success. */
static inline bool fx_wait_applied_all(struct fx *x, raft_index index,
                                       unsigned max_ms)
{
    return raft_fixture_step_until_applied(&x->f, x->n, index, max_ms);
}

/* Brings every server to the highest last index of a ready leader and asserts
 * every replica's snapshot bytes are identical and no apply failed. Returns
 * server 0's encoding in out (caller closes). */
static inline void fx_assert_converged(struct fx *x, struct ns_buf *out)
{
    unsigned l = fx_wait_leader(x, 30000);
    assert_true(l < x->n);
    assert_true(fx_wait_applied_all(x, raft_last_index(fx_raft(x, l)), 30000));
    ns_buf_init(out);
    for (unsigned i = 0; i < x->n; i++) {
        struct ns_buf b;
        ns_buf_init(&b);
        assert_int_equal(x->s[i].fa.first_error, 0);
        assert_int_equal(ns_snapshot_encode(&x->s[i].state, &b), 0);
        if (i == 0) {
            ns_buf_append(out, b.data, b.len);
        } else if (b.len != out->len || memcmp(b.data, out->data, b.len) != 0) {
            fprintf(stderr, "replica %u differs from replica 0\n", i);
            ns_buf_close(&b);
            fail();
        }
        ns_buf_close(&b);
    }
}

/* --- command builders (all strings copied) --- */

static inline void fx_cmd_register(struct ns_command *c, const char *cluster,
                                   const char *name, int64_t id,
                                   const char *addr, int64_t counter,
                                   const char *const *topics, size_t n_topics)
{
    ns_command_init(c, NS_CMD_REGISTER_BROKER);
    c->leader_time_ms = FX_T0;
    struct ns_register *r = &c->u.reg;
    ns_register_init(r);
    r->cluster = ns_strdup(cluster);
    r->broker_name = ns_strdup(name);
    r->broker_addr = ns_strdup(addr);
    r->broker_id = id;
    r->acting_master = 0;
    r->dv.counter = counter;
    r->dv.timestamp = FX_T0;
    r->topics = ns_calloc(n_topics > 0 ? n_topics : 1, sizeof *r->topics);
    assert_non_null(r->topics);
    for (size_t i = 0; i < n_topics; i++) {
        r->topics[i].name = ns_strdup(topics[i]);
        r->topics[i].read_queues = 8;
        r->topics[i].write_queues = 8;
        r->topics[i].perm = NS_PERM_READ | NS_PERM_WRITE;
    }
    r->n_topics = n_topics;
}

/* UNREGISTER_BROKERS (name given) or EXPIRE_BROKERS (name NULL) of one. */
static inline void fx_cmd_broker_ref(struct ns_command *c,
                                     enum ns_command_type type,
                                     const char *cluster, const char *addr,
                                     const char *name, int64_t id)
{
    ns_command_init(c, type);
    c->leader_time_ms = FX_T0;
    c->u.brokers.refs = ns_calloc(1, sizeof *c->u.brokers.refs);
    assert_non_null(c->u.brokers.refs);
    c->u.brokers.refs[0].cluster = ns_strdup(cluster);
    c->u.brokers.refs[0].broker_addr = ns_strdup(addr);
    c->u.brokers.refs[0].broker_name = name != NULL ? ns_strdup(name) : NULL;
    c->u.brokers.refs[0].broker_id = id;
    c->u.brokers.n = 1;
}

/* KV_PUT (value non-NULL) or KV_DELETE (value NULL). */
static inline void fx_cmd_kv(struct ns_command *c, const char *ns,
                             const char *key, const char *value)
{
    ns_command_init(c, value != NULL ? NS_CMD_KV_PUT : NS_CMD_KV_DELETE);
    c->leader_time_ms = FX_T0;
    c->u.kv.ns = ns_strdup(ns);
    c->u.kv.key = ns_strdup(key);
    c->u.kv.value = value != NULL ? ns_strdup(value) : NULL;
}

static inline void fx_cmd_perm(struct ns_command *c, bool wipe,
                               const char *broker_name)
{
    ns_command_init(c, wipe ? NS_CMD_WIPE_WRITE_PERM : NS_CMD_ADD_WRITE_PERM);
    c->leader_time_ms = FX_T0;
    c->u.perm.broker_name = ns_strdup(broker_name);
}

static inline void fx_cmd_delete_topic(struct ns_command *c, const char *topic,
                                       const char *cluster)
{
    ns_command_init(c, NS_CMD_DELETE_TOPIC);
    c->leader_time_ms = FX_T0;
    c->u.topic_delete.topic = ns_strdup(topic);
    c->u.topic_delete.cluster = cluster != NULL ? ns_strdup(cluster) : NULL;
}

static inline void fx_cmd_register_topic(struct ns_command *c,
                                         const char *topic,
                                         const char *broker_name,
                                         int32_t queues)
{
    ns_command_init(c, NS_CMD_REGISTER_TOPIC);
    c->leader_time_ms = FX_T0;
    c->u.topic_register.topic = ns_strdup(topic);
    c->u.topic_register.qds = ns_calloc(1, sizeof *c->u.topic_register.qds);
    assert_non_null(c->u.topic_register.qds);
    c->u.topic_register.qds[0].broker_name = ns_strdup(broker_name);
    c->u.topic_register.qds[0].read_queues = queues;
    c->u.topic_register.qds[0].write_queues = queues;
    c->u.topic_register.qds[0].perm = NS_PERM_READ | NS_PERM_WRITE;
    c->u.topic_register.n = 1;
}

static inline void fx_cmd_update_config(struct ns_command *c, const char *key,
                                        const char *value)
{
    ns_command_init(c, NS_CMD_UPDATE_CONFIG);
    c->leader_time_ms = FX_T0;
    ns_props_init(&c->u.config);
    assert_int_equal(ns_props_set(&c->u.config, key, value), 0);
}

/* --- seeded randomness (test code: the seed is printed, RAFTNS_SEED replays)
 */

static inline uint64_t fx_seed(const char *test)
{
    const char *env = getenv("RAFTNS_SEED");
    uint64_t seed;
    if (env != NULL && *env != '\0') {
        seed = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }
    if (seed == 0) {
        seed = 1;
    }
    printf("%s: RAFTNS_SEED=%llu\n", test, (unsigned long long)seed);
    fflush(stdout);
    return seed;
}

static inline uint64_t fx_rand(uint64_t *st)
{
    uint64_t v = *st; /* xorshift64* */
    v ^= v >> 12;
    v ^= v << 25;
    v ^= v >> 27;
    *st = v;
    return v * 2685821657736338717ull;
}

static inline unsigned fx_rand_below(uint64_t *st, unsigned n)
{
    return (unsigned)(fx_rand(st) % n);
}

#define FX_N_BROKERS 6
#define FX_N_TOPICS 12

static inline void fx_name(char *out, size_t size, const char *prefix,
                           unsigned i)
{
    snprintf(out, size, "%s%u", prefix, i);
}

/* One random command over a small universe of 6 brokers in 2 clusters, 12
 * topics, 10 KV keys and 2 settings. */
static inline void fx_cmd_random(struct ns_command *c, uint64_t *st)
{
    char name[32], addr[32], topic[32], key[32], val[32];
    unsigned b = fx_rand_below(st, FX_N_BROKERS);
    const char *cluster = b % 2 == 0 ? "DefaultCluster" : "OtherCluster";
    fx_name(name, sizeof name, "broker-", b);
    snprintf(addr, sizeof addr, "10.0.0.%u:10911", b + 1);
    fx_name(topic, sizeof topic, "Topic", fx_rand_below(st, FX_N_TOPICS));
    unsigned kind = fx_rand_below(st, 100);
    if (kind < 35) {
        const char *ts[3];
        char t1[32], t2[32];
        fx_name(t1, sizeof t1, "Topic", fx_rand_below(st, FX_N_TOPICS));
        fx_name(t2, sizeof t2, "Topic", fx_rand_below(st, FX_N_TOPICS));
        ts[0] = topic;
        ts[1] = t1;
        ts[2] = t2;
        fx_cmd_register(c, cluster, name, 0, addr, fx_rand_below(st, 1000), ts,
                        1 + fx_rand_below(st, 3));
    } else if (kind < 42) {
        fx_cmd_broker_ref(c, NS_CMD_UNREGISTER_BROKERS, cluster, addr, name, 0);
    } else if (kind < 48) {
        fx_cmd_broker_ref(c, NS_CMD_EXPIRE_BROKERS, cluster, addr, NULL, 0);
    } else if (kind < 63) {
        fx_name(key, sizeof key, "key", fx_rand_below(st, 10));
        fx_name(val, sizeof val, "v", fx_rand_below(st, 1000));
        fx_cmd_kv(c, "ns", key, val);
    } else if (kind < 70) {
        fx_name(key, sizeof key, "key", fx_rand_below(st, 10));
        fx_cmd_kv(c, "ns", key, NULL);
    } else if (kind < 75) {
        fx_cmd_perm(c, true, name);
    } else if (kind < 80) {
        fx_cmd_perm(c, false, name);
    } else if (kind < 85) {
        fx_cmd_delete_topic(c, topic, fx_rand_below(st, 2) ? cluster : NULL);
    } else if (kind < 95) {
        fx_cmd_register_topic(c, topic, name,
                              1 + (int32_t)fx_rand_below(st, 16));
    } else {
        fx_cmd_update_config(
            c, fx_rand_below(st, 2) ? "orderMessageEnable" : "enableTopicList",
            fx_rand_below(st, 2) ? "true" : "false");
    }
}

/* Route body of topic on server i: 0 and the JSON in out, or NS_ENOTFOUND. */
static inline int fx_route(struct fx *x, unsigned i, const char *topic,
                           struct ns_buf *out)
{
    struct ns_route_query q = {0};
    q.topic = topic;
    q.flavour = NS_JSON_STANDARD;
    ns_buf_init(out);
    return ns_route_encode_topic_route(x->s[i].state.route, &q, out);
}

/* --- a pipelined client stream with resubmission --- */

/* Submits cmds[0..n) to whoever is the ready leader, at most window in flight,
 * lowest unacknowledged index first; a command whose apply fails
 * (RAFT_LEADERSHIPLOST: outcome unknown, commands are idempotent) is submitted
 * again. on_step runs before every fixture step (fault injection). */
struct fx_stream {
    struct ns_command *cmds;
    struct fx_req *reqs;
    bool *acked;
    size_t n;
    unsigned window;
    size_t n_acked, n_lost, n_submits;
    void (*on_step)(struct fx *x, struct fx_stream *s);
};

static inline size_t fx_stream_in_flight(const struct fx_stream *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        k += s->reqs[i].pending ? 1 : 0;
    }
    return k;
}

static inline void fx_stream_collect(struct fx_stream *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!s->reqs[i].done || s->acked[i]) {
            continue;
        }
        if (s->reqs[i].status == 0) {
            s->acked[i] = true;
            s->n_acked++;
        } else {
            s->reqs[i].done = false; /* to be submitted again */
            s->n_lost++;
        }
    }
}

static inline void fx_stream_run(struct fx *x, struct fx_stream *s,
                                 unsigned max_ms)
{
    raft_time end = raft_fixture_time(&x->f) + max_ms;
    for (;;) {
        fx_stream_collect(s);
        size_t in_flight = fx_stream_in_flight(s);
        if (s->n_acked == s->n && in_flight == 0) {
            break;
        }
        assert_true(raft_fixture_time(&x->f) < end);
        if (s->on_step != NULL) {
            s->on_step(x, s);
        }
        unsigned l = fx_ready_leader(x);
        if (l < x->n && in_flight < s->window) {
            size_t i = 0;
            while (i < s->n && (s->acked[i] || s->reqs[i].pending)) {
                i++;
            }
            if (i < s->n && fx_submit(x, l, &s->cmds[i], &s->reqs[i]) == 0) {
                s->n_submits++;
                continue;
            }
        }
        raft_fixture_step(&x->f);
    }
}

/* Partitions server i from every other one (both directions), or heals it. */
static inline void fx_isolate(struct fx *x, unsigned i, bool isolate)
{
    for (unsigned j = 0; j < x->n; j++) {
        if (j == i) {
            continue;
        }
        if (isolate) {
            raft_fixture_disconnect(&x->f, i, j);
            raft_fixture_disconnect(&x->f, j, i);
        } else {
            raft_fixture_reconnect(&x->f, i, j);
            raft_fixture_reconnect(&x->f, j, i);
        }
    }
}

/* Asserts the snapshot encoding of the reference state equals enc. */
static inline void fx_assert_equals_state(const struct ns_buf *enc,
                                          const struct ns_state *ref)
{
    struct ns_buf want;
    ns_buf_init(&want);
    assert_int_equal(ns_snapshot_encode(ref, &want), 0);
    assert_int_equal(enc->len, want.len);
    assert_memory_equal(enc->data, want.data, want.len);
    ns_buf_close(&want);
}

#endif
