/* Unit tests of snapshots (raft/snapshot.c): golden bytes of a small state,
 * round trip, truncation at every length, version/magic checks, state unchanged
 * on error, and an allocation-failure sweep on decode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/json.h"

static void apply_cmd(struct ns_state *s, struct ns_command *c)
{
    assert_int_equal(ns_fsm_apply(s, c, NULL), 0);
    ns_command_close(c);
}

/* KV entry, one config change, one member; routes left empty (their encoding
 * belongs to route_state.c and is golden-tested there), but embedded here as it
 * is today. */
static void small_state(struct ns_state *s)
{
    assert_int_equal(ns_state_init(s), 0);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_KV_PUT);
    c.u.kv.ns = ns_strdup("n");
    c.u.kv.key = ns_strdup("k");
    c.u.kv.value = ns_strdup("v");
    apply_cmd(s, &c);
    ns_command_init(&c, NS_CMD_SET_MEMBER);
    c.u.member.id = 1;
    c.u.member.raft_addr = ns_strdup("r");
    apply_cmd(s, &c);
}

static void big_state(struct ns_state *s)
{
    small_state(s);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    struct ns_register *r = &c.u.reg;
    r->cluster = ns_strdup("c1");
    r->broker_name = ns_strdup("broker-a");
    r->broker_addr = ns_strdup("127.0.0.1:10911");
    r->dv.counter = 1;
    r->topics = ns_calloc(2, sizeof *r->topics);
    r->topics[0] = (struct ns_topic_config){ns_strdup("TopicA"), 4, 4, 6, 0};
    r->topics[1] = (struct ns_topic_config){ns_strdup("TopicB"), 8, 8, 6, 1};
    r->n_topics = 2;
    assert_int_equal(ns_fsm_apply(s, &c, NULL), 0);
    ns_command_close(&c);
    ns_command_init(&c, NS_CMD_UPDATE_CONFIG);
    assert_int_equal(ns_props_set(&c.u.config, "orderMessageEnable", "true"),
                     0);
    apply_cmd(s, &c);
}

static void encode(const struct ns_state *s, struct ns_buf *b)
{
    ns_buf_init(b);
    assert_int_equal(ns_snapshot_encode(s, b), 0);
}

/* Finds needle in the buffer; returns its offset or fails. */
static size_t find(const struct ns_buf *b, const void *needle, size_t n)
{
    for (size_t i = 0; i + n <= b->len; i++) {
        if (memcmp(b->data + i, needle, n) == 0) {
            return i;
        }
    }
    fail();
    return 0;
}

static void test_golden(void **state)
{
    (void)state;
    struct ns_state s;
    small_state(&s);
    struct ns_buf b;
    encode(&s, &b);
    static const uint8_t head[] = {'R', 'N', 'S', 'S', 0x00, 0x01};
    assert_memory_equal(b.data, head, sizeof head);
    /* KV state as documented in kv.c, right before the config state. */
    static const uint8_t kv[] = {0x00, 0x01, 0, 0, 0, 1, 0,   0,    0,
                                 1,    'n',  0, 0, 0, 1, 0,   0,    0,
                                 1,    'k',  0, 0, 0, 1, 'v', 0x00, 0x01};
    size_t kv_off = find(&b, kv, sizeof kv);
    /* Members: the tail of the snapshot. */
    static const uint8_t tail[] = {
        0, 0, 0, 1,   0,    0,    0,    0,    0,    0,    0,    1,   0,
        0, 0, 1, 'r', 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    assert_true(b.len > sizeof tail);
    assert_memory_equal(b.data + b.len - sizeof tail, tail, sizeof tail);
    /* Route state is whatever the route module encodes for an empty route. */
    struct ns_route *empty = ns_route_create();
    struct ns_buf rb;
    ns_buf_init(&rb);
    assert_int_equal(ns_route_encode_state(empty, &rb), 0);
    assert_int_equal(kv_off, sizeof head + rb.len);
    assert_memory_equal(b.data + sizeof head, rb.data, rb.len);
    ns_buf_close(&rb);
    ns_route_destroy(empty);
    ns_buf_close(&b);
    ns_state_close(&s);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct ns_state s, t;
    big_state(&s);
    struct ns_buf b;
    encode(&s, &b);
    assert_int_equal(ns_state_init(&t), 0);
    t.n_applied = 99;
    assert_int_equal(ns_snapshot_decode(&t, b.data, b.len), 0);
    assert_int_equal(t.n_applied, 0);
    assert_string_equal(ns_kv_find(t.kv, "n", "k"), "v");
    assert_true(ns_config_settings(t.config)->order_message_enable);
    assert_int_equal(ns_route_n_topics(t.route), 2);
    assert_int_equal(t.n_members, 1);
    struct ns_buf b2;
    encode(&t, &b2);
    assert_int_equal(b2.len, b.len);
    assert_memory_equal(b2.data, b.data, b.len);
    uint64_t ds, dt;
    assert_int_equal(ns_snapshot_digest(&s, &ds), 0);
    assert_int_equal(ns_snapshot_digest(&t, &dt), 0);
    assert_int_equal(ds, dt);
    ns_buf_close(&b2);
    ns_buf_close(&b);
    ns_state_close(&t);
    ns_state_close(&s);
}

static void test_truncation_and_version(void **state)
{
    (void)state;
    struct ns_state s, t;
    big_state(&s);
    struct ns_buf b;
    encode(&s, &b);
    assert_int_equal(ns_state_init(&t), 0);
    assert_int_equal(ns_kv_put(t.kv, "keep", "me", "1"), 0);
    for (size_t len = 0; len < b.len; len++) {
        int rv = ns_snapshot_decode(&t, b.data, len);
        assert_true(rv == NS_EPROTO || rv == NS_EVERSION);
        assert_string_equal(ns_kv_find(t.kv, "keep", "me"),
                            "1"); /* unchanged */
    }
    uint8_t *copy = ns_malloc(b.len + 1);
    memcpy(copy, b.data, b.len);
    copy[b.len] = 0;
    assert_int_equal(ns_snapshot_decode(&t, copy, b.len + 1),
                     NS_EPROTO); /* trailing */
    copy[5] = 5;                 /* versions 1 to 4 are known */
    assert_int_equal(ns_snapshot_decode(&t, copy, b.len), NS_EVERSION);
    copy[5] = 4; /* and version 4's tables are missing */
    assert_int_equal(ns_snapshot_decode(&t, copy, b.len), NS_EPROTO);
    copy[5] = 2; /* version 1 bytes lack the account table of version 2 */
    assert_int_equal(ns_snapshot_decode(&t, copy, b.len), NS_EPROTO);
    copy[5] = 3; /* and the request-id table of version 3 */
    assert_int_equal(ns_snapshot_decode(&t, copy, b.len), NS_EPROTO);
    copy[5] = 1;
    copy[0] = 'X';
    assert_int_equal(ns_snapshot_decode(&t, copy, b.len), NS_EPROTO);
    assert_string_equal(ns_kv_find(t.kv, "keep", "me"), "1");
    ns_free(copy);
    ns_buf_close(&b);
    ns_state_close(&t);
    ns_state_close(&s);
}

static void add_account(struct ns_state *s, const char *ak, const char *sk)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_ACL_PUT);
    c.u.acl_put.access_key = ns_strdup(ak);
    c.u.acl_put.secret_key = ns_strdup(sk);
    c.u.acl_put.role = NS_ACL_ROLE_BROKER;
    c.u.acl_put.nets = ns_calloc(1, sizeof(struct ns_acl_net));
    c.u.acl_put.nets[0] = (struct ns_acl_net){0x7F000000u, 8};
    c.u.acl_put.n_nets = 1;
    apply_cmd(s, &c);
}

/* Version 2: version 1's bytes with the version field 2, then the account
 * table; written while any account exists or the table was seeded. */
static void test_golden_v2(void **state)
{
    (void)state;
    struct ns_state s, t;
    small_state(&s);
    struct ns_buf v1, v2;
    encode(&s, &v1);
    uint64_t d1;
    assert_int_equal(ns_snapshot_digest(&s, &d1), 0);
    add_account(&s, "ak", "sk");
    encode(&s, &v2);
    static const uint8_t acl[] = {
        0x01, 0,   0,   0, 1, 0, 0, 0, 2,    'a', 'k', 0, 0, 0,
        2,    's', 'k', 2, 0, 0, 0, 1, 0x7F, 0,   0,   0, 8,
    };
    assert_int_equal(v2.len, v1.len + sizeof acl);
    assert_int_equal(v2.data[5], 2);
    assert_memory_equal(v2.data + 6, v1.data + 6, v1.len - 6);
    assert_memory_equal(v2.data + v1.len, acl, sizeof acl);
    uint64_t d2;
    assert_int_equal(ns_snapshot_digest(&s, &d2), 0);
    assert_true(d1 != d2);
    /* round trip, and version 1 still decodes (into an empty table) */
    assert_int_equal(ns_state_init(&t), 0);
    assert_int_equal(ns_snapshot_decode(&t, v2.data, v2.len), 0);
    assert_int_equal(t.acl.n, 1);
    assert_true(t.acl.seeded);
    assert_string_equal(ns_acl_find(&t.acl, "ak")->secret_key, "sk");
    struct ns_buf again;
    encode(&t, &again);
    assert_int_equal(again.len, v2.len);
    assert_memory_equal(again.data, v2.data, v2.len);
    for (size_t len = v1.len; len < v2.len; len++) {
        assert_int_equal(ns_snapshot_decode(&t, v2.data, len), NS_EPROTO);
    }
    assert_int_equal(ns_snapshot_decode(&t, v1.data, v1.len), 0);
    assert_int_equal(t.acl.n, 0);
    assert_false(t.acl.seeded);
    /* a removed last account keeps version 2: the table was managed */
    struct ns_command c;
    ns_command_init(&c, NS_CMD_ACL_REMOVE);
    c.u.acl_remove.access_key = ns_strdup("ak");
    apply_cmd(&s, &c);
    struct ns_buf v2e;
    encode(&s, &v2e);
    assert_int_equal(v2e.data[5], 2);
    assert_int_equal(v2e.len, v1.len + 5);
    ns_buf_close(&v2e);
    ns_buf_close(&again);
    ns_buf_close(&v2);
    ns_buf_close(&v1);
    ns_state_close(&t);
    ns_state_close(&s);
}

/* A broker's DataVersion of 2^53 + 1 / Long.MAX survives a snapshot exactly
 * (the format already stores it as a 64-bit integer: no version change). */
static void test_dv_64bit(void **state)
{
    (void)state;
    struct ns_state s, t;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    c.u.reg.cluster = ns_strdup("c1");
    c.u.reg.broker_name = ns_strdup("broker-a");
    c.u.reg.broker_addr = ns_strdup("127.0.0.1:10911");
    c.u.reg.dv.counter = 9007199254740993LL;
    c.u.reg.dv.timestamp = INT64_MAX;
    apply_cmd(&s, &c);
    struct ns_buf b;
    encode(&s, &b);
    assert_int_equal(ns_state_init(&t), 0);
    assert_int_equal(ns_snapshot_decode(&t, b.data, b.len), 0);
    const struct ns_data_version *dv =
        ns_route_find_data_version(t.route, "c1", "127.0.0.1:10911");
    assert_non_null(dv);
    assert_true(dv->counter == 9007199254740993LL);
    assert_true(dv->timestamp == INT64_MAX);
    ns_buf_close(&b);
    ns_state_close(&t);
    ns_state_close(&s);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    struct ns_state s;
    big_state(&s);
    add_account(&s, "ak", "sk");
    add_account(&s, "ak0", "sk0");
    struct ns_buf b;
    encode(&s, &b);
    bool ok = false;
    for (long k = 0; !ok && k < 5000; k++) {
        struct ns_state t;
        assert_int_equal(ns_state_init(&t), 0);
        ns_alloc_fail_at(k, 1);
        int rv = ns_snapshot_decode(&t, b.data, b.len);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        if (!ok) {
            assert_int_equal(ns_route_n_topics(t.route), 0);
        }
        ns_state_close(&t);
    }
    assert_true(ok);
    /* Encoding under memory pressure reports NS_ENOMEM. */
    ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_buf e;
        ns_buf_init(&e);
        ns_alloc_fail_at(k, 1);
        int rv = ns_snapshot_encode(&s, &e);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_buf_close(&e);
    }
    assert_true(ok);
    ns_buf_close(&b);
    ns_state_close(&s);
}

int main(void)
{
    ns_json_use_ns_alloc();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_truncation_and_version),
        cmocka_unit_test(test_golden_v2),
        cmocka_unit_test(test_dv_64bit),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
