/* The liveness room's API (liveness.c over the pure liveness_table.c;
 * docs/ARCHITECTURE.md): broker liveness of this node, never replicated.
 * Registrations and heartbeats arrive through the gateway; followers report to
 * the leader and the leader proposes expiries through the cluster room; a
 * connection whose brokers were expired is closed through net. */
#ifndef RAFTNS_LIVENESS_H
#define RAFTNS_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/clock.h"

#include "cluster/cluster.h"
#include "net/net.h"
#include "raftns/fsm.h"
#include "raftns/liveness_table.h"
#include "raftns/node.h"

struct ns_liveness {
    struct ns_liveness_table t;
    bool leading;      /* took leadership in the table */
    bool fast_pending; /* a broker may be due through the fast path */
    bool in_flight;    /* a report to the leader awaits its answer */
    bool resend_all;   /* a report was lost: send everything again */
    bool reseed;       /* an expiry proposal failed: re-seed from the route */
    bool stopping;     /* ns_liveness_stop ran: nothing is sent or proposed */
    uint64_t reported_to; /* leader id the reports go to */
    uint64_t sent_at;     /* when the report in flight was taken */
    uint64_t sent_to;     /* and the leader it went to */
    uint64_t acked_at;    /* when the last report a leader accepted was taken */
    uint64_t acked_by;    /* that leader's id (0: none yet) */
    unsigned expiries_in_flight; /* leader: proposed, outcome not known */
    uv_loop_t *loop;
    const struct ns_clock *clock; /* borrowed; NULL = the loop's uv_now */
    struct ns_state *state;       /* borrowed */
    struct ns_node *node;         /* borrowed */
    struct ns_cluster *cluster;   /* borrowed: reports and expiry proposals */
    struct ns_net *net;           /* borrowed: connections of expired brokers */
    uv_timer_t fast_timer;        /* leader: the next fast-path expiry */
    bool timer_started;
    void (*stopped)(void *arg);
    void *stopped_arg;
};

/* Over state, node, cluster and net (borrowed; they outlive lv). 0 or
 * NS_ENOMEM. */
int ns_liveness_init(struct ns_liveness *lv, uv_loop_t *loop,
                     struct ns_state *state, struct ns_node *node,
                     struct ns_cluster *cluster, struct ns_net *net);
void ns_liveness_close(struct ns_liveness *lv);
/* Initialises its fast-path timer. */
void ns_liveness_start(struct ns_liveness *lv);
/* Sends and proposes nothing more; stopped(arg) (may be NULL) runs once when
 * its timer is closed (at once when it never started). */
void ns_liveness_stop(struct ns_liveness *lv, void (*stopped)(void *arg),
                      void *arg);
/* Records a registration: deadline = now + timeout, connection = conn
 * (borrowed, may be NULL). 0 or NS_ENOMEM. */
int ns_liveness_register(struct ns_liveness *lv, const char *cluster,
                         const char *addr, uint64_t now, uint64_t timeout_ms,
                         struct ns_conn *conn);
/* Refreshes a known broker (904, 322); false when unknown. */
bool ns_liveness_touch(struct ns_liveness *lv, const char *cluster,
                       const char *addr, uint64_t now);
void ns_liveness_remove(struct ns_liveness *lv, const char *cluster,
                        const char *addr);
/* Grants every known broker a full timeout from now. */
void ns_liveness_reset_all(struct ns_liveness *lv, uint64_t now);
/* Adds brokers of the route not yet known, with a full timeout from now. */
int ns_liveness_seed(struct ns_liveness *lv, const struct ns_route *route,
                     uint64_t now);
/* Expiry scan (leader only, every scanNotActiveBrokerInterval) and the close
 * of a connection that registered brokers (report or fast-path expiry). */
void ns_liveness_scan(struct ns_liveness *lv);
void ns_liveness_conn_closed(struct ns_liveness *lv, struct ns_conn *conn);
/* Once a second: reports to the leader, fast-path expiry, closing connections
 * of brokers gone from the route. */
void ns_liveness_tick(struct ns_liveness *lv);
/* Calls cb(arg, e, now) for every broker of this node's table, now being the
 * loop's time the entries' times compare with (BROKER_LIVENESS listing). */
void ns_liveness_each(const struct ns_liveness *lv,
                      void (*cb)(void *arg, const struct ns_live *e,
                                 uint64_t now),
                      void *arg);
/* The leader's fast-path expiry timer fired, or (a driven server, whose
 * timers never run) may be due: expires what is due, re-arms for the next. */
void ns_liveness_fast_check(struct ns_liveness *lv);
/* Merges a report body from node `from`. 0, NS_EPROTO or NS_ENOMEM. */
int ns_liveness_merge_report(struct ns_liveness *lv, uint64_t from,
                             const uint8_t *body, size_t len);
/* A node's liveness link to the leader counts as fresh this long after the
 * leader accepted a report of it: two report intervals (one per tick). */
#define NS_LIVENESS_LINK_FRESH_MS 2000u
/* Whether an unchanged registration may be answered from this node's table
 * (docs/readiness.md): on the leader, while none of its expiry proposals is
 * in flight; on a follower, while the current leader accepted a report this
 * node took within NS_LIVENESS_LINK_FRESH_MS. */
bool ns_liveness_may_short_cut(const struct ns_liveness *lv);
/* Counters of this node's table, for metrics. */
uint64_t ns_liveness_n_expired(const struct ns_liveness *lv);      /* all */
uint64_t ns_liveness_n_fast_expired(const struct ns_liveness *lv); /* closed */
uint64_t
ns_liveness_n_merged(const struct ns_liveness *lv);         /* report entries */
size_t ns_liveness_n_brokers(const struct ns_liveness *lv); /* tracked */

#endif
