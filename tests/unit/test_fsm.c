/* Unit tests of the state machine (raft/fsm.c) through ns_fsm_apply_bytes, the
 * production path: every command type changes the state as the route/KV/config
 * modules say, results are reported, members stay sorted, and two states fed
 * the same commands are identical. */
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

static int apply(struct ns_state *s, struct ns_command *c,
                 struct ns_apply_result *res)
{
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(c, &b), 0);
    ns_command_close(c);
    int rv = ns_fsm_apply_bytes(s, b.data, b.len, res);
    ns_buf_close(&b);
    return rv;
}

static void cmd_register(struct ns_command *c, const char *name,
                         const char *addr, int64_t id,
                         const char *const *topics, size_t n)
{
    ns_command_init(c, NS_CMD_REGISTER_BROKER);
    struct ns_register *r = &c->u.reg;
    r->cluster = ns_strdup("c1");
    r->broker_name = ns_strdup(name);
    r->broker_addr = ns_strdup(addr);
    r->ha_addr = ns_strdup("127.0.0.1:10912");
    r->broker_id = id;
    r->acting_master = 0;
    r->dv.counter = 1;
    r->dv.timestamp = 1700000000000LL;
    r->topics = ns_calloc(n ? n : 1, sizeof *r->topics);
    for (size_t i = 0; i < n; i++) {
        r->topics[i] =
            (struct ns_topic_config){ns_strdup(topics[i]), 4, 4, 6, 0};
    }
    r->n_topics = n;
}

static void cmd_kv(struct ns_command *c, enum ns_command_type t, const char *k,
                   const char *v)
{
    ns_command_init(c, t);
    c->u.kv.ns = ns_strdup(NS_KV_ORDER_TOPIC_CONFIG);
    c->u.kv.key = ns_strdup(k);
    c->u.kv.value = ns_strdup(v);
}

static void cmd_perm(struct ns_command *c, enum ns_command_type t,
                     const char *name)
{
    ns_command_init(c, t);
    c->u.perm.broker_name = ns_strdup(name);
}

static void cmd_member(struct ns_command *c, uint64_t id, const char *raft)
{
    ns_command_init(c, NS_CMD_SET_MEMBER);
    c->u.member.id = id;
    c->u.member.raft_addr = ns_strdup(raft);
    c->u.member.client_addr = ns_strdup(raft);
}

static char *route_json(struct ns_state *s, const char *topic)
{
    static char text[2048];
    struct ns_route_query q = {topic, NS_JSON_LEGACY, false, NULL, NULL, false};
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_route_encode_topic_route(s->route, &q, &b);
    char *out = NULL;
    if (rv == 0 && b.len < sizeof text) {
        memcpy(text, b.data, b.len);
        text[b.len] = '\0';
        out = text;
    }
    ns_buf_close(&b);
    return out;
}

static const char *const TOPICS[] = {"TopicA", "TopicB"};

/* A fixed sequence touching every command type; res of each is checked. */
static void run_sequence(struct ns_state *s)
{
    struct ns_command c;
    struct ns_apply_result res;

    cmd_register(&c, "broker-a", "127.0.0.1:10911", 0, TOPICS, 2);
    assert_int_equal(apply(s, &c, &res), 0);
    assert_int_equal(res.type, NS_CMD_REGISTER_BROKER);
    assert_int_equal(res.reg.status, NS_REGISTER_OK);
    assert_null(res.reg.master_addr);
    ns_fsm_result_close(&res);

    cmd_register(&c, "broker-a", "127.0.0.1:10921", 1, TOPICS, 2);
    assert_int_equal(apply(s, &c, &res), 0);
    assert_string_equal(res.reg.master_addr, "127.0.0.1:10911");
    ns_fsm_result_close(&res);

    cmd_kv(&c, NS_CMD_KV_PUT, "TopicA", "broker-a:4");
    assert_int_equal(apply(s, &c, NULL), 0);
    cmd_kv(&c, NS_CMD_KV_PUT, "TopicB", "broker-a:8");
    assert_int_equal(apply(s, &c, NULL), 0);
    cmd_kv(&c, NS_CMD_KV_DELETE, "TopicB", NULL);
    assert_int_equal(apply(s, &c, NULL), 0);

    cmd_perm(&c, NS_CMD_WIPE_WRITE_PERM, "broker-a");
    assert_int_equal(apply(s, &c, &res), 0);
    assert_int_equal(res.count, 2);
    ns_fsm_result_close(&res);
    cmd_perm(&c, NS_CMD_ADD_WRITE_PERM, "broker-a");
    assert_int_equal(apply(s, &c, &res), 0);
    assert_int_equal(res.count, 2);
    ns_fsm_result_close(&res);

    ns_command_init(&c, NS_CMD_REGISTER_TOPIC);
    c.u.topic_register.topic = ns_strdup("TopicC");
    c.u.topic_register.qds = ns_calloc(1, sizeof(struct ns_queue_data));
    c.u.topic_register.qds[0] =
        (struct ns_queue_data){ns_strdup("broker-a"), 2, 2, 6, 0};
    c.u.topic_register.n = 1;
    assert_int_equal(apply(s, &c, NULL), 0);

    ns_command_init(&c, NS_CMD_DELETE_TOPIC);
    c.u.topic_delete.topic = ns_strdup("TopicB");
    assert_int_equal(apply(s, &c, NULL), 0);

    ns_command_init(&c, NS_CMD_UPDATE_CONFIG);
    assert_int_equal(ns_props_set(&c.u.config, "orderMessageEnable", "true"),
                     0);
    assert_int_equal(
        ns_props_set(&c.u.config, "deleteTopicWithBrokerRegistration", "true"),
        0);
    assert_int_equal(apply(s, &c, NULL), 0);

    cmd_member(&c, 3, "127.0.0.1:9883");
    assert_int_equal(apply(s, &c, NULL), 0);
    cmd_member(&c, 1, "127.0.0.1:9881");
    assert_int_equal(apply(s, &c, NULL), 0);
    cmd_member(&c, 2, "127.0.0.1:9882");
    assert_int_equal(apply(s, &c, NULL), 0);
    cmd_member(&c, 2, "127.0.0.1:9992"); /* replace */
    assert_int_equal(apply(s, &c, NULL), 0);
    ns_command_init(&c, NS_CMD_SET_MEMBER); /* remove 3 */
    c.u.member.id = 3;
    assert_int_equal(apply(s, &c, NULL), 0);

    ns_command_init(&c, NS_CMD_EXPIRE_BROKERS);
    c.u.brokers.refs = ns_calloc(1, sizeof(struct ns_broker_ref));
    c.u.brokers.refs[0].cluster = ns_strdup("c1");
    c.u.brokers.refs[0].broker_addr = ns_strdup("127.0.0.1:10921");
    c.u.brokers.n = 1;
    assert_int_equal(apply(s, &c, NULL), 0);

    ns_command_init(&c, NS_CMD_CHECKPOINT);
    c.u.checkpoint.index = 17;
    c.u.checkpoint.digest = 0xABCDEFull;
    assert_int_equal(apply(s, &c, NULL), 0);
}

static void test_sequence(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    run_sequence(&s);
    assert_int_equal(s.n_applied, 17);
    assert_int_equal(s.last_checkpoint_digest, 0xABCDEF);
    assert_int_equal(ns_route_n_brokers(s.route), 1);
    assert_int_equal(ns_route_n_topics(s.route), 2); /* A, C */
    assert_null(route_json(&s, "TopicB"));
    const char *a = route_json(&s, "TopicA");
    assert_non_null(a);
    assert_non_null(strstr(a, "\"perm\":6"));
    assert_null(strstr(a, "10921")); /* the slave expired */
    assert_string_equal(ns_kv_find(s.kv, NS_KV_ORDER_TOPIC_CONFIG, "TopicA"),
                        "broker-a:4");
    assert_null(ns_kv_find(s.kv, NS_KV_ORDER_TOPIC_CONFIG, "TopicB"));
    assert_true(ns_config_settings(s.config)->order_message_enable);
    assert_true(
        ns_config_settings(s.config)->delete_topic_with_broker_registration);
    assert_int_equal(s.n_members, 2);
    assert_int_equal(s.members[0].id, 1);
    assert_int_equal(s.members[1].id, 2);
    assert_string_equal(s.members[1].raft_addr, "127.0.0.1:9992");

    /* deleteTopicWithBrokerRegistration now drops topics missing from a
     * registration. */
    struct ns_command c;
    cmd_register(&c, "broker-a", "127.0.0.1:10911", 0, TOPICS, 1);
    c.u.reg.dv.counter = 2;
    assert_int_equal(apply(&s, &c, NULL), 0);
    assert_null(route_json(&s, "TopicC"));
    assert_non_null(route_json(&s, "TopicA"));

    ns_command_init(&c, NS_CMD_UNREGISTER_BROKERS);
    c.u.brokers.refs = ns_calloc(1, sizeof(struct ns_broker_ref));
    c.u.brokers.refs[0] =
        (struct ns_broker_ref){ns_strdup("c1"), ns_strdup("127.0.0.1:10911"),
                               ns_strdup("broker-a"), 0};
    c.u.brokers.n = 1;
    assert_int_equal(apply(&s, &c, NULL), 0);
    assert_int_equal(ns_route_n_brokers(s.route), 0);
    assert_null(route_json(&s, "TopicA"));
    ns_state_close(&s);
}

static void test_bad_bytes(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    static const uint8_t future[] = {9, 6, 0, 0, 0, 0, 0,  0,
                                     0, 0, 0, 0, 0, 1, 'x'};
    static const uint8_t junk[] = {1, 77, 0};
    struct ns_apply_result res;
    assert_int_equal(ns_fsm_apply_bytes(&s, future, sizeof future, &res),
                     NS_EVERSION);
    assert_int_equal(ns_fsm_apply_bytes(&s, junk, sizeof junk, NULL),
                     NS_EPROTO);
    assert_int_equal(s.n_applied, 0);
    ns_state_close(&s);
}

static void test_deterministic(void **state)
{
    (void)state;
    struct ns_state a, b;
    assert_int_equal(ns_state_init(&a), 0);
    assert_int_equal(ns_state_init(&b), 0);
    uint64_t da, db;
    assert_int_equal(ns_snapshot_digest(&a, &da), 0);
    run_sequence(&a);
    run_sequence(&b);
    assert_int_equal(ns_snapshot_digest(&a, &db), 0);
    assert_int_not_equal(da, db); /* the digest moves with the state */
    struct ns_buf ba, bb;
    ns_buf_init(&ba);
    ns_buf_init(&bb);
    assert_int_equal(ns_snapshot_encode(&a, &ba), 0);
    assert_int_equal(ns_snapshot_encode(&b, &bb), 0);
    assert_int_equal(ba.len, bb.len);
    assert_memory_equal(ba.data, bb.data, ba.len);
    assert_int_equal(ns_snapshot_digest(&a, &da), 0);
    assert_int_equal(ns_snapshot_digest(&b, &db), 0);
    assert_int_equal(da, db);
    ns_buf_close(&ba);
    ns_buf_close(&bb);
    ns_state_close(&a);
    ns_state_close(&b);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    struct ns_command c;
    cmd_register(&c, "broker-a", "127.0.0.1:10911", 0, TOPICS, 2);
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(&c, &b), 0);
    ns_command_close(&c);
    bool ok = false;
    for (long k = 0; !ok && k < 1000; k++) {
        struct ns_state s;
        assert_int_equal(ns_state_init(&s), 0);
        ns_alloc_fail_at(k, 1);
        int rv = ns_fsm_apply_bytes(&s, b.data, b.len, NULL);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_state_close(&s);
    }
    assert_true(ok);
    for (long k = 0; k < 1000; k++) {
        struct ns_state s;
        ns_alloc_fail_at(k, 1);
        int rv = ns_state_init(&s);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        if (rv == 0) {
            ns_state_close(&s);
            break;
        }
    }
    ns_buf_close(&b);
}

/* A config command logged before 318 validated values (or by an older node)
 * still applies: apply is total, stores what it can parse, and the settings
 * the server reads stay within their validated ranges. */
static void test_old_config_command_applies(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_UPDATE_CONFIG);
    static const char *const kv[][2] = {
        {"serverChannelMaxIdleTimeSeconds", "1"},
        {"scanNotActiveBrokerInterval", "9999999999"},
        {"listenPort", "1"},
        {"unknownKey", "x"},
        {"orderMessageEnable", "yes"},
        {"enableTopicList", "false"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        assert_int_equal(ns_props_set(&c.u.config, kv[i][0], kv[i][1]), 0);
    }
    assert_int_equal(apply(&s, &c, NULL), 0);
    const struct ns_settings *st = ns_config_settings(s.config);
    assert_int_equal(st->server_channel_max_idle_time_seconds, 30);
    assert_int_equal(st->scan_not_active_broker_interval_ms, 600000);
    assert_false(st->order_message_enable); /* parseBoolean("yes") */
    assert_false(st->enable_topic_list);
    assert_string_equal(ns_config_get(s.config, "listenPort"), "1");
    assert_null(ns_config_get(s.config, "unknownKey"));
    assert_int_equal(s.n_applied, 1);
    ns_state_close(&s);
}

static struct ns_reqid rid(uint64_t run, uint64_t seq)
{
    struct ns_reqid r = {2, run, seq};
    return r;
}

/* The stale read of the fault suite (tests/jepsen/evidence/README.md): a
 * write's copy delivered to a later leader after newer writes must change
 * nothing, and must still answer as its first apply did. */
static void test_exactly_once(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_command c;
    struct ns_apply_result res;

    cmd_kv(&c, NS_CMD_KV_PUT, "k0", "28-70");
    c.reqid = rid(7, 1);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_int_equal(res.reqid, NS_REQID_NEW);
    cmd_kv(&c, NS_CMD_KV_PUT, "k0", "40-98");
    c.reqid = rid(7, 2);
    assert_int_equal(apply(&s, &c, &res), 0);
    cmd_kv(&c, NS_CMD_KV_PUT, "k0", "28-70"); /* the late copy */
    c.reqid = rid(7, 1);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_int_equal(res.reqid, NS_REQID_DUPLICATE);
    assert_string_equal(ns_kv_find(s.kv, NS_KV_ORDER_TOPIC_CONFIG, "k0"),
                        "40-98");
    /* an id of an earlier run (a process that is gone) is refused */
    cmd_kv(&c, NS_CMD_KV_DELETE, "k0", NULL);
    c.reqid = rid(6, 9);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_int_equal(res.reqid, NS_REQID_STALE);
    assert_string_equal(ns_kv_find(s.kv, NS_KV_ORDER_TOPIC_CONFIG, "k0"),
                        "40-98");

    /* a duplicate registration answers the master as the first did */
    cmd_register(&c, "broker-a", "127.0.0.1:10911", 0, TOPICS, 2);
    assert_int_equal(apply(&s, &c, NULL), 0);
    cmd_register(&c, "broker-a", "127.0.0.1:10921", 1, TOPICS, 2);
    c.reqid = rid(7, 3);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_string_equal(res.reg.master_addr, "127.0.0.1:10911");
    ns_fsm_result_close(&res);
    cmd_register(&c, "broker-a", "127.0.0.1:10921", 1, TOPICS, 2);
    c.reqid = rid(7, 3);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_int_equal(res.reqid, NS_REQID_DUPLICATE);
    assert_int_equal(res.reg.status, NS_REGISTER_OK);
    assert_string_equal(res.reg.master_addr, "127.0.0.1:10911");
    assert_string_equal(res.reg.ha_addr, "127.0.0.1:10912");
    ns_fsm_result_close(&res);
    /* a duplicate wipe reports the same count and wipes nothing again after
     * the permission was given back */
    cmd_perm(&c, NS_CMD_WIPE_WRITE_PERM, "broker-a");
    c.reqid = rid(7, 4);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_int_equal(res.count, 2);
    cmd_perm(&c, NS_CMD_ADD_WRITE_PERM, "broker-a");
    c.reqid = rid(7, 5);
    assert_int_equal(apply(&s, &c, NULL), 0);
    char before[2048];
    strcpy(before, route_json(&s, "TopicA"));
    cmd_perm(&c, NS_CMD_WIPE_WRITE_PERM, "broker-a");
    c.reqid = rid(7, 4);
    assert_int_equal(apply(&s, &c, &res), 0);
    assert_int_equal(res.reqid, NS_REQID_DUPLICATE);
    assert_int_equal(res.count, 2);
    assert_string_equal(route_json(&s, "TopicA"), before);

    /* the table is replicated state: a node restored from the snapshot still
     * refuses the copies, and its digest is the same */
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_snapshot_encode(&s, &b), 0);
    assert_int_equal(b.data[5], 3);
    struct ns_state t;
    assert_int_equal(ns_state_init(&t), 0);
    assert_int_equal(ns_snapshot_decode(&t, b.data, b.len), 0);
    uint64_t d1, d2;
    assert_int_equal(ns_snapshot_digest(&s, &d1), 0);
    assert_int_equal(ns_snapshot_digest(&t, &d2), 0);
    assert_true(d1 == d2);
    cmd_kv(&c, NS_CMD_KV_PUT, "k0", "28-70");
    c.reqid = rid(7, 1);
    assert_int_equal(apply(&t, &c, &res), 0);
    assert_int_equal(res.reqid, NS_REQID_DUPLICATE);
    assert_string_equal(ns_kv_find(t.kv, NS_KV_ORDER_TOPIC_CONFIG, "k0"),
                        "40-98");
    /* version 3 is version 1, the (empty, unseeded) account table of
     * version 2, then the request-id table */
    struct ns_buf table;
    ns_buf_init(&table);
    ns_reqid_encode_state(&s.reqids, &table);
    size_t n_origins = s.reqids.n;
    s.reqids.n = 0; /* hidden: the same state without ids is version 1 */
    struct ns_buf v1;
    ns_buf_init(&v1);
    assert_int_equal(ns_snapshot_encode(&s, &v1), 0);
    s.reqids.n = n_origins;
    static const uint8_t no_accounts[] = {0, 0, 0, 0, 0};
    assert_int_equal(v1.data[5], 1);
    assert_int_equal(v1.len + sizeof no_accounts + table.len, b.len);
    assert_memory_equal(v1.data + 6, b.data + 6, v1.len - 6);
    assert_memory_equal(b.data + v1.len, no_accounts, sizeof no_accounts);
    assert_memory_equal(b.data + v1.len + sizeof no_accounts, table.data,
                        table.len);
    ns_buf_close(&v1);
    ns_buf_close(&table);
    ns_buf_close(&b);
    ns_state_close(&t);
    ns_state_close(&s);
}

int main(void)
{
    ns_json_use_ns_alloc();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_bad_bytes),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_old_config_command_applies),
        cmocka_unit_test(test_exactly_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
