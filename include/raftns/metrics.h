/* The request counters and latency histograms of one raftns process
 * (process-wide, loop thread only; src/metrics/metrics.c). A sink every room
 * may bump: it calls nothing and knows no room. The observer that prints them
 * on the HTTP port is raftns/observe.h. */
#ifndef RAFTNS_METRICS_H
#define RAFTNS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

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
 * relayed (src/gateway/held_read.c). */
void ns_metrics_read_forwarded(void);
/* A copy of a write the leader's state machine did not apply again: applied
 * before (duplicate) or refused (stale), docs/exactly-once.md. */
void ns_metrics_write_copy(bool stale);
uint64_t ns_metrics_write_copies(bool stale);
/* A command this node encoded for the raft log in format version v
 * (raftns/command.h), and how many so far. */
void ns_metrics_command_written(uint8_t v);
uint64_t ns_metrics_commands_written(uint8_t v);
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

#endif
