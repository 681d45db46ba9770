/* Request ids of client writes (docs/exactly-once.md): a node stamps every
 * write it submits with (origin node, run, sequence) and may send it to the
 * leader more than once; the replicated table below lets exactly one copy take
 * effect, however late another copy arrives and at whichever leader. Pure.
 *
 * Per origin the table keeps the newest run and, in that run, a window of the
 * last NS_REQID_WINDOW sequence numbers with one bit each (applied or not). */
#ifndef RAFTNS_REQID_H
#define RAFTNS_REQID_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

#define NS_REQID_WINDOW 4096    /* sequence numbers remembered per origin */
#define NS_REQID_MAX_ORIGINS 64 /* origins kept; the least recent goes */

/* origin 0 = no id (commands the leader creates, or from older nodes). run is
 * chosen by the origin at start and grows from one process to the next; seq
 * starts at 1 in every run. */
struct ns_reqid {
    uint64_t origin, run, seq;
};

enum ns_reqid_verdict {
    NS_REQID_NEW = 0,   /* never applied: apply it and record it */
    NS_REQID_DUPLICATE, /* applied before: change nothing, answer success */
    NS_REQID_STALE,     /* an older run, or older than the window: refused */
};

struct ns_reqid_origin {
    uint64_t origin, run;
    uint64_t high;        /* the largest seq recorded in this run */
    int64_t last_time_ms; /* leader time of its last record: eviction order */
    uint64_t bits[NS_REQID_WINDOW / 64]; /* bit k: seq high - k recorded */
};

struct ns_reqid_table {
    struct ns_reqid_origin *items; /* owned, sorted by origin */
    size_t n;
};

void ns_reqid_table_close(struct ns_reqid_table *t);
/* Borrowed entry of origin, or NULL. */
const struct ns_reqid_origin *ns_reqid_find(const struct ns_reqid_table *t,
                                            uint64_t origin);
enum ns_reqid_verdict ns_reqid_check(const struct ns_reqid_table *t,
                                     const struct ns_reqid *id);
/* Records an id that ns_reqid_check called NEW; leader_time_ms is the
 * command's. 0 or NS_ENOMEM (t unchanged). */
int ns_reqid_record(struct ns_reqid_table *t, const struct ns_reqid *id,
                    int64_t leader_time_ms);

/* WARNING: part of the versioned snapshot format (raft/snapshot.c): u32 n, then
 * per origin u64 origin, u64 run, u64 high, u64 last_time_ms, and
 * NS_REQID_WINDOW / 64 u64 words of bits. */
void ns_reqid_encode_state(const struct ns_reqid_table *t, struct ns_buf *out);
/* Fills an empty t. 0, NS_EPROTO or NS_ENOMEM (t empty again). */
int ns_reqid_decode_state(struct ns_reqid_table *t, struct ns_rd *in);

#endif
