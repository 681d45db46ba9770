/* The name server's client side on a libuv loop: the RocketMQ remoting
 * listener, request dispatch, broker liveness and expiry. It replicates every
 * change through a struct ns_node and reads only the local struct ns_state; it
 * does not own either. This is the composition root's API (src/server/server.c
 * creates and wires the rooms, docs/ARCHITECTURE.md) and its start-up
 * settings; the rooms below it use the settings types only
 * (scripts/check-layers.sh refuses a call to ns_server_* from them). */
#ifndef RAFTNS_SERVER_H
#define RAFTNS_SERVER_H

#include <stdint.h>

#include <uv.h>

#include "raftns/acl.h"
#include "raftns/config.h"
#include "raftns/fsm.h"
#include "raftns/node.h"
#include "raftns/tls.h"
#include "raftns/waits.h"

struct ns_cluster_config;
struct ns_clock;
struct ns_peer_factory;

/* Node-local ACL settings (start-up only: the cluster file's namesrv keys
 * aclEnable, aclAnonymousRead, aclBrokerNetworks, or --set; never changed by
 * UPDATE_NAMESRV_CONFIG). */
struct ns_acl_settings {
    bool enable;         /* aclEnable, default false: no check at all */
    bool anonymous_read; /* aclAnonymousRead, default true */
    /* aclBrokerNetworks: unsigned requests from these get the broker role
     * (Java's globalWhiteRemoteAddresses); borrowed */
    const struct ns_acl_net *broker_nets;
    size_t n_broker_nets;
};

/* TLS on the client port (Java: tls.server.mode). */
enum ns_tls_mode {
    NS_TLS_MODE_DISABLED,   /* plain only; a ClientHello is refused */
    NS_TLS_MODE_PERMISSIVE, /* the first byte decides: 0x16 TLS, else plain */
    NS_TLS_MODE_ENFORCING,  /* TLS only */
    /* Node-to-node requests (peer.c) use TLS when enforcing, and when
     * permissive with a trust CA (so nodes can switch one by one). */
};

/* Start-up TLS settings; the strings are borrowed (the server copies them for
 * reloads). */
struct ns_server_tls {
    enum ns_tls_mode mode;
    const char *cert_path;  /* tlsServerCertPath (PEM chain) */
    const char *key_path;   /* tlsServerKeyPath (PEM key, unencrypted) */
    const char *trust_path; /* tlsServerTrustCertPath (CA), may be NULL */
    enum ns_tls_verify client_auth; /* tlsServerNeedClientAuth */
    bool http; /* httpTls: the HTTP port serves HTTPS with the same files */
    /* raftTls enforcing: TLS 1.3 with mutual certificates on the raft peer
     * port, with the same certificate, key and (required) CA; the node's
     * transport uses it (ns_node_config), the client port does not. */
    bool raft;
};

struct ns_server_config {
    const char *client_addr; /* borrowed; IPv4 "a.b.c.d:port", port 0 = any */
    uint64_t id;             /* this node's id; 0 = 1 */
    const char *secret;      /* borrowed; cluster secret, NULL = "" */
    /* borrowed, may be NULL: member addresses from the cluster file, recorded
     * in the replicated member table by the first leader */
    const struct ns_cluster_config *cluster;
    const struct ns_acl_settings *acl; /* borrowed (copied); NULL = off */
    const struct ns_server_tls *tls;   /* borrowed, NULL = disabled */
    /* this node's client-port limits; all zero = the defaults */
    struct ns_client_limits limits;
    struct ns_waits waits; /* zero fields = the defaults */
    /* borrowed, may be NULL: every start-up setting (cluster file and
     * --set), for the node-local controller settings (docs/controller.md) */
    const struct ns_props *settings;
    /* borrowed (must outlive the server), NULL = the loop's uv_now: the
     * monotonic time of every timeout and deadline of the server */
    const struct ns_clock *clock;
};

/* True for a TLS setting key, in raftns's or Java's spelling (tlsMode,
 * tls.server.mode, ..., httpTls, raftTls). They are start-up settings, kept out
 * of the replicated NamesrvConfig. */
bool ns_server_tls_is_key(const char *key);
/* Reads the TLS keys of props (borrowed; out borrows its strings). raftns's
 * spelling wins over Java's; the mode defaults to permissive when a
 * certificate is configured, else disabled; raftTls enforcing needs the
 * certificate, key and trust CA. 0, or NS_EINVAL with err
 * (NUL-terminated in errlen bytes) naming the key and what it accepts. */
int ns_server_tls_parse(const struct ns_props *props, struct ns_server_tls *out,
                        char *err, size_t errlen);

struct ns_server;

typedef void (*ns_server_stop_cb)(void *arg);

/* Creates a server over state and node (both borrowed; they must outlive the
 * server). Returns 0 (*out owned: ns_server_stop then ns_server_destroy),
 * NS_EIO (a TLS certificate, key or CA cannot be loaded: logged) or
 * NS_ENOMEM. */
int ns_server_create(uv_loop_t *loop, const struct ns_server_config *cfg,
                     struct ns_state *state, struct ns_node *node,
                     struct ns_server **out);
/* Binds and listens; starts the flush, expiry and idle timers. 0 or NS_EIO
 * (logged). */
int ns_server_start(struct ns_server *s);
/* For a driver that owns time and the network (the simulated cluster of
 * tests/cluster/sim.h): as ns_server_start, but with no listener and no
 * running timer. The driver brings the connections (ns_conn_open_sink,
 * src/net), calls ns_server_tick whenever the clock moved, and the leader
 * connection is made by peers (borrowed, must outlive s; src/net/peer.h).
 * 0. */
int ns_server_start_driven(struct ns_server *s,
                           const struct ns_peer_factory *peers);
/* A driven server only: runs what its timers would have run by now (the
 * cluster tick, the liveness second, the expiry scan, the fast-path expiry)
 * and flushes the connections' output, as the loop's check handle does. */
void ns_server_tick(struct ns_server *s);
/* The bound client port (after a successful start), 0 otherwise. */
int ns_server_port(const struct ns_server *s);
/* Stops accepting, closes every connection and handle; cb (borrowed arg) runs
 * once when all are closed. Proposals still in flight finish later without
 * replies (stop the node after this, destroy the server after the node
 * stopped). Idempotent. */
void ns_server_stop(struct ns_server *s, ns_server_stop_cb cb, void *arg);
void ns_server_destroy(struct ns_server *s);
/* --- for the observer (src/observe/), which sits over this API --- */

struct ns_buf;
struct ns_cluster;
struct ns_tls_ctx;
/* Writes the status document into out; 0 or NS_ENOMEM. */
typedef int (*ns_server_status_fn)(void *ctx, struct ns_buf *out);
/* NS_CODE_STATUS on the client port answers fn(ctx) (borrowed until replaced;
 * NULL = "status not available"). */
void ns_server_set_status(struct ns_server *s, ns_server_status_fn fn,
                          void *ctx);
/* The client address as configured (borrowed). */
const char *ns_server_client_addr(const struct ns_server *s);
/* Open client connections. */
size_t ns_server_n_conns(const struct ns_server *s);
/* The TLS context HTTPS uses now (httpTls; borrowed until the next reload),
 * or NULL for plain HTTP. */
struct ns_tls_ctx *ns_server_https_ctx(const struct ns_server *s);
/* The cluster room of the server (borrowed; src/cluster/cluster.h). */
struct ns_cluster *ns_server_cluster(struct ns_server *s);
/* While the controller runs (enableControllerInNamesrv): appends its /status
 * object to out and returns true; else false, out untouched. */
bool ns_server_controller_status(const struct ns_server *s, struct ns_buf *out);
/* Appends the controller's /metrics lines while it runs. */
void ns_server_controller_metrics(const struct ns_server *s,
                                  struct ns_buf *out);

/* Reloads the TLS files (SIGHUP): new connections use the new contexts,
 * established ones keep theirs. 0 (or TLS disabled), NS_EIO (logged; the old
 * contexts stay) or NS_ENOMEM. */
int ns_server_reload_tls(struct ns_server *s);

#endif
