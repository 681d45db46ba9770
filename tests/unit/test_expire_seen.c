/* Unit tests of the guarded expiry (EXPIRE_BROKERS_SEEN) through
 * ns_fsm_apply_bytes: an expiry removes a broker only while its registration
 * count is the one the leader saw when it decided, so a registration applied
 * between that decision and the expiry survives; the count survives a
 * snapshot, so a node restored from one decides the same; the old
 * EXPIRE_BROKERS keeps its unconditional meaning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

#define SEEN_ADDR "127.0.0.1:10911"

static void seen_apply(struct ns_state *s, struct ns_command *c)
{
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(c, &b), 0);
    ns_command_close(c);
    struct ns_apply_result res;
    memset(&res, 0, sizeof res);
    assert_int_equal(ns_fsm_apply_bytes(s, b.data, b.len, &res), 0);
    ns_fsm_result_close(&res);
    ns_buf_close(&b);
}

static void seen_register(struct ns_state *s, int64_t counter)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    struct ns_register *r = &c.u.reg;
    r->cluster = ns_strdup("c1");
    r->broker_name = ns_strdup("broker-a");
    r->broker_addr = ns_strdup(SEEN_ADDR);
    r->broker_id = 0;
    r->dv.counter = counter;
    r->dv.timestamp = 1700000000000LL;
    r->topics = ns_calloc(1, sizeof *r->topics);
    r->topics[0] = (struct ns_topic_config){ns_strdup("TopicA"), 4, 4, 6, 0};
    r->n_topics = 1;
    seen_apply(s, &c);
}

/* type EXPIRE_BROKERS_SEEN with regs_seen, or EXPIRE_BROKERS (seen ignored) */
static void seen_expire(struct ns_state *s, enum ns_command_type type,
                        uint64_t seen)
{
    struct ns_command c;
    ns_command_init(&c, type);
    c.u.brokers.refs = ns_calloc(1, sizeof *c.u.brokers.refs);
    c.u.brokers.refs[0].cluster = ns_strdup("c1");
    c.u.brokers.refs[0].broker_addr = ns_strdup(SEEN_ADDR);
    if (type == NS_CMD_EXPIRE_BROKERS_SEEN) {
        c.u.brokers.regs_seen = ns_calloc(1, sizeof(uint64_t));
        c.u.brokers.regs_seen[0] = seen;
    }
    c.u.brokers.n = 1;
    seen_apply(s, &c);
}

static uint64_t seen_regs(const struct ns_state *s)
{
    uint64_t regs = UINT64_MAX;
    assert_true(ns_route_broker_regs(s->route, "c1", SEEN_ADDR, &regs));
    return regs;
}

static bool seen_routed(const struct ns_state *s)
{
    return ns_route_broker_timeout(s->route, "c1", SEEN_ADDR) >= 0 &&
           ns_route_n_topics(s->route) == 1;
}

static void test_newer_registration_is_kept(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    seen_register(&s, 1);
    uint64_t decided = seen_regs(&s); /* what the leader saw */
    assert_int_equal(decided, 0);
    seen_register(&s, 2); /* applied between the decision and the expiry */
    assert_int_equal(seen_regs(&s), 1);
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS_SEEN, decided);
    assert_true(seen_routed(&s));
    assert_int_equal(seen_regs(&s), 1);
    /* an expiry decided on the current registration removes it */
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS_SEEN, 1);
    assert_int_equal(ns_route_n_brokers(s.route), 0);
    assert_int_equal(ns_route_n_topics(s.route), 0);
    /* an unchanged re-registration counts too: it is a new registration */
    seen_register(&s, 2);
    seen_register(&s, 2);
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS_SEEN, 0);
    assert_true(seen_routed(&s));
    /* a count ahead of the state (not what any node saw) removes nothing */
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS_SEEN, 5);
    assert_true(seen_routed(&s));
    ns_state_close(&s);
}

static void test_old_expiry_is_unconditional(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    seen_register(&s, 1);
    seen_register(&s, 2);
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS, 0);
    assert_int_equal(ns_route_n_brokers(s.route), 0);
    ns_state_close(&s);
}

static void seen_copy(const struct ns_state *from, struct ns_state *to)
{
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_snapshot_encode(from, &b), 0);
    assert_int_equal(ns_state_init(to), 0);
    assert_int_equal(ns_snapshot_decode(to, b.data, b.len), 0);
    ns_buf_close(&b);
}

/* A node restored from a snapshot holds the same counts, hence the same
 * digest and the same decision as one that applied the log. */
static void test_count_survives_snapshot(void **state)
{
    (void)state;
    struct ns_state s, back;
    assert_int_equal(ns_state_init(&s), 0);
    seen_register(&s, 1);
    /* only first registrations: the route state keeps its version 1 bytes */
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_route_encode_state(s.route, &b), 0);
    assert_true(b.len > 2 && b.data[0] == 0 && b.data[1] == 1);
    ns_buf_close(&b);
    seen_register(&s, 2);
    ns_buf_init(&b);
    assert_int_equal(ns_route_encode_state(s.route, &b), 0);
    assert_true(b.len > 2 && b.data[0] == 0 && b.data[1] == 2);
    ns_buf_close(&b);

    seen_copy(&s, &back);
    assert_int_equal(seen_regs(&back), 1);
    uint64_t d1, d2;
    assert_int_equal(ns_snapshot_digest(&s, &d1), 0);
    assert_int_equal(ns_snapshot_digest(&back, &d2), 0);
    assert_int_equal(d1, d2);
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS_SEEN, 0);
    seen_expire(&back, NS_CMD_EXPIRE_BROKERS_SEEN, 0);
    assert_true(seen_routed(&s));
    assert_true(seen_routed(&back));
    seen_expire(&s, NS_CMD_EXPIRE_BROKERS_SEEN, 1);
    seen_expire(&back, NS_CMD_EXPIRE_BROKERS_SEEN, 1);
    assert_int_equal(ns_route_n_brokers(s.route), 0);
    assert_int_equal(ns_route_n_brokers(back.route), 0);
    ns_state_close(&back);
    ns_state_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newer_registration_is_kept),
        cmocka_unit_test(test_old_expiry_is_unconditional),
        cmocka_unit_test(test_count_survives_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
