/* Node-to-node client: one persistent remoting connection from this node to
 * another node's CLIENT port, requests matched by opaque with timeouts. It
 * knows no leader (cluster.h aims it) and no handler. */
#ifndef RAFTNS_PEER_H
#define RAFTNS_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/remoting.h"

struct ns_peer;

/* status 0: reply (borrowed for the call) is the peer's answer, whatever its
 * code; NS_ETIMEDOUT: no answer in time; NS_EIO: connection failed or lost, or
 * the target changed; NS_ESHUTDOWN: the peer is closing. reply NULL unless 0.
 */
typedef void (*ns_peer_reply_cb)(void *arg, int status,
                                 const struct ns_cmd *reply);
typedef void (*ns_peer_close_cb)(void *arg);

/* What a node-to-node client does, whatever carries its bytes: peer.c's TCP
 * connection, or the in-memory network of the simulated cluster
 * (tests/cluster/sim.h), which can drop, delay and partition. Each entry has
 * the contract of the ns_peer_ function of the same name below. */
struct ns_peer_ops {
    int (*set_addr)(struct ns_peer *p, const char *addr);
    const char *(*addr)(const struct ns_peer *p);
    bool (*is_connected)(const struct ns_peer *p);
    int (*request)(struct ns_peer *p, struct ns_cmd *req, uint64_t timeout_ms,
                   ns_peer_reply_cb cb, void *arg);
    int (*oneway)(struct ns_peer *p, struct ns_cmd *req);
    void (*close)(struct ns_peer *p, ns_peer_close_cb cb, void *arg);
};

/* The head of every implementation's peer struct. */
struct ns_peer {
    const struct ns_peer_ops *ops;
};

/* Makes the peers of a server that does not use TCP (ns_server_start_driven):
 * create has ns_peer_create's contract; arg is the factory's own. */
struct ns_peer_factory {
    int (*create)(void *arg, struct ns_peer **out);
    void *arg;
};

/* The TCP peer: 0 or NS_ENOMEM; *out owned: ns_peer_close frees it. */
int ns_peer_create(uv_loop_t *loop, struct ns_peer **out);
/* Aims the peer at addr (copied; IPv4 a.b.c.d:port; NULL = nowhere). A change
 * drops the connection and fails in-flight requests with NS_EIO. Connecting is
 * lazy (first request) and retried on the next request after a failure. */
int ns_peer_set_addr(struct ns_peer *p, const char *addr);
const char *ns_peer_addr(const struct ns_peer *p); /* borrowed or NULL */
struct ns_tls_ctx;
/* TCP peers only: connections made from now on speak TLS with the context *slot
 * holds when they connect (NULL there = plain). slot is borrowed and must
 * outlive p; a context replaced in the slot (reload) applies to the next
 * connection. */
void ns_peer_use_tls(struct ns_peer *p, struct ns_tls_ctx *const *slot);
bool ns_peer_is_connected(const struct ns_peer *p);
/* Sends req (borrowed for the call; its opaque is overwritten, flag cleared)
 * and calls cb exactly once. Returns 0, NS_ENOTFOUND (no address: cb never
 * runs) or NS_ENOMEM (cb never runs). */
int ns_peer_request(struct ns_peer *p, struct ns_cmd *req, uint64_t timeout_ms,
                    ns_peer_reply_cb cb, void *arg);
/* Fire and forget (flag ONEWAY). 0, NS_ENOTFOUND or NS_ENOMEM. */
int ns_peer_oneway(struct ns_peer *p, struct ns_cmd *req);
/* Fails in-flight requests with NS_ESHUTDOWN, closes the handles and frees p;
 * cb (may be NULL) runs once when all is closed. p NULL: nothing. */
void ns_peer_close(struct ns_peer *p, ns_peer_close_cb cb, void *arg);

#endif
