/* Proposals from request handlers: encode a command, hand it to the node, and
 * keep the reply target until the local FSM applied it. Handlers decide what
 * the reply says. */
#include <time.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "cluster.h"
#include "server_int.h"

int64_t ns_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
    p->srv = req->srv;
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

static void applied_cb(void *arg, int status, uint64_t index,
                       const struct ns_apply_result *res)
{
    ns_pending_finish(arg, status, index, res);
}

static int propose_from(struct ns_req *req, const struct ns_command *c,
                        enum ns_submit_from from, ns_pending_done done,
                        struct ns_pending **out)
{
    struct ns_pending *p = ns_pending_new(req, done);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    /* answered once applied HERE */
    int rv = ns_cluster_submit(req->srv, c, from, applied_cb, p);
    if (rv != 0) {
        detach(p);
        ns_free(p);
        return rv;
    }
    if (out != NULL) {
        *out = p;
    }
    return 0;
}

int ns_propose(struct ns_req *req, const struct ns_command *c,
               ns_pending_done done, struct ns_pending **out)
{
    return propose_from(req, c, NS_SUBMIT_CLIENT, done, out);
}

static void internal_done(struct ns_pending *p, int status,
                          const struct ns_apply_result *res)
{
    (void)res;
    if (status != 0) {
        /* If it was an expiry, its brokers left the liveness table. */
        p->srv->live.reseed = true;
        NS_LOG(NS_LOG_WARN, "internal proposal failed: %s",
               ns_strerror(status));
    }
}

int ns_propose_internal(struct ns_server *srv, const struct ns_command *c)
{
    struct ns_req req = {.srv = srv};
    req.to.oneway = true;
    return propose_from(&req, c, NS_SUBMIT_LEADER, internal_done, NULL);
}

void ns_propose_simple_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res)
{
    (void)res;
    if (status != 0) {
        ns_reply_write_error(&p->to, status);
        return;
    }
    ns_reply_simple(&p->to, NS_CODE_SUCCESS, NULL);
}

int ns_propose_simple(struct ns_req *req, const struct ns_command *c)
{
    int rv = ns_propose(req, c, ns_propose_simple_done, NULL);
    if (rv == 0 || rv == NS_ENOMEM) {
        return rv;
    }
    return ns_reply_write_error(&req->to, rv);
}
