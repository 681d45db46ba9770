/* Unit tests of the settings (src/route/config.c): Java defaults, typed
 * updates, protected keys, the 319 text, generation, state encoding and decode
 * hardening. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/config.h"
#include "raftns/err.h"

static void props_of(struct ns_props *p, const char *text)
{
    assert_int_equal(ns_props_parse(text, strlen(text), p), 0);
}

static void update(struct ns_config *cfg, const char *text)
{
    struct ns_props p;
    props_of(&p, text);
    assert_int_equal(ns_config_update(cfg, &p, false), 0);
    ns_props_close(&p);
}

static void test_defaults(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    assert_non_null(cfg);
    assert_string_equal(ns_config_get(cfg, "rocketmqHome"), "");
    assert_string_equal(ns_config_get(cfg, "kvConfigPath"),
                        "~/namesrv/kvConfig.json");
    assert_string_equal(ns_config_get(cfg, "configStorePath"),
                        "~/namesrv/namesrv.properties");
    assert_string_equal(ns_config_get(cfg, "configBlackList"),
                        "configBlackList;configStorePath;kvConfigPath");
    assert_string_equal(ns_config_get(cfg, "listenPort"), "9876");
    assert_string_equal(ns_config_get(cfg, "productEnvName"), "center");
    assert_null(ns_config_get(cfg, "nope"));
    const struct ns_settings *st = ns_config_settings(cfg);
    assert_false(st->order_message_enable);
    assert_true(st->return_order_topic_config_to_broker);
    assert_false(st->support_acting_master);
    assert_true(st->enable_all_topic_list);
    assert_true(st->enable_topic_list);
    assert_false(st->need_wait_for_service);
    assert_int_equal(st->wait_seconds_for_service, 45);
    assert_false(st->delete_topic_with_broker_registration);
    assert_int_equal(st->scan_not_active_broker_interval_ms, 5000);
    assert_int_equal(st->server_channel_max_idle_time_seconds, 120);
    ns_config_destroy(cfg);
}

static void test_typed_update(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    uint64_t g0 = ns_config_generation(cfg);
    update(cfg, "orderMessageEnable=TRUE\nenableTopicList="
                "yes\nwaitSecondsForService=+7\n"
                "scanNotActiveBrokerInterval=2500\nlistenPort=99999999999\n"
                "serverWorkerThreads=abc\nunknownKey=1\nproductEnvName=prod\n");
    const struct ns_settings *st = ns_config_settings(cfg);
    assert_true(st->order_message_enable);
    assert_false(
        st->enable_topic_list); /* Boolean.parseBoolean("yes") is false */
    assert_int_equal(st->wait_seconds_for_service, 7);
    assert_int_equal(st->scan_not_active_broker_interval_ms, 2500);
    assert_string_equal(ns_config_get(cfg, "orderMessageEnable"), "true");
    assert_string_equal(ns_config_get(cfg, "waitSecondsForService"), "7");
    assert_string_equal(ns_config_get(cfg, "listenPort"),
                        "9876"); /* overflow: ignored */
    assert_string_equal(ns_config_get(cfg, "serverWorkerThreads"),
                        "8"); /* bad: ignored */
    assert_string_equal(ns_config_get(cfg, "productEnvName"), "prod");
    assert_null(ns_config_get(cfg, "unknownKey"));
    uint64_t g1 = ns_config_generation(cfg);
    assert_true(g1 > g0);
    update(cfg, "orderMessageEnable=true\n"); /* no change, no bump */
    assert_int_equal(ns_config_generation(cfg), g1);
    ns_config_destroy(cfg);
}

static void test_protected(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    const char *bad[] = {"configStorePath=/tmp/x", "kvConfigPath=/tmp/y",
                         "configBlackList=", "rocketmqHome=/tmp",
                         "enableTopicList=true\nkvConfigPath=/tmp/y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ns_props p;
        props_of(&p, bad[i]);
        assert_true(ns_config_is_protected_update(cfg, &p));
        /* Even if called, update skips protected keys. */
        assert_int_equal(ns_config_update(cfg, &p, false), 0);
        ns_props_close(&p);
    }
    assert_string_equal(ns_config_get(cfg, "kvConfigPath"),
                        "~/namesrv/kvConfig.json");
    assert_string_equal(ns_config_get(cfg, "rocketmqHome"), "");
    struct ns_props ok;
    props_of(&ok, "enableTopicList=false");
    assert_false(ns_config_is_protected_update(cfg, &ok));
    ns_props_close(&ok);

    /* The blacklist is read from the current value, trimmed (start-up file may
     * change it). */
    struct ns_props start;
    props_of(&start,
             "configBlackList= a ; orderMessageEnable ;;\nextraKey=1\n");
    assert_int_equal(ns_config_update(cfg, &start, true), 0);
    ns_props_close(&start);
    assert_string_equal(ns_config_get(cfg, "extraKey"), "1");
    struct ns_props p;
    props_of(&p, "orderMessageEnable=true");
    assert_true(ns_config_is_protected_update(cfg, &p));
    ns_props_close(&p);
    props_of(&p, "kvConfigPath=/x"); /* no longer listed */
    assert_false(ns_config_is_protected_update(cfg, &p));
    ns_props_close(&p);
    ns_config_destroy(cfg);
}

static void test_properties_text(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_config_encode_properties(cfg, &b), 0);
    assert_int_equal(ns_buf_put_u8(&b, 0), 0);
    const char *text = (const char *)b.data;
    assert_non_null(
        strstr(text, "bindAddress=0.0.0.0\nclientRequestThreadPoolNums=8\n"));
    assert_non_null(strstr(text, "\nrocketmqHome=\n"));
    assert_non_null(strstr(text, "\nwriteBufferLowWaterMark=0\n"));
    /* Sorted, one key=value per line. */
    const char *prev = NULL;
    size_t lines = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
        assert_non_null(strchr(line, '='));
        if (prev != NULL) {
            assert_true(
                strncmp(prev, line, (size_t)(strchr(line, '=') - line)) < 0);
        }
        prev = line;
        lines++;
    }
    assert_int_equal(lines, 40);
    ns_buf_close(&b);
    ns_config_destroy(cfg);
}

static void test_state_round_trip(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    update(cfg, "orderMessageEnable=true\nwaitSecondsForService=3\n");
    struct ns_props extra;
    props_of(&extra, "zzz=1\n");
    assert_int_equal(ns_config_update(cfg, &extra, true), 0);
    ns_props_close(&extra);
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_config_encode_state(cfg, &b), 0);
    /* u16 version 1, u32 41 pairs, first "bindAddress". */
    static const uint8_t head[] = {0, 1, 0,  0,   0,   41,  0,
                                   0, 0, 11, 'b', 'i', 'n', 'd'};
    assert_memory_equal(b.data, head, sizeof head);

    struct ns_config *copy = ns_config_create();
    struct ns_rd rd;
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_config_decode_state(copy, &rd), 0);
    assert_int_equal(ns_rd_left(&rd), 0);
    assert_true(ns_config_settings(copy)->order_message_enable);
    assert_int_equal(ns_config_settings(copy)->wait_seconds_for_service, 3);
    assert_string_equal(ns_config_get(copy, "zzz"), "1");
    struct ns_buf b2;
    ns_buf_init(&b2);
    assert_int_equal(ns_config_encode_state(copy, &b2), 0);
    assert_int_equal(b2.len, b.len);
    assert_memory_equal(b2.data, b.data, b.len);
    ns_buf_close(&b2);
    ns_config_destroy(copy);

    for (size_t len = 0; len < b.len; len += 7) {
        struct ns_config *c2 = ns_config_create();
        ns_rd_init(&rd, b.data, len);
        assert_int_not_equal(ns_config_decode_state(c2, &rd), 0);
        ns_config_destroy(c2);
    }
    b.data[1] = 9;
    struct ns_config *c3 = ns_config_create();
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_config_decode_state(c3, &rd), NS_EVERSION);
    ns_config_destroy(c3);
    ns_buf_close(&b);
    ns_config_destroy(cfg);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; !ok && k < 500; k++) {
        ns_alloc_fail_at(k, 1);
        struct ns_config *cfg = ns_config_create();
        int rv = NS_ENOMEM;
        if (cfg != NULL) {
            struct ns_props p;
            ns_props_init(&p);
            rv = ns_props_set(&p, "orderMessageEnable", "true");
            if (rv == 0) {
                rv = ns_props_set(&p, "newKey", "x");
            }
            if (rv == 0) {
                rv = ns_config_update(cfg, &p, true);
            }
            ns_props_close(&p);
        }
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        if (ok) {
            assert_true(ns_config_settings(cfg)->order_message_enable);
        }
        ns_config_destroy(cfg);
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_typed_update),
        cmocka_unit_test(test_protected),
        cmocka_unit_test(test_properties_text),
        cmocka_unit_test(test_state_round_trip),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
