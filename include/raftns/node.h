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

#include "raftns/diverge.h"
#include "raftns/fsm.h"

struct ns_node_config {
    uint64_t id;                  /* raft server id, >= 1 */
    const char *data_dir;         /* borrowed; created if missing */
    const char *raft_addr;        /* borrowed; IPv4 "a.b.c.d:port" */
    unsigned election_timeout_ms; /* 0 = 1000 */
    unsigned heartbeat_ms;        /* 0 = 50 */
    unsigned snapshot_threshold;  /* 0 = 4096 */
    unsigned snapshot_trailing;   /* 0 = 1024 */
    /* 0 = 64 MiB: a snapshot also follows once the entries applied since the
     * last one pass this many bytes, and it keeps only the newest entries
     * within a quarter of it (raft/node/node_log.c). */
    uint64_t snapshot_bytes;
    /* 0 = 16 MiB: a state of at least this many bytes (estimated:
     * ns_state_bytes) is encoded for snapshots and checkpoint digests
     * in a forked child, smaller ones on the loop (raft/node/node_fsm.c); 1 =
     * always forked. */
    uint64_t fork_state_bytes;
    /* Initial voters when the data dir is pristine (borrowed array). NULL/0:
     * this node alone. A node that is not in the list does not bootstrap: it
     * waits to be added (ns_node_member_add on the leader). */
    const struct ns_node_member *bootstrap;
    size_t n_bootstrap;
    /* Cluster mode: readiness also needs ns_node_set_ready_index (the
     * leader's read index at join) unless this node is the leader. */
    bool remote_ready;
    /* Cluster secret keying the peer handshake (borrowed; copied). NULL is
     * the empty secret. Every member must have the same one. */
    const char *secret;
    /* Largest payload of one raft message a peer may send (an AppendEntries'
     * entries, a snapshot); 0 = 1 GiB. */
    uint64_t max_message;
    /* raftTls: TLS 1.3 between members, each presenting its certificate and
     * verifying the other's against the CA (and the dialed IP). PEM paths,
     * borrowed; all NULL = plain TCP, otherwise all three are needed. */
    const char *tls_cert_path, *tls_key_path, *tls_ca_path;
    /* How long a proposal waits for a leader; 0 = the write wait's default
     * (raftns/waits.h). */
    unsigned write_wait_ms;
};

/* Counters of the raft peer port since the node was created. */
struct ns_node_peer_stats {
    uint64_t accepted;   /* inbound connections authenticated and relayed */
    uint64_t connected;  /* outbound connections authenticated */
    uint64_t refused;    /* handshakes that failed or timed out, non-members,
                            over the cap of unauthenticated connections */
    uint64_t violations; /* connections closed by the message checker */
    uint64_t pauses;     /* relay reads paused by backpressure */
};

/* A member of the raft configuration. */
struct ns_node_member {
    uint64_t id;
    const char *raft_addr; /* borrowed */
    int role;              /* enum ns_node_member_role (lists only) */
};

enum ns_node_member_role {
    NS_MEMBER_VOTER = 0,
    NS_MEMBER_STANDBY = 1,
    NS_MEMBER_SPARE = 2,
};

enum ns_node_role {
    NS_ROLE_UNAVAILABLE = 0,
    NS_ROLE_FOLLOWER = 1,
    NS_ROLE_CANDIDATE = 2,
    NS_ROLE_LEADER = 3,
};

struct ns_node;

/* Outcome of a proposal: status 0 (res is the local FSM's result, borrowed for
 * the call), NS_ETIMEDOUT (no leader within the write wait; not
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
 * NS_EINVAL (a bad setting: a raftTls file that does not load, a data dir path
 * too long), NS_EIO or NS_ENOMEM. On an error *out is NULL, or non-NULL when
 * raft was initialised: stop and destroy it then. */
int ns_node_create(uv_loop_t *loop, const struct ns_node_config *cfg,
                   struct ns_state *state, struct ns_node **out);
/* A node over a raft that its caller owns and runs (a raft_fixture server in
 * tests/cluster/sim.h), reading time from clock (copied; its arg borrowed).
 * r (borrowed; must outlive the node) is raft_init'ed and has applied
 * nothing: the node installs its FSM adapter as r->fsm and sets r's timeouts,
 * snapshot settings and pre-vote from cfg as ns_node_create does; cfg's
 * write wait and remote_ready count too, its id, data dir, addresses, secret
 * and TLS are not read (r has its own). The node opens no file, socket or
 * handle: ns_node_start marks it started (start r yourself), ns_node_tick
 * does what the loop's handles do for ns_node_create's node, ns_node_stop
 * fails what waits and calls cb at once (close r after it: entries in flight
 * call back then, so destroy the node only after r is closed). 0 or
 * NS_ENOMEM. */
struct raft;
struct ns_clock;
int ns_node_create_over(struct raft *r, const struct ns_node_config *cfg,
                        const struct ns_clock *clock, struct ns_state *state,
                        struct ns_node **out);
/* A driven node (ns_node_create_over) only: run after every event of its raft
 * and whenever its clock moved: the role watcher (watch callback), the leader
 * barrier, readiness, queued proposals, and the write and apply waits that
 * timed out. */
void ns_node_tick(struct ns_node *n);
/* raft_start and the role watcher. 0 or NS_EIO (logged). */
int ns_node_start(struct ns_node *n);
/* Called (borrowed arg) after each role change and when the node becomes ready.
 */
void ns_node_set_watch(struct ns_node *n, ns_node_watch_cb cb, void *arg);
/* Called (borrowed arg) after every command entry the FSM applied, with its
 * log index, the command bytes and the result (all borrowed for the call).
 * Returning true marks the node diverged for good. The server's hook
 * (ns_checkpoint_on_apply, src/cluster/checkpoint.c) only counts commands
 * towards the next CHECKPOINT and returns false: a checkpoint whose digest
 * differs is found by a VERDICT instead (ns_node_is_diverged). */
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

/* As ns_node_propose, and cb learns the entry's log index (0 unless status 0).
 */
typedef void (*ns_node_index_cb)(void *arg, int status, uint64_t index,
                                 const struct ns_apply_result *res);
int ns_node_propose_indexed(struct ns_node *n, const uint8_t *bytes, size_t len,
                            ns_node_index_cb cb, void *arg);
/* cb(arg, 0) once the local applied index is >= index; NS_ETIMEDOUT after
 * timeout_ms; NS_ESHUTDOWN on stop. Returns 0 (cb exactly once, never before
 * this returns) or NS_ENOMEM / NS_ESHUTDOWN. */
int ns_node_wait_applied(struct ns_node *n, uint64_t index, uint64_t timeout_ms,
                         ns_node_barrier_cb cb, void *arg);
/* Leader only: asks this node to tell member member_id that the entries up
 * to index committed as soon as the member has stored them and they are
 * committed here, with an empty AppendEntries, rather than with the next
 * heartbeat (a follower waiting to apply a write it forwarded, raft/node/
 * node_notice.c). Best effort: a notice that cannot be sent or is not due
 * within a few heartbeats is dropped, and the heartbeat carries the commit.
 * 0, or NS_ENOTLEADER. */
int ns_node_notify_commit(struct ns_node *n, uint64_t member_id,
                          uint64_t index);
/* Leader read point: a barrier, then cb(arg, 0, applied index). Leader only
 * (NS_ENOTLEADER otherwise, cb never runs). */
typedef void (*ns_node_index_read_cb)(void *arg, int status, uint64_t index);
int ns_node_read_index(struct ns_node *n, ns_node_index_read_cb cb, void *arg);
/* Cluster mode readiness: the leader's read index as of joining. */
void ns_node_set_ready_index(struct ns_node *n, uint64_t index);
/* AIO contexts of closed raft segments destroyed off the loop thread so far
 * (process-wide; raft/node/node_aio.c). */
uint64_t ns_node_aio_deferred(void);
/* Raft segment writes sent to libraft's thread pool without a RWF_NOWAIT try
 * on the loop thread, and tries the kernel refused as "would block"
 * (process-wide; raft/node/node_aio_nowait.c). */
uint64_t ns_node_aio_pooled(void);
uint64_t ns_node_aio_refused(void);
/* Times this node, as leader, moved raft's commit index to an index a majority
 * held that raft 0.15 had not counted yet (raft/node/node_commit.c). */
uint64_t ns_node_commits_caught_up(const struct ns_node *n);
/* InstallSnapshot messages held while a snapshot of this node's own was being
 * taken or stored, instead of dropped (docs/raft-0.15.md §18). */
uint64_t ns_node_installs_held(const struct ns_node *n);
/* AppendEntries from index 1 dropped because this node's log no longer holds
 * index 1, on which raft 0.15 turns unavailable (docs/raft-0.15.md §19). */
uint64_t ns_node_appends_dropped(const struct ns_node *n);
/* ... and those cut to start after this node's snapshot instead, because they
 * held its last entry with its term. */
uint64_t ns_node_appends_cut(const struct ns_node *n);
/* Terms this node stopped leading because its own disk write failed, which
 * raft 0.15 would have gone on leading over the lost entries' indexes
 * (raft/node/node_fence.c). */
uint64_t ns_node_fences(const struct ns_node *n);
/* Batches of proposals this node handed to raft as leader, and the entries
 * in them (raft/node/node_propose.c): one raft_apply, one disk write and one
 * AppendEntries per follower per batch. */
void ns_node_batch_stats(const struct ns_node *n, uint64_t *batches,
                         uint64_t *entries);
/* Snapshot and checkpoint-digest encoders this node forked (node_fsm.c). */
uint64_t ns_node_forks(const struct ns_node *n);
/* The highest index a majority of the voters of r (a leader) hold, the leader
 * counted at its stored index and member from at reported (if higher than its
 * match index), capped at the leader's stored index; 0 if r has more voters
 * than it counts. */
uint64_t ns_node_commit_quorum(const struct raft *r, uint64_t from,
                               uint64_t reported);

/* --- membership (leader only; one change at a time) --- */
typedef void (*ns_node_change_cb)(void *arg, int status, const char *errmsg);
/* raft_add then raft_assign role (NS_MEMBER_VOTER, or NS_MEMBER_STANDBY: a
 * member that receives the log but neither votes nor counts for commits); on
 * failure to catch up the spare is removed. 0 (cb exactly once, later),
 * NS_ENOTLEADER, NS_EAGAIN (a change is already running), NS_EINVAL (bad
 * id/address/role, duplicate id) or NS_ENOMEM. */
int ns_node_member_add(struct ns_node *n, uint64_t id, const char *raft_addr,
                       int role, ns_node_change_cb cb, void *arg);
/* raft_assign of an existing member to role (NS_MEMBER_VOTER: promote, which
 * first lets it catch up; NS_MEMBER_STANDBY: demote). A member that cannot
 * catch up keeps its role. Same codes as ns_node_member_add, plus NS_EINVAL
 * for an unknown id or the role it already has (errmsg of cb says which). */
int ns_node_member_assign(struct ns_node *n, uint64_t id, int role,
                          ns_node_change_cb cb, void *arg);
int ns_node_member_remove(struct ns_node *n, uint64_t id, ns_node_change_cb cb,
                          void *arg);
/* Leadership transfer to id (0 = raft picks). cb status 0 when this node is no
 * longer the leader. */
int ns_node_transfer(struct ns_node *n, uint64_t id, ns_node_change_cb cb,
                     void *arg);
/* Copies the current raft configuration: *out owned array (ns_free it and
 * nothing else: raft_addr points into the same allocation). 0 or NS_ENOMEM. */
int ns_node_members(const struct ns_node *n, struct ns_node_member **out,
                    size_t *n_out);

/* Reloads the raftTls files (SIGHUP) for connections made from now on; on
 * failure (logged) the old certificate stays. 0 (also without raftTls),
 * NS_EINVAL or NS_ENOMEM. */
int ns_node_reload_tls(struct ns_node *n);

/* --- quorum report (raft/node/node_quorum.c) --- */
#define NS_NODE_QUORUM_MAX 64
/* Which voters of the raft configuration this node heard from recently:
 * itself, and every peer whose authenticated raft traffic arrived within the
 * window (2 election timeouts, at least 2 s). A candidate hears every voter
 * that answers its votes and a leader every follower that answers; a follower
 * hears its leader only, so on a follower not_heard lists healthy followers
 * too: has_quorum is what to read, and it counts when no leader is known. */
struct ns_node_quorum {
    size_t n_voters;
    size_t needed; /* a majority of the voters */
    size_t n_heard, n_not_heard;
    uint64_t heard[NS_NODE_QUORUM_MAX], not_heard[NS_NODE_QUORUM_MAX];
    bool has_quorum;       /* n_heard >= needed */
    bool in_configuration; /* this node is a voter of its configuration */
    uint64_t window_ms;
    uint64_t leaderless_ms; /* how long no leader has been known, 0 = known */
};
void ns_node_quorum(const struct ns_node *n, struct ns_node_quorum *q);
/* Whether this node heard authenticated raft traffic from member id within
 * one election timeout (the window in which a leader must hear a majority to
 * stay leader; always true for itself). On a leader this is "the member
 * answers heartbeats"; a promotion checks it, because raft promotes a member
 * whose last known match index is current at once, even while it is down. */
bool ns_node_heard_recently(const struct ns_node *n, uint64_t id);
/* The leader's view of replication: for each member of the configuration (up
 * to cap), its id and how many entries of the leader's log it has not
 * confirmed (last index - match index; 0 for the leader itself). Returns the
 * count written, 0 when this node is not the leader. */
struct ns_node_lag {
    uint64_t id;
    uint64_t lag;
};
size_t ns_node_replication_lag(const struct ns_node *n, struct ns_node_lag *out,
                               size_t cap);

/* Copies the peer port counters into *out. */
void ns_node_peer_stats(const struct ns_node *n,
                        struct ns_node_peer_stats *out);

uint64_t ns_node_id(const struct ns_node *n);
int ns_node_role(const struct ns_node *n); /* enum ns_node_role */
uint64_t ns_node_term(const struct ns_node *n);
uint64_t ns_node_commit_index(const struct ns_node *n);

bool ns_node_is_leader(
    const struct ns_node *n); /* leader and barrier applied */
bool ns_node_is_ready(
    const struct ns_node *n); /* log replayed and leader known */
/* True while this node must not serve its state: an entry could not be
 * decoded, or the apply hook returned true (both for good); or a checkpoint
 * mismatch: a VERDICT found this node's digest at a CHECKPOINT index differs
 * from the majority's, and no later verdict agreed yet, including while a
 * healthy state copied from the leader waits to be judged (raftns/diverge.h,
 * docs/divergence.md). */
bool ns_node_is_diverged(const struct ns_node *n);
/* This node's digests, verdicts and recovery (borrowed, read-only). */
const struct ns_diverge *ns_node_diverge(const struct ns_node *n);
/* How long this node's last checkpoint digest held its loop (ns; 0 = none). */
uint64_t ns_node_digest_loop_ns(const struct ns_node *n);
/* Replaces the state with p/len (ns_snapshot_encode bytes of a healthy node,
 * borrowed) taken at that node's applied index at; entries up to at are then
 * skipped (ns_diverge_install). 0, NS_EAGAIN (this node applied past at: fetch
 * a newer state), NS_EPROTO / NS_EVERSION / NS_ENOMEM (nothing changed). */
int ns_node_install_state(struct ns_node *n, const uint8_t *p, size_t len,
                          uint64_t at);
uint64_t ns_node_leader_id(const struct ns_node *n); /* 0 when unknown */
/* True while this node is in touch with a leader: it is the leader (raft 0.15
 * steps a leader down once it has not heard from a majority for an election
 * timeout), or a follower that heard from its leader within the last election
 * timeout. False when stopping. Decides whether this node may answer from its
 * own state what the leader would otherwise have to confirm (the heartbeat
 * short-cut of REGISTER_BROKER). */
bool ns_node_has_leader_contact(const struct ns_node *n);
uint64_t ns_node_last_applied(const struct ns_node *n);
/* Bytes of the entries applied since the last completed snapshot, and the
 * trailing entries the next snapshot keeps (node_log.c). */
uint64_t ns_node_log_bytes(const struct ns_node *n);
unsigned ns_node_log_trailing(const struct ns_node *n);

/* Graceful stop: fails queued proposals with NS_ESHUTDOWN, transfers leadership
 * if leader, closes raft, the transport and every handle; cb (borrowed arg)
 * runs once when all is closed. Idempotent: a second call does nothing. */
void ns_node_stop(struct ns_node *n, ns_node_stop_cb cb, void *arg);
/* Frees a node that was never started, or whose stop callback ran and whose
 * loop has since run until it had nothing left to do (uv_run returned):
 * libraft 0.15 still calls into the node's io while its last handles close. */
void ns_node_destroy(struct ns_node *n);

/* Builds dir (missing or empty; created) as the data dir of node id (raft
 * address raft_addr) of a new cluster whose voters are voters[0, n_voters):
 * state[0, len) (ns_snapshot_encode bytes, borrowed) becomes its raft
 * snapshot at index, term 1, so the node starts from it. Runs and closes its
 * own loop; call it before any node of this process starts. Returns 0,
 * NS_EINVAL (dir not empty), NS_EIO or NS_ENOMEM; on error err (errlen bytes)
 * names the path and the reason, and what was written into dir is removed. */
int ns_node_restore_dir(const char *dir, uint64_t id, const char *raft_addr,
                        const struct ns_node_member *voters, size_t n_voters,
                        const uint8_t *state, size_t len, uint64_t index,
                        char *err, size_t errlen);

#endif
