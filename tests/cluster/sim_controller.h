/* The brokers and checks of the controller's simulated-cluster tests
 * (test_sim_controller.c, test_sim_controller_node.c): brokers as sink
 * clients that speak the controller codes and heartbeat every node, calls
 * that wait for their reply, and every node's controller table as text.
 * Header-only; include after sim.h. */
#ifndef RAFTNS_TEST_SIM_CONTROLLER_H
#define RAFTNS_TEST_SIM_CONTROLLER_H

#include "controller/controller.h"
#include "raftns/controller.h"

/* Short scans so that a silent master is judged within seconds. */
#define CTL_SETTINGS                                                           \
    "enableControllerInNamesrv=true\n"                                         \
    "scanNotActiveBrokerInterval=500\n"                                        \
    "scanInactiveMasterInterval=500\n"
#define BEAT_TIMEOUT_MS 6000
#define WAIT_MS 10000

struct broker {
    const char *name;
    int64_t id;
    char addr[32];
    bool beating;
    /* its connection to each node: heartbeats and requests */
    struct sim_client *conn[SIM_MAX];
};

/* Each node's operator connection (call). */
static struct sim_client *admin[SIM_MAX];

static inline int setup_n(void **state, unsigned n)
{
    memset(admin, 0, sizeof admin);
    struct sim_opts o = {.settings = CTL_SETTINGS};
    struct sim *s = sim_fixture_new(n, n, &o);
    sim_settle(s);
    *state = s;
    return 0;
}

static inline int setup3(void **state)
{
    return setup_n(state, 3);
}

static inline int setup5(void **state)
{
    return setup_n(state, 5);
}

static inline int teardown(void **state)
{
    return sim_fixture_teardown(state);
}

static inline struct ns_controller *ctl_of(struct sim *s, unsigned i)
{
    return &s->nodes[i].server->controller;
}

/* Frees the replies a client kept (each test's calls wait one at a time). */
static inline void forget_replies(struct sim_client *c)
{
    for (unsigned i = 0; i < c->n_replies; i++) {
        free(c->replies[i].frame);
    }
    c->n_replies = 0;
}

/* A controller request as a 5.x broker or mqadmin sends it. */
static inline void ctl_request(struct ns_cmd *req, int32_t code)
{
    sim_request(req, code);
    req->version = 475; /* 5.3.3's */
}

static inline void ext(struct ns_cmd *req, const char *k, const char *v)
{
    assert_int_equal(ns_cmd_ext_set(req, k, v), 0);
}

static inline void ext_long(struct ns_cmd *req, const char *k, int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    ext(req, k, t);
}

/* Sends req over c and waits for its reply (into out; ns_cmd_close it). */
static inline void call_on(struct sim_client *c, struct ns_cmd *req,
                           struct ns_cmd *out)
{
    forget_replies(c);
    int32_t op = sim_client_send(c, req);
    ns_cmd_close(req);
    struct ns_cmd r;
    struct sim_reply *got = sim_wait_reply(c, op, WAIT_MS, &r);
    if (got == NULL) {
        fail_msg("no reply to %d on node %u", (int)op, c->node);
    }
    /* copy: the stored frame goes with the next call */
    assert_int_equal(ns_cmd_copy(&r, out), 0);
    ns_cmd_close(&r);
}

/* Over node i's operator connection (mqadmin's). */
static inline void call(struct sim *s, unsigned i, struct ns_cmd *req,
                        struct ns_cmd *out)
{
    if (admin[i] == NULL) {
        admin[i] = sim_client(s, i);
    }
    call_on(admin[i], req, out);
}

static inline bool body_has(const struct ns_cmd *r, const char *want)
{
    size_t n = strlen(want);
    for (size_t off = 0; r->body != NULL && off + n <= r->body_len; off++) {
        if (memcmp(r->body + off, want, n) == 0) {
            return true;
        }
    }
    return false;
}

static inline void expect(const struct ns_cmd *r, int32_t code,
                          const char *remark)
{
    if (r->code != code) {
        fail_msg("code %d (%s), want %d", (int)r->code,
                 r->remark ? r->remark : "", (int)code);
    }
    if (remark != NULL) {
        assert_non_null(r->remark);
        assert_string_equal(r->remark, remark);
    }
}

static inline int64_t ext_int(const struct ns_cmd *r, const char *k)
{
    int64_t v = 0;
    if (!ns_cmd_ext_int64(r, k, &v)) {
        fail_msg("reply has no %s", k);
    }
    return v;
}

static inline bool body_is(const struct ns_cmd *r, const char *want)
{
    return r->body_len == strlen(want) &&
           memcmp(r->body, want, r->body_len) == 0;
}

#define assert_body(r, want)                                                   \
    do {                                                                       \
        if (!body_is((r), (want))) {                                           \
            fail_msg("body %.*s, want %s", (int)(r)->body_len,                 \
                     (const char *)(r)->body, (want));                         \
        }                                                                      \
    } while (0)

/* --- brokers --- */

static inline void broker_init(struct sim *s, struct broker *b,
                               const char *name, int64_t id)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    b->id = id;
    snprintf(b->addr, sizeof b->addr, "10.1.%u.%u:30911",
             name[strlen(name) - 1] == 'a' ? 1u : 2u, (unsigned)id);
    for (unsigned i = 0; i < s->n; i++) {
        b->conn[i] = sim_client(s, i);
    }
}

/* One 904 (controller meaning) to every node up, oneway as brokers send it. */
static inline void beat(struct sim *s, struct broker *b)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (!s->nodes[i].up || b->conn[i]->conn == NULL) {
            continue;
        }
        struct ns_cmd req;
        ctl_request(&req, NS_CODE_BROKER_HEARTBEAT);
        ext(&req, "clusterName", "c1");
        ext(&req, "brokerName", b->name);
        ext(&req, "brokerAddr", b->addr);
        ext_long(&req, "brokerId", b->id);
        ext(&req, "epoch", "0");
        ext_long(&req, "maxOffset", 1000 + b->id);
        ext_long(&req, "heartbeatTimeoutMills", BEAT_TIMEOUT_MS);
        req.flag = NS_FLAG_ONEWAY;
        sim_client_send(b->conn[i], &req);
        ns_cmd_close(&req);
    }
    b->beating = true;
}

/* The broker's process dies: every connection of it closes. */
static inline void broker_close(struct sim *s, struct broker *b)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].up && b->conn[i]->conn != NULL) {
            ns_conn_close(b->conn[i]->conn, "broker died");
        }
    }
    b->beating = false;
}

/* Runs ms of virtual time; the beating brokers beat every second. Stops
 * early when pred (may be NULL) holds; returns pred's value. */
static inline bool run_beating(struct sim *s, struct broker **bs, size_t n,
                               uint64_t ms, bool (*pred)(struct sim *, void *),
                               void *arg)
{
    uint64_t end = sim_now(s) + ms;
    while (sim_now(s) < end) {
        for (size_t k = 0; k < n; k++) {
            if (bs[k]->beating) {
                beat(s, bs[k]);
            }
        }
        uint64_t until = sim_now(s) + 1000 < end ? sim_now(s) + 1000 : end;
        if (pred != NULL && sim_run_until(s, pred, arg, until - sim_now(s))) {
            return true;
        }
        if (pred == NULL) {
            sim_run_for(s, until - sim_now(s));
        }
    }
    return pred != NULL && pred(s, arg);
}

static inline void apply_id(struct sim *s, unsigned l, const struct broker *b,
                            const char *check, int32_t code)
{
    (void)s;
    struct ns_cmd req, r;
    ctl_request(&req, NS_CODE_CONTROLLER_APPLY_BROKER_ID);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", b->name);
    ext_long(&req, "appliedBrokerId", b->id);
    ext(&req, "registerCheckCode", check);
    call_on(b->conn[l], &req, &r);
    expect(&r, code, NULL);
    assert_string_equal(ns_cmd_ext_find(&r, "brokerName"), b->name);
    ns_cmd_close(&r);
}

static inline void register_broker(struct sim *s, unsigned l,
                                   const struct broker *b, struct ns_cmd *out)
{
    (void)s;
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_REGISTER_BROKER);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", b->name);
    ext(&req, "brokerAddress", b->addr);
    ext_long(&req, "brokerId", b->id);
    call_on(b->conn[l], &req, out);
}

/* What a 5.x broker does at start-up (docs/controller.md §7): next id,
 * apply it, register, heartbeat. */
static inline void admit(struct sim *s, unsigned l, struct broker *b)
{
    struct ns_cmd req, r;
    ctl_request(&req, NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", b->name);
    call_on(b->conn[l], &req, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "nextBrokerId"), b->id);
    ns_cmd_close(&r);
    char check[64];
    snprintf(check, sizeof check, "%s;1700000000000", b->addr);
    apply_id(s, l, b, check, 0);
    register_broker(s, l, b, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    beat(s, b);
}

/* 1002 as a broker (designate false, its own id) or mqadmin (true). */
static inline void elect(struct sim *s, unsigned l, const char *name,
                         int64_t id, bool designate, struct ns_cmd *out)
{
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_ELECT_MASTER);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", name);
    ext_long(&req, "brokerId", id);
    ext(&req, "designateElect", designate ? "true" : "false");
    call(s, l, &req, out);
}

/* 1001 from the master's view: master id and epoch, the set and its epoch. */
static inline void alter(struct sim *s, unsigned l, const char *name,
                         int64_t master, int32_t master_epoch, const char *set,
                         int32_t set_epoch, struct ns_cmd *out)
{
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET);
    ext(&req, "brokerName", name);
    ext_long(&req, "masterBrokerId", master);
    ext_long(&req, "masterEpoch", master_epoch);
    char body[128];
    snprintf(body, sizeof body,
             "{\"syncStateSet\":[%s],\"syncStateSetEpoch\":%d}", set,
             (int)set_epoch);
    req.body = (const uint8_t *)body;
    req.body_len = strlen(body);
    call(s, l, &req, out);
}

/* --- every node's table --- */

static inline const struct ns_ctl_group *group_on(struct sim *s, unsigned i,
                                                  const char *name)
{
    return ns_ctl_find(&s->nodes[i].state.ctl, name);
}

/* Node i's view of the group as text: "m<id> e<epoch> s[<ids>] se<epoch>
 * ids[<ids>]" ("none" when unknown; "m-" when it has no master). */
static inline void describe(struct sim *s, unsigned i, const char *name,
                            char *out, size_t size)
{
    const struct ns_ctl_group *g = group_on(s, i, name);
    if (g == NULL) {
        snprintf(out, size, "none");
        return;
    }
    size_t off = 0;
    if (g->has_master) {
        off += (size_t)snprintf(out + off, size - off, "m%lld",
                                (long long)g->master_id);
    } else {
        off += (size_t)snprintf(out + off, size - off, "m-");
    }
    off += (size_t)snprintf(out + off, size - off, " e%d s[", g->master_epoch);
    for (size_t k = 0; k < g->n_sync; k++) {
        off += (size_t)snprintf(out + off, size - off, "%s%lld", k ? "," : "",
                                (long long)g->sync[k]);
    }
    off +=
        (size_t)snprintf(out + off, size - off, "] se%d ids[", g->sync_epoch);
    for (size_t k = 0; k < g->n_members; k++) {
        off += (size_t)snprintf(out + off, size - off, "%s%lld", k ? "," : "",
                                (long long)g->members[k].id);
    }
    snprintf(out + off, size - off, "]");
}

/* Node i shows the group as text now: a write's reply leaves only after the
 * leader applied its event (docs/controller.md §5.3). */
static inline void assert_now_on(struct sim *s, unsigned i, const char *name,
                                 const char *text)
{
    char got[256];
    describe(s, i, name, got, sizeof got);
    if (strcmp(got, text) != 0) {
        fail_msg("node %u: %s is %s, want %s", i, name, got, text);
    }
}

struct want_group {
    const char *name, *text;
};

static inline bool pred_group(struct sim *s, void *arg)
{
    const struct want_group *w = arg;
    for (unsigned i = 0; i < s->n; i++) {
        char got[256];
        if (!s->nodes[i].up) {
            continue;
        }
        describe(s, i, w->name, got, sizeof got);
        if (strcmp(got, w->text) != 0) {
            return false;
        }
    }
    return true;
}

/* Every node up shows the group as text (after at most WAIT_MS). */
static inline void assert_group(struct sim *s, const char *name,
                                const char *text)
{
    struct want_group w = {name, text};
    if (!sim_run_until(s, pred_group, &w, WAIT_MS)) {
        for (unsigned i = 0; i < s->n; i++) {
            char got[256];
            describe(s, i, name, got, sizeof got);
            print_message("node %u: %s %s\n", i, name, got);
        }
        fail_msg("%s is not \"%s\" on every node", name, text);
    }
}

/* Every node up holds byte-identical controller tables. */
static inline void assert_tables_identical(struct sim *s)
{
    struct ns_buf first;
    ns_buf_init(&first);
    bool have = false;
    for (unsigned i = 0; i < s->n; i++) {
        if (!s->nodes[i].up) {
            continue;
        }
        struct ns_buf b;
        ns_buf_init(&b);
        ns_ctl_encode_state(&s->nodes[i].state.ctl, &b);
        if (!have) {
            assert_int_equal(ns_buf_append(&first, b.data, b.len), 0);
            have = true;
        } else if (b.len != first.len ||
                   memcmp(b.data, first.data, b.len) != 0) {
            fail_msg("node %u's controller table differs", i);
        }
        ns_buf_close(&b);
    }
    ns_buf_close(&first);
}

/* The 1008 frames sent to addr, the last one decoded into out (NULL: only
 * count). */
static inline unsigned notified(struct sim *s, const char *addr,
                                struct ns_cmd *out)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->n_sent; i++) {
        struct ns_cmd c;
        assert_int_equal(ns_cmd_decode(s->sent[i].frame, s->sent[i].len, &c),
                         0);
        if (strcmp(s->sent[i].addr, addr) == 0 &&
            c.code == NS_CODE_NOTIFY_BROKER_ROLE_CHANGED) {
            n++;
            if (out != NULL) {
                if (n > 1) {
                    ns_cmd_close(out);
                }
                assert_int_equal(ns_cmd_copy(&c, out), 0);
            }
        }
        ns_cmd_close(&c);
    }
    return n;
}

/* broker-a with ids 1..n admitted through the leader l, heartbeating. */
static inline unsigned group_of(struct sim *s, struct broker *bs, unsigned n)
{
    unsigned l = (unsigned)sim_leader(s);
    for (unsigned k = 0; k < n; k++) {
        broker_init(s, &bs[k], "broker-a", (int64_t)k + 1);
        admit(s, l, &bs[k]);
    }
    return l;
}

/* The group of n brokers with master 1 and the SyncStateSet {1..n}. */
static inline unsigned group_with_master(struct sim *s, struct broker *bs,
                                         unsigned n)
{
    unsigned l = group_of(s, bs, n);
    struct ns_cmd r;
    elect(s, l, "broker-a", 1, false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 1);
    assert_int_equal(ext_int(&r, "masterEpoch"), 1);
    ns_cmd_close(&r);
    char set[32] = "1";
    for (unsigned k = 2; k <= n; k++) {
        size_t len = strlen(set);
        snprintf(set + len, sizeof set - len, ",%u", k);
    }
    if (n > 1) {
        alter(s, l, "broker-a", 1, 1, set, 1, &r);
        expect(&r, 0, NULL);
        assert_int_equal(ext_int(&r, "newSyncStateSetEpoch"), 2);
        ns_cmd_close(&r);
    }
    return l;
}

struct want_master {
    const char *name;
    int64_t id;
};

static inline bool pred_master(struct sim *s, void *arg)
{
    const struct want_master *w = arg;
    for (unsigned i = 0; i < s->n; i++) {
        const struct ns_ctl_group *g = group_on(s, i, w->name);
        if (s->nodes[i].up &&
            (g == NULL || !g->has_master || g->master_id != w->id)) {
            return false;
        }
    }
    return true;
}

#endif
