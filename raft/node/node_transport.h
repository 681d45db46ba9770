/* Private to the files of raft/node/: raftns's struct raft_uv_transport (TCP,
 * the authenticated handshake of raftns/wire.h, and a checking relay through a
 * socketpair that libraft reads). Not a public interface: the server reads
 * the counters through ns_node_peer_stats (raftns/node.h). */
#ifndef RAFTNS_NODE_TRANSPORT_H
#define RAFTNS_NODE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "raftns/node.h"

/* Looks id up in the current raft configuration (borrowed arg; loop thread,
 * after the peer proved the secret). Returns false when id is not a member.
 * Otherwise writes the member's configured raft address into addr (cap bytes),
 * or "" when this node's configuration is still empty (a new member waiting
 * to be added accepts any authenticated peer). */
typedef bool (*node_transport_member_fn)(void *arg, uint64_t id, char *addr,
                                         size_t cap);

struct node_transport_config {
    const char *secret;   /* borrowed; copied by init; NULL = "" */
    uint64_t max_message; /* payload bound per raft message; 0 = 1 GiB */
    node_transport_member_fn find_member;
    void *member_arg; /* borrowed; must outlive the transport */
    /* raftTls: PEM certificate, key and CA (borrowed; copied). All NULL =
     * plain TCP; otherwise all three are needed. */
    const char *tls_cert, *tls_key, *tls_ca;
};

/* Fills t's vtable (init/listen/connect/close) for raft_uv_init. Returns 0,
 * NS_EINVAL (a TLS file could not be loaded: logged) or NS_ENOMEM. After 0,
 * node_transport_free(t) releases it: either before raft_uv_init used it, or
 * after libraft closed it and the loop ran until nothing was left (its close
 * callback fires when every handle is closed). */
int node_transport_init(struct raft_uv_transport *t, uv_loop_t *loop,
                        const struct node_transport_config *cfg);
void node_transport_free(struct raft_uv_transport *t);
/* Reloads the TLS files for new connections; on failure (logged) the old
 * contexts stay. 0 (also without TLS), NS_EINVAL or NS_ENOMEM. */
int node_transport_reload_tls(struct raft_uv_transport *t);
void node_transport_stats(const struct raft_uv_transport *t,
                          struct ns_node_peer_stats *out);
/* uv_now when authenticated raft traffic from peer id last arrived (a
 * handshake or a relayed message), or 0 when never. */
uint64_t node_transport_last_heard(const struct raft_uv_transport *t,
                                   uint64_t id);

#endif
