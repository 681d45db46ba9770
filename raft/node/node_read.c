/* Reads and waits of the raft node: callers waiting for the local applied
 * index, barriers (the leader barrier of docs/raft-0.15.md §1 and client
 * barriers), and read indexes for readiness and consistent reads. */
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"

/* --- waiting for the local applied index --- */

int ns_node_wait_applied(struct ns_node *n, uint64_t index, uint64_t timeout_ms,
                         ns_node_barrier_cb cb, void *arg)
{
    if (n->stopping) {
        return NS_ESHUTDOWN;
    }
    struct waiter *w = ns_calloc(1, sizeof *w);
    if (w == NULL) {
        return NS_ENOMEM;
    }
    w->index = index;
    w->deadline = node_now(n) + timeout_ms;
    w->cb = cb;
    w->arg = arg;
    w->next = n->waiters;
    n->waiters = w;
    return 0;
}

/* Fires waiters whose index was reached (status 0), or whose deadline passed
 * (NS_ETIMEDOUT), or all of them with status when all is true. */
void node_run_waiters(struct ns_node *n, bool all, int status)
{
    uint64_t applied = raft_last_applied(n->raft);
    uint64_t now = node_now(n);
    struct waiter *ready = NULL;
    struct waiter **pp = &n->waiters;
    while (*pp != NULL) {
        struct waiter *w = *pp;
        int st = 1;
        if (all) {
            st = status;
        } else if (w->index <= applied) {
            st = 0;
        } else if (w->deadline <= now) {
            st = NS_ETIMEDOUT;
        }
        if (st == 1) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        w->index = (uint64_t)(int64_t)st;
        w->next = ready;
        ready = w;
    }
    while (ready != NULL) {
        struct waiter *w = ready;
        ready = w->next;
        w->cb(w->arg, (int)(int64_t)w->index);
        ns_free(w);
    }
}

/* --- barriers --- */

static void barrier_cb(struct raft_barrier *req, int status)
{
    struct barrier_req *b = req->data;
    struct ns_node *n = b->node;
    if (b->cb != NULL) {
        b->cb(b->arg, node_map_raft_status(status));
    } else if (status == 0 && b->term == n->raft->current_term &&
               raft_state(n->raft) == RAFT_LEADER) {
        n->leader_term = b->term;
        NS_LOG(NS_LOG_INFO,
               "node: leader barrier applied (term %llu); accepting writes",
               (unsigned long long)b->term);
        node_flush_queue(n);
        if (n->watch_cb != NULL) {
            n->watch_cb(n->watch_arg);
        }
    } else if (status != 0) {
        NS_LOG(NS_LOG_WARN, "node: leader barrier failed: %s",
               raft_strerror(status));
        /* Its term would stay without a leader that takes writes. */
        if (node_disk_failed(status) && b->term == n->raft->current_term) {
            node_fence(n, "the leader barrier's disk write failed");
        }
    }
    ns_free(b);
}

int ns_node_barrier(struct ns_node *n, ns_node_barrier_cb cb, void *arg)
{
    if (n->stopping) {
        return NS_ESHUTDOWN;
    }
    struct barrier_req *b = ns_calloc(1, sizeof *b);
    if (b == NULL) {
        return NS_ENOMEM;
    }
    b->node = n;
    b->cb = cb;
    b->arg = arg;
    b->req.data = b;
    int rv = raft_barrier(n->raft, &b->req, barrier_cb);
    if (rv != 0) {
        ns_free(b);
        return node_map_raft_status(rv);
    }
    return 0;
}

static void read_barrier_cb(void *arg, int status)
{
    struct read_req *rr = arg;
    struct ns_node *n = rr->node;
    rr->cb(rr->arg, status, status == 0 ? raft_last_applied(n->raft) : 0);
    ns_free(rr);
}

int ns_node_read_index(struct ns_node *n, ns_node_index_read_cb cb, void *arg)
{
    if (!ns_node_is_leader(n)) {
        return NS_ENOTLEADER;
    }
    struct read_req *rr = ns_calloc(1, sizeof *rr);
    if (rr == NULL) {
        return NS_ENOMEM;
    }
    rr->node = n;
    rr->cb = cb;
    rr->arg = arg;
    int rv = ns_node_barrier(n, read_barrier_cb, rr);
    if (rv != 0) {
        ns_free(rr);
    }
    return rv;
}

void ns_node_set_ready_index(struct ns_node *n, uint64_t index)
{
    if (!n->ready_index_set || index > n->ready_index) {
        n->ready_index = index;
    }
    n->ready_index_set = true;
}

void node_issue_leader_barrier(struct ns_node *n)
{
    struct barrier_req *b = ns_calloc(1, sizeof *b);
    if (b == NULL) {
        NS_LOG(NS_LOG_ERROR, "node: out of memory for the leader barrier");
        return;
    }
    b->node = n;
    b->term = n->raft->current_term;
    b->req.data = b;
    int rv = raft_barrier(n->raft, &b->req, barrier_cb);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "node: leader barrier not issued: %s",
               raft_strerror(rv));
        ns_free(b);
        return;
    }
    n->barrier_term = b->term;
}
