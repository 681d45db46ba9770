/* Unit tests of the controller's pure parts (raft/controller*.c): every apply
 * rule of the five events (through ns_fsm_apply, as the log applies them),
 * the table's snapshot bytes (golden, written from the documented layout) and
 * snapshot version 4, the heartbeat table, the election policy, and the
 * leader's decisions for docs/controller.md §10's scenarios 1-9, 11-21 and 23
 * (the numbers below). Time is a parameter: no clock, no sleeping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/controller.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

#define NOW 1000000
#define B1 "127.0.0.1:30911"
#define B2 "127.0.0.1:30921"
#define B3 "127.0.0.1:30931"

/* One leader's world: the replicated state and this node's heartbeats. */
struct world {
    struct ns_state s;
    struct ns_ctl_live live;
    int64_t now;
    bool unclean;
};

static struct world w;

static int setup(void **state)
{
    (void)state;
    memset(&w, 0, sizeof w);
    assert_int_equal(ns_state_init(&w.s), 0);
    w.now = NOW;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ns_ctl_live_close(&w.live);
    ns_state_close(&w.s);
    return 0;
}

static struct ns_ctl_view view(void)
{
    struct ns_ctl_view v = {&w.s.ctl, &w.live, w.now, w.unclean};
    return v;
}

static enum ns_command_type cmd_type(enum ns_ctl_event_type t)
{
    switch (t) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
        return NS_CMD_CTL_ALTER_SYNC_STATE_SET;
    case NS_CTL_EV_APPLY_BROKER_ID:
        return NS_CMD_CTL_APPLY_BROKER_ID;
    case NS_CTL_EV_ELECT_MASTER:
        return NS_CMD_CTL_ELECT_MASTER;
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        return NS_CMD_CTL_CLEAN_BROKER_DATA;
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        return NS_CMD_CTL_UPDATE_BROKER_ADDRESS;
    }
    fail();
    return NS_CMD_CHECKPOINT;
}

/* Commits d's event the way the log does: encoded, decoded, applied. */
static void commit(struct ns_ctl_decision *d)
{
    if (!d->has_event) {
        return;
    }
    struct ns_command c;
    ns_command_init(&c, cmd_type(d->event_type));
    c.u.ctl = d->event;
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(&c, &b), 0);
    assert_int_equal(ns_fsm_apply_bytes(&w.s, b.data, b.len, NULL), 0);
    ns_buf_close(&b);
}

typedef int (*decide_fn)(const struct ns_ctl_view *v,
                         const struct ns_ctl_request *r,
                         struct ns_ctl_decision *d);

/* Decides r, checks the code (and remark unless NULL), commits. */
static void run(decide_fn fn, const struct ns_ctl_request *r, int32_t code,
                const char *remark, struct ns_ctl_decision *d)
{
    struct ns_ctl_view v = view();
    assert_int_equal(fn(&v, r, d), 0);
    assert_int_equal(d->code, code);
    if (remark != NULL) {
        assert_string_equal(d->remark, remark);
    }
    commit(d);
}

static void run_close(decide_fn fn, const struct ns_ctl_request *r,
                      int32_t code, const char *remark)
{
    struct ns_ctl_decision d;
    run(fn, r, code, remark, &d);
    ns_ctl_decision_close(&d);
}

static const struct ns_ctl_group *group(void)
{
    return ns_ctl_find(&w.s.ctl, "broker-a");
}

/* "admit(Bi)": 1012, 1013 with the returned id and <addr>;1000, 1003. */
static int64_t admit(const char *addr)
{
    struct ns_ctl_request r = {.cluster = "c1", .broker_name = "broker-a"};
    struct ns_ctl_decision d;
    run(ns_ctl_decide_next_id, &r, 0, "", &d);
    int64_t id = d.reply.next_id;
    ns_ctl_decision_close(&d);
    char code[64];
    snprintf(code, sizeof code, "%s;1000", addr);
    r.check_code = code;
    r.has_id = true;
    r.id = id;
    run_close(ns_ctl_decide_apply_id, &r, 0, "");
    r.check_code = NULL;
    r.broker_addr = addr;
    run_close(ns_ctl_decide_register, &r, 0, "");
    return id;
}

static void hb_full(int64_t id, int32_t epoch, int64_t off, int32_t prio)
{
    const char *addrs[] = {"", B1, B2, B3};
    struct ns_ctl_beat_in in = {"c1",  "broker-a", addrs[id], id,   10000,
                                epoch, off,        off,       prio, 7};
    assert_int_equal(ns_ctl_live_beat(&w.live, &in, w.now), 0);
}

static void hb(int64_t id)
{
    hb_full(id, 0, 0, NS_CTL_DEFAULT_PRIORITY);
}

/* Makes id's heartbeat entry disappear, as the expiry scan does. */
static void kill_broker(int64_t id)
{
    for (size_t i = 0; i < w.live.n; i++) {
        if (w.live.items[i].id == id) {
            w.live.items[i].last_ms = w.now - 20000;
        }
    }
    struct ns_ctl_live gone;
    assert_int_equal(ns_ctl_live_expire(&w.live, w.now, 0, &gone), 0);
    ns_ctl_live_close(&gone);
}

static struct ns_ctl_request elect_req(int64_t id, bool designate)
{
    struct ns_ctl_request r = {.cluster = "c1", .broker_name = "broker-a"};
    r.has_id = id != -1;
    r.id = id;
    r.designate = designate;
    return r;
}

static void elect(int64_t id, int32_t code, const char *remark)
{
    struct ns_ctl_request r = elect_req(id, false);
    run_close(ns_ctl_decide_elect, &r, code, remark);
}

static void alter(int64_t master, int32_t epoch, const int64_t *ids, size_t n,
                  int32_t sepoch, int32_t code, const char *remark)
{
    struct ns_ctl_request r = {.broker_name = "broker-a"};
    r.has_id = r.has_master_epoch = true;
    r.id = master;
    r.master_epoch = epoch;
    r.ids = ids;
    r.n_ids = n;
    r.set_epoch = sepoch;
    struct ns_ctl_decision d;
    run(ns_ctl_decide_alter, &r, code, remark, &d);
    assert_true(d.reply.has_new_sync_epoch);
    if (code != 0) {
        assert_int_equal(d.reply.new_sync_epoch, 0);
        assert_false(d.has_event);
    }
    ns_ctl_decision_close(&d);
}

static void assert_sync(const int64_t *ids, size_t n, int32_t epoch)
{
    const struct ns_ctl_group *g = group();
    assert_non_null(g);
    assert_int_equal(g->n_sync, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(g->sync[i], ids[i]);
    }
    assert_int_equal(g->sync_epoch, epoch);
}

/* State of scenario 11: B1 master (epoch 1), S = {1,2} (epoch 2). */
static void state_11(void)
{
    admit(B1);
    admit(B2);
    hb(1);
    hb(2);
    elect(1, 0, "");
    static const int64_t s12[] = {1, 2};
    alter(1, 1, s12, 2, 1, 0, "");
}

/* --- apply rules (docs/controller.md §4) --- */

#define EV(c, n, a, k, i)                                                      \
    (struct ns_ctl_event)                                                      \
    {                                                                          \
        .cluster = (c), .broker_name = (n), .broker_addr = (a),                \
        .check_code = (k), .id = (i)                                           \
    }

static void apply_ev(enum ns_ctl_event_type t, struct ns_ctl_event *e)
{
    struct ns_ctl_decision d = {0};
    d.has_event = true;
    d.event_type = t;
    d.event = *e;
    commit(&d);
}

static void test_apply_rules(void **state)
{
    (void)state;
    struct ns_ctl_event e = {0};
    /* events about an unknown group change nothing */
    e.broker_name = "broker-a";
    e.elected = true;
    e.id = 1;
    apply_ev(NS_CTL_EV_ELECT_MASTER, &e);
    apply_ev(NS_CTL_EV_ALTER_SYNC_STATE_SET, &e);
    apply_ev(NS_CTL_EV_CLEAN_BROKER_DATA, &e);
    apply_ev(NS_CTL_EV_UPDATE_BROKER_ADDRESS, &e);
    assert_int_equal(w.s.ctl.n, 0);
    /* ApplyBrokerId creates the group: next 2, empty set, epochs 0 */
    e = EV("c1", "broker-a", B1, B1 ";1", 1);
    apply_ev(NS_CTL_EV_APPLY_BROKER_ID, &e);
    const struct ns_ctl_group *g = group();
    assert_non_null(g);
    assert_string_equal(g->cluster, "c1");
    assert_int_equal(g->next_id, 2);
    assert_int_equal(g->n_sync, 0);
    assert_false(g->has_master);
    assert_int_equal(g->master_epoch + g->sync_epoch, 0);
    /* a known id again changes nothing, a new one counts */
    apply_ev(NS_CTL_EV_APPLY_BROKER_ID, &e);
    assert_int_equal(group()->next_id, 2);
    e = EV("c1", "broker-a", B2, B2 ";1", 2);
    apply_ev(NS_CTL_EV_APPLY_BROKER_ID, &e);
    g = group();
    assert_int_equal(g->n_members, 2);
    assert_int_equal(g->next_id, 3);
    /* an id applied ahead of next_id moves it past (never handed out) */
    e = EV("c1", "broker-a", B3, B3 ";1", 7);
    apply_ev(NS_CTL_EV_APPLY_BROKER_ID, &e);
    assert_int_equal(group()->next_id, 8);
    /* elected: master, epoch + 1, set {id}, set epoch + 1 */
    e = (struct ns_ctl_event){
        .broker_name = "broker-a", .elected = true, .id = 2};
    apply_ev(NS_CTL_EV_ELECT_MASTER, &e);
    g = group();
    assert_true(g->has_master);
    assert_int_equal(g->master_id, 2);
    assert_int_equal(g->master_epoch, 1);
    static const int64_t s2[] = {2};
    assert_sync(s2, 1, 1);
    /* not elected: no master, epoch + 1, set and its epoch kept */
    e.elected = false;
    apply_ev(NS_CTL_EV_ELECT_MASTER, &e);
    g = group();
    assert_false(g->has_master);
    assert_int_equal(g->master_epoch, 2);
    assert_sync(s2, 1, 1);
    /* alter: set replaced, epoch + 1 */
    int64_t s127[] = {1, 2, 7};
    e = (struct ns_ctl_event){
        .broker_name = "broker-a", .ids = s127, .n_ids = 3};
    apply_ev(NS_CTL_EV_ALTER_SYNC_STATE_SET, &e);
    assert_sync(s127, 3, 2);
    /* address update keeps the check code; unknown id ignored */
    e = EV("c1", "broker-a", "127.0.0.1:40911", NULL, 1);
    apply_ev(NS_CTL_EV_UPDATE_BROKER_ADDRESS, &e);
    e.id = 9;
    apply_ev(NS_CTL_EV_UPDATE_BROKER_ADDRESS, &e);
    const struct ns_ctl_member *m = ns_ctl_find_member(group(), 1);
    assert_string_equal(m->addr, "127.0.0.1:40911");
    assert_string_equal(m->check_code, B1 ";1");
    /* clean with ids: gone from members and set */
    int64_t c7[] = {7};
    e = (struct ns_ctl_event){.broker_name = "broker-a", .ids = c7, .n_ids = 1};
    apply_ev(NS_CTL_EV_CLEAN_BROKER_DATA, &e);
    g = group();
    assert_int_equal(g->n_members, 2);
    assert_null(ns_ctl_find_member(g, 7));
    assert_false(ns_ctl_in_sync(g, 7));
    /* a clean that empties the set drops the group (half a group is
     * unknown) */
    int64_t c12[] = {1, 2};
    e.ids = c12;
    e.n_ids = 2;
    apply_ev(NS_CTL_EV_CLEAN_BROKER_DATA, &e);
    assert_null(group());
    /* clean without ids drops the whole group */
    e = EV("c1", "broker-a", B1, B1 ";1", 1);
    apply_ev(NS_CTL_EV_APPLY_BROKER_ID, &e);
    assert_non_null(group());
    e = (struct ns_ctl_event){.broker_name = "broker-a"};
    apply_ev(NS_CTL_EV_CLEAN_BROKER_DATA, &e);
    assert_null(group());
}

/* --- snapshot --- */

static const uint8_t GOLDEN_STATE[] = {
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x62, 0x72, 0x6f, 0x6b,
    0x65, 0x72, 0x2d, 0x61, 0x00, 0x00, 0x00, 0x02, 0x63, 0x31, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00,
    0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x0f, 0x31, 0x32, 0x37, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x31,
    0x3a, 0x33, 0x30, 0x39, 0x31, 0x31, 0x00, 0x00, 0x00, 0x14, 0x31, 0x32,
    0x37, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x31, 0x3a, 0x33, 0x30, 0x39, 0x31,
    0x31, 0x3b, 0x31, 0x30, 0x30, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x0f, 0x31, 0x32, 0x37, 0x2e, 0x30, 0x2e,
    0x30, 0x2e, 0x31, 0x3a, 0x33, 0x30, 0x39, 0x32, 0x31, 0x00, 0x00, 0x00,
    0x14, 0x31, 0x32, 0x37, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x31, 0x3a, 0x33,
    0x30, 0x39, 0x32, 0x31, 0x3b, 0x31, 0x30, 0x30, 0x30, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x02,
};

static void test_snapshot(void **state)
{
    (void)state;
    struct ns_buf before, b;
    ns_buf_init(&before);
    ns_buf_init(&b);
    uint64_t d0, d1, d2;
    assert_int_equal(ns_snapshot_encode(&w.s, &before), 0);
    assert_int_equal(ns_snapshot_digest(&w.s, &d0), 0);
    state_11();
    /* the table's bytes */
    ns_ctl_encode_state(&w.s.ctl, &b);
    assert_int_equal(b.len, sizeof GOLDEN_STATE);
    assert_memory_equal(b.data, GOLDEN_STATE, b.len);
    ns_buf_reset(&b);
    /* version 4, restored to the same bytes and digest */
    assert_int_equal(ns_snapshot_encode(&w.s, &b), 0);
    assert_int_equal(b.data[5], 4);
    assert_int_equal(ns_snapshot_digest(&w.s, &d1), 0);
    assert_true(d1 != d0);
    struct ns_state t;
    assert_int_equal(ns_state_init(&t), 0);
    assert_int_equal(ns_snapshot_decode(&t, b.data, b.len), 0);
    assert_int_equal(ns_snapshot_digest(&t, &d2), 0);
    assert_true(d1 == d2);
    assert_int_equal(t.ctl.groups[0].master_epoch, 1);
    /* every truncation refused, t unchanged */
    for (size_t len = 0; len < b.len; len++) {
        assert_int_not_equal(ns_snapshot_decode(&t, b.data, len), 0);
    }
    assert_int_equal(ns_snapshot_digest(&t, &d2), 0);
    assert_true(d1 == d2);
    ns_state_close(&t);
    /* once the table is empty again, the bytes are those of before */
    struct ns_ctl_request r = {.broker_name = "broker-a", .clean_living = true};
    run_close(ns_ctl_decide_clean, &r, 0, "");
    ns_buf_reset(&b);
    assert_int_equal(ns_snapshot_encode(&w.s, &b), 0);
    assert_int_equal(b.len, before.len);
    assert_memory_equal(b.data, before.data, b.len);
    ns_buf_close(&b);
    ns_buf_close(&before);
}

/* Decoding the table with the k-th allocation failing never leaks. */
static void test_snapshot_alloc_failure(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_ctl_table t;
        struct ns_rd in;
        ns_ctl_table_init(&t);
        ns_rd_init(&in, GOLDEN_STATE, sizeof GOLDEN_STATE);
        ns_alloc_fail_at(k, 1);
        int rv = ns_ctl_decode_state(&t, &in);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        assert_true(ok || t.n == 0);
        ns_ctl_table_close(&t);
    }
    assert_true(ok);
}

/* Applying and deciding with the k-th allocation failing: NS_ENOMEM or
 * success, never a leak (ASan) and never a half-made group. */
static void test_alloc_failure_apply_and_decide(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_ctl_table t;
        ns_ctl_table_init(&t);
        struct ns_ctl_event e = EV("c1", "broker-a", B1, B1 ";1", 1);
        ns_alloc_fail_at(k, 1);
        int rv = ns_ctl_apply(&t, NS_CTL_EV_APPLY_BROKER_ID, &e);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        assert_int_equal(t.n, ok ? 1 : 0);
        ns_ctl_table_close(&t);
    }
    assert_true(ok);
    state_11();
    kill_broker(1);
    ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_ctl_view v = view();
        struct ns_ctl_request r = elect_req(-1, false);
        struct ns_ctl_decision d;
        ns_alloc_fail_at(k, 1);
        int rv = ns_ctl_decide_elect(&v, &r, &d);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        if (ok) {
            assert_int_equal(d.event.id, 2);
        }
        ns_ctl_decision_close(&d);
    }
    assert_true(ok);
}

/* --- heartbeats --- */

static void test_live(void **state)
{
    (void)state;
    hb_full(1, 2, 100, 5);
    /* a lower epoch keeps the better values, time and priority refresh */
    w.now += 10;
    hb_full(1, 1, 999, 3);
    const struct ns_ctl_beat *b =
        ns_ctl_live_find(&w.live, "c1", "broker-a", 1);
    assert_int_equal(b->epoch, 2);
    assert_int_equal(b->max_offset, 100);
    assert_int_equal(b->priority, 3);
    assert_int_equal(b->last_ms, NOW + 10);
    hb_full(1, 2, 150, 3); /* same epoch, higher offset */
    assert_int_equal(ns_ctl_live_find(&w.live, "c1", "broker-a", 1)->max_offset,
                     150);
    /* alive while last + timeout >= now */
    assert_true(
        ns_ctl_live_alive(&w.live, "c1", "broker-a", 1, NOW + 10 + 10000));
    assert_false(
        ns_ctl_live_alive(&w.live, "c1", "broker-a", 1, NOW + 10 + 10001));
    assert_false(ns_ctl_live_alive(&w.live, "c2", "broker-a", 1, NOW));
    /* expiry by time (strictly past the timeout) and by connection */
    w.now = NOW - 100;
    hb(2);
    w.now = NOW + 10;
    struct ns_ctl_live gone;
    assert_int_equal(ns_ctl_live_expire(&w.live, NOW + 10 + 10000, 0, &gone),
                     0);
    assert_int_equal(gone.n, 1);
    assert_int_equal(gone.items[0].id, 2);
    ns_ctl_live_close(&gone);
    assert_int_equal(ns_ctl_live_expire(&w.live, NOW, 7, &gone), 0);
    assert_int_equal(gone.n, 1);
    assert_int_equal(w.live.n, 0);
    ns_ctl_live_close(&gone);
    /* bounded: a new entry past NS_CTL_MAX_BEATS is refused, known ones
     * still refresh */
    for (int64_t id = 1; id <= NS_CTL_MAX_BEATS; id++) {
        struct ns_ctl_beat_in in = {"c1", "g", "a", id, 10000, 0, 0, 0, 0, 0};
        assert_int_equal(ns_ctl_live_beat(&w.live, &in, NOW), 0);
    }
    struct ns_ctl_beat_in more = {"c1", "g", "a", 0, 10000, 0, 0, 0, 0, 0};
    assert_int_equal(ns_ctl_live_beat(&w.live, &more, NOW), NS_ETOOBIG);
    more.id = 5;
    assert_int_equal(ns_ctl_live_beat(&w.live, &more, NOW + 1), 0);
    assert_int_equal(w.live.n, NS_CTL_MAX_BEATS);
}

/* --- election policy (§5.4) --- */

static void test_policy(void **state)
{
    (void)state;
    struct ns_ctl_candidate c[3] = {
        {1, false, 1, 10, 1},
        {2, true, 1, 2, 2},
        {3, true, 0, 3, 1},
    };
    int64_t all[] = {1, 2, 3}, only1[] = {1}, out = 0;
    /* 18: epoch wins, then offset, then the lower priority */
    assert_true(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, false, 0, &out));
    assert_int_equal(out, 2);
    c[2].epoch = 1;
    assert_true(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, false, 0, &out));
    assert_int_equal(out, 3);
    c[1].max_offset = 3;
    assert_true(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, false, 0, &out));
    assert_int_equal(out, 3); /* priority 1 < 2 */
    c[2].priority = 2;
    assert_true(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, false, 0, &out));
    assert_int_equal(out, 2); /* exact tie: the lower id */
    /* the alive master is kept (19), also against a better candidate */
    c[0].alive = true;
    assert_true(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, false, 0, &out));
    assert_int_equal(out, 1);
    /* a preferred id: taken when alive, else nothing (no fall-back) */
    assert_true(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, true, 3, &out));
    assert_int_equal(out, 3);
    c[2].alive = false;
    assert_false(
        ns_ctl_policy_elect(c, 3, all, 3, false, true, 1, true, 3, &out));
    /* unclean off: nobody outside the set; on: anyone alive */
    c[0].alive = false;
    assert_false(
        ns_ctl_policy_elect(c, 3, only1, 1, false, true, 1, false, 0, &out));
    assert_true(
        ns_ctl_policy_elect(c, 3, only1, 1, true, true, 1, false, 0, &out));
    assert_int_equal(out, 2);
    /* nobody alive at all */
    c[1].alive = false;
    assert_false(
        ns_ctl_policy_elect(c, 3, all, 3, true, false, 0, false, 0, &out));
}

/* --- decisions: the §8 scenarios --- */

static void test_ids_and_registration(void **state)
{
    (void)state;
    struct ns_ctl_request r = {.cluster = "c1", .broker_name = "broker-a"};
    struct ns_ctl_decision d;
    /* 1 */
    run(ns_ctl_decide_next_id, &r, 0, "", &d);
    assert_int_equal(d.reply.next_id, 1);
    assert_false(d.has_event);
    ns_ctl_decision_close(&d);
    /* 2 */
    r.has_id = true;
    r.id = 2;
    r.check_code = B1 ";1000";
    run_close(ns_ctl_decide_apply_id, &r, 2014,
              "Broker-set: broker-a hasn't been registered in controller, but "
              "broker try to apply brokerId: 2");
    assert_null(group());
    /* 3 */
    assert_int_equal(admit(B1), 1);
    r.has_id = false;
    run(ns_ctl_decide_next_id, &r, 0, "", &d);
    assert_int_equal(d.reply.next_id, 2);
    ns_ctl_decision_close(&d);
    r.has_id = true;
    r.id = 1;
    r.broker_addr = B1;
    run(ns_ctl_decide_register, &r, 0, "", &d);
    assert_false(d.reply.has_master_id);
    assert_null(d.reply.master_addr);
    assert_false(d.reply.has_master_epoch);
    assert_true(d.reply.has_set);
    assert_int_equal(d.reply.n_set, 0);
    assert_int_equal(d.reply.set_epoch, 0);
    assert_false(d.has_event); /* same address: nothing to write */
    ns_ctl_decision_close(&d);
    /* 4 */
    r.broker_addr = NULL;
    r.check_code = B1 ";1000";
    run_close(ns_ctl_decide_apply_id, &r, 0, "");
    run(ns_ctl_decide_next_id, &r, 0, "", &d);
    assert_int_equal(d.reply.next_id, 2);
    ns_ctl_decision_close(&d);
    r.check_code = B1 ";2000";
    run_close(ns_ctl_decide_apply_id, &r, 2014,
              "Fail to apply brokerId: 1 in broker-set: broker-a");
    /* 5 */
    r.id = 9;
    run_close(ns_ctl_decide_register, &r, 2010,
              "BrokerId: 9 hasn't been registered in broker-set: broker-a");
    r.broker_name = "nope";
    run_close(ns_ctl_decide_register, &r, 2010,
              "Broker-set: nope hasn't been registered in controller");
    run_close(ns_ctl_decide_elect, &r, 2010, "Broker hasn't been registered");
    run_close(ns_ctl_decide_replica_info, &r, 2008,
              "Broker metadata is not existed");
    /* 6 */
    r.broker_name = "broker-a";
    r.id = 1;
    r.broker_addr = "127.0.0.1:40911";
    run(ns_ctl_decide_register, &r, 0, "", &d);
    assert_true(d.has_event);
    assert_int_equal(d.event_type, NS_CTL_EV_UPDATE_BROKER_ADDRESS);
    ns_ctl_decision_close(&d);
    assert_string_equal(ns_ctl_find_member(group(), 1)->addr,
                        "127.0.0.1:40911");
}

static void test_first_master_and_slave(void **state)
{
    (void)state;
    struct ns_ctl_decision d;
    admit(B1);
    hb(1);
    /* 7 */
    struct ns_ctl_request r = elect_req(1, false);
    run(ns_ctl_decide_elect, &r, 0, "", &d);
    assert_true(d.reply.has_master_id);
    assert_int_equal(d.reply.master_id, 1);
    assert_string_equal(d.reply.master_addr, B1);
    assert_int_equal(d.reply.master_epoch, 1);
    assert_int_equal(d.reply.sync_epoch, 1);
    assert_true(d.reply.elect_body && d.reply.with_members);
    assert_int_equal(d.reply.n_set, 1);
    assert_int_equal(d.reply.set[0], 1);
    assert_true(d.notify);
    ns_ctl_decision_close(&d);
    static const int64_t s1[] = {1};
    assert_sync(s1, 1, 1);
    r = (struct ns_ctl_request){.broker_name = "broker-a"};
    run(ns_ctl_decide_replica_info, &r, 0, "", &d);
    assert_int_equal(d.reply.master_id, 1);
    assert_int_equal(d.reply.master_epoch, 1);
    assert_int_equal(d.reply.set_epoch, 1);
    ns_ctl_decision_close(&d);
    /* 8 */
    admit(B2);
    r = (struct ns_ctl_request){.cluster = "c1",
                                .broker_name = "broker-a",
                                .broker_addr = B2,
                                .has_id = true,
                                .id = 2};
    run(ns_ctl_decide_register, &r, 0, "", &d);
    assert_int_equal(d.reply.master_id, 1);
    assert_string_equal(d.reply.master_addr, B1);
    assert_int_equal(d.reply.master_epoch, 1);
    assert_int_equal(d.reply.sync_epoch, 1);
    ns_ctl_decision_close(&d);
    hb(2);
    r = elect_req(2, false);
    run(ns_ctl_decide_elect, &r, 2011,
        "The old master 1 is still alive, not need to elect new master for "
        "broker broker-a",
        &d);
    assert_false(d.has_event);
    assert_false(d.notify);
    assert_int_equal(d.reply.master_id, 1);
    assert_true(d.reply.elect_body && !d.reply.with_members);
    ns_ctl_decision_close(&d);
    /* 9: B1's heartbeat stops; the triggered election finds nobody in S */
    kill_broker(1);
    elect(-1, 2004,
          "Old master has down and failed to elect a new broker master");
    admit(B3);
    r.id = 3;
    r.broker_addr = B3;
    run(ns_ctl_decide_register, &r, 0, "", &d);
    assert_false(d.reply.has_master_id);
    ns_ctl_decision_close(&d);
    assert_false(group()->has_master);
}

static void test_alter(void **state)
{
    (void)state;
    /* 11 */
    state_11();
    static const int64_t s12[] = {1, 2}, s17[] = {1, 7}, s13[] = {1, 3},
                         s2[] = {2};
    assert_sync(s12, 2, 2);
    /* 12: each refusal leaves the state as it was */
    admit(B3);
    alter(1, 1, s12, 2, 2, 2013,
          "The newSyncStateSet is equal with oldSyncStateSet, no needed to "
          "update syncStateSet");
    alter(2, 1, s2, 1, 2, 2002,
          "Rejecting alter syncStateSet request because the current leader "
          "is:{1}, not {2}");
    alter(1, 0, s13, 2, 2, 2000,
          "Rejecting alter syncStateSet request because the current master "
          "epoch is:{1}, not {0}");
    alter(1, 1, s13, 2, 1, 2001,
          "Rejecting alter syncStateSet request because the current "
          "syncStateSet epoch is:{2}, not {1}");
    alter(1, 1, s17, 2, 2, 2003,
          "Rejecting alter syncStateSet request because the replicas {7} "
          "don't exist");
    alter(1, 1, s13, 2, 2, 2006,
          "Rejecting alter syncStateSet request because the replicas {3} "
          "don't alive");
    hb(3);
    alter(1, 1, s2, 1, 2, 2013,
          "Rejecting alter syncStateSet request because the newSyncStateSet "
          "don't contains origin leader {1}");
    struct ns_ctl_request r = {.broker_name = "nope"};
    run_close(ns_ctl_decide_alter, &r, 2013, "Broker metadata is not existed");
    assert_sync(s12, 2, 2);
    assert_int_equal(group()->master_epoch, 1);
}

static void test_failover_and_fencing(void **state)
{
    (void)state;
    state_11();
    /* 13: B1 gone, B2 alive and in S: the triggered election takes B2 */
    kill_broker(1);
    struct ns_ctl_request r = elect_req(-1, false);
    struct ns_ctl_decision d;
    run(ns_ctl_decide_elect, &r, 0, "", &d);
    assert_int_equal(d.reply.master_id, 2);
    assert_int_equal(d.reply.master_epoch, 2);
    assert_int_equal(d.reply.sync_epoch, 3);
    assert_true(d.notify);
    ns_ctl_decision_close(&d);
    static const int64_t s2[] = {2}, s12[] = {1, 2}, s21[] = {1, 2};
    assert_sync(s2, 1, 3);
    /* 14: the old master's view is fenced */
    alter(1, 1, s12, 2, 2, 2002, NULL);
    alter(2, 1, s21, 2, 3, 2000, NULL);
    assert_sync(s2, 1, 3);
    /* 15: it comes back as a slave */
    hb(1);
    r = (struct ns_ctl_request){.cluster = "c1",
                                .broker_name = "broker-a",
                                .broker_addr = B1,
                                .has_id = true,
                                .id = 1};
    run(ns_ctl_decide_register, &r, 0, "", &d);
    assert_int_equal(d.reply.master_id, 2);
    assert_int_equal(d.reply.master_epoch, 2);
    ns_ctl_decision_close(&d);
    elect(1, 2011, NULL);
}

static void test_unclean(void **state)
{
    (void)state;
    /* 16: S = {1}; B1 dies with B2 alive */
    state_11();
    static const int64_t s1[] = {1};
    alter(1, 1, s1, 1, 2, 0, "");
    assert_sync(s1, 1, 3);
    kill_broker(1);
    elect(-1, 2004, NULL);
    const struct ns_ctl_group *g = group();
    assert_false(g->has_master);
    assert_true(g->master_epoch > 1);
    assert_sync(s1, 1, 3);
    struct ns_ctl_decision d;
    struct ns_ctl_request r = elect_req(2, false);
    run(ns_ctl_decide_elect, &r, 2012, "Failed to elect a new master", &d);
    assert_false(d.has_event);
    assert_false(d.reply.has_master_id || d.reply.has_master_epoch);
    ns_ctl_decision_close(&d);
    int32_t before = group()->master_epoch;
    hb(1);
    r = elect_req(1, false);
    run(ns_ctl_decide_elect, &r, 0, "", &d);
    assert_int_equal(d.reply.master_id, 1);
    assert_int_equal(d.reply.master_epoch, before + 1);
    ns_ctl_decision_close(&d);
}

static void test_unclean_on(void **state)
{
    (void)state;
    /* 17 */
    state_11();
    static const int64_t s1[] = {1}, s2[] = {2};
    alter(1, 1, s1, 1, 2, 0, "");
    kill_broker(1);
    w.unclean = true;
    elect(-1, 0, "");
    assert_int_equal(group()->master_id, 2);
    assert_int_equal(group()->master_epoch, 2);
    assert_sync(s2, 1, 4);
}

static void test_ranking_and_designation(void **state)
{
    (void)state;
    admit(B1);
    admit(B2);
    admit(B3);
    hb(1);
    hb(2);
    hb(3);
    elect(1, 0, "");
    static const int64_t s123[] = {1, 2, 3};
    alter(1, 1, s123, 3, 1, 0, "");
    /* 19: all alive, controller-triggered: the master stays, no event */
    struct ns_ctl_decision d;
    struct ns_ctl_request r = elect_req(-1, false);
    run(ns_ctl_decide_elect, &r, 2011, NULL, &d);
    assert_false(d.has_event);
    ns_ctl_decision_close(&d);
    /* 18: B1 dies; B2 (epoch 1, offset 2) beats B3 (epoch 0, offset 3) */
    hb_full(2, 1, 2, NS_CTL_DEFAULT_PRIORITY);
    hb_full(3, 0, 3, NS_CTL_DEFAULT_PRIORITY);
    kill_broker(1);
    elect(-1, 0, "");
    assert_int_equal(group()->master_id, 2);
    /* 20: master 2 alive, S = {1,2,3} again: designate dead 1, then 2,
     * then 1 alive */
    struct ns_ctl_event e = {
        .broker_name = "broker-a", .ids = (int64_t *)s123, .n_ids = 3};
    apply_ev(NS_CTL_EV_ALTER_SYNC_STATE_SET, &e);
    r = elect_req(1, true);
    run_close(ns_ctl_decide_elect, &r, 2012, "Failed to elect a new master");
    r = elect_req(2, true);
    run_close(ns_ctl_decide_elect, &r, 2011, NULL);
    hb(1);
    int32_t before = group()->master_epoch;
    r = elect_req(1, true);
    run_close(ns_ctl_decide_elect, &r, 0, "");
    assert_int_equal(group()->master_id, 1);
    assert_int_equal(group()->master_epoch, before + 1);
}

static void test_nobody_electable(void **state)
{
    (void)state;
    /* 21 */
    admit(B1);
    hb(1);
    elect(1, 0, "");
    kill_broker(1);
    elect(-1, 2004,
          "Old master has down and failed to elect a new broker master");
    const struct ns_ctl_group *g = group();
    assert_false(g->has_master);
    assert_int_equal(g->master_epoch, 2);
    static const int64_t s1[] = {1};
    assert_sync(s1, 1, 1);
}

static void test_clean(void **state)
{
    (void)state;
    /* 23 */
    admit(B1);
    admit(B2);
    admit(B3);
    hb(1);
    elect(1, 0, "");
    struct ns_ctl_request r = {.cluster = "c1", .broker_name = "broker-a"};
    run_close(ns_ctl_decide_clean, &r, 2009,
              "Broker broker-a is still alive, clean up failure");
    r.ids_text = "1";
    run_close(ns_ctl_decide_clean, &r, 2009,
              "Broker [broker-a,  1] is still alive, clean up failure");
    r.ids_text = "x";
    run_close(ns_ctl_decide_clean, &r, 2009,
              "Please set the option <brokerControllerIdsToClean> according "
              "to the format, exception: java.lang.NumberFormatException: For "
              "input string: \"x\"");
    kill_broker(1);
    r.ids_text = "1;2;3";
    run_close(ns_ctl_decide_clean, &r, 0, "");
    r.ids_text = NULL;
    run_close(ns_ctl_decide_replica_info, &r, 2008, NULL);
    r.broker_name = "broker12";
    r.clean_living = true;
    run_close(ns_ctl_decide_clean, &r, 2009,
              "Broker broker12 is not existed,clean broker data failure.");
}

/* Decisions never change the table themselves: only the committed event
 * does (decide-then-commit). */
static void test_decide_is_pure(void **state)
{
    (void)state;
    state_11();
    uint64_t d0, d1;
    assert_int_equal(ns_snapshot_digest(&w.s, &d0), 0);
    kill_broker(1);
    struct ns_ctl_view v = view();
    struct ns_ctl_request r = elect_req(-1, false);
    struct ns_ctl_decision d;
    assert_int_equal(ns_ctl_decide_elect(&v, &r, &d), 0);
    assert_true(d.has_event);
    assert_int_equal(ns_snapshot_digest(&w.s, &d1), 0);
    assert_true(d0 == d1);
    ns_ctl_decision_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_alloc_failure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failure_apply_and_decide,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids_and_registration, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_first_master_and_slave, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_alter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failover_and_fencing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unclean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclean_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranking_and_designation, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_nobody_electable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decide_is_pure, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
