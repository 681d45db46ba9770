/* The leader's commit index under a steady write load. libraft 0.15 checks a
 * quorum only at the leader's own last stored index (src/replication.c:
 * replicationQuorum(r, r->last_stored), after a follower's answer and after its
 * own disk write), so while writes keep arriving the followers' answers trail
 * that index and nothing commits until the load pauses; upstream fixed it in
 * 1996d32 (v0.16). This file runs in front of raft's receive callback: before
 * a follower's successful answer reaches raft, the commit index moves to the
 * highest index that a majority of voters (the leader counted at its stored
 * index) will then hold, never past the leader's own stored index, and only
 * within the leader's term once its barrier applied. raft's own handling of
 * the same answer then applies up to it. The argument is in
 * docs/raft-0.15.md §16. */
#include "node_int.h"

#define MAX_VOTERS 16

/* The need-th highest of the n indexes in match, i.e. the highest index that
 * at least need of them reach (sorts match in place, descending). */
static raft_index quorum_index(raft_index *match, unsigned n, unsigned need)
{
    for (unsigned i = 1; i < n; i++) {
        raft_index v = match[i];
        unsigned j = i;
        for (; j > 0 && match[j - 1] < v; j--) {
            match[j] = match[j - 1];
        }
        match[j] = v;
    }
    return match[need - 1];
}

uint64_t ns_node_commit_quorum(const struct raft *r, uint64_t from,
                               uint64_t reported)
{
    const struct raft_configuration *conf = &r->configuration;
    raft_index match[MAX_VOTERS];
    unsigned voters = 0;
    for (unsigned i = 0; i < conf->n; i++) {
        const struct raft_server *s = &conf->servers[i];
        if (s->role != RAFT_VOTER) {
            continue;
        }
        if (voters == MAX_VOTERS) {
            return 0;
        }
        raft_index m = r->leader_state.progress[i].match_index;
        if (s->id == r->id) {
            m = r->last_stored;
        } else if (s->id == from && reported > m) {
            m = reported;
        }
        match[voters++] = m;
    }
    if (voters == 0) {
        return 0;
    }
    raft_index q = quorum_index(match, voters, voters / 2 + 1);
    return q < r->last_stored ? q : r->last_stored;
}

/* Moves r's commit index for the answer m, which raft is about to handle. */
static void catch_up(struct ns_node *n, const struct raft_message *m)
{
#ifdef RAFTNS_BREAK_COMMIT_OWN_STORED
    return; /* raft 0.15's rule alone (mutant: scripts/mutants.sh) */
#endif
    struct raft *r = n->raft;
    const struct raft_append_entries_result *res = &m->append_entries_result;
    if (m->type != RAFT_IO_APPEND_ENTRIES_RESULT ||
        raft_state(r) != RAFT_LEADER || n->leader_term != r->current_term ||
        res->term != r->current_term || res->rejected != 0) {
        return;
    }
    /* Only answers in pipeline mode: a follower's first answers after a
     * probe may count entries of an older term it still holds past the
     * leader's entries (docs/raft-0.15.md §14), and raft itself moves it to
     * pipeline only once one was accepted. */
    const struct raft_configuration *conf = &r->configuration;
    unsigned slot = conf->n;
    for (unsigned i = 0; i < conf->n; i++) {
        if (conf->servers[i].id == m->server_id) {
            slot = i;
        }
    }
    if (slot == conf->n || m->server_id == r->id ||
        r->leader_state.progress[slot].state != NODE_PROGRESS_PIPELINE) {
        return;
    }
    raft_index last = node_raft_last_index(&r->log);
    raft_index reported =
        res->last_log_index < last ? res->last_log_index : last;
    raft_index q = ns_node_commit_quorum(r, m->server_id, reported);
    if (q > r->commit_index &&
        node_raft_term_of(&r->log, q) == r->current_term) {
        r->commit_index = q;
        n->commits_caught_up++;
    }
}

static void commit_recv(struct raft_io *io, struct raft_message *m)
{
    struct raft *r = io->data;
    struct ns_node *n = r->data;
    if (!n->raft_closed && r == n->raft) {
        if (node_append_guard(n, m) || node_install_hold(n, m)) {
            return;
        }
        catch_up(n, m);
    }
    n->raft_recv(io, m);
}

static int commit_start(struct raft_io *io, unsigned msecs,
                        raft_io_tick_cb tick, raft_io_recv_cb recv)
{
    struct raft *r = io->data;
    struct ns_node *n = r->data;
    n->raft_recv = recv;
    return n->raft_io_start(io, msecs, tick, commit_recv);
}

void node_commit_wrap(struct ns_node *n)
{
    struct raft_io *io = n->raft->io;
    n->raft->data = n;
    n->raft_io_start = io->start;
    io->start = commit_start;
}

uint64_t ns_node_commits_caught_up(const struct ns_node *n)
{
    return n->commits_caught_up;
}
