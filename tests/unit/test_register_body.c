/* Unit tests of REGISTER_BROKER body decoding (src/route/register_body.c) and
 * DataVersion JSON: the Java 4.9.8 recording, 5.x bodies with static-topic
 * mappings, the old-version switch, the zlib record form, a zlib bomb,
 * malformed bodies and an allocation sweep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"

#define NOW 1234567

static uint8_t *read_vector_body(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NS_VECTORS_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 8);
    uint32_t hl = ns_load_u32(buf + 4) & 0xFFFFFF;
    *len = n - 8 - hl;
    return buf + 8 + hl;
}

static int decode(struct ns_register *r, int32_t version, bool compressed,
                  const void *body, size_t len, char *err)
{
    ns_register_init(r);
    return ns_register_decode_body(r, version, compressed, body, len, NOW, err,
                                   256);
}

static void test_java_498_vector(void **state)
{
    (void)state;
    size_t len;
    uint8_t *body = read_vector_body("03_register_broker_a.req.bin", &len);
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 409, false, body, len, err), 0);
    assert_int_equal(r.dv.counter, 1);
    assert_int_equal(r.dv.state_version, 0);
    assert_int_equal(r.dv.timestamp, 1700000000000LL);
    assert_int_equal(r.n_topics, 1);
    assert_string_equal(r.topics[0].name, "TestTopic");
    assert_int_equal(r.topics[0].read_queues, 4);
    assert_int_equal(r.topics[0].write_queues, 4);
    assert_int_equal(r.topics[0].perm, 6);
    assert_int_equal(r.topics[0].sys_flag, 0);
    assert_true(r.has_filter_servers);
    assert_int_equal(r.n_filter_servers, 0);
    assert_int_equal(r.n_mappings, 0);
    ns_register_close(&r);

    /* The same body with version 0 is read as a bare wrapper: no topics. */
    assert_int_equal(decode(&r, 0, false, body, len, err), 0);
    assert_int_equal(r.n_topics, 0);
    assert_int_equal(r.dv.timestamp, NOW);
    assert_false(r.has_filter_servers);
    ns_register_close(&r);
}

static const char BODY_5X[] =
    "{\"filterServerList\":[\"fs1\"],\"topicConfigSerializeWrapper\":{"
    "\"dataVersion\":{\"counter\":3,\"stateVersion\":2},"
    "\"mappingDataVersion\":{\"counter\":0,\"stateVersion\":0,\"timestamp\":1},"
    "\"topicConfigTable\":{"
    "\"keyB\":{\"attributes\":{},\"order\":false,\"topicName\":\"TopicB\","
    "\"topicSysFlag\":1},"
    "\"keyA\":{\"perm\":4,\"readQueueNums\":8,\"topicName\":\"TopicA\","
    "\"writeQueueNums\":2},"
    "\"keyA2\":{\"perm\":2,\"readQueueNums\":1,\"topicName\":\"TopicA\","
    "\"writeQueueNums\":1}},"
    "\"topicQueueMappingDetailMap\":{},"
    "\"topicQueueMappingInfoMap\":{\"T\":{\"bname\":\"broker-a\",\"currIdMap\":"
    "{1:11,0:10},"
    "\"dirty\":true,\"epoch\":1700000000000,\"scope\":\"__global__\",\"topic\":"
    "\"T\","
    "\"totalQueues\":8}}}}";

static void test_5x_body(void **state)
{
    (void)state;
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 479, false, BODY_5X, strlen(BODY_5X), err), 0);
    assert_int_equal(r.dv.counter, 3);
    assert_int_equal(r.dv.state_version, 2);
    assert_int_equal(r.dv.timestamp, NOW); /* absent: Java's constructor time */
    assert_int_equal(r.n_topics, 2); /* TopicA twice: the later one wins */
    assert_string_equal(r.topics[0].name, "TopicA");
    assert_int_equal(r.topics[0].perm, 2);
    assert_int_equal(r.topics[0].read_queues, 1);
    assert_string_equal(r.topics[1].name, "TopicB");
    assert_int_equal(r.topics[1].read_queues, 16); /* defaults */
    assert_int_equal(r.topics[1].write_queues, 16);
    assert_int_equal(r.topics[1].perm, 6);
    assert_int_equal(r.topics[1].sys_flag, 1);
    assert_int_equal(r.n_filter_servers, 1);
    assert_string_equal(r.filter_servers[0], "fs1");
    assert_int_equal(r.n_mappings, 1);
    const struct ns_mapping_info *m = &r.mappings[0];
    assert_string_equal(m->topic, "T");
    assert_string_equal(m->bname, "broker-a");
    assert_string_equal(m->scope, "__global__");
    assert_true(m->dirty);
    assert_int_equal(m->epoch, 1700000000000LL);
    assert_int_equal(m->total_queues, 8);
    assert_int_equal(m->n_curr_ids, 2);
    assert_int_equal(m->curr_ids[0].key, 0);
    assert_int_equal(m->curr_ids[0].value, 10);
    assert_int_equal(m->curr_ids[1].key, 1);
    assert_int_equal(m->curr_ids[1].value, 11);
    ns_register_close(&r);
}

/* Topics are keyed by topicName, so a name given twice keeps the last one
 * (Java's map semantics), and the result is sorted whatever the body order. */
static void test_duplicate_and_order(void **state)
{
    (void)state;
    static const char body[] =
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{"
        "\"dataVersion\":{\"counter\":2,\"timestamp\":1},"
        "\"topicConfigTable\":{"
        "\"k1\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"Zeta\"},"
        "\"k2\":{\"perm\":6,\"readQueueNums\":2,\"topicName\":\"Alpha\"},"
        "\"k3\":{\"perm\":4,\"readQueueNums\":3,\"topicName\":\"Zeta\"}}}}";
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 479, false, body, sizeof body - 1, err), 0);
    assert_int_equal(r.n_topics, 2);
    assert_string_equal(r.topics[0].name, "Alpha");
    assert_int_equal(r.topics[0].read_queues, 2);
    assert_string_equal(r.topics[1].name, "Zeta");
    assert_int_equal(r.topics[1].read_queues, 3);
    assert_int_equal(r.topics[1].perm, 4);
    ns_register_close(&r);
}

/* Names already in order skip the sort, but a name repeated next to itself
 * is not strictly ascending: it still keeps only the later one. */
static void test_sorted_input(void **state)
{
    (void)state;
    static const char body[] =
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{"
        "\"a\":{\"readQueueNums\":1,\"topicName\":\"A\"},"
        "\"b\":{\"readQueueNums\":2,\"topicName\":\"B\"},"
        "\"c\":{\"readQueueNums\":3,\"topicName\":\"B\"},"
        "\"d\":{\"readQueueNums\":4,\"topicName\":\"C\"}}}}";
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 479, false, body, sizeof body - 1, err), 0);
    assert_int_equal(r.n_topics, 3);
    assert_string_equal(r.topics[0].name, "A");
    assert_string_equal(r.topics[1].name, "B");
    assert_int_equal(r.topics[1].read_queues, 3);
    assert_string_equal(r.topics[2].name, "C");
    ns_register_close(&r);
    static const char ascending[] =
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{"
        "\"a\":{\"readQueueNums\":1,\"topicName\":\"A\"},"
        "\"b\":{\"readQueueNums\":2,\"topicName\":\"AB\"},"
        "\"c\":{\"readQueueNums\":3,\"topicName\":\"B\"}}}}";
    assert_int_equal(
        decode(&r, 479, false, ascending, sizeof ascending - 1, err), 0);
    assert_int_equal(r.n_topics, 3);
    assert_string_equal(r.topics[0].name, "A");
    assert_string_equal(r.topics[1].name, "AB");
    assert_string_equal(r.topics[2].name, "B");
    ns_register_close(&r);
}

static void test_empty_and_old(void **state)
{
    (void)state;
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 479, false, "", 0, err), 0);
    assert_int_equal(r.n_topics, 0);
    assert_int_equal(r.dv.counter, 0);
    assert_int_equal(r.dv.timestamp, 0);
    ns_register_close(&r);
    const char *old =
        "{\"dataVersion\":{\"counter\":5,\"timestamp\":9},\"topicConfigTable\":"
        "{\"X\":{\"topicName\":\"X\"},\"Y\":{\"topicName\":\"Y\"}}}";
    /* version < 37 wins over compressed. */
    assert_int_equal(decode(&r, 36, true, old, strlen(old), err), 0);
    assert_int_equal(r.n_topics, 2);
    assert_int_equal(r.dv.counter, 5);
    assert_int_equal(r.dv.timestamp, 9);
    ns_register_close(&r);
}

static void test_malformed_json(void **state)
{
    (void)state;
    const char *bad[] = {
        "{",
        "null",
        "[1,2]",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{"
        "\"topicName\":\"A\",\"order\":\"t\"}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{"
        "\"topicName\":\"A\",\"topicFilterType\":2}}}}",
        "{\"topicConfigSerializeWrapper\":{\"dataVersion\":5}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":5}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{"
        "\"topicName\":\"A\","
        "\"perm\":99999999999}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"T\":"
        "{\"topic\":"
        "\"T\"}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"T\":"
        "{\"bname\":"
        "\"b\",\"currIdMap\":{\"x\":1}}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ns_register r;
        char err[256];
        assert_int_equal(decode(&r, 479, false, bad[i], strlen(bad[i]), err),
                         NS_EPROTO);
        assert_true(strlen(err) > 0);
        assert_int_equal(r.n_topics, 0);
        assert_null(r.topics);
        ns_register_close(&r);
    }
}

/* Java files a TopicConfig without topicName under a null name and catches
 * the NullPointerException of a null entry: the registration is accepted;
 * raftns leaves such entries out (docs/compat.md null-topic). */
static void test_unnamed_topics_left_out(void **state)
{
    (void)state;
    static const char body[] =
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{"
        "\"perm\":6},\"B\":null,\"C\":{\"topicName\":\"C\"}}}}";
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 479, false, body, strlen(body), err), 0);
    assert_int_equal(r.n_topics, 1);
    assert_string_equal(r.topics[0].name, "C");
    ns_register_close(&r);
    /* What fastjson reads leniently (a Java run of the same text): a lone
     * filter server value, numbers as text, null elements, a number or
     * boolean as topicName, "Y" as order, an empty array as a null bean. */
    static const char lenient[] =
        "{\"filterServerList\":[1,null,\"a\"],\"topicConfigSerializeWrapper\":"
        "{\"dataVersion\":[],\"topicConfigTable\":{\"A\":{\"topicName\":12,"
        "\"order\":\"Y\",\"topicFilterType\":1},\"B\":{\"topicName\":true}}}}";
    assert_int_equal(decode(&r, 479, false, lenient, strlen(lenient), err), 0);
    assert_int_equal(r.n_filter_servers, 2);
    assert_string_equal(r.filter_servers[0], "1");
    assert_string_equal(r.filter_servers[1], "a");
    assert_int_equal(r.n_topics, 2);
    ns_register_close(&r);
    static const char lone[] = "{\"filterServerList\":\"x\","
                               "\"topicConfigSerializeWrapper\":[]}";
    assert_int_equal(decode(&r, 479, false, lone, strlen(lone), err), 0);
    assert_int_equal(r.n_filter_servers, 1);
    assert_string_equal(r.filter_servers[0], "x");
    ns_register_close(&r);
}

/* --- compressed form --- */

static void rec(struct ns_buf *b, const char *s)
{
    ns_buf_put_u32(b, (uint32_t)strlen(s));
    ns_buf_append_str(b, s);
}

static uint8_t *zip(const struct ns_buf *raw, size_t *len)
{
    uLongf n = compressBound(raw->len);
    uint8_t *out = malloc(n);
    assert_int_equal(compress2(out, &n, raw->data, raw->len, 9), Z_OK);
    *len = n;
    return out;
}

static void build_records(struct ns_buf *b, bool with_mappings)
{
    rec(b, "{\"counter\":7,\"stateVersion\":0,\"timestamp\":1700000000000}");
    ns_buf_put_u32(b, 2);
    rec(b, "TopicA 4 4 6 SINGLE_TAG");
    rec(b, "TopicB 8 2 4 MULTI_TAG {\"+message.type\":\"NORMAL\"}");
    rec(b, "[]");
    if (with_mappings) {
        ns_buf_put_u32(b, 1);
        rec(b, "{\"bname\":\"broker-a\",\"currIdMap\":{0:0},\"epoch\":1,"
               "\"topic\":\"TopicA\","
               "\"totalQueues\":4}");
    }
}

static void test_compressed(void **state)
{
    (void)state;
    struct ns_buf raw;
    ns_buf_init(&raw);
    build_records(&raw, true);
    size_t zlen;
    uint8_t *z = zip(&raw, &zlen);
    assert_int_equal(z[0], 0x78);
    assert_int_equal(z[1], 0xDA);
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 479, true, z, zlen, err), 0);
    assert_int_equal(r.dv.counter, 7);
    assert_int_equal(r.n_topics, 2);
    assert_string_equal(r.topics[1].name, "TopicB");
    assert_int_equal(r.topics[1].read_queues, 8);
    assert_int_equal(r.topics[1].write_queues, 2);
    assert_int_equal(r.topics[1].perm, 4);
    assert_int_equal(r.topics[1].sys_flag, 0);
    assert_true(r.has_filter_servers);
    assert_int_equal(r.n_mappings, 1);
    assert_string_equal(r.mappings[0].topic, "TopicA");
    ns_register_close(&r);
    /* Version 409 (< 413) ignores what follows the filter servers. */
    assert_int_equal(decode(&r, 409, true, z, zlen, err), 0);
    assert_int_equal(r.n_mappings, 0);
    ns_register_close(&r);
    /* Truncated zlib input and every truncation of the records fail cleanly. */
    for (size_t cut = 0; cut < raw.len; cut++) {
        struct ns_buf part;
        ns_buf_init(&part);
        ns_buf_append(&part, raw.data, cut);
        size_t plen;
        uint8_t *pz = zip(&part, &plen);
        assert_int_equal(decode(&r, 479, true, pz, plen, err), NS_EPROTO);
        ns_register_close(&r);
        free(pz);
        ns_buf_close(&part);
    }
    /* A cut zlib stream fails unless every record was already inflated (Java
     * reads the records lazily and never looks at the adler32 trailer). */
    for (size_t cut = 1; cut < zlen; cut++) {
        int rv = decode(&r, 479, true, z, cut, err);
        if (cut < zlen / 2 || rv != 0) {
            assert_int_equal(rv, NS_EPROTO);
        } else {
            assert_int_equal(r.n_topics, 2);
            assert_int_equal(r.n_mappings, 1);
        }
        ns_register_close(&r);
    }
    free(z);
    ns_buf_close(&raw);
}

static void test_compressed_bad_lines(void **state)
{
    (void)state;
    const char *lines[] = {"TopicA 4 4 6",
                           "TopicA x 4 6 SINGLE_TAG",
                           "TopicA 4 4 6 OTHER",
                           "TopicA 4 4 6 SINGLE_TAG {bad",
                           "A 1 1 1 SINGLE_TAG {} extra",
                           "TopicA 4 4 99999999999 SINGLE_TAG"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        struct ns_buf raw;
        ns_buf_init(&raw);
        rec(&raw, "{\"counter\":1}");
        ns_buf_put_u32(&raw, 1);
        rec(&raw, lines[i]);
        rec(&raw, "[]");
        size_t zlen;
        uint8_t *z = zip(&raw, &zlen);
        struct ns_register r;
        char err[256];
        assert_int_equal(decode(&r, 409, true, z, zlen, err), NS_EPROTO);
        assert_true(strlen(err) > 0);
        ns_register_close(&r);
        free(z);
        ns_buf_close(&raw);
    }
    /* A huge topic count is bounded by the remaining bytes before allocating.
     */
    struct ns_buf raw;
    ns_buf_init(&raw);
    rec(&raw, "{}");
    ns_buf_put_u32(&raw, 0x7FFFFFFF);
    size_t zlen;
    uint8_t *z = zip(&raw, &zlen);
    struct ns_register r;
    char err[256];
    assert_int_equal(decode(&r, 409, true, z, zlen, err), NS_EPROTO);
    ns_register_close(&r);
    free(z);
    ns_buf_close(&raw);
    /* Not zlib at all. */
    assert_int_equal(decode(&r, 409, true, "{\"x\":1}", 7, err), NS_EPROTO);
    assert_non_null(strstr(err, "Zip"));
    ns_register_close(&r);
}

static void test_zlib_bomb(void **state)
{
    (void)state;
    /* NS_REGISTER_MAX_INFLATED + 1 zero bytes deflate to a few tens of KiB. */
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit(&zs, 9), Z_OK);
    static uint8_t zeros[1 << 20];
    size_t cap = 1 << 20, len = 0;
    uint8_t *out = malloc(cap);
    size_t left = (size_t)NS_REGISTER_MAX_INFLATED + 1;
    while (left > 0) {
        size_t n = left < sizeof zeros ? left : sizeof zeros;
        left -= n;
        zs.next_in = zeros;
        zs.avail_in = (uInt)n;
        do {
            zs.next_out = out + len;
            zs.avail_out = (uInt)(cap - len);
            deflate(&zs, left ? Z_NO_FLUSH : Z_FINISH);
            len = cap - zs.avail_out;
            assert_true(len < cap);
        } while (zs.avail_in > 0 || (left == 0 && zs.avail_out == 0));
    }
    deflateEnd(&zs);
    struct ns_register r;
    char err[256];
    long before = ns_alloc_count();
    assert_int_equal(decode(&r, 409, true, out, len, err), NS_EPROTO);
    assert_non_null(strstr(err, "IOException"));
    assert_true(ns_alloc_count() - before <
                64); /* grew by doubling, never past the bound */
    ns_register_close(&r);
    free(out);
}

/* NS_REGISTER_MAX_TOPICS: one topic over is refused with NS_ETOOBIG (JSON,
 * duplicates counted, and the compressed count before anything is read). */
static void json_topics(struct ns_buf *b, size_t n)
{
    ns_buf_append_str(b, "{\"topicConfigSerializeWrapper\":{\"dataVersion\":"
                         "{\"counter\":1,\"timestamp\":1},"
                         "\"topicConfigTable\":{");
    for (size_t i = 0; i < n; i++) {
        ns_buf_printf(b, "%s\"k%zu\":{\"topicName\":\"T%zu\"}", i ? "," : "", i,
                      i % 1000);
    }
    ns_buf_append_str(b, "}}}");
}

static void test_topic_bound(void **state)
{
    (void)state;
    struct ns_register r;
    char err[256];
    struct ns_buf b;
    ns_buf_init(&b);
    json_topics(&b, NS_REGISTER_MAX_TOPICS + 1);
    assert_int_equal(decode(&r, 479, false, b.data, b.len, err), NS_ETOOBIG);
    assert_string_equal(err, "register broker body: 100001 topics, over the "
                             "100000 one registration may carry");
    assert_int_equal(r.n_topics, 0);
    ns_register_close(&r);
    ns_buf_reset(&b);
    json_topics(&b, NS_REGISTER_MAX_TOPICS);
    assert_int_equal(decode(&r, 479, false, b.data, b.len, err), 0);
    assert_int_equal(r.n_topics, 1000); /* duplicates dropped after the count */
    ns_register_close(&r);
    ns_buf_close(&b);

    struct ns_buf raw;
    ns_buf_init(&raw);
    rec(&raw, "{\"counter\":7,\"stateVersion\":0,\"timestamp\":1}");
    ns_buf_put_u32(&raw, NS_REGISTER_MAX_TOPICS + 1);
    for (unsigned i = 0; i <= NS_REGISTER_MAX_TOPICS; i++) {
        rec(&raw, "TopicA 4 4 6 SINGLE_TAG");
    }
    size_t zlen;
    uint8_t *z = zip(&raw, &zlen);
    assert_int_equal(decode(&r, 479, true, z, zlen, err), NS_ETOOBIG);
    assert_non_null(strstr(err, "100001 topics"));
    ns_register_close(&r);
    free(z);
    ns_buf_close(&raw);
}

static void test_data_version_json(void **state)
{
    (void)state;
    struct ns_data_version dv = {3, 0, 1700000000000LL};
    struct ns_buf b;
    ns_buf_init(&b);
    ns_data_version_encode(&dv, &b);
    assert_int_equal(b.err, 0);
    const char *want =
        "{\"counter\":3,\"stateVersion\":0,\"timestamp\":1700000000000}";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    struct ns_data_version back;
    assert_int_equal(ns_data_version_decode(b.data, b.len, 0, &back, NULL), 0);
    assert_true(ns_data_version_equal(&dv, &back));
    assert_int_equal(
        ns_data_version_decode((const uint8_t *)"[1]", 3, 0, &back, NULL),
        NS_EPROTO);
    assert_int_equal(
        ns_data_version_decode((const uint8_t *)"{", 1, 0, &back, NULL),
        NS_EPROTO);
    ns_buf_close(&b);
}

static void sweep(int32_t version, bool compressed, const void *body,
                  size_t len)
{
    bool ok = false;
    for (long k = 0; !ok && k < 2000; k++) {
        struct ns_register r;
        char err[256];
        ns_register_init(&r);
        ns_alloc_fail_at(k, 1);
        int rv = ns_register_decode_body(&r, version, compressed, body, len,
                                         NOW, err, sizeof err);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_register_close(&r);
    }
    assert_true(ok);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    sweep(479, false, BODY_5X, strlen(BODY_5X));
    struct ns_buf raw;
    ns_buf_init(&raw);
    build_records(&raw, true);
    size_t zlen;
    uint8_t *z = zip(&raw, &zlen);
    sweep(479, true, z, zlen);
    free(z);
    ns_buf_close(&raw);
}

int main(void)
{
    ns_json_use_ns_alloc();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_498_vector),
        cmocka_unit_test(test_5x_body),
        cmocka_unit_test(test_duplicate_and_order),
        cmocka_unit_test(test_sorted_input),
        cmocka_unit_test(test_empty_and_old),
        cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_unnamed_topics_left_out),
        cmocka_unit_test(test_compressed),
        cmocka_unit_test(test_compressed_bad_lines),
        cmocka_unit_test(test_topic_bound),
        cmocka_unit_test(test_zlib_bomb),
        cmocka_unit_test(test_data_version_json),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
