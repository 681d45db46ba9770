/* The name server's client side on a libuv loop: the RocketMQ remoting
 * listener, request dispatch, broker liveness and expiry. It replicates every
 * change through a struct ns_node and reads only the local struct ns_state; it
 * does not own either. */
#ifndef RAFTNS_SERVER_H
#define RAFTNS_SERVER_H

#include <stdint.h>

#include <uv.h>

#include "raftns/config.h"
#include "raftns/fsm.h"
#include "raftns/node.h"

struct ns_cluster_config;

struct ns_server_config {
    const char *client_addr; /* borrowed; IPv4 "a.b.c.d:port", port 0 = any */
    uint64_t id;             /* this node's id; 0 = 1 */
    const char *secret;      /* borrowed; cluster secret, NULL = "" */
    /* borrowed, may be NULL: member addresses from the cluster file, recorded
     * in the replicated member table by the first leader */
    const struct ns_cluster_config *cluster;
    /* this node's client-port limits; all zero = the defaults */
    struct ns_client_limits limits;
};

struct ns_server;

typedef void (*ns_server_stop_cb)(void *arg);

/* Creates a server over state and node (both borrowed; they must outlive the
 * server). Returns 0 (*out owned: ns_server_stop then ns_server_destroy) or
 * NS_ENOMEM. */
int ns_server_create(uv_loop_t *loop, const struct ns_server_config *cfg,
                     struct ns_state *state, struct ns_node *node,
                     struct ns_server **out);
/* Binds and listens; starts the flush, expiry and idle timers. 0 or NS_EIO
 * (logged). */
int ns_server_start(struct ns_server *s);
/* The bound client port (after a successful start), 0 otherwise. */
int ns_server_port(const struct ns_server *s);
/* Stops accepting, closes every connection and handle; cb (borrowed arg) runs
 * once when all are closed. Proposals still in flight finish later without
 * replies (stop the node after this, destroy the server after the node
 * stopped). Idempotent. */
void ns_server_stop(struct ns_server *s, ns_server_stop_cb cb, void *arg);
void ns_server_destroy(struct ns_server *s);

#endif
