/* struct ns_rcbuf: reference counting over a taken ns_buf. Pure: memory
 * only, no locking (everything runs on the loop thread). */
#include "raftns/rcbuf.h"

#include <assert.h>

#include "raftns/alloc.h"

struct ns_rcbuf *ns_rcbuf_take(struct ns_buf *b)
{
    struct ns_rcbuf *rc;

    if (b->err != 0) {
        return NULL;
    }
    rc = ns_malloc(sizeof(*rc));
    if (rc == NULL) {
        return NULL;
    }
    rc->data = ns_buf_take(b, &rc->len);
    rc->refs = 1;
    return rc;
}

struct ns_rcbuf *ns_rcbuf_ref(struct ns_rcbuf *rc)
{
    assert(rc->refs > 0);
    rc->refs++;
    return rc;
}

void ns_rcbuf_unref(struct ns_rcbuf *rc)
{
    if (rc == NULL) {
        return;
    }
    assert(rc->refs > 0);
    if (--rc->refs == 0) {
        ns_free(rc->data);
        ns_free(rc);
    }
}
