/* Unit tests of command version 3, compact registration topics
 * (raft/command_topics.c): golden bytes written by hand from the documented
 * layout, round trips against version 2 over random registrations, what
 * version each command is written in, and rejection of malformed records
 * (shared prefix beyond the previous name, "same" on the first topic, a NUL in
 * a name, overlong varints, counts and names beyond the bounds) before they are
 * allocated, and the benchmark registration's sizes in both versions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/command.h"
#include "raftns/err.h"

#define T0 1700000000000LL

/* REGISTER_BROKER from origin 2, run 0x0102030405060708, seq 9: cluster c1,
 * broker-a at 127.0.0.1:10911, no HA address or zone, id 0, timeout 120000,
 * acting master absent, DataVersion 3/0/T0; topics TopicA 4/4/6/0, TopicB
 * (the same settings) and Tx 8/8/2/-1; no mappings or filter servers. */
static const uint8_t GOLDEN_V3_REGISTER[] = {
    0x03, 0x01, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* time */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,             /* origin */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,             /* run */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,             /* seq */
    0x00, 0x00, 0x00, 0x02, 'c',  '1',                          /* cluster */
    0x00, 0x00, 0x00, 0x08, 'b',  'r',  'o',  'k',  'e',  'r',  '-',  'a',
    0x00, 0x00, 0x00, 0x0f, '1',  '2',  '7',  '.',  '0',  '.',  '0',  '.',
    '1',  ':',  '1',  '0',  '9',  '1',  '1',  0xff, 0xff, 0xff, 0xff, /* ha_addr
                                                                         NULL */
    0xff, 0xff, 0xff, 0xff,                         /* zone NULL */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* broker_id */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xd4, 0xc0, /* timeout */
    0xff,                                           /* acting master -1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, /* dv.counter */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* dv.state_version */
    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* dv.timestamp */
    0x00, 0x00, 0x00, 0x03,                         /* 3 topics */
    0x00, 0x06, 'T',  'o',  'p',  'i',  'c',  'A',  0x00, 0x08, 0x08, 0x0c,
    0x00, 0x05, 0x01, 'B',  0x01,                   /* TopicB, same */
    0x01, 0x01, 'x',  0x00, 0x10, 0x10, 0x04, 0x01, /* Tx 8/8/2/-1 */
    0x00, 0x00, 0x00, 0x00,                         /* no mappings */
    0x00, 0x00, 0x00, 0x00, 0x00,                   /* no filter servers */
};

/* The offset of the topic count in GOLDEN_V3_REGISTER. */
#define TOPICS_AT (sizeof GOLDEN_V3_REGISTER - 9 - 29)

static void test_golden(void **state)
{
    (void)state;
    const uint8_t *g = GOLDEN_V3_REGISTER;
    size_t len = sizeof GOLDEN_V3_REGISTER;
    assert_int_equal(g[TOPICS_AT + 3], 3);
    struct ns_command c;
    assert_int_equal(ns_command_decode(g, len, &c), 0);
    assert_int_equal(c.version, NS_COMMAND_VERSION_COMPACT);
    assert_int_equal(ns_command_peek_type(g, len), NS_CMD_REGISTER_BROKER);
    assert_true(c.reqid.origin == 2 && c.reqid.seq == 9);
    assert_string_equal(c.u.reg.broker_name, "broker-a");
    assert_int_equal(c.u.reg.acting_master, -1);
    assert_int_equal(c.u.reg.n_topics, 3);
    static const char *names[] = {"TopicA", "TopicB", "Tx"};
    static const int32_t q[3][4] = {{4, 4, 6, 0}, {4, 4, 6, 0}, {8, 8, 2, -1}};
    for (size_t i = 0; i < 3; i++) {
        const struct ns_topic_config *t = &c.u.reg.topics[i];
        assert_string_equal(t->name, names[i]);
        assert_int_equal(t->read_queues, q[i][0]);
        assert_int_equal(t->write_queues, q[i][1]);
        assert_int_equal(t->perm, q[i][2]);
        assert_int_equal(t->sys_flag, q[i][3]);
    }
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(&c, &b), 0);
    assert_int_equal(b.len, len);
    assert_memory_equal(b.data, g, len);
    ns_buf_close(&b);
    ns_command_close(&c);
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(ns_command_decode(g, cut, &c), NS_EPROTO);
    }
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static int32_t random_setting(void)
{
    static const int32_t edge[] = {
        0, 1, -1, 4, 6, 8, 127, 128, 16383, 16384, INT32_MAX, INT32_MIN};
    return next_random() % 2 ? edge[next_random() % 12]
                             : (int32_t)next_random();
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* A registration of n topics named from a small alphabet (so that they share
 * prefixes), sorted when sorted is set, with an id so it is version 3. */
static void random_register(struct ns_command *c, size_t n, bool sorted,
                            char (*names)[24])
{
    ns_command_init(c, NS_CMD_REGISTER_BROKER);
    c->leader_time_ms = T0;
    c->reqid.origin = 1;
    c->reqid.run = 2;
    c->reqid.seq = 3;
    c->u.reg.cluster = "c";
    c->u.reg.broker_name = "b";
    c->u.reg.broker_addr = "127.0.0.1:10911";
    c->u.reg.acting_master = 1;
    c->u.reg.topics = ns_calloc(n ? n : 1, sizeof *c->u.reg.topics);
    assert_non_null(c->u.reg.topics);
    c->u.reg.n_topics = n;
    for (size_t i = 0; i < n; i++) {
        size_t len = next_random() % 23;
        for (size_t k = 0; k < len; k++) {
            names[i][k] = "ab%_-Z9"[next_random() % 7];
        }
        names[i][len] = '\0';
    }
    if (sorted) {
        qsort(names, n, sizeof *names, cmp_name);
    }
    for (size_t i = 0; i < n; i++) {
        struct ns_topic_config *t = &c->u.reg.topics[i];
        t->name = names[i];
        bool repeat = i > 0 && next_random() % 2;
        t->read_queues = repeat ? t[-1].read_queues : random_setting();
        t->write_queues = repeat ? t[-1].write_queues : random_setting();
        t->perm = repeat ? t[-1].perm : random_setting();
        t->sys_flag = repeat ? t[-1].sys_flag : random_setting();
    }
}

static void assert_same_topics(const struct ns_register *a,
                               const struct ns_register *b)
{
    assert_int_equal(a->n_topics, b->n_topics);
    for (size_t i = 0; i < a->n_topics; i++) {
        assert_string_equal(a->topics[i].name, b->topics[i].name);
        assert_int_equal(a->topics[i].read_queues, b->topics[i].read_queues);
        assert_int_equal(a->topics[i].write_queues, b->topics[i].write_queues);
        assert_int_equal(a->topics[i].perm, b->topics[i].perm);
        assert_int_equal(a->topics[i].sys_flag, b->topics[i].sys_flag);
    }
}

/* Versions 2 and 3 of any registration decode to the same topics; sorted
 * names sharing prefixes take fewer bytes in version 3. */
static void test_round_trip_against_v2(void **state)
{
    (void)state;
    static char names[300][24];
    for (int round = 0; round < 400; round++) {
        size_t n = round % 40 == 0 ? 0 : next_random() % 300;
        bool sorted = round % 3 != 0;
        struct ns_command c;
        random_register(&c, n, sorted, names);
        struct ns_buf v2, v3;
        ns_buf_init(&v2);
        ns_buf_init(&v3);
        assert_int_equal(
            ns_command_encode_as(&c, NS_COMMAND_VERSION_REQID, &v2), 0);
        assert_int_equal(ns_command_encode(&c, &v3), 0);
        assert_int_equal(v2.data[0], NS_COMMAND_VERSION_REQID);
        assert_int_equal(v3.data[0], NS_COMMAND_VERSION_COMPACT);
        if (sorted && n > 20) {
            assert_true(v3.len < v2.len);
        }
        struct ns_command d2, d3;
        assert_int_equal(ns_command_decode(v2.data, v2.len, &d2), 0);
        assert_int_equal(ns_command_decode(v3.data, v3.len, &d3), 0);
        assert_same_topics(&c.u.reg, &d2.u.reg);
        assert_same_topics(&c.u.reg, &d3.u.reg);
        assert_int_equal(d3.u.reg.acting_master, 1);
        assert_string_equal(d3.u.reg.broker_addr, "127.0.0.1:10911");
        /* what was decoded encodes to the same bytes */
        struct ns_buf again;
        ns_buf_init(&again);
        assert_int_equal(ns_command_encode(&d3, &again), 0);
        assert_int_equal(again.len, v3.len);
        assert_memory_equal(again.data, v3.data, v3.len);
        ns_buf_close(&again);
        ns_command_close(&d2);
        ns_command_close(&d3);
        ns_buf_close(&v2);
        ns_buf_close(&v3);
        ns_free(c.u.reg.topics);
    }
}

/* The benchmark's registration (raftns-bench --mix register=100, its topic
 * names sorted as a decoded body has them): the sizes BENCHMARKS.md and
 * cluster-configs/README.md quote. */
static void test_bench_shape_sizes(void **state)
{
    (void)state;
    static char names[100][24];
    struct ns_topic_config topics[100];
    for (int i = 0; i < 100; i++) {
        snprintf(names[i], sizeof names[i], "BenchTopic-7-%d", i);
    }
    qsort(names, 100, sizeof *names, cmp_name);
    for (int i = 0; i < 100; i++) {
        topics[i] = (struct ns_topic_config){names[i], 4, 4, 6, 0};
    }
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    c.reqid.origin = 1;
    c.u.reg.cluster = "DefaultCluster";
    c.u.reg.broker_name = "broker-7";
    c.u.reg.broker_addr = "127.0.0.1:10911";
    c.u.reg.topics = topics;
    c.u.reg.n_topics = 100;
    struct ns_buf v2, v3;
    ns_buf_init(&v2);
    ns_buf_init(&v3);
    assert_int_equal(ns_command_encode_as(&c, NS_COMMAND_VERSION_REQID, &v2),
                     0);
    assert_int_equal(ns_command_encode(&c, &v3), 0);
    assert_int_equal(v2.len, 3635);
    assert_int_equal(v3.len, 562);
    ns_buf_close(&v2);
    ns_buf_close(&v3);
}

/* Only registrations with a request id are version 3; everything else keeps
 * the bytes a version-2 node reads, and max_version 2 writes none at all. */
static void test_which_version(void **state)
{
    (void)state;
    static char names[4][24];
    struct ns_command c;
    random_register(&c, 4, true, names);
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode_as(&c, NS_COMMAND_VERSION_REQID, &b), 0);
    assert_int_equal(b.data[0], NS_COMMAND_VERSION_REQID);
    ns_buf_reset(&b);
    c.reqid.origin = 0;
    assert_int_equal(ns_command_encode(&c, &b), 0);
    assert_int_equal(b.data[0], NS_COMMAND_VERSION_PLAIN);
    ns_free(c.u.reg.topics);
    ns_buf_reset(&b);
    struct ns_command kv;
    ns_command_init(&kv, NS_CMD_KV_PUT);
    kv.reqid.origin = 5;
    kv.u.kv.ns = "ns";
    kv.u.kv.key = "k";
    assert_int_equal(ns_command_encode(&kv, &b), 0);
    assert_int_equal(b.data[0], NS_COMMAND_VERSION_REQID);
    ns_buf_close(&b);
}

/* What decoding allocates before the topics: the cluster, broker name and
 * address of GOLDEN_V3_REGISTER's header. A rejected record must add none. */
#define HEADER_ALLOCS 3

/* GOLDEN_V3_REGISTER with its topic records (from TOPICS_AT) replaced. */
static size_t with_topics(uint8_t *out, const uint8_t *topics, size_t len)
{
    size_t head = TOPICS_AT, tail = 9; /* mappings and filter servers */
    memcpy(out, GOLDEN_V3_REGISTER, head);
    memcpy(out + head, topics, len);
    memcpy(out + head + len,
           GOLDEN_V3_REGISTER + sizeof GOLDEN_V3_REGISTER - tail, tail);
    return head + len + tail;
}

static void expect_rejected(const uint8_t *topics, size_t len)
{
    static uint8_t buf[256];
    assert_true(len <= sizeof buf - sizeof GOLDEN_V3_REGISTER);
    size_t n = with_topics(buf, topics, len);
    struct ns_command c;
    long before = ns_alloc_count();
    assert_int_equal(ns_command_decode(buf, n, &c), NS_EPROTO);
    assert_int_equal(ns_alloc_count(), before + HEADER_ALLOCS);
}

static void test_rejects(void **state)
{
    (void)state;
    /* the golden topics themselves pass through with_topics */
    static const uint8_t good[] = {0,   0,    0,    1,    0x00, 0x01,
                                   'a', 0x00, 0x08, 0x08, 0x0c, 0x00};
    uint8_t buf[256];
    size_t n = with_topics(buf, good, sizeof good);
    struct ns_command c;
    assert_int_equal(ns_command_decode(buf, n, &c), 0);
    assert_string_equal(c.u.reg.topics[0].name, "a");
    ns_command_close(&c);
    /* the first topic shares bytes with no previous name */
    static const uint8_t shared_first[] = {0,   0,    0,    1,    0x01, 0x01,
                                           'a', 0x00, 0x08, 0x08, 0x0c, 0x00};
    expect_rejected(shared_first, sizeof shared_first);
    /* the second shares more than the first name has */
    static const uint8_t shared_long[] = {0,    0,    0,    2,    0x00, 0x01,
                                          'a',  0x00, 0x08, 0x08, 0x0c, 0x00,
                                          0x02, 0x01, 'b',  0x01};
    expect_rejected(shared_long, sizeof shared_long);
    /* "same" on the first topic, and a "same" byte that is not 0 or 1 */
    static const uint8_t same_first[] = {0, 0, 0, 1, 0x00, 0x01, 'a', 0x01};
    expect_rejected(same_first, sizeof same_first);
    static const uint8_t same_two[] = {0,   0,    0,    1,    0x00, 0x01,
                                       'a', 0x02, 0x08, 0x08, 0x0c, 0x00};
    expect_rejected(same_two, sizeof same_two);
    /* a NUL inside a name */
    static const uint8_t nul[] = {0,    0,    0,    1,    0x00, 0x02, 'a',
                                  0x00, 0x00, 0x08, 0x08, 0x0c, 0x00};
    expect_rejected(nul, sizeof nul);
    /* varints longer than 32 bits: a fifth byte over 0x0f, with or without
     * a continuation bit */
    static const uint8_t wide[] = {0,    0,    0,    1,    0x00, 0x01,
                                   'a',  0x00, 0x80, 0x80, 0x80, 0x80,
                                   0x10, 0x08, 0x0c, 0x00};
    expect_rejected(wide, sizeof wide);
    static const uint8_t six[] = {0,    0,    0,    1,    0x00, 0x01,
                                  'a',  0x00, 0xff, 0xff, 0xff, 0xff,
                                  0x8f, 0x01, 0x08, 0x0c, 0x00};
    expect_rejected(six, sizeof six);
    /* a suffix longer than what is left */
    static const uint8_t overrun[] = {0, 0, 0, 1, 0x00, 0x7f, 'a'};
    expect_rejected(overrun, sizeof overrun);
    /* a count beyond 3 bytes per remaining record */
    static const uint8_t count[] = {0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
                                    'a',  0x00, 0x08, 0x08, 0x0c, 0x00};
    expect_rejected(count, sizeof count);
}

/* Each record may repeat the whole previous name and add one byte: names far
 * larger than the command. Beyond what a command may carry they are refused
 * before the names are allocated. */
static void test_names_bounded(void **state)
{
    (void)state;
    const size_t first = 60000, topics = 1200; /* 72 MB of names */
    struct ns_buf b;
    ns_buf_init(&b);
    ns_buf_append(&b, GOLDEN_V3_REGISTER, TOPICS_AT);
    ns_buf_put_u32(&b, (uint32_t)topics);
    uint8_t lead[] = {0x00, 0xe0, 0xd4, 0x03}; /* shared 0, 60000 bytes */
    ns_buf_append(&b, lead, sizeof lead);
    for (size_t k = 0; k < first; k++) {
        ns_buf_put_u8(&b, 'a');
    }
    static const uint8_t settings[] = {0x00, 0x08, 0x08, 0x0c, 0x00};
    ns_buf_append(&b, settings, sizeof settings);
    for (size_t i = 1; i < topics; i++) {
        size_t shared = first + i - 1;
        uint8_t rec[] = {(uint8_t)(shared | 0x80),
                         (uint8_t)((shared >> 7) | 0x80),
                         (uint8_t)(shared >> 14),
                         0x01,
                         'a',
                         0x01};
        ns_buf_append(&b, rec, sizeof rec);
    }
    ns_buf_append(&b, GOLDEN_V3_REGISTER + sizeof GOLDEN_V3_REGISTER - 9, 9);
    assert_int_equal(b.err, 0);
    struct ns_command c;
    long before = ns_alloc_count();
    assert_int_equal(ns_command_decode(b.data, b.len, &c), NS_EPROTO);
    assert_int_equal(ns_alloc_count(), before + HEADER_ALLOCS);
    ns_buf_close(&b);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_command c;
        ns_alloc_fail_at(k, 1);
        int rv = ns_command_decode(GOLDEN_V3_REGISTER,
                                   sizeof GOLDEN_V3_REGISTER, &c);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        if (ok) {
            ns_command_close(&c);
        }
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_round_trip_against_v2),
        cmocka_unit_test(test_bench_shape_sizes),
        cmocka_unit_test(test_which_version),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_names_bounded),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
