/* A group's queue-data memo (src/route/route_memo.c) changes nothing but
 * speed: every command applied to a route that kept its memos gives the same
 * state as applied to a copy restored from that route's snapshot encoding,
 * which has none. Each test command runs on both, and the encoded states are
 * compared after each one. */
#include "raftns/buf.h"
#include "test_route_util.h"

struct pair {
    struct ns_route *kept;     /* lives through the whole sequence */
    struct ns_route *restored; /* rebuilt from kept before each command */
};

static void encode(const struct ns_route *r, struct ns_buf *out)
{
    ns_buf_init(out);
    assert_int_equal(ns_route_encode_state(r, out), 0);
}

static void restore(struct pair *p)
{
    struct ns_buf b;
    struct ns_rd rd;
    encode(p->kept, &b);
    ns_route_destroy(p->restored);
    p->restored = ns_route_create();
    assert_non_null(p->restored);
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_route_decode_state(p->restored, &rd), 0);
    ns_buf_close(&b);
}

static void assert_same(const struct pair *p, const char *what, unsigned step)
{
    struct ns_buf a, b;
    encode(p->kept, &a);
    encode(p->restored, &b);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
        fail_msg("step %u (%s): the route that kept its memos differs from "
                 "the restored one",
                 step, what);
    }
    ns_buf_close(&a);
    ns_buf_close(&b);
}

static void both_register(struct pair *p, const struct ns_register *req,
                          bool delete_missing)
{
    do_register(p->kept, req, delete_missing, NULL, NULL);
    do_register(p->restored, req, delete_missing, NULL, NULL);
}

/* The mistake the memo invites: a queue data changed by another command (here
 * a wiped write perm) while the memo still shows the old numbers. The next
 * full registration must write the perm back. */
static void test_memo_forgotten_when_perm_wiped(void **state)
{
    (void)state;
    struct pair p = {ns_route_create(), NULL};
    struct ns_register r;
    int32_t count;
    for (int64_t version = 1; version <= 2; version++) {
        reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", NULL, 0, version);
        reg_topic(&r, "TopicA", 8, 8, 6, 0);
        reg_topic(&r, "TopicB", 8, 8, 6, 0);
        restore(&p);
        both_register(&p, &r, false);
        assert_same(&p, "register", (unsigned)version);
        ns_register_close(&r);
        if (version == 1) {
            restore(&p);
            assert_int_equal(
                ns_route_wipe_write_perm(p.kept, "broker-a", &count), 0);
            assert_int_equal(count, 2);
            assert_int_equal(
                ns_route_wipe_write_perm(p.restored, "broker-a", &count), 0);
            assert_same(&p, "wipe", 1);
        }
    }
    assert_route(p.kept, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:"
                 "10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
                 "\"enableActingMaster\":false}],\"filterServerTable\":{},"
                 "\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
                 "\"readQueueNums\":8,\"topicSysFlag\":0,\"writeQueueNums\":8}"
                 "]}");
    ns_route_destroy(p.kept);
    ns_route_destroy(p.restored);
}

/* xorshift64*: the same sequence on every run. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

#define N_GROUPS 2
#define N_TOPICS 8

static const char *const group_names[N_GROUPS] = {"ga", "gb"};
static const char *const topic_names[N_TOPICS] = {"t0", "t1", "t2", "t3",
                                                  "t4", "t5", "t6", "t7"};

static void addr_of(char *out, size_t len, unsigned g, int64_t id)
{
    snprintf(out, len, "10.0.%u.%d:10911", g, (int)id);
}

/* A registration of group g, id 0 or 1, with a random topic subset and
 * numbers; the DataVersion moves or not. */
static const char *random_register(struct pair *p, uint64_t *s,
                                   int64_t versions[N_GROUPS][2])
{
    unsigned g = (unsigned)(next_rand(s) % N_GROUPS);
    int64_t id = (int64_t)(next_rand(s) % 2);
    char addr[32];
    struct ns_register r;
    addr_of(addr, sizeof addr, g, id);
    if (next_rand(s) % 3 != 0) {
        versions[g][id]++;
    }
    reg_init(&r, "c1", group_names[g], id, addr, NULL, (int)(next_rand(s) % 2),
             versions[g][id]);
    for (unsigned t = 0; t < N_TOPICS; t++) {
        if (next_rand(s) % 4 != 0) {
            uint64_t v = next_rand(s);
            reg_topic(&r, topic_names[t], v % 2 ? 8 : 4, v % 4 < 2 ? 8 : 4,
                      (int32_t)(2 + 2 * (int32_t)((v >> 8) % 3)), 0);
        }
    }
    bool delete_missing = next_rand(s) % 4 == 0;
    both_register(p, &r, delete_missing);
    ns_register_close(&r);
    return "register";
}

static const char *random_other(struct pair *p, uint64_t *s)
{
    unsigned g = (unsigned)(next_rand(s) % N_GROUPS);
    int64_t id = (int64_t)(next_rand(s) % 2);
    const char *topic = topic_names[next_rand(s) % N_TOPICS];
    char addr[32];
    int32_t count;
    struct ns_route *both[2] = {p->kept, p->restored};
    unsigned kind = (unsigned)(next_rand(s) % 5);
    addr_of(addr, sizeof addr, g, id);
    for (int k = 0; k < 2; k++) {
        struct ns_route *r = both[k];
        struct ns_broker_ref ref = {"c1", addr, (char *)group_names[g], id};
        struct ns_queue_data qd = {(char *)group_names[g], 4, 4, 6, 0};
        switch (kind) {
        case 0:
            assert_int_equal(
                ns_route_wipe_write_perm(r, group_names[g], &count), 0);
            break;
        case 1:
            assert_int_equal(ns_route_add_write_perm(r, group_names[g], &count),
                             0);
            break;
        case 2:
            assert_int_equal(ns_route_delete_topic(r, topic, NULL), 0);
            break;
        case 3:
            assert_int_equal(ns_route_unregister_brokers(r, &ref, 1), 0);
            break;
        default:
            assert_int_equal(ns_route_register_topic(r, topic, &qd, 1), 0);
            break;
        }
    }
    static const char *const names[] = {"wipe", "add perm", "delete topic",
                                        "unregister", "register topic"};
    return names[kind];
}

static void test_memo_changes_no_state(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t s = seed * 0x9E3779B97F4A7C15ULL;
        int64_t versions[N_GROUPS][2] = {{0}};
        struct pair p = {ns_route_create(), NULL};
        assert_non_null(p.kept);
        for (unsigned step = 0; step < 300; step++) {
            restore(&p);
            const char *what = next_rand(&s) % 4 != 0
                                   ? random_register(&p, &s, versions)
                                   : random_other(&p, &s);
            assert_same(&p, what, step);
        }
        ns_route_destroy(p.kept);
        ns_route_destroy(p.restored);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo_forgotten_when_perm_wiped),
        cmocka_unit_test(test_memo_changes_no_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
