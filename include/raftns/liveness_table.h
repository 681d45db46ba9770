/* Broker liveness table (docs/design.md §5), a pure data structure: per broker
 * (cluster, addr) when this node last heard from it, which local connection
 * registered it, the leader's merged view over all nodes (most recent sighting,
 * the set of nodes holding a connection from it) and a deadline min-heap for
 * expiry. Time is always a parameter (now_ms); no uv, no clock, no I/O, no
 * logging: the server policy (reports, proposals, timers) is in
 * src/liveness/liveness.c. */
#ifndef RAFTNS_LIVENESS_TABLE_H
#define RAFTNS_LIVENESS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nodes tracked per broker; beyond this the fast path is off for the broker. */
#define NS_LIVENESS_TABLE_MAX_HOLDERS 16
/* After a takeover, the fast path waits this long so followers can report
 * which brokers they hold before an empty holder set means "dead". */
#define NS_LIVENESS_TABLE_FAST_SETTLE_MS 1500

/* One broker. Fields are private to liveness_table.c except where noted. */
struct ns_live {
    char *cluster; /* owned; read-only for users */
    char *addr;    /* owned; read-only for users */
    uint64_t timeout_ms;
    uint64_t seen_ms;       /* merged: most recent sighting on any node */
    uint64_t local_seen_ms; /* heard by this node itself (when heard) */
    uint64_t fast_at_ms;    /* when the holder set became empty */
    uint64_t deadline;
    size_t heap_idx;
    struct ns_live **conn_head; /* list head in the registering connection */
    void *conn;                 /* borrowed owner of conn_head; read-only */
    struct ns_live *conn_prev, *conn_next;
    uint64_t holders[NS_LIVENESS_TABLE_MAX_HOLDERS];
    uint8_t n_holders;
    bool holders_overflow;
    bool had_holder; /* some node held a connection: the fast path may fire */
    bool heard;      /* this node itself heard the broker */
    bool dirty;      /* to report: heard or holder change since last report */
    struct ns_live *dirty_prev, *dirty_next;
    struct ns_live *hnext;
};

struct ns_liveness_table {
    struct ns_live **buckets;
    size_t n_buckets;
    size_t n;
    struct ns_live **heap; /* min-heap on deadline, exact keys */
    size_t heap_cap;
    struct ns_live *dirty_head;
    size_t n_dirty;
    uint64_t self_id;
    uint64_t
        leader_since_ms; /* grace base: nobody expires before this+timeout */
    bool urgent;         /* a holder changed: report without waiting */
    /* counters */
    uint64_t n_expired; /* entries handed out by ns_liveness_table_expire */
    uint64_t n_fast_expired; /* of which through the fast path */
    uint64_t n_merged;       /* report entries merged */
    uint64_t
        n_visits; /* debug: heap entries examined by ns_liveness_table_expire */
};

/* Called for an expired broker, already removed from the table and unlinked
 * from its connection (e->conn still names it); e is freed after the call. */
typedef void (*ns_liveness_table_expired_cb)(void *arg, const struct ns_live *e,
                                             bool fast);
/* One report entry: ms since this node heard the broker, and whether a
 * connection of this node registered it. */
typedef int (*ns_liveness_table_report_cb)(void *arg, const char *cluster,
                                           const char *addr, uint32_t ms_since,
                                           bool held);

int ns_liveness_table_init(struct ns_liveness_table *t, uint64_t self_id);
void ns_liveness_table_close(struct ns_liveness_table *t);
/* The node id used for local holds (set before any registration). */
void ns_liveness_table_set_self(struct ns_liveness_table *t, uint64_t self_id);
struct ns_live *ns_liveness_table_find(const struct ns_liveness_table *t,
                                       const char *cluster, const char *addr);

/* A local registration: heard now, timeout, and (conn_head non-NULL) the
 * registering connection's list head and owner; this node becomes a holder.
 * 0 or NS_ENOMEM. */
int ns_liveness_table_register(struct ns_liveness_table *t, const char *cluster,
                               const char *addr, uint64_t now_ms,
                               uint64_t timeout_ms, struct ns_live **conn_head,
                               void *conn);
/* A local heartbeat (904, 322) of a known broker; false when unknown. */
bool ns_liveness_table_touch(struct ns_liveness_table *t, const char *cluster,
                             const char *addr, uint64_t now_ms);
/* The connection whose list head is conn_head closed: every broker it
 * registered loses this node as holder. Returns how many brokers it held. */
size_t ns_liveness_table_conn_closed(struct ns_liveness_table *t,
                                     struct ns_live **conn_head,
                                     uint64_t now_ms);
void ns_liveness_table_remove(struct ns_liveness_table *t, const char *cluster,
                              const char *addr);
/* Adds a broker not yet known, heard "now" (restart/takeover grace), no
 * holders. 0 or NS_ENOMEM. */
int ns_liveness_table_seed(struct ns_liveness_table *t, const char *cluster,
                           const char *addr, uint64_t timeout_ms,
                           uint64_t now_ms);
/* Merges one report entry from node `from` received at now_ms; creates the
 * broker when unknown. held sets or clears `from` as holder. 0 or NS_ENOMEM. */
int ns_liveness_table_merge(struct ns_liveness_table *t, uint64_t from,
                            const char *cluster, const char *addr,
                            uint32_t ms_since, bool held, uint64_t timeout_ms,
                            uint64_t now_ms);

/* This node became leader at now_ms: every broker gets a full timeout from
 * now, holders learned from other nodes are forgotten (they report again). */
void ns_liveness_table_take_leadership(struct ns_liveness_table *t,
                                       uint64_t now_ms);

/* Removes and hands to cb every broker whose deadline is <= now_ms, in
 * deadline order. Cost: O((expired + 1) log n). Returns the number expired. */
size_t ns_liveness_table_expire(struct ns_liveness_table *t, uint64_t now_ms,
                                ns_liveness_table_expired_cb cb, void *arg);
/* Earliest deadline (UINT64_MAX when empty). */
uint64_t ns_liveness_table_next_deadline(const struct ns_liveness_table *t);

/* Hands up to max dirty brokers (heard locally or holder changed since their
 * last report) to cb and clears their mark; stops early when cb returns
 * non-zero (that entry stays dirty). Returns the number handed out. */
size_t ns_liveness_table_take_reports(struct ns_liveness_table *t,
                                      uint64_t now_ms, size_t max,
                                      ns_liveness_table_report_cb cb,
                                      void *arg);
/* Marks every broker this node heard or holds (a new leader needs it all). */
void ns_liveness_table_mark_all_dirty(struct ns_liveness_table *t);

/* Calls cb for every broker in the table, in no particular order (for
 * listing: raftnsctl brokers). Cost O(buckets + n). */
void ns_liveness_table_each(const struct ns_liveness_table *t,
                            void (*cb)(void *arg, const struct ns_live *e),
                            void *arg);

#endif
