/* The versioned binary route state (snapshots): golden bytes, round trip,
 * truncation and garbage rejection, and an allocation-failure sweep of the
 * decoder. */
#include "test_route_util.h"

/* b/c with addr a (id 0), topic t (1/1/6/0), live (c, a) with DataVersion
 * {1,0,2}, no ha address, timeout 3. */
static struct ns_route *small_state(void)
{
    struct ns_route *route = ns_route_create();
    struct ns_register r;

    assert_non_null(route);
    reg_init(&r, "c", "b", 0, "a", NULL, -1, 1);
    r.dv.timestamp = 2;
    r.heartbeat_timeout_ms = 3;
    reg_topic(&r, "t", 1, 1, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    return route;
}

static const uint8_t golden[] = {
    0x00, 0x01,             /* version */
    0x00, 0x00, 0x00, 0x01, /* groups */
    0x00, 0x00, 0x00, 0x01, 'b',  0x00, 0x00, 0x00, 0x01, 'c',  0xff, 0xff,
    0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x01, /* addrs */
    0,    0,    0,    0,    0,    0,    0,    0,    0x00, 0x00, 0x00, 0x01,
    'a',  0x00, 0x00, 0x00, 0x01, /* clusters */
    0x00, 0x00, 0x00, 0x01, 'c',  0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x01, 'b',  0x00, 0x00, 0x00, 0x01, /* topics */
    0x00, 0x00, 0x00, 0x01, 't',  0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x01, 'b',  0,    0,    0,    1,    0,    0,    0,    1,    0,    0,
    0,    6,    0,    0,    0,    0,    0x00, 0x00, 0x00, 0x01, /* lives */
    0x00, 0x00, 0x00, 0x01, 'c',  0x00, 0x00, 0x00, 0x01, 'a',  0,    0,
    0,    0,    0,    0,    0,    1,    0,    0,    0,    0,    0,    0,
    0,    0,    0,    0,    0,    0,    0,    0,    0,    2,    0xff, 0xff,
    0xff, 0xff, 0,    0,    0,    0,    0,    0,    0,    3,    0x00, 0x00,
    0x00, 0x00,             /* filters */
    0x00, 0x00, 0x00, 0x00, /* mappings */
};

static void test_golden(void **state)
{
    struct ns_route *route = small_state();
    struct ns_route *back;
    struct ns_buf b;
    struct ns_buf b2;
    struct ns_rd rd;
    (void)state;

    state_of(route, &b);
    assert_int_equal(b.len, sizeof(golden));
    assert_memory_equal(b.data, golden, sizeof(golden));
    back = ns_route_create();
    ns_rd_init(&rd, golden, sizeof(golden));
    assert_int_equal(ns_route_decode_state(back, &rd), 0);
    assert_int_equal(ns_rd_left(&rd), 0);
    state_of(back, &b2);
    assert_true(same_state(&b, &b2));
    ns_buf_close(&b);
    ns_buf_close(&b2);
    ns_route_destroy(route);
    ns_route_destroy(back);
}

/* Everything the state holds: zones, acting flags, slaves, filter servers,
 * mappings. */
static struct ns_route *rich_state(void)
{
    struct ns_route *route = ns_route_create();
    struct ns_register r;

    register_with(route, reg_b0, 0);
    register_with(route, reg_a1, 1);
    reg_a0(&r, 1);
    reg_zone(&r, "zone-1");
    r.dv.state_version = 7;
    r.heartbeat_timeout_ms = 10000;
    reg_topic(&r, "Unit", 2, 2, 7, 3);
    r.has_filter_servers = true;
    r.filter_servers = ns_calloc(2, sizeof(char *));
    r.filter_servers[0] = ns_strdup("f1");
    r.filter_servers[1] = ns_strdup("f2");
    r.n_filter_servers = 2;
    r.mappings = ns_calloc(1, sizeof(*r.mappings));
    r.n_mappings = 1;
    r.mappings[0].topic = ns_strdup("TopicA");
    r.mappings[0].bname = ns_strdup("broker-a");
    r.mappings[0].epoch = -5;
    r.mappings[0].total_queues = 4;
    r.mappings[0].dirty = true;
    r.mappings[0].curr_ids = ns_calloc(1, sizeof(struct ns_id_pair));
    r.mappings[0].curr_ids[0] = (struct ns_id_pair){3, -1};
    r.mappings[0].n_curr_ids = 1;
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    reg_init(&r, "c2", "broker-x", 2333, "10.0.0.1", NULL, -1, 1);
    reg_topic(&r, "T1", 1, 1, 6, 0);
    reg_topic(&r, "T2", 1, 1, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    return route;
}

static void test_round_trip(void **state)
{
    struct ns_route *route = rich_state();
    struct ns_route *back = ns_route_create();
    struct ns_buf b;
    struct ns_buf b2;
    struct ns_rd rd;
    char *s1;
    char *s2;
    (void)state;

    state_of(route, &b);
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_route_decode_state(back, &rd), 0);
    state_of(back, &b2);
    assert_true(same_state(&b, &b2));
    s1 = route_json(route, "TopicA", NS_JSON_STANDARD);
    s2 = route_json(back, "TopicA", NS_JSON_STANDARD);
    assert_non_null(strstr(s1, "topicQueueMappingByBroker"));
    assert_non_null(strstr(s1, "\"f1\",\"f2\""));
    assert_string_equal(s1, s2);
    ns_free(s1);
    ns_free(s2);
    /* The rebuilt reverse index works: wipe reaches both topics of broker-a
     * plus Unit. */
    {
        int32_t n1, n2;
        ns_route_wipe_write_perm(route, "broker-a", &n1);
        ns_route_wipe_write_perm(back, "broker-a", &n2);
        assert_int_equal(n1, 3);
        assert_int_equal(n2, 3);
    }
    /* Decoding into a non-empty route is refused. */
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_route_decode_state(back, &rd), NS_EINVAL);
    ns_buf_close(&b);
    ns_buf_close(&b2);
    ns_route_destroy(route);
    ns_route_destroy(back);
}

static void test_truncation(void **state)
{
    struct ns_route *route = rich_state();
    struct ns_buf b;
    (void)state;

    state_of(route, &b);
    for (size_t n = 0; n < b.len; n++) {
        struct ns_route *back = ns_route_create();
        struct ns_rd rd;
        ns_rd_init(&rd, b.data, n);
        assert_int_equal(ns_route_decode_state(back, &rd), NS_EPROTO);
        ns_route_destroy(back);
    }
    ns_buf_close(&b);
    ns_route_destroy(route);
}

static void test_version_and_garbage(void **state)
{
    struct ns_route *route = rich_state();
    struct ns_buf b;
    uint32_t seed = 12345;
    (void)state;

    state_of(route, &b);
    {
        struct ns_route *back = ns_route_create();
        struct ns_rd rd;
        uint8_t version = b.data[1];
        b.data[1] = 3;
        ns_rd_init(&rd, b.data, b.len);
        assert_int_equal(ns_route_decode_state(back, &rd), NS_EVERSION);
        b.data[1] = version;
        ns_route_destroy(back);
    }
    /* Every single-byte corruption decodes or fails cleanly (ASan checks the
     * rest). */
    for (size_t i = 2; i < b.len; i++) {
        for (int v = 0; v < 3; v++) {
            struct ns_route *back = ns_route_create();
            struct ns_rd rd;
            uint8_t saved = b.data[i];
            int rv;
            seed = seed * 1103515245u + 12345u;
            b.data[i] = v == 0 ? 0xff : v == 1 ? 0x00 : (uint8_t)(seed >> 16);
            ns_rd_init(&rd, b.data, b.len);
            rv = ns_route_decode_state(back, &rd);
            assert_true(rv == 0 || rv == NS_EPROTO);
            b.data[i] = saved;
            ns_route_destroy(back);
        }
    }
    /* Random bytes after a valid version. */
    for (int k = 0; k < 2000; k++) {
        uint8_t junk[64] = {0x00, 0x01};
        struct ns_route *back = ns_route_create();
        struct ns_rd rd;
        int rv;
        for (size_t i = 2; i < sizeof(junk); i++) {
            seed = seed * 1103515245u + 12345u;
            junk[i] = (uint8_t)(seed >> 16) & (k % 2 ? 0x03 : 0xff);
        }
        ns_rd_init(&rd, junk, sizeof(junk));
        rv = ns_route_decode_state(back, &rd);
        assert_true(rv == 0 || rv == NS_EPROTO);
        ns_route_destroy(back);
    }
    ns_buf_close(&b);
    ns_route_destroy(route);
}

static void test_decode_alloc_sweep(void **state)
{
    struct ns_route *route = rich_state();
    struct ns_buf b;
    (void)state;

    state_of(route, &b);
    for (long k = 0;; k++) {
        struct ns_route *back = ns_route_create();
        struct ns_rd rd;
        int rv;
        assert_non_null(back);
        ns_rd_init(&rd, b.data, b.len);
        ns_alloc_fail_at(k, 1);
        rv = ns_route_decode_state(back, &rd);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ns_route_destroy(back);
        if (rv == 0) {
            break;
        }
    }
    ns_buf_close(&b);
    ns_route_destroy(route);
}

static void test_encode_alloc_sweep(void **state)
{
    struct ns_route *route = rich_state();
    (void)state;

    for (long k = 0;; k++) {
        struct ns_buf b;
        int rv;
        ns_buf_init(&b);
        ns_alloc_fail_at(k, 1);
        rv = ns_route_encode_state(route, &b);
        ns_alloc_fail_at(-1, 0);
        ns_buf_close(&b);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        if (rv == 0) {
            break;
        }
    }
    ns_route_destroy(route);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_version_and_garbage),
        cmocka_unit_test(test_decode_alloc_sweep),
        cmocka_unit_test(test_encode_alloc_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
