/* An AppendEntries that starts at index 1 (previous index 0) reaching a
 * follower whose log no longer holds index 1 (it took a snapshot since) is
 * dropped here, before raft sees it. libraft 0.15 skips the log matching check
 * for a previous index of 0, appends the entries at the end of its compacted
 * log, then finds no entry at index 1 and returns RAFT_SHUTDOWN
 * (src/replication.c, replicationAppend: "No log entries found at index 1"):
 * the follower turns unavailable for good. A new follower meets it when a
 * second copy of its first AppendEntries arrives after it applied the first
 * and snapshotted (docs/raft-0.15.md §19). Dropping a message is what any
 * network may do: the leader only sends from index 1 until the follower's
 * first answer, which moves its next index past 1. */
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

bool node_append_guard(struct ns_node *n, struct raft_message *m)
{
    const struct raft *r = n->raft;
    struct raft_append_entries *a = &m->append_entries;
    if (m->type != RAFT_IO_APPEND_ENTRIES || a->prev_log_index != 0 ||
        a->n_entries == 0 || r->log.snapshot.last_index == 0 ||
        node_raft_term_of(&r->log, 1) != 0) {
        return false;
    }
    free_entries(a->entries, a->n_entries);
    a->entries = NULL;
    a->n_entries = 0;
    n->appends_dropped++;
    return true;
}

uint64_t ns_node_appends_dropped(const struct ns_node *n)
{
    return n->appends_dropped;
}
