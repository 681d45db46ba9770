/* Private structures of the observer (observe.c, http.c): the HTTP listener
 * and its connections, and the timer that drives the cluster's divergence
 * work (cluster/integrity.h). The observer sits over the server's public API
 * (raftns/server.h, raftns/metrics.h) and the cluster room; no room below
 * includes this header. */
#ifndef RAFTNS_OBSERVE_INT_H
#define RAFTNS_OBSERVE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/diverge.h"
#include "raftns/metrics.h"
#include "raftns/observe.h"
#include "cluster/integrity.h"
#include "raftns/server.h"

#define NS_HTTP_MAX_REQUEST 8192 /* request line + headers */
#define NS_HTTP_MAX_CONNS 1024   /* more evict the oldest unanswered one */
#define NS_HTTP_TIMEOUT_MS 2000  /* a request must arrive within this */
#define NS_CKPT_TICK_MS 200

struct ns_http_conn;

struct ns_observe {
    uv_loop_t *loop;
    struct ns_state *state;  /* borrowed */
    struct ns_node *node;    /* borrowed */
    struct ns_server *srv;   /* borrowed: read through raftns/server.h only */
    struct ns_integrity *ig; /* borrowed: the server's cluster's */
    char http_addr[64];      /* "" = no HTTP port */
    int http_port;
    uv_tcp_t listener;
    uv_timer_t timer;
    int n_open_handles;
    bool started;
    bool stopping;
    ns_observe_stop_cb stop_cb;
    void *stop_arg;
    struct ns_http_conn *conns; /* open HTTP connections, newest first */
    size_t n_conns;
    size_t n_http_live;     /* of those, not closing */
    uint8_t scratch[65536]; /* TLS ciphertext read (http.c) */
};

/* --- observe.c --- */
/* Close callback for every handle of the observer (data = the observer). */
void ns_observe_handle_closed(uv_handle_t *h);
/* Appends the gauges of /metrics (node, state, connections). */
void ns_observe_gauges(const struct ns_observe *o, struct ns_buf *out);
/* /healthz: ready and not diverged. */
bool ns_observe_is_healthy(const struct ns_observe *o);
bool ns_observe_is_diverged(const struct ns_observe *o);

/* --- observe_ops.c --- */
/* Appends raftns_build_info, process_*, the quorum gauges and the leader's
 * per-member lag to /metrics. */
void ns_observe_ops_metrics(const struct ns_observe *o, struct ns_buf *out);
/* Writes the "version", "git_revision" and "quorum" members of /status. */
struct ns_json_writer;
void ns_observe_put_ops(struct ns_json_writer *w, const struct ns_observe *o);

/* --- http.c --- */
/* Binds and listens on o->http_addr. 0 or NS_EINVAL / NS_EIO (logged). */
int ns_http_start(struct ns_observe *o);
/* Closes the listener and every connection (each close counted down through
 * ns_observe_handle_closed). */
void ns_http_stop(struct ns_observe *o);

#endif
