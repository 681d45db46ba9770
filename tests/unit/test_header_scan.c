/* Unit tests of the JSON header fast path (src/remoting/header_scan.c): for
 * every case it either hands the text to the cJSON path or fills the struct
 * exactly as that path does; the common shapes must take the fast path;
 * malformed text still gives NS_EPROTO; decoded structs (arena-backed) stay
 * editable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/remoting/header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/remoting.h"

static void assert_same_cmd(const struct ns_cmd *a, const struct ns_cmd *b,
                            const char *text)
{
    if (a->code != b->code || a->language != b->language ||
        a->version != b->version || a->opaque != b->opaque ||
        a->flag != b->flag || a->has_ext != b->has_ext ||
        a->n_ext != b->n_ext || (a->remark == NULL) != (b->remark == NULL) ||
        (a->remark != NULL && strcmp(a->remark, b->remark) != 0)) {
        fail_msg("fast and tree paths differ on %s", text);
    }
    for (size_t i = 0; i < a->n_ext; i++) {
        if (strcmp(a->ext[i].key, b->ext[i].key) != 0 ||
            strcmp(a->ext[i].value, b->ext[i].value) != 0) {
            fail_msg("ext %zu differs on %s", i, text);
        }
    }
}

/* Runs both paths; returns the fast path's answer (0 or NS_EAGAIN). */
static int differential(const char *text)
{
    struct ns_cmd fast;
    struct ns_cmd tree;
    size_t len = strlen(text);
    ns_cmd_init(&fast);
    ns_cmd_init(&tree);
    int rv_fast = header_json_scan((const uint8_t *)text, len, &fast);
    int rv_tree = header_json_decode_tree((const uint8_t *)text, len, &tree);
    if (rv_fast != 0 && rv_fast != NS_EAGAIN) {
        fail_msg("fast path gave %d on %s", rv_fast, text);
    }
    if (rv_fast == 0) {
        if (rv_tree != 0) {
            fail_msg("fast path accepted what cJSON rejects: %s", text);
        }
        assert_same_cmd(&fast, &tree, text);
    }
    ns_cmd_close(&fast);
    ns_cmd_close(&tree);
    return rv_fast;
}

/* Shapes the fast path must decode itself. */
static const char *const fast_cases[] = {
    "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,"
    "\"language\":\"JAVA\",\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\","
    "\"version\":479}",
    "{\"code\":1,\"remark\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\","
    "\"extFields\":{\"k\\u00e9y\":\"v\\u4e2d\\ud83d\\ude00\\u0041\"}}",
    "{\"extFields\":{\"a\":1,\"b\":-0,\"c\":true,\"d\":false,\"e\":null,"
    "\"f\":007,\"g\":-123456789012345,\"h\":\"\"}}",
    "{\"x\":{\"a\":[1,2,{\"b\":[]}],\"c\":\"d\"},\"y\":[],\"z\":1.5e3,"
    "\"w\":-0.25E-2,\"v\":[true,false,null],\"code\":\"12\"}",
    " {\r\n\t\"version\" : 1 , \"code\" : 2 } \n",
    "{\"remark\":\"a\",\"remark\":null,\"extFields\":{\"k\":\"1\"},"
    "\"extFields\":{\"k\":\"2\"},\"code\":3,\"code\":4}",
    "{\"language\":\"GO\"}",
    "{\"language\":\"go\"}",
    "{\"language\":\"nope\",\"version\":false}",
    "{\"code\":\"-5\",\"opaque\":\"+8\",\"flag\":true,\"language\":3}",
    "{\"code\":\"1,0\",\"opaque\":\"7.00\",\"version\":\"null\"}",
    "{\"serializeTypeCurrentRPC\":\"ROCKETMQ\",\"code\":2147483647}",
    "{\"extFields\":{}}",
    "{\"extFields\":{\"k\":\"a\",\"j\":1,\"k\":null,\"i\":\"b\"}}",
    "{\"extFields\":null}",
    "{\"remark\":\"\xc3\xa9\xff\"}",
    "{\"remark\":7}",
    "{}",
    "{\"averyveryveryverylongunknownkeyname12345\":1,\"code\":3}",
    "{\"co\\u0064e\":11}",
};

/* Shapes it leaves to cJSON (which may accept or reject them). */
static const char *const fallback_cases[] = {
    "{\"code\":\"12x\",\"opaque\":\"-5\",\"flag\":true,\"language\":3}",
    "{\"code\":\" 7\",\"opaque\":\"+8\",\"version\":\"99999999999\"}",
    "{\"language\":99,\"code\":null}",
    "{\"code\":4294967297,\"opaque\":-2147483649}",
    "{\"serializeTypeCurrentRPC\":5}",
    "{\"body\":\"AAAA\"}",
    "{\"extFields\":{1:\"a\"}}",
    "{1:2,\"code\":3}",
    "{\"code\":1.5}",
    "{\"code\":12345678901234567}",
    "{\"remark\":\"\\ud800\"}",
    "{\"remark\":\"\\udc00\\ud800\"}",
    "{\"remark\":\"a\\u0000b\"}",
    "{\"remark\":\"a\tb\"}",
    "{\"extFields\":{\"a\":{\"b\":1}}}",
    "{\"extFields\":{\"a\":[1]}}",
    "{\"extFields\":{\"a\":1e3}}",
    "{\"extFields\":\"x\"}",
    "{\"extFields\":[]}",
    "{\"code\":{}}",
    "{\"remark\":{}}",
    "{\"x\":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}",
    "\xef\xbb\xbf{\"code\":1}",
    "\f{\"code\":1}",
    "{\"code\":1}\f",
    "[1]",
    "",
    "{\"code\":1",
    "{\"code\":1}x",
    "{\"code\":1,}",
    "{\"a\":tru}",
    "{\"a\":\"\\x\"}",
    "{\"a\" 1}",
    "{\"a\":01x}",
    "{\"a\":-}",
    "{\"a\":1.}",
    "{\"a\":\"\\u12\"}",
    "{\"a\":\"abc",
    "{\"a\":\"abc\\",
    "{\"a\":+1}",
    "{\"extFields\":{\"a\\u0000\":\"x\"}}",
};

static void fast_path_matches_tree(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fast_cases / sizeof *fast_cases; i++) {
        if (differential(fast_cases[i]) != 0) {
            fail_msg("not on the fast path: %s", fast_cases[i]);
        }
    }
    for (size_t i = 0; i < sizeof fallback_cases / sizeof *fallback_cases;
         i++) {
        if (differential(fallback_cases[i]) != NS_EAGAIN) {
            fail_msg("unexpectedly on the fast path: %s", fallback_cases[i]);
        }
    }
}

static size_t make_frame(uint8_t *out, size_t cap, const char *header)
{
    size_t h = strlen(header);
    assert_true(h + 8 <= cap);
    uint32_t length = (uint32_t)(4 + h);
    uint8_t prefix[8] = {(uint8_t)(length >> 24),
                         (uint8_t)(length >> 16),
                         (uint8_t)(length >> 8),
                         (uint8_t)length,
                         0,
                         (uint8_t)(h >> 16),
                         (uint8_t)(h >> 8),
                         (uint8_t)h};
    memcpy(out, prefix, 8);
    memcpy(out + 8, header, h);
    return h + 8;
}

static void malformed_is_eproto(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"code\":1",
        "{\"code\":1}x",
        "{\"code\":1,}",
        "{\"a\":tru}",
        "{\"a\":\"\\x\"}",
        "{\"a\" 1}",
        "{\"a\":01x}",
        "[1]",
        "",
        "{\"remark\":\"\\ud800\"}",
        "{\"extFields\":\"x\"}",
        "{\"a\":\"abc\\",
        "{\"a\":-}",
    };
    uint8_t frame[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t len = make_frame(frame, sizeof frame, bad[i]);
        struct ns_cmd c;
        if (ns_cmd_decode(frame, len, &c) != NS_EPROTO) {
            fail_msg("not NS_EPROTO: %s", bad[i]);
        }
    }
}

/* A decoded command (strings in the arena) can still be edited and closed. */
static void arena_cmd_is_editable(void **state)
{
    (void)state;
    uint8_t frame[256];
    size_t len = make_frame(
        frame, sizeof frame,
        "{\"code\":1,\"remark\":\"r\",\"extFields\":{\"a\":\"1\",\"b\":2}}");
    struct ns_cmd c;
    assert_int_equal(ns_cmd_decode(frame, len, &c), 0);
    assert_non_null(c.arena);
    assert_string_equal(ns_cmd_ext_find(&c, "b"), "2");
    assert_int_equal(ns_cmd_ext_set(&c, "a", "replaced"), 0);
    for (int i = 0; i < 9; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(ns_cmd_ext_set(&c, key, "v"), 0);
    }
    assert_int_equal(ns_cmd_set_remark(&c, "new"), 0);
    assert_string_equal(ns_cmd_ext_find(&c, "a"), "replaced");
    assert_string_equal(ns_cmd_ext_find(&c, "b"), "2");
    assert_string_equal(ns_cmd_ext_find(&c, "k8"), "v");
    assert_int_equal(c.n_ext, 11);
    assert_string_equal(c.remark, "new");
    ns_cmd_close(&c);
}

static void fast_path_allocation_failures(void **state)
{
    (void)state;
    uint8_t frame[256];
    size_t len = make_frame(frame, sizeof frame, fast_cases[0]);
    for (long k = 0;; k++) {
        struct ns_cmd c;
        ns_alloc_fail_at(k, 1);
        int rv = ns_cmd_decode(frame, len, &c);
        ns_alloc_fail_at(-1, 0);
        if (rv == 0) {
            assert_int_equal(c.code, 105);
            assert_string_equal(ns_cmd_ext_find(&c, "topic"), "TopicTest");
            ns_cmd_close(&c);
            break;
        }
        assert_int_equal(rv, NS_ENOMEM);
        assert_true(k < 100);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_path_matches_tree),
        cmocka_unit_test(malformed_is_eproto),
        cmocka_unit_test(arena_cmd_is_editable),
        cmocka_unit_test(fast_path_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
