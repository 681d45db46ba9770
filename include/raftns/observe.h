/* The observer of one raftns process: it serves the HTTP port (/status,
 * /metrics, /healthz) and drives divergence detection (checkpoints, digest
 * reports, majority verdicts, recovery: docs/divergence.md) over the server's
 * public API (raftns/server.h). It changes no replicated state except by
 * proposing CHECKPOINT and VERDICT commands; a diverged node replaces its own
 * state with the leader's copy. */
#ifndef RAFTNS_OBSERVE_H
#define RAFTNS_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/buf.h"
#include "raftns/fsm.h"
#include "raftns/metrics.h"
#include "raftns/node.h"
#include "raftns/server.h"

struct ns_observe_config {
    const char *http_addr; /* borrowed; IPv4 "a.b.c.d:port"; NULL = none */
    /* 0 = the defaults NS_CHECKPOINT_ENTRIES, NS_CHECKPOINT_MS (1000 commands,
     * 30 s: src/cluster/integrity.h) */
    unsigned checkpoint_entries;
    unsigned checkpoint_ms;
    /* Test hook: at this log index the node corrupts its own state (outside
     * the log) so the next verdict finds it diverged. 0 = off. observe.c fills
     * it from the environment variable RAFTNS_TEST_CORRUPT_AT. */
    uint64_t test_corrupt_at;
};

struct ns_observe;

typedef void (*ns_observe_stop_cb)(void *arg);

/* Creates the observer over state, node and server (borrowed; they must
 * outlive it). 0 (*out owned: ns_observe_stop then ns_observe_destroy) or
 * NS_ENOMEM. */
int ns_observe_create(uv_loop_t *loop, const struct ns_observe_config *cfg,
                      struct ns_state *state, struct ns_node *node,
                      struct ns_server *server, struct ns_observe **out);
/* Installs the node's apply hook, starts the checkpoint timer and listens on
 * the HTTP address. 0 or NS_EIO / NS_EINVAL (logged). Call after
 * ns_server_create, before ns_node_start. */
int ns_observe_start(struct ns_observe *o);
/* What the observer's timer runs every NS_CKPT_TICK_MS (200 ms): checkpoint
 * proposals, digest reports and verdicts, state copies. For a driver that
 * owns time (tests/cluster/sim.h: the timer never runs on its unrun loop). */
void ns_observe_tick(struct ns_observe *o);
/* Bound HTTP port after a successful start, 0 otherwise. */
int ns_observe_http_port(const struct ns_observe *o);
/* Closes the listener, HTTP connections and timer; cb (borrowed arg) runs
 * once when all are closed. Idempotent. Call before stopping the node. */
void ns_observe_stop(struct ns_observe *o, ns_observe_stop_cb cb, void *arg);
void ns_observe_destroy(struct ns_observe *o);

/* Appends the /status JSON document (also the NS_CODE_STATUS reply body). */
int ns_observe_status_json(const struct ns_observe *o, struct ns_buf *out);

#endif
