/* Private structures of the observer (observe.c, http.c, checkpoint.c,
 * verdict.c, recovery.c): the HTTP listener and its connections, checkpoint
 * proposals, digest reports and verdicts, and state recovery. Not a public
 * interface: only those files include it. */
#ifndef RAFTNS_OBSERVE_H
#define RAFTNS_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/diverge.h"
#include "raftns/metrics.h"
#include "server/server_int.h"

#define NS_HTTP_MAX_REQUEST 8192 /* request line + headers */
#define NS_HTTP_MAX_CONNS 1024   /* more evict the oldest unanswered one */
#define NS_HTTP_TIMEOUT_MS 2000  /* a request must arrive within this */
#define NS_CKPT_TICK_MS 200

struct ns_http_conn;

/* The leader's CHECKPOINT proposals (checkpoint.c); the digests themselves
 * are the node's (raftns/diverge.h). */
struct ns_checkpoint {
    unsigned every_entries;
    unsigned every_ms;
    uint64_t n_pending;        /* commands since the last checkpoint, not
                                  counting CHECKPOINT and VERDICT entries */
    uint64_t first_pending_ms; /* uv_now of the first of them, or 0 */
    bool in_flight;
    bool wanted;         /* a recovering node waits for one (verdict.c) */
    uint64_t corrupt_at; /* test hook; 0 = off */
    bool corrupted;
};

/* Reports, the leader's tally, verdicts and step-down (verdict.c). */
struct ns_verdicts {
    struct ns_diverge_tally tally;
    bool leading;           /* the tally belongs to this term's leadership */
    bool in_flight;         /* a VERDICT proposal awaits its outcome */
    bool report_in_flight;  /* a DIGEST_REPORT awaits its answer */
    uint64_t reported_to;   /* leader the last report went to */
    uint64_t reported_upto; /* newest mark that report carried */
    uint64_t last_report_ms;
    uint64_t last_transfer_ms;
    uint64_t n_reports_sent, n_reports_received, n_proposed;
};

/* Copying a healthy state (recovery.c): the diverged node's fetch and the
 * leader's cached encoding. */
struct ns_recovery {
    bool fetching;
    uint64_t next_ms;    /* no new attempt before this uv_now */
    uint64_t backoff_ms; /* grows on failures */
    uint64_t at;         /* applied index the chunks belong to, 0 = first */
    uint64_t total;
    unsigned n_chunks; /* replies of the copy under way */
    struct ns_buf got;
    uint64_t n_attempts, n_failed;
    uint8_t *cache; /* owned: the encoding served, at cache_at */
    size_t cache_len;
    uint64_t cache_at, cache_used_ms;
    uint64_t n_served;
    size_t chunk; /* test hook RAFTNS_TEST_FETCH_CHUNK; 0 = a frame's worth */
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
    uint64_t last_tick_ns; /* uv_hrtime of the last tick (loop lag) */
    int n_open_handles;
    bool started;
    bool stopping;
    ns_observe_stop_cb stop_cb;
    void *stop_arg;
    struct ns_http_conn *conns; /* open HTTP connections, newest first */
    size_t n_conns;
    size_t n_http_live; /* of those, not closing */
    struct ns_checkpoint ckpt;
    struct ns_verdicts verdicts;
    struct ns_recovery recovery;
};

/* --- observe.c --- */
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
/* ns_node_apply_hook (arg = the observer): counts what a checkpoint must
 * cover and runs the corruption test hook; always false (the node judges
 * verdicts itself). */
bool ns_checkpoint_on_apply(void *arg, uint64_t index, const uint8_t *cmd,
                            size_t len, const struct ns_apply_result *res);
/* Timer tick: the leader proposes a CHECKPOINT when one is due. */
void ns_checkpoint_tick(struct ns_observe *o);

/* --- verdict.c --- */
/* Timer tick: a follower reports its unjudged digests to the leader; the
 * leader tallies its own, proposes a VERDICT when a majority agrees, and
 * hands leadership over while it is itself diverged. */
void ns_verdict_tick(struct ns_observe *o);

/* --- recovery.c --- */
/* Timer tick: a diverged follower copies the leader's state; the leader drops
 * an encoding nobody fetched for a while. */
void ns_recovery_tick(struct ns_observe *o);
/* Frees the fetch buffer and the cached encoding (observer destroy). */
void ns_recovery_close(struct ns_recovery *r);

#endif
