/* Every time a request waits on the cluster is named here, with its default,
 * and can be set at start with --wait NAME=MS (docs/waits.md); and the one
 * kind of list a request waits in (struct ns_wait_list). Pure. */
#ifndef RAFTNS_WAITS_H
#define RAFTNS_WAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_WAIT_MAX_MS 600000u /* any wait: at most 10 minutes */

#define NS_WAITS_TABLE(X)                                                      \
    /* a write waits this long for a leader to take it */                      \
    X(write_ms, "write", 3000)                                                 \
    /* after the leader's answer, at least this long for this node's apply */  \
    X(apply_min_ms, "apply-min", 1000)                                         \
    /* a consistent read: the leader's read index, then its local apply */     \
    X(consistent_read_ms, "consistent-read", 3000)                             \
    /* a read this node cannot answer: the leader's answer, counted from the   \
     * loss of the leader when none is known (below clients' 3 s timeout) */   \
    X(read_forward_ms, "read-forward", 2000)                                   \
    /* a node-to-node request: readiness read index, member records */         \
    X(peer_request_ms, "peer-request", 3000)                                   \
    /* an admin code a follower relays to the leader */                        \
    X(admin_relay_ms, "admin-relay", 10000)                                    \
    /* removing the leader: its successor must be known within this */         \
    X(admin_leader_ms, "admin-leader", 5000)

struct ns_waits {
#define NS_WAITS_FIELD(field, name, default_ms) uint32_t field;
    NS_WAITS_TABLE(NS_WAITS_FIELD)
#undef NS_WAITS_FIELD
};

/* Every wait at its default. */
void ns_waits_init(struct ns_waits *w);
/* Every field that is 0 at its default (a zeroed struct = the defaults). */
void ns_waits_fill_defaults(struct ns_waits *w);
/* "NAME=MS" (a name of NS_WAITS_TABLE, 1 <= MS <= NS_WAIT_MAX_MS). 0, or
 * NS_EINVAL with err naming what is wrong (NUL-terminated in errlen). */
int ns_waits_set(struct ns_waits *w, const char *assignment, char *err,
                 size_t errlen);

/* One request that waits (for a leader, for a leader's answer), embedded in
 * the request. retry(data) finishes the request or adds it to a list again. */
struct ns_wait {
    struct ns_wait *next;
    void (*retry)(void *data);
    void *data; /* the waiting request */
};

/* Requests waiting, in the order they were added. Its owner runs it on the
 * events that may let them go on (a tick, a role change, a stop). */
struct ns_wait_list {
    struct ns_wait *head, *tail;
};

void ns_wait_list_init(struct ns_wait_list *l);
static inline bool ns_wait_list_is_empty(const struct ns_wait_list *l)
{
    return l->head == NULL;
}
/* Adds w (borrowed until its retry runs) at the end. */
void ns_wait_list_add(struct ns_wait_list *l, struct ns_wait *w);
/* Takes every request off l and calls its retry once, oldest first; one that
 * is added again waits for the next run, behind the others. */
void ns_wait_list_run(struct ns_wait_list *l);

#endif
