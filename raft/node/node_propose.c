/* Proposals: a write is queued for the end of the loop turn, and the turn's
 * writes go to raft together, as one batch (struct node_batch), once this
 * node is a leader whose barrier applied; they wait in the node's wait list
 * until then (or until their deadline). Each is answered with its entry's FSM
 * result (node_fsm.c fills it) when raft calls its batch back. */
#include <stdbool.h>
#include <string.h>

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

static void link_batch(struct ns_node *n, struct node_batch *b)
{
    b->prev = NULL;
    b->next = n->inflight;
    if (b->next != NULL) {
        b->next->prev = b;
    }
    n->inflight = b;
}

static void unlink_batch(struct ns_node *n, struct node_batch *b)
{
    if (b->prev != NULL) {
        b->prev->next = b->next;
    } else {
        n->inflight = b->next;
    }
    if (b->next != NULL) {
        b->next->prev = b->prev;
    }
    b->next = b->prev = NULL;
}

static void call_back(struct proposal *p, int status, uint64_t index,
                      const struct ns_apply_result *res)
{
    if (p->index_cb != NULL) {
        p->index_cb(p->arg, status, status == 0 ? index : 0, res);
    } else {
        p->cb(p->arg, status, res);
    }
}

/* Answers p, whose buffer raft owns, and frees it: an entry that applied is
 * answered with its result whatever raft says of the batch. */
static void answer(struct proposal *p, int failed)
{
    int st = p->out.filled ? 0 : failed != 0 ? failed : NS_EPROTO;
    /* NS_EPROTO: the entry applied without filling the slot (it did not
     * decode, or lay inside an installed state) */
    call_back(p, st, p->index, st == 0 ? &p->out.res : NULL);
    if (p->out.filled) {
        ns_fsm_result_close(&p->out.res);
    }
    ns_free(p);
}

static void batch_cb(struct raft_apply *req, int status, void *result)
{
    (void)result; /* the results are in the proposals (the FSM adapter) */
    struct node_batch *b = req->data;
    struct ns_node *n = b->node;
    unlink_batch(n, b);
    if (node_disk_failed(status) && raft_state(n->raft) == RAFT_LEADER &&
        b->term == n->raft->current_term) {
        node_fence(n, "a disk write of this leader failed");
    }
    int failed = node_map_raft_status(status);
    for (unsigned i = 0; i < b->n; i++) {
        if (b->p[i] != NULL) {
            answer(b->p[i], failed);
        }
    }
    ns_free(b);
}

struct ns_fsm_adapter_result *node_find_result(struct ns_node *n,
                                               uint64_t index)
{
    for (struct node_batch *b = n->inflight; b != NULL; b = b->next) {
        if (!b->orphaned && index >= b->first && index - b->first < b->n) {
            struct proposal *p = b->p[index - b->first];
            /* the same index and term: the same entry (log matching) */
            bool ours =
                p != NULL && node_raft_term_of(&n->raft->log, index) == b->term;
            return ours ? &p->out : NULL;
        }
    }
    return NULL;
}

/* A leader's failed disk write makes raft 0.15 truncate its log from the
 * write's first entry and call back only a request at that index: a batch
 * whose last entry went is never called back by index, and would be matched
 * to a later entry at that index of the same term. */
static void orphan_lost_batches(struct ns_node *n)
{
    struct raft *r = n->raft;
    if (raft_state(r) != RAFT_LEADER) {
        return; /* raft calls every batch back when a leader steps down */
    }
    for (struct node_batch *b = n->inflight; b != NULL; b = b->next) {
        uint64_t last = b->first + b->n - 1;
        if (b->orphaned || b->term != r->current_term ||
            last <= raft_last_applied(r) ||
            node_raft_term_of(&r->log, last) == b->term) {
            continue;
        }
        b->orphaned = true;
        b->req.index = 0;
        node_fence(n, "entries of this leader left its log (a failed disk "
                      "write)");
        for (unsigned i = 0; i < b->n; i++) {
            if (b->p[i] != NULL) {
                answer(b->p[i], NS_EIO);
                b->p[i] = NULL;
            }
        }
    }
}

static void fail_proposal(struct proposal *p, int status)
{
    raft_free(p->buf.base);
    call_back(p, status, 0, NULL);
    ns_free(p);
}

static struct proposal *turn_pop(struct ns_node *n)
{
    struct proposal *p = n->turn_head;
    n->turn_head = p->turn_next;
    if (n->turn_head == NULL) {
        n->turn_tail = NULL;
    }
    p->turn_next = NULL;
    return p;
}

/* Nothing to do: an active idle handle only makes the loop poll without
 * blocking, so that the check handle hands the turn to raft. */
static void kick_cb(uv_idle_t *h)
{
    (void)h;
}

static void turn_push(struct ns_node *n, struct proposal *p)
{
    p->turn_next = NULL;
    if (n->turn_tail != NULL) {
        n->turn_tail->turn_next = p;
    } else {
        n->turn_head = p;
        if (!n->driven) {
            uv_idle_start(&n->kick, kick_cb);
        }
    }
    n->turn_tail = p;
}

void node_fail_turn(struct ns_node *n, int status)
{
    while (n->turn_head != NULL) {
        fail_proposal(turn_pop(n), status);
    }
}

/* How many proposals at the head of the turn go in one batch: up to
 * NODE_BATCH_MAX, within NODE_BATCH_BYTES, at least one. */
static unsigned batch_size(const struct ns_node *n,
                           struct raft_buffer bufs[NODE_BATCH_MAX])
{
    unsigned k = 0;
    size_t bytes = 0;
    for (const struct proposal *p = n->turn_head;
         p != NULL && k < NODE_BATCH_MAX &&
         (k == 0 || bytes + p->buf.len <= NODE_BATCH_BYTES);
         p = p->turn_next) {
        bufs[k++] = p->buf;
        bytes += p->buf.len;
    }
    return k;
}

/* Hands the next batch of the turn to raft. On an error other than
 * RAFT_NOTLEADER (the turn waits for a leader again) the batch's proposals
 * fail. */
static int submit_batch(struct ns_node *n)
{
    struct raft_buffer bufs[NODE_BATCH_MAX];
    unsigned k = batch_size(n, bufs);
    struct node_batch *b = ns_malloc(sizeof *b + k * sizeof b->p[0]);
    int rv = RAFT_NOMEM;
    if (b != NULL) {
        memset(b, 0, sizeof *b);
        b->node = n;
        b->n = k;
        b->term = n->raft->current_term;
        b->req.data = b;
        /* raft applies nothing before its append completes (asynchronously),
         * so the batch is linked in time for its entries' results */
        rv = raft_apply(n->raft, &b->req, bufs, k, batch_cb);
    }
    if (rv != 0) {
        ns_free(b);
        for (unsigned i = 0; rv != RAFT_NOTLEADER && i < k; i++) {
            fail_proposal(turn_pop(n), node_map_raft_status(rv));
        }
        return rv;
    }
    b->first = b->req.index;
#ifndef RAFTNS_BREAK_BATCH_FIRST_ENTRY
    b->req.index = b->first + k - 1;
#endif /* else TEST-ONLY MUTANT: called back at the first entry */
    for (unsigned i = 0; i < k; i++) {
        b->p[i] = turn_pop(n);
        b->p[i]->index = b->first + i;
    }
    link_batch(n, b);
    n->batches++;
    n->batched_entries += k;
    return 0;
}

/* A queued proposal's turn in the node's wait list (docs/waits.md): joins
 * this turn's batch once this node is a leader whose barrier applied, fails
 * at stop or once its deadline passed, otherwise it waits again. The list
 * runs oldest first, so proposals reach raft in the order they were made. */
static void proposal_retry(void *data)
{
    struct proposal *p = data;
    struct ns_node *n = p->node;
    if (n->stopping) {
        fail_proposal(p, NS_ESHUTDOWN);
        return;
    }
    if (ns_node_is_leader(n)) {
        turn_push(n, p);
        return;
    }
    if (p->deadline <= node_now(n)) {
        fail_proposal(p, NS_ETIMEDOUT);
        return;
    }
    ns_wait_list_add(&n->proposals, &p->wait);
}

/* The turn's proposals wait for a leader again, before any younger one (the
 * wait list is empty while a turn is queued: propose). */
static void requeue_turn(struct ns_node *n)
{
    while (n->turn_head != NULL) {
        struct proposal *p = turn_pop(n);
        ns_wait_list_add(&n->proposals, &p->wait);
    }
}

void node_flush_queue(struct ns_node *n)
{
    orphan_lost_batches(n);
    if (ns_node_is_leader(n)) {
        ns_wait_list_run(&n->proposals);
    }
    while (n->turn_head != NULL) {
        if (!ns_node_is_leader(n) || submit_batch(n) == RAFT_NOTLEADER) {
            requeue_turn(n);
        }
    }
    if (!n->driven) {
        uv_idle_stop(&n->kick);
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
    /* Behind an older queued proposal it waits in the same list; a leader
     * hands the turn's proposals to raft at the end of the turn. */
    if (n->turn_head != NULL ||
        (ns_node_is_leader(n) && ns_wait_list_is_empty(&n->proposals))) {
        turn_push(n, p);
    } else {
        ns_wait_list_add(&n->proposals, &p->wait);
    }
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

void ns_node_batch_stats(const struct ns_node *n, uint64_t *batches,
                         uint64_t *entries)
{
    *batches = n->batches;
    *entries = n->batched_entries;
}
