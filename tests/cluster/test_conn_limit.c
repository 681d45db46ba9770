/* Tests of the client-port admission bookkeeping (src/net/conn_limit.c):
 * defaults for zero limits, the per-node and per-address caps, release, many
 * addresses, and the refusal counters in /metrics. The buffer budget needs a
 * running server: tests/security/test_limits.py covers it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/net/net_int.h"
#include "raftns/metrics.h"

static unsigned long long refused(const char *limit)
{
    struct ns_buf b;
    ns_buf_init(&b);
    ns_metrics_encode(&b);
    ns_buf_put_u8(&b, 0);
    char needle[128];
    snprintf(needle, sizeof needle,
             "raftns_limit_refusals_total{limit=\"%s\"} ", limit);
    const char *p = strstr((const char *)b.data, needle);
    unsigned long long n = p ? strtoull(p + strlen(needle), NULL, 10) : 99999;
    ns_buf_close(&b);
    return n;
}

static void test_defaults(void **state)
{
    (void)state;
    struct ns_conn_limits l;
    struct ns_client_limits zero = {0, 0, 0};
    assert_int_equal(ns_conn_limits_init(&l, &zero), 0);
    assert_int_equal(l.cfg.max_connections, 10000);
    assert_int_equal(l.cfg.max_connections_per_ip, 1000);
    assert_int_equal(l.cfg.buffer_budget_bytes, 256 * 1024 * 1024);
    ns_conn_limits_close(&l);
    struct ns_client_limits some = {5, 2, 64 << 20};
    assert_int_equal(ns_conn_limits_init(&l, &some), 0);
    assert_int_equal(l.cfg.max_connections, 5);
    assert_int_equal(l.cfg.max_connections_per_ip, 2);
    ns_conn_limits_close(&l);
}

static void test_caps(void **state)
{
    (void)state;
    struct ns_conn_limits l;
    struct ns_client_limits cfg = {4, 2, 0};
    assert_int_equal(ns_conn_limits_init(&l, &cfg), 0);
    unsigned long long ip0 = refused("client_connections_per_ip");
    unsigned long long node0 = refused("client_connections");
    assert_null(ns_conn_limits_admit(&l, 1, "10.0.0.1"));
    assert_null(ns_conn_limits_admit(&l, 2, "10.0.0.1"));
    assert_string_equal(ns_conn_limits_admit(&l, 3, "10.0.0.1"),
                        "over clientMaxConnectionsPerIp");
    assert_null(ns_conn_limits_admit(&l, 3, "10.0.0.2"));
    assert_null(ns_conn_limits_admit(&l, 4, "::1"));
    assert_string_equal(ns_conn_limits_admit(&l, 5, "10.0.0.3"),
                        "over clientMaxConnections");
    assert_int_equal(refused("client_connections_per_ip"), ip0 + 1);
    assert_int_equal(refused("client_connections"), node0 + 1);
    /* A release frees one place of that address. */
    ns_conn_limits_release(&l, "10.0.0.1");
    assert_null(ns_conn_limits_admit(&l, 4, "10.0.0.1"));
    assert_non_null(ns_conn_limits_admit(&l, 4, "10.0.0.1"));
    ns_conn_limits_release(&l, "10.0.0.1");
    ns_conn_limits_release(&l, "10.0.0.1");
    ns_conn_limits_release(&l, "10.0.0.2");
    ns_conn_limits_release(&l, "::1");
    ns_conn_limits_release(&l, "10.0.0.9"); /* never admitted: no effect */
    for (size_t i = 0; i < 4096; i++) {     /* IP_BUCKETS */
        assert_null(l.buckets[i]);          /* every entry was freed at zero */
    }
    ns_conn_limits_close(&l);
}

static void test_many_addresses(void **state)
{
    (void)state;
    struct ns_conn_limits l;
    struct ns_client_limits cfg = {100000, 3, 0};
    assert_int_equal(ns_conn_limits_init(&l, &cfg), 0);
    char ip[48];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 20000; i++) {
            snprintf(ip, sizeof ip, "10.%d.%d.%d", i >> 16, (i >> 8) & 255,
                     i & 255);
            assert_null(ns_conn_limits_admit(&l, 1, ip));
        }
    }
    assert_non_null(ns_conn_limits_admit(&l, 1, "10.0.0.7"));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 20000; i++) {
            snprintf(ip, sizeof ip, "10.%d.%d.%d", i >> 16, (i >> 8) & 255,
                     i & 255);
            ns_conn_limits_release(&l, ip);
        }
    }
    assert_null(ns_conn_limits_admit(&l, 1, "10.0.0.7"));
    ns_conn_limits_close(&l); /* frees the remaining entry */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_many_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
