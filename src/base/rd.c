/* struct ns_rd, the bounds-checked reader of raftns/buf.h. Pure: memory only.
 */
#include "raftns/buf.h"

#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

void ns_rd_init(struct ns_rd *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->off = 0;
    r->err = 0;
}

size_t ns_rd_left(const struct ns_rd *r)
{
    return r->err ? 0 : r->len - r->off;
}

const uint8_t *ns_rd_bytes(struct ns_rd *r, size_t n)
{
    if (r->err || n > r->len - r->off) {
        r->err = NS_EPROTO;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

uint8_t ns_rd_u8(struct ns_rd *r)
{
    const uint8_t *p = ns_rd_bytes(r, 1);
    return p ? p[0] : 0;
}

uint16_t ns_rd_u16(struct ns_rd *r)
{
    const uint8_t *p = ns_rd_bytes(r, 2);
    return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

uint32_t ns_rd_u32(struct ns_rd *r)
{
    const uint8_t *p = ns_rd_bytes(r, 4);
    return p ? ns_load_u32(p) : 0;
}

uint64_t ns_rd_u64(struct ns_rd *r)
{
    uint64_t hi = ns_rd_u32(r);
    return hi << 32 | ns_rd_u32(r);
}

int ns_rd_str(struct ns_rd *r, char **out)
{
    *out = NULL;
    uint32_t n = ns_rd_u32(r);
    if (r->err) {
        return r->err;
    }
    if (n == UINT32_MAX) {
        return 0;
    }
    const uint8_t *p = ns_rd_bytes(r, n);
    if (p == NULL) {
        return r->err;
    }
    *out = ns_strndup((const char *)p, n);
    return *out ? 0 : NS_ENOMEM;
}
