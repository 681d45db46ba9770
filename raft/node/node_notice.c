/* Commit notices: a leader tells one follower that an entry committed as soon
 * as that follower has stored it, with the heartbeat raft would send it next,
 * sent early through raft's own io, instead of leaving it to the timer. A write
 * a follower forwarded is answered there only once the follower applied it, so
 * without this every such write waits up to a heartbeat interval
 * (docs/raft-0.15.md §14). It decides nothing about commitment itself: the
 * notice carries this leader's commit index, and the follower's raft checks it
 * like any heartbeat. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

#include "node_int.h"

/* A notice not sent within this many heartbeat intervals is dropped: raft's
 * own heartbeats have carried the commit index by then. */
#define NOTICE_HEARTBEATS 4

static void notice_sent(struct raft_io_send *req, int status)
{
    (void)status; /* a lost notice costs only the wait for a heartbeat */
    ns_free(req);
}

/* Sends member i the empty AppendEntries whose previous entry is (prev, its
 * term) and whose leader commit is commit. */
static bool send_notice(struct ns_node *n, unsigned i, raft_index prev,
                        raft_index commit)
{
    struct raft *r = n->raft;
    raft_term term = node_raft_term_of(&r->log, prev);
    if (term == 0) {
        return false;
    }
    struct raft_io_send *req = ns_malloc(sizeof *req);
    if (req == NULL) {
        return false;
    }
    struct raft_message m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_IO_APPEND_ENTRIES;
    m.server_id = r->configuration.servers[i].id;
    m.server_address = r->configuration.servers[i].address;
    m.append_entries.term = r->current_term;
    m.append_entries.prev_log_index = prev;
    m.append_entries.prev_log_term = term;
    m.append_entries.leader_commit = commit;
    m.append_entries.entries = NULL;
    m.append_entries.n_entries = 0;
    req->data = NULL;
    if (r->io->send(r->io, req, &m, notice_sent) != 0) {
        ns_free(req);
        return false;
    }
    return true;
}

/* The notice owed to member i, if one may go now: the commit index it carries
 * (0: not now). It is the heartbeat libraft itself would send to i at this
 * moment (src/replication.c's replicationProgress in pipeline mode with
 * nothing left to send: previous entry next_index - 1, leader commit the
 * commit index), so i checks it, and the leader handles i's answer, exactly
 * as for raft's own heartbeat. Only while every entry went to i (the messages
 * to i keep their order, so i holds them by the time the notice arrives, or
 * rejects it as it would that heartbeat) and the log ends with an entry of
 * the current term: i's answer counts every entry it stored, and one that
 * holds an entry of this term at the previous index holds nothing past it but
 * this leader's entries (docs/raft-0.15.md §14). Waiting for i to acknowledge
 * the whole log as well kept notices from going under a steady write load. */
static raft_index notice_due(const struct raft *r, unsigned i)
{
    const struct raft_progress *p = &r->leader_state.progress[i];
    raft_index last = node_raft_last_index(&r->log);
    if (p->state != NODE_PROGRESS_PIPELINE || p->next_index != last + 1 ||
        node_raft_term_of(&r->log, last) != r->current_term) {
        return 0;
    }
    return r->commit_index;
}

static int member_slot(const struct raft *r, uint64_t id)
{
    for (unsigned i = 0; i < r->configuration.n; i++) {
        if (r->configuration.servers[i].id == id) {
            return (int)i;
        }
    }
    return -1;
}

int ns_node_notify_commit(struct ns_node *n, uint64_t member_id, uint64_t index)
{
    struct raft *r = n->raft;
    if (!n->started || n->stopping || raft_state(r) != RAFT_LEADER) {
        return NS_ENOTLEADER;
    }
    if (member_id == n->id || member_id == 0 || index == 0) {
        return 0;
    }
    if (n->notice_term != r->current_term) {
        n->n_notices = 0;
        n->notice_term = r->current_term;
    }
    uint64_t deadline = ns_clock_now(&n->clock) +
                        (uint64_t)NOTICE_HEARTBEATS * r->heartbeat_timeout;
    for (unsigned k = 0; k < n->n_notices; k++) {
        struct node_notice *t = &n->notices[k];
        if (t->id == member_id) {
            t->lo = index < t->lo ? index : t->lo;
            t->hi = index > t->hi ? index : t->hi;
            t->deadline = deadline;
            return 0;
        }
    }
    if (n->n_notices == NODE_MAX_NOTICES) {
        return 0; /* the heartbeat will do */
    }
    struct node_notice *t = &n->notices[n->n_notices++];
    t->id = member_id;
    t->lo = index;
    t->hi = index;
    t->early = 0;
    t->deadline = deadline;
    return 0;
}

/* Sends member i the notice t is owed now, if any; whether t is done. A
 * notice makes i apply only what it stored by the time it arrives, and i's
 * later disk write does not look at it again (raft 0.15 applies with the
 * commit index its AppendEntries carried). So t is done with a notice sent
 * once i acknowledged every write's entry; before that, notices go only as
 * the commit index moves: they spare a wait under load, where i's
 * acknowledgements trail the leader's log (docs/raft-0.15.md §14). The
 * writes up to what i had acknowledged when one went are done. */
static bool notify(struct ns_node *n, unsigned i, struct node_notice *t)
{
    struct raft *r = n->raft;
    raft_index c = notice_due(r, i);
    raft_index last = node_raft_last_index(&r->log);
    raft_index match = r->leader_state.progress[i].match_index;
    if (c >= t->hi && match >= t->hi) {
        return send_notice(n, i, last, c);
    }
#ifdef RAFTNS_BREAK_NOTICE_ACKED
    return false; /* TEST-ONLY MUTANT: no notice before i acknowledged */
#endif
    if (c >= t->lo && c > t->early && send_notice(n, i, last, c)) {
        t->early = c;
        /* the writes i had acknowledged are applied with this one */
        raft_index applied = c < match ? c : match;
        t->lo = applied >= t->lo ? applied + 1 : t->lo;
    }
    return t->lo > t->hi;
}

void node_notice_flush(struct ns_node *n)
{
    struct raft *r = n->raft;
    if (n->n_notices == 0) {
        return;
    }
    if (raft_state(r) != RAFT_LEADER || n->notice_term != r->current_term) {
        n->n_notices = 0;
        return;
    }
    uint64_t now = ns_clock_now(&n->clock);
    unsigned k = 0;
    while (k < n->n_notices) {
        struct node_notice *t = &n->notices[k];
        int i = member_slot(r, t->id);
        bool done = i < 0 || now >= t->deadline;
        if (!done) {
            done = notify(n, (unsigned)i, t);
        }
        if (done) {
            n->notices[k] = n->notices[--n->n_notices];
        } else {
            k++;
        }
    }
}
