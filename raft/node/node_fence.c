/* A leader whose own disk write failed stops leading its term
 * (docs/raft-0.15.md §20). libraft 0.15 truncates such a leader's log from the
 * failed write and goes on leading the same term (src/replication.c,
 * appendLeaderCb; upstream gave leadership up only in 0cac59c, v0.16): its next
 * entries take the indexes of the lost ones, in the same term, while followers
 * may already hold the lost ones there, and a follower keeps an entry whose
 * index and term match what the leader sends, so followers and leader apply
 * different commands at those indexes. And the followers' next indexes, moved
 * past the lost entries when they were sent, now lie beyond the leader's log,
 * which trips raft's own check (progressShouldReplicate) at the next heartbeat.
 * Fenced, the node counts as leader no more (its proposals wait for a leader,
 * its reads are refused), its followers' next indexes are brought back inside
 * its log, and it sends no AppendEntries, snapshot or TimeoutNow in that
 * term: the followers elect a leader from their own logs, and this node
 * follows it. */
#include "raftns/log.h"

#include "node_int.h"

static raft_index last_log_index(const struct raft *r)
{
    return node_raft_last_index(&r->log);
}

void node_fence(struct ns_node *n, const char *why)
{
    struct raft *r = n->raft;
    if (raft_state(r) != RAFT_LEADER || n->fenced_term == r->current_term) {
        return;
    }
#ifdef RAFTNS_BREAK_LEAD_AFTER_DISK_FAILURE
    (void)why;
    return; /* TEST-ONLY MUTANT: lead on, as raft 0.15 does */
#endif
    n->fenced_term = r->current_term;
    n->leader_term = 0; /* ns_node_is_leader: false for the rest of the term */
    n->fences++;
    raft_index last = last_log_index(r);
    for (unsigned i = 0;
         r->leader_state.progress != NULL && i < r->configuration.n; i++) {
        struct raft_progress *p = &r->leader_state.progress[i];
        if (p->next_index > last + 1) {
            p->next_index = last + 1;
        }
    }
    NS_LOG(NS_LOG_ERROR,
           "node: %s in term %llu: this leader stops leading it (libraft "
           "0.15 would give the lost entries' indexes to new ones)",
           why, (unsigned long long)r->current_term);
}

static int fence_send(struct raft_io *io, struct raft_io_send *req,
                      const struct raft_message *message, raft_io_send_cb cb)
{
    struct raft *r = io->data;
    struct ns_node *n = r->data;
    bool fenced =
        raft_state(r) == RAFT_LEADER && n->fenced_term == r->current_term;
    if (fenced && (message->type == RAFT_IO_APPEND_ENTRIES ||
                   message->type == RAFT_IO_INSTALL_SNAPSHOT ||
                   message->type == RAFT_IO_TIMEOUT_NOW)) {
        return RAFT_NOCONNECTION; /* raft frees what it made for the send */
    }
    return n->raft_io_send(io, req, message, cb);
}

void node_fence_wrap(struct ns_node *n)
{
    struct raft_io *io = n->raft->io;
    n->raft_io_send = io->send;
    io->send = fence_send;
}

uint64_t ns_node_fences(const struct ns_node *n)
{
    return n->fences;
}
