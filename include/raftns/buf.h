/* Growable byte buffer with a sticky out-of-memory flag (writers check once at
 * the end), and a bounds-checked big-endian reader. No I/O. */
#ifndef RAFTNS_BUF_H
#define RAFTNS_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ns_buf {
    uint8_t *data; /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    int err; /* 0, or the first NS_E* an append hit; appends after an error do
                nothing */
};

void ns_buf_init(struct ns_buf *b);
/* Frees the data; the buffer may be initialised again. */
void ns_buf_close(struct ns_buf *b);
/* Forgets the contents (and the error), keeps the memory. */
void ns_buf_reset(struct ns_buf *b);
int ns_buf_reserve(struct ns_buf *b, size_t extra);
int ns_buf_append(struct ns_buf *b, const void *p, size_t n);
int ns_buf_append_str(struct ns_buf *b, const char *s);
int ns_buf_printf(struct ns_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ns_buf_put_u8(struct ns_buf *b, uint8_t v);
int ns_buf_put_u16(struct ns_buf *b, uint16_t v);
int ns_buf_put_u32(struct ns_buf *b, uint32_t v);
int ns_buf_put_u64(struct ns_buf *b, uint64_t v);
/* u32 length then the bytes; NULL s is written as length 0xFFFFFFFF. */
int ns_buf_put_str(struct ns_buf *b, const char *s);
/* Overwrites 4 bytes at off (which must be inside len) with v, big-endian. */
void ns_buf_patch_u32(struct ns_buf *b, size_t off, uint32_t v);
/* Hands the data to the caller (who frees it with ns_free) and re-initialises
 * b. */
uint8_t *ns_buf_take(struct ns_buf *b, size_t *len);

/* Bounds-checked reader over borrowed bytes; the first overrun sets err =
 * NS_EPROTO and every later get returns 0 / NULL. */
struct ns_rd {
    const uint8_t *p;
    size_t len;
    size_t off;
    int err;
};

void ns_rd_init(struct ns_rd *r, const void *p, size_t len);
uint8_t ns_rd_u8(struct ns_rd *r);
uint16_t ns_rd_u16(struct ns_rd *r);
uint32_t ns_rd_u32(struct ns_rd *r);
uint64_t ns_rd_u64(struct ns_rd *r);
/* Borrowed pointer to the next n bytes, or NULL (and err) when fewer remain. */
const uint8_t *ns_rd_bytes(struct ns_rd *r, size_t n);
/* Reads what ns_buf_put_str wrote. *out is an owned copy (NULL for a NULL
 * string). Returns 0, NS_EPROTO or NS_ENOMEM. */
int ns_rd_str(struct ns_rd *r, char **out);
size_t ns_rd_left(const struct ns_rd *r);

static inline uint32_t ns_load_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

#endif
