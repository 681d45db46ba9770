/* Observability of one raftns process: request counters and latency
 * histograms (process-wide), and the observer object that serves the HTTP port
 * (/status, /metrics, /healthz) and drives divergence detection (checkpoints,
 * digest reports, majority verdicts, recovery: docs/divergence.md). It
 * changes no replicated state except by proposing CHECKPOINT and VERDICT
 * commands; a diverged node replaces its own state with the leader's copy. */
#ifndef RAFTNS_METRICS_H
#define RAFTNS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/buf.h"
#include "raftns/fsm.h"
#include "raftns/node.h"
#include "raftns/server.h"

#define NS_CHECKPOINT_ENTRIES 1000 /* default: checkpoint every N commands */
#define NS_CHECKPOINT_MS 30000     /* ... or after T ms with any command */

/* --- process-wide counters (loop thread only) --- */

/* One answered request: req_code, the reply's code (non-zero counts as an
 * error), and the time from dispatch to reply in nanoseconds. */
void ns_metrics_request(int32_t req_code, int32_t reply_code,
                        uint64_t elapsed_ns);
/* How late a periodic timer fired (nanoseconds): how long the event loop was
 * busy when it should have run it (src/observe/observe.c measures). */
void ns_metrics_loop_lag(uint64_t lag_ns);
/* A write this follower forwarded to the leader. */
void ns_metrics_forwarded(void);
/* A read this node could not answer itself, answered by another node and
 * relayed (src/cluster/held_read.c). */
void ns_metrics_read_forwarded(void);
/* A copy of a write the leader's state machine did not apply again: applied
 * before (duplicate) or refused (stale), docs/exactly-once.md. */
void ns_metrics_write_copy(bool stale);
uint64_t ns_metrics_write_copies(bool stale);
/* A private request refused for its signature (cluster.c). */
void ns_metrics_private_refused(void);
/* Brokers removed by expiry (counted where the EXPIRE command is proposed). */
void ns_metrics_expired(uint64_t n_brokers);
/* A request refused by the ACL gate; reason is a static label of
 * ns_acl_verdict_label ("no_access_key", "signature_mismatch", "role", ...). */
void ns_metrics_acl_refused(const char *reason);
/* A limit that refused or closed something (raftns_limit_refusals_total). */
enum ns_metrics_limit_kind {
    NS_LIMIT_CONNS_NODE,    /* a connection over clientMaxConnections */
    NS_LIMIT_CONNS_IP,      /* ... over clientMaxConnectionsPerIp */
    NS_LIMIT_BUFFER_BUDGET, /* a connection closed over clientBufferBudgetBytes
                             */
    NS_LIMIT_HTTP_EVICTED,  /* an idle HTTP connection closed for a new one */
    NS_LIMIT_COMMAND_SIZE, /* a write whose command is too large to replicate */
    NS_LIMIT_TOPICS,       /* a registration over NS_REGISTER_MAX_TOPICS */
    NS_LIMIT_N_KINDS
};
void ns_metrics_limit(enum ns_metrics_limit_kind kind);
/* Appends the counters and histograms as Prometheus text. */
void ns_metrics_encode(struct ns_buf *out);

/* --- the observer --- */

struct ns_observe_config {
    const char *http_addr; /* borrowed; IPv4 "a.b.c.d:port"; NULL = none */
    unsigned checkpoint_entries; /* 0 = NS_CHECKPOINT_ENTRIES */
    unsigned checkpoint_ms;      /* 0 = NS_CHECKPOINT_MS */
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
/* Bound HTTP port after a successful start, 0 otherwise. */
int ns_observe_http_port(const struct ns_observe *o);
/* Closes the listener, HTTP connections and timer; cb (borrowed arg) runs
 * once when all are closed. Idempotent. Call before stopping the node. */
void ns_observe_stop(struct ns_observe *o, ns_observe_stop_cb cb, void *arg);
void ns_observe_destroy(struct ns_observe *o);

/* Appends the /status JSON document (also the NS_CODE_STATUS reply body). */
int ns_observe_status_json(const struct ns_observe *o, struct ns_buf *out);

#endif
