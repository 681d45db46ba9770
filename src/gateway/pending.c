/* Pending replies (gateway_int.h): a request answered later keeps its reply
 * target here, attached to its connection so that a close detaches it. */
#include "raftns/alloc.h"
#include "gateway/gateway_int.h"

static void detach(struct ns_pending *p)
{
    struct ns_conn *c = p->to.conn;
    if (c == NULL) {
        return;
    }
    if (p->prev != NULL) {
        p->prev->next = p->next;
    } else {
        c->pending = p->next;
    }
    if (p->next != NULL) {
        p->next->prev = p->prev;
    }
    p->prev = p->next = NULL;
    p->to.conn = NULL;
    c->n_inflight--;
}

void ns_pending_detach_all(struct ns_conn *c)
{
    while (c->pending != NULL) {
        detach(c->pending);
    }
}

struct ns_pending *ns_pending_new(struct ns_req *req, ns_pending_done done)
{
    struct ns_pending *p = ns_calloc(1, sizeof *p);
    if (p == NULL) {
        return NULL;
    }
    p->gw = req->gw;
    p->to = req->to;
    p->done = done;
    /* Attach to the connection so its close detaches the reply target. */
    struct ns_conn *conn = p->to.conn;
    if (conn != NULL) {
        p->next = conn->pending;
        if (p->next != NULL) {
            p->next->prev = p;
        }
        conn->pending = p;
        conn->n_inflight++;
        ns_conn_update_flow(conn);
    }
    return p;
}

void ns_pending_finish(struct ns_pending *p, int status, uint64_t index,
                       const struct ns_apply_result *res)
{
    struct ns_conn *c = p->to.conn;
    p->index = index;
    p->done(p, status, res);
    detach(p);
    if (c != NULL) {
        ns_conn_update_flow(c);
    }
    ns_free(p->data);
    ns_free(p);
}

void ns_pending_drop(struct ns_pending *p)
{
    detach(p);
    ns_free(p->data);
    ns_free(p);
}
