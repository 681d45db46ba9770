/* The transport room's API (docs/ARCHITECTURE.md): the client listener, its
 * connections (frames in, encoded replies out, flow control, limits, TLS) and
 * the node-to-node client (peer.h). It knows no handler: a decoded request and
 * a closing connection are reported through the hooks of struct ns_net, which
 * the composition root (src/server/server.c) sets. */
#ifndef RAFTNS_NET_H
#define RAFTNS_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "net/conn_state.h"
#include "raftns/buf.h"
#include "raftns/clock.h"
#include "raftns/config.h"
#include "raftns/remoting.h"
#include "raftns/server.h"

#define NS_CONN_MAX_INFLIGHT                                                   \
    1024 /* pending writes per connection: pause reads */
#define NS_CONN_OUT_PAUSE                                                      \
    (8u * 1024u * 1024u) /* unflushed output that pauses reads */
#define NS_CONN_OUT_MAX                                                        \
    (64u * 1024u * 1024u) /* unflushed output that closes                      \
                           */
#define NS_READ_CHUNK 65536
/* A TLS handshake on the client port must finish this long after its first
 * byte. */
#define NS_TLS_HANDSHAKE_MS 10000

struct ns_conn;
struct ns_tls;
struct ns_ip_count;
/* Attachments of the rooms above (opaque here: net never dereferences them,
 * it only keeps the pointer a connection's owner room set). */
struct ns_pending;
struct ns_live;

/* TLS of the client port and of node-to-node requests (conn_tls.c). */
struct ns_net_tls {
    enum ns_tls_mode mode;
    struct ns_tls_ctx *ctx;      /* one reference; NULL when disabled */
    struct ns_tls_ctx *peer_ctx; /* client side: enforcing, or a trust CA */
    char *cert, *key, *trust;    /* owned copies for reloads */
    enum ns_tls_verify client_auth;
    bool http; /* HTTPS on the observer's port (observe/http.c) */
};

/* This node's client-port limits and their bookkeeping (conn_limit.c). */
struct ns_conn_limits {
    struct ns_client_limits cfg;
    struct ns_ip_count **buckets; /* open connections per source address */
    size_t
        buffered; /* input and output buffers of all connections (capacity) */
    uint64_t last_log_ms;
    uint64_t n_unlogged; /* refusals since the last logged one */
};

struct ns_net {
    uv_loop_t *loop;
    /* The server's clock (borrowed); NULL = the loop's uv_now. */
    const struct ns_clock *clock;
    /* What the transport reports upward (set by the composition root, so that
     * net knows no handler), with ctx as their first argument: one decoded
     * request (non-zero: close the connection), and a connection that is
     * closing (before it is freed). */
    int (*on_request)(void *ctx, struct ns_conn *c, const struct ns_cmd *cmd);
    void (*on_conn_closed)(void *ctx, struct ns_conn *c);
    void *ctx;
    char client_addr[64];
    int port; /* bound, after ns_net_listen */
    uv_tcp_t listener;
    bool listening; /* listener initialised: ns_net_stop closes it */
    void (*stopped)(void *arg);
    void *stopped_arg;
    struct ns_conn *conn_head, *conn_tail; /* least recently active first */
    size_t n_conns;
    struct ns_conn *dirty; /* flushed this loop turn */
    uint64_t next_conn_id;
    struct ns_net_tls tls;
    struct ns_conn_limits limits;
    uint8_t scratch[NS_READ_CHUNK];
};

/* Where a connection without a socket sends its bytes (ns_conn_open_sink):
 * the simulated cluster's clients and node-to-node links. */
struct ns_conn_sink {
    /* The connection's encoded replies, once per flush (bytes borrowed for
     * the call). It must not call into the server. */
    void (*write)(void *arg, const uint8_t *p, size_t n);
    /* The connection closed (ns_conn_close): nothing more is written. Its
     * owner frees it later with ns_conn_free_sink, outside this call. */
    void (*closed)(void *arg, struct ns_conn *c);
    void *arg;
};

/* Milliseconds of the net's clock. */
static inline uint64_t ns_net_now(const struct ns_net *net)
{
    return net->clock != NULL ? ns_clock_now(net->clock) : uv_now(net->loop);
}

/* One client connection. The fields up to `state` are the transport's; a room
 * above reads id and peer (logs) and keeps its own attachment in the last
 * fields. */
struct ns_conn {
    uv_tcp_t tcp; /* first: the handle is the allocation (unused by a sink) */
    const struct ns_conn_sink *sink; /* borrowed; NULL for a socket */
    struct ns_net *net;
    struct ns_conn *prev, *next; /* net list, least recently active first */
    struct ns_conn *dirty_next;
    uint64_t id;
    char peer[64];
    char ip[48];        /* source address (per-address limit) */
    bool ip_counted;    /* counted in the net's per-address table */
    size_t acct;        /* bytes counted in the net's buffer budget */
    unsigned n_held;    /* requests taken off the loop: reads paused */
    size_t held_bytes;  /* bytes those requests hold */
    struct ns_buf rbuf; /* partial frame bytes */
    struct ns_buf out;  /* encoded replies not yet handed to uv_write */
    uv_write_t wreq;
    uint8_t *wdata; /* owned while a write is in flight, else NULL */
    size_t wlen;
    uint64_t last_active;
    /* requests answered later (gateway/pending.c counts them): reads pause
     * over NS_CONN_MAX_INFLIGHT */
    unsigned n_inflight;
    enum ns_conn_state state; /* changed by ns_conn_set_state only */
    bool dirty;               /* in net->dirty: flushed this loop turn */
    struct ns_tls *tls;    /* owned, NULL for a plain connection (conn_tls.c) */
    uint64_t tls_deadline; /* uv_now by which the TLS handshake must finish */
    /* attachments: the gateway's replies waiting for apply (detached by its
     * on_conn_closed hook), the liveness room's brokers that registered over
     * this connection */
    struct ns_pending *pending;
    struct ns_live *brokers;
};

/* --- net.c: the net of a server --- */
/* Copies the client address, the limits and the TLS settings of cfg
 * (borrowed); the hooks are set by the caller before ns_net_listen. 0, NS_EIO
 * (a TLS file cannot be loaded: logged) or NS_ENOMEM (nothing to close). */
int ns_net_init(struct ns_net *net, uv_loop_t *loop,
                const struct ns_server_config *cfg);
void ns_net_close(struct ns_net *net);
/* Binds and listens on the client address. 0, NS_EINVAL (not an IPv4
 * address: nothing to stop) or NS_EIO (logged; ns_net_stop closes the
 * listener). */
int ns_net_listen(struct ns_net *net);
/* Closes every connection and the listener; stopped(arg) runs once when the
 * listener is closed (at once when it never listened). */
void ns_net_stop(struct ns_net *net, void (*stopped)(void *arg), void *arg);

/* --- conn.c --- */
/* A connection with no socket: its bytes come in through ns_conn_input and
 * its replies go to sink (borrowed, must outlive the connection); peer names
 * it in logs and is its source address for the limits (copied). It is open
 * at once; everything else is as for an accepted connection. 0 (*out
 * borrowed until sink->closed; then ns_conn_free_sink) or NS_ENOMEM. */
int ns_conn_open_sink(struct ns_net *net, const char *peer,
                      const struct ns_conn_sink *sink, struct ns_conn **out);
/* Frees a sink connection whose closed callback ran. */
void ns_conn_free_sink(struct ns_conn *c);
/* Cuts and dispatches plaintext bytes (borrowed) of a connection, buffering a
 * partial frame; conn_tls.c feeds it what it decrypted, a sink connection's
 * owner what its client sent. */
void ns_conn_input(struct ns_conn *c, const uint8_t *p, size_t n);
/* Closes (idempotent); freed in the close callback. reason is logged when
 * non-NULL. */
void ns_conn_close(struct ns_conn *c, const char *reason);
/* Moves c to state to; asserts the change is legal (conn_state.h). */
void ns_conn_set_state(struct ns_conn *c, enum ns_conn_state to);
/* Whether c is closing or closed: it sends and dispatches nothing more. */
static inline bool ns_conn_is_closing(const struct ns_conn *c)
{
    return c->state >= NS_CONN_CLOSING;
}
/* Appends an encoded frame and schedules a flush. 0, or NS_ENOMEM/NS_ETOOBIG
 * (closed). */
int ns_conn_queue(struct ns_conn *c, const struct ns_buf *frame);
/* Flushes every connection with pending output (once per loop turn). */
void ns_conn_flush_all(struct ns_net *net);
/* Closes connections idle longer than idle_ms. */
void ns_conn_sweep_idle(struct ns_net *net, uint64_t idle_ms);
/* Re-evaluates read pausing after an in-flight request finished. */
void ns_conn_update_flow(struct ns_conn *c);
/* A request of c that holds bytes (counted in the buffer budget) is handled
 * off the loop: c dispatches nothing more until ns_conn_unhold (request order
 * is kept). */
void ns_conn_hold(struct ns_conn *c, size_t bytes);
void ns_conn_unhold(struct ns_conn *c, size_t bytes);

/* --- conn_tls.c --- */
/* SIGHUP: reloads the certificate files; on failure the old ones stay. 0,
 * NS_EIO or NS_ENOMEM. */
int ns_conn_tls_reload(struct ns_net *net);
/* Closes the connections whose TLS handshake did not finish within
 * NS_TLS_HANDSHAKE_MS (logged), so a stalled handshake holds no session for
 * the whole idle time. Walks the connections only when TLS is on. */
void ns_conn_tls_sweep_handshakes(struct ns_net *net);

#endif
