/* Unit tests of the settings (src/route/config.c): Java defaults, typed
 * updates, protected keys, the 319 text, generation, state encoding and decode
 * hardening. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* This node's own values replace the replicated ones in the 319 text; the
 * table itself keeps its value and keys it does not hold are not added. */
static void test_properties_local(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    struct ns_props local;
    struct ns_buf b;
    ns_props_init(&local);
    ns_buf_init(&b);
    assert_int_equal(ns_props_set(&local, "listenPort", "9877"), 0);
    assert_int_equal(ns_props_set(&local, "bindAddress", "127.0.0.2"), 0);
    assert_int_equal(ns_props_set(&local, "notAKey", "x"), 0);
    assert_int_equal(ns_config_encode_properties_local(cfg, &local, &b), 0);
    assert_int_equal(ns_buf_put_u8(&b, 0), 0);
    const char *text = (const char *)b.data;
    assert_non_null(strstr(text, "\nlistenPort=9877\n"));
    assert_non_null(strstr(text, "bindAddress=127.0.0.2\n"));
    assert_null(strstr(text, "9876"));
    assert_null(strstr(text, "notAKey"));
    assert_string_equal(ns_config_get(cfg, "listenPort"), "9876");
    ns_buf_close(&b);
    ns_props_close(&local);
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

/* --- validation table (ns_config_validate) --- */

static int validate(const char *text, enum ns_config_origin origin,
                    char *errmsg, size_t size)
{
    struct ns_props p;
    props_of(&p, text);
    int rv = ns_config_validate(&p, origin, errmsg, size);
    ns_props_close(&p);
    return rv;
}

static void test_validate_runtime_ok(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "orderMessageEnable=true",
        "orderMessageEnable=FALSE",
        "returnOrderTopicConfigToBroker=false",
        "supportActingMaster=True",
        "enableAllTopicList=false",
        "enableTopicList=true",
        "needWaitForService=true",
        "notifyMinBrokerIdChanged=false",
        "deleteTopicWithBrokerRegistration=true",
        "waitSecondsForService=0",
        "waitSecondsForService=3600",
        "scanNotActiveBrokerInterval=1000",
        "scanNotActiveBrokerInterval=+600000",
        "serverChannelMaxIdleTimeSeconds=30",
        "serverChannelMaxIdleTimeSeconds=86400",
        "productEnvName=prod-1.a_b",
        "enableTopicList=false\nwaitSecondsForService=7\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char err[256] = "";
        assert_int_equal(validate(ok[i], NS_CONFIG_AT_RUNTIME, err, sizeof err),
                         0);
        assert_int_equal(validate(ok[i], NS_CONFIG_AT_START, err, sizeof err),
                         0);
    }
}

static void test_validate_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *remark;
    } bad[] = {
        {"serverChannelMaxIdleTimeSeconds=1",
         "serverChannelMaxIdleTimeSeconds=1: must be an integer in [30, "
         "86400]"},
        {"serverChannelMaxIdleTimeSeconds=0",
         "serverChannelMaxIdleTimeSeconds=0: must be an integer in [30, "
         "86400]"},
        {"scanNotActiveBrokerInterval=999999999999",
         "scanNotActiveBrokerInterval=999999999999: must be an integer in "
         "[1000, 600000]"},
        {"scanNotActiveBrokerInterval=99999999999999999999999",
         "scanNotActiveBrokerInterval=99999999999999999999999: must be an "
         "integer in [1000, 600000]"},
        {"scanNotActiveBrokerInterval=10s",
         "scanNotActiveBrokerInterval=10s: must be an integer in [1000, "
         "600000]"},
        {"scanNotActiveBrokerInterval= 5000",
         "scanNotActiveBrokerInterval=5000: must be an integer in [1000, "
         "600000]"}, /* properties trims the leading blank: this one passes */
        {"waitSecondsForService=-1",
         "waitSecondsForService=-1: must be an integer in [0, 3600]"},
        {"waitSecondsForService=",
         "waitSecondsForService=: must be an integer in [0, 3600]"},
        {"waitSecondsForService=5 ",
         "waitSecondsForService=5 : must be an integer in [0, 3600]"},
        {"orderMessageEnable=yes",
         "orderMessageEnable=yes: must be true or false"},
        {"orderMessageEnable=1", "orderMessageEnable=1: must be true or false"},
        {"productEnvName=a b",
         "productEnvName=a b: must be non-empty, at most 64 bytes of "
         "[A-Za-z0-9._-]"},
        {"productEnvName=",
         "productEnvName=: must be non-empty, at most 64 bytes of "
         "[A-Za-z0-9._-]"},
        {"enableTopicList=true\nwaitSecondsForService=99999\n",
         "waitSecondsForService=99999: must be an integer in [0, 3600]"},
        {"enableTopiclist=true", "enableTopiclist: unknown setting"},
        {"key=value", "key: unknown setting"},
        {"listenPort=9877",
         "listenPort: a start-up setting, read once at start; set it with "
         "--set or the cluster file's namesrv section and restart"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        int rv = validate(bad[i].text, NS_CONFIG_AT_RUNTIME, err, sizeof err);
        if (i == 5) { /* the leading blank is not part of the value */
            assert_int_equal(rv, 0);
            continue;
        }
        assert_int_equal(rv, NS_EINVAL);
        assert_string_equal(err, bad[i].remark);
        if (strncmp(bad[i].text, "listenPort", 10) != 0) {
            /* The same values are refused at start, with the same remark. */
            char err2[256] = "";
            assert_int_equal(
                validate(bad[i].text, NS_CONFIG_AT_START, err2, sizeof err2),
                NS_EINVAL);
            assert_string_equal(err2, bad[i].remark);
        }
    }
    /* Untrusted text is shown shortened and printable. */
    char err[256];
    assert_int_equal(
        validate("waitSecondsForService=\\u0001"
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                 NS_CONFIG_AT_RUNTIME, err, sizeof err),
        NS_EINVAL);
    assert_string_equal(err, "waitSecondsForService=?"
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...: "
                             "must be an integer in [0, 3600]");
    assert_int_equal(validate("x=1", NS_CONFIG_AT_RUNTIME, NULL, 0), NS_EINVAL);
}

/* Every start-up key: accepted at start with its default, refused at run time
 * whatever the value; the keys are taken from the 319 text. */
static void test_validate_startup_keys(void **state)
{
    (void)state;
    static const char *const startup[] = {
        "bindAddress",
        "clientRequestThreadPoolNums",
        "clientRequestThreadPoolQueueCapacity",
        "clusterTest",
        "configBlackList",
        "configStorePath",
        "defaultThreadPoolNums",
        "defaultThreadPoolQueueCapacity",
        "enableControllerInNamesrv",
        "enableShutdownGracefully",
        "kvConfigPath",
        "listenPort",
        "rocketmqHome",
        "serverAsyncSemaphoreValue",
        "serverCallbackExecutorThreads",
        "serverNettyWorkerGroupEnable",
        "serverOnewaySemaphoreValue",
        "serverPooledByteBufAllocatorEnable",
        "serverSelectorThreads",
        "serverSocketBacklog",
        "serverSocketRcvBufSize",
        "serverSocketSndBufSize",
        "serverWorkerThreads",
        "shutdownWaitTimeSeconds",
        "unRegisterBrokerQueueCapacity",
        "useEpollNativeSelector",
        "writeBufferHighWaterMark",
        "writeBufferLowWaterMark",
        "clientMaxConnections",
        "clientMaxConnectionsPerIp",
        "clientBufferBudgetBytes",
    };
    struct ns_config *cfg = ns_config_create();
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_config_encode_properties(cfg, &b), 0);
    struct ns_props all;
    assert_int_equal(ns_props_parse((const char *)b.data, b.len, &all), 0);
    /* Every default is valid at start (a 319 text can be fed back). */
    assert_int_equal(ns_config_validate(&all, NS_CONFIG_AT_START, NULL, 0), 0);
    size_t n_runtime = 0;
    for (size_t i = 0; i < all.n; i++) {
        n_runtime += ns_config_is_runtime_key(all.items[i].key);
    }
    assert_int_equal(n_runtime, 12);
    assert_int_equal(all.n - n_runtime + 3, sizeof startup / sizeof startup[0]);
    for (size_t i = 0; i < sizeof startup / sizeof startup[0]; i++) {
        assert_false(ns_config_is_runtime_key(startup[i]));
        const char *v = ns_config_get(cfg, startup[i]);
        char text[256], err[256];
        bool budget = strcmp(startup[i], "clientBufferBudgetBytes") == 0;
        snprintf(text, sizeof text, "%s=%s", startup[i],
                 v        ? v
                 : budget ? "268435456"
                          : "1000");
        assert_int_equal(validate(text, NS_CONFIG_AT_START, err, sizeof err),
                         0);
        assert_int_equal(validate(text, NS_CONFIG_AT_RUNTIME, err, sizeof err),
                         NS_EINVAL);
        assert_non_null(strstr(err, ": a start-up setting"));
    }
    ns_props_close(&all);
    ns_buf_close(&b);
    ns_config_destroy(cfg);
}

/* Reads "[lo, hi]" from the refusal of a non-number, then checks both edges
 * and one step beyond each, for every integer key of the 319 text and the
 * client limits. */
static void test_validate_integer_edges(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_config_encode_properties(cfg, &b), 0);
    assert_int_equal(ns_buf_append_str(&b, "clientMaxConnections=1\n"
                                           "clientMaxConnectionsPerIp=1\n"
                                           "clientBufferBudgetBytes=1\n"),
                     0);
    struct ns_props all;
    assert_int_equal(ns_props_parse((const char *)b.data, b.len, &all), 0);
    size_t n_int = 0;
    for (size_t i = 0; i < all.n; i++) {
        const char *key = all.items[i].key;
        char text[256], err[256];
        snprintf(text, sizeof text, "%s=x", key);
        if (validate(text, NS_CONFIG_AT_START, err, sizeof err) == 0) {
            continue; /* a string */
        }
        const char *range = strstr(err, "must be an integer in [");
        if (range == NULL) {
            continue; /* a boolean */
        }
        long long lo, hi;
        assert_int_equal(
            sscanf(range, "must be an integer in [%lld, %lld]", &lo, &hi), 2);
        assert_true(lo <= hi);
        long long probe[4] = {lo, hi, lo - 1, hi + 1};
        for (int k = 0; k < 4; k++) {
            snprintf(text, sizeof text, "%s=%lld", key, probe[k]);
            assert_int_equal(
                validate(text, NS_CONFIG_AT_START, err, sizeof err),
                k < 2 ? 0 : NS_EINVAL);
        }
        n_int++;
    }
    assert_int_equal(n_int, 23);
    ns_props_close(&all);
    ns_buf_close(&b);
    ns_config_destroy(cfg);
}

/* Apply stays total: a command logged before validation existed still
 * applies, and the server sees its values within range. */
static void test_apply_total_and_clamped(void **state)
{
    (void)state;
    struct ns_config *cfg = ns_config_create();
    update(cfg, "serverChannelMaxIdleTimeSeconds=1\n"
                "scanNotActiveBrokerInterval=999999999999\n"
                "waitSecondsForService=-5\nlistenPort=1\nnoSuchKey=1\n"
                "clientMaxConnections=1\n");
    assert_string_equal(ns_config_get(cfg, "serverChannelMaxIdleTimeSeconds"),
                        "1");
    assert_string_equal(ns_config_get(cfg, "listenPort"), "1");
    assert_null(ns_config_get(cfg, "noSuchKey"));
    assert_null(ns_config_get(cfg, "clientMaxConnections"));
    const struct ns_settings *st = ns_config_settings(cfg);
    assert_int_equal(st->server_channel_max_idle_time_seconds, 30);
    assert_int_equal(st->scan_not_active_broker_interval_ms, 600000);
    assert_int_equal(st->wait_seconds_for_service, 0);
    /* Client limits never enter the replicated state, also at start. */
    struct ns_props start;
    props_of(&start, "clientBufferBudgetBytes=67108864\n");
    assert_int_equal(ns_config_update(cfg, &start, true), 0);
    ns_props_close(&start);
    assert_null(ns_config_get(cfg, "clientBufferBudgetBytes"));
    ns_config_destroy(cfg);
}

static void test_client_limits(void **state)
{
    (void)state;
    struct ns_client_limits l;
    ns_config_client_limits_init(&l);
    assert_int_equal(l.max_connections, 10000);
    assert_int_equal(l.max_connections_per_ip, 1000);
    assert_int_equal(l.buffer_budget_bytes, 256 * 1024 * 1024);
    struct ns_props p;
    props_of(&p, "clientMaxConnections=50\nclientMaxConnectionsPerIp=5\n"
                 "orderMessageEnable=true\n"
                 "clientBufferBudgetBytes=1\n");
    ns_config_client_limits_update(&l, &p);
    ns_props_close(&p);
    assert_int_equal(l.max_connections, 50);
    assert_int_equal(l.max_connections_per_ip, 5);
    assert_int_equal(l.buffer_budget_bytes, 32 * 1024 * 1024); /* clamped */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_typed_update),
        cmocka_unit_test(test_protected),
        cmocka_unit_test(test_properties_local),
        cmocka_unit_test(test_properties_text),
        cmocka_unit_test(test_state_round_trip),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_validate_runtime_ok),
        cmocka_unit_test(test_validate_refused),
        cmocka_unit_test(test_validate_startup_keys),
        cmocka_unit_test(test_validate_integer_edges),
        cmocka_unit_test(test_apply_total_and_clamped),
        cmocka_unit_test(test_client_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
