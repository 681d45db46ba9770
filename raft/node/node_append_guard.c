/* An AppendEntries that starts at index 1 (previous index 0) reaching a
 * follower whose log no longer holds index 1 (it took a snapshot since) is cut
 * or dropped here, before raft sees it. libraft 0.15 skips the log matching
 * check for a previous index of 0, appends the entries at the end of its
 * compacted log, then finds no entry at index 1 and returns RAFT_SHUTDOWN
 * (src/replication.c, replicationAppend: "No log entries found at index 1"):
 * the follower turns unavailable for good (docs/raft-0.15.md §19). When the
 * message holds the entry at the snapshot's last index with the snapshot's
 * term, the follower's snapshot matches the leader's log there, so the message
 * is cut to start after it: the AppendEntries the leader would send with that
 * previous entry, which raft checks and answers as usual. Otherwise it is
 * dropped, which is what any network may do. Dropping alone is not enough: a
 * leader that lost a follower's connection probes it from match index + 1,
 * which is 1 for a follower it has not heard from in its term; a follower
 * that took a snapshot when the leader did not (a snapshot threshold of its
 * own, or its own phase, raft/node/node_log.c) then only ever got messages
 * from index 1, never saw the leader's term, and stood as a candidate until
 * leadership moved (seen in the fault suite). */
#include <string.h>

#include "node_int.h"

/* As raft frees a received AppendEntries's entries: each distinct batch
 * buffer, then the array. */
static void free_entries(struct raft_entry *entries, unsigned n)
{
    void *batch = NULL;
    for (unsigned i = 0; i < n; i++) {
        if (entries[i].batch != batch) {
            batch = entries[i].batch;
            raft_free(batch);
        }
    }
    raft_free(entries);
}

/* Cuts a's first `skip` entries (indexes 1..skip) off: a heartbeat when
 * that is all of them. False when out of memory (a unchanged). Entries of
 * one received message share batches in order, so a batch that only the cut
 * entries use is freed here. */
static bool cut_front(struct raft_append_entries *a, unsigned skip)
{
    unsigned keep = a->n_entries - skip;
    a->prev_log_term = a->entries[skip - 1].term;
    a->prev_log_index = skip;
    if (keep == 0) { /* a heartbeat after the snapshot */
        free_entries(a->entries, a->n_entries);
        a->entries = NULL;
        a->n_entries = 0;
        return true;
    }
    struct raft_entry *kept = raft_malloc(keep * sizeof *kept);
    if (kept == NULL) {
        a->prev_log_index = 0;
        a->prev_log_term = 0;
        return false;
    }
    memcpy(kept, a->entries + skip, keep * sizeof *kept);
    void *freed = NULL;
    for (unsigned i = 0; i < skip; i++) {
        void *batch = a->entries[i].batch;
        if (batch != freed && batch != kept[0].batch) {
            raft_free(batch);
            freed = batch;
        }
    }
    raft_free(a->entries);
    a->entries = kept;
    a->n_entries = keep;
    return true;
}

bool node_append_guard(struct ns_node *n, struct raft_message *m)
{
    const struct raft *r = n->raft;
    struct raft_append_entries *a = &m->append_entries;
    raft_index snap = r->log.snapshot.last_index;
    if (m->type != RAFT_IO_APPEND_ENTRIES || a->prev_log_index != 0 ||
        a->n_entries == 0 || snap == 0 || node_raft_term_of(&r->log, 1) != 0) {
        return false;
    }
    bool holds_snapshot_entry =
        a->n_entries >= snap &&
        a->entries[snap - 1].term == r->log.snapshot.last_term;
#ifdef RAFTNS_BREAK_APPEND_DROP_ONLY
    holds_snapshot_entry = false; /* TEST-ONLY MUTANT: always dropped */
#endif
    if (holds_snapshot_entry && cut_front(a, (unsigned)snap)) {
        n->appends_cut++;
        return false;
    }
    free_entries(a->entries, a->n_entries);
    a->entries = NULL;
    a->n_entries = 0;
    n->appends_dropped++;
    return true;
}

uint64_t ns_node_appends_cut(const struct ns_node *n)
{
    return n->appends_cut;
}

uint64_t ns_node_appends_dropped(const struct ns_node *n)
{
    return n->appends_dropped;
}
