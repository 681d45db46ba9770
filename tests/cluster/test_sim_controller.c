/* The RocketMQ 5 controller over the simulated cluster (sim.h): full nodes
 * with enableControllerInNamesrv on, 3 and 5 of them, virtual time. Brokers
 * are sink clients that speak the controller codes (docs/controller.md §3):
 * they apply for ids, register, heartbeat every node (904) and ask the
 * leader; the 1008 the leader sends to a broker's address is kept by the
 * in-memory network. Every test asserts the replies and every node's
 * controller table: admission and registration, an election when a master's
 * heartbeats stop and at once when its connections close, fencing by epoch,
 * SyncStateSet changes, elect by admin, clean broker data, a follower's and a
 * not-yet-ready leader's "not leader", metadata naming the leader, and one
 * table on every node after a raft leader failover. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#include <cJSON.h>

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

static int setup_n(void **state, unsigned n)
{
    memset(admin, 0, sizeof admin);
    struct sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    struct sim_opts o = {.settings = CTL_SETTINGS};
    sim_setup_with(s, n, n, &o);
    sim_settle(s);
    *state = s;
    return 0;
}

static int setup3(void **state)
{
    return setup_n(state, 3);
}

static int setup5(void **state)
{
    return setup_n(state, 5);
}

static int teardown(void **state)
{
    struct sim *s = *state;
    sim_teardown(s);
    free(s);
    return 0;
}

static struct ns_controller *ctl_of(struct sim *s, unsigned i)
{
    return &s->nodes[i].server->controller;
}

/* Frees the replies a client kept (each test's calls wait one at a time). */
static void forget_replies(struct sim_client *c)
{
    for (unsigned i = 0; i < c->n_replies; i++) {
        free(c->replies[i].frame);
    }
    c->n_replies = 0;
}

/* A controller request as a 5.x broker or mqadmin sends it. */
static void ctl_request(struct ns_cmd *req, int32_t code)
{
    sim_request(req, code);
    req->version = 475; /* 5.3.3's */
}

static void ext(struct ns_cmd *req, const char *k, const char *v)
{
    assert_int_equal(ns_cmd_ext_set(req, k, v), 0);
}

static void ext_long(struct ns_cmd *req, const char *k, int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    ext(req, k, t);
}

/* Sends req over c and waits for its reply (into out; ns_cmd_close it). */
static void call_on(struct sim_client *c, struct ns_cmd *req,
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
static void call(struct sim *s, unsigned i, struct ns_cmd *req,
                 struct ns_cmd *out)
{
    if (admin[i] == NULL) {
        admin[i] = sim_client(s, i);
    }
    call_on(admin[i], req, out);
}

static bool body_has(const struct ns_cmd *r, const char *want)
{
    size_t n = strlen(want);
    for (size_t off = 0; r->body != NULL && off + n <= r->body_len; off++) {
        if (memcmp(r->body + off, want, n) == 0) {
            return true;
        }
    }
    return false;
}

static void expect(const struct ns_cmd *r, int32_t code, const char *remark)
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

static int64_t ext_int(const struct ns_cmd *r, const char *k)
{
    int64_t v = 0;
    if (!ns_cmd_ext_int64(r, k, &v)) {
        fail_msg("reply has no %s", k);
    }
    return v;
}

static bool body_is(const struct ns_cmd *r, const char *want)
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

static void broker_init(struct sim *s, struct broker *b, const char *name,
                        int64_t id)
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
static void beat(struct sim *s, struct broker *b)
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
static void broker_close(struct sim *s, struct broker *b)
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
static bool run_beating(struct sim *s, struct broker **bs, size_t n,
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

static void apply_id(struct sim *s, unsigned l, const struct broker *b,
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

static void register_broker(struct sim *s, unsigned l, const struct broker *b,
                            struct ns_cmd *out)
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
static void admit(struct sim *s, unsigned l, struct broker *b)
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
static void elect(struct sim *s, unsigned l, const char *name, int64_t id,
                  bool designate, struct ns_cmd *out)
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
static void alter(struct sim *s, unsigned l, const char *name, int64_t master,
                  int32_t master_epoch, const char *set, int32_t set_epoch,
                  struct ns_cmd *out)
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

static const struct ns_ctl_group *group_on(struct sim *s, unsigned i,
                                           const char *name)
{
    return ns_ctl_find(&s->nodes[i].state.ctl, name);
}

/* Node i's view of the group as text: "m<id> e<epoch> s[<ids>] se<epoch>
 * ids[<ids>]" ("none" when unknown; "m-" when it has no master). */
static void describe(struct sim *s, unsigned i, const char *name, char *out,
                     size_t size)
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
static void assert_now_on(struct sim *s, unsigned i, const char *name,
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

static bool pred_group(struct sim *s, void *arg)
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
static void assert_group(struct sim *s, const char *name, const char *text)
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
static void assert_tables_identical(struct sim *s)
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
static unsigned notified(struct sim *s, const char *addr, struct ns_cmd *out)
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
static unsigned group_of(struct sim *s, struct broker *bs, unsigned n)
{
    unsigned l = (unsigned)sim_leader(s);
    for (unsigned k = 0; k < n; k++) {
        broker_init(s, &bs[k], "broker-a", (int64_t)k + 1);
        admit(s, l, &bs[k]);
    }
    return l;
}

/* The group of n brokers with master 1 and the SyncStateSet {1..n}. */
static unsigned group_with_master(struct sim *s, struct broker *bs, unsigned n)
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

/* --- tests --- */

/* Admission (1012, 1013), registration (1003), heartbeats (904) and the first
 * election: the replies carry Java's fields and remarks, every node holds the
 * same group, and the leader tells both brokers (1008). */
static void test_register_heartbeat_and_first_election(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_of(s, b, 2);
    struct ns_cmd r;
    /* a second apply of a taken id with another check code */
    apply_id(s, l, &b[1], "10.9.9.9:1;5", NS_CODE_CONTROLLER_BROKER_ID_INVALID);
    /* the same check code again: an idempotent retry */
    char check[64];
    snprintf(check, sizeof check, "%s;1700000000000", b[1].addr);
    apply_id(s, l, &b[1], check, 0);
    struct broker z;
    broker_init(s, &z, "broker-z", 3);
    apply_id(s, l, &z, "x;1", NS_CODE_CONTROLLER_BROKER_ID_INVALID);
    /* register: no master yet, so no master fields; the empty set */
    register_broker(s, l, &b[0], &r);
    expect(&r, 0, NULL);
    assert_null(ns_cmd_ext_find(&r, "masterBrokerId"));
    assert_body(&r, "{\"syncStateSet\":[],\"syncStateSetEpoch\":0}");
    ns_cmd_close(&r);
    struct broker ghost;
    broker_init(s, &ghost, "broker-a", 9);
    register_broker(s, l, &ghost, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
           "BrokerId: 9 hasn't been registered in broker-set: broker-a");
    ns_cmd_close(&r);
    /* a two-way 904 is answered on any node; without an id it is refused */
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_BROKER_HEARTBEAT);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", "broker-a");
    ext(&req, "brokerAddr", b[0].addr);
    call(s, sim_follower(s, l, 0), &req, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_REQUEST,
           "Heart beat with empty brokerId");
    ns_cmd_close(&r);
    sim_run_for(s, 50);
    for (unsigned i = 0; i < s->n; i++) {
        const struct ns_ctl_live *lv = &ctl_of(s, i)->live;
        assert_non_null(ns_ctl_live_find(lv, "c1", "broker-a", 1));
        assert_non_null(ns_ctl_live_find(lv, "c1", "broker-a", 2));
    }
    assert_group(s, "broker-a", "m- e0 s[] se0 ids[1,2]");
    /* the first election takes the requester (a broker's 1002) */
    elect(s, l, "broker-a", 2, false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&r, "masterEpoch"), 1);
    assert_int_equal(ext_int(&r, "syncStateSetEpoch"), 1);
    assert_string_equal(ns_cmd_ext_find(&r, "masterAddress"), b[1].addr);
    char want[256];
    snprintf(want, sizeof want,
             "{\"brokerMemberGroup\":{\"brokerAddrs\":{1:\"%s\",2:\"%s\"},"
             "\"brokerName\":\"broker-a\",\"cluster\":\"c1\"},"
             "\"syncStateSet\":[2]}",
             b[0].addr, b[1].addr);
    assert_body(&r, want);
    ns_cmd_close(&r);
    assert_now_on(s, l, "broker-a", "m2 e1 s[2] se1 ids[1,2]");
    assert_group(s, "broker-a", "m2 e1 s[2] se1 ids[1,2]");
    assert_tables_identical(s);
    for (unsigned k = 0; k < 2; k++) {
        struct ns_cmd n;
        assert_int_equal(notified(s, b[k].addr, &n), 1);
        assert_int_equal(ext_int(&n, "masterBrokerId"), 2);
        assert_int_equal(ext_int(&n, "masterEpoch"), 1);
        assert_string_equal(ns_cmd_ext_find(&n, "masterAddress"), b[1].addr);
        ns_cmd_close(&n);
    }
    /* now registration names the live master */
    register_broker(s, l, &b[0], &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_body(&r, "{\"syncStateSet\":[2],\"syncStateSetEpoch\":1}");
    ns_cmd_close(&r);
    /* 1004 reads the same */
    ctl_request(&req, NS_CODE_CONTROLLER_GET_REPLICA_INFO);
    ext(&req, "brokerName", "broker-a");
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&r, "masterEpoch"), 1);
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_REPLICA_INFO);
    ext(&req, "brokerName", "broker-q");
    call(s, l, &req, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_METADATA_NOT_EXIST,
           "Broker metadata is not existed");
    ns_cmd_close(&r);
}

struct want_master {
    const char *name;
    int64_t id;
};

static bool pred_master(struct sim *s, void *arg)
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

/* The master stops heartbeating (its connections stay open): after its
 * heartbeat timeout the leader elects the in-sync slave and tells it. */
static void test_master_heartbeats_stop(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    group_with_master(s, b, 2);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2]");
    uint64_t t0 = sim_now(s);
    beat(s, &b[0]); /* its last */
    b[0].beating = false;
    struct broker *bs[] = {&b[0], &b[1]};
    /* not before its timeout */
    run_beating(s, bs, 2, BEAT_TIMEOUT_MS - 500, NULL, NULL);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2]");
    struct want_master w = {"broker-a", 2};
    assert_true(run_beating(s, bs, 2, 8000, pred_master, &w));
    assert_true(sim_now(s) - t0 >= BEAT_TIMEOUT_MS);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    struct ns_cmd n;
    assert_true(notified(s, b[1].addr, &n) >= 2);
    assert_int_equal(ext_int(&n, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&n, "masterEpoch"), 2);
    assert_int_equal(ext_int(&n, "syncStateSetEpoch"), 3);
    ns_cmd_close(&n);
    assert_true(ctl_of(s, (unsigned)sim_leader(s))->stats.elections >= 2);
    assert_tables_identical(s);
}

/* The master's connections close (its process was killed): the election
 * follows at once, long before any heartbeat timeout. */
static void test_master_connection_close(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    group_with_master(s, b, 3);
    assert_group(s, "broker-a", "m1 e1 s[1,2,3] se2 ids[1,2,3]");
    uint64_t t0 = sim_now(s);
    broker_close(s, &b[0]);
    struct want_master w2 = {"broker-a", 2}, w3 = {"broker-a", 3};
    /* either in-sync slave (3 has the higher offset: it wins) */
    assert_true(sim_run_until(s, pred_master, &w3, 500));
    assert_false(pred_master(s, &w2));
    assert_true(sim_now(s) - t0 < 500);
    assert_group(s, "broker-a", "m3 e2 s[3] se3 ids[1,2,3]");
    assert_int_equal(notified(s, b[0].addr, NULL), 1); /* only the first */
    assert_int_equal(notified(s, b[2].addr, NULL), 2);
    assert_tables_identical(s);
}

/* Fencing (1001): the deposed master, a stale master epoch and a stale
 * SyncStateSet epoch are refused with Java's codes and remarks and change
 * nothing; the current master's correct request is applied everywhere. */
static void test_fencing_by_epoch(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    unsigned l = group_with_master(s, b, 3);
    broker_close(s, &b[0]);
    struct want_master w = {"broker-a", 3};
    assert_true(sim_run_until(s, pred_master, &w, 2000));
    assert_group(s, "broker-a", "m3 e2 s[3] se3 ids[1,2,3]");
    uint64_t fenced = ctl_of(s, l)->stats.fenced;
    struct ns_cmd r;
    /* the old master, with its old view */
    alter(s, l, "broker-a", 1, 1, "1,2", 2, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_MASTER,
           "Rejecting alter syncStateSet request because the current leader "
           "is:{3}, not {1}");
    assert_int_equal(ext_int(&r, "newSyncStateSetEpoch"), 0);
    ns_cmd_close(&r);
    /* the new master with the old master epoch */
    alter(s, l, "broker-a", 3, 1, "2,3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_FENCED_MASTER_EPOCH,
           "Rejecting alter syncStateSet request because the current master "
           "epoch is:{2}, not {1}");
    ns_cmd_close(&r);
    /* the right master epoch, a stale set epoch */
    alter(s, l, "broker-a", 3, 2, "2,3", 2, &r);
    expect(&r, NS_CODE_CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
           "Rejecting alter syncStateSet request because the current "
           "syncStateSet epoch is:{3}, not {2}");
    ns_cmd_close(&r);
    /* an id that was never admitted, a dead member, a set without the master,
     * the unchanged set */
    alter(s, l, "broker-a", 3, 2, "3,7", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_REPLICAS,
           "Rejecting alter syncStateSet request because the replicas {7} "
           "don't exist");
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 3, 2, "1,3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_NOT_ALIVE,
           "Rejecting alter syncStateSet request because the replicas {1} "
           "don't alive");
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 3, 2, "2", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
           "Rejecting alter syncStateSet request because the newSyncStateSet "
           "don't contains origin leader {3}");
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 3, 2, "3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
           "The newSyncStateSet is equal with oldSyncStateSet, no needed to "
           "update syncStateSet");
    ns_cmd_close(&r);
    alter(s, l, "broker-q", 3, 2, "3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
           "Broker metadata is not existed");
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, l)->stats.fenced, fenced + 3);
    sim_run_for(s, 100);
    assert_group(s, "broker-a", "m3 e2 s[3] se3 ids[1,2,3]");
    /* the current master grows its set */
    alter(s, l, "broker-a", 3, 2, "2,3", 3, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "newSyncStateSetEpoch"), 4);
    assert_body(&r, "{\"syncStateSet\":[2,3],\"syncStateSetEpoch\":4}");
    ns_cmd_close(&r);
    assert_now_on(s, l, "broker-a", "m3 e2 s[2,3] se4 ids[1,2,3]");
    assert_group(s, "broker-a", "m3 e2 s[2,3] se4 ids[1,2,3]");
    assert_tables_identical(s);
}

/* A master alone in its SyncStateSet dies: with unclean election off nobody
 * else may take over (the master is cleared, its epoch raised); a slave's own
 * 1002 fails; once this node allows unclean elections (1009, local), it
 * elects the slave. */
static void test_master_alone_in_sync_set(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_with_master(s, b, 1);
    broker_init(s, &b[1], "broker-a", 2);
    admit(s, l, &b[1]);
    assert_group(s, "broker-a", "m1 e1 s[1] se1 ids[1,2]");
    broker_close(s, &b[0]);
    struct broker *bs[] = {&b[1]};
    /* the triggered election and its retries (each raises the epoch) */
    run_beating(s, bs, 1, 12000, NULL, NULL);
    const struct ns_ctl_group *g = group_on(s, l, "broker-a");
    assert_non_null(g);
    assert_false(g->has_master);
    assert_true(g->master_epoch > 1);
    int32_t epoch = g->master_epoch;
    struct ns_cmd r;
    elect(s, l, "broker-a", 2, false, &r);
    expect(&r, NS_CODE_CONTROLLER_ELECT_MASTER_FAILED,
           "Failed to elect a new master");
    ns_cmd_close(&r);
    assert_false(group_on(s, l, "broker-a")->has_master);
    /* unclean on the leader only: it decides */
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *props = "enableElectUncleanMaster=true\n";
    req.body = (const uint8_t *)props;
    req.body_len = strlen(props);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_true(ctl_of(s, l)->set.unclean);
    assert_false(ctl_of(s, sim_follower(s, l, 0))->set.unclean);
    run_beating(s, bs, 1, 100, NULL, NULL);
    elect(s, l, "broker-a", 2, false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    ns_cmd_close(&r);
    char want[64];
    snprintf(want, sizeof want, "m2 e%d s[2] se2 ids[1,2]", (int)epoch + 1);
    assert_group(s, "broker-a", want);
    assert_tables_identical(s);
}

/* mqadmin electMaster (designate): the wanted in-sync id is elected; an id
 * outside the set is refused and changes nothing; the current master again
 * is "still alive". */
static void test_elect_by_admin(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    unsigned l = group_with_master(s, b, 2);
    broker_init(s, &b[2], "broker-a", 3);
    admit(s, l, &b[2]);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2,3]");
    struct ns_cmd r;
    elect(s, sim_follower(s, l, 0), "broker-a", 2, true, &r);
    expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
           "The controller is not in leader state");
    ns_cmd_close(&r);
    elect(s, l, "broker-a", 2, true, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&r, "masterEpoch"), 2);
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2,3]");
    elect(s, l, "broker-a", 3, true, &r);
    expect(&r, NS_CODE_CONTROLLER_ELECT_MASTER_FAILED,
           "Failed to elect a new master");
    ns_cmd_close(&r);
    elect(s, l, "broker-a", 2, true, &r);
    expect(&r, NS_CODE_CONTROLLER_MASTER_STILL_EXIST,
           "The old master 2 is still alive, not need to elect new master "
           "for broker broker-a");
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    ns_cmd_close(&r);
    elect(s, l, "broker-q", 2, true, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
           "Broker hasn't been registered");
    ns_cmd_close(&r);
    sim_run_for(s, 100);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2,3]");
    assert_tables_identical(s);
    /* 1006: both lists, with liveness; unknown names are skipped */
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA);
    const char *names = "[\"broker-a\",\"broker-q\"]";
    req.body = (const uint8_t *)names;
    req.body_len = strlen(names);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    char want[1024];
    snprintf(want, sizeof want,
             "{\"replicasInfoTable\":{\"broker-a\":{\"inSyncReplicas\":["
             "{\"alive\":true,\"brokerAddress\":\"%s\",\"brokerId\":2,"
             "\"brokerName\":\"broker-a\"}],\"masterAddress\":\"%s\","
             "\"masterBrokerId\":2,\"masterEpoch\":2,\"notInSyncReplicas\":["
             "{\"alive\":true,\"brokerAddress\":\"%s\",\"brokerId\":1,"
             "\"brokerName\":\"broker-a\"},{\"alive\":true,\"brokerAddress\":"
             "\"%s\",\"brokerId\":3,\"brokerName\":\"broker-a\"}],"
             "\"syncStateSetEpoch\":3}}}",
             b[1].addr, b[1].addr, b[0].addr, b[2].addr);
    assert_body(&r, want);
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA);
    call(s, l, &req, &r);
    expect(&r, NS_CODE_SYSTEM_ERROR, "not set any response code");
    ns_cmd_close(&r);
}

static void clean(struct sim *s, unsigned l, const char *name, const char *ids,
                  bool living, struct ns_cmd *out)
{
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CLEAN_BROKER_DATA);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", name);
    if (ids != NULL) {
        ext(&req, "brokerControllerIdsToClean", ids);
    }
    ext(&req, "isCleanLivingBroker", living ? "true" : "false");
    call(s, l, &req, out);
}

/* mqadmin cleanBrokerMetadata: live brokers and a group with a master are
 * kept unless asked to clean living ones; a dead id goes from every node;
 * then the whole group. */
static void test_clean_broker_data(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    unsigned l = group_with_master(s, b, 3);
    struct ns_cmd r;
    clean(s, l, "broker-a", NULL, false, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
           "Broker broker-a is still alive, clean up failure");
    ns_cmd_close(&r);
    clean(s, l, "broker-a", "3", false, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
           "Broker [broker-a,  3] is still alive, clean up failure");
    ns_cmd_close(&r);
    clean(s, l, "broker-q", NULL, true, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
           "Broker broker-q is not existed,clean broker data failure.");
    ns_cmd_close(&r);
    sim_run_for(s, 100);
    assert_group(s, "broker-a", "m1 e1 s[1,2,3] se2 ids[1,2,3]");
    broker_close(s, &b[2]);
    sim_run_for(s, 100);
    clean(s, l, "broker-a", "3", false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(r.n_ext, 0);
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2]");
    clean(s, l, "broker-a", NULL, true, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "none");
    assert_tables_identical(s);
}

/* Every leader-only code on a follower is Java's non-leader answer (2007, no
 * extFields, nothing queued); 1005 there names the leader's controller
 * address; 904, 1009 and 1010 are served by every node. */
static void test_follower_answers_not_leader(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    unsigned f = sim_follower(s, l, 1);
    static const int32_t leader_only[] = {
        NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET,
        NS_CODE_CONTROLLER_ELECT_MASTER,
        NS_CODE_CONTROLLER_REGISTER_BROKER,
        NS_CODE_CONTROLLER_GET_REPLICA_INFO,
        NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA,
        NS_CODE_CLEAN_BROKER_DATA,
        NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID,
        NS_CODE_CONTROLLER_APPLY_BROKER_ID,
    };
    uint64_t before = ctl_of(s, f)->stats.not_leader;
    for (size_t k = 0; k < sizeof leader_only / sizeof leader_only[0]; k++) {
        struct ns_cmd req, r;
        ctl_request(&req, leader_only[k]);
        ext(&req, "brokerName", "broker-a");
        ext(&req, "clusterName", "c1");
        ext(&req, "brokerId", "1");
        ext(&req, "appliedBrokerId", "1");
        ext(&req, "registerCheckCode", "x;1");
        call(s, f, &req, &r);
        expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
               "The controller is not in leader state");
        assert_int_equal(r.n_ext, 0);
        ns_cmd_close(&r);
    }
    assert_int_equal(ctl_of(s, f)->stats.not_leader,
                     before + sizeof leader_only / sizeof leader_only[0]);
    sim_run_for(s, 200);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(s->nodes[i].state.ctl.n, 0); /* nothing applied */
    }
    char leader_id[16];
    snprintf(leader_id, sizeof leader_id, "n%llu",
             (unsigned long long)s->nodes[l].id);
    for (unsigned i = 0; i < s->n; i++) {
        struct ns_cmd req, r;
        ctl_request(&req, NS_CODE_CONTROLLER_GET_METADATA_INFO);
        call(s, i, &req, &r);
        expect(&r, 0, NULL);
        assert_string_equal(ns_cmd_ext_find(&r, "controllerLeaderAddress"),
                            s->nodes[l].client_addr);
        assert_string_equal(ns_cmd_ext_find(&r, "controllerLeaderId"),
                            leader_id);
        assert_string_equal(ns_cmd_ext_find(&r, "isLeader"),
                            i == l ? "true" : "false");
        assert_string_equal(ns_cmd_ext_find(&r, "group"),
                            "DefaultControllerGroup");
        const char *peers = ns_cmd_ext_find(&r, "peers");
        assert_non_null(peers);
        for (unsigned j = 0; j < s->n; j++) {
            char one[64];
            snprintf(one, sizeof one, "n%u:%s;", j + 1,
                     s->nodes[j].client_addr);
            assert_non_null(strstr(peers, one));
        }
        ns_cmd_close(&r);
    }
    struct ns_cmd req, r;
    ctl_request(&req, NS_CODE_GET_CONTROLLER_CONFIG);
    call(s, f, &req, &r);
    expect(&r, 0, NULL);
    assert_true(body_has(&r, "enableControllerInNamesrv=true"));
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *bad = "configStorePath=/tmp/x\n";
    req.body = (const uint8_t *)bad;
    req.body_len = strlen(bad);
    call(s, f, &req, &r);
    expect(&r, NS_CODE_NO_PERMISSION, "Can not update config in black list.");
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *ok = "scanInactiveMasterInterval=700\n";
    req.body = (const uint8_t *)ok;
    req.body_len = strlen(ok);
    call(s, f, &req, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, f)->set.scan_inactive_master_ms, 700);
    /* 319 lists the controller's settings NamesrvConfig does not have */
    ctl_request(&req, NS_CODE_GET_NAMESRV_CONFIG);
    call(s, f, &req, &r);
    expect(&r, 0, NULL);
    assert_true(body_has(&r, "scanInactiveMasterInterval=700\n"));
    assert_true(body_has(&r, "notifyBrokerRoleChanged=true\n"));
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, l)->set.scan_inactive_master_ms, 500);
}

static bool pred_raft_leader_not_ready(struct sim *s, void *arg)
{
    unsigned *out = arg;
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].up &&
            ns_node_role(s->nodes[i].node) == NS_ROLE_LEADER &&
            !ns_node_is_leader(s->nodes[i].node)) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* A new raft leader answers "not leader" until an entry of its own term was
 * applied, then serves; 1005 already says isLeader (Java's quirk). */
static void test_new_leader_not_ready(void **state)
{
    struct sim *s = *state;
    unsigned old = (unsigned)sim_leader(s);
    sim_kill(s, old);
    unsigned nl = 0;
    assert_true(sim_run_until(s, pred_raft_leader_not_ready, &nl, 30000));
    struct sim_client *c = sim_client(s, nl);
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", "broker-a");
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_METADATA_INFO);
    int32_t op_meta = sim_client_send(c, &req);
    ns_cmd_close(&req);
    /* answered in the same turn, before the barrier can have applied */
    sim_after(s);
    assert_false(ns_node_is_leader(s->nodes[nl].node));
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(c, op, 0, &r));
    expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
           "The controller is not in leader state");
    ns_cmd_close(&r);
    assert_non_null(sim_wait_reply(c, op_meta, 0, &r));
    assert_string_equal(ns_cmd_ext_find(&r, "isLeader"), "true");
    ns_cmd_close(&r);
    assert_int_equal(sim_settle(s), nl);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", "broker-a");
    call(s, nl, &req, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "nextBrokerId"), 1);
    ns_cmd_close(&r);
}

/* Two groups, then the raft leader dies together with broker-a's master:
 * the new leader elects broker-a's slave (its own heartbeat table), takes
 * further changes, and every surviving node ends with the same table. */
static void test_table_identical_after_leader_failover(void **state)
{
    struct sim *s = *state;
    struct broker a[2], b[2];
    unsigned l = group_with_master(s, a, 2);
    for (unsigned k = 0; k < 2; k++) {
        broker_init(s, &b[k], "broker-b", (int64_t)k + 1);
        admit(s, l, &b[k]);
    }
    struct ns_cmd r;
    elect(s, l, "broker-b", 1, false, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    alter(s, l, "broker-b", 1, 1, "1,2", 1, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_group(s, "broker-b", "m1 e1 s[1,2] se2 ids[1,2]");
    assert_tables_identical(s);
    struct broker *bs[] = {&a[0], &a[1], &b[0], &b[1]};
    /* the table is warm (docs/controller.md §7) */
    run_beating(s, bs, 4, 10000, NULL, NULL);
    sim_kill(s, l);
    broker_close(s, &a[0]);
    struct want_master w = {"broker-a", 2};
    assert_true(run_beating(s, bs, 4, 20000, pred_master, &w));
    unsigned nl = sim_settle(s);
    assert_true(nl != l);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    assert_true(notified(s, a[1].addr, NULL) >= 2);
    /* the new leader takes writes; fencing holds across the change */
    elect(s, nl, "broker-b", 2, true, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterEpoch"), 2);
    ns_cmd_close(&r);
    alter(s, nl, "broker-b", 1, 1, "1,2", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_MASTER, NULL);
    ns_cmd_close(&r);
    run_beating(s, bs, 4, 200, NULL, NULL);
    alter(s, nl, "broker-b", 2, 2, "1,2", 3, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_group(s, "broker-b", "m2 e2 s[1,2] se4 ids[1,2]");
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    assert_tables_identical(s);
}

/* Two writes queued on the leader, then it is cut off: the one in flight
 * fails (no quorum) with an error reply, the queued one is answered "not
 * leader" once the node stepped down; neither was applied anywhere. */
static void test_leadership_lost_with_requests_queued(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    struct sim_client *c = sim_client(s, l);
    int32_t ops[2];
    for (unsigned k = 0; k < 2; k++) {
        struct ns_cmd req;
        ctl_request(&req, NS_CODE_CONTROLLER_APPLY_BROKER_ID);
        ext(&req, "clusterName", "c1");
        ext(&req, "brokerName", k ? "broker-b" : "broker-a");
        ext(&req, "appliedBrokerId", "1");
        ext(&req, "registerCheckCode", "10.1.1.1:30911;1");
        ops[k] = sim_client_send(c, &req);
        ns_cmd_close(&req);
    }
    assert_int_equal(ctl_of(s, l)->n_queued, 2);
    sim_cut(s, l);
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(c, ops[0], 30000, &r));
    assert_true(r.code != 0);
    ns_cmd_close(&r);
    assert_non_null(sim_wait_reply(c, ops[1], 30000, &r));
    expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
           "The controller is not in leader state");
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, l)->n_queued, 0);
    sim_heal(s, l);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(s->nodes[i].state.ctl.n, 0);
    }
}

/* The controller's numbers on /status and /metrics (through the server's
 * API the observer uses) follow the table and the counters. */
static void test_status_and_metrics(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_with_master(s, b, 2);
    struct ns_cmd r;
    alter(s, l, "broker-a", 1, 0, "1", 2, &r); /* fenced */
    ns_cmd_close(&r);
    struct ns_buf out;
    ns_buf_init(&out);
    assert_true(ns_server_controller_status(s->nodes[l].server, &out));
    char want[512];
    snprintf(want, sizeof want,
             "{\"enabled\":true,\"elections\":1,\"elections_failed\":0,"
             "\"fenced\":1,\"not_leader\":0,\"notified\":2,\"heartbeats\":2,"
             "\"groups\":[{\"name\":\"broker-a\",\"master\":1,"
             "\"masterEpoch\":1,\"syncStateSetEpoch\":2,\"members\":2,"
             "\"syncStateSet\":[1,2]}]}");
    if (out.len != strlen(want) || memcmp(out.data, want, out.len) != 0) {
        fail_msg("status %.*s", (int)out.len, (const char *)out.data);
    }
    ns_buf_reset(&out);
    ns_server_controller_metrics(s->nodes[l].server, &out);
    ns_buf_put_u8(&out, 0);
    const char *m = (const char *)out.data;
    assert_non_null(strstr(m, "raftns_controller_groups 1\n"));
    assert_non_null(strstr(m, "raftns_controller_masters 1\n"));
    assert_non_null(strstr(m, "raftns_controller_fenced_total 1\n"));
    assert_non_null(
        strstr(m, "raftns_controller_master_epoch{group=\"broker-a\"} 1\n"));
    ns_buf_close(&out);
}

/* Requests a C client may get wrong: 1001 without a body is Java's
 * NullPointerException; ids as strings count; 1009 with no body or with
 * text that is not properties. */
static void test_malformed_requests(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_with_master(s, b, 2);
    struct ns_cmd req, r;
    ctl_request(&req, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET);
    ext(&req, "brokerName", "broker-a");
    ext(&req, "masterBrokerId", "1");
    ext(&req, "masterEpoch", "1");
    call(s, l, &req, &r);
    expect(&r, NS_CODE_SYSTEM_ERROR, "java.lang.NullPointerException");
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET);
    ext(&req, "brokerName", "broker-a");
    ext(&req, "masterBrokerId", "1");
    ext(&req, "masterEpoch", "1");
    const char *body = "{\"syncStateSet\":[\"1\",1],\"syncStateSetEpoch\":2}";
    req.body = (const uint8_t *)body;
    req.body_len = strlen(body);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    assert_body(&r, "{\"syncStateSet\":[1],\"syncStateSetEpoch\":3}");
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "m1 e1 s[1] se3 ids[1,2]");
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *bad = "a=\\uZZZZ\n";
    req.body = (const uint8_t *)bad;
    req.body_len = strlen(bad);
    call(s, l, &req, &r);
    expect(&r, NS_CODE_SYSTEM_ERROR, "string2Properties error");
    ns_cmd_close(&r);
}

static bool pred_listed(struct sim *s, void *arg)
{
    (void)s;
    struct sim_wait *w = arg;
    return sim_find_reply(w->c, w->opaque) != NULL;
}

/* On the shared port a 904 keeps both meanings (docs/controller.md §6): the
 * controller's heartbeat and the name server's liveness of the broker
 * registered there (BROKER_LIVENESS shows it heard just now). */
static void test_heartbeat_refreshes_route_liveness(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    struct sim_client *reg = sim_client(s, l);
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(
        reg, sim_send_register(reg, "broker-a", "10.1.1.1:30911", 0), 30000,
        &r));
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    sim_run_for(s, 3000);
    struct broker b;
    broker_init(s, &b, "broker-a", 1);
    snprintf(b.addr, sizeof b.addr, "10.1.1.1:30911");
    beat(s, &b);
    struct sim_client *c = sim_client(s, l);
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_BROKER_LIVENESS);
    struct sim_wait w = {c, sim_client_send(c, &req)};
    ns_cmd_close(&req);
    assert_true(sim_run_until(s, pred_listed, &w, 1000));
    struct sim_reply *got = sim_find_reply(c, w.opaque);
    assert_int_equal(ns_cmd_decode(got->frame, got->len, &r), 0);
    expect(&r, 0, NULL);
    cJSON *j = cJSON_ParseWithLength((const char *)r.body, r.body_len);
    assert_non_null(j);
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "brokers"), 0);
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "brokerAddr")->valuestring,
                        "10.1.1.1:30911");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e, "heardHere")));
    double ago = cJSON_GetObjectItem(e, "lastHeartbeatAgoMs")->valuedouble;
    if (!(ago >= 0 && ago < 1000)) {
        fail_msg("last heartbeat %.0f ms ago: the 904 did not touch it", ago);
    }
    cJSON_Delete(j);
    ns_cmd_close(&r);
}

static int setup3_off(void **state)
{
    struct sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    memset(admin, 0, sizeof admin);
    sim_setup(s, 3, 3);
    sim_settle(s);
    *state = s;
    return 0;
}

/* enableControllerInNamesrv off (the default): the controller codes are
 * unknown, as before the controller existed. */
static void test_controller_off(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    static const int32_t codes[] = {
        NS_CODE_CONTROLLER_GET_METADATA_INFO,
        NS_CODE_GET_CONTROLLER_CONFIG,
        NS_CODE_UPDATE_CONTROLLER_CONFIG,
        NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID,
    };
    for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        struct ns_cmd req, r;
        ctl_request(&req, codes[k]);
        call(s, l, &req, &r);
        char remark[64];
        snprintf(remark, sizeof remark, " request type %d not supported",
                 (int)codes[k]);
        expect(&r, NS_CODE_REQUEST_CODE_NOT_SUPPORTED, remark);
        ns_cmd_close(&r);
    }
    assert_false(ns_server_controller_status(s->nodes[l].server, NULL));
}

/* A client of node i on its controller port (controllerDLegerPeers). */
static struct sim_client *ctl_port_client(struct sim *s, unsigned i)
{
    struct sim_client *c = sim_client(s, i);
    ns_conn_close(c->conn, "moved to the controller port");
    sim_after(s);
    c->sink.closed = sim_client_closed;
    assert_true(s->nodes[i].server->has_ctl_net);
    assert_int_equal(ns_conn_open_sink(&s->nodes[i].server->ctl_net,
                                       "192.168.0.2:40000", &c->sink, &c->conn),
                     0);
    return c;
}

#define PEERS_SETTINGS                                                         \
    CTL_SETTINGS                                                               \
    "controllerDLegerGroup=raftns-ctl\n"                                       \
    "controllerDLegerPeers=n1-10.0.1.1:9878;n2-10.0.1.2:9878;"                 \
    "n3-10.0.1.3:9878;n4-10.0.1.4:9878;n5-10.0.1.5:9878\n"

static int setup_peers(void **state, unsigned n)
{
    struct sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    memset(admin, 0, sizeof admin);
    struct sim_opts o = {.settings = PEERS_SETTINGS};
    sim_setup_with(s, n, n, &o);
    sim_settle(s);
    *state = s;
    return 0;
}

static int setup3_peers(void **state)
{
    return setup_peers(state, 3);
}

static int setup5_peers(void **state)
{
    return setup_peers(state, 5);
}

/* With controllerDLegerPeers, as Java's embedded controller: 1005 on every
 * node names the leader's controller port and every peer's; the codes are
 * served on that port too, and a broker's connection there closing fails its
 * group over. */
static void test_controller_port(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    char leader_addr[32];
    snprintf(leader_addr, sizeof leader_addr, "10.0.1.%u:9878", l + 1);
    for (unsigned i = 0; i < s->n; i++) {
        struct ns_cmd req, r;
        ctl_request(&req, NS_CODE_CONTROLLER_GET_METADATA_INFO);
        call(s, i, &req, &r);
        expect(&r, 0, NULL);
        assert_string_equal(ns_cmd_ext_find(&r, "controllerLeaderAddress"),
                            leader_addr);
        assert_string_equal(ns_cmd_ext_find(&r, "group"), "raftns-ctl");
        assert_non_null(
            strstr(ns_cmd_ext_find(&r, "peers"), "n2:10.0.1.2:9878;"));
        ns_cmd_close(&r);
    }
    struct broker b[2];
    for (unsigned k = 0; k < 2; k++) {
        broker_init(s, &b[k], "broker-a", (int64_t)k + 1);
        for (unsigned i = 0; i < s->n; i++) {
            b[k].conn[i] = ctl_port_client(s, i);
        }
        admit(s, l, &b[k]);
    }
    struct ns_cmd r;
    elect(s, l, "broker-a", 1, false, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 1, 1, "1,2", 1, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_true(b[0].conn[l]->conn->id >= (1ull << 62));
    broker_close(s, &b[0]);
    struct want_master w = {"broker-a", 2};
    assert_true(sim_run_until(s, pred_master, &w, 500));
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    assert_tables_identical(s);
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, setup3, teardown),                   \
        cmocka_unit_test_setup_teardown(test, setup5, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_register_heartbeat_and_first_election),
        BOTH(test_master_heartbeats_stop),
        BOTH(test_master_connection_close),
        BOTH(test_fencing_by_epoch),
        BOTH(test_master_alone_in_sync_set),
        BOTH(test_elect_by_admin),
        BOTH(test_clean_broker_data),
        BOTH(test_follower_answers_not_leader),
        BOTH(test_new_leader_not_ready),
        BOTH(test_table_identical_after_leader_failover),
        BOTH(test_leadership_lost_with_requests_queued),
        BOTH(test_status_and_metrics),
        BOTH(test_malformed_requests),
        BOTH(test_heartbeat_refreshes_route_liveness),
        cmocka_unit_test_setup_teardown(test_controller_off, setup3_off,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_controller_port, setup3_peers,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_controller_port, setup5_peers,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
