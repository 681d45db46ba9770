/* Private to the files of raft/node/: the node struct and its bookkeeping
 * types. Not a public interface: the server uses include/raftns/node.h. */
#ifndef RAFTNS_NODE_INT_H
#define RAFTNS_NODE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>

#include "raftns/buf.h"
#include "raftns/clock.h"
#include "raftns/diverge.h"
#include "raftns/fsm_adapter.h"
#include "raftns/snapshot_fork.h"
#include "raftns/node.h"
#include "raftns/waits.h"

/* raft_uv's default. The first writes into a fresh segment can block the loop
 * in io_submit for tens of ms on ext4; 1 MiB segments meant ~10 of those a
 * second under registration load (BENCHMARKS.md "Segment size"). */
#define SEGMENT_SIZE (8u << 20)
/* ns_node_config.fork_state_bytes' default (BENCHMARKS.md, "Periodic work of
 * a small state"). */
#define NODE_FORK_STATE_BYTES (16u << 20)
/* Topics a capture (a checkpoint digest's, a snapshot's) encodes per loop
 * turn: about a millisecond (BENCHMARKS.md, "Snapshots and checkpoint digests
 * in steps"). */
#define NODE_CAPTURE_STEP_TOPICS 4096u
#define CONNECT_RETRY_MS 100
#define QUEUE_TIMER_MS 100
/* Bound on waiting for in-flight entries when stopping. */
#define STOP_DRAIN_MS 1000
#define STOP_DRAIN_POLL_MS 5

/* A digest taken by a capture of the state (ns_snapshot_capture_begin): the
 * bytes are hashed as the steps produce them and not kept. */
struct node_capture {
    struct ns_route_capture *cap; /* the capture under way, or NULL */
    uint64_t hash; /* of the bytes so far (ns_snapshot_digest_more) */
    struct ns_buf head, tail, step; /* kept between digests */
    unsigned turns;                 /* steps taken by the capture under way */
    uint64_t applies_at_begin;      /* n->fsm.n_applies when it began */
    /* Test hook RAFTNS_TEST_CHECK_CAPTURES=<topics per step>: each capture's
     * digest is also computed whole at its beginning (expect) and the two
     * compared; and the steps are that small. */
    bool check;
    uint64_t expect;
    size_t step_topics; /* NODE_CAPTURE_STEP_TOPICS, or the test hook's */
};

/* A snapshot of a state too small to fork, captured into the node's
 * snapshot buffer in steps of the loop's turns (node_snapcap.c). */
struct node_snapcap {
    struct ns_route_capture *cap; /* under way (the loop's), or NULL */
    struct ns_buf tail;           /* the bytes after the topic table */
    unsigned turns;
    uint64_t applies_at_begin;
    uint64_t expect; /* test hook: node_capture.check */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool pending; /* the snapshot buffer is not complete yet (lock) */
    int err;      /* how the last capture ended (lock) */
    bool sync_ok; /* lock and changed are initialised */
};

struct proposal {
    struct ns_node *node;
    struct raft_buffer
        buf; /* raft_malloc'd; raft owns it once its batch went to raft */
    ns_node_apply_cb cb;
    ns_node_index_cb index_cb; /* instead of cb when set */
    void *arg;
    uint64_t deadline; /* uv_now while queued */
    /* in the node's proposal wait list while queued (raftns/waits.h) */
    struct ns_wait wait;
    struct proposal *turn_next; /* in the node's turn queue */
    uint64_t index;             /* its entry's, once in a batch */
    /* The FSM result of this proposal's entry, filled by the FSM adapter
     * when its entry is applied while the batch is in flight (node_fsm.c
     * finds it), and read when the batch calls back. It lives in the
     * proposal, so no result outlives it or is read after being freed,
     * whenever raft calls back. */
    struct ns_fsm_adapter_result out;
};

/* The proposals of one loop turn, handed to raft in one raft_apply: one disk
 * write, and one AppendEntries per follower, for all of them. raft 0.15
 * calls a request back once, when the entry at req.index applies
 * (getRequest in its src/replication.c), so req.index is moved from the
 * first entry to the last: the callback comes once every entry of the batch
 * applied, or with an error for all (docs/raft-0.15.md §17). */
struct node_batch {
    struct raft_apply req; /* must stay alive until the raft callback */
    struct ns_node *node;
    raft_term term; /* the leader term it was proposed in */
    uint64_t first; /* index of its first entry */
    unsigned n;
    /* Its entries left the log (a failed leader write): req.index is 0 so
     * that raft never matches it to a later entry, and its proposals were
     * answered; raft still calls it back when this node steps down. */
    bool orphaned;
    struct node_batch *next, *prev; /* the node's in-flight list */
    struct proposal *p[];           /* by index; NULL once answered */
};

/* Bounds of one batch: entries, and bytes of commands (one batch is one
 * AppendEntries message to each follower). */
#define NODE_BATCH_MAX 64
#define NODE_BATCH_BYTES (4u << 20)

struct barrier_req {
    struct raft_barrier req;
    struct ns_node *node;
    raft_term term; /* leader barrier: the term it was issued in; 0 = a client
                       barrier */
    ns_node_barrier_cb cb;
    void *arg;
};

/* A caller waiting for the local applied index to reach index. */
struct waiter {
    uint64_t index;
    uint64_t deadline;
    ns_node_barrier_cb cb;
    void *arg;
    struct waiter *next;
};

/* A read-index request: a barrier whose callback reports the applied index. */
struct read_req {
    struct ns_node *node;
    ns_node_index_read_cb cb;
    void *arg;
};

/* A commit notice owed to a member: tell it, once it has stored the entries
 * lo..hi and they are committed (node_notice.c). */
#define NODE_MAX_NOTICES 16
struct node_notice {
    uint64_t id;
    uint64_t lo, hi;   /* the writes' indexes */
    uint64_t early;    /* commit index of the last notice sent before the
                          follower acknowledged hi */
    uint64_t deadline; /* uv_now; dropped after it */
};

/* The one membership change or transfer in progress. */
struct change {
    struct raft_change req;
    struct raft_transfer transfer;
    struct ns_node *node;
    uint64_t id;
    int step; /* 1 add, 2 assign after add, 3 remove spare after failure,
                 4 remove, 5 assign (promote/demote) */
    int role; /* RAFT_VOTER or RAFT_STANDBY for steps 1, 2 and 5 */
    int status;
    ns_node_change_cb cb;
    void *arg;
};

/* The raft log bounded by bytes (node_log.c). */
struct node_log_entry {
    uint64_t index;
    size_t len;
};

struct node_log {
    uint64_t snapshot_bytes; /* 0: entry counts only */
    uint64_t trailing_bytes;
    unsigned threshold;          /* configured entries between snapshots */
    unsigned trailing;           /* configured entries kept after one (>= 2) */
    struct node_log_entry *ring; /* owned: the newest applied entries */
    size_t cap, next, n;
    size_t win_n;           /* the newest entries within trailing_bytes */
    uint64_t win_bytes;     /* their bytes */
    uint64_t since_bytes;   /* applied since the last completed snapshot */
    uint64_t seen_snapshot; /* its index */
    uint64_t phase;         /* node_log_next_snapshot's, from the node id */
    bool placed; /* raft's threshold points at the next snapshot index */
};

struct ns_node {
    uv_loop_t *loop; /* NULL for a driven node */
    /* What the node reads its time from: the loop's uv_now, or the driver's
     * clock (ns_node_create_over). */
    struct ns_clock clock;
    /* Built over a raft someone else owns and runs (ns_node_create_over): no
     * data dir, transport or libuv handle; ns_node_tick does what the check
     * and timer handles do. */
    bool driven;
    uint64_t write_wait_ms;    /* a proposal waits this long for a leader */
    uint64_t leaderless_since; /* the clock's ms; 0 = a leader is known */
    uint64_t quorum_logged_ms; /* the last "cannot reach a quorum" warning */
    struct raft *raft;         /* &own_raft, or the driver's */
    struct raft own_raft;
    struct raft_io io;
    struct raft_uv_transport transport;
    struct ns_fsm_adapter fsm; /* over state and dv (node_fsm.c) */
    /* the snapshot being encoded off the loop (node_fsm.c), when snapshots
     * are forked; else (or when a fork fails) the encoding taken on the loop
     * that collect hands over */
    struct ns_snapshot_fork snapfork;
    struct ns_snapshot_fork digestfork; /* the checkpoint digest under way */
    /* the checkpoint digest of a state too small to fork, under way in
     * steps, one per loop turn (node_fsm.c) */
    struct node_capture capture;
    struct node_snapcap snapcap;
    bool digest_in_fork; /* the digest under way is digestfork's */
    struct ns_buf snapbuf;
    struct raft_transfer transfer;
    struct ns_state *state; /* borrowed */
    uint64_t id;
    char *dir;
    char *addr;
    int lock_fd; /* flock on <dir>/LOCK, -1 when not held */
    uv_check_t check;
    uv_timer_t timer;
    int n_open_handles;
    int role;
    raft_term leader_term;  /* term whose leader barrier completed, 0 = none */
    raft_term barrier_term; /* term a leader barrier was issued for */
    uint64_t leader_id;
    uint64_t ready_target;
    bool ready_target_set;
    bool ready;
    struct ns_diverge dv; /* digests, verdicts, an installed state */
    bool raft_inited;
    bool raft_closed;      /* io and transport freed by ns_node_destroy */
    struct raft tombstone; /* io->data after close: see raft_closed_cb */
    unsigned late_close_callbacks;
    bool started;
    bool stopping;
    /* proposals waiting for a leader whose barrier applied, oldest first */
    struct ns_wait_list proposals;
    /* proposed during this loop turn, oldest first: handed to raft as one
     * batch at the end of the turn (node_propose.c) */
    struct proposal *turn_head, *turn_tail;
    uv_idle_t kick; /* keeps the loop from blocking while a turn is queued */
    struct node_batch *inflight; /* handed to raft, callback not yet run */
    uint64_t batches, batched_entries; /* handed to raft so far */
    uint64_t drain_deadline; /* stop: when to close despite in-flight */
    struct waiter *waiters;
    struct change *change; /* in progress, or NULL */
    uint64_t ready_index;
    bool ready_index_set;
    bool remote_ready;
    ns_node_watch_cb watch_cb;
    void *watch_arg;
    struct node_log logmem;        /* the log's byte bound (node_log.c) */
    ns_node_apply_hook apply_hook; /* checkpoint digests (observe) */
    void *apply_hook_arg;
    ns_node_stop_cb stop_cb;
    void *stop_arg;
    struct node_notice notices[NODE_MAX_NOTICES];
    unsigned n_notices;
    raft_term notice_term; /* the leader term the notices belong to */
    /* raft's receive callback and its io's start, behind node_commit.c's */
    raft_io_recv_cb raft_recv;
    int (*raft_io_start)(struct raft_io *io, unsigned msecs,
                         raft_io_tick_cb tick, raft_io_recv_cb recv);
    uint64_t commits_caught_up; /* commit index moves raft 0.15 missed */
    /* the term this node stopped leading after its own disk write failed, and
     * raft's io send behind node_fence.c's */
    raft_term fenced_term;
    uint64_t fences;
    int (*raft_io_send)(struct raft_io *io, struct raft_io_send *req,
                        const struct raft_message *message, raft_io_send_cb cb);
    /* an InstallSnapshot raft would drop now (node_install_hold.c) */
    struct raft_message install_msg;
    bool install_held;
    uint64_t installs_held;
    uint64_t appends_dropped;  /* node_append_guard.c */
    uint64_t appends_cut;      /* node_append_guard.c */
    uint64_t fork_state_bytes; /* ns_node_config.fork_state_bytes, resolved */
    uint64_t forks;            /* snapshot and digest encoders forked */
};

/* The node's clock (milliseconds). */
static inline uint64_t node_now(const struct ns_node *n)
{
    return ns_clock_now(&n->clock);
}

/* --- raft's in-memory log, read in place --- */
/* The term of the entry at index in raft's in-memory log (struct raft_log is
 * public in raft.h 0.15; the lookup is logTermOf's): 0 when the log no longer
 * (or does not yet) hold it. */
static inline raft_term node_raft_term_of(const struct raft_log *l,
                                          raft_index index)
{
    size_t n =
        l->front <= l->back ? l->back - l->front : l->size - l->front + l->back;
    if (index == l->snapshot.last_index && index != 0) {
        return l->snapshot.last_term;
    }
    if (n == 0 || index <= l->offset || index > l->offset + n) {
        return 0;
    }
    return l->entries[(l->front + (size_t)(index - 1 - l->offset)) % l->size]
        .term;
}

/* The index of the last entry in raft's in-memory log (logLastIndex's). */
static inline raft_index node_raft_last_index(const struct raft_log *l)
{
    size_t n =
        l->front <= l->back ? l->back - l->front : l->size - l->front + l->back;
    return n == 0 ? l->snapshot.last_index : l->offset + n;
}

/* libraft 0.15's PROGRESS__PIPELINE (src/progress.h; the value is not in
 * raft.h, the struct field is). */
#define NODE_PROGRESS_PIPELINE 1

/* --- node_commit.c: the leader's commit index under load --- */
/* Puts node_commit.c in front of raft's receive callback (n->raft has been
 * through raft_init, not raft_start; sets n->raft->data). */
void node_commit_wrap(struct ns_node *n);

/* --- node_log.c: the raft log bounded by bytes, snapshots staggered --- */
/* Records the configured counts, the byte bound (trailing: a quarter of it)
 * and the snapshot phase of node id. 0 or NS_ENOMEM. */
int node_log_init(struct node_log *l, uint64_t id, uint64_t snapshot_bytes,
                  unsigned threshold, unsigned trailing);
void node_log_close(struct node_log *l);
/* After entry index (len bytes) was applied: sets r's trailing and threshold
 * so that the log stays within the bounds. */
void node_log_applied(struct node_log *l, struct raft *r, uint64_t index,
                      size_t len);
/* The index of the snapshot after one at snap: with half = threshold / 2,
 * the one index in (snap + half, snap + 2 * half] that is phase modulo half
 * (snap + threshold when half is 0). From there the snapshots come every
 * 2 * half entries, at the node's phase. */
uint64_t node_log_next_snapshot(uint64_t snap, unsigned threshold,
                                uint64_t phase);
/* Node id's phase for node_log_next_snapshot: spread over [0, threshold / 2)
 * by the golden ratio, so that any few ids are far apart. */
uint64_t node_log_phase(uint64_t id, unsigned threshold);

/* Sets n->fsm to the FSM adapter over n->state and n->dv with the node's hooks
 * (the in-flight result, the apply hook, test mutants), bound to n->raft
 * (node_fsm.c). */
void node_fsm_init(struct ns_node *n);
/* Snapshots are encoded off the loop, and checkpoint digests in a fork or in
 * steps of the loop's turns, from now on (raft FSM version 3; call before
 * raft_init, with n->io able to run async_work). */
void node_fsm_snapshot_off_loop(struct ns_node *n);
/* Frees what an abandoned snapshot left (ns_node_destroy). */
void node_fsm_close(struct ns_node *n);
/* Ends a digest's capture under way and frees its kept buffers: for a state
 * now digested in a fork, and when closing. */
void node_capture_release(struct ns_node *n);
/* Test hook RAFTNS_TEST_CHECK_CAPTURES: logs how the digest got of what a
 * capture produced compares with expect, the whole state's at its beginning
 * (an error when they differ). */
void node_capture_report(const char *what, unsigned turns, uint64_t applied,
                         uint64_t got, uint64_t expect);
/* node_snapcap.c. Loop, except node_snapcap_wait. */
void node_snapcap_init(struct ns_node *n);
/* Begins capturing the state into n->snapbuf: 0, or NS_E* (none began). */
int node_snapcap_begin(struct ns_node *n);
/* One step of the capture under way (all the rest when all); no-op without
 * one. Once done, a node_snapcap_wait returns. */
void node_snapcap_step(struct ns_node *n, bool all);
/* Pool thread: waits until n->snapbuf holds a capture under way, whole; its
 * result (0 when none was under way). */
int node_snapcap_wait(struct ns_node *n);
/* Ends a capture under way (the snapshot was given up): a wait returns
 * NS_ESHUTDOWN. */
void node_snapcap_end(struct ns_node *n);
void node_snapcap_close(struct ns_node *n);
/* Hands the proposals of this turn, and those queued for a leader, to raft
 * when a leader can take them; answers what a failed leader write lost
 * (node_propose.c; every loop turn). */
void node_flush_queue(struct ns_node *n);
/* The result slot of the in-flight proposal whose entry is at index, or NULL
 * (a follower, an entry of an earlier leader, a barrier). */
struct ns_fsm_adapter_result *node_find_result(struct ns_node *n,
                                               uint64_t index);
/* The proposals queued for this turn fail with status (the node stops). */
void node_fail_turn(struct ns_node *n, int status);
/* Calls the waiters whose index is applied (all: every waiter, with status)
 * (node_read.c). */
void node_run_waiters(struct ns_node *n, bool all, int status);
/* Issues the barrier a new leader must apply before it serves (node_read.c). */
void node_issue_leader_barrier(struct ns_node *n);
/* Sends the commit notices that are due (node_notice.c; every loop turn). */
void node_notice_flush(struct ns_node *n);
/* node_install_hold.c: true when m (an InstallSnapshot raft would drop now)
 * was taken, to be handed to raft by node_install_flush once it can take it;
 * node_install_drop frees a held one (at close). */
bool node_install_hold(struct ns_node *n, const struct raft_message *m);
/* node_append_guard.c: true when m (an AppendEntries from index 1 that raft
 * 0.15 would fail on, turning unavailable) was dropped and freed. */
bool node_append_guard(struct ns_node *n, struct raft_message *m);
void node_install_flush(struct ns_node *n);
/* node_fence.c: a leader whose disk write failed (why, for the log) stops
 * leading its term; node_fence_wrap puts the send filter in front of raft's
 * io, once, after raft_init. */
void node_fence(struct ns_node *n, const char *why);
/* Whether a request's status says its disk write failed (as opposed to a
 * leader losing its term, RAFT_LEADERSHIPLOST, while its state still says
 * leader). */
static inline bool node_disk_failed(int status)
{
    return status == RAFT_IOERR || status == RAFT_NOSPACE ||
           status == RAFT_CORRUPT;
}
void node_fence_wrap(struct ns_node *n);
void node_install_drop(struct ns_node *n);
/* Translates a raft status code into an NS_E* code (node.c). */
int node_map_raft_status(int status);

/* Every timer tick: tracks how long no leader is known and, past a few
 * election timeouts, logs which voters were heard (node_quorum.c). */
void node_quorum_tick(struct ns_node *n);

/* For raftns' syscall() (node_aio.c), from node_aio_nowait.c: true when the
 * io_submit of nr iocbs at iocbs is a segment write's non-blocking try that
 * should go to libraft's thread pool at once (answer it EAGAIN); and the n
 * io_events an io_getevents returned, to learn how tries complete. */
bool node_aio_nowait_pool(long nr, long iocbs);
void node_aio_nowait_seen(const void *events, long n);

#endif
