/* Unit tests of the remoting codec (src/remoting): frame boundaries, JSON and
 * binary headers against the Java 4.9.8 recordings and docs/protocol.md §2.8,
 * and allocation-failure sweeps. */
#include <dirent.h>
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
#include "raftns/remoting.h"

/* Reads a whole vector file into plain malloc'd memory (test fixture, outside
 * ns_malloc). */
static uint8_t *load(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NS_VECTORS_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)n + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return data;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s);
    size_t k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Calls fn on every vector file whose name ends in suffix; returns how many. */
static int each_vector(const char *suffix, void (*fn)(const char *name))
{
    DIR *d = opendir(NS_VECTORS_DIR);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (has_suffix(e->d_name, suffix)) {
            fn(e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static void check_response(const char *name)
{
    size_t len;
    uint8_t *frame = load(name, &len);
    size_t frame_len = 0;
    assert_int_equal(ns_frame_check(frame, len, NS_FRAME_MAX, &frame_len), 0);
    assert_int_equal(frame_len, len);
    struct ns_cmd c;
    assert_int_equal(ns_cmd_decode(frame, len, &c), 0);
    assert_int_equal(c.flag, NS_FLAG_RESPONSE);
    assert_int_equal(c.version, 409);
    struct ns_buf out;
    ns_buf_init(&out);
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    if (out.len != len || memcmp(out.data, frame, len) != 0) {
        fail_msg("%s: re-encoded frame differs", name);
    }
    ns_buf_close(&out);
    ns_cmd_close(&c);
    free(frame);
}

static void golden_responses_round_trip(void **state)
{
    (void)state;
    assert_int_equal(each_vector(".resp.bin", check_response), 27);
}

static void check_request(const char *name)
{
    size_t len;
    uint8_t *frame = load(name, &len);
    size_t frame_len = 0;
    assert_int_equal(ns_frame_check(frame, len, NS_FRAME_MAX, &frame_len), 0);
    assert_int_equal(frame_len, len);
    struct ns_cmd c;
    assert_int_equal(ns_cmd_decode(frame, len, &c), 0);
    assert_int_equal(c.flag, 0);
    assert_int_equal(c.language, NS_LANG_JAVA);
    assert_true(c.code >= 100);
    assert_int_equal(c.opaque, atoi(name)); /* opaque = step number */
    ns_cmd_close(&c);
    free(frame);
}

static void golden_requests_decode(void **state)
{
    (void)state;
    assert_int_equal(each_vector(".req.bin", check_request), 28);
}

static void decode_file(const char *name, uint8_t **frame, struct ns_cmd *c)
{
    size_t len;
    *frame = load(name, &len);
    assert_int_equal(ns_cmd_decode(*frame, len, c), 0);
}

static void request_ext_fields_in_wire_order(void **state)
{
    (void)state;
    static const char *const want[][2] = {
        {"brokerName", "broker-a"},
        {"brokerAddr", "127.0.0.1:10911"},
        {"clusterName", "DefaultCluster"},
        {"haServerAddr", "127.0.0.1:10912"},
        {"brokerId", "0"},
        {"compressed", "false"},
        {"bodyCrc32", "885385838"},
    };
    uint8_t *frame;
    struct ns_cmd c;
    decode_file("03_register_broker_a.req.bin", &frame, &c);
    assert_int_equal(c.code, 103);
    assert_int_equal(c.version, 409);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 7);
    for (size_t i = 0; i < 7; i++) {
        assert_string_equal(c.ext[i].key, want[i][0]);
        assert_string_equal(c.ext[i].value, want[i][1]);
    }
    int64_t crc = 0;
    bool compressed = true;
    assert_true(ns_cmd_ext_int64(&c, "bodyCrc32", &crc));
    assert_int_equal(crc, 885385838);
    assert_true(ns_cmd_ext_bool(&c, "compressed", &compressed));
    assert_false(compressed);
    assert_non_null(c.body);
    assert_true(c.body_len > 0);
    assert_int_equal(c.body[0], '{');
    ns_cmd_close(&c);
    free(frame);

    decode_file("15_route_TestTopic_v4_9_3_acceptStandardJsonOnly.req.bin",
                &frame, &c);
    bool accept = false;
    assert_int_equal(c.version, 399);
    assert_string_equal(ns_cmd_ext_find(&c, "topic"), "TestTopic");
    assert_true(ns_cmd_ext_bool(&c, "acceptStandardJsonOnly", &accept));
    assert_true(accept);
    ns_cmd_close(&c);
    free(frame);

    decode_file("23_missing_required_ext_route.req.bin", &frame, &c);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 0);
    assert_null(ns_cmd_ext_find(&c, "topic"));
    ns_cmd_close(&c);
    free(frame);

    decode_file("01_cluster_info_empty.req.bin", &frame, &c);
    assert_false(c.has_ext);
    assert_null(c.body);
    assert_int_equal(c.body_len, 0);
    ns_cmd_close(&c);
    free(frame);
}

static void rocketmq_header_sample_07(void **state)
{
    (void)state;
    uint8_t *frame;
    struct ns_cmd c;
    decode_file("07_route_TestTopic_rocketmq_hdr.req.bin", &frame, &c);
    assert_int_equal(c.ser, NS_SER_ROCKETMQ);
    assert_int_equal(c.code, 105);
    assert_int_equal(c.opaque, 7);
    assert_string_equal(ns_cmd_ext_find(&c, "topic"), "TestTopic");
    ns_cmd_close(&c);
    free(frame);

    decode_file("07_route_TestTopic_rocketmq_hdr.resp.bin", &frame, &c);
    assert_int_equal(c.ser, NS_SER_ROCKETMQ);
    assert_int_equal(c.code, 0);
    assert_int_equal(c.flag, 1);
    assert_int_equal(c.version, 409);
    assert_null(c.remark);
    assert_false(c.has_ext);
    assert_int_equal(c.body_len, 235);
    ns_cmd_close(&c);
    free(frame);
}

/* docs/protocol.md §2.8, both header forms, byte for byte. */
static const char example_json_header[] =
    "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,"
    "\"language\":\"JAVA\",\"opaque\":1,\"serializeTypeCurrentRPC\":\"JSON\","
    "\"version\":479}";
static const uint8_t example_binary[] = {
    0x00, 0x00, 0x00, 0x2d, 0x01, 0x00, 0x00, 0x29, 0x00, 0x69,
    0x00, 0x01, 0xdf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00,
    0x05, 't',  'o',  'p',  'i',  'c',  0x00, 0x00, 0x00, 0x09,
    'T',  'o',  'p',  'i',  'c',  'T',  'e',  's',  't'};

static void example_cmd(struct ns_cmd *c, enum ns_serialize ser)
{
    ns_cmd_init(c);
    c->code = 105;
    c->version = 479;
    c->opaque = 1;
    c->ser = ser;
    assert_int_equal(ns_cmd_ext_set(c, "topic", "TopicTest"), 0);
}

static void worked_example_frames(void **state)
{
    (void)state;
    uint8_t json_frame[8 + sizeof example_json_header - 1];
    size_t h = sizeof example_json_header - 1;
    assert_int_equal(h, 131);
    memcpy(json_frame, "\x00\x00\x00\x87\x00\x00\x00\x83", 8);
    memcpy(json_frame + 8, example_json_header, h);

    struct ns_cmd c;
    struct ns_buf out;
    ns_buf_init(&out);
    example_cmd(&c, NS_SER_JSON);
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    assert_int_equal(out.len, sizeof json_frame);
    assert_memory_equal(out.data, json_frame, sizeof json_frame);
    ns_cmd_close(&c);

    ns_buf_reset(&out);
    example_cmd(&c, NS_SER_ROCKETMQ);
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    assert_int_equal(out.len, sizeof example_binary);
    assert_memory_equal(out.data, example_binary, sizeof example_binary);
    ns_cmd_close(&c);
    ns_buf_close(&out);

    const uint8_t *frames[] = {json_frame, example_binary};
    size_t lens[] = {sizeof json_frame, sizeof example_binary};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ns_cmd_decode(frames[i], lens[i], &c), 0);
        assert_int_equal(c.ser, i == 0 ? NS_SER_JSON : NS_SER_ROCKETMQ);
        assert_int_equal(c.code, 105);
        assert_int_equal(c.version, 479);
        assert_int_equal(c.opaque, 1);
        assert_int_equal(c.flag, 0);
        assert_null(c.remark);
        assert_int_equal(c.n_ext, 1);
        assert_string_equal(ns_cmd_ext_find(&c, "topic"), "TopicTest");
        assert_int_equal(c.body_len, 0);
        ns_cmd_close(&c);
    }
}

/* docs/protocol.md §2.8, the reply: 0x169 = 4 + 95 + 262. */
static void worked_example_reply(void **state)
{
    (void)state;
    static const char body[] =
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"},"
        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\","
        "\"enableActingMaster\":false}],\"filterServerTable\":{},"
        "\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
        "\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}";
    static const char header[] =
        "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":1,"
        "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";
    assert_int_equal(sizeof body - 1, 262);
    assert_int_equal(sizeof header - 1, 95);
    struct ns_cmd c;
    struct ns_buf out;
    ns_cmd_init(&c);
    ns_buf_init(&out);
    c.flag = NS_FLAG_RESPONSE;
    c.opaque = 1;
    c.version = NS_SERVER_VERSION;
    c.body = (const uint8_t *)body;
    c.body_len = sizeof body - 1;
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    assert_int_equal(out.len, 4 + 0x169);
    assert_memory_equal(out.data, "\x00\x00\x01\x69\x00\x00\x00\x5f", 8);
    assert_memory_equal(out.data + 8, header, 95);
    assert_memory_equal(out.data + 8 + 95, body, 262);
    ns_buf_close(&out);
}

static void partial_frames_need_more(void **state)
{
    (void)state;
    size_t len;
    uint8_t *frame = load("03_register_broker_a.req.bin", &len);
    for (size_t k = 0; k < len; k++) {
        size_t frame_len = 12345;
        assert_int_equal(ns_frame_check(frame, k, NS_FRAME_MAX, &frame_len),
                         NS_EAGAIN);
        assert_int_equal(frame_len, 12345);
    }
    size_t frame_len = 0;
    assert_int_equal(ns_frame_check(frame, len, NS_FRAME_MAX, &frame_len), 0);
    assert_int_equal(frame_len, len);
    /* The whole frame is what is announced: one byte less of max_frame rejects
     * it. */
    assert_int_equal(ns_frame_check(frame, len, len, &frame_len), 0);
    assert_int_equal(ns_frame_check(frame, 4, len - 1, &frame_len), NS_ETOOBIG);
    free(frame);
}

static void several_frames_in_one_buffer(void **state)
{
    (void)state;
    static const char *const names[] = {
        "06_route_TestTopic.req.bin", "07_route_TestTopic_rocketmq_hdr.req.bin",
        "03_register_broker_a.req.bin"};
    struct ns_buf all;
    ns_buf_init(&all);
    for (int i = 0; i < 3; i++) {
        size_t len;
        uint8_t *f = load(names[i], &len);
        assert_int_equal(ns_buf_append(&all, f, len), 0);
        free(f);
    }
    int32_t want[] = {6, 7, 3};
    size_t off = 0;
    int n = 0;
    for (;;) {
        size_t frame_len;
        int rv = ns_frame_check(all.data + off, all.len - off, NS_FRAME_MAX,
                                &frame_len);
        if (rv == NS_EAGAIN) {
            break;
        }
        assert_int_equal(rv, 0);
        struct ns_cmd c;
        assert_int_equal(ns_cmd_decode(all.data + off, frame_len, &c), 0);
        assert_int_equal(c.opaque, want[n]);
        ns_cmd_close(&c);
        off += frame_len;
        n++;
    }
    assert_int_equal(n, 3);
    assert_int_equal(off, all.len);
    ns_buf_close(&all);
}

struct reject_case {
    const char *what;
    const char *bytes;
    size_t len;
    size_t max;
    int want;
};

static void frame_rejections(void **state)
{
    (void)state;
    static const struct reject_case cases[] = {
        {"length 0", "\x00\x00\x00\x00", 4, NS_FRAME_MAX, NS_EPROTO},
        {"length 3", "\x00\x00\x00\x03\x00\x00\x00", 7, NS_FRAME_MAX,
         NS_EPROTO},
        {"over max", "\x01\x00\x00\x00", 4, NS_FRAME_MAX, NS_ETOOBIG},
        {"exactly max", "\x00\xff\xff\xfc\x00\x00\x00\x00", 8, NS_FRAME_MAX,
         NS_EAGAIN},
        {"one over max", "\x00\xff\xff\xfd\x00\x00\x00\x00", 8, NS_FRAME_MAX,
         NS_ETOOBIG},
        {"negative length", "\x80\x00\x00\x10\x00\x00\x00\x00", 8, SIZE_MAX,
         NS_ETOOBIG},
        {"small max", "\x00\x00\x00\x10\x00\x00\x00\x00", 8, 16, NS_ETOOBIG},
        {"header longer than frame", "\x00\x00\x00\x10\x00\x00\x00\x0d", 8,
         NS_FRAME_MAX, NS_EPROTO},
        {"header fills frame", "\x00\x00\x00\x10\x00\x00\x00\x0c", 8,
         NS_FRAME_MAX, NS_EAGAIN},
        {"serialize type 2", "\x00\x00\x00\x10\x02\x00\x00\x02", 8,
         NS_FRAME_MAX, NS_EPROTO},
        {"serialize type 0x80", "\x00\x00\x00\x10\x80\x00\x00\x02", 8,
         NS_FRAME_MAX, NS_EPROTO},
        {"http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 8, NS_FRAME_MAX,
         NS_ETOOBIG},
        {"http/2 preface, huge max", "PRI * HTTP/2.0", 8, SIZE_MAX, NS_EPROTO},
        {"http get", "GET / HTTP/1.1\r\n", 8, NS_FRAME_MAX, NS_ETOOBIG},
        {"tls hello", "\x16\x03\x01\x02\x00\x01\x00\x01", 8, NS_FRAME_MAX,
         NS_ETOOBIG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct reject_case *tc = &cases[i];
        size_t frame_len = 0;
        int rv = ns_frame_check((const uint8_t *)tc->bytes, tc->len, tc->max,
                                &frame_len);
        if (rv != tc->want) {
            fail_msg("%s: got %d want %d", tc->what, rv, tc->want);
        }
        if (tc->len == 8 && rv != NS_EAGAIN) {
            /* decode refuses the same bytes too */
            struct ns_cmd c;
            assert_int_not_equal(
                ns_cmd_decode((const uint8_t *)tc->bytes, 8, &c), 0);
        }
    }
}

/* Builds a frame around a header (and optional body) for decode tests. */
static void make_frame(struct ns_buf *b, int ser, const void *h, size_t h_len,
                       const char *body)
{
    size_t b_len = body ? strlen(body) : 0;
    ns_buf_reset(b);
    ns_buf_put_u32(b, (uint32_t)(4 + h_len + b_len));
    ns_buf_put_u32(b, (uint32_t)ser << 24 | (uint32_t)h_len);
    ns_buf_append(b, h, h_len);
    ns_buf_append(b, body, b_len);
    assert_int_equal(b->err, 0);
}

struct json_case {
    const char *header;
    int rv;
    int32_t code, flag, version, opaque, language;
    const char *remark;
    bool has_ext;
    const char *ext; /* "k=v;k=v;" in order */
};

static void check_ext(const struct ns_cmd *c, const char *spec)
{
    char buf[256];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    for (char *save = NULL, *kv = strtok_r(buf, ";", &save); kv != NULL;
         kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        assert_non_null(eq);
        *eq = '\0';
        assert_true(n < c->n_ext);
        assert_string_equal(c->ext[n].key, kv);
        assert_string_equal(c->ext[n].value, eq + 1);
        n++;
    }
    assert_int_equal(n, c->n_ext);
}

static void json_header_cases(void **state)
{
    (void)state;
    static const struct json_case cases[] = {
        {"{}", 0, 0, 0, 0, 0, NS_LANG_JAVA, NULL, false, NULL},
        {"{\"version\":317,\"opaque\":9,\"code\":105,\"language\":\"GO\","
         "\"flag\":0,\"remark\":\"\",\"extFields\":{\"topic\":\"T\"}}",
         0, 105, 0, 317, 9, NS_LANG_GO, "", true, "topic=T;"},
        {"{\"code\":1,\"remark\":null,\"extFields\":null,\"unknown\":[1,{}]}",
         0, 1, 0, 0, 0, NS_LANG_JAVA, NULL, false, NULL},
        {"{\"extFields\":{}}", 0, 0, 0, 0, 0, NS_LANG_JAVA, NULL, true, NULL},
        {"{\"extFields\":{\"a\":12,\"b\":true,\"c\":false,\"d\":-3,\"e\":1.5,"
         "\"f\":null,\"g\":{},\"h\":\"x\"}}",
         0, 0, 0, 0, 0, NS_LANG_JAVA, NULL, true,
         "a=12;b=true;c=false;d=-3;e=1.5;g={};h=x;"},
        {"{\"language\":9}", 0, 0, 0, 0, 0, NS_LANG_GO, NULL, false, NULL},
        {"{\"language\":\"KLINGON\"}", 0, 0, 0, 0, 0, NS_LANG_JAVA, NULL, false,
         NULL},
        {"{\"language\":99}", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"{\"code\":\"105\",\"opaque\":-2,\"flag\":3}", 0, 105, 3, 0, -2,
         NS_LANG_JAVA, NULL, false, NULL},
        {"{\"opaque\":4294967297}", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false,
         NULL},
        {" {\"remark\":\"a\\u00e9\\n\"} \n", 0, 0, 0, 0, 0, NS_LANG_JAVA,
         "a\xc3\xa9\n", false, NULL},
        {"{\"extFields\":{\"k\":\"a\",\"k\":\"b\"},\"x\":{1:2}}", 0, 0, 0, 0, 0,
         NS_LANG_JAVA, NULL, true, "k=a;k=b;"},
        {"{\"extFields\":{1:\"x\"}}", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false,
         NULL},
        {"{1:2,\"code\":3}", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"{", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"[]", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"\"code\"", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"{\"code\":1}x", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
        {"{\"extFields\":\"topic=x\"}", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false,
         NULL},
        {"{\"extFields\":[]}", NS_EPROTO, 0, 0, 0, 0, 0, NULL, false, NULL},
    };
    struct ns_buf b;
    ns_buf_init(&b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct json_case *tc = &cases[i];
        make_frame(&b, 0, tc->header, strlen(tc->header), NULL);
        struct ns_cmd c;
        int rv = ns_cmd_decode(b.data, b.len, &c);
        if (rv != tc->rv) {
            fail_msg("case %zu (%s): rv %d want %d", i, tc->header, rv, tc->rv);
        }
        if (rv != 0) {
            assert_null(c.ext);
            assert_null(c.remark);
            continue;
        }
        assert_int_equal(c.code, tc->code);
        assert_int_equal(c.flag, tc->flag);
        assert_int_equal(c.version, tc->version);
        assert_int_equal(c.opaque, tc->opaque);
        assert_int_equal(c.language, tc->language);
        if (tc->remark == NULL) {
            assert_null(c.remark);
        } else {
            assert_string_equal(c.remark, tc->remark);
        }
        assert_int_equal(c.has_ext, tc->has_ext);
        check_ext(&c, tc->ext);
        ns_cmd_close(&c);
    }
    ns_buf_close(&b);
}

struct bin_case {
    const char *what;
    const char *header;
    size_t len;
    int rv;
    const char *remark;
    bool has_ext;
    const char *ext;
};

#define FIXED "\x00\x69\x09\x01\x3d\x00\x00\x00\x05\x00\x00\x00\x00"

static void binary_header_cases(void **state)
{
    (void)state;
    static const struct bin_case cases[] = {
        {"minimal",
         FIXED "\0\0\0\0"
               "\0\0\0\0",
         21, 0, NULL, false, NULL},
        {"20 bytes",
         FIXED "\0\0\0\0"
               "\0\0\0",
         20, NS_EPROTO, NULL, false, NULL},
        {"remark",
         FIXED "\0\0\0\2hi"
               "\0\0\0\0",
         23, 0, "hi", false, NULL},
        {"remark overruns",
         FIXED "\0\0\0\x09hi"
               "\0\0\0\0",
         23, NS_EPROTO, NULL, false, NULL},
        {"huge remark",
         FIXED "\x7f\xff\xff\xff"
               "\0\0\0\0",
         21, NS_EPROTO, NULL, false, NULL},
        {"negative remark length closes (Netty throws)",
         FIXED "\xff\xff\xff\xff"
               "\0\0\0\0",
         21, NS_EPROTO, NULL, false, NULL},
        {"ext",
         FIXED "\0\0\0\0"
               "\0\0\0\x08"
               "\0\1k"
               "\0\0\0\1v",
         29, 0, NULL, true, "k=v;"},
        {"ext overruns header",
         FIXED "\0\0\0\0"
               "\0\0\0\x09"
               "\0\1k"
               "\0\0\0\1v",
         29, NS_EPROTO, NULL, false, NULL},
        {"value overruns blob",
         FIXED "\0\0\0\0"
               "\0\0\0\x08"
               "\0\1k"
               "\0\0\0\2v"
               "z",
         30, NS_EPROTO, NULL, false, NULL},
        {"key overruns blob",
         FIXED "\0\0\0\0"
               "\0\0\0\x03"
               "\0\5k",
         24, NS_EPROTO, NULL, false, NULL},
        {"entry cut short",
         FIXED "\0\0\0\0"
               "\0\0\0\x05"
               "\0\1k\0\0",
         26, NS_EPROTO, NULL, false, NULL},
        {"negative key length",
         FIXED "\0\0\0\0"
               "\0\0\0\x06"
               "\xff\xff"
               "\0\0\0\0",
         27, NS_EPROTO, NULL, false, NULL},
        {"negative value length",
         FIXED "\0\0\0\0"
               "\0\0\0\x07"
               "\0\1k"
               "\xff\xff\xff\xff",
         28, NS_EPROTO, NULL, false, NULL},
        {"null key and null value skipped",
         FIXED "\0\0\0\0"
               "\0\0\0\x0e"
               "\0\0"
               "\0\0\0\1x"
               "\0\1k"
               "\0\0\0\0",
         35, 0, NULL, true, NULL},
        {"NUL inside a value closes",
         FIXED "\0\0\0\0"
               "\0\0\0\x09"
               "\0\1k"
               "\0\0\0\2v\0",
         30, NS_EPROTO, NULL, false, NULL},
        {"negative ext length is none",
         FIXED "\0\0\0\0"
               "\xff\0\0\0",
         21, 0, NULL, false, NULL},
        {"trailing bytes ignored",
         FIXED "\0\0\0\0"
               "\0\0\0\0"
               "zz",
         23, 0, NULL, false, NULL},
    };
    struct ns_buf b;
    ns_buf_init(&b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bin_case *tc = &cases[i];
        make_frame(&b, 1, tc->header, tc->len, "body");
        struct ns_cmd c;
        int rv = ns_cmd_decode(b.data, b.len, &c);
        if (rv != tc->rv) {
            fail_msg("%s: rv %d want %d", tc->what, rv, tc->rv);
        }
        if (rv != 0) {
            continue;
        }
        assert_int_equal(c.code, 105);
        assert_int_equal(c.language, NS_LANG_GO);
        assert_int_equal(c.version, 317);
        assert_int_equal(c.opaque, 5);
        assert_int_equal(c.flag, 0);
        assert_int_equal(c.body_len, 4);
        assert_memory_equal(c.body, "body", 4);
        if (tc->remark == NULL) {
            assert_null(c.remark);
        } else {
            assert_string_equal(c.remark, tc->remark);
        }
        assert_int_equal(c.has_ext, tc->has_ext);
        check_ext(&c, tc->ext);
        ns_cmd_close(&c);
    }
    ns_buf_close(&b);
}

static void binary_encode_edges(void **state)
{
    (void)state;
    struct ns_cmd c;
    struct ns_buf out;
    ns_buf_init(&out);
    ns_cmd_init(&c);
    c.ser = NS_SER_ROCKETMQ;
    c.code = -2; /* int16 on the wire */
    c.language = NS_LANG_NODE_JS;
    assert_int_equal(ns_cmd_set_remark(&c, "r"), 0);
    assert_int_equal(ns_cmd_ext_set(&c, "k", ""), 0);
    assert_int_equal(ns_cmd_ext_set(&c, "", "dropped"), 0);
    c.body = (const uint8_t *)"xyz";
    c.body_len = 3;
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    static const uint8_t want[] = {0,  0, 0,   36, 1, 0,   0, 29,  0xff, 0xfe,
                                   13, 0, 0,   0,  0, 0,   0, 0,   0,    0,
                                   0,  0, 0,   0,  1, 'r', 0, 0,   0,    7,
                                   0,  1, 'k', 0,  0, 0,   0, 'x', 'y',  'z'};
    assert_int_equal(out.len, sizeof want);
    assert_memory_equal(out.data, want, sizeof want);
    ns_cmd_close(&c);

    /* No ext at all: extLen 0, and it decodes back to has_ext false. */
    ns_buf_reset(&out);
    ns_cmd_init(&c);
    c.ser = NS_SER_ROCKETMQ;
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    assert_int_equal(out.len, 8 + 21);
    assert_int_equal(ns_cmd_decode(out.data, out.len, &c), 0);
    assert_false(c.has_ext);
    assert_null(c.remark);
    ns_cmd_close(&c);
    ns_buf_close(&out);
}

static void json_encode_edges(void **state)
{
    (void)state;
    struct ns_cmd c;
    struct ns_buf out;
    ns_buf_init(&out);
    ns_cmd_init(&c);
    c.code = 1;
    c.flag = NS_FLAG_RESPONSE;
    c.opaque = -7;
    c.version = NS_SERVER_VERSION;
    c.language = NS_LANG_RUST;
    c.has_ext = true;
    assert_int_equal(ns_cmd_set_remark(&c, "a \"b\"\n/\x7f"), 0);
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    static const char want[] =
        "{\"code\":1,\"extFields\":{},\"flag\":1,\"language\":\"RUST\","
        "\"opaque\":-7,\"remark\":\"a \\\"b\\\"\\n/\\u007F\","
        "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";
    assert_int_equal(out.len, 8 + strlen(want));
    assert_memory_equal(out.data + 8, want, strlen(want));

    /* Replacing an ext value keeps its position; remark can be cleared. */
    assert_int_equal(ns_cmd_ext_set(&c, "a", "1"), 0);
    assert_int_equal(ns_cmd_ext_set(&c, "b", "2"), 0);
    assert_int_equal(ns_cmd_ext_set(&c, "a", "3"), 0);
    assert_int_equal(ns_cmd_set_remark(&c, NULL), 0);
    ns_buf_reset(&out);
    assert_int_equal(ns_cmd_encode(&c, &out), 0);
    static const char want2[] =
        "{\"code\":1,\"extFields\":{\"a\":\"3\",\"b\":\"2\"},\"flag\":1,"
        "\"language\":\"RUST\",\"opaque\":-7,\"serializeTypeCurrentRPC\":"
        "\"JSON\",\"version\":479}";
    assert_int_equal(out.len, 8 + strlen(want2));
    assert_memory_equal(out.data + 8, want2, strlen(want2));
    ns_cmd_close(&c);
    ns_buf_close(&out);
}

static void ext_leniency(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        bool ok;
        int64_t want;
    } ints[] = {
        {"12", true, 12},
        {"-5", true, -5},
        {"+7", true, 7},
        {"0", true, 0},
        {"9223372036854775807", true, INT64_MAX},
        {"-9223372036854775808", true, INT64_MIN},
        {"9223372036854775808", false, 0},
        {"", false, 0},
        {"-", false, 0},
        {" 1", false, 0},
        {"1 ", false, 0},
        {"1.0", false, 0},
        {"0x10", false, 0},
        {"abc", false, 0},
    };
    struct ns_cmd c;
    ns_cmd_init(&c);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        assert_int_equal(ns_cmd_ext_set(&c, "n", ints[i].value), 0);
        int64_t v = 42;
        bool ok = ns_cmd_ext_int64(&c, "n", &v);
        if (ok != ints[i].ok || v != (ok ? ints[i].want : 42)) {
            fail_msg("int64 \"%s\"", ints[i].value);
        }
    }
    int64_t v = 42;
    assert_false(ns_cmd_ext_int64(&c, "absent", &v));
    assert_int_equal(v, 42);

    static const struct {
        const char *value;
        bool want;
    } bools[] = {{"true", true},   {"TRUE", true},  {"tRuE", true},
                 {"false", false}, {"yes", false},  {"1", false},
                 {"", false},      {"true ", false}};
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
        assert_int_equal(ns_cmd_ext_set(&c, "b", bools[i].value), 0);
        bool b = !bools[i].want;
        assert_true(ns_cmd_ext_bool(&c, "b", &b));
        assert_int_equal(b, bools[i].want);
    }
    bool b = true;
    assert_false(ns_cmd_ext_bool(&c, "absent", &b));
    assert_true(b);
    ns_cmd_close(&c);
}

static void language_names(void **state)
{
    (void)state;
    static const char *const names[] = {
        "JAVA",  "CPP",  "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
        "OTHER", "HTTP", "GO",     "PHP",    "OMS",    "RUST",   "NODE_JS"};
    for (int32_t i = 0; i < NS_LANG_COUNT; i++) {
        char num[8];
        assert_string_equal(ns_language_name(i), names[i]);
        assert_int_equal(ns_language_parse(names[i]), i);
        snprintf(num, sizeof num, "%d", i);
        assert_int_equal(ns_language_parse(num), i);
    }
    assert_string_equal(ns_language_name(-1), "OTHER");
    assert_string_equal(ns_language_name(NS_LANG_COUNT), "OTHER");
    assert_int_equal(ns_language_parse("java"), -1);
    assert_int_equal(ns_language_parse(""), -1);
    assert_int_equal(ns_language_parse("14"), -1);
    assert_int_equal(ns_language_parse("99999999999"), -1);
    assert_int_equal(ns_language_parse("1x"), -1);
}

/* Decode with the k-th allocation failing, k = 0, 1, ... until it succeeds. */
static void sweep_decode(const uint8_t *frame, size_t len, size_t want_ext)
{
    for (long k = 0;; k++) {
        struct ns_cmd c;
        ns_alloc_fail_at(k, 1);
        int rv = ns_cmd_decode(frame, len, &c);
        ns_alloc_fail_at(-1, 0);
        if (rv == 0) {
            assert_true(k > 0);
            assert_int_equal(c.n_ext, want_ext);
            ns_cmd_close(&c);
            break;
        }
        if (rv != NS_ENOMEM) {
            fail_msg("k=%ld: rv %d", k, rv);
        }
        assert_null(c.ext);
        assert_null(c.remark);
        assert_true(k < 1000);
    }
}

static void decode_allocation_failures(void **state)
{
    (void)state;
    size_t len;
    uint8_t *frame = load("03_register_broker_a.req.bin", &len);
    sweep_decode(frame, len, 7);
    free(frame);
    frame = load("07_route_TestTopic_rocketmq_hdr.req.bin", &len);
    sweep_decode(frame, len, 1);
    free(frame);

    struct ns_buf b;
    ns_buf_init(&b);
    static const char h[] = FIXED "\0\0\0\2hi"
                                  "\0\0\0\x10"
                                  "\0\1a"
                                  "\0\0\0\1v"
                                  "\0\1b"
                                  "\0\0\0\1w";
    make_frame(&b, 1, h, sizeof h - 1, NULL);
    sweep_decode(b.data, b.len, 2);
    static const char j[] =
        "{\"remark\":\"x\",\"extFields\":{\"a\":1,\"b\":true,"
        "\"c\":\"s\",\"d\":\"t\",\"e\":\"u\",\"f\":\"v\"},\"x\":{3:1}}";
    make_frame(&b, 0, j, sizeof j - 1, NULL);
    sweep_decode(b.data, b.len, 6);
    ns_buf_close(&b);
}

/* A copy owns everything: it outlives the frame and the original, encodes
 * byte for byte as the original did, and takes ext fields like any command. */
static void copy_outlives_its_frame(void **state)
{
    (void)state;
    size_t len;
    uint8_t *frame = load("03_register_broker_a.req.bin", &len);
    struct ns_cmd orig, copy;
    assert_int_equal(ns_cmd_decode(frame, len, &orig), 0);
    assert_int_equal(ns_cmd_set_remark(&orig, "a remark"), 0);
    struct ns_buf want;
    ns_buf_init(&want);
    assert_int_equal(ns_cmd_encode(&orig, &want), 0);
    assert_int_equal(ns_cmd_copy(&orig, &copy), 0);
    ns_cmd_close(&orig);
    memset(frame, 0xAB, len);
    free(frame);
    struct ns_buf got;
    ns_buf_init(&got);
    assert_int_equal(ns_cmd_encode(&copy, &got), 0);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, got.len);
    assert_string_equal(copy.remark, "a remark");
    assert_int_equal(ns_cmd_ext_set(&copy, "brokerName", "changed"), 0);
    assert_int_equal(ns_cmd_ext_set(&copy, "added", "yes"), 0);
    assert_string_equal(ns_cmd_ext_find(&copy, "brokerName"), "changed");
    assert_string_equal(ns_cmd_ext_find(&copy, "added"), "yes");
    ns_cmd_close(&copy);
    /* empty: no ext, no remark, no body */
    struct ns_cmd empty, c2;
    ns_cmd_init(&empty);
    empty.code = 105;
    assert_int_equal(ns_cmd_copy(&empty, &c2), 0);
    assert_int_equal(c2.code, 105);
    assert_null(c2.ext);
    assert_null(c2.body);
    ns_cmd_close(&c2);
    /* out of memory: nothing allocated, dst untouched */
    ns_alloc_fail_at(0, 0);
    c2.code = 7;
    assert_int_equal(ns_cmd_copy(&empty, &c2), NS_ENOMEM);
    ns_alloc_fail_at(-1, 0);
    assert_int_equal(c2.code, 7);
    ns_buf_close(&got);
    ns_buf_close(&want);
}

static void encode_allocation_failures(void **state)
{
    (void)state;
    for (int ser = 0; ser < 2; ser++) {
        for (long k = 0;; k++) {
            struct ns_cmd c;
            struct ns_buf out;
            example_cmd(&c, (enum ns_serialize)ser);
            ns_buf_init(&out);
            ns_alloc_fail_at(k, 1);
            int rv = ns_cmd_encode(&c, &out);
            ns_alloc_fail_at(-1, 0);
            ns_buf_close(&out);
            ns_cmd_close(&c);
            if (rv == 0) {
                break;
            }
            assert_int_equal(rv, NS_ENOMEM);
            assert_true(k < 100);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_responses_round_trip),
        cmocka_unit_test(golden_requests_decode),
        cmocka_unit_test(request_ext_fields_in_wire_order),
        cmocka_unit_test(rocketmq_header_sample_07),
        cmocka_unit_test(worked_example_frames),
        cmocka_unit_test(worked_example_reply),
        cmocka_unit_test(partial_frames_need_more),
        cmocka_unit_test(several_frames_in_one_buffer),
        cmocka_unit_test(frame_rejections),
        cmocka_unit_test(json_header_cases),
        cmocka_unit_test(binary_header_cases),
        cmocka_unit_test(binary_encode_edges),
        cmocka_unit_test(json_encode_edges),
        cmocka_unit_test(ext_leniency),
        cmocka_unit_test(language_names),
        cmocka_unit_test(decode_allocation_failures),
        cmocka_unit_test(copy_outlives_its_frame),
        cmocka_unit_test(encode_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
