/* The controller room (docs/controller.md): this node's broker heartbeats,
 * the leader's one-at-a-time decide-then-commit queue, the leader's election
 * scans and retries, and the 1008 notifications to brokers. The replicated
 * table and the decisions are pure (raftns/controller.h); the wire (headers,
 * bodies, remarks) is src/gateway/handle_controller.c's. */
#ifndef RAFTNS_SRC_CONTROLLER_H
#define RAFTNS_SRC_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/clock.h"
#include "raftns/config.h"
#include "raftns/controller.h"
#include "raftns/fsm.h"
#include "raftns/node.h"
#include "raftns/remoting.h"

#define NS_CONTROLLER_MAX_QUEUED 1024 /* as Java's event queue */
#define NS_CONTROLLER_MAX_PEERS 16

struct ns_cluster;
struct ns_pending;
struct ns_peer;

/* Node-local settings (docs/controller.md §8), from the cluster file's namesrv
 * section and --set, changed by 1009 on this node only (as Java's). */
struct ns_controller_settings {
    bool enabled;                    /* enableControllerInNamesrv */
    bool unclean;                    /* enableElectUncleanMaster */
    bool notify;                     /* notifyBrokerRoleChanged */
    int64_t scan_not_active_ms;      /* scanNotActiveBrokerInterval */
    int64_t scan_inactive_master_ms; /* scanInactiveMasterInterval */
    int64_t retry_max;               /* electMasterMaxRetryCount */
    int64_t retry_wait_ms;           /* Java's fixed 3 s between retries */
    char group[128];                 /* controllerDLegerGroup */
    /* controllerDLegerPeers: "n<id>-host:port;..." — where each node serves
     * the controller on a port of its own, as Java's embedded controller
     * does (none: the client port) */
    struct ns_controller_peer_addr {
        uint64_t id;
        char addr[64];
    } peers[NS_CONTROLLER_MAX_PEERS];
    size_t n_peers;
};

struct ns_controller_stats {
    uint64_t elections;        /* masters elected (committed) */
    uint64_t elections_failed; /* triggered or asked, nobody electable */
    uint64_t fenced;           /* 1001 refused by master or epoch (2000-2002) */
    uint64_t not_leader;       /* leader-only codes answered 2007 */
    uint64_t notified;         /* 1008 frames sent */
    uint64_t inactive;         /* heartbeats expired or closed */
};

struct ns_controller_op;
/* Runs once per op, after the decision (status 0) and, when it had an event,
 * after that event was applied here (status 0) or failed (status NS_E*); the
 * room frees op after it returns. */
typedef void (*ns_controller_done)(struct ns_controller_op *op, int status);
typedef int (*ns_controller_decide)(const struct ns_ctl_view *v,
                                    const struct ns_ctl_request *r,
                                    struct ns_ctl_decision *d);

/* One leader-only request, or an election the leader triggers itself. */
struct ns_controller;

struct ns_controller_op {
    struct ns_controller_op *next;
    struct ns_controller *ctl;   /* set by ns_controller_submit */
    ns_controller_decide decide; /* NULL: a read answered by done */
    ns_controller_done done;
    struct ns_pending *pending; /* reply target (owned), NULL: internal */
    struct ns_cmd cmd;          /* owned copy of the request */
    struct ns_ctl_request req;  /* borrows cmd, ids and name */
    int64_t *ids;               /* owned */
    char *name;                 /* owned */
    unsigned tries;             /* internal elections */
    struct ns_ctl_decision d;   /* filled before done */
};

struct ns_controller {
    uv_loop_t *loop;
    const struct ns_clock *clock; /* borrowed: the server's */
    struct ns_state *state;       /* borrowed */
    struct ns_node *node;         /* borrowed */
    struct ns_cluster *cluster;   /* borrowed */
    struct ns_controller_settings set;
    struct ns_controller_stats stats;
    struct ns_ctl_live live; /* this node's heartbeats */
    struct ns_controller_op *head, *tail;
    size_t n_queued; /* ops submitted and not yet finished */
    bool busy;       /* an op's event is being committed */
    uv_timer_t tick;
    bool started, stopping;
    bool driven;      /* no timer: ns_controller_tick is called */
    bool was_leader;  /* the ready leader at the last role change */
    int64_t start_ms; /* uv_now at ns_controller_start */
    int64_t next_expiry_ms, next_master_scan_ms;
    struct ns_controller_retry *retries; /* owned */
    size_t n_retries;
    struct ns_controller_peer *peers; /* owned: 1008 targets */
    size_t n_peers;
};

/* Reads the settings from props (borrowed; validated at start-up); time
 * comes from clock (borrowed, outlives c). 0 or NS_ENOMEM. */
int ns_controller_init(struct ns_controller *c, uv_loop_t *loop,
                       const struct ns_clock *clock,
                       const struct ns_props *props, struct ns_state *state,
                       struct ns_node *node, struct ns_cluster *cluster);
/* Starts the tick timer (every 250 ms) when enabled. */
void ns_controller_start(struct ns_controller *c);
/* For a driven server (no running timer): as ns_controller_start, and the
 * driver calls ns_controller_tick as time moves. */
void ns_controller_start_driven(struct ns_controller *c);
/* The expiry scan, the leader's inactive-master scan and retries, when due
 * by the clock. */
void ns_controller_tick(struct ns_controller *c);
/* Finishes queued ops with NS_ESHUTDOWN, closes the tick and the peers. */
void ns_controller_stop(struct ns_controller *c);
/* Frees what is left (after the loop ran the closes). */
void ns_controller_close(struct ns_controller *c);

int64_t ns_controller_now(const struct ns_controller *c);
/* A 904 (controller meaning) from the connection conn_id. 0 or NS_ENOMEM. */
int ns_controller_beat(struct ns_controller *c,
                       const struct ns_ctl_beat_in *in);
/* The connection conn_id closed: its brokers are inactive at once. */
void ns_controller_conn_closed(struct ns_controller *c, uint64_t conn_id);
/* Role changed: a new leader starts its scans afresh. */
void ns_controller_on_change(struct ns_controller *c);

/* Takes op (ns_calloc'ed by the caller) and runs it in arrival order, one
 * decision at a time: a node that is not the ready leader answers it with
 * 2007 in op->d (status 0). done always runs, later or now. */
void ns_controller_submit(struct ns_controller *c, struct ns_controller_op *op);

/* The controller address of node id from controllerDLegerPeers (borrowed),
 * or NULL when that setting does not name it. */
const char *ns_controller_peer_addr(const struct ns_controller *c, uint64_t id);

/* 1009: applies the known keys of props (borrowed). 0 or NS_ENOMEM. */
int ns_controller_update_settings(struct ns_controller *c,
                                  const struct ns_props *props);
/* 1010 (with_enable) and 319 / config get (without the keys NamesrvConfig
 * lists already): the settings as key=value lines. */
void ns_controller_encode_settings(const struct ns_controller *c,
                                   struct ns_buf *out, bool with_enable);
/* The /status object and the /metrics lines of the controller. */
void ns_controller_status_json(const struct ns_controller *c,
                               struct ns_buf *out);
void ns_controller_metrics(const struct ns_controller *c, struct ns_buf *out);

#endif
