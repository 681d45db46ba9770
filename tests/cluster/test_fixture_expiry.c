/* Expiry grace after failover (docs/design.md §5). A broker registered
 * through Raft heartbeats to the leader only, up to the moment the leader is
 * killed. The new leader runs the server's pure liveness table
 * (include/raftns/liveness_table.h) on fixture time: it seeds the brokers it
 * finds in its replicated route with "heard now", takes leadership (a full
 * timeout for everyone) and expires through an EXPIRE_BROKERS entry. The broker
 * must survive at least one full timeout after the takeover and then disappear
 * from every replica. It does not test report merging or the fast path (unit
 * tests of the table do). */
#include "fixture_util.h"
#include "raftns/liveness_table.h"

#define TIMEOUT_MS 5000

static struct fx x; /* static: zeroed (P6) */

struct expiry_ctx {
    struct ns_broker_ref refs[4];
    size_t n;
};

static void on_expired(void *arg, const struct ns_live *e, bool fast)
{
    struct expiry_ctx *ctx = arg;
    (void)fast;
    assert_true(ctx->n < 4);
    ctx->refs[ctx->n].cluster = ns_strdup(e->cluster);
    ctx->refs[ctx->n].broker_addr = ns_strdup(e->addr);
    ctx->n++;
}

struct seed_ctx {
    struct ns_liveness_table *t;
    uint64_t now;
};

static void seed_one(void *arg, const char *cluster, const char *addr,
                     int64_t timeout_ms)
{
    struct seed_ctx *ctx = arg;
    if (ns_liveness_table_find(ctx->t, cluster, addr) == NULL) {
        assert_int_equal(ns_liveness_table_seed(ctx->t, cluster, addr,
                                                (uint64_t)timeout_ms, ctx->now),
                         0);
    }
}

static void test_new_leader_grants_full_timeout(void **state)
{
    (void)state;
    struct ns_liveness_table lvt[3];
    struct ns_command c;
    const char *ts[2] = {"GraceTopic", "GraceTopic2"};
    const char *addr = "10.0.5.5:10911";
    fx_setup(&x, 3, true);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(ns_liveness_table_init(&lvt[i], i + 1), 0);
    }
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < 3);
    ns_liveness_table_take_leadership(&lvt[l], raft_fixture_time(&x.f));

    fx_cmd_register(&c, "DefaultCluster", "broker-g", 0, addr, 1, ts, 2);
    c.u.reg.heartbeat_timeout_ms = TIMEOUT_MS;
    assert_int_equal(fx_apply_sync(&x, &c, 10000), 0);
    ns_command_close(&c);
    assert_int_equal(ns_liveness_table_register(&lvt[l], "DefaultCluster", addr,
                                                raft_fixture_time(&x.f),
                                                TIMEOUT_MS, NULL, NULL),
                     0);
    /* Heartbeats every second for 8 s: the old leader never expires it. */
    for (unsigned k = 0; k < 8; k++) {
        raft_fixture_step_until_elapsed(&x.f, 1000);
        raft_time now = raft_fixture_time(&x.f);
        assert_true(
            ns_liveness_table_touch(&lvt[l], "DefaultCluster", addr, now));
        struct expiry_ctx none = {0};
        assert_int_equal(
            ns_liveness_table_expire(&lvt[l], now, on_expired, &none), 0);
    }
    raft_time crash = raft_fixture_time(&x.f);
    raft_fixture_kill(&x.f, l);

    unsigned n = fx_wait_leader(&x, 30000);
    assert_true(n < 3 && n != l);
    raft_time takeover = raft_fixture_time(&x.f);
    struct seed_ctx sc = {&lvt[n], takeover};
    ns_route_foreach_broker(x.s[n].state.route, seed_one, &sc);
    ns_liveness_table_take_leadership(&lvt[n], takeover);
    printf("crash at %llu ms, takeover at %llu ms\n", (unsigned long long)crash,
           (unsigned long long)takeover);

    /* The new leader scans on every step; the broker is silent now. */
    struct expiry_ctx ctx = {0};
    raft_time expired_at = 0;
    while (expired_at == 0) {
        raft_fixture_step(&x.f);
        raft_time now = raft_fixture_time(&x.f);
        assert_true(now < takeover + 3 * TIMEOUT_MS);
        assert_int_equal(fx_ready_leader(&x), n);
        if (ns_liveness_table_expire(&lvt[n], now, on_expired, &ctx) > 0) {
            expired_at = now;
        }
    }
    printf("expired at %llu ms\n", (unsigned long long)expired_at);
    assert_int_equal(ctx.n, 1);
    assert_string_equal(ctx.refs[0].broker_addr, addr);
    assert_true(expired_at >= crash + TIMEOUT_MS);
    assert_true(expired_at >= takeover + TIMEOUT_MS);
    assert_true(expired_at <= takeover + TIMEOUT_MS + 200);

    ns_command_init(&c, NS_CMD_EXPIRE_BROKERS);
    c.leader_time_ms = (int64_t)expired_at;
    c.u.brokers.refs = ns_calloc(1, sizeof *c.u.brokers.refs);
    assert_non_null(c.u.brokers.refs);
    c.u.brokers.refs[0] = ctx.refs[0];
    c.u.brokers.n = 1;
    assert_int_equal(fx_apply_sync(&x, &c, 10000), 0);
    ns_command_close(&c);

    raft_fixture_revive(&x.f, l);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    for (unsigned i = 0; i < 3; i++) {
        struct ns_buf r;
        assert_int_equal(ns_route_n_brokers(x.s[i].state.route), 0);
        assert_int_equal(fx_route(&x, i, "GraceTopic", &r), NS_ENOTFOUND);
        ns_buf_close(&r);
        ns_liveness_table_close(&lvt[i]);
    }
    ns_buf_close(&all);
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_leader_grants_full_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
