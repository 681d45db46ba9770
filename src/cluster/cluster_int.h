/* Private to the cluster room (cluster.c, cluster_submit.c, dedup.c,
 * integrity.c): the cluster state of a server and what its files call of
 * each other. */
#ifndef RAFTNS_CLUSTER_INT_H
#define RAFTNS_CLUSTER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cluster/cluster.h"
#include "cluster/integrity.h"
#include "raftns/clock.h"
#include "raftns/replay.h"

struct fwd;
struct shared;
struct echo;

struct ns_cluster {
    uv_loop_t *loop;
    const struct ns_clock *clock; /* borrowed (ns_cluster_set_clock); NULL =
                                     the loop's uv_now */
    bool driven; /* ns_cluster_start_driven: ticked by the server, no timer */
    struct ns_state *state;       /* borrowed */
    struct ns_node *node;         /* borrowed */
    const struct ns_waits *waits; /* borrowed: the server's */
    void (*tick_hook)(void *ctx); /* ns_cluster_set_tick_hook */
    void *tick_ctx;
    uint64_t id;
    char *secret;
    const struct ns_cluster_config *file; /* borrowed, may be NULL */
    struct ns_peer *leader_peer;
    uint64_t peer_leader_id;
    struct ns_wait_list waiting; /* retried on every tick */
    uint64_t leaderless_since;   /* uv_now; 0 = a leader is known */
    struct shared *shared;
    uv_timer_t timer;
    bool started;
    bool stopping;
    bool read_index_inflight;
    bool members_recorded;
    struct ns_replay replay; /* nonces of signed private requests */
    /* A signed request's nonce: this prefix, random per process, then how
     * many were signed before; unique without a random draw each. */
    uint8_t nonce_prefix[NS_SIGN_NONCE_LEN / 2];
    uint64_t nonces_used;
    /* Test hook RAFTNS_TEST_READY_DELAY_MS (docs/readiness.md): the leader's
     * read index is only handed to the node this long after it arrived, so a
     * test can hold a restarted follower "not ready" while it knows a leader.
     * 0 = off. */
    uint64_t test_ready_delay_ms;
    uint64_t delayed_index; /* the read index held back */
    uint64_t delayed_until; /* uv_now; 0 = nothing held */
    uint64_t n_refused;     /* private requests refused (metrics) */
    uint64_t next_refusal_log_ms;
    uint64_t reqid_run, reqid_seq; /* this process's request ids */
    /* Test hook RAFTNS_TEST_FORWARD_ECHO_MS (docs/exactly-once.md): every
     * forwarded write is sent to the leader once more this long after its
     * first send, as a connection that delivers late would. 0 = off. */
    uint64_t test_echo_ms;
    struct echo *echoes;
    struct ns_integrity integrity; /* divergence work (integrity.h) */
};

/* Milliseconds of the cluster's clock. */
static inline uint64_t ns_cluster_now(const struct ns_cluster *cl)
{
    return cl->clock != NULL ? ns_clock_now(cl->clock) : uv_now(cl->loop);
}

/* Aims the leader connection at the current leader: 0, or NS_ENOTLEADER when
 * none is known (or it is this node) (cluster.c). */
int ns_cluster_aim_leader(struct ns_cluster *cl);

/* --- dedup.c --- */
/* Proposes bytes (borrowed) on the leader, sharing the entry of an identical
 * pending command (equal but for the leader time, and with any_id for the
 * request id: only a first send may share another id's entry,
 * docs/exactly-once.md). As ns_node_propose_indexed: 0 (cb exactly once) or
 * an NS_E* code (cb never runs). */
int ns_dedup_propose(struct ns_cluster *cl, const uint8_t *bytes, size_t len,
                     bool any_id, ns_node_index_cb cb, void *arg);

/* --- cluster_submit.c --- */
/* This process's request-id run, and the test hooks of the write path. */
void ns_cluster_submit_init(struct ns_cluster *cl);
/* Every cluster tick and role change: late copies due (test hook). */
void ns_cluster_submit_tick(struct ns_cluster *cl);
/* Frees what the write path still holds (the server is destroyed). */
void ns_cluster_submit_close(struct ns_cluster *cl);

#endif
