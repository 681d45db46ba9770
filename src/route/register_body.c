/* REGISTER_BROKER body decoding (docs/protocol.md §4.2-4.4): RegisterBrokerBody
 * JSON, the bare TopicConfigSerializeWrapper of old requests, and the zlib
 * record form, into struct ns_register. It fills only the body part (not header
 * fields) and changes no route state. Pure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"
#include "raftns/utf8.h"
#include "data_version.h"
#include "register_body_scan.h"

#define INFLATE_CHUNK (64u * 1024u)

struct body_ctx {
    struct ns_register *r;
    int64_t now_ms;
    char *errmsg;
    size_t errmsg_size;
};

/* Records a Java-like exception text and returns NS_EPROTO. */
static int fail(struct body_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct body_ctx *c, const char *fmt, ...)
{
    if (c->errmsg != NULL && c->errmsg_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->errmsg, c->errmsg_size, fmt, ap);
        va_end(ap);
    }
    return NS_EPROTO;
}

static int too_many_topics(struct body_ctx *c, size_t n)
{
    fail(c,
         "register broker body: %zu topics, over the %u one registration "
         "may carry",
         n, NS_REGISTER_MAX_TOPICS);
    return NS_ETOOBIG;
}

static int fail_json(struct body_ctx *c, const char *what)
{
    return fail(c, "com.alibaba.fastjson.JSONException: %s", what);
}

/* --- JSON helpers --- */

/* Parses text; on failure returns NS_ENOMEM or NS_EPROTO with a fastjson-like
 * message. */
static int parse_json(struct body_ctx *c, const char *text, size_t len,
                      const char *what, cJSON **out)
{
    int rv;
    *out = ns_json_parse_rv(text, len, &rv);
    if (*out != NULL) {
        return 0;
    }
    if (rv == NS_ENOMEM) {
        return NS_ENOMEM;
    }
    return fail(c, "com.alibaba.fastjson.JSONException: syntax error, %s",
                what);
}

/* An int property of obj as fastjson fills it (docs/compat.md): an integer
 * must fit; a fraction truncates (low 32 bits of the integer part); a string
 * is castToInt'ed; true/false are 1/0; null or absent keeps dflt; objects and
 * arrays throw. The double cJSON holds is exact for every int32. */
static int get_int32(struct body_ctx *c, const cJSON *obj, const char *key,
                     int32_t dflt, int32_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = dflt;
    if (item == NULL || cJSON_IsNull(item)) {
        return 0;
    }
    if (cJSON_IsBool(item)) {
        *out = cJSON_IsTrue(item) ? 1 : 0;
        return 0;
    }
    if (cJSON_IsString(item)) {
        int rv = ns_json_string_to_int32(item->valuestring, out);
        return rv == NS_EPROTO ? fail_json(c, "parseInt error") : 0;
    }
    if (!cJSON_IsNumber(item)) {
        return fail_json(c, "parseInt error");
    }
    double d = item->valuedouble;
    if (d == (double)(int64_t)d && d >= -2147483648.0 && d <= 2147483647.0) {
        *out = (int32_t)d;
        return 0;
    }
    if (d != (double)(int64_t)d && d > -9.2e18 && d < 9.2e18) {
        *out = (int32_t)(uint32_t)(uint64_t)(int64_t)d;
        return 0;
    }
    return fail_json(c, "int value overflow");
}

/* DataVersion object obj (NULL: absent) whose text is span; a missing
 * timestamp gets now_ms, as Java's constructor. Numbers are read from the
 * text, so 64-bit counters stay exact. */
static int decode_dv(struct body_ctx *c, const cJSON *obj,
                     struct ns_json_span span, struct ns_data_version *dv)
{
    const char *bad;
    if (obj == NULL) {
        memset(dv, 0, sizeof *dv);
        dv->timestamp = c->now_ms;
        return 0;
    }
    int rv =
        ns_data_version_decode_tree(span.p, span.len, obj, c->now_ms, dv, &bad);
    if (rv != 0) {
        return fail(c,
                    "com.alibaba.fastjson.JSONException: parseLong error, "
                    "field : %s",
                    bad);
    }
    return 0;
}

/* TopicConfig's properties raftns does not keep must still decode, or the
 * whole body fails in Java: topicFilterType (an enum: a name, ordinal 0-1 or
 * null) and order (a boolean: true/false, 1/0, "true"/"false" in any case,
 * "1"/"0", "Y"/"T"/"F"/"N", "" or null). */
static int check_enum_and_bool(struct body_ctx *c, const cJSON *tc)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(tc, "topicFilterType");
    bool ok =
        f == NULL || cJSON_IsNull(f) || cJSON_IsString(f) ||
        (cJSON_IsNumber(f) && (f->valuedouble == 0.0 || f->valuedouble == 1.0));
    if (!ok) {
        return fail_json(c, "parse enum TopicFilterType error");
    }
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(tc, "order");
    ok = o == NULL || cJSON_IsNull(o) || cJSON_IsBool(o) || cJSON_IsNumber(o);
    if (!ok && cJSON_IsString(o)) {
        static const char *const words[] = {"true", "false", "1", "0",
                                            "Y",    "y",     "T", "F",
                                            "f",    "N",     "",  "null"};
        for (size_t i = 0; i < sizeof words / sizeof words[0] && !ok; i++) {
            ok = strcasecmp(o->valuestring, words[i]) == 0 &&
                 (i < 2 || strcmp(o->valuestring, words[i]) == 0);
        }
    }
    return ok ? 0 : fail_json(c, "parseBoolean error, field : order");
}

/* Returns 0, an error, or SKIP_TOPIC for an entry Java files under a null
 * name or cannot file at all (docs/compat.md `null-topic`): the registration
 * goes on without it. */
#define SKIP_TOPIC 1
static int decode_topic_json(struct body_ctx *c, const cJSON *tc,
                             struct ns_topic_config *t)
{
    if (cJSON_IsNull(tc)) {
        return SKIP_TOPIC;
    }
    if (!cJSON_IsObject(tc)) {
        return fail_json(c, "syntax error, expect {, actual value");
    }
    const cJSON *n_item = cJSON_GetObjectItemCaseSensitive(tc, "topicName");
    char *printed = NULL;
    const char *name = ns_json_get_string(tc, "topicName");
    if (name == NULL && n_item != NULL && !cJSON_IsNull(n_item)) {
        /* A String property given another value holds its text. */
        printed = cJSON_PrintUnformatted(n_item);
        if (printed == NULL) {
            return NS_ENOMEM;
        }
        name = printed;
    }
    if (name == NULL) {
        return SKIP_TOPIC;
    }
    t->name = ns_strdup(name);
    cJSON_free(printed);
    if (t->name == NULL) {
        return NS_ENOMEM;
    }
    int rv = check_enum_and_bool(c, tc);
    if (rv != 0) {
        return rv;
    }
    rv = get_int32(c, tc, "readQueueNums", 16, &t->read_queues);
    if (rv == 0) {
        rv = get_int32(c, tc, "writeQueueNums", 16, &t->write_queues);
    }
    if (rv == 0) {
        rv = get_int32(c, tc, "perm", NS_PERM_READ | NS_PERM_WRITE, &t->perm);
    }
    if (rv == 0) {
        rv = get_int32(c, tc, "topicSysFlag", 0, &t->sys_flag);
    }
    return rv; /* on error the caller frees t->name with the rest */
}

static int decode_topic_table(struct body_ctx *c, const cJSON *table)
{
    struct ns_register *r = c->r;
    if (table == NULL || cJSON_IsNull(table)) {
        return 0;
    }
    if (!cJSON_IsObject(table)) {
        return fail_json(c, "syntax error, expect {, actual array");
    }
    size_t n = (size_t)cJSON_GetArraySize(table);
    if (n == 0) {
        return 0;
    }
    r->topics = ns_calloc(n, sizeof *r->topics);
    if (r->topics == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *tc;
    cJSON_ArrayForEach(tc, table)
    {
        int rv = decode_topic_json(c, tc, &r->topics[r->n_topics]);
        if (rv == SKIP_TOPIC) {
            continue;
        }
        if (rv != 0) {
            ns_free(r->topics[r->n_topics].name); /* not counted yet */
            r->topics[r->n_topics].name = NULL;
            return rv;
        }
        r->n_topics++;
    }
    return 0;
}

static int cmp_id_pair(const void *a, const void *b)
{
    const struct ns_id_pair *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int decode_curr_ids(struct body_ctx *c, const cJSON *map,
                           struct ns_mapping_info *m)
{
    if (map == NULL || cJSON_IsNull(map)) {
        return 0;
    }
    if (!cJSON_IsObject(map)) {
        return fail_json(c, "syntax error, currIdMap");
    }
    size_t n = (size_t)cJSON_GetArraySize(map);
    if (n == 0) {
        return 0;
    }
    m->curr_ids = ns_calloc(n, sizeof *m->curr_ids);
    if (m->curr_ids == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, map)
    {
        char *end;
        long long k = strtoll(e->string ? e->string : "", &end, 10);
        bool key_ok = e->string != NULL && *e->string != '\0' && *end == '\0';
        if (!key_ok || k < INT32_MIN || k > INT32_MAX || !cJSON_IsNumber(e) ||
            e->valuedouble < INT32_MIN || e->valuedouble > INT32_MAX) {
            return fail_json(c, "can not cast to int, currIdMap");
        }
        m->curr_ids[m->n_curr_ids].key = (int32_t)k;
        m->curr_ids[m->n_curr_ids].value = (int32_t)e->valuedouble;
        m->n_curr_ids++;
    }
    qsort(m->curr_ids, m->n_curr_ids, sizeof *m->curr_ids, cmp_id_pair);
    /* Sorted for deterministic state; a repeated key is treated as malformed.
     */
    for (size_t i = 1; i < m->n_curr_ids; i++) {
        if (m->curr_ids[i].key == m->curr_ids[i - 1].key) {
            return fail_json(c, "duplicate key in currIdMap");
        }
    }
    return 0;
}

/* TopicQueueMappingInfo; topic_key is the map key (JSON form) or NULL (use its
 * topic). */
static int decode_mapping_json(struct body_ctx *c, const cJSON *o,
                               const char *topic_key, struct ns_mapping_info *m)
{
    if (!cJSON_IsObject(o)) {
        return fail_json(c, "syntax error, TopicQueueMappingInfo");
    }
    const char *bname = ns_json_get_string(o, "bname");
    const char *topic = topic_key ? topic_key : ns_json_get_string(o, "topic");
    const char *scope = ns_json_get_string(o, "scope");
    if (bname == NULL || topic == NULL) {
        return fail(c, "java.lang.NullPointerException: TopicQueueMappingInfo");
    }
    int rv = get_int32(c, o, "totalQueues", 0, &m->total_queues);
    if (rv != 0) {
        return rv;
    }
    m->epoch = ns_json_get_int64(o, "epoch", 0);
    m->dirty = ns_json_get_bool(o, "dirty", false);
    m->topic = ns_strdup(topic);
    m->bname = ns_strdup(bname);
    m->scope = ns_strdup(scope);
    if (m->topic == NULL || m->bname == NULL ||
        (scope != NULL && m->scope == NULL)) {
        return NS_ENOMEM;
    }
    return decode_curr_ids(c, cJSON_GetObjectItemCaseSensitive(o, "currIdMap"),
                           m);
}

static int decode_mapping_table(struct body_ctx *c, const cJSON *map)
{
    struct ns_register *r = c->r;
    if (map == NULL || cJSON_IsNull(map)) {
        return 0;
    }
    if (!cJSON_IsObject(map)) {
        return fail_json(c, "syntax error, topicQueueMappingInfoMap");
    }
    size_t n = (size_t)cJSON_GetArraySize(map);
    if (n == 0) {
        return 0;
    }
    r->mappings = ns_calloc(n, sizeof *r->mappings);
    if (r->mappings == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, map)
    {
        int rv =
            decode_mapping_json(c, e, e->string, &r->mappings[r->n_mappings]);
        r->n_mappings++; /* counted even on error so that close frees it */
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

static int decode_filter_servers(struct body_ctx *c, const cJSON *arr)
{
    struct ns_register *r = c->r;
    if (arr == NULL || cJSON_IsNull(arr)) {
        return 0;
    }
    r->has_filter_servers = true;
    /* fastjson reads a List<String> from a lone value as a one-element list
     * and stores every element's text; null elements are left out
     * (docs/compat.md struct-ext-text). */
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 1;
    if (n == 0) {
        return 0;
    }
    r->filter_servers = ns_calloc(n, sizeof *r->filter_servers);
    if (r->filter_servers == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *e = cJSON_IsArray(arr) ? arr->child : arr;
    for (; e != NULL; e = cJSON_IsArray(arr) ? e->next : NULL) {
        char *text;
        if (cJSON_IsNull(e)) {
            continue;
        }
        if (cJSON_IsString(e)) {
            text = ns_strdup(e->valuestring);
        } else {
            char *printed = cJSON_PrintUnformatted(e);
            text = printed != NULL ? ns_strdup(printed) : NULL;
            cJSON_free(printed);
        }
        if (text == NULL) {
            return NS_ENOMEM;
        }
        r->filter_servers[r->n_filter_servers++] = text;
    }
    return 0;
}

/* TopicConfigSerializeWrapper (and its 5.x subclass): dataVersion,
 * topicConfigTable, topicQueueMappingInfoMap. wrapper NULL: Java's default
 * wrapper (new DataVersion()). */
static int decode_wrapper(struct body_ctx *c, const cJSON *wrapper,
                          struct ns_json_span text)
{
    /* fastjson reads an empty array as a null bean. */
    if (cJSON_IsArray(wrapper) && wrapper->child == NULL) {
        wrapper = NULL;
    }
    if (wrapper != NULL && !cJSON_IsNull(wrapper) && !cJSON_IsObject(wrapper)) {
        return fail_json(c, "syntax error, TopicConfigSerializeWrapper");
    }
    const cJSON *dv = cJSON_GetObjectItemCaseSensitive(wrapper, "dataVersion");
    if (cJSON_IsArray(dv) && dv->child == NULL) {
        dv = NULL;
    }
    if (dv != NULL && !cJSON_IsNull(dv) && !cJSON_IsObject(dv)) {
        return fail_json(c, "syntax error, dataVersion");
    }
    struct ns_json_span dv_text = {NULL, 0};
    if (cJSON_IsObject(dv) &&
        !ns_json_span_of(text.p, text.len, wrapper, dv, &dv_text)) {
        return fail_json(c, "syntax error, dataVersion");
    }
    int rv = decode_dv(c, cJSON_IsObject(dv) ? dv : NULL, dv_text, &c->r->dv);
    if (rv == 0) {
        rv = decode_topic_table(
            c, cJSON_GetObjectItemCaseSensitive(wrapper, "topicConfigTable"));
    }
    if (rv == 0) {
        rv = decode_mapping_table(c, cJSON_GetObjectItemCaseSensitive(
                                         wrapper, "topicQueueMappingInfoMap"));
    }
    return rv;
}

static int decode_json_body(struct body_ctx *c, bool bare_wrapper,
                            const uint8_t *body, size_t len)
{
    cJSON *root;
    struct ns_json_span text = {(const char *)body, len};
    int rv =
        parse_json(c, (const char *)body, len, "RegisterBrokerBody", &root);
    if (rv != 0) {
        return rv;
    }
    if (!cJSON_IsObject(root)) {
        rv = fail(c, "java.lang.NullPointerException: body is not an object");
    } else if (bare_wrapper) {
        rv = decode_wrapper(c, root, text);
    } else {
        rv = decode_filter_servers(
            c, cJSON_GetObjectItemCaseSensitive(root, "filterServerList"));
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(
            root, "topicConfigSerializeWrapper");
        struct ns_json_span w_text = {NULL, 0};
        if (rv == 0 && cJSON_IsObject(w) &&
            !ns_json_span_of(text.p, text.len, root, w, &w_text)) {
            rv = fail_json(c, "syntax error, TopicConfigSerializeWrapper");
        }
        if (rv == 0) {
            rv = decode_wrapper(c, w, w_text);
        }
    }
    cJSON_Delete(root);
    return rv;
}

/* --- compressed form --- */

static voidpf zalloc_ns(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return ns_calloc(items, size);
}

static void zfree_ns(voidpf opaque, voidpf p)
{
    (void)opaque;
    ns_free(p);
}

/* Inflates body into out, growing it as output appears and never past
 * NS_REGISTER_MAX_INFLATED. A stream cut short keeps what inflated so far (Java
 * reads the records lazily and only fails if one is missing). */
static int inflate_body(struct body_ctx *c, const uint8_t *body, size_t len,
                        struct ns_buf *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = zalloc_ns;
    zs.zfree = zfree_ns;
    int zrv = inflateInit(&zs);
    if (zrv != Z_OK) {
        return zrv == Z_MEM_ERROR ? NS_ENOMEM
                                  : fail(c, "java.util.zip.ZipException");
    }
    int rv = 0;
    size_t fed = 0;
    for (;;) {
        if (zs.avail_in == 0 && fed < len) {
            size_t n = len - fed < UINT32_MAX ? len - fed : UINT32_MAX;
            zs.next_in = (Bytef *)(body + fed);
            zs.avail_in = (uInt)n;
            fed += n;
        }
        size_t room = NS_REGISTER_MAX_INFLATED - out->len;
        uint8_t probe;
        if (room == 0) {
            /* At the bound: any further output means the body is too large. */
            zs.next_out = &probe;
            zs.avail_out = 1;
        } else {
            size_t chunk = room < INFLATE_CHUNK ? room : INFLATE_CHUNK;
            if (ns_buf_reserve(out, chunk) != 0) {
                rv = out->err;
                break;
            }
            zs.next_out = out->data + out->len;
            zs.avail_out = (uInt)chunk;
        }
        uInt before = zs.avail_out;
        zrv = inflate(&zs, Z_NO_FLUSH);
        size_t produced = before - zs.avail_out;
        if (room == 0 && produced > 0) {
            rv = fail(
                c, "java.io.IOException: inflated register body over %u bytes",
                NS_REGISTER_MAX_INFLATED);
            break;
        }
        if (room != 0) {
            out->len += produced;
        }
        if (zrv == Z_STREAM_END) {
            break;
        }
        if (zrv == Z_MEM_ERROR) {
            rv = NS_ENOMEM;
            break;
        }
        if (zrv == Z_DATA_ERROR || zrv == Z_NEED_DICT ||
            zrv == Z_STREAM_ERROR) {
            rv = fail(c, "java.util.zip.ZipException: %s",
                      zs.msg ? zs.msg : "invalid zlib data");
            break;
        }
        if (zrv == Z_BUF_ERROR && zs.avail_in == 0 && fed == len) {
            break; /* input ended before the stream did */
        }
    }
    inflateEnd(&zs);
    return rv;
}

/* Next int32-prefixed record: *p borrowed, NULL with an error when truncated.
 */
static int read_record(struct body_ctx *c, struct ns_rd *rd, const char **p,
                       size_t *n)
{
    /* Set on every path: GCC 12 -O3 cannot see that fail() is non-zero. */
    *p = NULL;
    *n = 0;
    uint32_t u = ns_rd_u32(rd);
    if (rd->err) {
        return fail(c, "java.io.EOFException");
    }
    if ((int32_t)u < 0) {
        return fail(c, "java.lang.NegativeArraySizeException: %d", (int32_t)u);
    }
    *p = (const char *)ns_rd_bytes(rd, u);
    if (*p == NULL) {
        return fail(c, "java.io.EOFException");
    }
    *n = u;
    return 0;
}

static bool parse_int32_token(const char *s, size_t n, int32_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n) {
        return false;
    }
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
        if (v > (int64_t)INT32_MAX + 1) {
            return false;
        }
    }
    v = neg ? -v : v;
    if (v < INT32_MIN || v > INT32_MAX) {
        return false;
    }
    *out = (int32_t)v;
    return true;
}

/* "name read write perm filterType [attributesJson]" (TopicConfig.decode):
 * split on single spaces with trailing empty tokens dropped, as String.split("
 * ") does. */
static int decode_topic_line(struct body_ctx *c, const char *s, size_t n,
                             struct ns_topic_config *t)
{
    const char *tok[7];
    size_t tlen[7];
    size_t ntok = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ' ') {
            if (ntok == 7) {
                return fail(
                    c, "java.lang.IllegalArgumentException: topic config line");
            }
            tok[ntok] = s + start;
            tlen[ntok] = i - start;
            ntok++;
            start = i + 1;
        }
    }
    while (ntok > 0 && tlen[ntok - 1] == 0) {
        ntok--;
    }
    if (ntok != 5 && ntok != 6) {
        return fail(c, "java.lang.NullPointerException: topic config line");
    }
    if (!parse_int32_token(tok[1], tlen[1], &t->read_queues) ||
        !parse_int32_token(tok[2], tlen[2], &t->write_queues) ||
        !parse_int32_token(tok[3], tlen[3], &t->perm)) {
        return fail(c, "java.lang.NumberFormatException: topic config line");
    }
    bool single = tlen[4] == 10 && memcmp(tok[4], "SINGLE_TAG", 10) == 0;
    bool multi = tlen[4] == 9 && memcmp(tok[4], "MULTI_TAG", 9) == 0;
    if (!single && !multi) {
        return fail(c, "java.lang.IllegalArgumentException: No enum constant "
                       "TopicFilterType");
    }
    if (ntok == 6) {
        cJSON *attrs;
        int rv = parse_json(c, tok[5], tlen[5], "topic attributes", &attrs);
        if (rv != 0) {
            return rv;
        }
        bool ok = cJSON_IsObject(attrs);
        cJSON_Delete(attrs);
        if (!ok) {
            return fail_json(c, "syntax error, topic attributes");
        }
    }
    t->sys_flag = 0;
    t->name = ns_strndup(tok[0], tlen[0]);
    return t->name ? 0 : NS_ENOMEM;
}

static int decode_compressed_topics(struct body_ctx *c, struct ns_rd *rd)
{
    struct ns_register *r = c->r;
    int32_t count = (int32_t)ns_rd_u32(rd);
    if (rd->err) {
        return fail(c, "java.io.EOFException");
    }
    if (count <= 0) {
        return 0; /* Java's loop runs zero times for a negative count */
    }
    if ((size_t)count > ns_rd_left(rd) / 4) {
        return fail(c, "java.io.EOFException");
    }
    if ((uint32_t)count > NS_REGISTER_MAX_TOPICS) {
        return too_many_topics(c, (size_t)count); /* before allocating */
    }
    r->topics = ns_calloc((size_t)count, sizeof *r->topics);
    if (r->topics == NULL) {
        return NS_ENOMEM;
    }
    struct ns_buf fixed;
    ns_buf_init(&fixed);
    int rv = 0;
    for (int32_t i = 0; i < count && rv == 0; i++) {
        const char *p;
        size_t n;
        rv = read_record(c, rd, &p, &n);
        if (rv == 0) {
            /* Java: new String(record, UTF-8) before splitting the line. */
            ns_buf_reset(&fixed);
            rv = ns_utf8_java((const uint8_t *)p, n, &fixed);
            if (rv == 1) {
                p = (const char *)fixed.data;
                n = fixed.len;
                rv = 0;
            }
        }
        if (rv == 0) {
            rv = decode_topic_line(c, p, n, &r->topics[r->n_topics]);
        }
        if (rv == 0) {
            r->n_topics++;
        }
    }
    ns_buf_close(&fixed);
    return rv;
}

static int decode_compressed_mappings(struct body_ctx *c, struct ns_rd *rd)
{
    struct ns_register *r = c->r;
    int32_t count = (int32_t)ns_rd_u32(rd);
    if (rd->err) {
        return fail(c, "java.io.EOFException");
    }
    if (count <= 0) {
        return 0;
    }
    if ((size_t)count > ns_rd_left(rd) / 4) {
        return fail(c, "java.io.EOFException");
    }
    r->mappings = ns_calloc((size_t)count, sizeof *r->mappings);
    if (r->mappings == NULL) {
        return NS_ENOMEM;
    }
    for (int32_t i = 0; i < count; i++) {
        const char *p;
        size_t n;
        int rv = read_record(c, rd, &p, &n);
        if (rv != 0) {
            return rv;
        }
        cJSON *o;
        if ((rv = parse_json(c, p, n, "TopicQueueMappingInfo", &o)) != 0) {
            return rv;
        }
        rv = decode_mapping_json(c, o, NULL, &r->mappings[r->n_mappings]);
        r->n_mappings++;
        cJSON_Delete(o);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

static int decode_compressed(struct body_ctx *c, int32_t req_version,
                             const uint8_t *body, size_t len)
{
    struct ns_buf raw;
    ns_buf_init(&raw);
    int rv = inflate_body(c, body, len, &raw);
    if (rv != 0) {
        goto out;
    }
    struct ns_rd rd;
    ns_rd_init(&rd, raw.data, raw.len);
    const char *p;
    size_t n;
    rv = read_record(c, &rd, &p, &n);
    if (rv != 0) {
        goto out;
    }
    cJSON *dv;
    if ((rv = parse_json(c, p, n, "dataVersion", &dv)) != 0) {
        goto out;
    }
    if (!cJSON_IsObject(dv)) {
        cJSON_Delete(dv);
        rv = fail_json(c, "syntax error, dataVersion");
        goto out;
    }
    rv = decode_dv(c, dv, (struct ns_json_span){p, n}, &c->r->dv);
    cJSON_Delete(dv);
    if (rv == 0) {
        rv = decode_compressed_topics(c, &rd);
    }
    if (rv == 0) {
        rv = read_record(c, &rd, &p, &n);
    }
    if (rv == 0) {
        /* Java catches a filter server list it cannot parse and registers
         * with an empty one. */
        int frv;
        cJSON *fs = ns_json_parse_rv(p, n, &frv);
        c->r->has_filter_servers = true;
        if (fs == NULL && frv == NS_ENOMEM) {
            rv = NS_ENOMEM;
        } else if (fs != NULL) {
            rv = cJSON_IsArray(fs) ? decode_filter_servers(c, fs) : 0;
            cJSON_Delete(fs);
        }
    }
    if (rv == 0 && req_version >= 413) {
        rv = decode_compressed_mappings(c, &rd);
    }
out:
    ns_buf_close(&raw);
    return rv;
}

/* --- normalisation: Java keys both tables by topic, so a later duplicate wins
 * --- */

struct sort_key {
    const char *name;
    size_t idx;
};

static int cmp_sort_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    int d = strcmp(x->name, y->name);
    if (d != 0) {
        return d;
    }
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sorted order of n names with only the last occurrence of each kept: fills
 * keep[] with the surviving indexes (ascending by name) and returns how many;
 * SIZE_MAX on OOM. */
static size_t dedupe_order(const char *const *names, size_t n, size_t *keep)
{
    struct sort_key *keys = ns_malloc(n * sizeof *keys);
    if (keys == NULL) {
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].name = names[i];
        keys[i].idx = i;
    }
    qsort(keys, n, sizeof *keys, cmp_sort_key);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && strcmp(keys[i].name, keys[i + 1].name) == 0) {
            continue;
        }
        keep[kept++] = keys[i].idx;
    }
    ns_free(keys);
    return kept;
}

static void free_mapping(struct ns_mapping_info *m)
{
    ns_free(m->topic);
    ns_free(m->bname);
    ns_free(m->scope);
    ns_free(m->curr_ids);
}

static void free_topic(void *elem)
{
    ns_free(((struct ns_topic_config *)elem)->name);
}

static void free_mapping_elem(void *elem)
{
    free_mapping(elem);
}

/* Sorts the n elements of *arr (elem_size bytes each) by the string at
 * name_offset, keeping the last of equal names (Java's map semantics) and
 * freeing the others with drop. 0 or NS_ENOMEM (*arr unchanged). */
static int normalise(void **arr, size_t *n, size_t elem_size,
                     size_t name_offset, void (*drop)(void *))
{
    if (*n < 2) {
        return 0;
    }
    int rv = NS_ENOMEM;
    char *in = *arr;
    const char **names = ns_malloc(*n * sizeof *names);
    size_t *keep = ns_malloc(*n * sizeof *keep);
    char *out = ns_calloc(*n, elem_size);
    if (names == NULL || keep == NULL || out == NULL) {
        goto out;
    }
    for (size_t i = 0; i < *n; i++) {
        memcpy(&names[i], in + i * elem_size + name_offset, sizeof names[i]);
    }
    size_t kept = dedupe_order(names, *n, keep);
    if (kept == SIZE_MAX) {
        goto out;
    }
    for (size_t i = 0; i < kept; i++) {
        memcpy(out + i * elem_size, in + keep[i] * elem_size, elem_size);
        memset(in + keep[i] * elem_size, 0, elem_size);
    }
    for (size_t i = 0; i < *n; i++) {
        drop(in + i * elem_size);
    }
    ns_free(in);
    *arr = out;
    *n = kept;
    out = NULL;
    rv = 0;
out:
    ns_free(out);
    ns_free(keep);
    ns_free(names);
    return rv;
}

static int normalise_topics(struct ns_register *r)
{
    void *arr = r->topics;
    int rv = normalise(&arr, &r->n_topics, sizeof *r->topics,
                       offsetof(struct ns_topic_config, name), free_topic);
    r->topics = arr;
    return rv;
}

static int normalise_mappings(struct ns_register *r)
{
    void *arr = r->mappings;
    int rv =
        normalise(&arr, &r->n_mappings, sizeof *r->mappings,
                  offsetof(struct ns_mapping_info, topic), free_mapping_elem);
    r->mappings = arr;
    return rv;
}

/* Frees whatever a failed decode left in the body fields and zeroes them. */
static void clear_body(struct ns_register *r)
{
    for (size_t i = 0; i < r->n_topics; i++) {
        ns_free(r->topics[i].name);
    }
    ns_free(r->topics);
    for (size_t i = 0; i < r->n_mappings; i++) {
        free_mapping(&r->mappings[i]);
    }
    ns_free(r->mappings);
    for (size_t i = 0; i < r->n_filter_servers; i++) {
        ns_free(r->filter_servers[i]);
    }
    ns_free(r->filter_servers);
    r->topics = NULL;
    r->n_topics = 0;
    r->mappings = NULL;
    r->n_mappings = 0;
    r->filter_servers = NULL;
    r->n_filter_servers = 0;
    r->has_filter_servers = false;
    memset(&r->dv, 0, sizeof r->dv);
}

/* The JSON forms: the fast path of register_body_scan.c when it handles the
 * text, else (or with use_scan false) the cJSON tree. */
static int decode_json(struct body_ctx *c, bool bare_wrapper, bool use_scan,
                       const uint8_t *body, size_t len)
{
    if (use_scan) {
        int rv = register_body_scan(c->r, bare_wrapper, body, len, c->now_ms);
        if (rv != NS_EAGAIN) {
            return rv;
        }
        clear_body(c->r);
    }
    return decode_json_body(c, bare_wrapper, body, len);
}

static int decode_body(struct ns_register *r, int32_t req_version,
                       bool compressed, bool use_scan, const uint8_t *body,
                       size_t len, int64_t now_ms, char *errmsg,
                       size_t errmsg_size)
{
    struct body_ctx c = {r, now_ms, errmsg, errmsg_size};
    if (errmsg != NULL && errmsg_size > 0) {
        errmsg[0] = '\0';
    }
    clear_body(r);
    if (len == 0) {
        return 0;
    }
    int rv;
    struct ns_buf fixed;
    ns_buf_init(&fixed);
    if (req_version < 37 || !compressed) {
        /* Java decodes the body with new String(bytes, UTF_8) first. */
        rv = ns_utf8_java(body, len, &fixed);
        if (rv < 0) {
            ns_buf_close(&fixed);
            return rv;
        }
        if (rv == 1) {
            body = fixed.data;
            len = fixed.len;
        }
    }
    if (req_version < 37) {
        rv = decode_json(&c, true, use_scan, body, len);
    } else if (compressed) {
        rv = decode_compressed(&c, req_version, body, len);
    } else {
        rv = decode_json(&c, false, use_scan, body, len);
    }
    ns_buf_close(&fixed);
    if (rv == 0 && r->n_topics > NS_REGISTER_MAX_TOPICS) {
        rv = too_many_topics(&c, r->n_topics);
    }
    if (rv == 0) {
        rv = normalise_topics(r);
    }
    if (rv == 0) {
        rv = normalise_mappings(r);
    }
    if (rv != 0) {
        clear_body(r);
    }
    if (rv == NS_ENOMEM && errmsg != NULL && errmsg_size > 0) {
        snprintf(errmsg, errmsg_size, "java.lang.OutOfMemoryError");
    }
    return rv;
}

int ns_register_decode_body(struct ns_register *r, int32_t req_version,
                            bool compressed, const uint8_t *body, size_t len,
                            int64_t now_ms, char *errmsg, size_t errmsg_size)
{
    return decode_body(r, req_version, compressed, true, body, len, now_ms,
                       errmsg, errmsg_size);
}

int register_decode_body_tree(struct ns_register *r, int32_t req_version,
                              bool compressed, const uint8_t *body, size_t len,
                              int64_t now_ms, char *errmsg, size_t errmsg_size)
{
    return decode_body(r, req_version, compressed, false, body, len, now_ms,
                       errmsg, errmsg_size);
}
