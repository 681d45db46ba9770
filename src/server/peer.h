/* Node-to-node client: one persistent remoting connection from this node to
 * another node's CLIENT port, requests matched by opaque with timeouts, and
 * the cluster-level helpers that aim it at the current leader. It is not the
 * server side of the private codes (handle_cluster.c, forward.c). */
#ifndef RAFTNS_PEER_H
#define RAFTNS_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/remoting.h"

struct ns_server;
struct ns_req;
struct ns_peer;

/* status 0: reply (borrowed for the call) is the peer's answer, whatever its
 * code; NS_ETIMEDOUT: no answer in time; NS_EIO: connection failed or lost, or
 * the target changed; NS_ESHUTDOWN: the peer is closing. reply NULL unless 0. */
typedef void (*ns_peer_reply_cb)(void *arg, int status,
                                 const struct ns_cmd *reply);
typedef void (*ns_peer_close_cb)(void *arg);

/* 0 or NS_ENOMEM; *out owned: ns_peer_close frees it. */
int ns_peer_create(uv_loop_t *loop, struct ns_peer **out);
/* Aims the peer at addr (copied; IPv4 a.b.c.d:port; NULL = nowhere). A change
 * drops the connection and fails in-flight requests with NS_EIO. Connecting is
 * lazy (first request) and retried on the next request after a failure. */
int ns_peer_set_addr(struct ns_peer *p, const char *addr);
const char *ns_peer_addr(const struct ns_peer *p); /* borrowed or NULL */
bool ns_peer_is_connected(const struct ns_peer *p);
/* Sends req (borrowed for the call; its opaque is overwritten, flag cleared)
 * and calls cb exactly once. Returns 0, NS_ENOTFOUND (no address: cb never
 * runs) or NS_ENOMEM (cb never runs). */
int ns_peer_request(struct ns_peer *p, struct ns_cmd *req, uint64_t timeout_ms,
                    ns_peer_reply_cb cb, void *arg);
/* Fire and forget (flag ONEWAY). 0, NS_ENOTFOUND or NS_ENOMEM. */
int ns_peer_oneway(struct ns_peer *p, struct ns_cmd *req);
/* Fails in-flight requests with NS_ESHUTDOWN, closes the handles and frees p;
 * cb (may be NULL) runs once when all is closed. */
void ns_peer_close(struct ns_peer *p, ns_peer_close_cb cb, void *arg);

/* --- the leader connection of a server (forward.c / handle_cluster.c) --- */

/* Sends req to the current leader's client address with the cluster secret and
 * this node's id added as ext. Returns 0 (cb exactly once), NS_ENOTLEADER (no
 * leader known, this node is the leader, or its client address is unknown: cb
 * never runs) or NS_ENOMEM. */
int ns_cluster_leader_request(struct ns_server *srv, struct ns_cmd *req,
                              uint64_t timeout_ms, ns_peer_reply_cb cb,
                              void *arg);
/* Same, one-way. */
int ns_cluster_leader_oneway(struct ns_server *srv, struct ns_cmd *req);
/* Client address (borrowed) of member id: replicated member table first, then
 * the cluster file; NULL when unknown. */
const char *ns_cluster_client_addr(const struct ns_server *srv, uint64_t id);
/* True when the request carries the right secret. Otherwise it answers code 16,
 * logs a WARN and returns false (the caller returns 0). */
bool ns_cluster_check_secret(struct ns_req *req);

#endif
