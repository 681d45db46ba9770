/* Proposals: a write handed to raft once this node is a leader whose barrier
 * applied, queued until then (or until its deadline), and answered with its
 * entry's FSM result (node_fsm.c fills it) when raft calls back. */
#include <raft.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/waits.h"

#include "node_int.h"

int node_map_raft_status(int status)
{
    switch (status) {
    case 0:
        return 0;
    case RAFT_NOMEM:
        return NS_ENOMEM;
    case RAFT_LEADERSHIPLOST:
    case RAFT_NOTLEADER:
        return NS_ENOTLEADER;
    case RAFT_SHUTDOWN:
        return NS_ESHUTDOWN;
    default:
        return NS_EIO;
    }
}

static void link_inflight(struct ns_node *n, struct proposal *p)
{
    p->in_prev = NULL;
    p->in_next = n->inflight;
    if (p->in_next != NULL) {
        p->in_next->in_prev = p;
    }
    n->inflight = p;
}

static void unlink_inflight(struct ns_node *n, struct proposal *p)
{
    if (p->in_prev != NULL) {
        p->in_prev->in_next = p->in_next;
    } else {
        n->inflight = p->in_next;
    }
    if (p->in_next != NULL) {
        p->in_next->in_prev = p->in_prev;
    }
    p->in_next = p->in_prev = NULL;
}

static void apply_cb(struct raft_apply *req, int status, void *result)
{
    (void)result; /* the result is in the proposal (the FSM adapter) */
    struct proposal *p = req->data;
    struct ns_node *n = p->node;
    unlink_inflight(n, p);
    int st = node_map_raft_status(status);
    if (status == 0 && !p->out.filled) {
        st = NS_EPROTO; /* the entry did not decode: the node diverged */
    }
    const struct ns_apply_result *res = st == 0 ? &p->out.res : NULL;
    if (p->index_cb != NULL) {
        p->index_cb(p->arg, st, st == 0 ? req->index : 0, res);
    } else {
        p->cb(p->arg, st, res);
    }
    if (p->out.filled) {
        ns_fsm_result_close(&p->out.res);
    }
    ns_free(p);
}

/* Hands p to raft. Returns 0 (p is in flight), or RAFT_NOTLEADER (p still
 * ours, buffer kept), or another raft error (p still ours). */
static int submit(struct ns_node *n, struct proposal *p)
{
    p->req.data = p;
    link_inflight(n, p); /* before raft_apply: apply_cb unlinks it */
    int rv = raft_apply(n->raft, &p->req, &p->buf, 1, apply_cb);
    if (rv != 0) {
        unlink_inflight(n, p);
    }
    return rv;
}

static void fail_proposal(struct proposal *p, int status)
{
    raft_free(p->buf.base);
    if (p->index_cb != NULL) {
        p->index_cb(p->arg, status, 0, NULL);
    } else {
        p->cb(p->arg, status, NULL);
    }
    ns_free(p);
}

/* A queued proposal's turn in the node's wait list (docs/waits.md): handed to
 * raft once this node is a leader whose barrier applied, failed at stop or
 * once its deadline passed, otherwise it waits again. The list runs oldest
 * first, so proposals reach raft in the order they were made. */
static void proposal_retry(void *data)
{
    struct proposal *p = data;
    struct ns_node *n = p->node;
    if (n->stopping) {
        fail_proposal(p, NS_ESHUTDOWN);
        return;
    }
    if (ns_node_is_leader(n)) {
        int rv = submit(n, p);
        if (rv == 0) {
            return;
        }
        if (rv != RAFT_NOTLEADER) {
            fail_proposal(p, node_map_raft_status(rv));
            return;
        }
    }
    if (p->deadline <= node_now(n)) {
        fail_proposal(p, NS_ETIMEDOUT);
        return;
    }
    ns_wait_list_add(&n->proposals, &p->wait);
}

void node_flush_queue(struct ns_node *n)
{
    if (ns_node_is_leader(n)) {
        ns_wait_list_run(&n->proposals);
    }
}

static int propose(struct ns_node *n, const uint8_t *bytes, size_t len,
                   ns_node_apply_cb cb, ns_node_index_cb index_cb, void *arg)
{
    if (n->stopping) {
        return NS_ESHUTDOWN;
    }
    struct proposal *p = ns_calloc(1, sizeof *p);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    if (ns_fsm_adapter_entry_encode(bytes, len, &p->buf) != 0) {
        ns_free(p);
        return NS_ENOMEM;
    }
    p->node = n;
    p->cb = cb;
    p->index_cb = index_cb;
    p->arg = arg;
    p->deadline = node_now(n) + n->write_wait_ms;
    p->wait.retry = proposal_retry;
    p->wait.data = p;
    if (ns_node_is_leader(n) && ns_wait_list_is_empty(&n->proposals)) {
        int rv = submit(n, p);
        if (rv == 0) {
            return 0;
        }
        if (rv != RAFT_NOTLEADER) {
            raft_free(p->buf.base);
            ns_free(p);
            return node_map_raft_status(rv) == NS_ENOMEM ? NS_ENOMEM
                                                         : NS_ESHUTDOWN;
        }
    }
    ns_wait_list_add(&n->proposals, &p->wait);
    return 0;
}

int ns_node_propose(struct ns_node *n, const uint8_t *bytes, size_t len,
                    ns_node_apply_cb cb, void *arg)
{
    return propose(n, bytes, len, cb, NULL, arg);
}

int ns_node_propose_indexed(struct ns_node *n, const uint8_t *bytes, size_t len,
                            ns_node_index_cb cb, void *arg)
{
    return propose(n, bytes, len, NULL, cb, arg);
}

