/* Property test of the heartbeat short-cut: for many generated (state, request)
 * pairs, ns_route_is_unchanged_registration is true exactly when
 * ns_route_register_broker leaves the encoded state byte-identical
 * (mapping-free requests; with mappings only the "true implies unchanged"
 * direction is required). Seed from RAFTNS_SEED-free LCG, printed. */
#include <stdio.h>

#include "test_route_util.h"

static uint32_t rng;

static uint32_t next(uint32_t n)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 16) % n;
}

static const char *pick(const char *const *v, uint32_t n)
{
    return v[next(n)];
}

static void random_request(struct ns_register *r, bool allow_mappings)
{
    static const char *const clusters[] = {"c1", "c2"};
    static const char *const names[] = {"a", "b"};
    static const char *const addrs[] = {"x1", "x2", "x3", "x4"};
    static const char *const has[] = {NULL, "h1"};
    static const char *const zones[] = {NULL, "z1"};
    static const char *const topics[] = {"T1", "T2", "T3"};

    reg_init(r, pick(clusters, 2), pick(names, 2), (int64_t)next(3),
             pick(addrs, 4), pick(has, 2), (int)next(3) - 1, 1 + next(2));
    r->dv.state_version = next(2);
    r->heartbeat_timeout_ms = next(2) ? NS_DEFAULT_HEARTBEAT_TIMEOUT_MS : 3000;
    if (pick(zones, 2) != NULL) {
        reg_zone(r, "z1");
    }
    for (int i = 0; i < 3; i++) {
        if (next(3) != 0) {
            reg_topic(r, topics[i], 4, 4, next(2) ? 6 : 4, 0);
        }
    }
    switch (next(3)) {
    case 0:
        break;
    case 1:
        r->has_filter_servers = true;
        break;
    default:
        r->has_filter_servers = true;
        r->filter_servers = ns_calloc(1, sizeof(char *));
        r->filter_servers[0] = ns_strdup("f1");
        r->n_filter_servers = 1;
    }
    if (allow_mappings && next(8) == 0) {
        r->mappings = ns_calloc(1, sizeof(*r->mappings));
        r->n_mappings = 1;
        r->mappings[0].topic = ns_strdup("T1");
        r->mappings[0].bname = ns_strdup(r->broker_name);
        r->mappings[0].total_queues = (int32_t)next(3);
    }
}

/* Copies the essential fields of a request (for "repeat" candidates). */
static void copy_request(struct ns_register *dst, const struct ns_register *src)
{
    reg_init(dst, src->cluster, src->broker_name, src->broker_id,
             src->broker_addr, src->ha_addr, src->acting_master,
             src->dv.counter);
    dst->dv = src->dv;
    dst->heartbeat_timeout_ms = src->heartbeat_timeout_ms;
    if (src->zone != NULL) {
        reg_zone(dst, src->zone);
    }
    for (size_t i = 0; i < src->n_topics; i++) {
        const struct ns_topic_config *t = &src->topics[i];
        reg_topic(dst, t->name, t->read_queues, t->write_queues, t->perm,
                  t->sys_flag);
    }
    dst->has_filter_servers = src->has_filter_servers;
    if (src->n_filter_servers > 0) {
        dst->filter_servers = ns_calloc(1, sizeof(char *));
        dst->filter_servers[0] = ns_strdup(src->filter_servers[0]);
        dst->n_filter_servers = 1;
    }
}

static void random_mutation(struct ns_route *route, struct ns_register *last)
{
    struct ns_register r;
    int32_t n;

    switch (next(10)) {
    case 0:
        ns_route_wipe_write_perm(route, next(2) ? "a" : "b", &n);
        break;
    case 1: {
        static const char *const addrs[] = {"x1", "x2", "x3", "x4"};
        struct ns_broker_ref ref = {"c1", (char *)addrs[next(4)], NULL, 0};
        ns_route_expire_brokers(route, &ref, 1);
        break;
    }
    case 2:
        ns_route_delete_topic(route, next(2) ? "T1" : "T2", NULL);
        break;
    default:
        random_request(&r, true);
        do_register(route, &r, next(2) == 0, NULL, NULL);
        ns_register_close(last);
        copy_request(last, &r);
        ns_register_close(&r);
    }
}

static void test_property(void **state)
{
    unsigned seed = 20240601u;
    int n_true = 0;
    int n_false = 0;
    (void)state;

    rng = seed;
    printf("test_route_unchanged seed %u\n", seed);
    for (int iter = 0; iter < 3000; iter++) {
        struct ns_route *route = ns_route_create();
        struct ns_register last;
        struct ns_register req;
        struct ns_register_result res;
        struct ns_buf before;
        struct ns_buf after;
        bool dm;
        bool unchanged;
        int steps = 1 + (int)next(6);

        ns_register_init(&last);
        for (int s = 0; s < steps; s++) {
            random_mutation(route, &last);
        }
        if (last.cluster != NULL && next(2) == 0) {
            copy_request(&req, &last);
            /* Sometimes perturb one field. */
            switch (next(8)) {
            case 0:
                req.dv.counter++;
                break;
            case 1:
                req.heartbeat_timeout_ms = 1;
                break;
            case 2:
                reg_topic(&req, "T9", 1, 1, 6, 0);
                break;
            case 3:
                reg_zone(&req, "z9");
                break;
            default:
                break;
            }
        } else {
            random_request(&req, true);
        }
        dm = next(2) == 0;
        unchanged = ns_route_is_unchanged_registration(route, &req, dm);
        /* The registration count changes with every registration applied
         * (what an expiry compares); the property is about the route data. */
        ns_buf_init(&before);
        assert_int_equal(ns_route_encode_state_data(route, &before), 0);
        assert_int_equal(ns_route_register_broker(route, &req, dm, &res), 0);
        ns_buf_init(&after);
        assert_int_equal(ns_route_encode_state_data(route, &after), 0);
        if (unchanged) {
            n_true++;
            assert_true(same_state(&before, &after));
        } else {
            n_false++;
            if (req.n_mappings == 0 && res.status == NS_REGISTER_OK) {
                assert_false(same_state(&before, &after));
            }
        }
        ns_register_result_close(&res);
        ns_buf_close(&before);
        ns_buf_close(&after);
        ns_register_close(&req);
        ns_register_close(&last);
        ns_route_destroy(route);
    }
    printf("unchanged %d, changed %d\n", n_true, n_false);
    assert_true(n_true > 200);
    assert_true(n_false > 200);
}

/* The named changes each make the short-cut answer false. */
static void test_each_change_detected(void **state)
{
    struct ns_route *route = ns_route_create();
    struct ns_register r;
    (void)state;

    register_with(route, reg_a0, 0);
    register_with(route, reg_a1, 0);
    reg_a0(&r, 0);
    assert_true(ns_route_is_unchanged_registration(route, &r, false));
    assert_true(ns_route_is_unchanged_registration(route, &r, true));
    ns_register_close(&r);

#define EXPECT_CHANGED(mutate, dm)                                             \
    do {                                                                       \
        reg_a0(&r, 0);                                                         \
        mutate;                                                                \
        assert_false(ns_route_is_unchanged_registration(route, &r, dm));       \
        ns_register_close(&r);                                                 \
    } while (0)

    EXPECT_CHANGED(reg_topic(&r, "TopicNew", 4, 4, 6, 0), false);
    EXPECT_CHANGED(r.dv.counter = 2, false);
    EXPECT_CHANGED(r.dv.state_version = 1, false);
    EXPECT_CHANGED(r.dv.timestamp = 1, false);
    EXPECT_CHANGED((ns_free(r.ha_addr), r.ha_addr = ns_strdup("other:1")),
                   false);
    EXPECT_CHANGED((ns_free(r.ha_addr), r.ha_addr = NULL), false);
    EXPECT_CHANGED(r.heartbeat_timeout_ms = 3000, false);
    EXPECT_CHANGED(
        (ns_free(r.broker_addr), r.broker_addr = ns_strdup("127.0.0.1:1")),
        false);
    EXPECT_CHANGED(r.broker_id = 1, false);
    EXPECT_CHANGED(reg_zone(&r, "zone"), false);
    EXPECT_CHANGED(r.acting_master = 1, false);
    EXPECT_CHANGED((ns_free(r.cluster), r.cluster = ns_strdup("c2")), false);
    EXPECT_CHANGED((r.has_filter_servers = true,
                    r.filter_servers = ns_calloc(1, sizeof(char *)),
                    r.filter_servers[0] = ns_strdup("f"),
                    r.n_filter_servers = 1),
                   false);
    /* Fewer topics: unchanged without deletion, changed with it (TopicB would
     * go). */
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             1);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    assert_true(ns_route_is_unchanged_registration(route, &r, false));
    assert_false(ns_route_is_unchanged_registration(route, &r, true));
    ns_register_close(&r);
    /* An old broker's master flags equal a 5.x one's without acting master; an
     * empty filter list when none is stored changes nothing either. */
    reg_a0(&r, -1);
    r.has_filter_servers = true;
    assert_true(ns_route_is_unchanged_registration(route, &r, true));
    ns_register_close(&r);
    /* Changed queue data under the same DataVersion is not applied (Java), so
     * unchanged. */
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             1);
    reg_topic(&r, "TopicA", 8, 8, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_true(ns_route_is_unchanged_registration(route, &r, false));
    ns_register_close(&r);
    /* The slave A1: unchanged; as a 5.x broker with acting master: changed. */
    reg_a1(&r, 0);
    assert_true(ns_route_is_unchanged_registration(route, &r, true));
    r.acting_master = 1;
    assert_false(ns_route_is_unchanged_registration(route, &r, true));
    ns_register_close(&r);
    ns_route_destroy(route);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_property),
        cmocka_unit_test(test_each_change_detected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
