/* Unit tests of the fastjson-compatible JSON layer (src/json): escaping in both
 * flavours, the streaming writer, the lenient reader (bare keys, $ref, depth),
 * getters, and the recorded route bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"

static char *load(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NS_VECTORS_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return data;
}

static void assert_buf(struct ns_buf *b, const char *want)
{
    assert_int_equal(b->err, 0);
    if (b->len != strlen(want) || memcmp(b->data, want, b->len) != 0) {
        fail_msg("got [%.*s] want [%s]", (int)b->len, (const char *)b->data,
                 want);
    }
}

struct esc_case {
    const char *in;
    const char *legacy;
    const char *standard;
};

static void escaping_both_flavours(void **state)
{
    (void)state;
    static const struct esc_case cases[] = {
        {"", "\"\"", "\"\""},
        {"plain", "\"plain\"", "\"plain\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\"", "\"a\\\"b\\\\c\""},
        {"\b\t\n\f\r", "\"\\b\\t\\n\\f\\r\"", "\"\\b\\t\\n\\f\\r\""},
        {"\x01\x1f", "\"\\u0001\\u001F\"", "\"\\u0001\\u001F\""},
        {"\x7f", "\"\\u007F\"", "\"\\u007F\""},
        {"a/b", "\"a/b\"", "\"a\\/b\""},
        {"caf\xc3\xa9", "\"caf\xc3\xa9\"", "\"caf\\u00E9\""},
        {"\xe4\xb8\xad", "\"\xe4\xb8\xad\"", "\"\\u4E2D\""},
        {"\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\"",
         "\"\\u2028\\u2029\""},
        {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"", "\"\\uD83D\\uDE00\""},
        {"\xef\xbf\xbf", "\"\xef\xbf\xbf\"", "\"\\uFFFF\""},
        /* invalid UTF-8: each bad byte becomes U+FFFD */
        {"a\xffz", "\"a\xef\xbf\xbdz\"", "\"a\\uFFFDz\""},
        {"\xc3", "\"\xef\xbf\xbd\"", "\"\\uFFFD\""},
        {"\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\"", "\"\\uFFFD\\uFFFD\""},
        {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
         "\"\\uFFFD\\uFFFD\\uFFFD\""},
        {"\xf4\x90\x80\x80",
         "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
         "\"\\uFFFD\\uFFFD\\uFFFD\\uFFFD\""},
    };
    struct ns_buf b;
    ns_buf_init(&b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ns_buf_reset(&b);
        ns_json_write_string(&b, cases[i].in, NS_JSON_LEGACY);
        assert_buf(&b, cases[i].legacy);
        ns_buf_reset(&b);
        ns_json_write_string(&b, cases[i].in, NS_JSON_STANDARD);
        assert_buf(&b, cases[i].standard);
    }
    ns_buf_close(&b);
}

static void write_sample(struct ns_json_writer *w)
{
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "addrs");
    ns_json_write_obj_begin(w);
    ns_json_write_key_int(w, 0);
    ns_json_write_str(w, "127.0.0.1:10911");
    ns_json_write_key_int(w, -1);
    ns_json_write_str(w, "x/y");
    ns_json_write_obj_end(w);
    ns_json_write_key(w, "big");
    ns_json_write_int(w, 9007199254740992LL);
    ns_json_write_key(w, "edge");
    ns_json_write_int(w, -9007199254740991LL);
    ns_json_write_key(w, "empty");
    ns_json_write_arr_begin(w);
    ns_json_write_arr_end(w);
    ns_json_write_key(w, "list");
    ns_json_write_arr_begin(w);
    ns_json_write_int(w, 1);
    ns_json_write_bool(w, true);
    ns_json_write_raw(w, "{\"r\":1}", 7);
    ns_json_write_obj_begin(w);
    ns_json_write_obj_end(w);
    ns_json_write_bool(w, false);
    ns_json_write_arr_end(w);
    ns_json_write_key(w, "min");
    ns_json_write_int(w, INT64_MIN);
    ns_json_write_obj_end(w);
}

static void writer_flavours(void **state)
{
    (void)state;
    struct ns_buf b;
    struct ns_json_writer w;
    ns_buf_init(&b);
    ns_json_write_init(&w, &b, NS_JSON_LEGACY);
    write_sample(&w);
    assert_buf(&b, "{\"addrs\":{0:\"127.0.0.1:10911\",-1:\"x/y\"},"
                   "\"big\":9007199254740992,\"edge\":-9007199254740991,"
                   "\"empty\":[],\"list\":[1,true,{\"r\":1},{},false],"
                   "\"min\":-9223372036854775808}");
    ns_buf_reset(&b);
    ns_json_write_init(&w, &b, NS_JSON_STANDARD);
    write_sample(&w);
    assert_buf(&b, "{\"addrs\":{\"0\":\"127.0.0.1:10911\",\"-1\":\"x\\/y\"},"
                   "\"big\":\"9007199254740992\",\"edge\":-9007199254740991,"
                   "\"empty\":[],\"list\":[1,true,{\"r\":1},{},false],"
                   "\"min\":\"-9223372036854775808\"}");
    ns_buf_close(&b);
}

static void writer_depth_bound(void **state)
{
    (void)state;
    struct ns_buf b;
    struct ns_json_writer w;
    ns_buf_init(&b);
    ns_json_write_init(&w, &b, NS_JSON_LEGACY);
    for (int i = 0; i < NS_JSON_MAX_DEPTH - 1; i++) {
        ns_json_write_arr_begin(&w);
    }
    assert_int_equal(b.err, 0);
    ns_json_write_arr_begin(&w);
    assert_int_equal(b.err, NS_ETOOBIG);
    for (int i = 0; i < NS_JSON_MAX_DEPTH + 3; i++) {
        ns_json_write_arr_end(&w); /* unbalanced closes must not underflow */
    }
    assert_int_equal(w.depth, 0);
    ns_buf_close(&b);
}

struct parse_case {
    const char *text;
    bool ok;
    const char *printed; /* cJSON's unformatted print when ok */
};

static void reader_cases(void **state)
{
    (void)state;
    static const struct parse_case cases[] = {
        {"{0:\"127.0.0.1:10911\",1:\"b\"}", true,
         "{\"0\":\"127.0.0.1:10911\",\"1\":\"b\"}"},
        {"{ -12 : 1 , \n 7\t:[ {3:4} ]}", true,
         "{\"-12\":1,\"7\":[{\"3\":4}]}"},
        {"{\"s\":\"{1:2,3:4}\",\"t\":\"\\\",5:\"}", true,
         "{\"s\":\"{1:2,3:4}\",\"t\":\"\\\",5:\"}"},
        {"[1,2,{5:[6,7]}]", true, "[1,2,{\"5\":[6,7]}]"},
        {"{\"a\":{\"$ref\":\"$.b\"},\"b\":{}}", true,
         "{\"a\":{\"$ref\":\"$.b\"},\"b\":{}}"},
        {"{\"u\":\"\\u00e9\\ud83d\\ude00\xc3\xa9\"}", true,
         "{\"u\":\"\xc3\xa9\xf0\x9f\x98\x80\xc3\xa9\"}"},
        {" 42 ", true, "42"},
        {"{1.5:2}", false, NULL},
        {"{-:2}", false, NULL},
        {"{a:2}", false, NULL},
        {"[1:2]", false, NULL},
        {"{} x", false, NULL},
        {"{}\0", false, NULL},
        {"", false, NULL},
        {"{\"a\":", false, NULL},
        {"\"\\ud800\"", false, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct parse_case *tc = &cases[i];
        size_t len = strlen(tc->text) + (strcmp(tc->text, "{}") == 0 ? 1 : 0);
        cJSON *root = ns_json_parse(tc->text, len);
        if ((root != NULL) != tc->ok) {
            fail_msg("case %zu [%s]: ok %d", i, tc->text, root != NULL);
        }
        if (root != NULL) {
            char *printed = cJSON_PrintUnformatted(root);
            assert_non_null(printed);
            assert_string_equal(printed, tc->printed);
            cJSON_free(printed);
            cJSON_Delete(root);
        }
    }
}

static void reader_depth_bound(void **state)
{
    (void)state;
    char text[4 * (NS_JSON_MAX_DEPTH + 1)];
    for (int depth = NS_JSON_MAX_DEPTH; depth <= NS_JSON_MAX_DEPTH + 1;
         depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++) {
            text[n++] = i % 2 ? '[' : '{';
            if (i % 2 == 0 && i + 1 < depth) {
                memcpy(text + n,
                       "1:", 2); /* bare keys take the copy path too */
                n += 2;
            }
        }
        for (int i = depth - 1; i >= 0; i--) {
            text[n++] = i % 2 ? ']' : '}';
        }
        int rv = 1;
        cJSON *root = ns_json_parse_rv(text, n, &rv);
        if (depth <= NS_JSON_MAX_DEPTH) {
            assert_non_null(root);
            assert_int_equal(rv, 0);
        } else {
            assert_null(root);
            assert_int_equal(rv, NS_EPROTO);
        }
        cJSON_Delete(root);
    }
}

static void getters(void **state)
{
    (void)state;
    static const char text[] =
        "{\"n\":12,\"neg\":-3,\"s\":\"34\",\"bad\":\"3x\",\"f\":1.9,"
        "\"huge\":1e20,\"max\":9223372036854775807,\"t\":true,\"fs\":\"FALSE\","
        "\"ts\":\"True\",\"one\":1,\"str\":\"v\",\"nul\":null,\"arr\":[]}";
    cJSON *o = ns_json_parse(text, sizeof text - 1);
    assert_non_null(o);
    assert_int_equal(ns_json_get_int64(o, "n", -1), 12);
    assert_int_equal(ns_json_get_int64(o, "neg", -1), -3);
    assert_int_equal(ns_json_get_int64(o, "s", -1), 34);
    assert_int_equal(ns_json_get_int64(o, "bad", -1), -1);
    assert_int_equal(ns_json_get_int64(o, "f", -1), 1);
    assert_int_equal(ns_json_get_int64(o, "huge", -1), -1);
    /* 2^63 as a double is out of range: default, not undefined behaviour */
    assert_int_equal(ns_json_get_int64(o, "max", -1), -1);
    assert_int_equal(ns_json_get_int64(o, "missing", 7), 7);
    assert_int_equal(ns_json_get_int64(o, "t", 7), 7);
    assert_int_equal(ns_json_get_int64(o, "nul", 7), 7);
    assert_true(ns_json_get_bool(o, "t", false));
    assert_false(ns_json_get_bool(o, "fs", true));
    assert_true(ns_json_get_bool(o, "ts", false));
    assert_true(ns_json_get_bool(o, "one", false));
    assert_true(ns_json_get_bool(o, "str", true));
    assert_false(ns_json_get_bool(o, "missing", false));
    assert_string_equal(ns_json_get_string(o, "str"), "v");
    assert_null(ns_json_get_string(o, "n"));
    assert_null(ns_json_get_string(o, "nul"));
    assert_null(ns_json_get_string(o, "missing"));
    assert_null(ns_json_get_string(o, "arr"));
    cJSON_Delete(o);
}

/* Writes any parsed tree back: keys that are all digits become numeric map
 * keys, which is how route bodies carry brokerAddrs. */
static bool is_int_key(const char *k)
{
    if (*k == '-') {
        k++;
    }
    if (*k == '\0') {
        return false;
    }
    for (; *k; k++) {
        if (*k < '0' || *k > '9') {
            return false;
        }
    }
    return true;
}

static void write_tree(struct ns_json_writer *w, const cJSON *item)
{
    if (cJSON_IsObject(item) || cJSON_IsArray(item)) {
        bool obj = cJSON_IsObject(item);
        obj ? ns_json_write_obj_begin(w) : ns_json_write_arr_begin(w);
        for (const cJSON *c = item->child; c != NULL; c = c->next) {
            if (obj && is_int_key(c->string)) {
                ns_json_write_key_int(w, strtoll(c->string, NULL, 10));
            } else if (obj) {
                ns_json_write_key(w, c->string);
            }
            write_tree(w, c);
        }
        obj ? ns_json_write_obj_end(w) : ns_json_write_arr_end(w);
    } else if (cJSON_IsString(item)) {
        ns_json_write_str(w, item->valuestring);
    } else if (cJSON_IsBool(item)) {
        ns_json_write_bool(w, cJSON_IsTrue(item));
    } else {
        assert_true(cJSON_IsNumber(item));
        ns_json_write_int(w, (int64_t)item->valuedouble);
    }
}

static void route_bodies(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        enum ns_json_flavour flavour;
    } bodies[] = {
        {"06_route_TestTopic.body", NS_JSON_STANDARD},
        {"14_route_TestTopic_v4_9_3_client.body", NS_JSON_LEGACY},
        {"18_cluster_info_two_brokers.body", NS_JSON_LEGACY},
        {"20_route_TestTopic_two_brokers_v4_9_3.body", NS_JSON_LEGACY},
        {"19_route_TestTopic_two_brokers.body", NS_JSON_STANDARD},
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        size_t len;
        char *text = load(bodies[i].name, &len);
        cJSON *root = ns_json_parse(text, len);
        assert_non_null(root);
        struct ns_buf b;
        struct ns_json_writer w;
        ns_buf_init(&b);
        ns_json_write_init(&w, &b, bodies[i].flavour);
        write_tree(&w, root);
        assert_buf(&b, text);
        ns_buf_close(&b);
        if (i < 2) {
            const cJSON *bd = cJSON_GetArrayItem(
                cJSON_GetObjectItemCaseSensitive(root, "brokerDatas"), 0);
            const cJSON *addrs =
                cJSON_GetObjectItemCaseSensitive(bd, "brokerAddrs");
            assert_string_equal(ns_json_get_string(addrs, "0"),
                                "127.0.0.1:10911");
            assert_string_equal(ns_json_get_string(bd, "brokerName"),
                                "broker-a");
            assert_string_equal(ns_json_get_string(bd, "cluster"),
                                "DefaultCluster");
            const cJSON *qd = cJSON_GetArrayItem(
                cJSON_GetObjectItemCaseSensitive(root, "queueDatas"), 0);
            assert_int_equal(ns_json_get_int64(qd, "perm", -1), 6);
            assert_int_equal(ns_json_get_int64(qd, "readQueueNums", -1), 4);
            assert_int_equal(ns_json_get_int64(qd, "writeQueueNums", -1), 4);
            assert_int_equal(ns_json_get_int64(qd, "topicSysFlag", -1), 0);
            assert_true(cJSON_IsObject(
                cJSON_GetObjectItemCaseSensitive(root, "filterServerTable")));
        }
        cJSON_Delete(root);
        free(text);
    }
}

static void parse_allocation_failures(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"brokerAddrTable\":{\"b\":{\"brokerAddrs\":{0:\"127.0.0.1:1\",1:"
        "\"x\"}}},"
        "\"list\":[1,\"two\",true,null,{\"$ref\":\"$.x\"}]}",
        "{\"plain\":[\"a\",\"b\"]}",
    };
    for (size_t i = 0; i < 2; i++) {
        for (long k = 0;; k++) {
            int rv = 1;
            ns_alloc_fail_at(k, 1);
            cJSON *root = ns_json_parse_rv(texts[i], strlen(texts[i]), &rv);
            ns_alloc_fail_at(-1, 0);
            if (root != NULL) {
                assert_int_equal(rv, 0);
                assert_true(k > 0);
                cJSON_Delete(root);
                break;
            }
            assert_int_equal(rv, NS_ENOMEM);
            assert_true(k < 1000);
        }
    }
}

int main(void)
{
    ns_json_use_ns_alloc();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escaping_both_flavours),
        cmocka_unit_test(writer_flavours),
        cmocka_unit_test(writer_depth_bound),
        cmocka_unit_test(reader_cases),
        cmocka_unit_test(reader_depth_bound),
        cmocka_unit_test(getters),
        cmocka_unit_test(route_bodies),
        cmocka_unit_test(parse_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
