/* The zlib record form of the REGISTER_BROKER body (requests from version
 * 37 with the compressed flag, docs/protocol.md §4.4): inflate, then
 * int32-prefixed records of dataVersion JSON, topic lines, filter servers and
 * mappings. Pure.
 */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "raftns/alloc.h"
#include "raftns/decimal.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"
#include "raftns/utf8.h"
#include "register_body_int.h"

#define INFLATE_CHUNK (64u * 1024u)

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
static int inflate_body(struct register_body_ctx *c, const uint8_t *body,
                        size_t len, struct ns_buf *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = zalloc_ns;
    zs.zfree = zfree_ns;
    int zrv = inflateInit(&zs);
    if (zrv != Z_OK) {
        return zrv == Z_MEM_ERROR
                   ? NS_ENOMEM
                   : register_body_fail(c, "java.util.zip.ZipException");
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
            rv = register_body_fail(
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
            rv = register_body_fail(c, "java.util.zip.ZipException: %s",
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
static int read_record(struct register_body_ctx *c, struct ns_rd *rd,
                       const char **p, size_t *n)
{
    /* Set on every path: GCC 12 -O3 cannot see that register_body_fail() is
     * non-zero. */
    *p = NULL;
    *n = 0;
    uint32_t u = ns_rd_u32(rd);
    if (rd->err) {
        return register_body_fail(c, "java.io.EOFException");
    }
    if ((int32_t)u < 0) {
        return register_body_fail(c, "java.lang.NegativeArraySizeException: %d",
                                  (int32_t)u);
    }
    *p = (const char *)ns_rd_bytes(rd, u);
    if (*p == NULL) {
        return register_body_fail(c, "java.io.EOFException");
    }
    *n = u;
    return 0;
}

/* Integer.parseInt of a topic line token, ASCII digits only. */
static bool parse_int32_token(const char *s, size_t n, int32_t *out)
{
    int64_t v;
    if (!ns_decimal_parse(s, n, NS_DECIMAL_SIGN, INT32_MIN, INT32_MAX, &v)) {
        return false;
    }
    *out = (int32_t)v;
    return true;
}

/* "name read write perm filterType [attributesJson]" (TopicConfig.decode):
 * split on single spaces with trailing empty tokens dropped, as String.split("
 * ") does. */
static int decode_topic_line(struct register_body_ctx *c, const char *s,
                             size_t n, struct ns_topic_config *t)
{
    const char *tok[7];
    size_t tlen[7];
    size_t ntok = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ' ') {
            if (ntok == 7) {
                return register_body_fail(
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
        return register_body_fail(
            c, "java.lang.NullPointerException: topic config line");
    }
    if (!parse_int32_token(tok[1], tlen[1], &t->read_queues) ||
        !parse_int32_token(tok[2], tlen[2], &t->write_queues) ||
        !parse_int32_token(tok[3], tlen[3], &t->perm)) {
        return register_body_fail(
            c, "java.lang.NumberFormatException: topic config line");
    }
    bool single = tlen[4] == 10 && memcmp(tok[4], "SINGLE_TAG", 10) == 0;
    bool multi = tlen[4] == 9 && memcmp(tok[4], "MULTI_TAG", 9) == 0;
    if (!single && !multi) {
        return register_body_fail(
            c, "java.lang.IllegalArgumentException: No enum constant "
               "TopicFilterType");
    }
    if (ntok == 6) {
        cJSON *attrs;
        int rv = register_body_parse_json(c, tok[5], tlen[5],
                                          "topic attributes", &attrs);
        if (rv != 0) {
            return rv;
        }
        bool ok = cJSON_IsObject(attrs);
        cJSON_Delete(attrs);
        if (!ok) {
            return register_body_fail_json(c, "syntax error, topic attributes");
        }
    }
    t->sys_flag = 0;
    t->name = ns_strndup(tok[0], tlen[0]);
    return t->name ? 0 : NS_ENOMEM;
}

/* A section's record count: *count 0 for a non-positive one (Java's loop runs
 * zero times), and EOFException when fewer bytes remain than its records
 * need (each at least a 4-byte length), before anything is allocated. */
static int read_count(struct register_body_ctx *c, struct ns_rd *rd,
                      int32_t *count)
{
    *count = (int32_t)ns_rd_u32(rd);
    if (rd->err) {
        return register_body_fail(c, "java.io.EOFException");
    }
    if (*count <= 0) {
        *count = 0;
        return 0;
    }
    if ((size_t)*count > ns_rd_left(rd) / 4) {
        return register_body_fail(c, "java.io.EOFException");
    }
    return 0;
}

static int decode_compressed_topics(struct register_body_ctx *c,
                                    struct ns_rd *rd)
{
    struct ns_register *r = c->r;
    int32_t count = 0;
    int rc = read_count(c, rd, &count);
    if (rc != 0 || count == 0) {
        return rc;
    }
    if ((uint32_t)count > NS_REGISTER_MAX_TOPICS) {
        return register_body_too_many_topics(
            c, (size_t)count); /* before allocating */
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

static int decode_compressed_mappings(struct register_body_ctx *c,
                                      struct ns_rd *rd)
{
    struct ns_register *r = c->r;
    int32_t count = 0;
    int rc = read_count(c, rd, &count);
    if (rc != 0 || count == 0) {
        return rc;
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
        if ((rv = register_body_parse_json(c, p, n, "TopicQueueMappingInfo",
                                           &o)) != 0) {
            return rv;
        }
        rv = register_body_decode_mapping_json(c, o, NULL,
                                               &r->mappings[r->n_mappings]);
        r->n_mappings++;
        cJSON_Delete(o);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

int register_body_decode_compressed(struct register_body_ctx *c,
                                    int32_t req_version, const uint8_t *body,
                                    size_t len)
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
    if ((rv = register_body_parse_json(c, p, n, "dataVersion", &dv)) != 0) {
        goto out;
    }
    if (!cJSON_IsObject(dv)) {
        cJSON_Delete(dv);
        rv = register_body_fail_json(c, "syntax error, dataVersion");
        goto out;
    }
    rv = register_body_decode_dv(c, dv, (struct ns_json_span){p, n}, &c->r->dv);
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
            rv = cJSON_IsArray(fs) ? register_body_decode_filter_servers(c, fs)
                                   : 0;
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