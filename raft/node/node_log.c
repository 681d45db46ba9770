/* Bounds the raft log's memory by bytes, and staggers the nodes' snapshots.
 * canonical/raft 0.15 counts entries only (the snapshot threshold, and the
 * trailing entries it keeps after a snapshot, in memory and on disk:
 * docs/raft-0.15.md §5), and a registration of a broker with 10,000 topics is
 * a command of hundreds of kilobytes, so 1,024 trailing entries can hold
 * gigabytes. After every applied entry this file lowers the threshold so that
 * a snapshot follows as soon as the entries applied since the last one pass
 * snapshot_bytes, and keeps only the newest entries that fit in
 * trailing_bytes (never more entries than configured). Nodes that apply the
 * same log with one threshold would all take a snapshot at the same index, and
 * writes wait on all of them at once (BENCHMARKS.md, "Snapshots staggered"):
 * each node's next snapshot is at an index of its own phase, at most
 * threshold entries after its last. It does not take or store snapshots
 * itself, and runs on the loop thread. */
#include <raft.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

#include "node_int.h"

/* A snapshot keeps at least this many entries, so that a follower just
 * behind catches up from the log rather than a whole snapshot. */
#define MIN_TRAILING 2u

uint64_t node_log_phase(uint64_t id, unsigned threshold)
{
    uint64_t golden = 0x9E3779B97F4A7C15u; /* 2^64 / the golden ratio */
    uint64_t frac32 = (id * golden) >> 32; /* frac(id / phi), 32 bits */
    return (frac32 * (threshold / 2)) >> 32;
}

uint64_t node_log_next_snapshot(uint64_t snap, unsigned threshold,
                                uint64_t phase)
{
    uint64_t half = threshold / 2;
    if (half == 0) {
        return snap + threshold;
    }
    uint64_t first = snap + half + 1;
    return first + (phase % half + half - first % half) % half;
}

int node_log_init(struct node_log *l, uint64_t id, uint64_t snapshot_bytes,
                  unsigned threshold, unsigned trailing)
{
    l->snapshot_bytes = snapshot_bytes;
    l->trailing_bytes = snapshot_bytes / 4;
    l->threshold = threshold;
    l->trailing = trailing > MIN_TRAILING ? trailing : MIN_TRAILING;
    /* One slot more than the window so a push never overwrites it. */
    l->cap = (size_t)l->trailing + 1;
    l->ring = ns_calloc(l->cap, sizeof(*l->ring));
    l->next = l->n = l->win_n = 0;
    l->win_bytes = l->since_bytes = 0;
    l->seen_snapshot = 0;
    l->phase = node_log_phase(id, threshold);
    l->placed = false;
    return l->ring != NULL ? 0 : NS_ENOMEM;
}

void node_log_close(struct node_log *l)
{
    ns_free(l->ring);
    l->ring = NULL;
}

/* The k-th newest recorded entry (0 = newest); k < l->n. */
static const struct node_log_entry *nth_newest(const struct node_log *l,
                                               size_t k)
{
    return &l->ring[(l->next + l->cap - 1 - k) % l->cap];
}

static void push(struct node_log *l, uint64_t index, size_t len)
{
    l->ring[l->next].index = index;
    l->ring[l->next].len = len;
    l->next = (l->next + 1) % l->cap;
    if (l->n < l->cap) {
        l->n++;
    }
    l->win_n++;
    l->win_bytes += len;
    /* The window is the newest entries within trailing_bytes, at least
     * MIN_TRAILING of them, at most trailing. */
    while (l->win_n > l->trailing ||
           (l->win_n > MIN_TRAILING && l->win_bytes > l->trailing_bytes)) {
        l->win_bytes -= nth_newest(l, l->win_n - 1)->len;
        l->win_n--;
    }
}

/* Bytes of the recorded entries after index (those a snapshot at index does
 * not cover). */
static uint64_t bytes_after(const struct node_log *l, uint64_t index)
{
    uint64_t sum = 0;
    for (size_t k = 0; k < l->n && nth_newest(l, k)->index > index; k++) {
        sum += nth_newest(l, k)->len;
    }
    return sum;
}

void node_log_applied(struct node_log *l, struct raft *r, uint64_t index,
                      size_t len)
{
    raft_index snap = r->log.snapshot.last_index;

    if (l->ring == NULL || l->snapshot_bytes == 0) {
        return;
    }
    push(l, index, len);
    if (snap != l->seen_snapshot || !l->placed) {
        /* A snapshot completed (or none was placed yet): count again from it,
         * and aim at the next one. */
        l->seen_snapshot = snap;
        l->since_bytes = bytes_after(l, snap);
        uint64_t next = node_log_next_snapshot(snap, l->threshold, l->phase);
        raft_set_snapshot_threshold(r, (unsigned)(next - snap));
        l->placed = true;
    } else {
        l->since_bytes += len;
    }
    raft_set_snapshot_trailing(r, (unsigned)l->win_n);
    if (l->since_bytes >= l->snapshot_bytes && index > snap &&
        index - snap < l->threshold) {
        /* raft checks after this apply: last_applied - snapshot index >=
         * threshold, which this makes true now. */
        raft_set_snapshot_threshold(r, (unsigned)(index - snap));
    }
}

uint64_t ns_node_log_bytes(const struct ns_node *n)
{
    return n->logmem.since_bytes;
}

unsigned ns_node_log_trailing(const struct ns_node *n)
{
    return n->raft->snapshot.trailing;
}
