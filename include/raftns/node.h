/* One raft node on a libuv loop (canonical/raft 0.15 over raft_uv): the
 * replicated state machine wiring, the leader barrier, readiness, and a
 * proposal queue that waits for a leader. It is not the client protocol
 * (src/server) and holds no route logic (raft/fsm.c). Everything runs on the
 * loop thread. */
#ifndef RAFTNS_NODE_H
#define RAFTNS_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/fsm.h"

#define NS_NODE_WRITE_WAIT_MS                                                  \
    3000 /* a proposal waits this long for a leader                            \
          */

struct ns_node_config {
    uint64_t id;                  /* raft server id, >= 1 */
    const char *data_dir;         /* borrowed; created if missing */
    const char *raft_addr;        /* borrowed; IPv4 "a.b.c.d:port" */
    unsigned election_timeout_ms; /* 0 = 1000 */
    unsigned heartbeat_ms;        /* 0 = 100 */
    unsigned snapshot_threshold;  /* 0 = 4096 */
    unsigned snapshot_trailing;   /* 0 = 1024 */
};

struct ns_node;

/* Outcome of a proposal: status 0 (res is the local FSM's result, borrowed for
 * the call), NS_ETIMEDOUT (no leader within NS_NODE_WRITE_WAIT_MS; not
 * applied), NS_ENOTLEADER (leadership lost: the outcome is UNKNOWN),
 * NS_ESHUTDOWN (node stopping; unknown for a proposal that had reached raft),
 * NS_EIO (disk error), NS_ENOMEM. res is NULL unless 0. */
typedef void (*ns_node_apply_cb)(void *arg, int status,
                                 const struct ns_apply_result *res);
/* status 0 when everything before the barrier is applied, else as above. */
typedef void (*ns_node_barrier_cb)(void *arg, int status);
/* Called when the node changes role or becomes ready (arg of
 * ns_node_set_watch). */
typedef void (*ns_node_watch_cb)(void *arg);
typedef void (*ns_node_stop_cb)(void *arg);

/* Creates the node over state (borrowed; must outlive the node): data dir,
 * transport, raft_init, bootstrap as the only voter on a pristine dir. Logs the
 * reason on failure. Returns 0 (*out owned: ns_node_stop then ns_node_destroy),
 * NS_EIO or NS_ENOMEM. On an error *out is NULL, or non-NULL when raft was
 * initialised: stop and destroy it then. */
int ns_node_create(uv_loop_t *loop, const struct ns_node_config *cfg,
                   struct ns_state *state, struct ns_node **out);
/* raft_start and the role watcher. 0 or NS_EIO (logged). */
int ns_node_start(struct ns_node *n);
/* Called (borrowed arg) after each role change and when the node becomes ready.
 */
void ns_node_set_watch(struct ns_node *n, ns_node_watch_cb cb, void *arg);
/* Called (borrowed arg) after every command entry the FSM applied, with its
 * log index, the command bytes and the result (all borrowed for the call).
 * Returning true marks the node diverged (src/server/checkpoint.c). */
typedef bool (*ns_node_apply_hook)(void *arg, uint64_t index,
                                   const uint8_t *cmd, size_t len,
                                   const struct ns_apply_result *res);
void ns_node_set_apply_hook(struct ns_node *n, ns_node_apply_hook fn,
                            void *arg);

/* Copies len bytes of an encoded command (borrowed) and replicates them; queued
 * while there is no leader whose barrier completed. Returns 0 (cb runs exactly
 * once, never before this returns) or NS_ENOMEM / NS_ESHUTDOWN (cb never runs).
 */
int ns_node_propose(struct ns_node *n, const uint8_t *bytes, size_t len,
                    ns_node_apply_cb cb, void *arg);
/* Linearizable read point: 0 (cb exactly once, later) or an NS_E* code (never).
 */
int ns_node_barrier(struct ns_node *n, ns_node_barrier_cb cb, void *arg);

bool ns_node_is_leader(
    const struct ns_node *n); /* leader and barrier applied */
bool ns_node_is_ready(
    const struct ns_node *n); /* log replayed and leader known */
bool ns_node_is_diverged(
    const struct ns_node *n); /* an entry could not be decoded */
uint64_t ns_node_leader_id(const struct ns_node *n); /* 0 when unknown */
uint64_t ns_node_last_applied(const struct ns_node *n);

/* Graceful stop: fails queued proposals with NS_ESHUTDOWN, transfers leadership
 * if leader, closes raft, the transport and every handle; cb (borrowed arg)
 * runs once when all is closed. Idempotent: a second call does nothing. */
void ns_node_stop(struct ns_node *n, ns_node_stop_cb cb, void *arg);
/* Frees a node that was never started or whose stop callback ran. */
void ns_node_destroy(struct ns_node *n);

#endif
