/* Unit tests of the pure liveness table (src/liveness/liveness_table.c):
 * heartbeats, expiry decisions at injected times and in deadline order,
 * per-broker timeouts, merging reports from three nodes, connection close and
 * the fast path when every holder closed, re-registration cancelling it,
 * re-seeding and grace after leader changes, bounds (holders, clocks, report
 * batches) and scan cost. Time is simulated; nothing here touches a loop or a
 * clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/liveness_table.h"

#define T120 120000u

struct expired {
    char addr[8][32];
    bool fast[8];
    void *conn[8];
    size_t n;
};

static void on_expired(void *arg, const struct ns_live *e, bool fast)
{
    struct expired *x = arg;
    if (x->n < 8) {
        snprintf(x->addr[x->n], sizeof x->addr[0], "%s", e->addr);
        x->fast[x->n] = fast;
        x->conn[x->n] = e->conn;
    }
    x->n++;
}

static size_t expire(struct ns_liveness_table *t, uint64_t now,
                     struct expired *x)
{
    memset(x, 0, sizeof *x);
    return ns_liveness_table_expire(t, now, on_expired, x);
}

/* Leader = node 1, followers 2 and 3. */
static void test_merge_three_nodes(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 1000);
    /* Node 2 heard b at 10000 (report 500 ms later), node 3 at 30000. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 500, true, T120, 10500), 0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 3, "c", "b", 0, true, T120, 30000), 0);
    /* An older report from node 2 does not move last-seen back. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 25000, true, T120, 35000), 0);
    const struct ns_live *e = ns_liveness_table_find(&t, "c", "b");
    assert_non_null(e);
    assert_int_equal(e->seen_ms, 30000);
    assert_int_equal(e->n_holders, 2);
    assert_int_equal(ns_liveness_table_next_deadline(&t), 30000 + T120);
    assert_int_equal(expire(&t, 30000 + T120 - 1, &x), 0);
    assert_int_equal(expire(&t, 30000 + T120, &x), 1);
    assert_string_equal(x.addr[0], "b");
    assert_false(x.fast[0]);
    assert_null(ns_liveness_table_find(&t, "c", "b"));
    assert_int_equal(t.n_expired, 1);
    ns_liveness_table_close(&t);
}

static void test_per_broker_timeouts(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "slow", 100, T120, NULL, NULL), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "quick", 100, 5000, NULL, NULL), 0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "remote", 0, false, 20000, 100), 0);
    assert_int_equal(expire(&t, 5099, &x), 0);
    assert_int_equal(expire(&t, 5100, &x), 1);
    assert_string_equal(x.addr[0], "quick");
    /* A heartbeat moves the deadline. */
    assert_true(ns_liveness_table_touch(&t, "c", "remote", 15000));
    assert_false(ns_liveness_table_touch(&t, "c", "quick", 15000));
    assert_int_equal(expire(&t, 20100, &x), 0);
    assert_int_equal(expire(&t, 35000, &x), 1);
    assert_string_equal(x.addr[0], "remote");
    assert_int_equal(expire(&t, 100 + T120, &x), 1);
    assert_string_equal(x.addr[0], "slow");
    ns_liveness_table_close(&t);
}

static void test_fast_path_needs_all_holders(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    struct ns_live *conn_a = NULL;
    int owner_a;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    uint64_t now = 10000;
    /* The broker registered on the leader (conn a) and on nodes 2 and 3. */
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b", now, T120, &conn_a, &owner_a),
        0);
    assert_true(t.urgent);
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 0, true, T120, now), 0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 3, "c", "b", 0, true, T120, now), 0);
    /* Node 2 and the leader see it close: node 3 still holds it. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 100, false, T120, now + 100),
        0);
    assert_int_equal(ns_liveness_table_conn_closed(&t, &conn_a, now + 200), 1);
    assert_null(conn_a);
    assert_int_equal(expire(&t, now + 5000, &x), 0);
    /* Node 3 closes too: expired at once, without the timeout. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 3, "c", "b", 300, false, T120, now + 300),
        0);
    assert_int_equal(ns_liveness_table_next_deadline(&t), now + 300);
    assert_int_equal(expire(&t, now + 300, &x), 1);
    assert_true(x.fast[0]);
    assert_null(x.conn[0]);
    assert_int_equal(t.n_fast_expired, 1);
    /* A broker nobody ever held (seeded) has no fast path. */
    assert_int_equal(ns_liveness_table_seed(&t, "c", "s", T120, now), 0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "s", 0, false, T120, now + 10), 0);
    assert_int_equal(expire(&t, now + 6000, &x), 0);
    ns_liveness_table_close(&t);
}

static void test_reregistration_cancels_fast_path(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    struct ns_live *conn_a = NULL, *conn_b = NULL;
    int owner_a, owner_b;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    uint64_t now = 10000;
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b", now, T120, &conn_a, &owner_a),
        0);
    /* It reconnected over conn b on this node before conn a's close. */
    assert_int_equal(ns_liveness_table_register(&t, "c", "b", now + 10, T120,
                                                &conn_b, &owner_b),
                     0);
    assert_null(conn_a);
    assert_int_equal(ns_liveness_table_conn_closed(&t, &conn_a, now + 20), 0);
    assert_int_equal(expire(&t, now + 5000, &x), 0);
    /* Closed everywhere, then registered on node 2 before the scan. */
    assert_int_equal(ns_liveness_table_conn_closed(&t, &conn_b, now + 30), 1);
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 0, true, T120, now + 40), 0);
    assert_int_equal(expire(&t, now + 5000, &x), 0);
    assert_int_equal(ns_liveness_table_next_deadline(&t), now + 40 + T120);
    /* Its expired entry reports the holding connection. */
    struct ns_live *conn_c = NULL;
    int owner_c;
    assert_int_equal(ns_liveness_table_register(&t, "c", "b", now + 50, 1000,
                                                &conn_c, &owner_c),
                     0);
    assert_int_equal(expire(&t, now + 1050, &x), 1);
    assert_ptr_equal(x.conn[0], &owner_c);
    assert_null(conn_c);
    ns_liveness_table_close(&t);
}

static void test_new_leader_grace(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    assert_int_equal(ns_liveness_table_init(&t, 3), 0);
    /* As a follower the node learned b was heard long ago. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 0, true, T120, 1000), 0);
    assert_int_equal(ns_liveness_table_seed(&t, "c", "seeded", T120, 1000), 0);
    /* It takes over at 500000: both get a full timeout from then. */
    ns_liveness_table_take_leadership(&t, 500000);
    const struct ns_live *e = ns_liveness_table_find(&t, "c", "b");
    assert_int_equal(e->n_holders, 0); /* remote holders forgotten */
    assert_int_equal(expire(&t, 500000 + T120 - 1, &x), 0);
    /* Right after takeover a close report waits for the settle delay. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 0, true, T120, 500100), 0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "b", 0, false, T120, 500200), 0);
    assert_int_equal(expire(&t, 500200, &x), 0);
    assert_int_equal(expire(&t, 500000 + NS_LIVENESS_TABLE_FAST_SETTLE_MS, &x),
                     1);
    assert_string_equal(x.addr[0], "b");
    assert_int_equal(expire(&t, 500000 + T120, &x), 1);
    assert_string_equal(x.addr[0], "seeded");
    ns_liveness_table_close(&t);
}

struct rep {
    size_t n;
    char addr[4][32];
    uint32_t since[4];
    bool held[4];
};

static int on_report(void *arg, const char *cluster, const char *addr,
                     uint32_t ms_since, bool held)
{
    struct rep *r = arg;
    (void)cluster;
    if (r->n < 4) {
        snprintf(r->addr[r->n], sizeof r->addr[0], "%s", addr);
        r->since[r->n] = ms_since;
        r->held[r->n] = held;
    }
    r->n++;
    return 0;
}

static void test_reports(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct rep r;
    struct ns_live *conn = NULL;
    int owner;
    assert_int_equal(ns_liveness_table_init(&t, 2), 0);
    assert_int_equal(ns_liveness_table_seed(&t, "c", "quiet", T120, 100), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b", 1000, T120, &conn, &owner), 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, 1400, 10, on_report, &r), 1);
    assert_string_equal(r.addr[0], "b");
    assert_int_equal(r.since[0], 400);
    assert_true(r.held[0]);
    /* Nothing heard since: nothing to report. */
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, 2000, 10, on_report, &r), 0);
    ns_liveness_table_conn_closed(&t, &conn, 2500);
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, 2600, 10, on_report, &r), 1);
    assert_false(r.held[0]);
    assert_int_equal(r.since[0], 1600);
    /* A new leader gets everything heard here again. */
    ns_liveness_table_mark_all_dirty(&t);
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, 2700, 10, on_report, &r), 1);
    ns_liveness_table_close(&t);
}

static void test_heartbeat(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct rep r;
    struct expired x;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    /* A heartbeat of a broker that never registered creates nothing. */
    assert_false(ns_liveness_table_touch(&t, "c", "b", 100));
    assert_null(ns_liveness_table_find(&t, "c", "b"));
    assert_int_equal(ns_liveness_table_next_deadline(&t), UINT64_MAX);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b", 100, 1000, NULL, NULL), 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(ns_liveness_table_take_reports(&t, 100, 10, on_report, &r),
                     1);
    /* Each heartbeat moves the deadline a full timeout past it ... */
    assert_true(ns_liveness_table_touch(&t, "c", "b", 900));
    assert_int_equal(ns_liveness_table_next_deadline(&t), 1900);
    assert_true(ns_liveness_table_touch(&t, "c", "b", 1800));
    assert_int_equal(expire(&t, 2799, &x), 0);
    /* ... and is reported once however many arrive before the report. */
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, 1850, 10, on_report, &r), 1);
    assert_int_equal(r.since[0], 50);
    assert_false(r.held[0]);
    /* A late heartbeat (older clock reading) never moves it back. */
    assert_true(ns_liveness_table_touch(&t, "c", "b", 1000));
    assert_int_equal(ns_liveness_table_next_deadline(&t), 2800);
    /* The same address in another cluster is another broker. */
    assert_false(ns_liveness_table_touch(&t, "other", "b", 1900));
    assert_int_equal(expire(&t, 2800, &x), 1);
    assert_string_equal(x.addr[0], "b");
    assert_false(ns_liveness_table_touch(&t, "c", "b", 2900));
    ns_liveness_table_close(&t);
}

struct seen_all {
    char addr[64][16];
    size_t n;
};

static void collect(void *arg, const struct ns_live *e)
{
    struct seen_all *s = arg;
    assert_true(s->n < 64);
    snprintf(s->addr[s->n++], sizeof s->addr[0], "%s", e->addr);
}

static int compare_str(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* ns_liveness_table_each visits every broker once: local, merged and seeded
 * ones, and none that expired or was removed. */
static void test_each(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    struct seen_all s;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    memset(&s, 0, sizeof s);
    ns_liveness_table_each(&t, collect, &s);
    assert_int_equal(s.n, 0);
    ns_liveness_table_take_leadership(&t, 0);
    char addr[16];
    for (int i = 0; i < 40; i++) { /* more than one bucket's worth */
        snprintf(addr, sizeof addr, "b%02d", i);
        assert_int_equal(ns_liveness_table_register(
                             &t, "c", addr, 0, 1000 + (uint64_t)i, NULL, NULL),
                         0);
    }
    assert_int_equal(ns_liveness_table_merge(&t, 2, "c", "m", 0, true, 5000, 0),
                     0);
    assert_int_equal(ns_liveness_table_seed(&t, "c2", "s", 5000, 0), 0);
    ns_liveness_table_remove(&t, "c", "b07");
    assert_int_equal(expire(&t, 1000, &x), 1); /* b00 */
    memset(&s, 0, sizeof s);
    ns_liveness_table_each(&t, collect, &s);
    assert_int_equal(s.n, 40);
    qsort(s.addr, s.n, sizeof s.addr[0], compare_str);
    assert_string_equal(s.addr[0], "b01");
    assert_string_equal(s.addr[5], "b06");
    assert_string_equal(s.addr[6], "b08");
    assert_string_equal(s.addr[37], "b39");
    assert_string_equal(s.addr[38], "m");
    assert_string_equal(s.addr[39], "s");
    ns_liveness_table_close(&t);
}

static void test_expiry_order_and_boundaries(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    assert_int_equal(expire(&t, UINT64_MAX - 1, &x), 0); /* empty */
    /* Registered out of deadline order. */
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "d3", 30, 1000, NULL, NULL), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "d1", 10, 1000, NULL, NULL), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "d2", 20, 1000, NULL, NULL), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "d4", 0, 5000, NULL, NULL), 0);
    assert_int_equal(ns_liveness_table_next_deadline(&t), 1010);
    assert_int_equal(expire(&t, 1009, &x), 0);
    assert_int_equal(expire(&t, 1030, &x), 3);
    assert_string_equal(x.addr[0], "d1");
    assert_string_equal(x.addr[1], "d2");
    assert_string_equal(x.addr[2], "d3");
    assert_int_equal(t.n, 1);
    assert_int_equal(ns_liveness_table_next_deadline(&t), 5000);
    /* No callback: still removed and counted. */
    assert_int_equal(ns_liveness_table_expire(&t, 5000, NULL, NULL), 1);
    assert_int_equal(t.n, 0);
    assert_int_equal(t.n_expired, 4);
    assert_int_equal(t.n_fast_expired, 0);
    /* An expired broker registering again starts from scratch. */
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "d1", 6000, 1000, NULL, NULL), 0);
    assert_int_equal(ns_liveness_table_next_deadline(&t), 7000);
    ns_liveness_table_close(&t);
}

static void test_conn_close(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    struct rep r;
    struct ns_live *conn = NULL, *other = NULL;
    int owner, owner_other;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    uint64_t now = 10000;
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "a", now, T120, &conn, &owner), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b", now, T120, &conn, &owner), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "m", now, T120, &conn, &owner), 0);
    assert_int_equal(ns_liveness_table_register(&t, "c", "o", now, T120, &other,
                                                &owner_other),
                     0);
    assert_ptr_equal(ns_liveness_table_find(&t, "c", "a")->conn, &owner);
    /* A removed broker leaves its connection's list. */
    ns_liveness_table_remove(&t, "c", "m");
    assert_null(ns_liveness_table_find(&t, "c", "m"));
    ns_liveness_table_remove(&t, "c", "absent"); /* no-op */
    memset(&r, 0, sizeof r);
    assert_int_equal(ns_liveness_table_take_reports(&t, now, 10, on_report, &r),
                     3);
    t.urgent = false;
    /* The close: the two brokers left lose their connection and their only
     * holder, so they expire through the fast path; the other connection's
     * broker is untouched. */
    assert_int_equal(ns_liveness_table_conn_closed(&t, &conn, now + 100), 2);
    assert_null(conn);
    assert_true(t.urgent);
    assert_null(ns_liveness_table_find(&t, "c", "a")->conn);
    assert_int_equal(ns_liveness_table_find(&t, "c", "a")->n_holders, 0);
    assert_ptr_equal(ns_liveness_table_find(&t, "c", "o")->conn, &owner_other);
    /* Reported as no longer held. */
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, now + 100, 10, on_report, &r), 2);
    assert_false(r.held[0]);
    assert_false(r.held[1]);
    assert_false(t.urgent);
    /* Closing it again (or a connection that registered nothing) is a
     * no-op. */
    assert_int_equal(ns_liveness_table_conn_closed(&t, &conn, now + 200), 0);
    assert_int_equal(expire(&t, now + 100, &x), 2);
    assert_true(x.fast[0] && x.fast[1]);
    assert_int_equal(t.n_fast_expired, 2);
    assert_int_equal(t.n, 1);
    /* Closing the table frees what is still linked in a connection. */
    ns_liveness_table_close(&t);
}

/* A node that was follower seeds the route's brokers, takes leadership, loses
 * it and takes it again: each takeover restarts every timeout. */
static void test_reseed_after_leader_change(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    struct ns_live *conn = NULL;
    int owner;
    assert_int_equal(ns_liveness_table_init(&t, 0), 0);
    ns_liveness_table_set_self(&t, 2);
    /* Follower: one broker registered here over a connection, one heard only
     * from node 3's report. */
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "local", 1000, 5000, &conn, &owner),
        0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 3, "c", "remote", 0, true, 5000, 1000), 0);
    /* Re-seeding never touches a broker already known ... */
    assert_int_equal(ns_liveness_table_seed(&t, "c", "local", 9999, 4000), 0);
    assert_int_equal(ns_liveness_table_find(&t, "c", "local")->timeout_ms,
                     5000);
    assert_int_equal(ns_liveness_table_find(&t, "c", "local")->seen_ms, 1000);
    /* ... and adds the one only the route knows, heard "now". */
    assert_int_equal(ns_liveness_table_seed(&t, "c", "route-only", 5000, 4000),
                     0);
    assert_int_equal(t.n, 3);
    ns_liveness_table_take_leadership(&t, 4000);
    /* Nobody expires before a full timeout after the takeover. */
    assert_int_equal(ns_liveness_table_next_deadline(&t), 9000);
    assert_int_equal(expire(&t, 8999, &x), 0);
    /* This node's own holds survive the takeover, node 3's are forgotten. */
    const struct ns_live *local = ns_liveness_table_find(&t, "c", "local");
    assert_int_equal(local->n_holders, 1);
    assert_int_equal(local->holders[0], 2);
    assert_int_equal(ns_liveness_table_find(&t, "c", "remote")->n_holders, 0);
    /* Leadership lost, then won again at 8000: the grace starts over (the
     * table itself does not track losing it: the server stops expiring). */
    ns_liveness_table_take_leadership(&t, 8000);
    assert_int_equal(expire(&t, 12999, &x), 0);
    assert_int_equal(ns_liveness_table_next_deadline(&t), 13000);
    /* The local connection closes: the fast path still waits for the settle
     * delay after the takeover, which passed long ago here. */
    assert_int_equal(ns_liveness_table_conn_closed(&t, &conn, 12000), 1);
    assert_int_equal(expire(&t, 12000, &x), 1);
    assert_string_equal(x.addr[0], "local");
    assert_true(x.fast[0]);
    assert_int_equal(expire(&t, 13000, &x), 2);
    ns_liveness_table_close(&t);
}

static int refuse_second(void *arg, const char *cluster, const char *addr,
                         uint32_t ms_since, bool held)
{
    struct rep *r = arg;
    if (r->n == 1) {
        return -1;
    }
    return on_report(arg, cluster, addr, ms_since, held);
}

static void test_bounds(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    struct rep r;
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    /* More holders than tracked: the fast path is off for that broker, even
     * when every tracked holder closed. */
    uint64_t now = 10000;
    for (uint64_t id = 2; id < 2 + NS_LIVENESS_TABLE_MAX_HOLDERS + 1; id++) {
        assert_int_equal(
            ns_liveness_table_merge(&t, id, "c", "many", 0, true, T120, now),
            0);
    }
    const struct ns_live *e = ns_liveness_table_find(&t, "c", "many");
    assert_int_equal(e->n_holders, NS_LIVENESS_TABLE_MAX_HOLDERS);
    assert_true(e->holders_overflow);
    for (uint64_t id = 2; id < 2 + NS_LIVENESS_TABLE_MAX_HOLDERS + 1; id++) {
        assert_int_equal(ns_liveness_table_merge(&t, id, "c", "many", 0, false,
                                                 T120, now + 1),
                         0);
    }
    assert_int_equal(e->n_holders, 0);
    assert_int_equal(expire(&t, now + 10000, &x), 0);
    assert_int_equal(ns_liveness_table_next_deadline(&t), now + 1 + T120);
    /* A report claiming a sighting before time 0 counts from 0; a report
     * with timeout 0 keeps the broker's timeout. */
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "old", 50000, false, 7000, 100), 0);
    assert_int_equal(ns_liveness_table_find(&t, "c", "old")->seen_ms, 0);
    assert_int_equal(
        ns_liveness_table_merge(&t, 2, "c", "old", 0, false, 0, 200), 0);
    assert_int_equal(ns_liveness_table_find(&t, "c", "old")->timeout_ms, 7000);
    assert_int_equal(ns_liveness_table_find(&t, "c", "old")->seen_ms, 200);
    assert_int_equal(t.n_merged, 2 * (NS_LIVENESS_TABLE_MAX_HOLDERS + 1) + 2);
    ns_liveness_table_remove(&t, "c", "old");
    ns_liveness_table_remove(&t, "c", "many");
    /* ms_since saturates at UINT32_MAX. */
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b1", 5, T120, NULL, NULL), 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(ns_liveness_table_take_reports(
                         &t, (uint64_t)UINT32_MAX + 100, 10, on_report, &r),
                     1);
    assert_int_equal(r.since[0], UINT32_MAX);
    /* At most max per call; a refusing callback keeps its entry dirty. */
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b2", 10, T120, NULL, NULL), 0);
    assert_int_equal(
        ns_liveness_table_register(&t, "c", "b3", 10, T120, NULL, NULL), 0);
    assert_true(ns_liveness_table_touch(&t, "c", "b1", 10));
    memset(&r, 0, sizeof r);
    assert_int_equal(ns_liveness_table_take_reports(&t, 20, 1, on_report, &r),
                     1);
    assert_int_equal(t.n_dirty, 2);
    memset(&r, 0, sizeof r);
    assert_int_equal(
        ns_liveness_table_take_reports(&t, 20, 10, refuse_second, &r), 1);
    assert_int_equal(t.n_dirty, 1);
    memset(&r, 0, sizeof r);
    assert_int_equal(ns_liveness_table_take_reports(&t, 20, 10, on_report, &r),
                     1);
    assert_int_equal(t.n_dirty, 0);
    /* Long names are copied whole. */
    char name[4096];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(
        ns_liveness_table_register(&t, name, name, 10, 1, NULL, NULL), 0);
    assert_non_null(ns_liveness_table_find(&t, name, name));
    assert_null(ns_liveness_table_find(&t, name, "n"));
    ns_liveness_table_close(&t);
}

static void test_scan_cost(void **state)
{
    (void)state;
    struct ns_liveness_table t;
    struct expired x;
    char addr[32];
    assert_int_equal(ns_liveness_table_init(&t, 1), 0);
    ns_liveness_table_take_leadership(&t, 0);
    for (unsigned i = 0; i < 100000; i++) {
        snprintf(addr, sizeof addr, "10.0.%u.%u:10911", i / 256, i % 256);
        uint64_t timeout = i % 10000 == 0 ? 1000 : T120;
        assert_int_equal(
            ns_liveness_table_register(&t, "c", addr, 10, timeout, NULL, NULL),
            0);
    }
    t.n_visits = 0;
    assert_int_equal(expire(&t, 5000, &x), 10);
    assert_true(t.n_visits <= 11);
    assert_int_equal(t.n, 99990);
    t.n_visits = 0;
    assert_int_equal(expire(&t, 10000, &x), 0);
    assert_int_equal(t.n_visits, 1);
    ns_liveness_table_close(&t);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (int k = 0;; k++) {
        struct ns_liveness_table t;
        ns_alloc_fail_at(k, 1);
        int rv = ns_liveness_table_init(&t, 1);
        if (rv == 0) {
            rv = ns_liveness_table_merge(&t, 2, "c", "b", 0, true, T120, 10);
            ns_alloc_fail_at(-1, 0);
            assert_true(rv == 0 || rv == NS_ENOMEM);
            ns_liveness_table_close(&t);
        } else {
            ns_alloc_fail_at(-1, 0);
            assert_int_equal(rv, NS_ENOMEM);
        }
        if (rv == 0) {
            break;
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_three_nodes),
        cmocka_unit_test(test_per_broker_timeouts),
        cmocka_unit_test(test_fast_path_needs_all_holders),
        cmocka_unit_test(test_reregistration_cancels_fast_path),
        cmocka_unit_test(test_new_leader_grace),
        cmocka_unit_test(test_reports),
        cmocka_unit_test(test_heartbeat),
        cmocka_unit_test(test_each),
        cmocka_unit_test(test_expiry_order_and_boundaries),
        cmocka_unit_test(test_conn_close),
        cmocka_unit_test(test_reseed_after_leader_change),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_scan_cost),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
