/* The ROCKETMQ binary header (serialize type 1, docs/protocol.md §2.3) in both
 * directions. It does not see the frame around the header (cmd.c). */
#include <string.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/utf8.h"

/* Copies n bytes at p into an owned string; NULL result only when out of
 * memory. */
static int copy_str(const uint8_t *p, size_t n, char **out)
{
    struct ns_buf fixed;
    ns_buf_init(&fixed);
    /* Netty's readCharSequence(UTF_8): malformed bytes are U+FFFD. */
    int rv = ns_utf8_java(p, n, &fixed);
    if (rv < 0) {
        ns_buf_close(&fixed);
        return NS_ENOMEM;
    }
    if (rv == 1) {
        p = fixed.data;
        n = fixed.len;
    }
    *out = ns_strndup((const char *)p, n);
    ns_buf_close(&fixed);
    return *out ? 0 : NS_ENOMEM;
}

/* keyLen (int16), key, valLen (int32), value; repeated until the blob is
 * consumed. Java throws on a negative length (a negative array size), so do we.
 */
static int decode_ext(const uint8_t *blob, size_t blob_len, struct ns_cmd *c)
{
    struct ns_rd r;
    char *k = NULL;
    char *v = NULL;
    ns_rd_init(&r, blob, blob_len);
    c->has_ext = true;
    while (ns_rd_left(&r) > 0) {
        int16_t key_len = (int16_t)ns_rd_u16(&r);
        const uint8_t *key =
            key_len >= 0 ? ns_rd_bytes(&r, (size_t)key_len) : NULL;
        int32_t val_len = (int32_t)ns_rd_u32(&r);
        const uint8_t *val =
            val_len >= 0 ? ns_rd_bytes(&r, (size_t)val_len) : NULL;
        if (r.err || key == NULL || val == NULL) {
            return NS_EPROTO;
        }
        if (key_len == 0 || val_len == 0) {
            /* Java's readStr gives null for a zero length: a null key no
             * handler reads, or a null value, which every handler takes as
             * absent (and which replaces an earlier value of the key). */
            if (key_len > 0) {
                cmd_ext_drop(c, (const char *)key, (size_t)key_len);
            }
            continue;
        }
        if (memchr(key, 0, (size_t)key_len) != NULL ||
            memchr(val, 0, (size_t)val_len) != NULL) {
            return NS_EPROTO; /* a C string cannot carry it: docs/compat.md */
        }
        if (copy_str(key, (size_t)key_len, &k) != 0) {
            return NS_ENOMEM;
        }
        if (copy_str(val, (size_t)val_len, &v) != 0) {
            goto err_after_key;
        }
        if (cmd_ext_append(c, k, v) != 0) {
            goto err_after_value;
        }
    }
    return 0;

err_after_value:
    ns_free(v);
err_after_key:
    ns_free(k);
    return NS_ENOMEM;
}

int header_binary_decode(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    struct ns_rd r;
    ns_rd_init(&r, h, h_len);
    c->code = (int16_t)ns_rd_u16(&r);
    c->language = ns_rd_u8(&r);
    c->version = (int16_t)ns_rd_u16(&r);
    c->opaque = (int32_t)ns_rd_u32(&r);
    c->flag = (int32_t)ns_rd_u32(&r);
    int32_t remark_len = (int32_t)ns_rd_u32(&r);
    if (r.err) {
        return NS_EPROTO;
    }
    /* Zero is a null remark; Netty's readCharSequence throws on a negative
     * length, and the decoder then closes the connection. */
    if (remark_len < 0) {
        return NS_EPROTO;
    }
    if (remark_len > 0) {
        const uint8_t *p = ns_rd_bytes(&r, (size_t)remark_len);
        if (p == NULL) {
            return NS_EPROTO;
        }
        if (copy_str(p, (size_t)remark_len, &c->remark) != 0) {
            return NS_ENOMEM;
        }
    }
    int32_t ext_len = (int32_t)ns_rd_u32(&r);
    if (r.err) {
        return NS_EPROTO;
    }
    if (ext_len > 0) {
        const uint8_t *blob = ns_rd_bytes(&r, (size_t)ext_len);
        if (blob == NULL) {
            return NS_EPROTO;
        }
        return decode_ext(blob, (size_t)ext_len, c);
    }
    return 0; /* bytes after the ext blob are ignored, as Java does */
}

static void fail(struct ns_buf *out, int rv)
{
    if (out->err == 0) {
        out->err = rv;
    }
}

void header_binary_encode(const struct ns_cmd *c, struct ns_buf *out)
{
    ns_buf_put_u16(out, (uint16_t)c->code);
    ns_buf_put_u8(out, (uint8_t)c->language);
    ns_buf_put_u16(out, (uint16_t)c->version);
    ns_buf_put_u32(out, (uint32_t)c->opaque);
    ns_buf_put_u32(out, (uint32_t)c->flag);
    size_t remark_len = c->remark ? strlen(c->remark) : 0;
    if (remark_len > INT32_MAX) {
        fail(out, NS_ETOOBIG);
        return;
    }
    ns_buf_put_u32(out, (uint32_t)remark_len);
    ns_buf_append(out, c->remark, remark_len);
    size_t ext_at = out->len;
    ns_buf_put_u32(out, 0);
    for (size_t i = 0; i < c->n_ext; i++) {
        const struct ns_ext *e = &c->ext[i];
        if (e->key == NULL || e->value == NULL || e->key[0] == '\0') {
            continue; /* Java skips null keys and values; "" would decode as
                         null */
        }
        size_t k = strlen(e->key);
        size_t v = strlen(e->value);
        if (k > INT16_MAX || v > INT32_MAX) {
            fail(out, NS_ETOOBIG);
            return;
        }
        ns_buf_put_u16(out, (uint16_t)k);
        ns_buf_append(out, e->key, k);
        ns_buf_put_u32(out, (uint32_t)v);
        ns_buf_append(out, e->value, v);
    }
    size_t ext_len = out->len - ext_at - 4;
    if (ext_len > INT32_MAX) {
        fail(out, NS_ETOOBIG);
        return;
    }
    ns_buf_patch_u32(out, ext_at, (uint32_t)ext_len);
}
