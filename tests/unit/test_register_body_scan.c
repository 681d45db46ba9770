/* Differential tests of the REGISTER_BROKER JSON body fast path
 * (src/route/register_body_scan.c): for every input the full decoder with the
 * fast path gives exactly what the cJSON path alone gives (return value, error
 * text, every field); the common shapes must take the fast path, and the odd
 * ones must fall back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/route/register_body_scan.h"
#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"

#define NOW 1700000000000LL

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_register(const struct ns_register *a,
                          const struct ns_register *b)
{
    if (a->dv.counter != b->dv.counter ||
        a->dv.state_version != b->dv.state_version ||
        a->dv.timestamp != b->dv.timestamp || a->n_topics != b->n_topics ||
        a->n_mappings != b->n_mappings ||
        a->has_filter_servers != b->has_filter_servers ||
        a->n_filter_servers != b->n_filter_servers) {
        return false;
    }
    for (size_t i = 0; i < a->n_topics; i++) {
        const struct ns_topic_config *x = &a->topics[i], *y = &b->topics[i];
        if (!same_str(x->name, y->name) || x->read_queues != y->read_queues ||
            x->write_queues != y->write_queues || x->perm != y->perm ||
            x->sys_flag != y->sys_flag) {
            return false;
        }
    }
    for (size_t i = 0; i < a->n_mappings; i++) {
        const struct ns_mapping_info *x = &a->mappings[i], *y = &b->mappings[i];
        if (!same_str(x->topic, y->topic) || !same_str(x->bname, y->bname) ||
            !same_str(x->scope, y->scope) || x->epoch != y->epoch ||
            x->total_queues != y->total_queues || x->dirty != y->dirty ||
            x->n_curr_ids != y->n_curr_ids ||
            (x->n_curr_ids > 0 &&
             memcmp(x->curr_ids, y->curr_ids,
                    x->n_curr_ids * sizeof *x->curr_ids) != 0)) {
            return false;
        }
    }
    for (size_t i = 0; i < a->n_filter_servers; i++) {
        if (!same_str(a->filter_servers[i], b->filter_servers[i])) {
            return false;
        }
    }
    return true;
}

/* Runs both paths at version; returns whether the fast path took the text. */
static bool differential_v(const char *text, size_t len, int32_t version)
{
    struct ns_register fast, tree, scan;
    char err_fast[256], err_tree[256];
    ns_register_init(&fast);
    ns_register_init(&tree);
    ns_register_init(&scan);
    int rv_scan = register_body_scan(&scan, version < 37, (const uint8_t *)text,
                                     len, NOW);
    int rv_fast =
        ns_register_decode_body(&fast, version, false, (const uint8_t *)text,
                                len, NOW, err_fast, sizeof err_fast);
    int rv_tree =
        register_decode_body_tree(&tree, version, false, (const uint8_t *)text,
                                  len, NOW, err_tree, sizeof err_tree);
    if (rv_scan != 0 && rv_scan != NS_EAGAIN) {
        fail_msg("scan gave %d on %.200s", rv_scan, text);
    }
    if (rv_fast != rv_tree || strcmp(err_fast, err_tree) != 0) {
        fail_msg("rv %d/%d err '%s'/'%s' on %.200s", rv_fast, rv_tree, err_fast,
                 err_tree, text);
    }
    if (!same_register(&fast, &tree)) {
        fail_msg("fields differ on %.300s", text);
    }
    if (rv_scan == 0 && rv_tree != 0) {
        fail_msg("scan accepted what the tree path rejects: %.200s", text);
    }
    ns_register_close(&fast);
    ns_register_close(&tree);
    ns_register_close(&scan);
    return rv_scan == 0;
}

static bool differential(const char *text)
{
    bool fast = differential_v(text, strlen(text), 479);
    bool fast_old = differential_v(text, strlen(text), 0);
    (void)fast_old;
    return fast;
}

/* A broker-like body: version 5 adds attributes and mappings. */
static void gen_body(struct ns_buf *b, int n_topics, bool v5, int n_maps,
                     const char *ws)
{
    ns_buf_reset(b);
    ns_buf_printf(b,
                  "{%s\"filterServerList\"%s:%s[\"10.0.0.1:1\"],"
                  "\"topicConfigSerializeWrapper\":{\"dataVersion\":{"
                  "\"counter\":%d,\"stateVersion\":%d,\"timestamp\":"
                  "1700000000123},%s\"topicConfigTable\":{",
                  ws, ws, ws, n_topics, n_topics % 3, ws);
    for (int i = 0; i < n_topics; i++) {
        /* topic 7 repeats topic 3 under another key: the later one wins */
        int id = i == 7 ? 3 : i;
        ns_buf_printf(b,
                      "%s\"T%d\":{%s\"order\":false,\"perm\":%d,"
                      "\"readQueueNums\":%d,\"topicFilterType\":"
                      "\"SINGLE_TAG\",\"topicName\":\"T%d\",\"topicSysFlag\""
                      ":%d,\"writeQueueNums\":%d}",
                      i ? "," : "", i,
                      v5 ? "\"attributes\":{\"+queue.type\":\"BatchCQ\"}," : "",
                      i % 7, i % 16 + 1, id, i % 2, 300 - i);
    }
    ns_buf_printf(b, "}");
    if (v5) {
        ns_buf_printf(b, ",\"topicQueueMappingInfoMap\":{");
        for (int i = 0; i < n_maps; i++) {
            ns_buf_printf(b,
                          "%s\"M%d\":{\"bname\":\"b\",\"currIdMap\":{%d:%d,"
                          "\"0\":1},\"dirty\":%s,\"epoch\":%d,\"scope\":%s,"
                          "\"topic\":\"M%d\",\"totalQueues\":%d}",
                          i ? "," : "", i % 5, i + 1, -i,
                          i % 2 ? "true" : "false", i * 1000,
                          i % 3 ? "\"s\"" : "null", i, i);
        }
        ns_buf_printf(b, "},\"mappingDataVersion\":{\"counter\":1,"
                         "\"timestamp\":2}");
    }
    ns_buf_printf(b, "}%s}%s", ws, ws);
}

static void test_generated_bodies_take_fast_path(void **state)
{
    (void)state;
    struct ns_buf b;
    ns_buf_init(&b);
    const char *ws[] = {"", " \r\n\t "};
    for (int n = 0; n <= 300; n += n < 10 ? 1 : 29) {
        for (int v5 = 0; v5 < 2; v5++) {
            for (int w = 0; w < 2; w++) {
                gen_body(&b, n, v5, n % 6, ws[w]);
                assert_true(differential_v((const char *)b.data, b.len, 479));
                assert_true(differential_v((const char *)b.data, b.len, 400));
            }
        }
    }
    ns_buf_close(&b);
}

static const char *const fast_cases[] = {
    "{}",
    " { } ",
    "{\"filterServerList\":null,\"topicConfigSerializeWrapper\":null}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":null,"
    "\"topicConfigTable\":null,\"topicQueueMappingInfoMap\":null}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{}}}",
    "{\"filterServerList\":[],\"x\":[1,-2.5e+3,0.5,true,false,null,\"\\u00e9\","
    "{\"a\":{\"b\":[[]]}}],\"topicConfigSerializeWrapper\":{"
    "\"topicConfigTable\""
    ":{\"a\":{\"topicName\":\"a\\\"b\\\\c\\/d\\u4e2d\\u0041\\n\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"k\\tey\":{"
    "\"topicName\":\"x\",\"perm\":-0,\"readQueueNums\":007,"
    "\"writeQueueNums\":2147483647,\"topicSysFlag\":-2147483648}}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":"
    "999999999999999,\"stateVersion\":-999999999999999}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{1:{"
    "\"bname\":\"b\",\"currIdMap\":{-2147483648:2147483647, 5 :0}}}}}",
    "{\"filterServerList\":[\"a\",\"b\\u0001\"],\"a\":{},\"b\":[]}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"\\u00ff\\u07ff\\u0800\\uffff\"}}}}",
};

/* The TopicConfig shape a stock broker writes, and keys or values next to
 * it that the fast path must not take for it: a key sharing a known key's
 * first letter, prefix or length, escapes in keys, a blank before the colon,
 * a topicName other than the map key. */
#define TOPIC_BODY(topics)                                                     \
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{" topics "}}}"
#define STOCK_TOPIC(k, rest)                                                   \
    "\"" k "\":{\"attributes\":{},\"order\":false,\"perm\":6,"                 \
    "\"readQueueNums\":4,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":"    \
    "\"" k "\",\"topicSysFlag\":0,\"writeQueueNums\":4" rest "}"

static const char *const topic_fast_cases[] = {
    TOPIC_BODY(STOCK_TOPIC("T", "")),
    TOPIC_BODY(STOCK_TOPIC("a", "") "," STOCK_TOPIC("b", "")),
    TOPIC_BODY(STOCK_TOPIC("T", ",\"perms\":7,\"pern\":8,\"perm2\":9")),
    TOPIC_BODY(STOCK_TOPIC("T", ",\"topicNam\":\"x\",\"topicNameX\":\"y\"")),
    TOPIC_BODY(STOCK_TOPIC("T", ",\"topicSysFlags\":1,\"topicFilterTypes\":1")),
    TOPIC_BODY(STOCK_TOPIC("T", ",\"orders\":1,\"attribute\":1,\"w\":1")),
    TOPIC_BODY(STOCK_TOPIC("T", ",\"readQueueNumz\":1,\"writeQueueNum\":1")),
    TOPIC_BODY("\"T\":{\"topicName\":\"U\",\"p\\u0065rm\":2,"
               "\"topic\\u004eame2\":1,\"\\u0072eadQueueNums\":3}"),
    TOPIC_BODY("\"T\":{\"topicName\" :\"T\",\"perm\"\t:2,\"order\" : true}"),
    TOPIC_BODY("\"ab\":{\"topicName\":\"abc\"},\"abc\":{\"topicName\":\"ab\"}"),
    TOPIC_BODY("\"a\\\"b\":{\"topicName\":\"a\\\"b\"}"),
    TOPIC_BODY("\"\\u0041\":{\"topicName\":\"A\"}"),
    TOPIC_BODY("\"\":{\"topicName\":\"\"}"),
    TOPIC_BODY("12:{\"topicName\":\"12\"}"),
    TOPIC_BODY(
        "\"T\":{\"topicName\":\"T\",\"topicFilterType\":\"MULTI_TAG\","
        "\"topicFilterType\":\"SINGLE_TAG\\u0041\",\"order\":true,"
        "\"order\":false,\"attributes\":{ },\"attributes\":{\"a\":\"b\"}}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"perm\":66,\"readQueueNums\":-1,"
               "\"writeQueueNums\":0 ,\"topicSysFlag\":9}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"perm\":6}"),
};

/* ... and shapes of it left to the cJSON path. */
static const char *const topic_fallback_cases[] = {
    TOPIC_BODY("\"a\\\"b\":{\"topicName\":\"a\"b\"}"),
    TOPIC_BODY("\"a\\u0022b\":{\"topicName\":\"a\"b\"}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"order\":fals}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"order\":falsey}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"order\":null}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"order\":0}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"topicFilterType\":1}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"topicFilterType\":\"SINGLE_TAG}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"perm\":6.5}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"perm\":6e1}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"perm\":6,\"perm\":6}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"p\\u0065rm\":6,\"perm\":6}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"topicName\":\"T\"}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"attributes\":{}}}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\"x}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"$ref\":1}"),
    TOPIC_BODY("\"T\":{\"topicName\":\"T\",\"perm\"6}"),
};

/* Shapes left to the cJSON path (right or wrong there). */
static const char *const fallback_cases[] = {
    "",
    "[]",
    "null",
    "{",
    "{} x",
    "{}\f",
    "\xef\xbb\xbf{}",
    "{\"a\":1,}",
    "{\"a\" 1}",
    "{\"filterServerList\":[],\"filterServerList\":null}",
    "{\"filterServerList\":[1]}",
    "{\"filterServerList\":{}}",
    "{\"topicConfigSerializeWrapper\":[]}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":\"5\"}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":1.0}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":1e3}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":"
    "1234567890123456}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":1,"
    "\"counter\":2}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"$ref\":\"$\"}}}",
    "{\"topicConfigSerializeWrapper\":{\"dataVersion\":[]}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":1}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":[]}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":null}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\\u0000b\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"\\ud83d\\ude00\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"\\ud83d\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\\x\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\tb\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\",\"perm\":2147483648}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\",\"perm\":\"6\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\",\"perm\":true}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"a\":{"
    "\"topicName\":\"a\",\"topicName\":\"b\"}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "\"bname\":\"b\",\"currIdMap\":{\"1\":1,\"01\":2}}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "\"bname\":\"b\",\"currIdMap\":{\" 1\":1}}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "\"bname\":\"b\",\"currIdMap\":{\"x\":1}}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "\"bname\":\"b\",\"currIdMap\":{\"1\":1.5}}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "\"bname\":\"b\",\"dirty\":1}}}}",
    "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"t\":{"
    "\"bname\":\"b\",\"scope\":5}}}}",
    "{\"a\":[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]}",
    "{\"a\":1.}",
    "{\"a\":-}",
    "{\"a\":tru}",
    "{\"a\":1:2}",
};

static void test_fast_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fast_cases / sizeof *fast_cases; i++) {
        if (!differential(fast_cases[i])) {
            fail_msg("expected the fast path: %s", fast_cases[i]);
        }
    }
}

static void test_fallback_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fallback_cases / sizeof *fallback_cases;
         i++) {
        if (differential(fallback_cases[i])) {
            fail_msg("expected a fallback: %s", fallback_cases[i]);
        }
    }
}

static void test_topic_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof topic_fast_cases / sizeof *topic_fast_cases;
         i++) {
        if (!differential(topic_fast_cases[i])) {
            fail_msg("expected the fast path: %s", topic_fast_cases[i]);
        }
    }
    for (size_t i = 0;
         i < sizeof topic_fallback_cases / sizeof *topic_fallback_cases; i++) {
        if (differential(topic_fallback_cases[i])) {
            fail_msg("expected a fallback: %s", topic_fallback_cases[i]);
        }
    }
}

/* The stock shape decodes to its fields on the fast path. */
static void test_stock_topic_fields(void **state)
{
    (void)state;
    static const char body[] =
        TOPIC_BODY(STOCK_TOPIC("b", "") "," STOCK_TOPIC("a", ",\"perm\":2"));
    struct ns_register r;
    ns_register_init(&r);
    assert_int_equal(register_body_scan(&r, false, (const uint8_t *)body,
                                        sizeof body - 1, NOW),
                     NS_EAGAIN); /* perm twice in "a" */
    ns_register_close(&r);
    static const char one[] = TOPIC_BODY(STOCK_TOPIC("bench-topic-7", ""));
    ns_register_init(&r);
    assert_int_equal(register_body_scan(&r, false, (const uint8_t *)one,
                                        sizeof one - 1, NOW),
                     0);
    assert_int_equal(r.n_topics, 1);
    assert_string_equal(r.topics[0].name, "bench-topic-7");
    assert_int_equal(r.topics[0].perm, 6);
    assert_int_equal(r.topics[0].read_queues, 4);
    assert_int_equal(r.topics[0].write_queues, 4);
    assert_int_equal(r.topics[0].sys_flag, 0);
    ns_register_close(&r);
}

/* Every prefix and every single-byte change of a body stays identical. */
static void test_mutations(void **state)
{
    (void)state;
    struct ns_buf b;
    ns_buf_init(&b);
    gen_body(&b, 3, true, 2, " ");
    char *text = ns_malloc(b.len + 1);
    assert_non_null(text);
    static const char subst[] = "{}[],:\"\\ 0-9.eEtnul$x\t";
    for (size_t i = 0; i <= b.len; i++) {
        differential_v((const char *)b.data, i, 479);
        for (size_t k = 0; i < b.len && k < sizeof subst - 1; k++) {
            memcpy(text, b.data, b.len);
            text[i] = subst[k];
            differential_v(text, b.len, 479);
        }
    }
    ns_free(text);
    ns_buf_close(&b);
}

/* The same over the stock TopicConfig shape, whose keys and values the fast
 * path compares as whole texts. */
static void test_stock_mutations(void **state)
{
    (void)state;
    static const char body[] =
        TOPIC_BODY(STOCK_TOPIC("T1", "") "," STOCK_TOPIC("topic-2", ""));
    size_t len = sizeof body - 1;
    char *text = ns_malloc(len);
    assert_non_null(text);
    static const char subst[] = "{}[],:\"\\ 0-9.eEtnul$x\t\x01\x80";
    for (size_t i = 0; i <= len; i++) {
        differential_v(body, i, 479);
        for (size_t k = 0; i < len && k < sizeof subst - 1; k++) {
            memcpy(text, body, len);
            text[i] = subst[k];
            differential_v(text, len, 0);
        }
    }
    ns_free(text);
}

static void test_alloc_failure_sweep(void **state)
{
    (void)state;
    struct ns_buf b;
    ns_buf_init(&b);
    gen_body(&b, 40, true, 5, "");
    for (long k = 0;; k++) {
        struct ns_register r;
        char err[128];
        ns_register_init(&r);
        ns_alloc_fail_at(k, 1);
        int rv = ns_register_decode_body(&r, 479, false, b.data, b.len, NOW,
                                         err, sizeof err);
        ns_alloc_fail_at(-1, 0);
        ns_register_close(&r);
        if (rv == 0) {
            break;
        }
        assert_int_equal(rv, NS_ENOMEM);
        assert_true(k < 100000);
    }
    ns_buf_close(&b);
}

int main(void)
{
    ns_json_use_ns_alloc();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_bodies_take_fast_path),
        cmocka_unit_test(test_fast_cases),
        cmocka_unit_test(test_fallback_cases),
        cmocka_unit_test(test_topic_cases),
        cmocka_unit_test(test_stock_topic_fields),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_stock_mutations),
        cmocka_unit_test(test_alloc_failure_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
