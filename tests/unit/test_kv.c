/* Unit tests of the KV store (src/route/kv.c): put/find/delete semantics, JSON
 * of a namespace, iteration order, state encoding golden bytes and round trip,
 * decode hardening. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/kv.h"

static char *ns_json(struct ns_kv *kv, const char *ns)
{
    static char text[512];
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_kv_encode_namespace(kv, ns, &b);
    if (rv != 0) {
        ns_buf_close(&b);
        return NULL;
    }
    assert_true(b.len < sizeof text);
    memcpy(text, b.data, b.len);
    text[b.len] = '\0';
    ns_buf_close(&b);
    return text;
}

static void test_put_find_delete(void **state)
{
    (void)state;
    struct ns_kv *kv = ns_kv_create();
    assert_non_null(kv);
    assert_false(ns_kv_has_namespace(kv, "namespace"));
    assert_null(ns_json(kv, "namespace"));
    uint64_t g0 = ns_kv_generation(kv);
    assert_int_equal(ns_kv_put(kv, "namespace", "key", "value"), 0);
    assert_true(ns_kv_generation(kv) > g0);
    assert_string_equal(ns_kv_find(kv, "namespace", "key"), "value");
    assert_int_equal(ns_kv_put(kv, "namespace", "key", "v2"), 0);
    assert_string_equal(ns_kv_find(kv, "namespace", "key"), "v2");
    assert_int_equal(ns_kv_n_entries(kv), 1);
    assert_string_equal(ns_json(kv, "namespace"),
                        "{\"table\":{\"key\":\"v2\"}}");

    uint64_t g1 = ns_kv_generation(kv);
    assert_int_equal(ns_kv_delete(kv, "namespace", "key"), 0);
    assert_true(ns_kv_generation(kv) > g1);
    assert_null(ns_kv_find(kv, "namespace", "key"));
    assert_true(
        ns_kv_has_namespace(kv, "namespace")); /* DELETE leaves the namespace */
    assert_string_equal(ns_json(kv, "namespace"), "{\"table\":{}}");
    assert_int_equal(ns_kv_delete(kv, "namespace", "missing"), 0);
    assert_int_equal(ns_kv_delete(kv, "nope", "missing"), 0);
    assert_false(ns_kv_has_namespace(kv, "nope"));
    ns_kv_destroy(kv);
}

static void test_null_value(void **state)
{
    (void)state;
    struct ns_kv *kv = ns_kv_create();
    assert_int_equal(ns_kv_put(kv, "n", "b", NULL), 0);
    assert_int_equal(ns_kv_put(kv, "n", "a", "x"), 0);
    assert_null(ns_kv_find(kv, "n", "b"));
    assert_int_equal(ns_kv_n_entries(kv), 2);
    assert_string_equal(ns_json(kv, "n"), "{\"table\":{\"a\":\"x\"}}");
    ns_kv_destroy(kv);
}

struct collect {
    char text[256];
};

static void collect_cb(void *arg, const char *ns, const char *key,
                       const char *value)
{
    struct collect *c = arg;
    size_t n = strlen(c->text);
    snprintf(c->text + n, sizeof c->text - n, "%s/%s=%s;", ns, key,
             value ? value : "(null)");
}

static void test_sorted(void **state)
{
    (void)state;
    struct ns_kv *kv = ns_kv_create();
    assert_int_equal(
        ns_kv_put(kv, "ORDER_TOPIC_CONFIG", "TopicB", "broker-a:4"), 0);
    assert_int_equal(
        ns_kv_put(kv, "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:8"), 0);
    assert_int_equal(ns_kv_put(kv, "A", "z", NULL), 0);
    assert_int_equal(ns_kv_put(kv, "A", "y", "1"), 0);
    struct collect c = {{0}};
    ns_kv_foreach(kv, collect_cb, &c);
    assert_string_equal(c.text,
                        "A/y=1;A/z=(null);ORDER_TOPIC_CONFIG/TopicA=broker-a:8;"
                        "ORDER_TOPIC_CONFIG/TopicB=broker-a:4;");
    assert_string_equal(
        ns_json(kv, NS_KV_ORDER_TOPIC_CONFIG),
        "{\"table\":{\"TopicA\":\"broker-a:8\",\"TopicB\":\"broker-a:4\"}}");
    ns_kv_destroy(kv);
}

static const uint8_t GOLDEN_STATE[] = {
    0x00, 0x01,                                               /* version */
    0x00, 0x00, 0x00, 0x01,                                   /* 1 namespace */
    0x00, 0x00, 0x00, 0x01, 'n',                              /* "n" */
    0x00, 0x00, 0x00, 0x02,                                   /* 2 entries */
    0x00, 0x00, 0x00, 0x01, 'a', 0x00, 0x00, 0x00, 0x01, 'x', /* a=x */
    0x00, 0x00, 0x00, 0x01, 'b', 0xFF, 0xFF, 0xFF, 0xFF,      /* b=null */
};

static void test_state_golden(void **state)
{
    (void)state;
    struct ns_kv *kv = ns_kv_create();
    assert_int_equal(ns_kv_put(kv, "n", "b", NULL), 0);
    assert_int_equal(ns_kv_put(kv, "n", "a", "x"), 0);
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_kv_encode_state(kv, &b), 0);
    assert_int_equal(b.len, sizeof GOLDEN_STATE);
    assert_memory_equal(b.data, GOLDEN_STATE, sizeof GOLDEN_STATE);

    struct ns_kv *copy = ns_kv_create();
    struct ns_rd rd;
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_kv_decode_state(copy, &rd), 0);
    assert_int_equal(ns_rd_left(&rd), 0);
    assert_string_equal(ns_kv_find(copy, "n", "a"), "x");
    assert_int_equal(ns_kv_n_entries(copy), 2);
    struct ns_buf b2;
    ns_buf_init(&b2);
    assert_int_equal(ns_kv_encode_state(copy, &b2), 0);
    assert_int_equal(b2.len, b.len);
    assert_memory_equal(b2.data, b.data, b.len);
    ns_buf_close(&b2);
    ns_buf_close(&b);
    ns_kv_destroy(copy);
    ns_kv_destroy(kv);
}

/* ns_kv_state_bytes follows every put, overwrite, delete and decode: the
 * keys' and values' bytes, 32 more per entry. */
static void test_state_bytes(void **state)
{
    (void)state;
    struct ns_kv *kv = ns_kv_create();
    assert_int_equal(ns_kv_state_bytes(kv), 0);
    assert_int_equal(ns_kv_put(kv, "n", "key", "value"), 0);
    assert_int_equal(ns_kv_state_bytes(kv), 3 + 5 + 32);
    assert_int_equal(ns_kv_put(kv, "n", "key", "a-longer-value"), 0);
    assert_int_equal(ns_kv_state_bytes(kv), 3 + 14 + 32);
    assert_int_equal(ns_kv_put(kv, "m", "k2", NULL), 0);
    assert_int_equal(ns_kv_state_bytes(kv), 3 + 14 + 32 + 2 + 32);
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_kv_encode_state(kv, &b), 0);
    struct ns_kv *copy = ns_kv_create();
    struct ns_rd rd;
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_kv_decode_state(copy, &rd), 0);
    assert_int_equal(ns_kv_state_bytes(copy), ns_kv_state_bytes(kv));
    assert_int_equal(ns_kv_delete(kv, "n", "key"), 0);
    assert_int_equal(ns_kv_delete(kv, "m", "k2"), 0);
    assert_int_equal(ns_kv_delete(kv, "m", "k2"), 0); /* gone already */
    assert_int_equal(ns_kv_state_bytes(kv), 0);
    ns_buf_close(&b);
    ns_kv_destroy(copy);
    ns_kv_destroy(kv);
}

static void test_state_decode_errors(void **state)
{
    (void)state;
    /* Every truncation fails cleanly. */
    for (size_t len = 0; len < sizeof GOLDEN_STATE; len++) {
        struct ns_kv *kv = ns_kv_create();
        struct ns_rd rd;
        ns_rd_init(&rd, GOLDEN_STATE, len);
        assert_int_not_equal(ns_kv_decode_state(kv, &rd), 0);
        ns_kv_destroy(kv);
    }
    /* Future version, huge count, unsorted keys. */
    uint8_t bad[sizeof GOLDEN_STATE];
    memcpy(bad, GOLDEN_STATE, sizeof bad);
    bad[1] = 2;
    struct ns_kv *kv = ns_kv_create();
    struct ns_rd rd;
    ns_rd_init(&rd, bad, sizeof bad);
    assert_int_equal(ns_kv_decode_state(kv, &rd), NS_EVERSION);
    ns_kv_destroy(kv);
    memcpy(bad, GOLDEN_STATE, sizeof bad);
    bad[2] = 0x7F;
    kv = ns_kv_create();
    ns_rd_init(&rd, bad, sizeof bad);
    assert_int_equal(ns_kv_decode_state(kv, &rd), NS_EPROTO);
    ns_kv_destroy(kv);
    memcpy(bad, GOLDEN_STATE, sizeof bad);
    bad[19] = 'b'; /* keys b, b: not strictly sorted */
    kv = ns_kv_create();
    ns_rd_init(&rd, bad, sizeof bad);
    assert_int_equal(ns_kv_decode_state(kv, &rd), NS_EPROTO);
    ns_kv_destroy(kv);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; !ok && k < 200; k++) {
        struct ns_kv *kv = ns_kv_create();
        if (kv == NULL) {
            continue;
        }
        ns_alloc_fail_at(k, 1);
        struct ns_rd rd;
        ns_rd_init(&rd, GOLDEN_STATE, sizeof GOLDEN_STATE);
        int rv = ns_kv_decode_state(kv, &rd);
        if (rv == 0) {
            rv = ns_kv_put(kv, "m", "k", "v");
        }
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_kv_destroy(kv);
    }
    assert_true(ok);
}

int main(void)
{
    ns_json_use_ns_alloc();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_find_delete),
        cmocka_unit_test(test_null_value),
        cmocka_unit_test(test_sorted),
        cmocka_unit_test(test_state_golden),
        cmocka_unit_test(test_state_bytes),
        cmocka_unit_test(test_state_decode_errors),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
