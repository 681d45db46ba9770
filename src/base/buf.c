/* struct ns_buf, the growable output buffer (the reader is rd.c). Pure: memory
 * only. */
#include "raftns/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

void ns_buf_init(struct ns_buf *b)
{
    memset(b, 0, sizeof *b);
}

void ns_buf_close(struct ns_buf *b)
{
    ns_free(b->data);
    ns_buf_init(b);
}

void ns_buf_reset(struct ns_buf *b)
{
    b->len = 0;
    b->err = 0;
}

int ns_buf_reserve(struct ns_buf *b, size_t extra)
{
    if (b->err) {
        return b->err;
    }
    if (extra > SIZE_MAX / 2 - b->len) {
        return b->err = NS_ETOOBIG;
    }
    size_t need = b->len + extra;
    if (need <= b->cap) {
        return 0;
    }
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        cap *= 2;
    }
    uint8_t *data = ns_realloc(b->data, cap);
    if (data == NULL) {
        return b->err = NS_ENOMEM;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

int ns_buf_append(struct ns_buf *b, const void *p, size_t n)
{
    int rv = ns_buf_reserve(b, n);
    if (rv != 0) {
        return rv;
    }
    if (n > 0) {
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
    return 0;
}

int ns_buf_append_str(struct ns_buf *b, const char *s)
{
    return ns_buf_append(b, s, strlen(s));
}

int ns_buf_printf(struct ns_buf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return b->err ? b->err : (b->err = NS_EINVAL);
    }
    if ((size_t)n < sizeof small) {
        return ns_buf_append(b, small, (size_t)n);
    }
    int rv = ns_buf_reserve(b, (size_t)n + 1);
    if (rv != 0) {
        return rv;
    }
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int ns_buf_put_u8(struct ns_buf *b, uint8_t v)
{
    return ns_buf_append(b, &v, 1);
}

int ns_buf_put_u16(struct ns_buf *b, uint16_t v)
{
    uint8_t be[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    return ns_buf_append(b, be, sizeof be);
}

int ns_buf_put_u32(struct ns_buf *b, uint32_t v)
{
    uint8_t be[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                     (uint8_t)v};
    return ns_buf_append(b, be, sizeof be);
}

int ns_buf_put_u64(struct ns_buf *b, uint64_t v)
{
    ns_buf_put_u32(b, (uint32_t)(v >> 32));
    return ns_buf_put_u32(b, (uint32_t)v);
}

int ns_buf_put_str(struct ns_buf *b, const char *s)
{
    if (s == NULL) {
        return ns_buf_put_u32(b, UINT32_MAX);
    }
    size_t n = strlen(s);
    if (n >= UINT32_MAX) {
        return b->err ? b->err : (b->err = NS_ETOOBIG);
    }
    ns_buf_put_u32(b, (uint32_t)n);
    return ns_buf_append(b, s, n);
}

void ns_buf_patch_u32(struct ns_buf *b, size_t off, uint32_t v)
{
    if (b->err || off + 4 > b->len) {
        return;
    }
    b->data[off] = (uint8_t)(v >> 24);
    b->data[off + 1] = (uint8_t)(v >> 16);
    b->data[off + 2] = (uint8_t)(v >> 8);
    b->data[off + 3] = (uint8_t)v;
}

uint8_t *ns_buf_take(struct ns_buf *b, size_t *len)
{
    uint8_t *data = b->data;
    *len = b->len;
    ns_buf_init(b);
    return data;
}
