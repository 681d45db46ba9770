/* Private structures of the observer (status.c, http.c, checkpoint.c): the
 * HTTP listener and its connections, and the checkpoint bookkeeping. Not a
 * public interface: only those files include it. */
#ifndef RAFTNS_OBSERVE_H
#define RAFTNS_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/metrics.h"
#include "server_int.h"

#define NS_HTTP_MAX_REQUEST 8192 /* request line + headers */
#define NS_HTTP_MAX_CONNS 1024   /* more evict the oldest unanswered one */
#define NS_HTTP_TIMEOUT_MS 2000  /* a request must arrive within this */
#define NS_CKPT_RING 16          /* remembered (index, digest) marks */
#define NS_CKPT_TICK_MS 200

struct ns_http_conn;

/* A state digest a node computed when it applied the checkpoint at index. */
struct ns_ckpt_mark {
    uint64_t index;
    uint64_t digest;
};

struct ns_checkpoint {
    unsigned every_entries;
    unsigned every_ms;
    struct ns_ckpt_mark ring[NS_CKPT_RING];
    size_t ring_next;          /* slot of the next mark */
    struct ns_ckpt_mark last;  /* index 0 = none yet */
    uint64_t applied_at_last;  /* state->n_applied after the last checkpoint */
    uint64_t first_pending_ms; /* uv_now of the first command since, or 0 */
    bool in_flight;
    bool diverged;
    struct ns_ckpt_mark expected; /* the leader's mark that disagreed */
    uint64_t actual_digest;       /* ours at expected.index */
    uint64_t corrupt_at;          /* test hook; 0 = off */
    bool corrupted;
};

struct ns_observe {
    uv_loop_t *loop;
    struct ns_state *state; /* borrowed */
    struct ns_node *node;   /* borrowed */
    struct ns_server *srv;  /* borrowed */
    char http_addr[64];     /* "" = no HTTP port */
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
    size_t n_http_live; /* of those, not closing */
    struct ns_checkpoint ckpt;
};

/* --- status.c --- */
/* Close callback for every handle of the observer (data = the observer). */
void ns_observe_handle_closed(uv_handle_t *h);
/* Appends the gauges of /metrics (node, state, connections). */
void ns_observe_gauges(const struct ns_observe *o, struct ns_buf *out);
/* /healthz: ready and not diverged. */
bool ns_observe_is_healthy(const struct ns_observe *o);
bool ns_observe_is_diverged(const struct ns_observe *o);

/* --- http.c --- */
/* Binds and listens on o->http_addr. 0 or NS_EINVAL / NS_EIO (logged). */
int ns_http_start(struct ns_observe *o);
/* Closes the listener and every connection (each close counted down through
 * ns_observe_handle_closed). */
void ns_http_stop(struct ns_observe *o);

/* --- checkpoint.c --- */
void ns_checkpoint_init(struct ns_checkpoint *c, unsigned every_entries,
                        unsigned every_ms, uint64_t corrupt_at);
/* ns_node_apply_hook (arg = the observer): remembers digests at checkpoints,
 * compares the leader's; true = diverged. */
bool ns_checkpoint_on_apply(void *arg, uint64_t index, const uint8_t *cmd,
                            size_t len, const struct ns_apply_result *res);
/* Timer tick: the leader proposes a CHECKPOINT when one is due. */
void ns_checkpoint_tick(struct ns_observe *o);

#endif
