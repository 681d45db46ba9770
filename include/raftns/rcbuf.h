/* A reference-counted, immutable byte block: one encoded reply shared by the
 * route cache and every connection whose output still holds it, so a cached
 * reply is written many times without being copied. Single-threaded (the loop
 * thread); no I/O. */
#ifndef RAFTNS_RCBUF_H
#define RAFTNS_RCBUF_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

struct ns_rcbuf {
    uint8_t *data; /* owned; never changed after creation */
    size_t len;
    size_t refs; /* >= 1 while reachable */
};

/* A block holding b's bytes (taken: b is re-initialised) with one reference,
 * or NULL when out of memory or b has an error (b is then left as it was). */
struct ns_rcbuf *ns_rcbuf_take(struct ns_buf *b);
/* Adds a reference; returns rc (not NULL) for chaining. */
struct ns_rcbuf *ns_rcbuf_ref(struct ns_rcbuf *rc);
/* Drops a reference (NULL is a no-op); the last one frees the block. */
void ns_rcbuf_unref(struct ns_rcbuf *rc);

#endif
