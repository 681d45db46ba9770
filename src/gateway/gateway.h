/* The gateway room's API (docs/ARCHITECTURE.md): request dispatch (a table of
 * handlers behind generic gates: ACL, readiness, divergence, consistent and
 * forwarded reads), the handlers, their pending replies and the replies. It
 * sits over cluster (writes, the leader connection, signatures), liveness and
 * net; the composition root hands it each decoded request (ns_dispatch) and
 * each closing connection (ns_pending_detach_all). */
#ifndef RAFTNS_GATEWAY_H
#define RAFTNS_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/clock.h"

#include "cluster/cluster.h"
#include "controller/controller.h"
#include "gateway/register_memo.h"
#include "liveness/liveness.h"
#include "net/net.h"
#include "raftns/acl.h"
#include "raftns/fsm.h"
#include "raftns/node.h"
#include "raftns/server.h"
#include "raftns/waits.h"

struct ns_reg_work;

/* The ACL gate of a server (acl_gate.c). */
struct ns_acl_gate {
    bool enable;
    bool anonymous_read;
    struct ns_acl_net *broker_nets; /* owned copy */
    size_t n_broker_nets;
    /* the cluster file's accounts (borrowed), seeded once by a leader */
    const struct ns_acl_account *seed;
    size_t n_seed;
    bool seed_inflight;
    /* refusal log rate limit: at most NS_ACL_LOG_BURST lines per second */
    uint64_t log_window_ms;
    unsigned log_in_window;
    uint64_t log_suppressed;
};

/* What the handlers reach: the other rooms (borrowed), and the gateway's own
 * state. */
struct ns_gateway {
    uv_loop_t *loop;
    const struct ns_clock *clock; /* borrowed (the server's); NULL = the
                                     loop's uv_now */
    struct ns_state *state;       /* borrowed */
    struct ns_node *node;         /* borrowed */
    const struct ns_waits *waits; /* borrowed: the server's */
    struct ns_cluster *cluster;   /* borrowed: writes, leader, signatures */
    struct ns_liveness *live;     /* borrowed: registrations, heartbeats */
    struct ns_net *net;           /* borrowed */
    /* borrowed: the controller (docs/controller.md); set by the root */
    struct ns_controller *controller;
    uint64_t start_ms;                  /* uv_now when the server started */
    bool stopping;                      /* ns_gateway_stop ran */
    struct ns_register_memo_table memo; /* decoded REGISTER_BROKER requests */
    struct ns_acl_gate acl;
    /* REGISTER_BROKER bodies waiting to be decoded off the loop, and the one
     * being decoded (register_async.c) */
    struct ns_reg_work *reg_queue, *reg_queue_tail, *reg_running;
    /* NS_CODE_STATUS answers this (ns_server_set_status: the observer's) */
    ns_server_status_fn status_fn;
    void *status_ctx;
};

/* Milliseconds of the gateway's clock. */
static inline uint64_t ns_gateway_now(const struct ns_gateway *gw)
{
    return gw->clock != NULL ? ns_clock_now(gw->clock) : uv_now(gw->loop);
}

/* --- gateway.c --- */
/* Over the rooms given (borrowed; they outlive gw); copies the ACL settings of
 * cfg. 0 or NS_ENOMEM (nothing to close). */
int ns_gateway_init(struct ns_gateway *gw, uv_loop_t *loop,
                    const struct ns_server_config *cfg, struct ns_state *state,
                    struct ns_node *node, const struct ns_waits *waits,
                    struct ns_cluster *cluster, struct ns_liveness *live,
                    struct ns_net *net);
/* Frees the memo, the ACL gate's copies and what is still queued for
 * off-loop decoding. */
void ns_gateway_close(struct ns_gateway *gw);
/* Handlers finish what they hold instead of starting anything new. */
void ns_gateway_stop(struct ns_gateway *gw);

/* --- dispatch.c --- */
/* Handles one decoded request of conn (both borrowed for the call); non-zero
 * = close the connection. */
int ns_dispatch(struct ns_gateway *gw, struct ns_conn *conn,
                const struct ns_cmd *cmd);

/* --- pending.c --- */
/* Detaches every pending reply of a closing connection. */
void ns_pending_detach_all(struct ns_conn *c);

/* --- acl_gate.c --- */
/* Leader tick: proposes the cluster file's accounts if the replicated table
 * was never seeded. */
void ns_acl_gate_seed(struct ns_gateway *gw);

#endif
